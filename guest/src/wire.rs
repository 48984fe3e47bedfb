//! Versioned postcard encoding shared by every persisted record (coordinator
//! state, writer state, snapshots, tags).
//!
//! Layout: `varint(version) ++ postcard(body)`. Decoding borrows byte strings
//! from the input and never pre-allocates from a length prefix, so hostile
//! bytes cannot make it allocate more than a small multiple of their size;
//! truncated input, trailing bytes and unknown versions are rejected.
//!
//! Byte strings (committables) are written through [`Bytes`](crate::wire::Bytes), i.e. serde's
//! `serialize_bytes`: postcard encodes them exactly as it encodes a `u8`
//! sequence (varint length, then the raw bytes), but in one copy instead of
//! one serializer call per byte (which cost ~32 wasm instructions per byte
//! and made a 1 GiB commit take minutes).

use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;
use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeSeq, Serializer};

/// A borrowed byte string that serializes as bytes (see the module docs);
/// it dereferences to `[u8]` and deserializes borrowing from the input.
pub type Bytes<'a> = &'a serde_bytes::Bytes;

/// Views `b` as a [`Bytes`].
pub fn bytes(b: &[u8]) -> Bytes<'_> {
    serde_bytes::Bytes::new(b)
}

/// A sequence that deserializes element by element without trusting the
/// length prefix for pre-allocation (serde's `Vec` reserves up to 1 MiB).
/// Every element type used with it consumes at least one input byte.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Seq<T>(pub Vec<T>);

impl<T: Serialize> Serialize for Seq<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in &self.0 {
            seq.serialize_element(item)?;
        }
        seq.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Seq<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Seq<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Seq<T>, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Seq(items))
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

/// Why bytes could not be decoded; the caller turns it into its own error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// No bytes at all.
    Empty,
    /// A format version this code does not know.
    UnknownVersion(u32),
    /// Truncated or malformed.
    Malformed,
    /// Bytes left over after the record.
    TrailingBytes(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Empty => f.write_str("no bytes"),
            DecodeError::UnknownVersion(v) => write!(f, "unknown format version {v}"),
            DecodeError::Malformed => f.write_str("truncated or malformed bytes"),
            DecodeError::TrailingBytes(n) => write!(f, "{n} trailing bytes"),
        }
    }
}

/// Encodes `body` behind a version header.
///
/// The output is sized exactly before it is written: growing a `Vec` by
/// doubling would need up to three times a large snapshot's size at once.
pub fn encode<T: Serialize>(version: u32, body: &T) -> Vec<u8> {
    let value = (version, body);
    // Serializing plain structs into a Vec cannot fail; an empty result would
    // be rejected on decode rather than trap here.
    let size = postcard::experimental::serialized_size(&value).unwrap_or(0);
    postcard::to_extend(&value, Vec::with_capacity(size)).unwrap_or_default()
}

/// As [`encode`], with the output's size counted by the caller (`size`):
/// only the capacity depends on it.
pub fn encode_sized<T: Serialize>(version: u32, body: &T, size: usize) -> Vec<u8> {
    postcard::to_extend(&(version, body), Vec::with_capacity(size)).unwrap_or_default()
}

/// Splits off the version header.
pub fn version(bytes: &[u8]) -> Result<(u32, &[u8]), DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    postcard::take_from_bytes::<u32>(bytes).map_err(|_| DecodeError::Malformed)
}

/// Decodes a body that must use the whole input.
pub fn body<'a, T: Deserialize<'a>>(rest: &'a [u8]) -> Result<T, DecodeError> {
    let (value, trailing) =
        postcard::take_from_bytes::<T>(rest).map_err(|_| DecodeError::Malformed)?;
    if !trailing.is_empty() {
        return Err(DecodeError::TrailingBytes(trailing.len()));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_round_trips_and_rejects_lying_length() {
        let bytes = encode(1, &Seq(alloc::vec![1u32, 2, 3]));
        let (v, rest) = version(&bytes).unwrap();
        assert_eq!(v, 1);
        assert_eq!(body::<Seq<u32>>(rest).unwrap().0, alloc::vec![1, 2, 3]);
        // A length prefix of 2^32-1 with no elements behind it.
        let lying = [0xff, 0xff, 0xff, 0xff, 0x0f];
        assert_eq!(body::<Seq<u32>>(&lying), Err(DecodeError::Malformed));
    }

    #[test]
    fn bytes_encode_like_a_byte_sequence() {
        // The format of every persisted record depends on this: byte strings
        // written as bytes must read back as the `u8` sequences of old records.
        for len in [0usize, 1, 127, 128, 300, 20_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let as_seq = encode(
                1,
                &(5u32, data.as_slice(), Seq(alloc::vec![data.as_slice()])),
            );
            let as_bytes = encode(1, &(5u32, bytes(&data), Seq(alloc::vec![bytes(&data)])));
            assert_eq!(as_seq, as_bytes, "length {len}");
            let (_, rest) = version(&as_bytes).unwrap();
            let (n, b, s) = body::<(u32, Bytes, Seq<Bytes>)>(rest).unwrap();
            assert_eq!((n, &**b, &**s.0[0]), (5, data.as_slice(), data.as_slice()));
        }
    }

    #[test]
    fn trailing_and_empty_are_rejected() {
        let mut bytes = encode(1, &7u32);
        bytes.push(0);
        let (_, rest) = version(&bytes).unwrap();
        assert_eq!(body::<u32>(rest), Err(DecodeError::TrailingBytes(1)));
        assert_eq!(version(&[]), Err(DecodeError::Empty));
    }
}
