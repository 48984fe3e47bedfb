//! A coordinator call as a value, and what it returns.
//!
//! Every caller that chooses a call at run time (the simulator, the model
//! checker, the property tests, the trace replay, a host's retry loop)
//! builds a [`Call`] and hands it to one `apply`: [`Coordinator::apply`] on
//! the core, [`crate::CoordinatorApi::apply`] on whatever runs it. Adding a
//! call to the WIT adds a variant here, its arms in the tables here
//! ([`Call::name`], [`Call::checkpoint_arg`]) and an arm in each `apply`
//! (the core's, and the embedding crate's binding of the component); the
//! callers that match on calls (the trace format, the test kit's
//! simulator, script recorder and old-component driver) keep a catch-all
//! and do not change (a call they cannot express is refused by its name).
//!
//! `apply` dispatches to the typed methods rather than the other way round:
//! each method then returns its own result type with no "wrong reply" arm,
//! and the component's bindings, which call the methods, do not carry the
//! dispatch.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::batch::{BatchError, WriterEvent};
use crate::coordinator::Coordinator;
use crate::env::AsEnv;
use crate::error::Error;
use crate::types::{Entry, Outcome, END};

/// One call of the WIT `coordinator` resource (its arguments; the
/// instance's storage and clock are the callee's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `start`.
    Start,
    /// `event`: a writer's entry for one checkpoint or END.
    Event {
        /// The writer subtask.
        subtask: u32,
        /// Its attempt (informational).
        attempt: u32,
        /// What it reports.
        entry: Entry,
    },
    /// `events` / `events-packed`: many writer events, one merged outcome.
    Events(Vec<WriterEvent>),
    /// `restored`: a restored writer replays its buffer.
    Restored {
        /// The writer subtask.
        subtask: u32,
        /// Its attempt (informational).
        attempt: u32,
        /// The checkpoint it restored from.
        checkpoint: u64,
        /// The entries its state held.
        entries: Vec<Entry>,
    },
    /// `subtask-reset`: region failover of one writer.
    SubtaskReset {
        /// The writer subtask.
        subtask: u32,
        /// The checkpoint it restarts from (none: from scratch).
        checkpoint: Option<u64>,
    },
    /// `checkpoint`: take the state bytes.
    Checkpoint(u64),
    /// `checkpoint-complete`: run the commit rule.
    CheckpointComplete(u64),
    /// `checkpoint-aborted`.
    CheckpointAborted(u64),
    /// `close`.
    Close,
}

impl Call {
    /// The WIT name of the call (`start`, `event`, ..., `close`).
    pub fn name(&self) -> &'static str {
        match self {
            Call::Start => "start",
            Call::Event { .. } => "event",
            Call::Events(_) => "events",
            Call::Restored { .. } => "restored",
            Call::SubtaskReset { .. } => "subtask-reset",
            Call::Checkpoint(_) => "checkpoint",
            Call::CheckpointComplete(_) => "checkpoint-complete",
            Call::CheckpointAborted(_) => "checkpoint-aborted",
            Call::Close => "close",
        }
    }

    /// The checkpoint id of a call whose only argument is one (`checkpoint`,
    /// `checkpoint-complete`, `checkpoint-aborted`): such a call is spelled
    /// by its WIT name and this id alone (a script line), so a caller that
    /// spells calls needs no arm per call. Exhaustive on purpose: a new call
    /// says here, in the core, whether it has that shape.
    pub fn checkpoint_arg(&self) -> Option<u64> {
        match self {
            Call::Checkpoint(n) | Call::CheckpointComplete(n) | Call::CheckpointAborted(n) => {
                Some(*n)
            }
            Call::Start
            | Call::Event { .. }
            | Call::Events(_)
            | Call::Restored { .. }
            | Call::SubtaskReset { .. }
            | Call::Close => None,
        }
    }

    /// The writer entries the call delivers (none for the other calls).
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        let (one, many, batch): (Option<&Entry>, &[Entry], &[WriterEvent]) = match self {
            Call::Event { entry, .. } => (Some(entry), &[], &[]),
            Call::Restored { entries, .. } => (None, entries, &[]),
            Call::Events(events) => (None, &[], events),
            _ => (None, &[], &[]),
        };
        one.into_iter()
            .chain(many)
            .chain(batch.iter().map(|e| &e.entry))
    }

    /// Whether the call delivers an END entry (it may make the final commit).
    pub fn delivers_end(&self) -> bool {
        self.entries().any(|e| e.checkpoint == END)
    }
}

/// What a successful call returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Every call but `checkpoint`.
    Outcome(Outcome),
    /// `checkpoint`: the state bytes.
    State(Vec<u8>),
}

impl Reply {
    /// The outcome, if the call returns one.
    pub fn outcome(&self) -> Option<&Outcome> {
        match self {
            Reply::Outcome(o) => Some(o),
            Reply::State(_) => None,
        }
    }
}

/// Why a call failed: one error, or a batch stopped at one of its events.
#[derive(Clone, Debug)]
pub enum CallError {
    /// The call's error.
    Call(Error),
    /// `events`: the failing event, how many were applied, their outcome.
    Batch(Box<BatchError>),
}

impl CallError {
    /// The error (a batch's: its failing event's).
    pub fn error(&self) -> &Error {
        match self {
            CallError::Call(e) => e,
            CallError::Batch(b) => &b.error,
        }
    }
}

impl From<Error> for CallError {
    fn from(e: Error) -> Self {
        CallError::Call(e)
    }
}

impl core::fmt::Display for CallError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CallError::Call(e) => write!(f, "{e}"),
            CallError::Batch(b) => write!(f, "event {} of the batch: {}", b.applied, b.error),
        }
    }
}

impl core::error::Error for CallError {}

impl Coordinator {
    /// Makes `call` (see the module docs).
    pub fn apply(&mut self, env: &mut dyn AsEnv, call: Call) -> Result<Reply, CallError> {
        let env = &mut env.as_env();
        let outcome = match call {
            Call::Start => self.start(env),
            Call::Event {
                subtask,
                attempt,
                entry,
            } => self.event(env, subtask, attempt, entry),
            Call::Events(events) => {
                return crate::batch::events(self, env, events)
                    .map(Reply::Outcome)
                    .map_err(CallError::Batch)
            }
            Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => self.restored(env, subtask, attempt, checkpoint, entries),
            Call::SubtaskReset {
                subtask,
                checkpoint,
            } => self.subtask_reset(env, subtask, checkpoint),
            Call::Checkpoint(n) => return Ok(Reply::State(self.checkpoint(env, n)?)),
            Call::CheckpointComplete(n) => self.checkpoint_complete(env, n),
            Call::CheckpointAborted(n) => self.checkpoint_aborted(env, n),
            Call::Close => self.close(env),
        };
        Ok(Reply::Outcome(outcome?))
    }
}
