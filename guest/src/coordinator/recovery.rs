//! Global failover (SEMANTICS 6.2): `start` from a restore point, the
//! `restoring` state and its bookkeeping, restore events (also while
//! `running`, SEMANTICS 6.1), resets while restoring, and the way back to
//! `running` after the recovery commit (which `commit` runs).

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use super::{CallLog, Coordinator, Phase, Trigger};
use crate::env::Env;
use crate::error::{ErrorReason, Result};
use crate::limits::committables_bytes;
use crate::slots::EndEntry;
use crate::state_codec::{self, EndedSlot};
use crate::types::{Entry, Lifecycle, RecoveryMode, RestorePoint, END};

/// Global-restore bookkeeping: the data of the `restoring` state (SEMANTICS 6.2).
#[derive(Clone, Debug)]
pub(super) struct Recovery {
    /// The checkpoint restored from.
    checkpoint: u64,
    /// The restore point's state bytes and their format version: the slots
    /// got the decoded END entries (moved, not copied), and a restore event
    /// or a reset, which is applied to what the state held for its slot,
    /// decodes that one slot again ([`Recovery::persisted`]).
    state: Vec<u8>,
    version: u32,
    /// Per ended slot of the state, ascending by subtask, where it starts
    /// in `state`; `None` for the synthesized END entry of a finished writer
    /// the state has none for.
    ended: Vec<(u32, Option<usize>)>,
    /// Slots that sent their restore event (finished writers from the start).
    restored: SubtaskSet,
    /// The recovery commit wrote a snapshot (in this or an earlier attempt
    /// that failed on storage): decides `restart-required`.
    wrote: bool,
}

impl Recovery {
    /// What the state held for slot `s` (see `ended`), if it ended; its END
    /// entry's `taken` at most the checkpoint restored from (SEMANTICS 3).
    fn persisted(&self, s: u32) -> Option<EndedSlot> {
        let i = self.ended.binary_search_by_key(&s, |(t, _)| *t).ok()?;
        let r = self.checkpoint;
        match self.ended.get(i)?.1 {
            Some(at) => {
                state_codec::decode_slot_at(&self.state, self.version, at).map(|(_, mut e)| {
                    e.end.taken = e.end.taken.min(r);
                    e
                })
            }
            None => Some(EndedSlot {
                end: EndEntry::synthesized(r),
                entries: Vec::new(),
            }),
        }
    }
}

/// A set of subtasks as one bit each (O(1) updates in any order; at most
/// `MAX_PARALLELISM` bits), instead of a `BTreeSet`.
#[derive(Clone, Debug, Default)]
pub(super) struct SubtaskSet {
    words: Vec<u64>,
    len: u32,
}

impl SubtaskSet {
    pub(super) fn contains(&self, s: u32) -> bool {
        self.words
            .get((s / 64) as usize)
            .is_some_and(|w| w & (1 << (s % 64)) != 0)
    }

    fn insert(&mut self, s: u32) {
        let i = (s / 64) as usize;
        if i >= self.words.len() {
            self.words.resize(i + 1, 0);
        }
        if let Some(w) = self.words.get_mut(i) {
            if *w & (1 << (s % 64)) == 0 {
                *w |= 1 << (s % 64);
                self.len += 1;
            }
        }
    }

    fn remove(&mut self, s: u32) {
        if let Some(w) = self.words.get_mut((s / 64) as usize) {
            if *w & (1 << (s % 64)) != 0 {
                *w &= !(1 << (s % 64));
                self.len -= 1;
            }
        }
    }
}

impl Coordinator {
    /// The recovery bookkeeping, while `restoring`.
    pub(super) fn recovery(&self) -> Option<&Recovery> {
        match &self.phase {
            Phase::Restoring(rec) => Some(rec),
            _ => None,
        }
    }

    fn recovery_mut(&mut self) -> Option<&mut Recovery> {
        match &mut self.phase {
            Phase::Restoring(rec) => Some(rec),
            _ => None,
        }
    }

    /// The checkpoint being restored, while `restoring`.
    pub(crate) fn restoring_from(&self) -> Option<u64> {
        self.recovery().map(|rec| rec.checkpoint)
    }

    /// A snapshot of ours landed: while `restoring`, the recovery commit wrote.
    pub(crate) fn note_recovery_write(&mut self) {
        if let Some(rec) = self.recovery_mut() {
            rec.wrote = true;
        }
    }

    /// `start` with a restore point: validates it (subtask range first,
    /// then content, SEMANTICS 2), installs what the state holds and moves
    /// to `restoring`; the recovery commit runs at once when every writer
    /// had finished.
    pub(super) fn start_restoring(
        &mut self,
        env: &mut Env<'_>,
        rp: RestorePoint,
        log: &mut CallLog,
    ) -> Result<()> {
        let p = self.config.parallelism;
        let mut finished = SubtaskSet::default();
        for &s in &rp.finished_subtasks {
            self.require_subtask("restore (finished subtasks)", s)?;
            finished.insert(s);
        }
        let r = rp.checkpoint;
        Self::require_checkpoint("restore", r, false)?;
        let decoded = state_codec::decode_indexed(&rp.state)?;
        let state = decoded.state;
        if !state.slots.is_empty() && state.parallelism != p {
            return Err(ErrorReason::CannotRescale {
                checkpoint: r,
                state_parallelism: state.parallelism,
                parallelism: p,
            }
            .into());
        }
        self.commit_user = state.commit_user;
        self.log.watch(&self.commit_user);
        // The state's ended slots and the finished writers' synthesized END
        // entries, merged in subtask order (both ascend) and moved into the
        // slots as they are merged, in one pass (the slots are all empty
        // here); a finished writer's slot covers `r` and the savepoint flags
        // of its entries count (see `install_persisted`).
        let mut unlisted = rp.finished_subtasks;
        unlisted.sort_unstable();
        unlisted.dedup();
        // The savepoints owed a tag and the aborted ids (SEMANTICS 5.4, 7).
        self.savepoints.restore(&state.owed, &state.aborted);
        let last = state
            .slots
            .last()
            .map(|(s, _)| *s)
            .max(unlisted.last().copied());
        let at_least = state.slots.len().max(unlisted.len());
        let mut ended = Vec::with_capacity(state.slots.len() + unlisted.len());
        // The next listed slot's subtask is read in place (a `Peekable`
        // would move every slot, about 100 bytes, into its buffer first).
        let mut listed = state.slots.into_iter();
        let mut offsets = decoded.offsets.into_iter();
        let mut extra = unlisted.into_iter().peekable();
        let savepoints = &mut self.savepoints;
        let merged = core::iter::from_fn(|| {
            let listed_next = listed.as_slice().first().map(|(s, _)| *s);
            let (s, end, entries) = match (listed_next, extra.peek().copied()) {
                (None, None) => return None,
                (Some(s), f) if f.is_none_or(|f| s <= f) => {
                    extra.next_if_eq(&s);
                    let (s, mut held) = listed.next()?;
                    ended.push((s, offsets.next()));
                    // The coordinator's state at `r` holds it (SEMANTICS 3).
                    held.end.taken = held.end.taken.min(r);
                    (s, held.end, held.entries)
                }
                // The next finished writer comes first (it exists: the
                // arm above took every other case).
                _ => {
                    let f = extra.next()?;
                    ended.push((f, None));
                    (f, EndEntry::synthesized(r), Vec::new())
                }
            };
            let max = finished.contains(s).then_some(r);
            if max.is_some() {
                for (c, e) in &entries {
                    if e.savepoint {
                        savepoints.flagged(*c);
                    }
                }
            }
            Some((s, end, entries, max))
        });
        self.slots.restore_ended(last, at_least, merged);
        // Finished for the instance's lifetime (SEMANTICS 6.2).
        self.finished = finished.clone();
        self.phase = Phase::Restoring(Recovery {
            checkpoint: r,
            state: rp.state,
            version: decoded.version,
            ended,
            restored: finished,
            wrote: false,
        });
        let held = self.slots.ended_bytes();
        if held > self.limits.max_snapshot_bytes {
            return Err(ErrorReason::RestoredEndsTooLarge {
                checkpoint: r,
                bytes: held,
                max: self.limits.max_snapshot_bytes,
            }
            .into());
        }
        if self.recovery_ready() {
            self.recovery_commit(env, log)?;
        }
        Ok(())
    }
    /// Puts slot `s` back to what the restored state held for it. A finished
    /// writer's slot counts as restored: it covers `r`, and the savepoint
    /// flags of its entries count (SEMANTICS 5.4, 6.2); the other slots wait
    /// for a restore event, whose own flags count.
    fn install_persisted(&mut self, s: u32) {
        let Some(rec) = self.recovery() else {
            return;
        };
        let r = rec.checkpoint;
        let finished = rec.restored.contains(s);
        let held = rec.persisted(s);
        self.slots.reset_ordinary(s, None);
        let Some(held) = held else {
            self.slots.set_end(s, None);
            return;
        };
        let mut max = finished.then_some(r);
        for (c, e) in held.entries {
            if finished && e.savepoint {
                self.savepoints.flagged(c);
            }
            max = max.max(Some(c));
            self.slots.put_entry(s, c, e);
        }
        self.slots.set_end(s, Some(held.end));
        self.slots.set_max(s, max);
    }

    /// Restoring, and every slot is restored: the recovery commit is due.
    pub(super) fn recovery_ready(&self) -> bool {
        self.recovery()
            .is_some_and(|r| r.restored.len == self.config.parallelism)
    }

    /// `subtask-reset` while restoring: back to what the state held; the
    /// slot waits for a new restore event.
    pub(super) fn reset_while_restoring(&mut self, s: u32) {
        if let Some(rec) = self.recovery_mut() {
            rec.restored.remove(s);
        }
        self.install_persisted(s);
    }

    /// An END event while `restoring` (SEMANTICS 6.2): accepted as in
    /// `running` from a writer whose slot is restored (it may reach the end of
    /// its input while others still restore); nothing commits until the
    /// recovery commit.
    pub(super) fn end_while_restoring(&mut self, s: u32, entry: Entry, bytes: u64) -> Result<()> {
        let Some(r) = self
            .recovery()
            .filter(|rec| rec.restored.contains(s))
            .map(|rec| rec.checkpoint)
        else {
            return Err(ErrorReason::EndBeforeRestoreEvent { subtask: s }.into());
        };
        self.check_end(s, bytes)?;
        // The writer restored from `r` and ended after it (SEMANTICS 3),
        // unless it resends the END entry its slot holds (see `event_inner`).
        let end = self.resent_end(s, EndEntry::reported(entry, r.saturating_add(1)));
        self.slots.set_end(s, Some(end));
        Ok(())
    }

    /// Checks a restore event's entries (SEMANTICS 6.1): ids `<= r` or END,
    /// unique, at most one END.
    fn validate_restored(s: u32, r: u64, entries: &[Entry]) -> Result<()> {
        let mut seen = BTreeSet::new();
        for e in entries {
            if e.checkpoint != END && e.checkpoint > r {
                return Err(ErrorReason::LaterCheckpointRestored {
                    subtask: s,
                    from: r,
                    checkpoint: e.checkpoint,
                }
                .into());
            }
            if !seen.insert(e.checkpoint) {
                return Err(ErrorReason::CheckpointRestoredTwice {
                    subtask: s,
                    from: r,
                    checkpoint: e.checkpoint,
                }
                .into());
            }
        }
        Ok(())
    }

    // Out of line: a JVM JIT compiles no method over 8,000 bytecode bytes
    // (BENCHMARKS.md, "Huge functions on the JVM").
    #[inline(never)]
    pub(super) fn restored_inner(
        &mut self,
        env: &mut Env<'_>,
        s: u32,
        r: u64,
        entries: Vec<Entry>,
        log: &mut CallLog,
    ) -> Result<()> {
        self.require("restored", &[Lifecycle::Restoring, Lifecycle::Running])?;
        self.require_subtask("restored", s)?;
        Self::require_checkpoint_of("restore event of subtask", s, r, false)?;
        Self::validate_restored(s, r, &entries)?;
        for e in &entries {
            self.limits
                .check_entry("restore event", s, e.checkpoint, &e.committables)?;
            #[cfg(feature = "paimon")]
            self.log.check_committables(
                env.storage,
                "restore event",
                s,
                e.checkpoint,
                &e.committables,
            )?;
        }
        if self.recovery().is_some() {
            return self.restored_while_restoring(env, s, r, entries, log);
        }
        if self.finished.contains(s) {
            // Flink may run a finished subtask again with empty state:
            // ignored for the instance's lifetime (SEMANTICS 6.2).
            return Ok(());
        }
        // A failed read does not refuse the input: it is applied with what
        // this instance knows, and the error is returned instead of running
        // the commit rule (SEMANTICS 5.2, 8: the input stays accepted).
        let read = self.read_table(env, log);
        if self.final_done {
            // Ignored; only a final commit's failed tagging is retried.
            return self.commit_after(read, env, Trigger::Other, log); // region replays are ignored (see commit_rule)
        }
        let high = self.committed_high();
        let mut end_arrived = false;
        for e in entries {
            if e.checkpoint == END {
                self.check_end(s, committables_bytes(&e.committables))?;
                // The writer's state at `r` holds it (SEMANTICS 3).
                let end = EndEntry::reported(e, r);
                self.slots.set_end(s, Some(end));
                end_arrived = true;
            } else if high.is_some_and(|h| e.checkpoint <= h) {
                // Already in the table.
            } else {
                let bytes = committables_bytes(&e.committables);
                self.accept_entry(s, e, bytes)?;
            }
        }
        // A writer restored from r has reported everything up to r.
        let max = self.slots.max(s).max(Some(r));
        self.slots.set_max(s, max);
        let trigger = if end_arrived {
            Trigger::EndArrival
        } else {
            Trigger::Other
        };
        self.commit_after(read, env, trigger, log)
    }

    fn restored_while_restoring(
        &mut self,
        env: &mut Env<'_>,
        s: u32,
        r: u64,
        entries: Vec<Entry>,
        log: &mut CallLog,
    ) -> Result<()> {
        let Some(rec) = self.recovery() else {
            return Err(ErrorReason::NoRestoreInProgress.into());
        };
        let expected = rec.checkpoint;
        if r != expected {
            return Err(ErrorReason::RestoreFromOtherCheckpoint {
                subtask: s,
                from: r,
                restoring: expected,
            }
            .into());
        }
        if self.finished.contains(s) {
            // Ignored, as in `running` (SEMANTICS 6.2).
            return Ok(());
        }
        // Applied to what the state held for the slot (a second restore event
        // replaces the first entirely): its ordinary entries replace the
        // state's (a writer that did not finish still holds every entry the
        // table lacks), its END entry replaces the persisted one.
        let mut end = rec.persisted(s).map(|held| held.end);
        self.slots.reset_ordinary(s, None);
        for e in entries {
            if e.checkpoint == END {
                // `taken = r`, unless it re-delivers the END entry the state
                // holds, which keeps its own (SEMANTICS 3).
                let mut replayed = EndEntry::reported(e, r);
                if let Some(held) = end.as_ref().filter(|held| held.same_report(&replayed)) {
                    replayed.taken = held.taken;
                }
                end = Some(replayed);
            } else {
                // Kept even if already committed: the recovery filter skips them, and
                // their savepoint flags still count (a missing tag is re-created).
                let bytes = committables_bytes(&e.committables);
                self.accept_entry(s, e, bytes)?;
            }
        }
        if let Some(end) = &end {
            self.check_end(s, committables_bytes(&end.committables))?;
        }
        self.slots.set_end(s, end);
        self.slots.set_max(s, Some(r));
        if let Some(rec) = self.recovery_mut() {
            rec.restored.insert(s);
        }
        if self.recovery_ready() {
            self.recovery_commit(env, log)?;
        }
        Ok(())
    }

    /// After the recovery commit: `restoring` -> `running`.
    pub(crate) fn finish_recovery(&mut self, log: &mut CallLog) {
        let Phase::Restoring(rec) = core::mem::replace(&mut self.phase, Phase::Running) else {
            return;
        };
        let r = rec.checkpoint;
        self.completed = self.completed.max(Some(r));
        self.committed_through = self.committed_through.max(Some(r));
        log.restart_required = rec.wrote && self.config.recovery == RecoveryMode::Restart;
    }
}

#[cfg(test)]
mod tests {
    use super::SubtaskSet;

    #[test]
    fn subtask_set_counts_each_subtask_once() {
        let mut set = SubtaskSet::default();
        for s in [5, 70, 5, 0, 1_000_000] {
            set.insert(s);
        }
        assert_eq!(set.len, 4);
        assert!(set.contains(70) && set.contains(0) && !set.contains(71));
        set.remove(70);
        set.remove(70);
        set.remove(3_000_000);
        assert_eq!(set.len, 3);
        assert!(!set.contains(70));
    }
}
