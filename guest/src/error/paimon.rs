//! What is wrong with an Apache Paimon record the table reads ([`PaimonDefect`]):
//! a schema, a snapshot, a tag or a manifest under a key of the table. The
//! texts are the words the Paimon format's messages have always used.

use alloc::string::String;
use core::fmt;

use sink_coordinator_paimon::avro::AvroError;
use sink_coordinator_paimon::manifest::ManifestError;
use sink_coordinator_paimon::schema::SchemaError;
use sink_coordinator_paimon::subtasks::SubtasksError;

use crate::table::clip;

/// A defect of a Paimon record (inside [`Defect::Paimon`](super::Defect::Paimon)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PaimonDefect {
    /// A schema file that does not decode, or one this format cannot write to.
    Schema(SchemaError),
    /// A schema file under the key of another schema id.
    SchemaId {
        /// The id it holds.
        found: i64,
    },
    /// A snapshot file that is not a Paimon snapshot.
    NotASnapshot,
    /// A snapshot file under the key of another snapshot id.
    SnapshotId {
        /// The id it holds.
        found: i64,
    },
    /// A snapshot's `sinkcoord.*` marks do not decode.
    MarksMalformed,
    /// A snapshot's or tag's commit identifier is negative (no checkpoint id).
    NegativeIdentifier,
    /// One of a snapshot's marks is negative.
    NegativeMark,
    /// A snapshot's previous-of-user link is negative.
    NegativePreviousLink,
    /// A snapshot's previous-of-user identifier does not parse.
    PreviousIdentifierMalformed,
    /// A snapshot's previous-of-user snapshot is missing (and not expired).
    PreviousMissing {
        /// The snapshot id linked to.
        previous: u64,
    },
    /// A tag file that is not a Paimon tag.
    NotATag,
    /// A tag's creation or expiry time does not parse.
    TimesMalformed,
    /// A tag's snapshot id is negative.
    NegativeSnapshotId,
    /// A manifest or manifest list a snapshot names is missing.
    ManifestMissing {
        /// Its key.
        key: String,
    },
    /// A manifest or manifest list that does not decode.
    Manifest(ManifestError),
    /// A snapshot's `sinkcoord.subtasks` property does not decode.
    SubtasksMalformed,
    /// A snapshot's `sinkcoord.subtasks` name another number of files than its
    /// delta manifests hold.
    SubtasksCount {
        /// The files its delta manifests hold.
        files: u64,
        /// The files its subtasks name.
        runs: u64,
    },
}

impl fmt::Display for PaimonDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PaimonDefect::*;
        match self {
            Schema(e) => schema_text(e, f),
            SchemaId { found } => write!(f, "it holds schema {found}"),
            NotASnapshot => f.write_str("it is not a Paimon snapshot"),
            SnapshotId { found } => write!(f, "it holds snapshot {found}"),
            MarksMalformed => f.write_str("its marks are malformed"),
            NegativeIdentifier => f.write_str("its commit identifier is negative"),
            NegativeMark => f.write_str("a mark is negative"),
            NegativePreviousLink => f.write_str("its previous-of-user link is negative"),
            PreviousIdentifierMalformed => {
                f.write_str("its previous-of-user identifier is malformed")
            }
            PreviousMissing { previous } => {
                write!(f, "its previous-of-user snapshot {previous} is missing")
            }
            NotATag => f.write_str("it is not a Paimon tag"),
            TimesMalformed => f.write_str("its times are malformed"),
            NegativeSnapshotId => f.write_str("its snapshot id is negative"),
            ManifestMissing { key } => write!(f, "its {key} is missing"),
            Manifest(ManifestError::Avro(AvroError::UnsupportedCodec(c))) => write!(
                f,
                "it is compressed with codec \"{}\", which this build does not decompress",
                clip(c)
            ),
            Manifest(_) => f.write_str("it cannot be decoded"),
            SubtasksMalformed => f.write_str("its subtasks are malformed"),
            SubtasksCount { files, runs } => write!(
                f,
                "its subtasks name {runs} files, its delta manifests hold {files}"
            ),
        }
    }
}

/// No `{:?}` of strings (its escaping would pull Unicode tables into the
/// component): names are quoted as they are, clipped.
fn schema_text(e: &SchemaError, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match e {
        SchemaError::BadJson => f.write_str("it is not a Paimon schema"),
        SchemaError::PrimaryKeyTable => {
            f.write_str("it is a primary-key table (append tables only)")
        }
        SchemaError::FixedBucket(b) => {
            write!(f, "its bucket is {} (only -1 is supported)", clip(b))
        }
        SchemaError::UnknownPartitionKey(k) => {
            write!(f, "its partition key \"{}\" names no column", clip(k))
        }
        SchemaError::UnsupportedPartitionType(k) => {
            write!(
                f,
                "its partition key \"{}\" has an unsupported type",
                clip(k)
            )
        }
        SchemaError::BadFields => f.write_str("its columns are missing or repeated"),
    }
}

impl From<SubtasksError> for PaimonDefect {
    fn from(e: SubtasksError) -> Self {
        match e {
            SubtasksError::Malformed => PaimonDefect::SubtasksMalformed,
            SubtasksError::Count { files, runs } => PaimonDefect::SubtasksCount { files, runs },
        }
    }
}

impl From<PaimonDefect> for super::Defect {
    fn from(d: PaimonDefect) -> Self {
        super::Defect::Paimon(d)
    }
}
