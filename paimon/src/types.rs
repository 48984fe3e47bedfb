//! Column types this crate can serialize into Paimon's BinaryRow, and typed values.

use alloc::string::String;
use core::cmp::Ordering;

/// The Paimon column types whose values this crate encodes (partition values, stats).
/// Other types may appear in a table as data columns; they are `Other` and cannot be
/// partition keys or carry stats here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    /// Days since the epoch, stored like INT.
    Date,
    /// STRING, VARCHAR(n), CHAR(n): UTF-8.
    String,
    Other,
}

/// A column type as written in Paimon's schema JSON (`"INT"`, `"VARCHAR(10) NOT NULL"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldType {
    pub kind: ColumnType,
    pub nullable: bool,
}

impl FieldType {
    /// Parses Paimon's type string. Only the prefix is matched (ASCII, case-insensitive),
    /// so `VARCHAR(10)` and `CHAR(3)` are strings; anything else is `Other`.
    pub fn parse(text: &str) -> FieldType {
        let t = text.trim();
        let (base, nullable) = match strip_suffix_ci(t, "NOT NULL") {
            Some(rest) => (rest.trim_end(), false),
            None => (t, true),
        };
        let head = base.split('(').next().unwrap_or("").trim();
        let kind = if eq_ci(head, "BOOLEAN") {
            ColumnType::Boolean
        } else if eq_ci(head, "TINYINT") {
            ColumnType::TinyInt
        } else if eq_ci(head, "SMALLINT") {
            ColumnType::SmallInt
        } else if eq_ci(head, "INT") || eq_ci(head, "INTEGER") {
            ColumnType::Int
        } else if eq_ci(head, "BIGINT") {
            ColumnType::BigInt
        } else if eq_ci(head, "DATE") {
            ColumnType::Date
        } else if eq_ci(head, "STRING") || eq_ci(head, "VARCHAR") || eq_ci(head, "CHAR") {
            ColumnType::String
        } else {
            ColumnType::Other
        };
        FieldType { kind, nullable }
    }
}

fn eq_ci(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .all(|(x, y)| x.to_ascii_uppercase() == y)
}

/// Byte-wise (never char-boundary) suffix strip, so no slicing can panic.
fn strip_suffix_ci<'a>(s: &'a str, suffix: &str) -> Option<&'a str> {
    let (sb, xb) = (s.as_bytes(), suffix.as_bytes());
    if sb.len() < xb.len() {
        return None;
    }
    let cut = sb.len() - xb.len();
    if sb[cut..]
        .iter()
        .zip(xb)
        .all(|(a, b)| a.to_ascii_uppercase() == *b)
    {
        // `suffix` is ASCII, so `cut` is a char boundary.
        s.get(..cut)
    } else {
        None
    }
}

/// A value of a supported column type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Datum {
    Null,
    Bool(bool),
    /// TINYINT, SMALLINT, INT and DATE values.
    Int(i32),
    Long(i64),
    Str(String),
}

impl Datum {
    /// Whether this value can be stored in a column of `ty` (null only if nullable).
    pub fn fits(&self, ty: &FieldType) -> bool {
        match (self, ty.kind) {
            (Datum::Null, ColumnType::Other) => false,
            (Datum::Null, _) => ty.nullable,
            (Datum::Bool(_), ColumnType::Boolean) => true,
            (Datum::Int(v), ColumnType::TinyInt) => *v >= i8::MIN as i32 && *v <= i8::MAX as i32,
            (Datum::Int(v), ColumnType::SmallInt) => *v >= i16::MIN as i32 && *v <= i16::MAX as i32,
            (Datum::Int(_), ColumnType::Int | ColumnType::Date) => true,
            (Datum::Long(_), ColumnType::BigInt) => true,
            (Datum::Str(_), ColumnType::String) => true,
            _ => false,
        }
    }

    /// Paimon's order for stats: numbers numerically, strings byte-wise (as BinaryString).
    /// Values of different kinds (never compared by this crate) order by kind.
    pub fn cmp_same(&self, other: &Datum) -> Ordering {
        match (self, other) {
            (Datum::Bool(a), Datum::Bool(b)) => a.cmp(b),
            (Datum::Int(a), Datum::Int(b)) => a.cmp(b),
            (Datum::Long(a), Datum::Long(b)) => a.cmp(b),
            (Datum::Str(a), Datum::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
            _ => self.rank().cmp(&other.rank()),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Datum::Null => 0,
            Datum::Bool(_) => 1,
            Datum::Int(_) => 2,
            Datum::Long(_) => 3,
            Datum::Str(_) => 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_type_strings() {
        assert_eq!(FieldType::parse("INT").kind, ColumnType::Int);
        assert!(FieldType::parse("INT").nullable);
        let t = FieldType::parse("VARCHAR(10) NOT NULL");
        assert_eq!((t.kind, t.nullable), (ColumnType::String, false));
        assert_eq!(FieldType::parse("bigint").kind, ColumnType::BigInt);
        assert_eq!(FieldType::parse("DOUBLE").kind, ColumnType::Other);
        assert_eq!(FieldType::parse("TIMESTAMP(3)").kind, ColumnType::Other);
        assert_eq!(FieldType::parse("é").kind, ColumnType::Other);
    }

    #[test]
    fn fits_checks_ranges_and_nulls() {
        let tiny = FieldType::parse("TINYINT");
        assert!(Datum::Int(127).fits(&tiny));
        assert!(!Datum::Int(128).fits(&tiny));
        assert!(!Datum::Null.fits(&FieldType::parse("INT NOT NULL")));
        assert!(!Datum::Long(1).fits(&FieldType::parse("INT")));
    }
}
