//! Paimon's BinaryRow, serialized as Paimon stores it in manifests
//! (`SerializationUtils.serializeBinaryRow`): a 4-byte big-endian arity, then the row.
//!
//! Row layout (all little-endian): a null bit set of `((arity + 63 + 8) / 64) * 8` bytes
//! whose first byte is the row kind (0 = +I) and whose bit `8 + i` marks field `i` null;
//! then one 8-byte slot per field; then the variable part. Fixed-width values sit in their
//! slot (BOOLEAN/TINYINT 1 byte, SMALLINT 2, INT/DATE 4, BIGINT 8, rest zero). A string of
//! at most 7 bytes sits in its slot with `0x80 | len` in the slot's last byte; a longer
//! one goes to the variable part (padded to 8 bytes) and the slot holds
//! `offset << 32 | len`, the offset counted from the row's start (after the arity).

use crate::types::{ColumnType, Datum};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// The serialized empty row (arity 0): what Paimon writes for empty stats and keys.
pub const EMPTY_ROW: [u8; 12] = [0; 12];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowError {
    /// Bytes shorter than the layout needs, or a variable part out of bounds.
    Truncated,
    /// The arity prefix is not the number of expected fields.
    Arity { expected: usize, found: usize },
    /// Field `index` has a value its type cannot hold (or a type this crate cannot encode).
    Type { index: usize },
    /// A string field is not UTF-8.
    Utf8 { index: usize },
}

fn null_bits_width(arity: usize) -> usize {
    (arity + 63 + 8) / 64 * 8
}

/// Encodes `values` (one per type) as a serialized BinaryRow.
pub fn encode_row(types: &[ColumnType], values: &[Datum]) -> Result<Vec<u8>, RowError> {
    if types.len() != values.len() {
        return Err(RowError::Arity {
            expected: types.len(),
            found: values.len(),
        });
    }
    let arity = types.len();
    let nb = null_bits_width(arity);
    let fixed = nb + 8 * arity;
    let mut row = vec![0u8; fixed];
    let mut var: Vec<u8> = Vec::new();
    for (i, (ty, v)) in types.iter().zip(values).enumerate() {
        let slot = nb + 8 * i;
        match (ty, v) {
            (ColumnType::Other, _) => return Err(RowError::Type { index: i }),
            (_, Datum::Null) => {
                let bit = 8 + i;
                row[bit / 8] |= 1 << (bit % 8);
            }
            (ColumnType::Boolean, Datum::Bool(b)) => row[slot] = *b as u8,
            (ColumnType::TinyInt, Datum::Int(x)) if i8::try_from(*x).is_ok() => {
                row[slot] = *x as i8 as u8
            }
            (ColumnType::SmallInt, Datum::Int(x)) if i16::try_from(*x).is_ok() => {
                row[slot..slot + 2].copy_from_slice(&(*x as i16).to_le_bytes())
            }
            (ColumnType::Int | ColumnType::Date, Datum::Int(x)) => {
                row[slot..slot + 4].copy_from_slice(&x.to_le_bytes())
            }
            (ColumnType::BigInt, Datum::Long(x)) => {
                row[slot..slot + 8].copy_from_slice(&x.to_le_bytes())
            }
            (ColumnType::String, Datum::Str(s)) => {
                let b = s.as_bytes();
                if b.len() <= 7 {
                    row[slot..slot + b.len()].copy_from_slice(b);
                    row[slot + 7] = 0x80 | b.len() as u8;
                } else {
                    let offset = (fixed + var.len()) as u64;
                    let word = offset << 32 | b.len() as u64;
                    row[slot..slot + 8].copy_from_slice(&word.to_le_bytes());
                    var.extend_from_slice(b);
                    var.resize(var.len().div_ceil(8) * 8, 0);
                }
            }
            _ => return Err(RowError::Type { index: i }),
        }
    }
    let mut out = Vec::with_capacity(4 + row.len() + var.len());
    out.extend_from_slice(&(arity as u32).to_be_bytes());
    out.extend_from_slice(&row);
    out.extend_from_slice(&var);
    Ok(out)
}

/// Decodes a serialized BinaryRow of the given field types. Empty bytes (as some
/// writers store an absent row) decode to all-null values.
pub fn decode_row(bytes: &[u8], types: &[ColumnType]) -> Result<Vec<Datum>, RowError> {
    if bytes.is_empty() {
        return Ok(vec![Datum::Null; types.len()]);
    }
    if bytes.len() < 4 {
        return Err(RowError::Truncated);
    }
    let arity = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    if arity != types.len() {
        return Err(RowError::Arity {
            expected: types.len(),
            found: arity,
        });
    }
    let row = &bytes[4..];
    let nb = null_bits_width(arity);
    if row.len() < nb + 8 * arity {
        return Err(RowError::Truncated);
    }
    let mut out = Vec::with_capacity(arity);
    for (i, ty) in types.iter().enumerate() {
        let bit = 8 + i;
        if row[bit / 8] & (1 << (bit % 8)) != 0 {
            out.push(Datum::Null);
            continue;
        }
        let slot = nb + 8 * i;
        let mut w = [0u8; 8];
        w.copy_from_slice(&row[slot..slot + 8]);
        let word = u64::from_le_bytes(w);
        let v = match ty {
            ColumnType::Boolean => Datum::Bool(w[0] != 0),
            ColumnType::TinyInt => Datum::Int(w[0] as i8 as i32),
            ColumnType::SmallInt => Datum::Int(i16::from_le_bytes([w[0], w[1]]) as i32),
            ColumnType::Int | ColumnType::Date => {
                Datum::Int(i32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            }
            ColumnType::BigInt => Datum::Long(word as i64),
            ColumnType::String => {
                let data: &[u8] = if w[7] & 0x80 != 0 {
                    let len = (w[7] & 0x7f) as usize;
                    if len > 7 {
                        return Err(RowError::Truncated);
                    }
                    &row[slot..slot + len]
                } else {
                    let off = (word >> 32) as usize;
                    let len = (word & 0xffff_ffff) as usize;
                    row.get(off..off.checked_add(len).ok_or(RowError::Truncated)?)
                        .ok_or(RowError::Truncated)?
                };
                let s = core::str::from_utf8(data).map_err(|_| RowError::Utf8 { index: i })?;
                Datum::Str(String::from(s))
            }
            ColumnType::Other => return Err(RowError::Type { index: i }),
        };
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn empty_row_is_paimons() {
        assert_eq!(encode_row(&[], &[]).unwrap(), EMPTY_ROW.to_vec());
        assert_eq!(decode_row(&EMPTY_ROW, &[]).unwrap(), vec![]);
    }

    #[test]
    fn golden_int_and_short_string() {
        // Checked against pypaimon's GenericRowSerializer for (INT 7, STRING "ab").
        let b = encode_row(
            &[ColumnType::Int, ColumnType::String],
            &[Datum::Int(7), Datum::Str("ab".to_string())],
        )
        .unwrap();
        let mut want = vec![0, 0, 0, 2];
        want.extend_from_slice(&[0; 8]);
        want.extend_from_slice(&[7, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&[b'a', b'b', 0, 0, 0, 0, 0, 0x82]);
        assert_eq!(b, want);
    }

    #[test]
    fn golden_long_string_and_null() {
        let b = encode_row(
            &[ColumnType::String, ColumnType::BigInt],
            &[Datum::Str("2024-01-01".to_string()), Datum::Null],
        )
        .unwrap();
        let mut want = vec![0, 0, 0, 2];
        want.extend_from_slice(&[0, 0b10, 0, 0, 0, 0, 0, 0]); // field 1 null: bit 9
                                                              // offset 24 (8 null bytes + 2 slots), length 10
        want.extend_from_slice(&[10, 0, 0, 0, 24, 0, 0, 0]);
        want.extend_from_slice(&[0; 8]);
        want.extend_from_slice(b"2024-01-01\0\0\0\0\0\0");
        assert_eq!(b, want);
        assert_eq!(
            decode_row(&b, &[ColumnType::String, ColumnType::BigInt]).unwrap(),
            vec![Datum::Str("2024-01-01".to_string()), Datum::Null]
        );
    }

    #[test]
    fn round_trips_every_type() {
        let types = [
            ColumnType::Boolean,
            ColumnType::TinyInt,
            ColumnType::SmallInt,
            ColumnType::Int,
            ColumnType::BigInt,
            ColumnType::Date,
            ColumnType::String,
        ];
        let vals = vec![
            Datum::Bool(true),
            Datum::Int(-5),
            Datum::Int(-300),
            Datum::Int(i32::MIN),
            Datum::Long(i64::MAX),
            Datum::Int(19000),
            Datum::Str("héllo wörld".to_string()),
        ];
        let b = encode_row(&types, &vals).unwrap();
        assert_eq!(decode_row(&b, &types).unwrap(), vals);
    }

    #[test]
    fn errors() {
        assert_eq!(
            encode_row(&[ColumnType::Int], &[Datum::Long(1)]),
            Err(RowError::Type { index: 0 })
        );
        assert_eq!(
            encode_row(&[ColumnType::TinyInt], &[Datum::Int(1000)]),
            Err(RowError::Type { index: 0 })
        );
        assert_eq!(
            encode_row(&[ColumnType::Other], &[Datum::Null]),
            Err(RowError::Type { index: 0 })
        );
        assert_eq!(
            decode_row(&EMPTY_ROW, &[ColumnType::Int]),
            Err(RowError::Arity {
                expected: 1,
                found: 0
            })
        );
        assert_eq!(decode_row(&[0, 0, 0], &[]), Err(RowError::Truncated));
        let mut b = encode_row(
            &[ColumnType::String],
            &[Datum::Str("abcdefghij".to_string())],
        )
        .unwrap();
        b.truncate(b.len() - 8);
        assert_eq!(
            decode_row(&b, &[ColumnType::String]),
            Err(RowError::Truncated)
        );
        let mut b = encode_row(&[ColumnType::String], &[Datum::Str("ab".to_string())]).unwrap();
        b[12] = 0xff;
        assert_eq!(
            decode_row(&b, &[ColumnType::String]),
            Err(RowError::Utf8 { index: 0 })
        );
        assert_eq!(
            decode_row(&[], &[ColumnType::Int]).unwrap(),
            vec![Datum::Null]
        );
    }
}
