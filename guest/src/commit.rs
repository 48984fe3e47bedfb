//! The commit rule (SEMANTICS 5.1–5.3 and the recovery commit of 6.2), and
//! committed-up-to (5.5), which only a run of the commit rule moves.
//!
//! Entries leave their slots only after their snapshot is durable (or was
//! found already committed), so a storage error leaves everything from the
//! failing write on as it was and repeating the call retries it.

use alloc::vec::Vec;

use crate::coordinator::{CallLog, Coordinator, Trigger};
use crate::env::Env;
use crate::error::Result;
use crate::table::Written;
use crate::types::{FinalCommitMode, END};

impl Coordinator {
    /// Runs after every call that can change the slots or the completion,
    /// then settles committed-up-to from how far the run got.
    pub(crate) fn commit_rule(
        &mut self,
        env: &mut Env<'_>,
        trigger: Trigger,
        log: &mut CallLog,
    ) -> Result<()> {
        if self.rule_shortcut && self.commit_rule_idle() {
            return Ok(());
        }
        let mut target = None;
        let result = self.run_commit_rule(env, trigger, log, &mut target);
        self.settle_up_to(target, result.is_ok());
        result
    }

    /// Whether a run of the commit rule would change nothing and call no
    /// import, so that it can be skipped. Most calls (every event of a
    /// steady job) end here: the target is the last completed checkpoint,
    /// whose run already happened. Exact, not a heuristic: on the ordinary
    /// path with target `t` a run commits the entries `<= t` (there are
    /// none), forces a snapshot only above `committed_through` (it is at
    /// least `t`), tags and forgets savepoints (none pending or aborted),
    /// writes the hint only if it is stale, and raises committed-up-to to
    /// `t` (it is there already); without a target it does nothing at all.
    /// The final commit and the all-ended paths are never skipped.
    /// `tests/rule_shortcut.rs` runs random calls with and without it and
    /// compares every outcome, state and storage write.
    fn commit_rule_idle(&self) -> bool {
        if self.final_done || self.slots.all_ended() {
            return false;
        }
        let (Some(completed), Some(frontier)) = (self.completed, self.slots.frontier()) else {
            return true;
        };
        let t = completed.min(frontier);
        self.committed_through >= Some(t)
            && self.up_to >= Some(t)
            && self.slots.first_checkpoint().is_none_or(|c| c > t)
            && self.savepoints.idle()
            && !self.log.hint_stale()
    }

    fn run_commit_rule(
        &mut self,
        env: &mut Env<'_>,
        trigger: Trigger,
        log: &mut CallLog,
        target: &mut Option<u64>,
    ) -> Result<()> {
        if self.final_done {
            // Everything is ignored after the final commit, except that tags
            // its tagging failed to create (storage error) are retried here.
            *target = Some(END);
            return self.finish_commit(env, END, log);
        }
        if self.slots.all_ended() {
            // While every slot holds an END entry, only the final commit commits.
            let due = if self.on_checkpoint() {
                // Once every END entry is in the state of a completed
                // checkpoint, whatever call runs the rule (SEMANTICS 5.3).
                self.completed
                    .is_some_and(|c| self.slots.latest_taken().is_some_and(|t| t <= c))
            } else {
                matches!(trigger, Trigger::Completion | Trigger::EndArrival)
            };
            if due {
                *target = Some(END);
                self.final_commit(env, log)?;
                self.finish_commit(env, END, log)?;
            }
            return Ok(());
        }
        let (Some(completed), Some(frontier)) = (self.completed, self.slots.frontier()) else {
            return Ok(());
        };
        let t = completed.min(frontier);
        *target = Some(t);
        self.ordinary_commit(env, t, log)?;
        self.finish_commit(env, t, log)?;
        if let Some(high) = self.committed_high() {
            self.savepoints.forget_aborted_up_to(high);
        }
        Ok(())
    }

    /// The final commit waits for the checkpoint that captured every END
    /// entry (`final-commit = on-checkpoint` with checkpointing, SEMANTICS 5.3).
    fn on_checkpoint(&self) -> bool {
        self.config.checkpointing && self.config.final_commit == FinalCommitMode::OnCheckpoint
    }

    /// Committed-up-to after a run of the commit rule with target `target`
    /// (SEMANTICS 5.5): the target if the run wrote everything; else the
    /// highest checkpoint whose entries this or an earlier run passed; in
    /// both cases held below a savepoint still owed a tag. A pending
    /// savepoint at or below the target whose tagging did not complete counts
    /// as owed (its snapshot may exist; finding out needs the table). END
    /// once the final commit happened and no tag is owed. Never goes down.
    pub(crate) fn settle_up_to(&mut self, target: Option<u64>, ok: bool) {
        let Some(t) = target else {
            return;
        };
        let owed = self.savepoints.pending().copied().find(|s| *s <= t);
        let reached = match owed {
            None if self.final_done => Some(END),
            None if ok => Some(t),
            None => self.committed_through,
            Some(s) => self.passed_below(s),
        };
        self.up_to = self.up_to.max(reached);
        self.passed.retain(|c| Some(*c) > self.up_to);
    }

    /// The highest checkpoint passed (entries all left the slots) below `s`.
    fn passed_below(&self, s: u64) -> Option<u64> {
        self.passed.iter().rev().copied().find(|c| *c < s)
    }

    /// Checkpoint `c` leaves the slots without a snapshot of its own. If this
    /// commit user has committed nothing at or above `c`, no snapshot with
    /// identifier `c` can exist, so a savepoint `c` owes no tag and must not
    /// hold committed-up-to back even if this run fails later (SEMANTICS
    /// 5.5). Otherwise (a replay of committed work) the tag pass looks.
    fn no_snapshot_for(&mut self, c: u64) {
        if self.log.own_high().is_none_or(|h| h < c) {
            self.savepoints.no_snapshot(c);
        }
    }

    /// Records that the entries of checkpoint `c` all left the slots.
    fn pass(&mut self, c: u64) {
        self.committed_through = self.committed_through.max(Some(c));
        // Only needed while a savepoint may hold committed-up-to back.
        if self.savepoints.pending().next().is_some() && self.passed.last() < Some(&c) {
            self.passed.push(c);
        }
    }

    /// Commits every ordinary entry `<= target`, one snapshot per non-empty
    /// checkpoint in ascending order, plus a forced empty snapshot for the
    /// target when configured.
    pub(crate) fn ordinary_commit(
        &mut self,
        env: &mut Env<'_>,
        target: u64,
        log: &mut CallLog,
    ) -> Result<()> {
        let force =
            self.config.force_create_snapshot && self.committed_through.is_none_or(|t| t < target);
        // The forced snapshot's watermark is the target's, computed before its entries leave.
        let target_watermark = self.slots.watermark_at(target);
        for c in self.slots.checkpoints_up_to(target) {
            if c == target {
                break; // the target is handled below, with the forced snapshot
            }
            self.commit_checkpoint(env, c, log)?;
        }
        if self.slots.has_committables(target) {
            self.commit_checkpoint(env, target, log)?;
        } else {
            if force {
                self.write(env, target, target_watermark.recorded(), &[], log)?;
            } else {
                self.no_snapshot_for(target);
            }
            self.slots.remove_checkpoint(target);
        }
        // The target counts as committed as soon as its entries left the
        // slots, even if a later write of this call (the hint) fails.
        self.pass(target);
        Ok(())
    }

    /// Writes the snapshot of ordinary checkpoint `c` (if it has committables)
    /// and removes its entries.
    fn commit_checkpoint(&mut self, env: &mut Env<'_>, c: u64, log: &mut CallLog) -> Result<()> {
        if self.slots.has_committables(c) {
            let watermark = self.slots.watermark_at(c).recorded();
            // Snapshots list committables in subtask order.
            self.slots.order(c);
            // Loops, not `flat_map`: the same work in less component code.
            let mut committables: Vec<(u32, &[u8])> = Vec::new();
            for (s, e) in self.slots.each_entry(c) {
                for b in &e.committables {
                    committables.push((s, b));
                }
            }
            let written = self
                .log
                .commit(env, &self.commit_user, c, watermark, &committables)?;
            self.record(written, c, log);
        } else {
            self.no_snapshot_for(c);
        }
        self.slots.remove_checkpoint(c);
        self.pass(c);
        Ok(())
    }

    /// The final commit (SEMANTICS 5.3): the entries of completed checkpoints
    /// as one snapshot per non-empty checkpoint, then the END snapshot,
    /// always written, holding per subtask the entries of checkpoints that
    /// never completed and then the END entry. Those entries go into the END
    /// snapshot so that they land together with the mark of the final commit
    /// or not at all: committed under their own ids, a commit cut short
    /// before the END snapshot would let the replay from the last completed
    /// checkpoint commit them again under new ids.
    pub(crate) fn final_commit(&mut self, env: &mut Env<'_>, log: &mut CallLog) -> Result<()> {
        // Decided by the attempt that writes the END snapshot, from the
        // `taken` values it holds (an earlier attempt failed before it).
        self.savepoints.undecide_on_end();
        self.decide_drained_tags();
        if let Some(completed) = self.completed {
            for c in self.slots.checkpoints_up_to(completed) {
                if let Err(e) = self.commit_checkpoint(env, c, log) {
                    // No END create yet: no drained tag can be owed.
                    self.savepoints.forget_failed_decisions();
                    return Err(e);
                }
            }
        }
        let mut committables: Vec<(u32, &[u8])> = Vec::new();
        for (s, end) in self.slots.ends() {
            for (_, e) in self.slots.entries_of(*s) {
                for b in &e.committables {
                    committables.push((*s, b));
                }
            }
            for b in &end.committables {
                committables.push((*s, b));
            }
        }
        let watermark = self.slots.end_watermark();
        // Savepoints whose entries go into the END snapshot get no snapshot of their own.
        let high = self.log.own_high();
        let inside: Vec<u64> = self
            .savepoints
            .pending_in(self.completed.map_or(0, |c| c.saturating_add(1)).min(END)..END)
            .copied()
            .filter(|s| high.is_none_or(|h| h < *s))
            .collect();
        let written = self
            .log
            .commit(env, &self.commit_user, END, watermark, &committables)?;
        for s in inside {
            self.savepoints.no_snapshot(s);
        }
        self.record(written, END, log);
        self.slots.clear_ordinary();
        // Done once its END snapshot is durable; what follows (tags, the
        // hint) is retried by a repeated call through `commit_rule`.
        self.final_done = true;
        Ok(())
    }

    /// A drained stop-with-savepoint (SEMANTICS 5.4, on-checkpoint mode):
    /// a pending `s <= completed` without a snapshot of its own, when every
    /// END entry has `taken <= s` (every writer had ended before `s`), gets
    /// its tag on the END snapshot. Decided once, from the `taken` values
    /// held now, and remembered until the tag exists.
    fn decide_drained_tags(&mut self) {
        if !self.on_checkpoint() {
            return;
        }
        let (Some(completed), Some(taken)) = (self.completed, self.slots.latest_taken()) else {
            return;
        };
        let drained: Vec<u64> = self
            .savepoints
            .pending_in(taken..completed.saturating_add(1))
            .copied()
            .filter(|s| !self.slots.has_committables(*s))
            .collect();
        for s in drained {
            self.savepoints.tag_on_end(s);
        }
    }

    /// The recovery commit once every slot is restored (SEMANTICS 6.2).
    pub(crate) fn recovery_commit(&mut self, env: &mut Env<'_>, log: &mut CallLog) -> Result<()> {
        let Some(r) = self.restoring_from() else {
            return Ok(());
        };
        let mut target = None;
        let result = self.run_recovery_commit(env, r, log, &mut target);
        self.settle_up_to(target, result.is_ok());
        result?;
        self.finish_recovery(log);
        Ok(())
    }

    fn run_recovery_commit(
        &mut self,
        env: &mut Env<'_>,
        r: u64,
        log: &mut CallLog,
        target: &mut Option<u64>,
    ) -> Result<()> {
        self.read_table(env, log)?;
        if self.slots.all_ended() {
            // A final commit as in 5.3, with `completed = r`.
            *target = Some(END);
            self.completed = self.completed.max(Some(r));
            if self.final_done {
                // Found in the table (written before the failover): the
                // drained decision is this run's to make (SEMANTICS 5.4).
                self.decide_drained_tags();
            } else {
                self.final_commit(env, log)?;
            }
            self.finish_commit(env, END, log)
        } else {
            *target = Some(r);
            self.ordinary_commit(env, r, log)?;
            self.finish_commit(env, r, log)
        }
    }

    /// After the snapshot creates of a commit with target `target`: the
    /// savepoint tags up to it, then the latest-snapshot hint. TRACE-FORMAT
    /// promises that the creates are a commit's first put-class calls; tag
    /// puts follow them, and the hint (only a starting point for readers,
    /// which probe past a stale one) comes last.
    fn finish_commit(&mut self, env: &mut Env<'_>, target: u64, log: &mut CallLog) -> Result<()> {
        self.savepoints
            .tag_up_to(env, &mut self.log, &self.commit_user, target, &mut log.tags)?;
        self.log.write_hint(env.storage)
    }

    fn write(
        &mut self,
        env: &mut Env<'_>,
        identifier: u64,
        watermark: Option<i64>,
        committables: &[(u32, &[u8])],
        log: &mut CallLog,
    ) -> Result<()> {
        let written =
            self.log
                .commit(env, &self.commit_user, identifier, watermark, committables)?;
        self.record(written, identifier, log);
        Ok(())
    }

    fn record(&mut self, written: Written, identifier: u64, log: &mut CallLog) {
        if written.wrote() {
            self.record_landed(identifier, log);
        }
    }

    /// A snapshot of ours for `identifier` is in the table: written now, or
    /// found by a later read although its create reported an error.
    pub(crate) fn record_landed(&mut self, identifier: u64, log: &mut CallLog) {
        log.committed.push(identifier);
        self.note_recovery_write();
        if identifier == END {
            // This instance knows its END snapshot is in the table (5.3).
            self.final_done = true;
        }
    }
}
