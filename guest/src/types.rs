//! Plain values of the protocol (SEMANTICS 1): checkpoint ids, entries,
//! configuration, lifecycle and call outcomes. They mirror `wit/coordinator.wit`.

use alloc::string::String;
use alloc::vec::Vec;

/// The reserved checkpoint id meaning "end of input" (Java's `Long.MAX_VALUE`).
pub const END: u64 = i64::MAX as u64;
/// Highest ordinary checkpoint id.
pub const MAX_CHECKPOINT: u64 = END - 1;
/// Highest accepted parallelism.
pub const MAX_PARALLELISM: u32 = 1_000_000;

/// Renders a checkpoint id for messages: numbers, or `END`.
pub fn checkpoint_name(c: u64) -> String {
    if c == END {
        String::from("END")
    } else {
        alloc::format!("{c}")
    }
}

/// What one writer reports for one checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub checkpoint: u64,
    pub committables: Vec<Vec<u8>>,
    /// `None` = no watermark yet: orders below every number.
    pub watermark: Option<i64>,
    pub savepoint: bool,
}

impl Entry {
    pub fn is_end(&self) -> bool {
        self.checkpoint == END
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FinalCommitMode {
    #[default]
    OnCheckpoint,
    OnEndInput,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RecoveryMode {
    #[default]
    Restart,
    Continue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub parallelism: u32,
    pub commit_user: String,
    pub checkpointing: bool,
    pub final_commit: FinalCommitMode,
    pub force_create_snapshot: bool,
    pub savepoint_auto_tag: bool,
    pub tag_time_retained_ms: Option<u64>,
    pub recovery: RecoveryMode,
}

impl Config {
    /// The defaults of TRACE-FORMAT for everything but parallelism and commit user.
    pub fn new(parallelism: u32, commit_user: impl Into<String>) -> Self {
        Config {
            parallelism,
            commit_user: commit_user.into(),
            checkpointing: true,
            final_commit: FinalCommitMode::OnCheckpoint,
            force_create_snapshot: false,
            savepoint_auto_tag: false,
            tag_time_retained_ms: None,
            recovery: RecoveryMode::Restart,
        }
    }
}

/// A global failover's restore point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestorePoint {
    pub checkpoint: u64,
    pub state: Vec<u8>,
    pub finished_subtasks: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    Created,
    Restoring,
    Running,
    Closed,
    Failed,
}

impl Lifecycle {
    pub fn name(self) -> &'static str {
        match self {
            Lifecycle::Created => "created",
            Lifecycle::Restoring => "restoring",
            Lifecycle::Running => "running",
            Lifecycle::Closed => "closed",
            Lifecycle::Failed => "failed",
        }
    }
}

/// What one call did to the table (as seen by this instance) and what the host should do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub state: Lifecycle,
    pub committed: Vec<u64>,
    pub tags_created: Vec<String>,
    pub tags_deleted: Vec<String>,
    pub restart_required: bool,
    /// Committed-up-to after the call (SEMANTICS 5.5): `None` until the
    /// commit rule first ran with a target; `Some(END)` after the final commit.
    pub committed_up_to: Option<u64>,
}

/// One committed record of the table's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub id: u64,
    pub commit_user: String,
    pub identifier: u64,
    pub watermark: Option<i64>,
    pub time_ms: u64,
    pub committables: Vec<(u32, Vec<u8>)>,
}

/// A named, durable pointer to a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag {
    pub name: String,
    pub snapshot_id: u64,
    pub identifier: u64,
    pub create_time_ms: u64,
    pub expire_time_ms: Option<u64>,
}
