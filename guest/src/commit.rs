//! The commit rule (SEMANTICS 5.1–5.3 and the recovery commit of 6.2).
//!
//! Entries leave their slots only after their snapshot is durable (or was
//! found already committed), so a storage error leaves everything from the
//! failing write on as it was and repeating the call retries it.

use alloc::vec::Vec;

use crate::coordinator::{CallLog, Coordinator, Trigger};
use crate::env::Env;
use crate::error::Result;
use crate::table::Written;
use crate::types::{FinalCommitMode, Lifecycle, END};

impl Coordinator {
    /// Runs after every call that can change the slots or the completion.
    pub(crate) fn commit_rule(
        &mut self,
        env: &mut dyn Env,
        trigger: Trigger,
        log: &mut CallLog,
    ) -> Result<()> {
        if self.final_done {
            // Everything is ignored after the final commit, except that tags
            // its tagging failed to create (storage error) are retried here.
            return self.finish_commit(env, END, log);
        }
        if self.slots.all_ended() {
            // While every slot holds an END entry, only the final commit commits.
            let due = match trigger {
                Trigger::Completion => true,
                Trigger::EndArrival => {
                    !self.config.checkpointing
                        || self.config.final_commit == FinalCommitMode::OnEndInput
                }
                Trigger::Other => false,
            };
            if due {
                self.final_commit(env, log)?;
                self.finish_commit(env, END, log)?;
            }
            return Ok(());
        }
        let (Some(completed), Some(frontier)) = (self.completed, self.slots.frontier()) else {
            return Ok(());
        };
        let target = completed.min(frontier);
        self.ordinary_commit(env, target, log)?;
        self.finish_commit(env, target, log)?;
        if let Some(high) = self.committed_high() {
            self.savepoints.forget_aborted_up_to(high);
        }
        Ok(())
    }

    /// Commits every ordinary entry `<= target`, one snapshot per non-empty
    /// checkpoint in ascending order, plus a forced empty snapshot for the
    /// target when configured.
    pub(crate) fn ordinary_commit(
        &mut self,
        env: &mut dyn Env,
        target: u64,
        log: &mut CallLog,
    ) -> Result<()> {
        let force =
            self.config.force_create_snapshot && self.committed_through.is_none_or(|t| t < target);
        // The forced snapshot's watermark is the target's, computed before its entries leave.
        let target_watermark = self.slots.watermark_at(target);
        self.commit_checkpoints(env, target, force, target_watermark, log)
    }

    fn commit_checkpoints(
        &mut self,
        env: &mut dyn Env,
        target: u64,
        force: bool,
        target_watermark: crate::slots::Watermark,
        log: &mut CallLog,
    ) -> Result<()> {
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
            }
            self.slots.remove_checkpoint(target);
        }
        // The target counts as committed as soon as its entries left the
        // slots, even if a later write of this call (the hint) fails.
        self.committed_through = self.committed_through.max(Some(target));
        Ok(())
    }

    /// Writes the snapshot of ordinary checkpoint `c` (if it has committables)
    /// and removes its entries.
    fn commit_checkpoint(&mut self, env: &mut dyn Env, c: u64, log: &mut CallLog) -> Result<()> {
        if self.slots.has_committables(c) {
            let watermark = self.slots.watermark_at(c).recorded();
            let committables: Vec<(u32, &[u8])> = self
                .slots
                .each_entry(c)
                .flat_map(|(s, e)| e.committables.iter().map(move |b| (s, b.as_slice())))
                .collect();
            let written = self
                .log
                .commit(env, &self.commit_user, c, watermark, &committables)?;
            self.record(written, c, log);
        }
        self.slots.remove_checkpoint(c);
        self.committed_through = self.committed_through.max(Some(c));
        Ok(())
    }

    /// The final commit: every remaining ordinary entry, completed or not, then
    /// one END snapshot with every END entry's committables.
    pub(crate) fn final_commit(&mut self, env: &mut dyn Env, log: &mut CallLog) -> Result<()> {
        self.final_commit_writes(env, log)?;
        // Done once its snapshots are durable; what follows (tags, the hint)
        // is retried by a repeated call through `commit_rule`.
        self.final_done = true;
        Ok(())
    }

    fn final_commit_writes(&mut self, env: &mut dyn Env, log: &mut CallLog) -> Result<()> {
        for c in self.slots.checkpoints_up_to(END) {
            self.commit_checkpoint(env, c, log)?;
        }
        let committables: Vec<(u32, &[u8])> = self
            .slots
            .ends()
            .iter()
            .flat_map(|(s, e)| e.committables.iter().map(move |b| (*s, b.as_slice())))
            .collect();
        if !committables.is_empty() || self.config.force_create_snapshot {
            let watermark = self.slots.end_watermark();
            let written = self
                .log
                .commit(env, &self.commit_user, END, watermark, &committables)?;
            self.record(written, END, log);
        }
        Ok(())
    }

    /// The recovery commit once every slot is restored (SEMANTICS 6.2).
    pub(crate) fn recovery_commit(&mut self, env: &mut dyn Env, log: &mut CallLog) -> Result<()> {
        let Some(r) = self.recovery.as_ref().map(|rec| rec.checkpoint) else {
            return Ok(());
        };
        self.read_table(env)?;
        if self.slots.all_ended() {
            if !self.final_done {
                self.final_commit(env, log)?;
            }
            self.finish_commit(env, END, log)?;
        } else {
            self.ordinary_commit(env, r, log)?;
            self.finish_commit(env, r, log)?;
        }
        self.finish_recovery(r, log);
        Ok(())
    }

    /// After the snapshot creates of a commit with target `target`: the
    /// savepoint tags up to it, then the latest-snapshot hint. TRACE-FORMAT
    /// promises that the creates are a commit's first put-class calls; tag
    /// puts follow them, and the hint (only a starting point for readers,
    /// which probe past a stale one) comes last.
    fn finish_commit(&mut self, env: &mut dyn Env, target: u64, log: &mut CallLog) -> Result<()> {
        self.savepoints
            .tag_up_to(env, &mut self.log, &self.commit_user, target, &mut log.tags)?;
        self.log.write_hint(env)
    }

    fn write(
        &mut self,
        env: &mut dyn Env,
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
            log.committed.push(identifier);
            if self.life == Lifecycle::Restoring {
                self.recovery_wrote = true;
            }
        }
    }
}
