//! What the table, the state bytes and committed-up-to must be, checked
//! after every call (per snapshot, per tag, per outcome) and at the end of
//! the run (exactly-once, the final commit, savepoint tags).

use std::collections::BTreeSet;

use sink_coordinator::{checkpoint_name, state_codec, FinalCommitMode, END};

use super::job::{Job, Res, SpFate, Target};
use super::ledger::{Fate, MEnd, MEntry};
use super::rawtable::RawSnapshot;
use super::world::World;
use super::Ending;

/// The state bytes as the simulator compares them.
pub struct StateView {
    pub commit_user: String,
    pub parallelism: u32,
    pub ends: Vec<(u32, MEnd)>,
    /// `(subtask, checkpoint, entry)` of ended slots.
    pub entries: Vec<(u32, u64, MEntry)>,
}

/// Decodes state bytes with the core's codec, and checks that they
/// re-encode to the same bytes.
pub fn decode_state(bytes: &[u8]) -> Result<StateView, String> {
    let state = state_codec::decode(bytes).map_err(|e| e.to_string())?;
    let again = state.encode();
    if again != bytes {
        return Err("the state bytes do not round-trip (decode, encode)".into());
    }
    let mut ends = Vec::new();
    let mut entries = Vec::new();
    for (s, slot) in &state.slots {
        ends.push((
            *s,
            MEnd {
                names: super::ledger::names(&slot.end.committables),
                watermark: slot.end.watermark,
                synthesized: slot.end.synthesized,
                taken: slot.end.taken,
            },
        ));
        for (c, e) in &slot.entries {
            entries.push((
                *s,
                *c,
                MEntry {
                    names: super::ledger::names(&e.committables),
                    watermark: e.watermark,
                    savepoint: e.savepoint,
                },
            ));
        }
    }
    Ok(StateView {
        commit_user: state.commit_user,
        parallelism: state.parallelism,
        ends,
        entries,
    })
}

impl Job {
    /// Reads what the last call wrote: new snapshots (each must be this
    /// job's, as SEMANTICS computes it from what the instance was told) and
    /// tags.
    pub fn observe(&mut self, w: &mut World<'_>, t: Target) -> Res<()> {
        let new = w.new_snapshots()?;
        for snap in &new {
            if snap.commit_user != self.cfg.commit_user {
                return Err(w.fail(format!(
                    "a call of job {} wrote snapshot {} of commit user {:?}",
                    self.label, snap.id, snap.commit_user
                )));
            }
            self.check_snapshot(w, t, snap)?;
        }
        // A recovery with target END that finds the END snapshot decides
        // drained tags too (see `after_recovery`), within this call.
        let recovering = self
            .inst_mut(t)
            .map(|i| i.mirror.clone())
            .filter(|m| m.is_restoring() && m.all_restored() && m.all_ended());
        if let Some(m) = recovering.filter(|_| t == Target::Main && self.end_snapshots > 0) {
            self.note_end_tag_window(&m);
        }
        self.check_tags(w)
    }

    fn check_snapshot(&mut self, w: &mut World<'_>, t: Target, snap: &RawSnapshot) -> Res<()> {
        let id = snap.id;
        let ident = checkpoint_name(snap.identifier);
        if snap.time_ms != w.now {
            return Err(w.fail(format!(
                "snapshot {id} has time {} ms, the clock says {}",
                snap.time_ms, w.now
            )));
        }
        let label = self.label;
        let on_checkpoint =
            self.cfg.checkpointing && self.cfg.final_commit == FinalCommitMode::OnCheckpoint;
        let Some(inst) = self.inst_mut(t) else {
            return Err(w.fail(format!(
                "snapshot {id} appeared without an instance of job {label}"
            )));
        };
        let m = &inst.mirror.clone();
        let completed = m.effective_completed();
        let (expected, wm) = if snap.identifier == END {
            if !m.all_ended() {
                return Err(w.fail(format!(
                    "job {label}: END snapshot {id} although a slot holds no END entry"
                )));
            }
            if on_checkpoint && !m.is_restoring() && !m.final_due() {
                return Err(w.fail(format!(
                    "job {label}: END snapshot {id} although an END entry is not captured by a completed checkpoint (highest taken {:?}, completed {completed:?}; SEMANTICS 5.3)",
                    m.max_taken()
                )));
            }
            if on_checkpoint && t == Target::Main {
                // The drained-savepoint window of SEMANTICS 5.4.
                self.note_end_tag_window(m);
            }
            m.expected_end()
        } else {
            if completed.is_none_or(|c| snap.identifier > c) {
                return Err(w.fail(format!(
                    "job {label}: snapshot {id} commits checkpoint {ident}, which the instance was not told completed (completed: {completed:?})"
                )));
            }
            if !m.covers(snap.identifier) {
                return Err(w.fail(format!(
                    "job {label}: snapshot {id} commits checkpoint {ident} before every writer reported it"
                )));
            }
            m.expected_ordinary(snap.identifier)
        };
        let actual: Vec<(u32, String)> = snap
            .committables
            .iter()
            .map(|(s, b)| (*s, String::from_utf8_lossy(b).into_owned()))
            .collect();
        if actual != expected {
            return Err(w.fail(format!(
                "job {label}: snapshot {id} (identifier {ident}) holds {actual:?}, SEMANTICS gives {expected:?}"
            )));
        }
        if snap.watermark != wm {
            return Err(w.fail(format!(
                "job {label}: snapshot {id} (identifier {ident}) has watermark {:?}, SEMANTICS 3 gives {wm:?}",
                snap.watermark
            )));
        }
        let m_completed = completed;
        if snap.identifier == END {
            self.end_snapshots += 1;
            if self.end_snapshots > 1 {
                return Err(w.fail(format!("job {label}: a second END snapshot: {id}")));
            }
        }
        for (s, name) in &actual {
            let Some(item) = self.ledger.items.get(name).cloned() else {
                return Err(w.fail(format!(
                    "snapshot {id} holds {name:?}, which no writer of job {label} produced"
                )));
            };
            let right_place = item.subtask == *s
                && if snap.identifier == END {
                    item.checkpoint == END || m_completed.is_none_or(|c| item.checkpoint > c)
                } else {
                    item.checkpoint == snap.identifier
                };
            if !right_place {
                return Err(w.fail(format!(
                    "snapshot {id} holds {name:?} under subtask {s} / identifier {ident}, produced by subtask {} for {}",
                    item.subtask,
                    checkpoint_name(item.checkpoint)
                )));
            }
            if !item.reported {
                return Err(w.fail(format!(
                    "snapshot {id} holds {name:?}, which was never reported to a coordinator"
                )));
            }
            match item.fate {
                Fate::Pending => {}
                Fate::Committed(other) => {
                    return Err(w.fail(format!(
                        "{name:?} is committed twice: snapshots {other} and {id}"
                    )))
                }
                Fate::Discarded(step) => {
                    return Err(w.fail(format!(
                        "snapshot {id} holds {name:?}, which a rollback discarded at step {step}"
                    )))
                }
            }
            if let Err(record) = self.records.add(*s, item.lo, item.hi) {
                return Err(w.fail(format!(
                    "snapshot {id} commits record {record} of job {label}'s writer {s} again ({name:?}); committed so far: {}",
                    self.records.describe(*s)
                )));
            }
            if let Some(it) = self.ledger.items.get_mut(name) {
                it.fate = Fate::Committed(id);
            }
            w.stats.committables_verified += 1;
        }
        if snap.identifier == END {
            if let Some(inst) = self.inst_mut(t) {
                inst.mirror.final_done = true;
            }
            if t == Target::Main {
                self.final_done_job = true;
            }
        }
        Ok(())
    }

    /// Tags: only savepoint tags of this job's savepoints that were not
    /// aborted, pointing at the snapshot of their identifier, with the
    /// clock's time; another job's tags are left alone.
    pub fn check_tags(&mut self, w: &mut World<'_>) -> Res<()> {
        let tags = w.read_tags()?;
        let user = &self.cfg.commit_user;
        let others_now: Vec<_> = tags.iter().filter(|t| &t.commit_user != user).collect();
        let others_before: Vec<_> = w.tags.iter().filter(|t| &t.commit_user != user).collect();
        if others_now != others_before {
            return Err(w.fail(format!(
                "a call of job {} changed another commit user's tags",
                self.label
            )));
        }
        let ours: Vec<_> = tags
            .iter()
            .filter(|t| &t.commit_user == user)
            .cloned()
            .collect();
        for t in &ours {
            if !self.tags.iter().any(|old| old.name == t.name) {
                w.stats.tags_created += 1;
                if t.create_time_ms != w.now {
                    return Err(w.fail(format!(
                        "tag {} created at {} ms, the clock says {}",
                        t.name, t.create_time_ms, w.now
                    )));
                }
                let expire = self.cfg.tag_time_retained_ms.map(|r| t.create_time_ms + r);
                if t.expire_time_ms != expire {
                    return Err(w.fail(format!(
                        "tag {} expires at {:?}, expected {expire:?}",
                        t.name, t.expire_time_ms
                    )));
                }
            }
            if !self.cfg.savepoint_auto_tag {
                return Err(w.fail(format!(
                    "tag {} exists although savepoint-auto-tag is off",
                    t.name
                )));
            }
            let s = t
                .name
                .strip_prefix("savepoint-")
                .and_then(|x| x.parse::<u64>().ok());
            let Some(s) = s else {
                return Err(w.fail(format!("unexpected tag {}", t.name)));
            };
            if !self.savepoints.contains_key(&s) {
                return Err(w.fail(format!(
                    "tag {} names checkpoint {s}, which is no savepoint of job {}",
                    t.name, self.label
                )));
            }
            // An instance restored from a state taken before an abort may
            // re-create the tag until the abort reaches it (constraint 7);
            // once the current instance accepted it, the tag is gone.
            if self.inst.as_ref().is_some_and(|i| i.aborts_ok.contains(&s)) {
                return Err(w.fail(format!(
                    "tag {} exists although the instance accepted the abort of savepoint {s}",
                    t.name
                )));
            }
            let snap = w
                .log
                .iter()
                .find(|x| x.identifier == s && &x.commit_user == user);
            let end = w
                .log
                .iter()
                .find(|x| x.identifier == END && &x.commit_user == user);
            match (snap, end) {
                (Some(x), _) if x.id == t.snapshot_id && t.identifier == s => {}
                // A drained savepoint: tagged on the END snapshot (5.4).
                (None, Some(e))
                    if e.id == t.snapshot_id && t.identifier == END && self.end_tag_allowed(s) =>
                {
                    if !self.tags.iter().any(|old| old.name == t.name) {
                        w.stats.end_tags += 1;
                    }
                }
                _ => {
                    return Err(w.fail(format!(
                        "tag {} points at snapshot {} (identifier {}), but the snapshot of identifier {s} is {:?} (END snapshot {:?}, drained windows {:?})",
                        t.name,
                        t.snapshot_id,
                        checkpoint_name(t.identifier),
                        snap.map(|x| x.id),
                        end.map(|x| x.id),
                        self.end_tag_windows
                    )))
                }
            }
        }
        w.stats.tags_deleted += self
            .tags
            .iter()
            .filter(|old| !ours.iter().any(|t| t.name == old.name))
            .count() as u64;
        self.tags = ours;
        w.tags = tags;
        Ok(())
    }

    /// A savepoint `s` without a snapshot of its own may be tagged on the END
    /// snapshot (SEMANTICS 5.4, on-checkpoint mode): the final commit saw
    /// every END entry taken at or before `s`, and `s <= completed`.
    pub fn end_tag_allowed(&self, s: u64) -> bool {
        self.end_tag_windows
            .iter()
            .any(|&(taken, completed)| taken <= s && s <= completed)
    }

    /// The drained window of an instance deciding 5.4's exception: the
    /// highest `taken` of its END entries and its `completed`.
    pub fn note_end_tag_window(&mut self, m: &super::ledger::Mirror) {
        let on_checkpoint =
            self.cfg.checkpointing && self.cfg.final_commit == FinalCommitMode::OnCheckpoint;
        if let (true, Some(c)) = (on_checkpoint, m.effective_completed()) {
            let window = (m.max_taken().unwrap_or(0), c);
            if !self.end_tag_windows.contains(&window) {
                self.end_tag_windows.push(window);
            }
        }
    }

    /// Coordinator state bytes (SEMANTICS 7): commit user, parallelism, the
    /// END entries the instance holds, and for ended writers their ordinary
    /// entries: each as reported, and every one the table still lacks.
    pub fn check_state_bytes(&mut self, w: &mut World<'_>, bytes: &[u8]) -> Res<()> {
        let label = self.label;
        let state =
            decode_state(bytes).map_err(|e| w.fail(format!("job {label}: state bytes: {e}")))?;
        if state.commit_user != self.cfg.commit_user || state.parallelism != self.p() {
            return Err(w.fail(format!(
                "job {label}: state bytes hold commit user {:?}, parallelism {}",
                state.commit_user, state.parallelism
            )));
        }
        w.stats.states_checked += 1;
        if self.end_snapshots > 0 {
            // The instance may not have read the table yet: whether it knows
            // of the final commit is not predicted.
            return Ok(());
        }
        let Some(m) = self.mirror() else {
            return Ok(());
        };
        let expected = m.expected_state_ends();
        if state.ends != expected {
            return Err(w.fail(format!(
                "job {label}: state bytes hold END entries {:?}, expected {expected:?}",
                state.ends
            )));
        }
        let ended: BTreeSet<u32> = state.ends.iter().map(|(s, _)| *s).collect();
        for (s, c, e) in &state.entries {
            let held = m.slots.get(*s as usize).and_then(|x| x.entries.get(c));
            if !ended.contains(s) || held != Some(e) {
                return Err(w.fail(format!(
                    "job {label}: state bytes hold entry {c} of subtask {s} ({e:?}), the instance was told {held:?}"
                )));
            }
        }
        for &s in &ended {
            for (c, e) in &m.slots[s as usize].entries {
                let lacking = e.names.iter().any(|n| {
                    self.ledger
                        .items
                        .get(n)
                        .is_some_and(|i| i.fate == Fate::Pending && !i.post_final)
                });
                if lacking && !state.entries.iter().any(|(s2, c2, _)| *s2 == s && c2 == c) {
                    return Err(w.fail(format!(
                        "job {label}: state bytes lack entry {c} of ended subtask {s} ({:?}), which the table does not hold: a finished writer has no state to replay it from",
                        e.names
                    )));
                }
            }
        }
        Ok(())
    }

    /// Committed-up-to (SEMANTICS 5.5): never down within an instance, and
    /// true: every entry the instance was told of up to it is in the table.
    pub fn check_up_to(&mut self, w: &mut World<'_>, t: Target, u: Option<u64>) -> Res<()> {
        let label = self.label;
        let ledger = &self.ledger;
        let m = match t {
            Target::Main => self.inst.as_mut().map(|i| &mut i.mirror),
            Target::Zombie => self.zombie.as_mut().map(|z| &mut z.inst.mirror),
        };
        let Some(m) = m else {
            return Ok(());
        };
        if u < m.up_to {
            return Err(w.fail(format!(
                "job {label}: committed-up-to went down from {:?} to {u:?}",
                m.up_to
            )));
        }
        if u == m.up_to {
            return Ok(());
        }
        m.up_to = u;
        let Some(u) = u else {
            return Ok(());
        };
        for (s, slot) in m.slots.iter().enumerate() {
            let end_names = slot
                .end
                .iter()
                .filter(|_| u == END)
                .flat_map(|e| e.names.iter());
            let entry_names = slot.entries.range(..=u).flat_map(|(_, e)| e.names.iter());
            for name in entry_names.chain(end_names) {
                let Some(item) = ledger.items.get(name) else {
                    continue;
                };
                // Replays of committed input, and entries a rollback discarded
                // (their writer attempt is gone), are never needed.
                if item.post_final || matches!(item.fate, Fate::Committed(_) | Fate::Discarded(_)) {
                    continue;
                }
                return Err(w.fail(format!(
                    "job {label}: committed-up-to is {}, but {name:?} (subtask {s}, {}) is not in the table",
                    checkpoint_name(u),
                    checkpoint_name(item.checkpoint)
                )));
            }
        }
        Ok(())
    }

    /// The end of the run. Every check runs; problems are collected.
    pub fn final_checks(&mut self, w: &mut World<'_>, problems: &mut Vec<String>) {
        let label = self.label;
        let mut lost = Vec::new();
        for (name, item) in &self.ledger.items {
            if item.fate != Fate::Pending || item.post_final {
                continue;
            }
            let required = if item.checkpoint == END {
                self.final_done_job
            } else {
                self.final_done_job || self.completed_max.is_some_and(|c| item.checkpoint <= c)
            };
            if required {
                lost.push(name.clone());
            }
        }
        if !lost.is_empty() {
            let n = lost.len();
            lost.truncate(8);
            problems.push(format!(
                "job {label}: {n} committable(s) of completed checkpoints (or of a finished job) are not in the table: {lost:?}"
            ));
        }
        let all_end = self.scenario.ending != Ending::Stop || !self.streaming();
        if all_end {
            if !self.final_done_job || self.end_snapshots != 1 {
                problems.push(format!(
                    "job {label}: every writer ended, but the table holds {} END snapshots",
                    self.end_snapshots
                ));
            }
            for s in 0..self.p() {
                let len = self.writers[s as usize].input_len.unwrap_or(0);
                if !self.records.is_exactly(s, len) {
                    problems.push(format!(
                        "job {label}: writer {s} read records [0,{len}), the table holds {}",
                        self.records.describe(s)
                    ));
                }
            }
        } else if !self.final_done_job && self.end_snapshots > 0 {
            problems.push(format!(
                "job {label}: an END snapshot exists without a final commit"
            ));
        }
        if self.cfg.savepoint_auto_tag {
            let user = &self.cfg.commit_user;
            let has_end = w
                .log
                .iter()
                .any(|x| x.identifier == END && &x.commit_user == user);
            for (&s, &fate) in &self.savepoints {
                let has_snapshot = w
                    .log
                    .iter()
                    .any(|x| x.identifier == s && &x.commit_user == user);
                let has_tag = self.tags.iter().any(|t| t.name == format!("savepoint-{s}"));
                // A drained savepoint may be tagged on the END snapshot; the
                // stop-with-savepoint whose completion made the final commit
                // must be (5.4).
                let on_end = !has_snapshot && has_end && self.end_tag_allowed(s);
                let drained_stop = on_end && self.stop_savepoint == Some((s, true));
                let (required, allowed) = match fate {
                    SpFate::Taken => (has_snapshot || drained_stop, has_snapshot || on_end),
                    SpFate::Aborted => (false, false),
                    SpFate::Abandoned => (false, true),
                };
                if required && !has_tag {
                    problems.push(format!(
                        "job {label}: savepoint {s} ({fate:?}, snapshot: {has_snapshot}, drained stop-with-savepoint: {drained_stop}) lost its tag"
                    ));
                } else if has_tag && !allowed {
                    problems.push(format!(
                        "job {label}: savepoint {s} ({fate:?}, snapshot: {has_snapshot}, END windows {:?}) has a tag",
                        self.end_tag_windows
                    ));
                }
            }
        }
    }
}
