//! The typed parts of some reasons: what the table was doing when storage
//! failed ([`StorageOp`]), and what is wrong with state bytes or a table
//! record ([`Defect`]), with their texts.

use alloc::string::String;
use core::fmt;

use super::text::Ckpt;
use crate::table::clip;
use crate::types::{MAX_COMMIT_USER_BYTES, MAX_PARALLELISM, MAX_TABLE_USERS_BYTES};
use crate::wire::DecodeError;

/// What the table was doing when a storage import failed (the text before
/// the storage failure's).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StorageOp {
    /// Reading snapshot `id`.
    ReadingSnapshot(u64),
    /// Reading the files (delta manifests) of Paimon snapshot `id`.
    ReadingSnapshotFiles(i64),
    /// Reading the tag named so.
    ReadingTag(String),
    /// Reading the record under the key (a listed tag).
    Reading(String),
    /// Listing the tags.
    ListingTags,
    /// Creating the tag named so.
    CreatingTag(String),
    /// Deleting the tag named so.
    DeletingTag(String),
    /// Reading the table's schema (detecting its format).
    ReadingTableSchema,
    /// Reading the Paimon schema under the key.
    ReadingPaimonSchema(String),
    /// Reading Paimon's `EARLIEST` hint.
    ReadingEarliestHint,
    /// Reading the latest-snapshot hint.
    ReadingLatestHint,
    /// Writing the latest-snapshot hint.
    WritingLatestHint,
    /// Committing `checkpoint` as `snapshot`.
    Committing {
        /// The checkpoint.
        checkpoint: u64,
        /// The snapshot id written.
        snapshot: u64,
    },
}

/// What is wrong with state bytes or a table record.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Defect {
    /// The bytes do not decode.
    Decode(DecodeError),
    /// A coordinator state names no commit user.
    EmptyCommitUser,
    /// A coordinator state's commit user is longer than accepted.
    CommitUserTooLong {
        /// Its length.
        bytes: usize,
    },
    /// A coordinator state's parallelism is 0 or above the highest accepted.
    ParallelismOutOfRange {
        /// The parallelism.
        parallelism: u32,
    },
    /// A writer state holds an entry newer than the checkpoint restored.
    EntryAfterRestored {
        /// The entry's checkpoint.
        checkpoint: u64,
    },
    /// A writer state's entries are not in increasing order.
    EntriesOutOfOrder {
        /// Where.
        checkpoint: u64,
    },
    /// A writer state's last reported checkpoint is out of range.
    LastOutOfRange,
    /// A writer state's END entry has an ordinary checkpoint id.
    EndWithOrdinaryId,
    /// A coordinator state's END entry names a subtask outside its parallelism.
    EndOutsideParallelism {
        /// The subtask.
        subtask: u32,
        /// The state's parallelism.
        parallelism: u32,
    },
    /// A coordinator state's END entries are not in increasing subtask order.
    EndsOutOfOrder {
        /// Where.
        subtask: u32,
    },
    /// A coordinator state's synthesized END entry carries committables or a watermark.
    SynthesizedEndCarriesData {
        /// The subtask.
        subtask: u32,
    },
    /// A coordinator state's END entry has a `taken` checkpoint above END.
    TakenOutOfRange {
        /// The subtask.
        subtask: u32,
        /// The value.
        taken: u64,
    },
    /// A coordinator state's ordinary entries of a slot are out of order or range.
    SlotEntriesOutOfOrder {
        /// The subtask.
        subtask: u32,
        /// Where.
        checkpoint: u64,
    },
    /// A coordinator state's list of ids (`what`: `"owed savepoint"`,
    /// `"aborted checkpoint"`) is out of order, repeats or is out of range.
    IdsOutOfOrder {
        /// The list.
        what: &'static str,
        /// Where.
        id: u64,
    },
    /// A native snapshot record marks a commit user at a snapshot outside
    /// `1..=latest` (its own id).
    MarkOutsideSnapshots {
        /// The commit user.
        user: String,
        /// The marked snapshot.
        snapshot: u64,
        /// The record's own snapshot id.
        latest: u64,
    },
    /// A native snapshot record's commit users take more than they may.
    UsersTooLarge {
        /// The bytes they take.
        bytes: u64,
    },
    /// A native snapshot record does not mark its own commit.
    NoOwnMark {
        /// The record's commit user.
        user: String,
        /// The record's checkpoint.
        checkpoint: u64,
    },
    /// A native snapshot record's previous-of-user link does not go back.
    LinkDoesNotGoBack {
        /// The snapshot linked to.
        previous: u64,
        /// Its checkpoint.
        previous_checkpoint: u64,
        /// The record's snapshot id.
        snapshot: u64,
        /// The record's checkpoint.
        checkpoint: u64,
    },
    /// A defect of an Apache Paimon record.
    #[cfg(feature = "paimon")]
    Paimon(super::PaimonDefect),
}

impl fmt::Display for StorageOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use StorageOp::*;
        match self {
            ReadingSnapshot(id) => write!(f, "reading snapshot {id}"),
            ReadingSnapshotFiles(id) => write!(f, "reading the files of snapshot {id}"),
            ReadingTag(name) => write!(f, "reading tag {name}"),
            Reading(key) => write!(f, "reading {key}"),
            ListingTags => f.write_str("listing tags"),
            CreatingTag(name) => write!(f, "creating tag {name}"),
            DeletingTag(name) => write!(f, "deleting tag {name}"),
            ReadingTableSchema => f.write_str("reading the table's schema"),
            ReadingPaimonSchema(key) => write!(f, "reading the Paimon schema {key}"),
            ReadingEarliestHint => f.write_str("reading the EARLIEST hint"),
            ReadingLatestHint => f.write_str("reading the latest-snapshot hint"),
            WritingLatestHint => f.write_str("writing the latest-snapshot hint"),
            Committing {
                checkpoint,
                snapshot,
            } => write!(
                f,
                "committing checkpoint {} (snapshot {snapshot})",
                Ckpt(*checkpoint)
            ),
        }
    }
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Defect::*;
        match self {
            Decode(e) => write!(f, "{e}"),
            EmptyCommitUser => f.write_str("empty commit user"),
            CommitUserTooLong { bytes } => write!(
                f,
                "a commit user of {bytes} bytes, more than {MAX_COMMIT_USER_BYTES}"
            ),
            ParallelismOutOfRange { parallelism } => {
                write!(f, "parallelism {parallelism} outside 1..={MAX_PARALLELISM}")
            }
            EntryAfterRestored { checkpoint } => write!(
                f,
                "entry for checkpoint {} is newer than the restored checkpoint",
                Ckpt(*checkpoint)
            ),
            EntriesOutOfOrder { checkpoint } => {
                write!(f, "entries out of order at checkpoint {checkpoint}")
            }
            LastOutOfRange => f.write_str("last reported checkpoint out of range"),
            EndWithOrdinaryId => f.write_str("END entry with an ordinary checkpoint id"),
            EndOutsideParallelism {
                subtask,
                parallelism,
            } => write!(
                f,
                "END entry of subtask {subtask} outside parallelism {parallelism}"
            ),
            EndsOutOfOrder { subtask } => write!(
                f,
                "END entries out of order or repeated at subtask {subtask}"
            ),
            SynthesizedEndCarriesData { subtask } => write!(
                f,
                "synthesized END entry of subtask {subtask} carries data"
            ),
            TakenOutOfRange { subtask, taken } => write!(
                f,
                "END entry of subtask {subtask}: taken {taken} is out of range"
            ),
            SlotEntriesOutOfOrder {
                subtask,
                checkpoint,
            } => write!(
                f,
                "entries of subtask {subtask} out of order or out of range at checkpoint {checkpoint}"
            ),
            IdsOutOfOrder { what, id } => write!(
                f,
                "{what} ids out of order, repeated or out of range at {id}"
            ),
            MarkOutsideSnapshots {
                user,
                snapshot,
                latest,
            } => write!(
                f,
                "commit user \"{}\" is marked at snapshot {snapshot}, outside 1..={latest}",
                clip(user)
            ),
            UsersTooLarge { bytes } => write!(
                f,
                "its commit users take {bytes} bytes, more than {MAX_TABLE_USERS_BYTES}"
            ),
            NoOwnMark { user, checkpoint } => write!(
                f,
                "it does not mark its own commit (\"{}\", checkpoint {})",
                clip(user),
                Ckpt(*checkpoint)
            ),
            LinkDoesNotGoBack {
                previous,
                previous_checkpoint,
                snapshot,
                checkpoint,
            } => write!(
                f,
                "its previous-of-user link (snapshot {previous}, checkpoint {}) does not go back from snapshot {snapshot}, checkpoint {}",
                Ckpt(*previous_checkpoint),
                Ckpt(*checkpoint)
            ),
            #[cfg(feature = "paimon")]
            Paimon(d) => d.fmt(f),
        }
    }
}

impl From<DecodeError> for Defect {
    fn from(e: DecodeError) -> Self {
        Defect::Decode(e)
    }
}
