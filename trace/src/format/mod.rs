//! TRACE-FORMAT v2 traces (`spec/TRACE-FORMAT.md`), writer
//! steps included: reading ([`parse`]) and writing ([`to_json`]).
//!
//! - `doc`: the document's serde types (`deny_unknown_fields`, `op` tags);
//! - `value`: field values with their ranges and messages;
//! - `parse`: the document to a typed [`Trace`], and the rules between
//!   steps; `writers`: the writers those rules need;
//! - `write`: a [`Trace`] back to a document;
//! - `error`: [`Malformed`], naming the step and the field.
//!
//! Only the *shape* is checked here: values that fit their WIT types but
//! break SEMANTICS (parallelism 0, a subtask out of range, an empty commit
//! user) are passed on so that the coordinator reports them.

use crate::faults::{CallKind, Fault};
use sink_coordinator::{Config, Entry};

mod calls;
mod doc;
mod error;
pub mod layout;
mod parse;
pub(crate) mod value;
mod write;
mod writers;

#[cfg(test)]
mod tests;

pub use error::Malformed;
pub use parse::{parse, parse_slice};
pub use write::to_json;

/// The instance name of steps without `instance`.
pub const DEFAULT_INSTANCE: &str = "main";

/// A validated trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The trace's `config`, with defaults filled in.
    pub config: Config,
    /// The first clock reading.
    pub clock_start_ms: u64,
    /// What each later clock reading adds.
    pub clock_step_ms: u64,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One step: an operation on the instance named `instance`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The coordinator instance (and, for writer steps, the job whose
    /// writers) the step addresses; [`DEFAULT_INSTANCE`] when the step names
    /// none. Two names model two instances of one job (a stale one) or two
    /// commit users on one table.
    pub instance: String,
    /// What the step does.
    pub op: Op,
}

/// The operations of TRACE-FORMAT, with defaults applied and `start` /
/// `failover` configurations already merged over the trace's `config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Discards the named instance if there is one, then creates and starts
    /// a fresh one.
    Start {
        /// The trace's `config` with the step's overrides.
        config: Config,
    },
    /// A writer's committable event, delivered to the coordinator as is.
    Event {
        /// The writer (0-based, below the parallelism for a valid event).
        subtask: u32,
        /// The writer's attempt; events of older attempts are stale.
        attempt: u32,
        /// The reported entry: checkpoint (or END), committables, watermark,
        /// savepoint flag.
        entry: Entry,
    },
    /// Takes the coordinator's state for `checkpoint`; the replayer keeps
    /// the bytes under that id so a later `failover` can restore them.
    Checkpoint {
        /// The checkpoint id.
        checkpoint: u64,
    },
    /// Checkpoint `checkpoint` completed (the coordinator may commit).
    Complete {
        /// The checkpoint id.
        checkpoint: u64,
    },
    /// Checkpoint `checkpoint` was aborted.
    Abort {
        /// The checkpoint id.
        checkpoint: u64,
    },
    /// Region failover of one writer: it restarts from `checkpoint`.
    ResetSubtask {
        /// The writer that failed.
        subtask: u32,
        /// The checkpoint it restarts from; `None`: from scratch.
        checkpoint: Option<u64>,
    },
    /// A writer's replay after a restore: the entries its restored state
    /// holds that it has not seen committed.
    Restored {
        /// The restored writer.
        subtask: u32,
        /// Its new attempt.
        attempt: u32,
        /// The checkpoint it was restored from.
        checkpoint: u64,
        /// The entries of its restored state, oldest first.
        entries: Vec<Entry>,
    },
    /// Discards the named instance (whatever its state) and creates a new
    /// one, restored or fresh. `state` is the decoded `state_hex`;
    /// `finished_subtasks` is empty when `checkpoint` is `None` (the field is
    /// ignored then).
    Failover {
        /// The checkpoint to restore from; `None`: start fresh.
        checkpoint: Option<u64>,
        /// Writers that had finished before `checkpoint` (SEMANTICS 6.2):
        /// the new instance does not wait for their restore events.
        finished_subtasks: Vec<u32>,
        /// The trace's `config` with the step's overrides.
        config: Config,
        /// State bytes used instead of the kept ones (corrupt-state tests).
        state: Option<Vec<u8>>,
    },
    /// Closes the instance.
    Close,
    /// Sets the host clock: the next reading returns `ms`, later ones add
    /// the trace's `clock_step_ms`.
    Clock {
        /// The next clock reading, in milliseconds since the epoch.
        ms: u64,
    },
    /// Queues a storage fault; faults belong to the host and survive
    /// `failover`.
    StorageFault {
        /// The kind of storage call that misbehaves (`put` covers
        /// put-if-absent).
        call: CallKind,
        /// Which calls misbehave, and how.
        fault: Fault,
    },
    // Writer steps (TRACE-FORMAT "Writer steps"). Writers are named by
    // (step instance, subtask) and belong to the replayer.
    /// `report(entry.checkpoint, …)` on the writer; `entry.checkpoint` is
    /// never END.
    Write {
        /// The writer.
        subtask: u32,
        /// What it reports.
        entry: Entry,
        /// Deliver the whole outbox afterwards.
        send: bool,
    },
    /// `end-input(…)` on the writer.
    EndInput {
        /// The writer.
        subtask: u32,
        /// The committables of the input's tail.
        committables: Vec<Vec<u8>>,
        /// The END entry's watermark.
        watermark: Option<i64>,
        /// Deliver the whole outbox afterwards.
        send: bool,
    },
    /// Delivers the oldest `count` events of the writer's outbox (`None`: all).
    Send {
        /// The writer whose outbox is drained.
        subtask: u32,
        /// How many events; `None`: all.
        count: Option<u64>,
    },
    /// `committed(u)` on the writer(s); `subtask` `None`: every writer of
    /// the instance, in subtask order. `checkpoint` `None`: `u` is the named
    /// coordinator's committed-up-to (nothing happens while it is none).
    WriterCommitted {
        /// The writer; `None`: every writer of the instance.
        subtask: Option<u32>,
        /// `u`; `None`: the coordinator's committed-up-to.
        checkpoint: Option<u64>,
    },
    /// `checkpoint-aborted(checkpoint)` on the writer(s); `subtask` `None`:
    /// every writer of the instance, in subtask order.
    WriterAbort {
        /// The writer; `None`: every writer of the instance.
        subtask: Option<u32>,
        /// The aborted checkpoint.
        checkpoint: u64,
    },
    /// Keeps each writer's `state()` bytes under (instance, subtask,
    /// checkpoint) for a later `writer_restore`.
    WriterSnapshot {
        /// The writer; `None`: every writer of the instance.
        subtask: Option<u32>,
        /// The key the state is kept under.
        checkpoint: u64,
    },
    /// Replaces the writer (and its outbox) by a fresh one, restored from
    /// kept state or not. `attempt` has its default (previous attempt + 1, or
    /// 0 for a writer that did not exist) already applied.
    WriterRestore {
        /// The writer.
        subtask: u32,
        /// The kept state to restore; `None`: nothing is restored or sent.
        checkpoint: Option<u64>,
        /// The new writer's attempt.
        attempt: u32,
        /// Deliver its `restored` call right away.
        send: bool,
    },
}

impl Op {
    /// The `op` string of this operation.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Start { .. } => "start",
            Op::Event { .. } => "event",
            Op::Checkpoint { .. } => "checkpoint",
            Op::Complete { .. } => "complete",
            Op::Abort { .. } => "abort",
            Op::ResetSubtask { .. } => "reset_subtask",
            Op::Restored { .. } => "restored",
            Op::Failover { .. } => "failover",
            Op::Close => "close",
            Op::Clock { .. } => "clock",
            Op::StorageFault { .. } => "storage_fault",
            Op::Write { .. } => "write",
            Op::EndInput { .. } => "end_input",
            Op::Send { .. } => "send",
            Op::WriterCommitted { .. } => "writer_committed",
            Op::WriterAbort { .. } => "writer_abort",
            Op::WriterSnapshot { .. } => "writer_snapshot",
            Op::WriterRestore { .. } => "writer_restore",
        }
    }

    /// Whether this is a writer step (TRACE-FORMAT "Writer steps").
    pub fn is_writer_op(&self) -> bool {
        matches!(
            self,
            Op::Write { .. }
                | Op::EndInput { .. }
                | Op::Send { .. }
                | Op::WriterCommitted { .. }
                | Op::WriterAbort { .. }
                | Op::WriterSnapshot { .. }
                | Op::WriterRestore { .. }
        )
    }
}
