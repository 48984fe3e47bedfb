//! Why a call failed, as typed data: one variant of [`ErrorReason`] per
//! distinct failure, carrying the subtask, checkpoint, key, counts and
//! limits involved. The class (SEMANTICS 8) follows from the variant
//! ([`ErrorReason::kind`]); the one-line text every host sees is the
//! variant's [`Display`](core::fmt::Display) (in `text.rs`), byte for byte
//! the text the conformance results pin.
//!
//! Checkpoint ids print as numbers or `END` where the text names a
//! checkpoint, and as plain numbers where it names an id that was checked
//! (`checkpoint id 9223372036854775807 is out of range`).

use alloc::boxed::Box;
use alloc::string::String;

use super::ErrorKind;
use crate::env::StorageError;
use crate::packed::UnpackError;
use crate::types::Lifecycle;

use super::detail::{Defect, StorageOp};

/// Why a call failed. Grouped by class: the first group is `declined`, then
/// `storage`, `illegal-state`, `invalid-event`, `invalid-config` and
/// `corrupt-state`; [`ErrorReason::Text`] is an error known only by its
/// class and text (one that crossed the WIT boundary).
///
/// `what` and `call` fields name the call or input the text starts with
/// (`"event"`, `"restore event"`, `"subtask-reset of subtask"`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorReason {
    // --- declined ----------------------------------------------------------------
    /// `declined`: `checkpoint` was called before the coordinator has state
    /// to take (it is `created` or `restoring`).
    NoStateYet {
        /// The checkpoint asked for.
        checkpoint: u64,
        /// The coordinator's state.
        state: Lifecycle,
    },

    // --- storage -----------------------------------------------------------------
    /// `storage`: a storage import failed while doing `op`; the failure is
    /// kept (it is the error's [`source`](core::error::Error::source)).
    Storage {
        /// What the table was doing.
        op: StorageOp,
        /// The storage failure.
        error: StorageError,
    },
    /// `storage`: a probe found snapshot `id` expired, and the earliest
    /// snapshot kept moved under it more than three times (or not forward).
    ExpiredSnapshotKeepsMoving {
        /// The snapshot probed.
        id: u64,
        /// The earliest snapshot kept, as last read.
        earliest: u64,
    },
    /// `storage`: loading the table, the earliest snapshot kept moved three
    /// times (an expiry runs beside the read).
    EarliestKeepsMoving,
    /// `storage`: listing the snapshots, the earliest snapshot kept moved
    /// more than three times.
    ListingKeepsMoving {
        /// The earliest snapshot kept, as last read.
        earliest: u64,
    },
    /// `storage`: committing `checkpoint`, another writer's snapshot
    /// `snapshot` was found to exist but could not be read.
    SnapshotUnreadable {
        /// The checkpoint being committed.
        checkpoint: u64,
        /// The snapshot id.
        snapshot: u64,
    },

    // --- illegal-state -----------------------------------------------------------
    /// `illegal-state`: `call` is not allowed in the coordinator's state.
    NotAllowed {
        /// The call (`"start"`, `"event"`, ...).
        call: &'static str,
        /// The coordinator's state.
        state: Lifecycle,
    },
    /// `illegal-state`: an event for an ordinary checkpoint arrived while
    /// the coordinator restores (only END and restore events are allowed).
    OrdinaryEventWhileRestoring {
        /// The writer.
        subtask: u32,
        /// The event's checkpoint.
        checkpoint: u64,
    },
    /// `illegal-state`: an END event arrived while restoring from a writer
    /// that has not sent its restore event.
    EndBeforeRestoreEvent {
        /// The writer.
        subtask: u32,
    },
    /// `illegal-state`: a restore event arrived and no restore is in progress.
    NoRestoreInProgress,
    /// `illegal-state`: [`Writer::restore`](crate::Writer::restore) on a
    /// writer that was already used.
    WriterNotFresh {
        /// The writer's subtask.
        subtask: u32,
    },

    // --- invalid-event -----------------------------------------------------------
    /// `invalid-event`: a subtask outside the configured parallelism.
    SubtaskOutsideParallelism {
        /// The call.
        call: &'static str,
        /// The subtask given.
        subtask: u32,
        /// The configured parallelism.
        parallelism: u32,
    },
    /// `invalid-event`: a checkpoint id above the highest ordinary id (or END
    /// where END is not allowed).
    CheckpointOutOfRange {
        /// The call.
        call: &'static str,
        /// The subtask the call names, if it names one.
        subtask: Option<u32>,
        /// The id given.
        checkpoint: u64,
    },
    /// `invalid-event`: a writer reported a checkpoint the table already
    /// holds that it had not reported before (reused commit user, or a
    /// writer restarted from scratch).
    AlreadyCommitted {
        /// The writer.
        subtask: u32,
        /// The checkpoint.
        checkpoint: u64,
    },
    /// `invalid-event`: a second report for a checkpoint, with a different entry.
    DifferentEntry {
        /// The writer.
        subtask: u32,
        /// The checkpoint.
        checkpoint: u64,
    },
    /// `invalid-event`: a report for a checkpoint not above the writer's last.
    CheckpointsMustIncrease {
        /// The writer.
        subtask: u32,
        /// The checkpoint reported.
        checkpoint: u64,
        /// The writer's last checkpoint.
        after: u64,
    },
    /// `invalid-event`: the committables block of an `events-packed` event
    /// is malformed.
    MalformedCommittables {
        /// The writer.
        subtask: u32,
        /// The event's checkpoint.
        checkpoint: u64,
        /// What is wrong with the block.
        error: UnpackError,
    },
    /// `invalid-event`: an `events-block` batch that does not decode whole
    /// (nothing of it was applied).
    MalformedEventsBlock(crate::block::BlockError),
    /// `invalid-event`: a committable longer than `max-committable-bytes`.
    CommittableTooLong {
        /// The input (`"event"`, `"restore event"`).
        what: &'static str,
        /// The writer.
        subtask: u32,
        /// The entry's checkpoint.
        checkpoint: u64,
        /// The first committable that is too long.
        index: usize,
        /// Its length.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// `invalid-event`: an entry larger than `max-event-bytes`.
    EntryTooLarge {
        /// The input (`"event"`, `"restore event"`).
        what: &'static str,
        /// The writer.
        subtask: u32,
        /// The entry's checkpoint.
        checkpoint: u64,
        /// The entry's size.
        bytes: u64,
        /// Its number of committables.
        committables: usize,
        /// The limit.
        max: u64,
    },
    /// `invalid-event`: an entry that would make a snapshot larger than
    /// `max-snapshot-bytes`.
    SnapshotTooLarge {
        /// The writer.
        subtask: u32,
        /// The entry's checkpoint.
        checkpoint: u64,
        /// The entry's size.
        bytes: u64,
        /// The snapshot's checkpoint.
        snapshot: u64,
        /// The snapshot's size with the entry.
        total: u64,
        /// The limit.
        max: u64,
    },
    /// `invalid-event`: the table format refused one committable of an entry
    /// (`why` is the format's `invalid-event` reason).
    CommittableRejected {
        /// The input (`"event"`, `"restore event"`).
        what: &'static str,
        /// The writer.
        subtask: u32,
        /// The entry's checkpoint.
        checkpoint: u64,
        /// The committable's index in the entry.
        index: usize,
        /// Why the format refused it.
        why: Box<ErrorReason>,
    },
    /// `invalid-event`: a committable the Paimon format cannot decode
    /// against the table's schema.
    #[cfg(feature = "paimon")]
    PaimonCommittable(sink_coordinator_paimon::committable::CommittableError),
    /// `invalid-event`: a restore event from `from` holds a later checkpoint.
    LaterCheckpointRestored {
        /// The writer.
        subtask: u32,
        /// The checkpoint restored from.
        from: u64,
        /// The later checkpoint.
        checkpoint: u64,
    },
    /// `invalid-event`: a restore event holds a checkpoint twice.
    CheckpointRestoredTwice {
        /// The writer.
        subtask: u32,
        /// The checkpoint restored from.
        from: u64,
        /// The repeated checkpoint.
        checkpoint: u64,
    },
    /// `invalid-event`: a restore event from another checkpoint than the one
    /// the coordinator restores.
    RestoreFromOtherCheckpoint {
        /// The writer.
        subtask: u32,
        /// The event's checkpoint.
        from: u64,
        /// The checkpoint the coordinator restores.
        restoring: u64,
    },
    /// `invalid-event`: [`Writer::report`](crate::Writer::report) for END
    /// (whose entry `end_input` sends).
    WriterReportForEnd {
        /// The writer's subtask.
        subtask: u32,
    },
    /// `invalid-event`: [`Writer::report`](crate::Writer::report) for an id
    /// above the highest ordinary one.
    WriterReportOutOfRange {
        /// The writer's subtask.
        subtask: u32,
        /// The id given.
        checkpoint: u64,
    },
    /// `invalid-event`: [`Writer::report`](crate::Writer::report) for a
    /// checkpoint not above the writer's last.
    WriterCheckpointsMustIncrease {
        /// The writer's subtask.
        subtask: u32,
        /// The checkpoint reported.
        checkpoint: u64,
        /// The writer's last checkpoint.
        after: u64,
    },
    /// `invalid-event`: [`Writer::committed`](crate::Writer::committed) with
    /// a value above END.
    WriterCommittedNotACheckpoint {
        /// The writer's subtask.
        subtask: u32,
        /// The value given.
        up_to: u64,
    },
    /// `invalid-event`: [`Writer::restore`](crate::Writer::restore) from an
    /// id above the highest ordinary one.
    WriterRestoreOutOfRange {
        /// The writer's subtask.
        subtask: u32,
        /// The id given.
        checkpoint: u64,
    },

    // --- invalid-config ----------------------------------------------------------
    /// `invalid-config`: the parallelism is 0 or above the highest accepted.
    ParallelismOutOfRange {
        /// The configured parallelism.
        parallelism: u32,
    },
    /// `invalid-config`: the commit user is empty.
    EmptyCommitUser,
    /// `invalid-config`: the commit user is longer than accepted.
    CommitUserTooLong {
        /// Its length.
        bytes: usize,
    },
    /// `invalid-config`: a limit is 0 or above the highest accepted.
    LimitOutOfRange {
        /// The limit's name (`"max-event-bytes"`, ...).
        limit: &'static str,
        /// The value given.
        value: u64,
    },
    /// `invalid-config`: a restore's END entries (the state's and the ended
    /// writers') hold more than `max-snapshot-bytes`.
    RestoredEndsTooLarge {
        /// The checkpoint restored from.
        checkpoint: u64,
        /// What they hold.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// `invalid-config`: `set-table-format paimon` on a build without the
    /// Paimon format.
    NoPaimonFormat,
    /// `invalid-config`: the table has no Paimon schema `key`.
    NoPaimonSchema {
        /// The schema's key.
        key: String,
    },
    /// `invalid-config`: a new commit user would make the table's commit
    /// users take more than they may.
    TooManyCommitUsers {
        /// The new commit user.
        user: String,
        /// How many commit users the table would have.
        users: usize,
        /// The bytes they would take.
        bytes: u64,
    },

    // --- corrupt-state -----------------------------------------------------------
    /// `corrupt-state`: a restore would rescale a sink whose state holds END
    /// entries.
    CannotRescale {
        /// The checkpoint restored from.
        checkpoint: u64,
        /// The state's parallelism.
        state_parallelism: u32,
        /// The configured parallelism.
        parallelism: u32,
    },
    /// `corrupt-state`: the coordinator's state bytes cannot be decoded.
    CoordinatorState {
        /// Their length.
        bytes: usize,
        /// What is wrong with them.
        defect: Defect,
    },
    /// `corrupt-state`: a writer's state bytes cannot be decoded.
    WriterState {
        /// The writer's subtask.
        subtask: u32,
        /// The checkpoint restored from.
        checkpoint: u64,
        /// Their length.
        bytes: usize,
        /// What is wrong with them.
        defect: Defect,
    },
    /// `corrupt-state`: a table record cannot be decoded or trusted.
    TableRecord {
        /// The record's key.
        key: String,
        /// What is wrong with it.
        defect: Defect,
    },
    /// `corrupt-state`: an expiry mark stored as snapshot `key` names a
    /// snapshot not above it.
    ExpiryMarkNotAbove {
        /// The record's key.
        key: String,
        /// The snapshot the mark names.
        earliest: u64,
    },
    /// `corrupt-state`: the record under `key` holds another snapshot.
    RecordHoldsOtherSnapshot {
        /// The record's key.
        key: String,
        /// The snapshot it holds.
        snapshot: u64,
    },
    /// `corrupt-state`: the Paimon schema just read is not at hand.
    PaimonSchemaUnavailable,
    /// `corrupt-state`: the Paimon snapshot just read is not at hand.
    PaimonSnapshotUnavailable,
    /// `corrupt-state`: committing `checkpoint`, the snapshot ids are exhausted.
    SnapshotIdsExhausted {
        /// The checkpoint being committed.
        checkpoint: u64,
        /// The last snapshot.
        latest: u64,
    },
    /// `corrupt-state`: a commit user is marked at a snapshot that is
    /// missing (and not expired).
    MarkedSnapshotMissing {
        /// The commit user.
        user: String,
        /// The marked snapshot.
        snapshot: u64,
    },
    /// `corrupt-state`: a commit user is marked at a snapshot that holds
    /// another commit.
    MarkedSnapshotOtherCommit {
        /// The commit user.
        user: String,
        /// The marked snapshot.
        snapshot: u64,
        /// The checkpoint of the mark.
        checkpoint: u64,
    },

    // --- any class ---------------------------------------------------------------
    /// An error known only by its class and text: one that crossed the WIT
    /// boundary, or one a host builds.
    Text {
        /// The class.
        kind: ErrorKind,
        /// The text.
        text: String,
    },
}

impl ErrorReason {
    /// The class of this failure (SEMANTICS 8).
    pub fn kind(&self) -> ErrorKind {
        use ErrorReason::*;
        match self {
            NoStateYet { .. } => ErrorKind::Declined,
            Storage { .. }
            | ExpiredSnapshotKeepsMoving { .. }
            | EarliestKeepsMoving
            | ListingKeepsMoving { .. }
            | SnapshotUnreadable { .. } => ErrorKind::Storage,
            NotAllowed { .. }
            | OrdinaryEventWhileRestoring { .. }
            | EndBeforeRestoreEvent { .. }
            | NoRestoreInProgress
            | WriterNotFresh { .. } => ErrorKind::IllegalState,
            SubtaskOutsideParallelism { .. }
            | CheckpointOutOfRange { .. }
            | AlreadyCommitted { .. }
            | DifferentEntry { .. }
            | CheckpointsMustIncrease { .. }
            | MalformedCommittables { .. }
            | MalformedEventsBlock(_)
            | CommittableTooLong { .. }
            | EntryTooLarge { .. }
            | SnapshotTooLarge { .. }
            | CommittableRejected { .. }
            | LaterCheckpointRestored { .. }
            | CheckpointRestoredTwice { .. }
            | RestoreFromOtherCheckpoint { .. }
            | WriterReportForEnd { .. }
            | WriterReportOutOfRange { .. }
            | WriterCheckpointsMustIncrease { .. }
            | WriterCommittedNotACheckpoint { .. }
            | WriterRestoreOutOfRange { .. } => ErrorKind::InvalidEvent,
            #[cfg(feature = "paimon")]
            PaimonCommittable(_) => ErrorKind::InvalidEvent,
            ParallelismOutOfRange { .. }
            | EmptyCommitUser
            | CommitUserTooLong { .. }
            | LimitOutOfRange { .. }
            | RestoredEndsTooLarge { .. }
            | NoPaimonFormat
            | NoPaimonSchema { .. }
            | TooManyCommitUsers { .. } => ErrorKind::InvalidConfig,
            CannotRescale { .. }
            | CoordinatorState { .. }
            | WriterState { .. }
            | TableRecord { .. }
            | ExpiryMarkNotAbove { .. }
            | RecordHoldsOtherSnapshot { .. }
            | PaimonSchemaUnavailable
            | PaimonSnapshotUnavailable
            | SnapshotIdsExhausted { .. }
            | MarkedSnapshotMissing { .. }
            | MarkedSnapshotOtherCommit { .. } => ErrorKind::CorruptState,
            Text { kind, .. } => *kind,
        }
    }
}
