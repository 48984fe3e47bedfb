//! Manifest files (Avro OCF of `ManifestEntry`) and manifest lists (Avro OCF of
//! `ManifestFileMeta`), with the writer schemas embedded so that readers resolve fields
//! by name. The schemas are the ones pypaimon 2.1 writes (field for field, the same names,
//! order and union shapes as Paimon's Java serializers), even byte for byte as fastavro
//! prints them: so this crate's and pypaimon's manifests share one Avro header and merge
//! by block copy (see `merge`). Codec `null`.

use crate::avro::{self, put_long, put_none, put_some, put_str, AvroError, Value};
use crate::binary_row::{encode_row, EMPTY_ROW};
use crate::committable::DataFile;
use crate::naming::{self, Role};
use crate::schema::TableSchema;
use crate::types::{ColumnType, Datum};
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

pub const MANIFEST_ENTRY_SCHEMA: &str = concat!(
    r#"{"type": "record", "name": "ManifestEntry", "fields": ["#,
    r#"{"name": "_VERSION", "type": "int"}, "#,
    r#"{"name": "_KIND", "type": "int"}, "#,
    r#"{"name": "_PARTITION", "type": "bytes"}, "#,
    r#"{"name": "_BUCKET", "type": "int"}, "#,
    r#"{"name": "_TOTAL_BUCKETS", "type": "int"}, "#,
    r#"{"name": "_FILE", "type": {"type": "record", "name": "DataFileMeta", "fields": ["#,
    r#"{"name": "_FILE_NAME", "type": "string"}, "#,
    r#"{"name": "_FILE_SIZE", "type": "long"}, "#,
    r#"{"name": "_ROW_COUNT", "type": "long"}, "#,
    r#"{"name": "_MIN_KEY", "type": "bytes"}, "#,
    r#"{"name": "_MAX_KEY", "type": "bytes"}, "#,
    r#"{"name": "_KEY_STATS", "type": {"type": "record", "name": "record_KEY_STATS", "fields": ["#,
    r#"{"name": "_MIN_VALUES", "type": "bytes"}, "#,
    r#"{"name": "_MAX_VALUES", "type": "bytes"}, "#,
    r#"{"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": null}]}}, "#,
    r#"{"name": "_VALUE_STATS", "type": {"type": "record", "name": "record_VALUE_STATS", "fields": ["#,
    r#"{"name": "_MIN_VALUES", "type": "bytes"}, "#,
    r#"{"name": "_MAX_VALUES", "type": "bytes"}, "#,
    r#"{"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": null}]}}, "#,
    r#"{"name": "_MIN_SEQUENCE_NUMBER", "type": "long"}, "#,
    r#"{"name": "_MAX_SEQUENCE_NUMBER", "type": "long"}, "#,
    r#"{"name": "_SCHEMA_ID", "type": "long"}, "#,
    r#"{"name": "_LEVEL", "type": "int"}, "#,
    r#"{"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}}, "#,
    r#"{"name": "_CREATION_TIME", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": null}, "#,
    r#"{"name": "_DELETE_ROW_COUNT", "type": ["null", "long"], "default": null}, "#,
    r#"{"name": "_EMBEDDED_FILE_INDEX", "type": ["null", "bytes"], "default": null}, "#,
    r#"{"name": "_FILE_SOURCE", "type": ["null", "int"], "default": null}, "#,
    r#"{"name": "_VALUE_STATS_COLS", "type": ["null", {"type": "array", "items": "string"}], "default": null}, "#,
    r#"{"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": null}, "#,
    r#"{"name": "_FIRST_ROW_ID", "type": ["null", "long"], "default": null}, "#,
    r#"{"name": "_WRITE_COLS", "type": ["null", {"type": "array", "items": "string"}], "default": null}, "#,
    r#"{"name": "_WRITE_COLS_SEQUENCES", "type": ["null", {"type": "array", "items": "long"}], "default": null}]}}]}"#,
);

pub const MANIFEST_FILE_META_SCHEMA: &str = concat!(
    r#"{"type": "record", "name": "ManifestFileMeta", "fields": ["#,
    r#"{"name": "_VERSION", "type": "int"}, "#,
    r#"{"name": "_FILE_NAME", "type": "string"}, "#,
    r#"{"name": "_FILE_SIZE", "type": "long"}, "#,
    r#"{"name": "_NUM_ADDED_FILES", "type": "long"}, "#,
    r#"{"name": "_NUM_DELETED_FILES", "type": "long"}, "#,
    r#"{"name": "_PARTITION_STATS", "type": {"type": "record", "name": "record_PARTITION_STATS", "fields": ["#,
    r#"{"name": "_MIN_VALUES", "type": "bytes"}, "#,
    r#"{"name": "_MAX_VALUES", "type": "bytes"}, "#,
    r#"{"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": null}]}}, "#,
    r#"{"name": "_SCHEMA_ID", "type": "long"}, "#,
    r#"{"name": "_MIN_BUCKET", "type": ["null", "int"], "default": null}, "#,
    r#"{"name": "_MAX_BUCKET", "type": ["null", "int"], "default": null}, "#,
    r#"{"name": "_MIN_LEVEL", "type": ["null", "int"], "default": null}, "#,
    r#"{"name": "_MAX_LEVEL", "type": ["null", "int"], "default": null}, "#,
    r#"{"name": "_MIN_ROW_ID", "type": ["null", "long"], "default": null}, "#,
    r#"{"name": "_MAX_ROW_ID", "type": ["null", "long"], "default": null}, "#,
    r#"{"name": "_TOTAL_BUCKETS", "type": ["null", "int"], "default": null}, "#,
    r#"{"name": "_EXTRA_FILES", "type": ["null", {"type": "array", "items": "string"}], "default": null}]}"#,
);

/// `ManifestEntry._VERSION` and `ManifestFileMeta._VERSION` as Paimon writes them.
pub const ENTRY_VERSION: i64 = 2;
/// `FileSource.APPEND`.
pub const FILE_SOURCE_APPEND: i64 = 0;
/// Unaware-bucket files live in bucket 0 and record `-1` total buckets.
pub const BUCKET: i64 = 0;
pub const TOTAL_BUCKETS: i64 = -1;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ManifestError {
    Avro(AvroError),
    /// A record lacks a required field or has one of the wrong type.
    BadRecord(&'static str),
    /// A partition value or stats value that cannot be encoded as a BinaryRow.
    Row(crate::binary_row::RowError),
    /// Merge inputs do not match the metas they were read for.
    MergeInput,
}

impl From<AvroError> for ManifestError {
    fn from(e: AvroError) -> Self {
        ManifestError::Avro(e)
    }
}

impl From<crate::binary_row::RowError> for ManifestError {
    fn from(e: crate::binary_row::RowError) -> Self {
        ManifestError::Row(e)
    }
}

/// One record of a manifest list (`ManifestFileMeta`). Partition stats are kept as
/// serialized BinaryRows, so metas written by others round-trip unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestFileMeta {
    pub file_name: String,
    pub file_size: i64,
    pub num_added_files: i64,
    pub num_deleted_files: i64,
    pub partition_min: Vec<u8>,
    pub partition_max: Vec<u8>,
    pub partition_null_counts: Option<Vec<Option<i64>>>,
    pub schema_id: i64,
    pub min_bucket: Option<i32>,
    pub max_bucket: Option<i32>,
    pub min_level: Option<i32>,
    pub max_level: Option<i32>,
    pub min_row_id: Option<i64>,
    pub max_row_id: Option<i64>,
    pub total_buckets: Option<i32>,
    pub extra_files: Option<Vec<String>>,
}

fn put_opt_long(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        Some(x) => {
            put_some(out);
            put_long(out, x);
        }
        None => put_none(out),
    }
}

fn put_null_counts(out: &mut Vec<u8>, counts: Option<&[Option<i64>]>) {
    match counts {
        None => put_none(out),
        Some(c) => {
            put_some(out);
            if !c.is_empty() {
                put_long(out, c.len() as i64);
                for x in c {
                    put_opt_long(out, *x);
                }
            }
            put_long(out, 0);
        }
    }
}

fn empty_stats(out: &mut Vec<u8>) {
    avro::put_bytes(out, &EMPTY_ROW);
    avro::put_bytes(out, &EMPTY_ROW);
    put_null_counts(out, Some(&[]));
}

/// One ADD entry for a new data file (validated by `committable::decode`).
fn encode_entry(out: &mut Vec<u8>, table: &TableSchema, f: &DataFile) -> Result<(), ManifestError> {
    put_long(out, ENTRY_VERSION);
    put_long(out, 0); // FileKind.ADD
    avro::put_bytes(out, &encode_row(&table.partition_kinds(), &f.partition)?);
    put_long(out, BUCKET);
    put_long(out, TOTAL_BUCKETS);
    put_str(out, &f.file_name);
    put_long(out, f.file_size as i64);
    put_long(out, f.row_count as i64);
    avro::put_bytes(out, &EMPTY_ROW); // min key: append tables have no key
    avro::put_bytes(out, &EMPTY_ROW);
    empty_stats(out); // key stats
    let mut cols = Vec::new();
    let (mut kinds, mut mins, mut maxs, mut nulls) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for s in &f.value_stats {
        let kind = table
            .field(&s.column)
            .map_or(ColumnType::Other, |c| c.ty.kind);
        cols.push(s.column.clone());
        kinds.push(kind);
        mins.push(s.min.clone());
        maxs.push(s.max.clone());
        nulls.push(s.null_count);
    }
    avro::put_bytes(out, &encode_row(&kinds, &mins)?);
    avro::put_bytes(out, &encode_row(&kinds, &maxs)?);
    put_null_counts(out, Some(&nulls));
    put_long(out, f.min_sequence_number);
    put_long(out, f.max_sequence_number);
    put_long(out, f.schema_id as i64);
    put_long(out, 0); // level 0
    put_long(out, 0); // no extra files
    put_opt_long(out, Some(f.creation_time_millis));
    put_opt_long(out, Some(0)); // delete row count
    put_none(out); // embedded file index
    put_opt_long(out, Some(FILE_SOURCE_APPEND));
    put_some(out); // value stats columns: exactly those listed (empty = no stats)
    avro::put_str_array(out, &cols);
    put_none(out); // external path
    put_none(out); // first row id
    put_none(out); // write cols
    put_none(out); // write cols sequences
    Ok(())
}

fn cmp_opt(a: &Datum, b: &Datum, want: Ordering) -> bool {
    !matches!(b, Datum::Null) && (matches!(a, Datum::Null) || b.cmp_same(a) == want)
}

/// Serialized min row, max row, and per-column null counts.
type PartitionStats = (Vec<u8>, Vec<u8>, Vec<Option<i64>>);

/// Per-column min, max and null count over partition rows, as Paimon's partition stats.
fn partition_stats(
    kinds: &[ColumnType],
    rows: impl Iterator<Item = Vec<Datum>>,
) -> Result<PartitionStats, ManifestError> {
    let mut min = alloc::vec![Datum::Null; kinds.len()];
    let mut max = min.clone();
    let mut nulls = alloc::vec![Some(0i64); kinds.len()];
    for row in rows {
        for (i, v) in row.into_iter().enumerate().take(kinds.len()) {
            if matches!(v, Datum::Null) {
                nulls[i] = nulls[i].map(|n| n + 1);
                continue;
            }
            if cmp_opt(&min[i], &v, Ordering::Less) {
                min[i] = v.clone();
            }
            if cmp_opt(&max[i], &v, Ordering::Greater) {
                max[i] = v;
            }
        }
    }
    Ok((encode_row(kinds, &min)?, encode_row(kinds, &max)?, nulls))
}

/// A manifest of ADD entries for `files`, and its manifest-list record.
#[inline(never)] // see `avro::unzstd`
pub fn write_manifest(
    table: &TableSchema,
    files: &[DataFile],
    snapshot_id: i64,
) -> Result<(ManifestFileMeta, Vec<u8>), ManifestError> {
    let mut block = Vec::new();
    for f in files {
        encode_entry(&mut block, table, f)?;
    }
    let bytes = avro::write_ocf(
        MANIFEST_ENTRY_SCHEMA,
        "null",
        &[(files.len() as i64, &block)],
    );
    let kinds = table.partition_kinds();
    let (pmin, pmax, nulls) = partition_stats(&kinds, files.iter().map(|f| f.partition.clone()))?;
    let any = !files.is_empty();
    let meta = ManifestFileMeta {
        file_name: naming::file_name(Role::DeltaManifest, snapshot_id, &bytes),
        file_size: bytes.len() as i64,
        num_added_files: files.len() as i64,
        num_deleted_files: 0,
        partition_min: pmin,
        partition_max: pmax,
        partition_null_counts: Some(nulls),
        schema_id: table.id,
        min_bucket: any.then_some(BUCKET as i32),
        max_bucket: any.then_some(BUCKET as i32),
        min_level: any.then_some(0),
        max_level: any.then_some(0),
        min_row_id: None,
        max_row_id: None,
        total_buckets: None, // Paimon records it only for a positive common bucket count
        extra_files: None,
    };
    Ok((meta, bytes))
}

fn encode_meta(out: &mut Vec<u8>, m: &ManifestFileMeta) {
    let opt_i = |out: &mut Vec<u8>, v: Option<i32>| put_opt_long(out, v.map(i64::from));
    put_long(out, ENTRY_VERSION);
    put_str(out, &m.file_name);
    put_long(out, m.file_size);
    put_long(out, m.num_added_files);
    put_long(out, m.num_deleted_files);
    avro::put_bytes(out, &m.partition_min);
    avro::put_bytes(out, &m.partition_max);
    put_null_counts(out, m.partition_null_counts.as_deref());
    put_long(out, m.schema_id);
    opt_i(out, m.min_bucket);
    opt_i(out, m.max_bucket);
    opt_i(out, m.min_level);
    opt_i(out, m.max_level);
    put_opt_long(out, m.min_row_id);
    put_opt_long(out, m.max_row_id);
    opt_i(out, m.total_buckets);
    match &m.extra_files {
        None => put_none(out),
        Some(f) => {
            put_some(out);
            avro::put_str_array(out, f);
        }
    }
}

/// A manifest list of `metas`, and its content-derived name.
pub fn write_manifest_list(
    metas: &[ManifestFileMeta],
    role: Role,
    snapshot_id: i64,
) -> (String, Vec<u8>) {
    let mut block = Vec::new();
    for m in metas {
        encode_meta(&mut block, m);
    }
    let bytes = avro::write_ocf(
        MANIFEST_FILE_META_SCHEMA,
        "null",
        &[(metas.len() as i64, &block)],
    );
    (naming::file_name(role, snapshot_id, &bytes), bytes)
}

fn get_long(v: &Value, name: &'static str) -> Result<i64, ManifestError> {
    match v.field(name) {
        Some(Value::Long(x)) => Ok(*x),
        _ => Err(ManifestError::BadRecord(name)),
    }
}

fn get_opt_long(v: &Value, name: &'static str) -> Result<Option<i64>, ManifestError> {
    match v.field(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Long(x)) => Ok(Some(*x)),
        _ => Err(ManifestError::BadRecord(name)),
    }
}

fn get_opt_int(v: &Value, name: &'static str) -> Result<Option<i32>, ManifestError> {
    get_opt_long(v, name)?
        .map(|x| i32::try_from(x).map_err(|_| ManifestError::BadRecord(name)))
        .transpose()
}

fn get_bytes(v: &Value, name: &'static str) -> Result<Vec<u8>, ManifestError> {
    match v.field(name) {
        Some(Value::Bytes(b)) => Ok(b.clone()),
        _ => Err(ManifestError::BadRecord(name)),
    }
}

fn get_str(v: &Value, name: &'static str) -> Result<String, ManifestError> {
    match v.field(name) {
        Some(Value::Str(s)) => Ok(s.clone()),
        _ => Err(ManifestError::BadRecord(name)),
    }
}

/// Decodes a manifest list written by this crate, Paimon or pypaimon (codec `null`),
/// resolving fields by name from the file's own writer schema.
pub fn decode_manifest_list(bytes: &[u8]) -> Result<Vec<ManifestFileMeta>, ManifestError> {
    let mut out = Vec::new();
    for r in avro::read_records(bytes)? {
        let stats = r
            .field("_PARTITION_STATS")
            .ok_or(ManifestError::BadRecord("_PARTITION_STATS"))?;
        let nulls = match stats.field("_NULL_COUNTS") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|i| match i {
                        Value::Null => Ok(None),
                        Value::Long(x) => Ok(Some(*x)),
                        _ => Err(ManifestError::BadRecord("_NULL_COUNTS")),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => return Err(ManifestError::BadRecord("_NULL_COUNTS")),
        };
        let extra_files = match r.field("_EXTRA_FILES") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|i| match i {
                        Value::Str(s) => Ok(s.clone()),
                        _ => Err(ManifestError::BadRecord("_EXTRA_FILES")),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => return Err(ManifestError::BadRecord("_EXTRA_FILES")),
        };
        out.push(ManifestFileMeta {
            file_name: get_str(&r, "_FILE_NAME")?,
            file_size: get_long(&r, "_FILE_SIZE")?,
            num_added_files: get_long(&r, "_NUM_ADDED_FILES")?,
            num_deleted_files: get_long(&r, "_NUM_DELETED_FILES")?,
            partition_min: get_bytes(stats, "_MIN_VALUES")?,
            partition_max: get_bytes(stats, "_MAX_VALUES")?,
            partition_null_counts: nulls,
            schema_id: get_long(&r, "_SCHEMA_ID")?,
            min_bucket: get_opt_int(&r, "_MIN_BUCKET")?,
            max_bucket: get_opt_int(&r, "_MAX_BUCKET")?,
            min_level: get_opt_int(&r, "_MIN_LEVEL")?,
            max_level: get_opt_int(&r, "_MAX_LEVEL")?,
            min_row_id: get_opt_long(&r, "_MIN_ROW_ID")?,
            max_row_id: get_opt_long(&r, "_MAX_ROW_ID")?,
            total_buckets: get_opt_int(&r, "_TOTAL_BUCKETS")?,
            extra_files,
        });
    }
    Ok(out)
}

/// What a manifest entry says, for checks and tools (not needed to commit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntrySummary {
    pub kind: i64,
    pub partition: Vec<u8>,
    pub bucket: i64,
    pub total_buckets: i64,
    pub file_name: String,
    pub file_size: i64,
    pub row_count: i64,
    pub schema_id: i64,
}

/// Decodes an uncompressed manifest file's entries.
pub fn decode_manifest(bytes: &[u8]) -> Result<Vec<EntrySummary>, ManifestError> {
    let mut out = Vec::new();
    for r in avro::read_records(bytes)? {
        let f = r.field("_FILE").ok_or(ManifestError::BadRecord("_FILE"))?;
        out.push(EntrySummary {
            kind: get_long(&r, "_KIND")?,
            partition: get_bytes(&r, "_PARTITION")?,
            bucket: get_long(&r, "_BUCKET")?,
            total_buckets: get_long(&r, "_TOTAL_BUCKETS")?,
            file_name: get_str(f, "_FILE_NAME")?,
            file_size: get_long(f, "_FILE_SIZE")?,
            row_count: get_long(f, "_ROW_COUNT")?,
            schema_id: get_long(f, "_SCHEMA_ID")?,
        });
    }
    Ok(out)
}

mod entries;
mod merge;
pub use entries::{decode_manifest_files, FileEntry, KIND_ADD};
pub use merge::{apply_merge, merge_manifests, plan_merge, MergeOptions, Merged};

#[cfg(test)]
mod tests;
