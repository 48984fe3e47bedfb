//! Global failover (SEMANTICS 6.2): `start` from a restore point, the
//! `restoring` state and its bookkeeping, restore events (also while
//! `running`, SEMANTICS 6.1), resets while restoring, and the way back to
//! `running` after the recovery commit (which `commit` runs).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::vec::Vec;

use super::{CallLog, Coordinator, Phase, Trigger};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::limits::committables_bytes;
use crate::slots::EndEntry;
use crate::state_codec::{self, EndedSlot};
use crate::types::{checkpoint_name, Entry, Lifecycle, RecoveryMode, RestorePoint, END};

/// Global-restore bookkeeping: the data of the `restoring` state (SEMANTICS 6.2).
#[derive(Clone, Debug)]
pub(super) struct Recovery {
    /// The checkpoint restored from.
    checkpoint: u64,
    /// What the state bytes hold per ended slot (plus a synthesized END
    /// entry for each finished writer the state has none for): a restore
    /// event or a reset is applied to this.
    persisted: BTreeMap<u32, EndedSlot>,
    /// Slots that sent their restore event (finished writers from the start).
    restored: BTreeSet<u32>,
    /// The recovery commit wrote a snapshot (in this or an earlier attempt
    /// that failed on storage): decides `restart-required`.
    wrote: bool,
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
        env: &mut dyn Env,
        rp: RestorePoint,
        log: &mut CallLog,
    ) -> Result<()> {
        let p = self.config.parallelism;
        let mut finished = BTreeSet::new();
        for &s in &rp.finished_subtasks {
            self.require_subtask("restore (finished subtasks)", s)?;
            finished.insert(s);
        }
        let r = rp.checkpoint;
        Self::require_checkpoint("restore", r, false)?;
        let state = state_codec::decode(&rp.state)?;
        if !state.slots.is_empty() && state.parallelism != p {
            return Err(Error::corrupt_state(format!(
                "cannot rescale a partly finished sink: the state of checkpoint {r} has parallelism {} and END entries, the configuration has {p}",
                state.parallelism
            )));
        }
        self.commit_user = state.commit_user;
        self.log.watch(&self.commit_user);
        // Inserted, not collected: `collect` into a map sorts first, one
        // stable-sort copy more in the component (issue 10); same map.
        let mut persisted: BTreeMap<u32, EndedSlot> = BTreeMap::new();
        for (s, e) in state.slots {
            persisted.insert(s, e);
        }
        for &s in &finished {
            persisted.entry(s).or_insert_with(|| EndedSlot {
                end: EndEntry::synthesized(),
                entries: Vec::new(),
            });
        }
        // Installed in one pass over the sorted state (the slots are all
        // empty here); a finished writer's slot covers `r` and the savepoint
        // flags of its entries count (see `install_persisted`).
        for (_, held) in persisted.iter().filter(|(s, _)| finished.contains(s)) {
            for (c, e) in &held.entries {
                if e.savepoint {
                    self.savepoints.flagged(*c);
                }
            }
        }
        self.slots.restore_ended(persisted.iter().map(|(s, held)| {
            let max = finished.contains(s).then_some(r);
            (*s, held.end.clone(), held.entries.clone(), max)
        }));
        self.phase = Phase::Restoring(Recovery {
            checkpoint: r,
            persisted,
            restored: finished,
            wrote: false,
        });
        let held = self.slots.ended_bytes();
        if held > self.limits.max_snapshot_bytes {
            return Err(Error::invalid_config(format!(
                "restore from checkpoint {r}: the state's END entries and the entries of ended writers hold {held} bytes, more than max-snapshot-bytes {}",
                self.limits.max_snapshot_bytes
            )));
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
        let finished = rec.restored.contains(&s);
        let held = rec.persisted.get(&s).cloned();
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
            .is_some_and(|r| r.restored.len() as u64 == u64::from(self.config.parallelism))
    }

    /// `subtask-reset` while restoring: back to what the state held; the
    /// slot waits for a new restore event.
    pub(super) fn reset_while_restoring(&mut self, s: u32) {
        if let Some(rec) = self.recovery_mut() {
            rec.restored.remove(&s);
        }
        self.install_persisted(s);
    }

    /// An END event while `restoring` (SEMANTICS 6.2): accepted as in
    /// `running` from a writer whose slot is restored (it may reach the end of
    /// its input while others still restore); nothing commits until the
    /// recovery commit.
    pub(super) fn end_while_restoring(&mut self, s: u32, entry: Entry, bytes: u64) -> Result<()> {
        let restored = self.recovery().is_some_and(|rec| rec.restored.contains(&s));
        if !restored {
            return Err(Error::illegal_state(format!(
                "END event of subtask {s} while the coordinator is restoring and subtask {s} has not sent its restore event"
            )));
        }
        self.check_end(s, bytes)?;
        self.slots.set_end(s, Some(EndEntry::reported(entry)));
        Ok(())
    }

    /// Checks a restore event's entries (SEMANTICS 6.1): ids `<= r` or END,
    /// unique, at most one END.
    fn validate_restored(s: u32, r: u64, entries: &[Entry]) -> Result<()> {
        let mut seen = BTreeSet::new();
        for e in entries {
            if e.checkpoint != END && e.checkpoint > r {
                return Err(Error::invalid_event(format!(
                    "restore event of subtask {s} from checkpoint {r} holds an entry for later checkpoint {}",
                    checkpoint_name(e.checkpoint)
                )));
            }
            if !seen.insert(e.checkpoint) {
                return Err(Error::invalid_event(format!(
                    "restore event of subtask {s} from checkpoint {r} holds checkpoint {} twice",
                    checkpoint_name(e.checkpoint)
                )));
            }
        }
        Ok(())
    }

    pub(super) fn restored_inner(
        &mut self,
        env: &mut dyn Env,
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
        }
        if self.recovery().is_some() {
            return self.restored_while_restoring(env, s, r, entries, log);
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
                let end = EndEntry::reported(e);
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
        env: &mut dyn Env,
        s: u32,
        r: u64,
        entries: Vec<Entry>,
        log: &mut CallLog,
    ) -> Result<()> {
        let Some(rec) = self.recovery() else {
            return Err(Error::illegal_state("restored: no restore in progress"));
        };
        let expected = rec.checkpoint;
        if r != expected {
            return Err(Error::invalid_event(format!(
                "restore event of subtask {s} is from checkpoint {r}, the coordinator restores checkpoint {expected}"
            )));
        }
        // Applied to what the state held for the slot (a second restore event
        // replaces the first entirely): its ordinary entries replace the
        // state's (a writer that did not finish still holds every entry the
        // table lacks), its END entry replaces the persisted one.
        let mut end = rec.persisted.get(&s).map(|held| held.end.clone());
        self.slots.reset_ordinary(s, None);
        for e in entries {
            if e.checkpoint == END {
                end = Some(EndEntry::reported(e));
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
