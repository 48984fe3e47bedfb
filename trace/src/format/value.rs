//! The value types of trace fields: integers in a range, checkpoints (a
//! number or `"end"`), `null`-able values and hex bytes, each with the
//! message TRACE-FORMAT's readers expect ("expected an integer in 0..=N,
//! got -1").
//!
//! Every scalar reads the JSON value whatever it is ([`Seen`]) and then
//! checks it, so that a wrong value is described as written. serde_json
//! hands integers beyond u64/i64, fractions and exponents over as f64; the
//! number's literal is recovered from [`literals`] so that
//! 18446744073709551616 is not shown as 18446744073709552000.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use sink_coordinator::{END, MAX_CHECKPOINT};

use super::error::clip;

/// A JSON value as far as a field's check needs it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Seen {
    Null,
    Bool(bool),
    /// An integer literal that fits i128 (`-0` is 0).
    Int(i128),
    /// An integer literal beyond i128, as written (clipped).
    BigInt(String),
    /// A fraction or an exponent, as written when known.
    NonInteger(String),
    /// The first 40 characters and whether there were more.
    Str(String, bool),
    List,
    Object,
}

impl Seen {
    /// A short description for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Seen::Null => "null".into(),
            Seen::Bool(b) => b.to_string(),
            Seen::Int(i) => i.to_string(),
            Seen::BigInt(lit) => format!("the integer {lit}, which is out of range"),
            Seen::NonInteger(lit) => format!("the non-integer number {lit}"),
            Seen::Str(s, cut) => format!("the string {s:?}{}", if *cut { "..." } else { "" }),
            Seen::List => "a list".into(),
            Seen::Object => "an object".into(),
        }
    }
}

impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SeenVisitor)
    }
}

struct SeenVisitor;

impl<'de> Visitor<'de> for SeenVisitor {
    type Value = Seen;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Seen, E> {
        Ok(Seen::Null)
    }
    fn visit_none<E>(self) -> Result<Seen, E> {
        Ok(Seen::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Seen, E> {
        Ok(Seen::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Seen, E> {
        Ok(Seen::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Seen, E> {
        Ok(Seen::Int(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Seen, E> {
        Ok(literals::lookup(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Seen, E> {
        let shown: String = v.chars().take(40).collect();
        let cut = shown.len() < v.len();
        Ok(Seen::Str(shown, cut))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Seen, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Seen::List)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Seen, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Seen::Object)
    }
}

/// A field value checked from what was [`Seen`].
pub(crate) trait Scalar: Sized {
    /// What the field takes, for messages ("an integer in 0..=4294967295").
    const EXPECTED: &'static str;
    /// The value, or `None` when `seen` is not one.
    fn check(seen: &Seen) -> Option<Self>;
}

fn read<'de, T: Scalar, D: Deserializer<'de>>(d: D, expected: &str) -> Result<T, D::Error> {
    let seen = Seen::deserialize(d)?;
    T::check(&seen)
        .ok_or_else(|| de::Error::custom(format!("expected {expected}, got {}", seen.describe())))
}

/// `Deserialize` for scalars (a blanket impl over [`Scalar`] is not allowed).
macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                read(d, <$t as Scalar>::EXPECTED)
            }
        }
    )*};
}

fn int_in(seen: &Seen, lo: i128, hi: i128) -> Option<i128> {
    match seen {
        Seen::Int(i) if (lo..=hi).contains(i) => Some(*i),
        _ => None,
    }
}

/// A field of an unsigned integer type: any integer of its range.
macro_rules! unsigned_field {
    ($(#[$doc:meta])* $name:ident($int:ty), $expected:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
        #[serde(transparent)]
        pub(crate) struct $name(pub $int);

        impl Scalar for $name {
            const EXPECTED: &'static str = $expected;
            fn check(seen: &Seen) -> Option<Self> {
                int_in(seen, 0, <$int>::MAX.into())
                    .and_then(|i| <$int>::try_from(i).ok().map($name))
            }
        }
    };
}

unsigned_field!(
    /// A `u32` field (subtask, attempt, parallelism).
    U32(u32),
    "an integer in 0..=4294967295"
);
unsigned_field!(
    /// A `u64` field (times, fault counts).
    U64(u64),
    "an integer in 0..=18446744073709551615"
);

/// A watermark (an `i64`; see [`OrNull`] for `null`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct Watermark(pub i64);

impl Scalar for Watermark {
    const EXPECTED: &'static str =
        "a watermark (an integer in -9223372036854775808..=9223372036854775807)";
    fn check(seen: &Seen) -> Option<Self> {
        int_in(seen, i64::MIN.into(), i64::MAX.into())
            .and_then(|i| i64::try_from(i).ok().map(Watermark))
    }
}

fn checkpoint_number(seen: &Seen) -> Option<u64> {
    int_in(seen, 0, MAX_CHECKPOINT.into()).and_then(|i| u64::try_from(i).ok())
}

/// A checkpoint: `0 ..= 2^63-2` or `"end"` (END).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checkpoint(pub u64);

impl Scalar for Checkpoint {
    const EXPECTED: &'static str = "a checkpoint number in 0..=9223372036854775806 or \"end\"";
    fn check(seen: &Seen) -> Option<Self> {
        match seen {
            Seen::Str(s, false) if s == "end" => Some(Checkpoint(END)),
            _ => checkpoint_number(seen).map(Checkpoint),
        }
    }
}

impl Serialize for Checkpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0 == END {
            s.serialize_str("end")
        } else {
            s.serialize_u64(self.0)
        }
    }
}

/// A checkpoint number, where `"end"` is not allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct CheckpointNumber(pub u64);

impl Scalar for CheckpointNumber {
    const EXPECTED: &'static str =
        "a checkpoint number in 0..=9223372036854775806 (\"end\" is not allowed here)";
    fn check(seen: &Seen) -> Option<Self> {
        checkpoint_number(seen).map(CheckpointNumber)
    }
}

scalar!(U32, U64, Watermark, Checkpoint, CheckpointNumber);

/// A value or `null`; unlike `Option` in a serde derive, a field of this
/// type must be present (`"checkpoint": null` is not `checkpoint` left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OrNull<T>(pub Option<T>);

impl<T> Default for OrNull<T> {
    fn default() -> Self {
        OrNull(None)
    }
}

impl<'de, T: Scalar> Deserialize<'de> for OrNull<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let seen = Seen::deserialize(d)?;
        if seen == Seen::Null {
            return Ok(OrNull(None));
        }
        T::check(&seen).map(|v| OrNull(Some(v))).ok_or_else(|| {
            de::Error::custom(format!(
                "expected {} or null, got {}",
                T::EXPECTED,
                seen.describe()
            ))
        })
    }
}

impl<T: Serialize> Serialize for OrNull<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Some(v) => v.serialize(s),
            None => s.serialize_unit(),
        }
    }
}

/// For an optional field that must not be `null` when present
/// (`#[serde(default, deserialize_with = "present")]`): serde's `Option`
/// would take `null` as absent.
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Raw bytes written as hex (`state_hex`); either case is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hex(pub Vec<u8>);

impl<'de> Deserialize<'de> for Hex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        hex::decode(&text)
            .map(Hex)
            .map_err(|e| de::Error::custom(format!("not valid hex: {e}")))
    }
}

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(&self.0))
    }
}

/// The number literals of the document being parsed, for [`SeenVisitor`].
pub(crate) mod literals {
    use std::cell::RefCell;

    use super::{clip, Seen};

    thread_local! {
        /// (f64 bits, literal) of every literal serde_json reads as f64.
        static TABLE: RefCell<Vec<(u64, String)>> = const { RefCell::new(Vec::new()) };
    }

    /// Keeps the literals of `bytes` until dropped (one parse).
    pub(crate) struct Scope(());

    impl Drop for Scope {
        fn drop(&mut self) {
            TABLE.with(|t| t.borrow_mut().clear());
        }
    }

    /// Records the number literals of `bytes` (valid JSON, or the parse
    /// fails before any lookup matters) that serde_json reads as f64.
    pub(crate) fn scope(bytes: &[u8]) -> Scope {
        let table: Vec<(u64, String)> = number_literals(bytes)
            .filter_map(|text| {
                let exact =
                    text.parse::<u64>().is_ok() || (text.parse::<i64>().is_ok() && text != "-0");
                if exact {
                    return None;
                }
                // serde_json's own rounding may differ in the last bit from
                // std's; the lookup also accepts the neighbouring values.
                let value: f64 = text.parse().ok()?;
                Some((value.to_bits(), clip(text, 60)))
            })
            .collect();
        TABLE.with(|t| *t.borrow_mut() = table);
        Scope(())
    }

    /// What an f64 from serde_json was, as written when known.
    pub(crate) fn lookup(value: f64) -> Seen {
        let bits = value.to_bits();
        let literal = TABLE.with(|t| {
            t.borrow()
                .iter()
                .find(|(b, _)| b.abs_diff(bits) <= 1)
                .map(|(_, lit)| lit.clone())
        });
        let Some(literal) = literal else {
            return Seen::NonInteger(value.to_string());
        };
        if is_integer_literal(&literal) {
            match literal.parse::<i128>() {
                Ok(i) => Seen::Int(i),
                Err(_) => Seen::BigInt(literal),
            }
        } else {
            Seen::NonInteger(literal)
        }
    }

    /// `-?[0-9]+` (as opposed to a fraction or an exponent).
    fn is_integer_literal(text: &str) -> bool {
        let digits = text.strip_prefix('-').unwrap_or(text);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    }

    /// The number literals of a JSON text, in order: every run of number
    /// characters outside a string.
    fn number_literals(bytes: &[u8]) -> impl Iterator<Item = &str> {
        let mut i = 0;
        std::iter::from_fn(move || {
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i += 1;
                        while i < bytes.len() && bytes[i] != b'"' {
                            i += if bytes[i] == b'\\' { 2 } else { 1 };
                        }
                        i += 1;
                    }
                    b'-' | b'0'..=b'9' => {
                        let start = i;
                        while i < bytes.len()
                            && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                        {
                            i += 1;
                        }
                        return Some(std::str::from_utf8(&bytes[start..i]).unwrap_or(""));
                    }
                    _ => i += 1,
                }
            }
            None
        })
    }
}

/// An object read as `T`: serde's derived structs also take a list of the
/// fields in order (`[2, "job"]`), which a trace must not be.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        d.deserialize_map(ObjVisitor(std::marker::PhantomData))
    }
}

impl<T: Serialize> Serialize for Obj<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}
