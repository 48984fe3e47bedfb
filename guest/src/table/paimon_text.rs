//! The words of the Paimon format's errors: why a committable is refused (a record's
//! defects are `error::PaimonDefect`).
//! No `{:?}` of strings (its escaping would pull Unicode tables into the component):
//! names are quoted as they are, clipped.

use alloc::format;
use alloc::string::String;

use sink_coordinator_paimon::committable::CommittableError;

use crate::table::clip;

/// Text for a refused committable (no `{:?}`: strings would be escaped, which pulls
/// Unicode tables into the component).
pub fn committable_error_text(e: &CommittableError) -> String {
    match e {
        CommittableError::Truncated => "it ends early".into(),
        CommittableError::TrailingBytes => "it has bytes after its last field".into(),
        CommittableError::BadMagic => "it is not a Paimon committable (no PCM magic)".into(),
        CommittableError::UnsupportedVersion(v) => format!("its version {v} is unknown"),
        CommittableError::BadValueTag(t) => format!("it holds an unknown value tag {t}"),
        CommittableError::Utf8 => "a string in it is not UTF-8".into(),
        CommittableError::BadFileName => {
            "its file name is not a plain file name inside the table".into()
        }
        CommittableError::SchemaIdMismatch { expected, found } => {
            format!("its file was written with schema {found}, the table's schema is {expected}")
        }
        CommittableError::OutOfRange => "a count or size in it is out of range".into(),
        CommittableError::PartitionArity { expected, found } => {
            format!("it holds {found} partition values, the table has {expected} partition keys")
        }
        CommittableError::PartitionType { index } => {
            format!("partition value {index} does not fit its key's type")
        }
        CommittableError::BadStatsColumn(c) => {
            format!(
                "its stats name column \"{}\", which cannot carry stats",
                clip(c)
            )
        }
        CommittableError::StatsType(c) => {
            format!(
                "its stats for column \"{}\" do not fit the column's type",
                clip(c)
            )
        }
    }
}
