//! The committable of Paimon mode: the metadata of one new data file, as a writer reports
//! it to the coordinator. Encoding "PCM" version 1, all integers little-endian:
//!
//! ```text
//! offset  size  field
//! 0       3     magic "PCM"
//! 3       1     version = 1
//!         str   file_name           (str = u32 byte length, then UTF-8 bytes)
//!         8     file_size           u64, bytes of the data file
//!         8     row_count           u64
//!         8     schema_id           u64
//!         8     min_sequence_number i64
//!         8     max_sequence_number i64
//!         8     creation_time       i64, epoch milliseconds (UTC)
//!         4     partition count     u32, then that many values
//!         1     stats flag          0 = no value stats; 1 = stats follow:
//!           4     column count      u32, then per column:
//!           str   column name
//!           val   min, val max
//!           8     null count        i64, -1 = unknown
//! val = u8 tag, then: 0 null (nothing); 1 INT/TINYINT/SMALLINT/DATE (i32, 4 bytes);
//!       2 BIGINT (i64, 8 bytes); 3 STRING/VARCHAR/CHAR (str); 4 BOOLEAN (u8 0 or 1).
//! ```
//! Nothing may follow. Decoding checks the file against the table (`decode`).

use crate::schema::TableSchema;
use crate::types::{ColumnType, Datum};
use alloc::string::String;
use alloc::vec::Vec;

pub const MAGIC: &[u8; 3] = b"PCM";
pub const VERSION: u8 = 1;
/// Longest file name accepted (bytes); object stores cap a key near 1 KiB.
pub const MAX_FILE_NAME: usize = 255;

/// One column's value stats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnStats {
    pub column: String,
    pub min: Datum,
    pub max: Datum,
    /// `None` when the writer does not know.
    pub null_count: Option<i64>,
}

/// A new data file of an append table (Paimon's `DataFileMeta` fields an append file
/// needs; the rest are fixed: level 0, no extra files, no key stats, no deletions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataFile {
    /// Plain file name, e.g. `data-<uuid>-0.parquet`, under the partition's `bucket-0/`.
    pub file_name: String,
    pub file_size: u64,
    pub row_count: u64,
    pub schema_id: u64,
    pub min_sequence_number: i64,
    pub max_sequence_number: i64,
    pub creation_time_millis: i64,
    /// One value per partition key, in key order; empty for an unpartitioned table.
    pub partition: Vec<Datum>,
    /// Empty means no value stats (Paimon's empty stats).
    pub value_stats: Vec<ColumnStats>,
}

impl DataFile {
    /// A file of one row under schema 0: unpartitioned, sequence number 0, created at 0,
    /// no value stats (the stand-in for an opaque committable: the replayer's synthetic
    /// files, and test fixtures).
    pub fn single_row(file_name: String, file_size: u64) -> Self {
        DataFile {
            file_name,
            file_size,
            row_count: 1,
            schema_id: 0,
            min_sequence_number: 0,
            max_sequence_number: 0,
            creation_time_millis: 0,
            partition: Vec::new(),
            value_stats: Vec::new(),
        }
    }
}

/// Why a committable is refused. The core reports any of these as `invalid-event`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommittableError {
    /// The bytes end early or carry bytes after the last field.
    Truncated,
    TrailingBytes,
    /// Not a committable of this encoding, or a version this crate does not know.
    BadMagic,
    UnsupportedVersion(u8),
    /// An unknown value tag.
    BadValueTag(u8),
    /// A string is not UTF-8.
    Utf8,
    /// The file name is empty, too long, `.`/`..`, or has a path separator or control byte.
    BadFileName,
    /// The file was written with another schema than the table's current one.
    SchemaIdMismatch {
        expected: i64,
        found: u64,
    },
    /// A count or size does not fit Paimon's signed 64-bit fields, or a null count is
    /// below -1 (-1 is the one form of "unknown").
    OutOfRange,
    /// The number of partition values is not the number of partition keys.
    PartitionArity {
        expected: usize,
        found: usize,
    },
    /// Partition value `index` does not fit its key's type.
    PartitionType {
        index: usize,
    },
    /// A stats column that is not in the table, appears twice, or cannot carry stats.
    BadStatsColumn(String),
    /// A stats value that does not fit its column's type.
    StatsType(String),
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_val(out: &mut Vec<u8>, v: &Datum) {
    match v {
        Datum::Null => out.push(0),
        Datum::Int(x) => {
            out.push(1);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Datum::Long(x) => {
            out.push(2);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Datum::Str(s) => {
            out.push(3);
            put_str(out, s);
        }
        Datum::Bool(b) => {
            out.push(4);
            out.push(*b as u8);
        }
    }
}

/// Encodes a committable (writers call this; other languages follow the layout above).
pub fn encode(f: &DataFile) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + f.file_name.len());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    put_str(&mut out, &f.file_name);
    for x in [f.file_size, f.row_count, f.schema_id] {
        out.extend_from_slice(&x.to_le_bytes());
    }
    for x in [
        f.min_sequence_number,
        f.max_sequence_number,
        f.creation_time_millis,
    ] {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.extend_from_slice(&(f.partition.len() as u32).to_le_bytes());
    for v in &f.partition {
        put_val(&mut out, v);
    }
    if f.value_stats.is_empty() {
        out.push(0);
    } else {
        out.push(1);
        out.extend_from_slice(&(f.value_stats.len() as u32).to_le_bytes());
        for c in &f.value_stats {
            put_str(&mut out, &c.column);
            put_val(&mut out, &c.min);
            put_val(&mut out, &c.max);
            out.extend_from_slice(&c.null_count.unwrap_or(-1).to_le_bytes());
        }
    }
    out
}

struct Cur<'a> {
    b: &'a [u8],
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CommittableError> {
        if self.b.len() < n {
            return Err(CommittableError::Truncated);
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u8(&mut self) -> Result<u8, CommittableError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, CommittableError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, CommittableError> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(w))
    }
    fn str(&mut self) -> Result<String, CommittableError> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        core::str::from_utf8(b)
            .map(String::from)
            .map_err(|_| CommittableError::Utf8)
    }
    fn val(&mut self) -> Result<Datum, CommittableError> {
        Ok(match self.u8()? {
            0 => Datum::Null,
            1 => Datum::Int(self.u32()? as i32),
            2 => Datum::Long(self.u64()? as i64),
            3 => Datum::Str(self.str()?),
            4 => match self.u8()? {
                0 => Datum::Bool(false),
                1 => Datum::Bool(true),
                t => return Err(CommittableError::BadValueTag(t)),
            },
            t => return Err(CommittableError::BadValueTag(t)),
        })
    }
}

/// Decodes bytes without checking them against a table.
pub fn decode_unchecked(bytes: &[u8]) -> Result<DataFile, CommittableError> {
    let mut c = Cur { b: bytes };
    if c.take(3).map_err(|_| CommittableError::BadMagic)? != MAGIC {
        return Err(CommittableError::BadMagic);
    }
    let v = c.u8().map_err(|_| CommittableError::BadMagic)?;
    if v != VERSION {
        return Err(CommittableError::UnsupportedVersion(v));
    }
    let file_name = c.str()?;
    let file_size = c.u64()?;
    let row_count = c.u64()?;
    let schema_id = c.u64()?;
    let min_sequence_number = c.u64()? as i64;
    let max_sequence_number = c.u64()? as i64;
    let creation_time_millis = c.u64()? as i64;
    let n = c.u32()? as usize;
    // Each value takes at least one byte: bound the allocation by the input.
    if n > c.b.len() {
        return Err(CommittableError::Truncated);
    }
    let mut partition = Vec::with_capacity(n);
    for _ in 0..n {
        partition.push(c.val()?);
    }
    let mut value_stats = Vec::new();
    match c.u8()? {
        0 => {}
        1 => {
            let n = c.u32()? as usize;
            if n == 0 || n > c.b.len() {
                return Err(CommittableError::Truncated);
            }
            for _ in 0..n {
                let column = c.str()?;
                let min = c.val()?;
                let max = c.val()?;
                // -1 is the one form of "unknown": any other negative count would read
                // back from the manifest as -1, not as the committed bytes.
                let nc = c.u64()? as i64;
                if nc < -1 {
                    return Err(CommittableError::OutOfRange);
                }
                value_stats.push(ColumnStats {
                    column,
                    min,
                    max,
                    null_count: (nc >= 0).then_some(nc),
                });
            }
        }
        t => return Err(CommittableError::BadValueTag(t)),
    }
    if !c.b.is_empty() {
        return Err(CommittableError::TrailingBytes);
    }
    Ok(DataFile {
        file_name,
        file_size,
        row_count,
        schema_id,
        min_sequence_number,
        max_sequence_number,
        creation_time_millis,
        partition,
        value_stats,
    })
}

/// A plain file name: the file lies directly in its partition's bucket directory.
pub fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_FILE_NAME
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == b'\\' || b < 0x20 || b == 0x7f)
}

/// Decodes a committable and checks it against the table's current schema.
pub fn decode(bytes: &[u8], table: &TableSchema) -> Result<DataFile, CommittableError> {
    let f = decode_unchecked(bytes)?;
    if !is_plain_file_name(&f.file_name) {
        return Err(CommittableError::BadFileName);
    }
    if f.schema_id != table.id as u64 || table.id < 0 {
        return Err(CommittableError::SchemaIdMismatch {
            expected: table.id,
            found: f.schema_id,
        });
    }
    if f.file_size > i64::MAX as u64 || f.row_count > i64::MAX as u64 {
        return Err(CommittableError::OutOfRange);
    }
    let pt = table.partition_types();
    if f.partition.len() != pt.len() {
        return Err(CommittableError::PartitionArity {
            expected: pt.len(),
            found: f.partition.len(),
        });
    }
    for (i, (v, t)) in f.partition.iter().zip(&pt).enumerate() {
        // Null partition values are allowed whatever the column's nullability, as in
        // Paimon (they go to the default partition).
        if !matches!(v, Datum::Null) && !v.fits(t) {
            return Err(CommittableError::PartitionType { index: i });
        }
    }
    for (i, s) in f.value_stats.iter().enumerate() {
        let col = table
            .field(&s.column)
            .filter(|c| c.ty.kind != ColumnType::Other)
            .ok_or_else(|| CommittableError::BadStatsColumn(s.column.clone()))?;
        if f.value_stats[..i].iter().any(|p| p.column == s.column) {
            return Err(CommittableError::BadStatsColumn(s.column.clone()));
        }
        let ok = |d: &Datum| matches!(d, Datum::Null) || d.fits(&col.ty);
        if !ok(&s.min) || !ok(&s.max) {
            return Err(CommittableError::StatsType(s.column.clone()));
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::test_schema;
    use alloc::string::ToString;
    use alloc::vec;

    fn table() -> TableSchema {
        test_schema(
            &[
                ("id", "BIGINT"),
                ("name", "STRING"),
                ("dt", "STRING"),
                ("h", "INT"),
            ],
            &["dt", "h"],
        )
    }

    fn file() -> DataFile {
        DataFile {
            file_name: "data-1-0.parquet".to_string(),
            file_size: 1234,
            row_count: 10,
            schema_id: 0,
            min_sequence_number: 0,
            max_sequence_number: 9,
            creation_time_millis: 1_700_000_000_000,
            partition: vec![Datum::Str("2024-01-01".to_string()), Datum::Int(3)],
            value_stats: vec![ColumnStats {
                column: "id".to_string(),
                min: Datum::Long(1),
                max: Datum::Long(10),
                null_count: Some(0),
            }],
        }
    }

    #[test]
    fn golden_bytes_minimal() {
        let f = DataFile {
            partition: vec![],
            value_stats: vec![],
            ..file()
        };
        let b = encode(&f);
        let mut want = b"PCM\x01".to_vec();
        want.extend_from_slice(&16u32.to_le_bytes());
        want.extend_from_slice(b"data-1-0.parquet");
        for x in [1234u64, 10, 0, 0, 9, 1_700_000_000_000] {
            want.extend_from_slice(&x.to_le_bytes());
        }
        want.extend_from_slice(&[0, 0, 0, 0, 0]);
        assert_eq!(b, want);
        assert_eq!(decode_unchecked(&b).unwrap(), f);
    }

    #[test]
    fn round_trip_with_partition_and_stats() {
        let f = file();
        assert_eq!(decode(&encode(&f), &table()).unwrap(), f);
        let g = DataFile {
            value_stats: vec![ColumnStats {
                null_count: None,
                ..f.value_stats[0].clone()
            }],
            partition: vec![Datum::Null, Datum::Int(-1)],
            ..f
        };
        assert_eq!(decode(&encode(&g), &table()).unwrap(), g);
    }

    #[test]
    fn every_validation_error() {
        let t = table();
        let enc = |f: DataFile| encode(&f);
        for bad in ["", ".", "..", "a/b", "..\\x", "a\nb"] {
            let e = decode(
                &enc(DataFile {
                    file_name: bad.to_string(),
                    ..file()
                }),
                &t,
            );
            assert_eq!(e, Err(CommittableError::BadFileName), "{}", bad);
        }
        let long = "x".repeat(MAX_FILE_NAME + 1);
        assert_eq!(
            decode(
                &enc(DataFile {
                    file_name: long,
                    ..file()
                }),
                &t
            ),
            Err(CommittableError::BadFileName)
        );
        assert_eq!(
            decode(
                &enc(DataFile {
                    schema_id: 1,
                    ..file()
                }),
                &t
            ),
            Err(CommittableError::SchemaIdMismatch {
                expected: 0,
                found: 1
            })
        );
        assert_eq!(
            decode(
                &enc(DataFile {
                    row_count: u64::MAX,
                    ..file()
                }),
                &t
            ),
            Err(CommittableError::OutOfRange)
        );
        assert_eq!(
            decode(
                &enc(DataFile {
                    partition: vec![Datum::Int(1)],
                    ..file()
                }),
                &t
            ),
            Err(CommittableError::PartitionArity {
                expected: 2,
                found: 1
            })
        );
        assert_eq!(
            decode(
                &enc(DataFile {
                    partition: vec![Datum::Int(1), Datum::Int(1)],
                    ..file()
                }),
                &t
            ),
            Err(CommittableError::PartitionType { index: 0 })
        );
        let stats = |c: &str, v: Datum| {
            vec![ColumnStats {
                column: c.to_string(),
                min: v.clone(),
                max: v,
                null_count: None,
            }]
        };
        assert_eq!(
            decode(
                &enc(DataFile {
                    value_stats: stats("nope", Datum::Null),
                    ..file()
                }),
                &t
            ),
            Err(CommittableError::BadStatsColumn("nope".to_string()))
        );
        let mut twice = stats("id", Datum::Long(1));
        twice.extend(stats("id", Datum::Long(1)));
        assert_eq!(
            decode(
                &enc(DataFile {
                    value_stats: twice,
                    ..file()
                }),
                &t
            ),
            Err(CommittableError::BadStatsColumn("id".to_string()))
        );
        assert_eq!(
            decode(
                &enc(DataFile {
                    value_stats: stats("id", Datum::Int(1)),
                    ..file()
                }),
                &t
            ),
            Err(CommittableError::StatsType("id".to_string()))
        );
        let mut minus_two = encode(&file());
        let n = minus_two.len();
        minus_two[n - 8..].copy_from_slice(&(-2i64).to_le_bytes()); // the null count
        assert_eq!(decode(&minus_two, &t), Err(CommittableError::OutOfRange));
        let b = encode(&file());
        assert_eq!(
            decode(&b[..b.len() - 1], &t),
            Err(CommittableError::Truncated)
        );
        let mut extra = b.clone();
        extra.push(0);
        assert_eq!(decode(&extra, &t), Err(CommittableError::TrailingBytes));
        assert_eq!(decode(b"PC", &t), Err(CommittableError::BadMagic));
        assert_eq!(decode(b"XYZ\x01", &t), Err(CommittableError::BadMagic));
        assert_eq!(
            decode(b"PCM\x02", &t),
            Err(CommittableError::UnsupportedVersion(2))
        );
        let mut tag = encode(&DataFile {
            value_stats: vec![],
            ..file()
        });
        let at = tag.len() - 1 - 4 - 1; // the last partition value's tag (INT 3)
        tag[at] = 9;
        assert_eq!(decode(&tag, &t), Err(CommittableError::BadValueTag(9)));
        let mut utf = encode(&file());
        utf[8] = 0xff; // first byte of the file name
        assert_eq!(decode(&utf, &t), Err(CommittableError::Utf8));
    }
}

/// Paimon's default partition name for null (and blank) values.
pub const DEFAULT_PARTITION_NAME: &str = "__DEFAULT_PARTITION__";

/// Escapes a partition path component as Paimon's `PartitionPathUtils.escapePathName`.
fn escape_into(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for ch in s.chars() {
        let c = ch as u32;
        if c < 0x20 || c == 0x7f || "\"#%'*/:=?\\{}[]^".contains(ch) {
            out.push('%');
            out.push(HEX[(c >> 4) as usize & 15] as char);
            out.push(HEX[(c & 15) as usize] as char);
        } else {
            out.push(ch);
        }
    }
}

/// Where a data file lies under the table: `k1=v1/k2=v2/bucket-0/<file name>`. `None` for
/// a partition type whose path form this crate does not produce (DATE).
pub fn data_file_key(table: &TableSchema, f: &DataFile) -> Option<String> {
    let mut out = String::new();
    for (k, v) in table.partition_keys.iter().zip(&f.partition) {
        escape_into(&mut out, k);
        out.push('=');
        let kind = table.field(k)?.ty.kind;
        match v {
            Datum::Null => out.push_str(DEFAULT_PARTITION_NAME),
            Datum::Str(s) if s.trim().is_empty() => out.push_str(DEFAULT_PARTITION_NAME),
            Datum::Str(s) => escape_into(&mut out, s),
            Datum::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Datum::Int(_) if kind == ColumnType::Date => return None,
            Datum::Int(x) => crate::push_i64(&mut out, *x as i64),
            Datum::Long(x) => crate::push_i64(&mut out, *x),
        }
        out.push('/');
    }
    out.push_str("bucket-0/");
    out.push_str(&f.file_name);
    Some(out)
}

#[cfg(test)]
mod path_tests {
    use super::*;
    use crate::schema::test_schema;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn data_file_keys() {
        let t = test_schema(&[("a", "STRING"), ("b", "INT"), ("c", "DATE")], &["a", "b"]);
        let f = DataFile {
            file_name: "data-x-0.parquet".to_string(),
            file_size: 1,
            row_count: 1,
            schema_id: 0,
            min_sequence_number: 0,
            max_sequence_number: 0,
            creation_time_millis: 0,
            partition: vec![Datum::Str("x/y=z".to_string()), Datum::Int(-3)],
            value_stats: vec![],
        };
        assert_eq!(
            data_file_key(&t, &f).unwrap(),
            "a=x%2Fy%3Dz/b=-3/bucket-0/data-x-0.parquet"
        );
        let g = DataFile {
            partition: vec![Datum::Null, Datum::Int(1)],
            ..f
        };
        assert_eq!(
            data_file_key(&t, &g).unwrap(),
            "a=__DEFAULT_PARTITION__/b=1/bucket-0/data-x-0.parquet"
        );
    }
}
