//! Reading a manifest's entries back as the data files they describe: what a reader of
//! the table (the core's read-only `table` functions) needs to give each snapshot's
//! committables, re-encoded from its delta manifests. The commit path never reads a
//! manifest's entries.
//!
//! For an entry this crate wrote, the [`DataFile`] is exactly the one its committable
//! decoded to, so `committable::encode` gives the committed bytes back (the committable
//! encoding has one form per value: `committable::decode_unchecked` refuses the rest).
//! Entries other writers wrote are read as far as the committable can say: stats of
//! columns this crate cannot type (unknown names, or types it does not encode) are left
//! out, and a missing creation time reads as 0.

use super::{get_bytes, get_long, get_opt_long, get_str, ManifestError};
use crate::avro::{self, Value};
use crate::binary_row::decode_row;
use crate::committable::{ColumnStats, DataFile};
use crate::schema::TableSchema;
use crate::types::{ColumnType, Datum};
use alloc::string::String;
use alloc::vec::Vec;

/// `FileKind.ADD`.
pub const KIND_ADD: i64 = 0;

/// One entry of a manifest: its kind (0 ADD, 1 DELETE) and the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    pub kind: i64,
    pub file: DataFile,
}

fn non_negative(v: i64, name: &'static str) -> Result<u64, ManifestError> {
    u64::try_from(v).map_err(|_| ManifestError::BadRecord(name))
}

/// The names of the columns the stats rows cover: `_VALUE_STATS_COLS`, or every column
/// of the table when it is null (Paimon's "all columns").
fn stats_columns(f: &Value, table: &TableSchema) -> Result<Vec<String>, ManifestError> {
    match f.field("_VALUE_STATS_COLS") {
        None | Some(Value::Null) => Ok(table.fields.iter().map(|c| c.name.clone()).collect()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::Str(s) => Ok(s.clone()),
                _ => Err(ManifestError::BadRecord("_VALUE_STATS_COLS")),
            })
            .collect(),
        Some(_) => Err(ManifestError::BadRecord("_VALUE_STATS_COLS")),
    }
}

fn null_counts(stats: &Value, n: usize) -> Result<Vec<Option<i64>>, ManifestError> {
    let bad = ManifestError::BadRecord("_NULL_COUNTS");
    match stats.field("_NULL_COUNTS") {
        None | Some(Value::Null) => Ok(alloc::vec![None; n]),
        Some(Value::Array(items)) if items.len() == n => items
            .iter()
            .map(|i| match i {
                Value::Null => Ok(None),
                Value::Long(x) => Ok(Some(*x)),
                _ => Err(bad.clone()),
            })
            .collect(),
        Some(_) => Err(bad),
    }
}

/// The value stats of a file entry `f`, as the committable lists them.
fn value_stats(f: &Value, table: &TableSchema) -> Result<Vec<ColumnStats>, ManifestError> {
    let stats = f
        .field("_VALUE_STATS")
        .ok_or(ManifestError::BadRecord("_VALUE_STATS"))?;
    let min = get_bytes(stats, "_MIN_VALUES")?;
    let max = get_bytes(stats, "_MAX_VALUES")?;
    let cols = stats_columns(f, table)?;
    // Empty stats rows (arity 0) mean no stats, whatever the columns say (Paimon's
    // stats mode `none` writes them with all columns listed).
    let arity = |b: &[u8]| {
        b.get(..4)
            .map(|a| u32::from_be_bytes([a[0], a[1], a[2], a[3]]))
    };
    if cols.is_empty() || matches!(arity(&min), None | Some(0)) {
        return Ok(Vec::new());
    }
    let mut kinds = Vec::with_capacity(cols.len());
    for c in &cols {
        match table.field(c).map(|c| c.ty.kind) {
            Some(k) if k != ColumnType::Other => kinds.push(k),
            // Another writer's stats of a column this crate cannot type.
            _ => return Ok(Vec::new()),
        }
    }
    let mins = decode_row(&min, &kinds)?;
    let maxs = decode_row(&max, &kinds)?;
    let nulls = null_counts(stats, cols.len())?;
    Ok(cols
        .into_iter()
        .zip(mins)
        .zip(maxs)
        .zip(nulls)
        .map(|(((column, min), max), null_count)| ColumnStats {
            column,
            min,
            max,
            null_count,
        })
        .collect())
}

fn entry(
    r: &Value,
    table: &TableSchema,
    partition_kinds: &[ColumnType],
) -> Result<FileEntry, ManifestError> {
    let kind = get_long(r, "_KIND")?;
    let partition: Vec<Datum> = decode_row(&get_bytes(r, "_PARTITION")?, partition_kinds)?;
    let f = r.field("_FILE").ok_or(ManifestError::BadRecord("_FILE"))?;
    let file = DataFile {
        file_name: get_str(f, "_FILE_NAME")?,
        file_size: non_negative(get_long(f, "_FILE_SIZE")?, "_FILE_SIZE")?,
        row_count: non_negative(get_long(f, "_ROW_COUNT")?, "_ROW_COUNT")?,
        schema_id: non_negative(get_long(f, "_SCHEMA_ID")?, "_SCHEMA_ID")?,
        min_sequence_number: get_long(f, "_MIN_SEQUENCE_NUMBER")?,
        max_sequence_number: get_long(f, "_MAX_SEQUENCE_NUMBER")?,
        creation_time_millis: get_opt_long(f, "_CREATION_TIME")?.unwrap_or(0),
        partition,
        value_stats: value_stats(f, table)?,
    };
    Ok(FileEntry { kind, file })
}

/// Decodes an uncompressed manifest's entries as data files of `table` (whose partition
/// keys type the partition rows and whose columns type the stats rows), in file order.
pub fn decode_manifest_files(
    bytes: &[u8],
    table: &TableSchema,
) -> Result<Vec<FileEntry>, ManifestError> {
    let kinds = table.partition_kinds();
    avro::read_records(bytes)?
        .iter()
        .map(|r| entry(r, table, &kinds))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::committable;
    use crate::manifest::write_manifest;
    use crate::schema::test_schema;
    use alloc::string::ToString;
    use alloc::vec;

    fn table() -> TableSchema {
        test_schema(
            &[
                ("id", "BIGINT"),
                ("name", "STRING"),
                ("ok", "BOOLEAN"),
                ("t", "TINYINT"),
                ("d", "DATE"),
                ("x", "DOUBLE"),
                ("dt", "STRING"),
                ("h", "INT"),
            ],
            &["dt", "h"],
        )
    }

    fn stats(column: &str, min: Datum, max: Datum, nulls: Option<i64>) -> ColumnStats {
        ColumnStats {
            column: column.to_string(),
            min,
            max,
            null_count: nulls,
        }
    }

    /// Every file a committable can describe comes back as the same committable bytes.
    #[test]
    fn files_read_back_as_their_committables() {
        let t = table();
        let files = [
            DataFile {
                file_name: "data-a-0.parquet".to_string(),
                file_size: 1234,
                row_count: 10,
                schema_id: 0,
                min_sequence_number: -3,
                max_sequence_number: 9,
                creation_time_millis: 1_700_000_000_000,
                partition: vec![
                    Datum::Str("2024-01-01 long value".to_string()),
                    Datum::Int(3),
                ],
                value_stats: vec![
                    stats("id", Datum::Long(i64::MIN), Datum::Long(i64::MAX), Some(0)),
                    stats("name", Datum::Null, Datum::Str("zz".repeat(20)), None),
                    stats("ok", Datum::Bool(false), Datum::Bool(true), Some(7)),
                    stats("t", Datum::Int(-128), Datum::Int(127), None),
                    stats("d", Datum::Int(19000), Datum::Null, Some(2)),
                ],
            },
            DataFile {
                file_name: "b".to_string(),
                file_size: 0,
                row_count: 0,
                schema_id: 0,
                min_sequence_number: 0,
                max_sequence_number: 0,
                creation_time_millis: -1,
                partition: vec![Datum::Null, Datum::Null],
                value_stats: vec![],
            },
        ];
        let bytes: Vec<Vec<u8>> = files.iter().map(committable::encode).collect();
        let decoded: Vec<DataFile> = bytes
            .iter()
            .map(|b| committable::decode(b, &t).unwrap())
            .collect();
        let (_, manifest) = write_manifest(&t, &decoded, 4).unwrap();
        let back = decode_manifest_files(&manifest, &t).unwrap();
        assert_eq!(back.len(), 2);
        for (entry, want) in back.iter().zip(&bytes) {
            assert_eq!(entry.kind, KIND_ADD);
            assert_eq!(&committable::encode(&entry.file), want);
        }
    }

    #[test]
    fn foreign_stats_this_crate_cannot_type_are_left_out() {
        let t = table();
        let f = DataFile {
            file_name: "f".to_string(),
            file_size: 1,
            row_count: 1,
            schema_id: 0,
            min_sequence_number: 0,
            max_sequence_number: 0,
            creation_time_millis: 0,
            partition: vec![Datum::Str("d".to_string()), Datum::Int(1)],
            value_stats: vec![stats("id", Datum::Long(1), Datum::Long(2), None)],
        };
        let (_, manifest) = write_manifest(&t, core::slice::from_ref(&f), 1).unwrap();
        // The same manifest as if its stats named a column of another schema.
        let renamed = replace(&manifest, b"\x04id", b"\x04zz");
        let back = decode_manifest_files(&renamed, &t).unwrap();
        assert_eq!(
            back[0].file,
            DataFile {
                value_stats: vec![],
                ..f
            }
        );
        assert!(decode_manifest_files(b"nope", &t).is_err());
    }

    /// `bytes` with the first `from` replaced by `to` (same length).
    fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
        let at = bytes.windows(from.len()).rposition(|w| w == from).unwrap();
        let mut out = bytes.to_vec();
        out[at..at + to.len()].copy_from_slice(to);
        out
    }
}
