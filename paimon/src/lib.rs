//! Apache Paimon append-table metadata as pure, deterministic functions: the schema file,
//! the committable (one new data file's metadata), BinaryRow, manifest and manifest-list
//! Avro files (with a bounded merge rule), snapshot JSON with this project's exactly-once
//! marks and the subtask of each new file (`subtasks`), `LATEST`/`EARLIEST` hints and
//! tags, and a manifest's entries read back as committables (`manifest::decode_manifest_files`,
//! for readers of the table). No storage calls: the caller gets, puts and
//! puts-if-absent the bytes. Formats follow Apache Paimon 1.x/pypaimon 2.1 (see
//! `docs/paimon.md`).
#![no_std]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod avro;
pub mod binary_row;
pub mod committable;
pub mod json;
pub mod manifest;
pub mod naming;
pub mod schema;
pub mod snapshot;
pub mod subtasks;
pub mod types;

use alloc::string::String;

pub use binary_row::{decode_row, encode_row, RowError, EMPTY_ROW};
pub use committable::{ColumnStats, CommittableError, DataFile};
pub use schema::{decode_schema, encode_schema, CreateTable, SchemaError, TableSchema};
pub use types::{ColumnType, Datum, FieldType};

/// Appends the decimal form of `v` (no `core::fmt`, to keep the wasm small).
pub(crate) fn push_i64(s: &mut String, v: i64) {
    if v < 0 {
        s.push('-');
    }
    let mut u = v.unsigned_abs();
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        s.push(b as char);
    }
}

/// Parses a decimal i64 (optional `-`, digits only, no overflow).
pub(crate) fn parse_i64(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: i64 = 0;
    for b in digits.bytes() {
        let d = (b - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d)?
        } else {
            v.checked_add(d)?
        };
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_round_trips() {
        for v in [0, 1, -1, 42, i64::MAX, i64::MIN] {
            let mut s = String::new();
            push_i64(&mut s, v);
            assert_eq!(parse_i64(&s), Some(v));
        }
        assert_eq!(parse_i64(""), None);
        assert_eq!(parse_i64("-"), None);
        assert_eq!(parse_i64("1a"), None);
        assert_eq!(parse_i64("9223372036854775808"), None);
    }
}
