//! The texts of the reasons: byte for byte the messages the conformance
//! and regression results pin (tests/conformance, tests/regressions).

use core::fmt;

use super::reason::ErrorReason;
use crate::limits::MAX_LIMIT_BYTES;
use crate::table::clip;
use crate::types::{
    END, MAX_CHECKPOINT, MAX_COMMIT_USER_BYTES, MAX_PARALLELISM, MAX_TABLE_USERS_BYTES,
};

/// A checkpoint id as messages name it: a number, or `END`.
pub(super) struct Ckpt(pub(super) u64);

impl fmt::Display for Ckpt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == END {
            f.write_str("END")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl fmt::Display for ErrorReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorReason::*;
        match self {
            NoStateYet { checkpoint, state } => write!(
                f,
                "checkpoint {}: the coordinator is {} and has no state to take yet",
                Ckpt(*checkpoint),
                state.name()
            ),
            Storage { op, error } => write!(f, "{op}: {error}"),
            ExpiredSnapshotKeepsMoving { id, earliest } => write!(
                f,
                "snapshot {id} was expired and the earliest snapshot kept ({earliest}) keeps moving \
                 (an expiry is running beside this read): try again"
            ),
            EarliestKeepsMoving => f.write_str(
                "the earliest snapshot an expiry kept keeps moving (an expiry is running beside \
                 this read): try again",
            ),
            ListingKeepsMoving { earliest } => write!(
                f,
                "listing the snapshots: the earliest snapshot kept keeps moving (now {earliest}; \
                 an expiry is running beside this read): try again"
            ),
            SnapshotUnreadable {
                checkpoint,
                snapshot,
            } => write!(
                f,
                "committing checkpoint {}: snapshot {snapshot} exists but cannot be read",
                Ckpt(*checkpoint)
            ),
            NotAllowed { call, state } => write!(
                f,
                "{call} is not allowed while the coordinator is {}",
                state.name()
            ),
            OrdinaryEventWhileRestoring {
                subtask,
                checkpoint,
            } => write!(
                f,
                "event of subtask {subtask} for checkpoint {checkpoint}: ordinary events are not allowed while the coordinator is restoring"
            ),
            EndBeforeRestoreEvent { subtask: s } => write!(
                f,
                "END event of subtask {s} while the coordinator is restoring and subtask {s} has not sent its restore event"
            ),
            NoRestoreInProgress => f.write_str("restored: no restore in progress"),
            WriterNotFresh { subtask } => {
                write!(f, "writer {subtask}: restore needs a fresh writer")
            }
            SubtaskOutsideParallelism {
                call,
                subtask,
                parallelism,
            } => write!(
                f,
                "{call}: subtask {subtask} is outside parallelism {parallelism}"
            ),
            CheckpointOutOfRange {
                call,
                subtask: Some(s),
                checkpoint,
            } => write!(f, "{call} {s}: checkpoint id {checkpoint} is out of range"),
            CheckpointOutOfRange {
                call,
                subtask: None,
                checkpoint,
            } => write!(f, "{call}: checkpoint id {checkpoint} is out of range"),
            AlreadyCommitted { subtask, checkpoint } => write!(
                f,
                "subtask {subtask} reported checkpoint {checkpoint}, which is already committed, but had not reported it before (reused commit user or writer restarted from scratch?)"
            ),
            DifferentEntry { subtask, checkpoint } => write!(
                f,
                "subtask {subtask} reported checkpoint {checkpoint} again with a different entry"
            ),
            CheckpointsMustIncrease {
                subtask,
                checkpoint,
                after,
            } => write!(
                f,
                "subtask {subtask} reported checkpoint {checkpoint} after checkpoint {after}: checkpoints must increase"
            ),
            MalformedCommittables {
                subtask,
                checkpoint,
                error,
            } => write!(
                f,
                "event of subtask {subtask} for checkpoint {}: {error}",
                Ckpt(*checkpoint)
            ),
            MalformedEventsBlock(error) => write!(f, "{error}"),
            CommittableTooLong {
                what,
                subtask,
                checkpoint,
                index,
                bytes,
                max,
            } => write!(
                f,
                "{what} of subtask {subtask} for checkpoint {}: committable {index} holds {bytes} bytes, more than max-committable-bytes {max}",
                Ckpt(*checkpoint)
            ),
            EntryTooLarge {
                what,
                subtask,
                checkpoint,
                bytes,
                committables,
                max,
            } => write!(
                f,
                "{what} of subtask {subtask} for checkpoint {}: the entry holds {bytes} bytes ({committables} committables), more than max-event-bytes {max}",
                Ckpt(*checkpoint)
            ),
            SnapshotTooLarge {
                subtask,
                checkpoint,
                bytes,
                snapshot,
                total,
                max,
            } => write!(
                f,
                "entry of subtask {subtask} for checkpoint {} ({bytes} bytes) would make the snapshot of checkpoint {} hold {total} bytes, more than max-snapshot-bytes {max}",
                Ckpt(*checkpoint),
                Ckpt(*snapshot)
            ),
            CommittableRejected {
                what,
                subtask,
                checkpoint,
                index,
                why,
            } => write!(
                f,
                "{what} of subtask {subtask} for checkpoint {}: committable {index}: {why}",
                Ckpt(*checkpoint)
            ),
            #[cfg(feature = "paimon")]
            PaimonCommittable(e) => {
                f.write_str(&crate::table::paimon::committable_error_text(e))
            }
            LaterCheckpointRestored {
                subtask,
                from,
                checkpoint,
            } => write!(
                f,
                "restore event of subtask {subtask} from checkpoint {from} holds an entry for later checkpoint {}",
                Ckpt(*checkpoint)
            ),
            CheckpointRestoredTwice {
                subtask,
                from,
                checkpoint,
            } => write!(
                f,
                "restore event of subtask {subtask} from checkpoint {from} holds checkpoint {} twice",
                Ckpt(*checkpoint)
            ),
            RestoreFromOtherCheckpoint {
                subtask,
                from,
                restoring,
            } => write!(
                f,
                "restore event of subtask {subtask} is from checkpoint {from}, the coordinator restores checkpoint {restoring}"
            ),
            WriterReportForEnd { subtask } => write!(
                f,
                "writer {subtask}: report for checkpoint id {END}: that id is reserved for END (end of input), whose entry end-input sends"
            ),
            WriterReportOutOfRange {
                subtask,
                checkpoint,
            } => write!(
                f,
                "writer {subtask}: report for checkpoint id {checkpoint}: out of range (ordinary checkpoint ids are 0..={MAX_CHECKPOINT})"
            ),
            WriterCheckpointsMustIncrease {
                subtask,
                checkpoint,
                after,
            } => write!(
                f,
                "writer {subtask}: report for checkpoint {checkpoint} after checkpoint {after}: checkpoints must increase"
            ),
            WriterCommittedNotACheckpoint { subtask, up_to } => write!(
                f,
                "writer {subtask}: committed-up-to {up_to} is not a checkpoint id"
            ),
            WriterRestoreOutOfRange {
                subtask,
                checkpoint,
            } => write!(
                f,
                "writer {subtask}: restore from checkpoint {}",
                Ckpt(*checkpoint)
            ),
            ParallelismOutOfRange { parallelism } => write!(
                f,
                "parallelism {parallelism} is outside 1..={MAX_PARALLELISM}"
            ),
            EmptyCommitUser => f.write_str("the commit user is empty"),
            CommitUserTooLong { bytes } => write!(
                f,
                "the commit user is {bytes} bytes long, more than {MAX_COMMIT_USER_BYTES}"
            ),
            LimitOutOfRange { limit, value } => write!(
                f,
                "limit {limit} = {value} is outside 1..={MAX_LIMIT_BYTES}"
            ),
            RestoredEndsTooLarge {
                checkpoint,
                bytes,
                max,
            } => write!(
                f,
                "restore from checkpoint {checkpoint}: the state's END entries and the entries of ended writers hold {bytes} bytes, more than max-snapshot-bytes {max}"
            ),
            NoPaimonFormat => f.write_str(
                "table-format paimon: this build of the coordinator has no Paimon format",
            ),
            NoPaimonSchema { key } => write!(
                f,
                "the table has no {key}: create the Paimon table first"
            ),
            TooManyCommitUsers { user, users, bytes } => write!(
                f,
                "commit user \"{}\" would make the table's {users} commit users take {bytes} bytes, more than {MAX_TABLE_USERS_BYTES}",
                clip(user)
            ),
            CannotRescale {
                checkpoint,
                state_parallelism,
                parallelism,
            } => write!(
                f,
                "cannot rescale a partly finished sink: the state of checkpoint {checkpoint} has parallelism {state_parallelism} and END entries, the configuration has {parallelism}"
            ),
            CoordinatorState { bytes, defect } => {
                write!(f, "coordinator state ({bytes} bytes): {defect}")
            }
            WriterState {
                subtask,
                checkpoint,
                bytes,
                defect,
            } => write!(
                f,
                "writer {subtask} state ({bytes} bytes) for checkpoint {checkpoint}: {defect}"
            ),
            TableRecord { key, defect } => write!(f, "table record {key}: {defect}"),
            ExpiryMarkNotAbove { key, earliest } => write!(
                f,
                "table record {key}: an expiry mark naming snapshot {earliest}, not above it"
            ),
            RecordHoldsOtherSnapshot { key, snapshot } => {
                write!(f, "table record {key} holds snapshot {snapshot}")
            }
            PaimonSchemaUnavailable => f.write_str("the Paimon schema is unavailable"),
            PaimonSnapshotUnavailable => f.write_str("the Paimon snapshot read is unavailable"),
            SnapshotIdsExhausted { checkpoint, latest } => write!(
                f,
                "committing checkpoint {}: the table's snapshot ids are exhausted (snapshot {latest} is the last)",
                Ckpt(*checkpoint)
            ),
            MarkedSnapshotMissing { user, snapshot } => write!(
                f,
                "commit user \"{}\" is marked at snapshot {snapshot}, which is missing",
                clip(user)
            ),
            MarkedSnapshotOtherCommit {
                user,
                snapshot,
                checkpoint,
            } => write!(
                f,
                "commit user \"{}\" is marked at snapshot {snapshot} for checkpoint {}, which holds another commit",
                clip(user),
                Ckpt(*checkpoint)
            ),
            Text { text, .. } => f.write_str(text),
        }
    }
}
