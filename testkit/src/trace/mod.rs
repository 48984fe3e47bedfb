//! TRACE-FORMAT v2 traces (`../shared/spec/TRACE-FORMAT.md`), writer
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

use sink_coordinator::{Config, Entry};
use sink_coordinator_host::storage::{CallKind, Fault};

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
    pub instance: String,
    pub op: Op,
}

/// The operations of TRACE-FORMAT, with defaults applied and `start` /
/// `failover` configurations already merged over the trace's `config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Start {
        config: Config,
    },
    Event {
        subtask: u32,
        attempt: u32,
        entry: Entry,
    },
    Checkpoint {
        checkpoint: u64,
    },
    Complete {
        checkpoint: u64,
    },
    Abort {
        checkpoint: u64,
    },
    ResetSubtask {
        subtask: u32,
        checkpoint: Option<u64>,
    },
    Restored {
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    },
    /// `state` is the decoded `state_hex`; `finished_subtasks` is empty when
    /// `checkpoint` is `None` (the field is ignored then).
    Failover {
        checkpoint: Option<u64>,
        finished_subtasks: Vec<u32>,
        config: Config,
        state: Option<Vec<u8>>,
    },
    Close,
    Clock {
        ms: u64,
    },
    StorageFault {
        call: CallKind,
        fault: Fault,
    },
    // Writer steps (TRACE-FORMAT "Writer steps"). Writers are named by
    // (step instance, subtask) and belong to the replayer.
    /// `report(entry.checkpoint, …)` on the writer; `entry.checkpoint` is
    /// never END.
    Write {
        subtask: u32,
        entry: Entry,
        send: bool,
    },
    /// `end-input(…)` on the writer.
    EndInput {
        subtask: u32,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        send: bool,
    },
    /// Delivers the oldest `count` events of the writer's outbox (`None`: all).
    Send {
        subtask: u32,
        count: Option<u64>,
    },
    /// `committed(u)` on the writer(s); `subtask` `None`: every writer of
    /// the instance, in subtask order. `checkpoint` `None`: `u` is the named
    /// coordinator's committed-up-to (nothing happens while it is none).
    WriterCommitted {
        subtask: Option<u32>,
        checkpoint: Option<u64>,
    },
    /// `subtask` `None`: every writer of the instance, in subtask order.
    WriterAbort {
        subtask: Option<u32>,
        checkpoint: u64,
    },
    WriterSnapshot {
        subtask: Option<u32>,
        checkpoint: u64,
    },
    /// `attempt` has its default (previous attempt + 1, or 0 for a writer
    /// that did not exist) already applied.
    WriterRestore {
        subtask: u32,
        checkpoint: Option<u64>,
        attempt: u32,
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
