//! The replay's public types: step and replay results, state bytes, errors,
//! and how the coordinator runs.

use std::fmt;

use sink_coordinator::{HostError, Lifecycle, Snapshot, Tag};

use crate::format::Malformed;

/// What one step reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepResult {
    /// The named instance's state after the step.
    pub state: Lifecycle,
    /// Identifiers of the snapshots the table gained, in id order.
    pub committed: Vec<u64>,
    /// Tag names the table gained / lost, in byte order.
    pub tags_created: Vec<String>,
    /// Tag names the table lost (an aborted savepoint's, or expired ones).
    pub tags_deleted: Vec<String>,
    /// The outcome asked the host to restart the job from scratch
    /// (`restart-required`: recovery found the table moved on).
    pub restart_required: bool,
    /// The named instance's committed-up-to after the step (SEMANTICS 5.5).
    pub committed_up_to: Option<u64>,
    /// The state's length, on a successful `checkpoint` step.
    pub state_bytes: Option<usize>,
    /// The call's error; the table and state are as the call left them.
    pub error: Option<HostError>,
}

impl StepResult {
    /// A step that changed nothing and failed in no way.
    pub fn new(state: Lifecycle) -> Self {
        StepResult {
            state,
            committed: Vec::new(),
            tags_created: Vec::new(),
            tags_deleted: Vec::new(),
            restart_required: false,
            committed_up_to: None,
            state_bytes: None,
            error: None,
        }
    }
}

/// The result document of a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayResult {
    /// One result per trace step, in order.
    pub steps: Vec<StepResult>,
    /// The table's log at the end, by id.
    pub snapshots: Vec<Snapshot>,
    /// The table's tags at the end, by name.
    pub tags: Vec<Tag>,
}

/// The coordinator's state bytes of one successful `checkpoint` step (what
/// `sinkcoord replay --states FILE` writes, one line each, for comparing
/// state bytes across runtimes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointState {
    /// The step index.
    pub step: usize,
    /// The step's instance name.
    pub instance: String,
    /// The checkpoint id the state was taken for.
    pub checkpoint: u64,
    /// The state bytes, as a `failover` would restore them.
    pub state: Vec<u8>,
}

/// Why a replay produced no result.
#[derive(Debug)]
pub enum ReplayError {
    /// The trace breaks a rule of TRACE-FORMAT (exit code 2).
    Malformed(Malformed),
    /// The host itself failed: the component could not be loaded, or the
    /// table could not be read back (exit code 1).
    Host(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Malformed(m) => m.fmt(f),
            ReplayError::Host(m) => write!(f, "replay failed: {m}"),
        }
    }
}

impl std::error::Error for ReplayError {}

impl From<Malformed> for ReplayError {
    fn from(m: Malformed) -> Self {
        ReplayError::Malformed(m)
    }
}
