//! Plain values of the protocol (SEMANTICS 1): checkpoint ids, entries,
//! configuration, lifecycle and call outcomes. They mirror `wit/coordinator.wit`.

use alloc::string::String;
use alloc::vec::Vec;

use crate::committables::Committables;

/// The reserved checkpoint id meaning "end of input" (Java's `Long.MAX_VALUE`).
pub const END: u64 = i64::MAX as u64;
/// Highest ordinary checkpoint id.
pub const MAX_CHECKPOINT: u64 = END - 1;
/// Highest accepted parallelism.
pub const MAX_PARALLELISM: u32 = 1_000_000;
/// Longest accepted commit user, in bytes (`invalid-config` above it). Every
/// snapshot names its commit user twice and every commit user of the table
/// once, so an unbounded name would make every commit copy it (a 40 MB name
/// made the component trap at every commit). Paimon's commit users are
/// UUIDs; 64 KiB leaves room for any name a job gives itself.
pub const MAX_COMMIT_USER_BYTES: usize = 64 * 1024;
/// Most bytes the commit users of one snapshot may take (each name's length
/// plus 16 for its mark): a snapshot listing more is `corrupt-state`, and a
/// commit user that would take a table past it is refused. It bounds what
/// every read of a snapshot copies, whatever the table holds.
pub const MAX_TABLE_USERS_BYTES: u64 = 16 << 20;

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
    /// The checkpoint id, or END.
    pub checkpoint: u64,
    /// Opaque serialized committables, in report order.
    pub committables: Committables,
    /// `None` = no watermark yet: orders below every number.
    pub watermark: Option<i64>,
    /// The checkpoint is a savepoint (SEMANTICS 5.4).
    pub savepoint: bool,
}

impl Entry {
    /// Whether this is an END entry.
    pub fn is_end(&self) -> bool {
        self.checkpoint == END
    }
}

/// When the final commit happens (SEMANTICS 5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FinalCommitMode {
    /// At the first checkpoint-complete after the last END entry.
    #[default]
    OnCheckpoint,
    /// Within the call that delivers the last END entry.
    OnEndInput,
}

/// What a recovery that committed something asks of the host (SEMANTICS 6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RecoveryMode {
    /// Fail over once more (`restart-required`).
    #[default]
    Restart,
    /// Keep running.
    Continue,
}

/// A coordinator's configuration (TRACE-FORMAT `config`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Number of writer subtasks, 1 ..= 1,000,000.
    pub parallelism: u32,
    /// Identity of this sink across restarts (non-empty); a restore's state wins.
    pub commit_user: String,
    /// false = batch: the final commit happens on the last END entry.
    pub checkpointing: bool,
    /// When the final commit happens.
    pub final_commit: FinalCommitMode,
    /// Write an empty snapshot for a completed checkpoint without committables.
    pub force_create_snapshot: bool,
    /// Tag the snapshot of every savepoint.
    pub savepoint_auto_tag: bool,
    /// How long an auto-tag is retained (none: forever).
    pub tag_time_retained_ms: Option<u64>,
    /// What a recovery that committed something asks of the host.
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
    /// The checkpoint restored from.
    pub checkpoint: u64,
    /// The coordinator's state bytes of that checkpoint.
    pub state: Vec<u8>,
    /// Writers that had fully finished before it; they send no restore event.
    pub finished_subtasks: Vec<u32>,
}

/// A coordinator's lifecycle state (SEMANTICS 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Constructed, not started.
    Created,
    /// Waiting for every writer's restore event.
    Restoring,
    /// Accepting events.
    Running,
    /// Closed by the host.
    Closed,
    /// After a fatal error.
    Failed,
}

impl Lifecycle {
    /// The kebab-case name of the WIT interface and TRACE-FORMAT.
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
    /// The state after the call.
    pub state: Lifecycle,
    /// Identifiers of the snapshots this call wrote, in log order.
    pub committed: Vec<u64>,
    /// Names of the tags this call created.
    pub tags_created: Vec<String>,
    /// Names of the tags this call deleted.
    pub tags_deleted: Vec<String>,
    /// The recovery committed something and `recovery = restart`.
    pub restart_required: bool,
    /// Committed-up-to after the call (SEMANTICS 5.5): `None` until the
    /// commit rule first ran with a target; `Some(END)` after the final commit.
    pub committed_up_to: Option<u64>,
}

/// One committed record of the table's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// 1, 2, 3 ... per table.
    pub id: u64,
    /// The commit user that wrote it.
    pub commit_user: String,
    /// The checkpoint id it commits (or END).
    pub identifier: u64,
    /// Its watermark, if any.
    pub watermark: Option<i64>,
    /// When it was written.
    pub time_ms: u64,
    /// (subtask, committable) in subtask order, then report order.
    pub committables: Vec<(u32, Vec<u8>)>,
}

/// A named, durable pointer to a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag {
    /// The tag's name.
    pub name: String,
    /// The snapshot it points at.
    pub snapshot_id: u64,
    /// That snapshot's identifier.
    pub identifier: u64,
    /// When it was created.
    pub create_time_ms: u64,
    /// When it expires (none: never).
    pub expire_time_ms: Option<u64>,
}
