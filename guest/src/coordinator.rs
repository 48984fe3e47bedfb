//! The coordinator's lifecycle and calls (SEMANTICS 2, 3, 4, 6).
//!
//! Every call validates in the order SEMANTICS 2 fixes (state, then subtask
//! range, then content), mutates the slots, runs the commit rule (see
//! `commit`), and reports what it did. A fatal error moves the instance to
//! `failed`; `declined` and `storage` errors leave it usable.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::env::{AsEnv, Env};
use crate::error::{Error, ErrorReason, Result};
use crate::limits::Limits;
use crate::savepoint::{Savepoints, TagChanges};
use crate::slots::{EndEntry, SlotEntry, Slots};
use crate::state_codec;
use crate::table::{TableFormatKind, TableLog};
use crate::types::{
    Config, Entry, Lifecycle, Outcome, RestorePoint, END, MAX_COMMIT_USER_BYTES, MAX_PARALLELISM,
};

mod preconditions;
mod recovery;

use recovery::{Recovery, SubtaskSet};

/// What made the commit rule run: decides whether a final commit is due (SEMANTICS 5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// `checkpoint-complete`.
    Completion,
    /// A call that delivered an END entry.
    EndArrival,
    /// Any other call.
    Other,
}

/// The lifecycle state (SEMANTICS 2), each state owning the data only it
/// has: the restore point exists only until `start`, the recovery
/// bookkeeping only while `restoring`. [`Lifecycle`] is its data-less view.
#[derive(Clone, Debug)]
enum Phase {
    /// Constructed; `start` has not run.
    Created {
        /// A global failover's restore point, consumed by `start`.
        restore: Option<RestorePoint>,
    },
    /// Waiting for every writer's restore event (SEMANTICS 6.2).
    Restoring(Recovery),
    /// Accepting events.
    Running,
    /// Closed by the host.
    Closed,
    /// After a fatal error.
    Failed,
}

impl Phase {
    fn lifecycle(&self) -> Lifecycle {
        match self {
            Phase::Created { .. } => Lifecycle::Created,
            Phase::Restoring(_) => Lifecycle::Restoring,
            Phase::Running => Lifecycle::Running,
            Phase::Closed => Lifecycle::Closed,
            Phase::Failed => Lifecycle::Failed,
        }
    }
}

/// Accumulates what one call did.
#[derive(Default)]
pub(crate) struct CallLog {
    pub(crate) committed: Vec<u64>,
    pub(crate) tags: TagChanges,
    pub(crate) restart_required: bool,
}

/// One coordinator instance. `Clone` copies the whole instance (model
/// checkers explore from copies); a host never needs it.
#[derive(Clone)]
pub struct Coordinator {
    pub(crate) config: Config,
    /// The lifecycle state and its data.
    phase: Phase,
    pub(crate) commit_user: String,
    pub(crate) slots: Slots,
    /// Highest completed checkpoint (none until the first completion or a recovery).
    pub(crate) completed: Option<u64>,
    /// Highest checkpoint up to which this instance ran a commit (empty ones included).
    pub(crate) committed_through: Option<u64>,
    /// The final commit happened (SEMANTICS 5.3). Not lifecycle data: it is
    /// knowledge about the table, learnt in `restoring` or `running` and
    /// still true (and queried) once `closed` or `failed`.
    pub(crate) final_done: bool,
    pub(crate) log: TableLog,
    pub(crate) savepoints: Savepoints,
    /// Committed-up-to (SEMANTICS 5.5).
    pub(crate) up_to: Option<u64>,
    /// Checkpoints passed above `up_to`, ascending: kept only while a
    /// pending savepoint may hold committed-up-to below one of them.
    pub(crate) passed: Vec<u64>,
    /// Subtasks named finished by the restore: their restore events and
    /// resets are ignored for the instance's lifetime (SEMANTICS 6.2).
    finished: SubtaskSet,
    /// Size limits checked when input arrives.
    limits: Limits,
    /// The commit rule's early exit is on (see `commit_rule_idle`); only
    /// the test that compares runs with and without it turns it off.
    pub(crate) rule_shortcut: bool,
}

impl Coordinator {
    /// Stores the configuration; nothing is validated or read until `start`.
    pub fn new(config: Config, restore: Option<RestorePoint>) -> Self {
        let parallelism = config.parallelism;
        let savepoints = Savepoints::new(config.savepoint_auto_tag, config.tag_time_retained_ms);
        let mut log = TableLog::default();
        log.watch(&config.commit_user);
        Coordinator {
            commit_user: config.commit_user.clone(),
            config,
            phase: Phase::Created { restore },
            slots: Slots::new(parallelism),
            completed: None,
            committed_through: None,
            final_done: false,
            log,
            savepoints,
            up_to: None,
            passed: Vec::new(),
            finished: SubtaskSet::default(),
            limits: Limits::default(),
            rule_shortcut: true,
        }
    }

    /// Turns the commit rule's early exit off (`false`) or on (the
    /// default). The results are the same either way; only the test that
    /// proves it (`tests/rule_shortcut.rs`) turns it off.
    #[doc(hidden)]
    pub fn set_commit_rule_shortcut(&mut self, on: bool) {
        self.rule_shortcut = on;
    }

    /// Sets the size limits (host configuration, see [`Limits`]); allowed
    /// only while `created`, before `start`. Fatal errors: `illegal-state`
    /// in any other state, `invalid-config` for a limit out of range.
    pub fn set_limits(&mut self, limits: Limits) -> Result<()> {
        let result = self
            .require("set-limits", &[Lifecycle::Created])
            .and_then(|()| limits.validate());
        if result.is_ok() {
            self.limits = limits;
        }
        self.fail_on_fatal(&result);
        result
    }

    /// Chooses the table format (host configuration, `table-format`); allowed
    /// only while `created`, before `start`. Not part of the state bytes: a
    /// restore's host configures the same table again. Fatal errors:
    /// `illegal-state` in any other state, `invalid-config` for a format this
    /// build lacks.
    pub fn set_table_format(&mut self, kind: TableFormatKind) -> Result<()> {
        let result = self
            .require("set-table-format", &[Lifecycle::Created])
            .and_then(|()| TableLog::with_format(kind));
        let result = result.map(|mut log| {
            log.watch(&self.commit_user);
            self.log = log;
        });
        self.fail_on_fatal(&result);
        result
    }

    /// The table format in force.
    pub fn table_format(&self) -> TableFormatKind {
        self.log.format_kind()
    }

    /// The size limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The lifecycle state (SEMANTICS 2).
    pub fn state(&self) -> Lifecycle {
        self.phase.lifecycle()
    }

    /// The commit user in force (a restore's state wins over the configuration).
    pub fn commit_user(&self) -> &str {
        &self.commit_user
    }

    /// Committed-up-to (SEMANTICS 5.5): every entry this instance accepted up
    /// to this checkpoint is in the table; `Some(END)` after the final commit.
    pub fn committed_up_to(&self) -> Option<u64> {
        self.up_to
    }

    /// Whether the final commit has happened (SEMANTICS 5.3).
    pub fn final_committed(&self) -> bool {
        self.final_done
    }

    /// Savepoint ids waiting for their snapshot to be committed.
    pub fn pending_savepoints(&self) -> Vec<u64> {
        self.savepoints.pending().copied().collect()
    }

    // --- calls -------------------------------------------------------------

    /// `created` -> `running`, or `restoring` with a restore point (SEMANTICS 2, 6.2).
    pub fn start(&mut self, env: &mut dyn AsEnv) -> Result<Outcome> {
        self.call(|c, log| c.start_inner(&mut env.as_env(), log))
    }

    /// A writer's committable event for one checkpoint or END (SEMANTICS 3).
    pub fn event(
        &mut self,
        env: &mut dyn AsEnv,
        subtask: u32,
        attempt: u32,
        entry: Entry,
    ) -> Result<Outcome> {
        self.event_in(&mut env.as_env(), subtask, attempt, entry)
    }

    /// [`Self::event`] on an environment already lent: a batch's loop
    /// (`crate::batch`) calls it once per event.
    pub(crate) fn event_in(
        &mut self,
        env: &mut Env<'_>,
        subtask: u32,
        attempt: u32,
        entry: Entry,
    ) -> Result<Outcome> {
        let _ = attempt; // informational only (SEMANTICS 2)
        self.call(|c, log| c.event_inner(env, subtask, entry, log))
    }

    /// A writer's replay of its checkpointed buffer after restoring from `checkpoint` (SEMANTICS 6).
    pub fn restored(
        &mut self,
        env: &mut dyn AsEnv,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    ) -> Result<Outcome> {
        let _ = attempt;
        self.call(|c, log| c.restored_inner(&mut env.as_env(), subtask, checkpoint, entries, log))
    }

    /// Region failover of one writer, restarting from `checkpoint` (none: from scratch; SEMANTICS 6.1).
    pub fn subtask_reset(
        &mut self,
        env: &mut dyn AsEnv,
        subtask: u32,
        checkpoint: Option<u64>,
    ) -> Result<Outcome> {
        self.call(|c, log| c.reset_inner(&mut env.as_env(), subtask, checkpoint, log))
    }

    /// The coordinator's state bytes for checkpoint `checkpoint` (SEMANTICS 7).
    pub fn checkpoint(&mut self, env: &mut dyn AsEnv, checkpoint: u64) -> Result<Vec<u8>> {
        let _ = env; // taking state reads nothing
        let result = self.checkpoint_inner(checkpoint);
        self.fail_on_fatal(&result);
        result
    }

    /// Checkpoint `checkpoint` completed: runs the commit rule (SEMANTICS 5).
    pub fn checkpoint_complete(&mut self, env: &mut dyn AsEnv, checkpoint: u64) -> Result<Outcome> {
        self.call(|c, log| c.complete_inner(&mut env.as_env(), checkpoint, log))
    }

    /// Checkpoint `checkpoint` was aborted (SEMANTICS 5.4).
    pub fn checkpoint_aborted(&mut self, env: &mut dyn AsEnv, checkpoint: u64) -> Result<Outcome> {
        self.call(|c, log| c.aborted_inner(&mut env.as_env(), checkpoint, log))
    }

    /// Closes the instance (any state but `failed` becomes `closed`).
    pub fn close(&mut self, env: &mut dyn AsEnv) -> Result<Outcome> {
        let _ = env;
        if !matches!(self.phase, Phase::Closed | Phase::Failed) {
            self.phase = Phase::Closed;
        }
        Ok(self.outcome(CallLog::default()))
    }

    // --- plumbing ------------------------------------------------------------

    fn call(&mut self, f: impl FnOnce(&mut Self, &mut CallLog) -> Result<()>) -> Result<Outcome> {
        let mut log = CallLog::default();
        let result = f(self, &mut log);
        if result
            .as_ref()
            .is_err_and(|e| e.kind == crate::error::ErrorKind::Storage)
        {
            // What landed is unknown: read the table again before the next decision.
            self.log.invalidate();
        }
        self.fail_on_fatal(&result);
        result.map(|()| self.outcome(log))
    }

    /// Refuses input its host glue could not decode (a malformed
    /// committables block of `events-packed`): the error is returned as a
    /// call's would be, and a fatal one fails the instance.
    pub(crate) fn refuse(&mut self, error: Error) -> Error {
        if error.kind.is_fatal() && !matches!(self.phase, Phase::Closed | Phase::Failed) {
            self.phase = Phase::Failed;
        }
        error
    }

    fn fail_on_fatal<T>(&mut self, result: &Result<T>) {
        if let Err(e) = result {
            if e.kind.is_fatal() && !matches!(self.phase, Phase::Closed | Phase::Failed) {
                self.phase = Phase::Failed;
            }
        }
    }

    fn outcome(&self, log: CallLog) -> Outcome {
        Outcome {
            state: self.state(),
            committed: log.committed,
            tags_created: log.tags.created,
            tags_deleted: log.tags.deleted,
            restart_required: log.restart_required,
            committed_up_to: self.up_to,
        }
    }

    /// Reads the table once, at the first call that needs it (SEMANTICS 5.3:
    /// "the first successful read of the table this instance makes"). Called
    /// after a call's validation and before it changes anything, so a storage
    /// error leaves the instance as it was and the call can be repeated.
    #[inline]
    pub(crate) fn read_table(&mut self, env: &mut Env<'_>, log: &mut CallLog) -> Result<()> {
        if self.log.needs_read() {
            self.read_table_now(env, log)
        } else {
            Ok(())
        }
    }

    /// [`Self::read_table`] when the view must be read (out of line: most
    /// calls find it current).
    #[inline(never)]
    fn read_table_now(&mut self, env: &mut Env<'_>, log: &mut CallLog) -> Result<()> {
        if !self.log.is_loaded() {
            self.log.load(env.storage)?;
            // An END snapshot of this commit user found by the first read:
            // the final commit happened (SEMANTICS 5.3).
            self.final_done |= self.log.own_high() == Some(END);
        } else if self.log.needs_read() {
            // After a storage error: a create of ours may have landed. Only
            // our own END snapshot counts as our final commit (one another
            // instance writes later does not).
            if let Some(identifier) = self.log.refresh(env.storage, &self.commit_user)? {
                self.record_landed(identifier, log);
            }
        }
        Ok(())
    }

    /// Highest identifier this commit user committed, or highest checkpoint
    /// this instance ran a commit for, whichever is higher (SEMANTICS 3 rule 2).
    pub(crate) fn committed_high(&self) -> Option<u64> {
        self.log.own_high().max(self.committed_through)
    }

    // --- start ---------------------------------------------------------------

    fn start_inner(&mut self, env: &mut Env<'_>, log: &mut CallLog) -> Result<()> {
        if self.recovery_ready() {
            // The recovery commit inside an earlier `start` failed on storage: retry it.
            return self.recovery_commit(env, log);
        }
        self.require("start", &[Lifecycle::Created])?;
        let p = self.config.parallelism;
        if p == 0 || p > MAX_PARALLELISM {
            return Err(ErrorReason::ParallelismOutOfRange { parallelism: p }.into());
        }
        if self.config.commit_user.is_empty() {
            return Err(ErrorReason::EmptyCommitUser.into());
        }
        if self.config.commit_user.len() > MAX_COMMIT_USER_BYTES {
            return Err(ErrorReason::CommitUserTooLong {
                bytes: self.config.commit_user.len(),
            }
            .into());
        }
        // Validated above, so a failure below is fatal and `failed` follows:
        // the restore point is not needed again.
        let Phase::Created { restore } = core::mem::replace(&mut self.phase, Phase::Running) else {
            return Ok(()); // unreachable: `require` checked `created`
        };
        let Some(rp) = restore else {
            // The table is read lazily by the first call that needs it, so
            // `start` itself cannot fail on storage and always leaves `created`.
            return Ok(());
        };
        self.start_restoring(env, rp, log)
    }

    // --- writer events ---------------------------------------------------------

    fn event_inner(
        &mut self,
        env: &mut Env<'_>,
        s: u32,
        entry: Entry,
        log: &mut CallLog,
    ) -> Result<()> {
        self.require("event", &[Lifecycle::Running, Lifecycle::Restoring])?;
        let c = entry.checkpoint;
        let restoring = self.recovery().is_some();
        if restoring && c != END {
            return Err(ErrorReason::OrdinaryEventWhileRestoring {
                subtask: s,
                checkpoint: c,
            }
            .into());
        }
        self.require_subtask("event", s)?;
        Self::require_checkpoint_of("event of subtask", s, c, true)?;
        let bytes = self
            .limits
            .check_entry("event", s, c, &entry.committables)?;
        // The table format's content check (a Paimon table decodes each
        // committable); without the feature the native log checks nothing.
        #[cfg(feature = "paimon")]
        self.log
            .check_committables(env.storage, "event", s, c, &entry.committables)?;
        if restoring {
            return self.end_while_restoring(s, entry, bytes);
        }
        // A failed read does not refuse the input: it is applied with what
        // this instance knows, and the error is returned instead of running
        // the commit rule (SEMANTICS 5.2, 8: the input stays accepted).
        let read = self.read_table(env, log);
        if self.final_done {
            // Rule 1: ignored; only a final commit's failed tagging is retried.
            return self.commit_after(read, env, Trigger::Other, log);
        }
        let max = self.slots.max(s);
        if c == END {
            // Replaces any END entry: the newest report is authoritative; the
            // flag is ignored. The writer's report for `max + 1`, if any, was
            // sent after it, so that checkpoint's state holds it (SEMANTICS 3).
            self.check_end(s, bytes)?;
            let end = self.resent_end(s, EndEntry::reported(entry, max.map_or(0, |m| m + 1)));
            self.slots.set_end(s, Some(end));
            return self.commit_after(read, env, Trigger::EndArrival, log);
        }
        let covered = max.is_some_and(|m| m >= c);
        // Rule 2: committed work.
        if self.committed_high().is_some_and(|h| c <= h) {
            if covered {
                return self.commit_after(read, env, Trigger::Other, log); // a resend
            }
            if self.slots.has_end(s) && entry.committables.is_empty() {
                // An ended writer's late report for a checkpoint committed on
                // the strength of its END entry: only `max` counts (its flag
                // is ignored: every writer that had not ended reported `c`,
                // with the same flag, before `c` could commit).
                self.slots.set_max(s, Some(c));
                return self.commit_after(read, env, Trigger::Other, log);
            }
            if read.is_ok() {
                return Err(ErrorReason::AlreadyCommitted {
                    subtask: s,
                    checkpoint: c,
                }
                .into());
            }
            // Without the table this instance cannot tell a reused commit
            // user from a final commit it does not know of yet: the entry is
            // kept (the filter of 5.2 never commits it twice).
        }
        // Rule 3: a second report for the same checkpoint (a flag for an
        // aborted savepoint was cleared when the entry was held, so it is
        // compared cleared).
        // Every held entry is at or below the slot's max, so an event above
        // it (the common case) needs no lookup.
        let existing = if covered {
            self.slots.entry(s, c)
        } else {
            None
        };
        if let Some(existing) = existing {
            if existing.committables == entry.committables
                && existing.watermark == entry.watermark
                && existing.savepoint == (entry.savepoint && !self.savepoints.is_aborted(c))
            {
                return self.commit_after(read, env, Trigger::Other, log);
            }
            return Err(ErrorReason::DifferentEntry {
                subtask: s,
                checkpoint: c,
            }
            .into());
        }
        // Rule 4: strictly increasing per writer.
        if let Some(m) = max.filter(|m| c <= *m) {
            return Err(ErrorReason::CheckpointsMustIncrease {
                subtask: s,
                checkpoint: c,
                after: m,
            }
            .into());
        }
        // Rule 5: above the slot's max (rule 4), so appended.
        self.accept_newest(s, entry, bytes)?;
        self.commit_after(read, env, Trigger::Other, log)
    }

    /// Runs the commit rule once the table was read; after a failed read,
    /// returns its error with the call's input already applied.
    fn commit_after(
        &mut self,
        read: Result<()>,
        env: &mut Env<'_>,
        trigger: Trigger,
        log: &mut CallLog,
    ) -> Result<()> {
        read?;
        self.commit_rule(env, trigger, log)
    }

    /// An END event's entry for slot `s`: a resend of the END entry the slot
    /// holds (a restarted writer ends its input again) is the same entry, so
    /// the first checkpoint whose state held it stays its `taken` (SEMANTICS
    /// 3: `taken` is that checkpoint; `max + 1` and `r + 1` bound it).
    pub(crate) fn resent_end(&self, s: u32, mut end: EndEntry) -> EndEntry {
        if let Some(held) = self.slots.ends().get(&s).filter(|h| h.same_report(&end)) {
            end.taken = end.taken.min(held.taken);
        }
        end
    }

    /// Checks that subtask `s`'s END entry of `bytes` keeps the END snapshot
    /// within the limit (it replaces any END entry the slot holds).
    fn check_end(&self, s: u32, bytes: u64) -> Result<()> {
        let held = self.slots.held_bytes(s);
        let replaced = if self.slots.has_end(s) {
            held.saturating_add(self.slots.end_bytes(s))
        } else {
            0
        };
        let total = self
            .slots
            .ended_bytes()
            .saturating_sub(replaced)
            .saturating_add(held)
            .saturating_add(bytes);
        self.limits
            .check_snapshot(s, END, bytes, END, self.with_user(total))
    }

    /// A snapshot's size with what it holds besides committables: its
    /// commit user, named twice (the snapshot's user and its mark).
    #[inline]
    fn with_user(&self, total: u64) -> u64 {
        total.saturating_add(2 * self.commit_user.len() as u64)
    }

    /// Puts an accepted ordinary entry into its slot (max unchanged); its
    /// savepoint flag joins the pending set (SEMANTICS 5.4: "whenever the
    /// coordinator accepts that entry").
    /// Refused (fatal) if it would make its checkpoint's snapshot, or for an
    /// ended writer the END snapshot, exceed the limit.
    /// `bytes` is the entry's size (as `limits::check_entry` returned it).
    pub(crate) fn accept_entry(&mut self, s: u32, e: Entry, bytes: u64) -> Result<()> {
        let c = e.checkpoint;
        // Every held entry is at or below the slot's max: above it there is
        // nothing to replace (an event's usual case), and no lookup.
        let replaced = if self.slots.max(s).is_some_and(|m| m >= c) {
            self.slots.entry_bytes(s, c)
        } else {
            0
        };
        let entry = self.checked_entry(s, e, bytes, replaced)?;
        self.slots.put_sized_entry(s, c, entry, bytes);
        Ok(())
    }

    /// [`Self::accept_entry`] of an event above subtask `s`'s max (rule 5),
    /// which also becomes its max: appended in one step
    /// (`Slots::push_reported`).
    fn accept_newest(&mut self, s: u32, e: Entry, bytes: u64) -> Result<()> {
        let c = e.checkpoint;
        let entry = self.checked_entry(s, e, bytes, 0)?;
        self.slots.push_reported(s, c, entry, bytes);
        Ok(())
    }

    /// The limit checks of an entry that replaces one of `replaced` bytes
    /// (0: none), its savepoint flag noted; the entry as the slot keeps it.
    #[inline]
    fn checked_entry(&mut self, s: u32, e: Entry, bytes: u64, replaced: u64) -> Result<SlotEntry> {
        let c = e.checkpoint;
        let at = self.slots.bytes_at(c).saturating_sub(replaced);
        self.limits
            .check_snapshot(s, c, bytes, c, self.with_user(at.saturating_add(bytes)))?;
        if self.slots.has_end(s) {
            let ended = self.slots.ended_bytes().saturating_sub(replaced);
            self.limits.check_snapshot(
                s,
                c,
                bytes,
                END,
                self.with_user(ended.saturating_add(bytes)),
            )?;
        }
        if e.savepoint {
            self.savepoints.flagged(e.checkpoint);
        }
        Ok(SlotEntry {
            committables: e.committables,
            watermark: e.watermark,
            // A late flag for an aborted savepoint is ignored, also in the state bytes.
            savepoint: e.savepoint && !self.savepoints.is_aborted(e.checkpoint),
        })
    }

    fn reset_inner(
        &mut self,
        env: &mut Env<'_>,
        s: u32,
        r: Option<u64>,
        log: &mut CallLog,
    ) -> Result<()> {
        self.require("subtask-reset", &[Lifecycle::Restoring, Lifecycle::Running])?;
        self.require_subtask("subtask-reset", s)?;
        if let Some(r) = r {
            Self::require_checkpoint_of("subtask-reset of subtask", s, r, false)?;
        }
        if self.finished.contains(s) {
            // Flink may run a finished subtask again: ignored (SEMANTICS 6.2).
            return Ok(());
        }
        if self.recovery().is_some() {
            self.reset_while_restoring(s);
            return Ok(());
        }
        // A failed read does not refuse the input: it is applied with what
        // this instance knows, and the error is returned instead of running
        // the commit rule (SEMANTICS 5.2, 8: the input stays accepted).
        let read = self.read_table(env, log);
        if self.final_done {
            // Changes nothing and retries no tag (SEMANTICS 5.3); a final
            // commit just learned from the table still moves committed-up-to.
            read?;
            self.settle_up_to(Some(END), true);
            return Ok(());
        }
        self.slots.reset_ordinary(s, r);
        self.slots.set_end(s, None);
        self.commit_after(read, env, Trigger::Other, log)
    }

    // --- checkpoint callbacks ------------------------------------------------------

    fn checkpoint_inner(&mut self, n: u64) -> Result<Vec<u8>> {
        match self.phase {
            Phase::Created { .. } | Phase::Restoring(_) => {
                return Err(ErrorReason::NoStateYet {
                    checkpoint: n,
                    state: self.state(),
                }
                .into())
            }
            Phase::Running => {}
            Phase::Closed | Phase::Failed => self.require("checkpoint", &[Lifecycle::Running])?,
        }
        Self::require_checkpoint("checkpoint", n, true)?;
        // After the final commit no END entry is uncommitted.
        let ended: &BTreeMap<u32, EndEntry> = if self.final_done {
            &BTreeMap::new()
        } else {
            self.slots.ends()
        };
        let slots = ended
            .iter()
            .map(|(s, e)| (*s, e, self.slots.entries_of(*s)));
        // The savepoints owed a tag and the aborted ids above the mark
        // (SEMANTICS 5.4, 7).
        let owed = self
            .savepoints
            .owed(self.final_done, self.committed_through);
        let aborted = self.savepoints.aborted_above(self.committed_high());
        Ok(state_codec::encode(
            &self.commit_user,
            self.config.parallelism,
            slots,
            state_codec::Ids {
                owed: &owed,
                aborted,
            },
        ))
    }

    fn complete_inner(&mut self, env: &mut Env<'_>, n: u64, log: &mut CallLog) -> Result<()> {
        self.require("checkpoint-complete", &[Lifecycle::Running])?;
        Self::require_checkpoint("checkpoint-complete", n, true)?;
        // A failed read does not refuse the input: it is applied with what
        // this instance knows, and the error is returned instead of running
        // the commit rule (SEMANTICS 5.2, 8: the input stays accepted).
        let read = self.read_table(env, log);
        if self.final_done {
            // Ignored; only a final commit's failed tagging is retried.
            return self.commit_after(read, env, Trigger::Other, log);
        }
        // Flink may skip notifications: a completion covers every earlier checkpoint.
        self.completed = self.completed.max(Some(n));
        self.commit_after(read, env, Trigger::Completion, log)
    }

    fn aborted_inner(&mut self, env: &mut Env<'_>, n: u64, log: &mut CallLog) -> Result<()> {
        self.require(
            "checkpoint-aborted",
            &[Lifecycle::Restoring, Lifecycle::Running],
        )?;
        Self::require_checkpoint("checkpoint-aborted", n, true)?;
        // Never drops committables: a later completion commits them. The
        // flags of held entries for `n` are cleared so that state bytes never
        // carry an aborted savepoint (SEMANTICS 5.4).
        if self.savepoints.enabled() {
            self.slots.clear_savepoint_flags(n);
        }
        self.savepoints
            .aborted(env, &mut self.log, &self.commit_user, n, &mut log.tags)
    }
}

impl core::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Coordinator")
            .field("state", &self.state())
            .field("commit_user", &self.commit_user)
            .field("completed", &self.completed)
            .field("committed_through", &self.committed_through)
            .field("final_done", &self.final_done)
            .finish()
    }
}
