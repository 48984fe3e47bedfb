//! An entry's committables held as one buffer in their wire form.
//!
//! The packed form is exactly what the coordinator state writes for a list
//! of committables (postcard's encoding of `Vec<Vec<u8>>`): an unsigned
//! LEB128 count, then per committable an unsigned LEB128 byte length and
//! its bytes. Keeping an entry in that form costs one allocation instead of
//! one per committable plus one for the list, the state bytes are written
//! from it and read back into it with one copy, and a host that already
//! holds the bytes packed (WIT `list<u8>`) hands them over without a split.
//!
//! Only canonical encodings are held: every varint in its shortest form, no
//! trailing bytes (the rules of WIT `packed-event`, see [`crate::packed`],
//! whose [`UnpackError`](crate::packed::UnpackError) names what is wrong), so two equal lists always
//! have equal packed bytes (a resend is compared byte for byte) and
//! re-encoding state never changes it.

use alloc::vec::Vec;
use core::fmt;

/// Reads a varint of bytes already validated (see [`Committables`]'s
/// invariant); never fails, and stops at the end of the bytes.
fn read_trusted(b: &[u8], at: &mut usize) -> usize {
    let mut value = 0usize;
    let mut shift = 0u32;
    while let Some(&byte) = b.get(*at) {
        *at += 1;
        value |= usize::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
        shift += 7;
        if byte & 0x80 == 0 {
            break;
        }
    }
    value
}

use crate::packed::{leb_len as varint_len, leb_push as push_varint, leb_read, UnpackError};

/// A list of committables (opaque byte strings, in report order) held as
/// one buffer in the state's wire form (see the module docs).
///
/// Invariant: `packed` is a canonical packed list of `count` committables
/// whose lengths sum to `payload`, the longest being `largest`; the empty
/// list holds no buffer at all.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Committables {
    packed: Vec<u8>,
    count: usize,
    payload: u64,
    largest: u64,
}

impl Committables {
    /// The empty list (allocates nothing).
    pub const fn new() -> Self {
        Committables {
            packed: Vec::new(),
            count: 0,
            payload: 0,
            largest: 0,
        }
    }

    /// Takes bytes in the packed form (see the module docs), validated as
    /// [`crate::packed::unpack`] validates a `packed-event` block (a
    /// truncated block, a number not in its shortest form or too large, a
    /// count the bytes cannot hold and trailing bytes are errors, never a
    /// panic), without copying them.
    pub fn from_packed(packed: Vec<u8>) -> Result<Self, UnpackError> {
        let mut at = 0;
        let count = leb_read(&packed, &mut at)?;
        // Each committable takes at least its length byte.
        if count > (packed.len() - at) as u64 {
            return Err(UnpackError::Truncated { at: packed.len() });
        }
        let (mut payload, mut largest) = (0u64, 0u64);
        for _ in 0..count {
            let start = at;
            let len = leb_read(&packed, &mut at)?;
            let end = usize::try_from(len)
                .map_err(|_| UnpackError::TooLarge {
                    at: start,
                    value: len,
                })?
                .checked_add(at)
                .filter(|end| *end <= packed.len())
                .ok_or(UnpackError::Truncated { at })?;
            payload += len;
            largest = largest.max(len);
            at = end;
        }
        if at != packed.len() {
            return Err(UnpackError::Trailing {
                bytes: packed.len() - at,
            });
        }
        if count == 0 {
            return Ok(Committables::new());
        }
        Ok(Committables {
            packed,
            // At most the block's length (checked above).
            count: count as usize,
            payload,
            largest,
        })
    }

    /// Packs committables given one by one, in one allocation of the exact
    /// size (the items are walked twice).
    pub fn from_slices<'a, I>(items: I) -> Self
    where
        I: IntoIterator<Item = &'a [u8]>,
        I::IntoIter: Clone,
    {
        let items = items.into_iter();
        let (mut count, mut payload, mut largest, mut size) = (0usize, 0u64, 0u64, 0usize);
        for c in items.clone() {
            count += 1;
            payload += c.len() as u64;
            largest = largest.max(c.len() as u64);
            size += varint_len(c.len() as u64) + c.len();
        }
        if count == 0 {
            return Committables::new();
        }
        let mut packed = Vec::with_capacity(varint_len(count as u64) + size);
        push_varint(&mut packed, count as u64);
        for c in items {
            push_varint(&mut packed, c.len() as u64);
            packed.extend_from_slice(c);
        }
        Committables {
            packed,
            count,
            payload,
            largest,
        }
    }

    /// Before the first [`Committables::append`] of a list declared to hold
    /// `count` committables: reserves room for all of them as long as the
    /// first one (`first` bytes), so that a decoded list of equal-sized
    /// committables is one allocation. The declared count is not trusted
    /// (bad bytes may inflate it): at most 16 are reserved for, and a
    /// reservation that fails is skipped (the appends then grow the buffer).
    /// Appends one committable's length and bytes (the count is not
    /// touched: see [`Committables::declared`]).
    fn append(&mut self, item: &[u8]) {
        push_varint(&mut self.packed, item.len() as u64);
        self.packed.extend_from_slice(item);
        self.count += 1;
        self.payload += item.len() as u64;
        self.largest = self.largest.max(item.len() as u64);
    }

    /// A list built by [`Committables::append`] after a count of
    /// `declared`: itself if that count was right (postcard's always is),
    /// else packed again with its true count.
    fn declared(self, declared: usize) -> Self {
        if self.count == declared || self.count == 0 {
            return self;
        }
        let mut body = Iter {
            packed: &self.packed,
            at: 0,
            left: 0,
        };
        read_trusted(body.packed, &mut body.at);
        body.left = self.count;
        Committables::from_slices(body)
    }

    fn reserve_like(&mut self, count: usize, first: usize) {
        let each = varint_len(first as u64).saturating_add(first);
        let want = varint_len(count as u64).saturating_add(each.saturating_mul(count.clamp(1, 16)));
        let _ = self.packed.try_reserve_exact(want);
    }

    /// The committables, in order.
    pub fn iter(&self) -> Iter<'_> {
        let mut at = 0;
        read_trusted(&self.packed, &mut at);
        Iter {
            packed: &self.packed,
            at,
            left: self.count,
        }
    }

    /// How many committables.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The committables' bytes in all (their lengths summed, no framing).
    pub fn total_bytes(&self) -> u64 {
        self.payload
    }

    /// The longest committable's length (0 for none).
    pub fn largest(&self) -> u64 {
        self.largest
    }

    /// The packed form (see the module docs); `[0]` for the empty list.
    pub fn as_packed(&self) -> &[u8] {
        if self.packed.is_empty() {
            &[0]
        } else {
            &self.packed
        }
    }

    /// The packed form, owned.
    pub fn into_packed(self) -> Vec<u8> {
        if self.packed.is_empty() {
            alloc::vec![0]
        } else {
            self.packed
        }
    }

    /// Copies the committables into `out`, one vector each, reusing the
    /// vectors `out` holds: a host that lowers them as `list<list<u8>>`
    /// call after call allocates nothing once warm. Inline, for the hosts
    /// (the component never calls it).
    #[inline]
    pub fn copy_into(&self, out: &mut Vec<Vec<u8>>) {
        out.truncate(self.count);
        let b = self.packed.as_slice();
        let mut at = 0;
        let _count = read_trusted(b, &mut at);
        for j in 0..self.count {
            let len = read_trusted(b, &mut at);
            let start = at.min(b.len());
            let end = start.saturating_add(len).min(b.len());
            at = end;
            let item = b.get(start..end).unwrap_or_default();
            match out.get_mut(j) {
                Some(v) => {
                    v.clear();
                    v.extend_from_slice(item);
                }
                None => out.push(item.to_vec()),
            }
        }
    }

    /// The committables as separate vectors.
    #[inline(never)] // one copy of the code in the component (issue 10)
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }
}

impl From<Vec<Vec<u8>>> for Committables {
    fn from(v: Vec<Vec<u8>>) -> Self {
        Committables::from(v.as_slice())
    }
}

impl From<&[Vec<u8>]> for Committables {
    #[inline(never)] // one copy of the code in the component (issue 10)
    fn from(v: &[Vec<u8>]) -> Self {
        Committables::from_slices(v.iter().map(Vec::as_slice))
    }
}

impl FromIterator<Vec<u8>> for Committables {
    fn from_iter<I: IntoIterator<Item = Vec<u8>>>(items: I) -> Self {
        Committables::from(items.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> FromIterator<&'a [u8]> for Committables {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(items: I) -> Self {
        let items: Vec<&[u8]> = items.into_iter().collect();
        Committables::from_slices(items.iter().copied())
    }
}

impl From<&Committables> for Vec<Vec<u8>> {
    fn from(c: &Committables) -> Self {
        c.to_vecs()
    }
}

impl PartialEq<Vec<Vec<u8>>> for Committables {
    fn eq(&self, other: &Vec<Vec<u8>>) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b.as_slice())
    }
}

impl fmt::Debug for Committables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a Committables {
    type Item = &'a [u8];
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The committables of a [`Committables`], in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    packed: &'a [u8],
    at: usize,
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let len = read_trusted(self.packed, &mut self.at);
        let start = self.at.min(self.packed.len());
        let end = start.saturating_add(len).min(self.packed.len());
        self.at = end;
        self.packed.get(start..end)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

// The persisted records hold a committable list as postcard's `Seq<Bytes>`
// (see `wire`): written from the packed form item by item (each one copy),
// read into one buffer.
impl serde::Serialize for Committables {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(crate::wire::bytes))
    }
}

impl<'de> serde::Deserialize<'de> for Committables {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Committables;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of byte strings")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Committables, A::Error> {
                // The count is written first, as declared; the items follow.
                let declared = seq.size_hint().unwrap_or(0);
                let mut list = Committables::new();
                while let Some(b) = seq.next_element::<crate::wire::Bytes<'de>>()? {
                    if list.count == 0 {
                        list.reserve_like(declared, b.len());
                        push_varint(&mut list.packed, declared as u64);
                    }
                    list.append(b);
                }
                Ok(list.declared(declared))
            }
        }
        d.deserialize_seq(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn lists() -> Vec<Vec<Vec<u8>>> {
        vec![
            vec![],
            vec![vec![]],
            vec![b"a".to_vec(), vec![], b"xyz".to_vec()],
            vec![vec![7u8; 127], vec![8u8; 128], vec![9u8; 20_000]],
            (0..200).map(|i| vec![i as u8; i % 3]).collect(),
        ]
    }

    /// The packed form is postcard's encoding of `Vec<Vec<u8>>`.
    #[test]
    fn packed_form_is_postcards() {
        for list in lists() {
            let c = Committables::from(list.clone());
            let expected = postcard::to_allocvec(&list).unwrap();
            assert_eq!(c.as_packed(), expected.as_slice());
            assert_eq!(c.to_vecs(), list);
            assert_eq!(c.len(), list.len());
            assert_eq!(
                c.total_bytes(),
                list.iter().map(|x| x.len() as u64).sum::<u64>()
            );
            let back = Committables::from_packed(expected).unwrap();
            assert_eq!(back, c);
            let decoded: Committables = postcard::from_bytes(c.as_packed()).unwrap();
            assert_eq!(decoded, c);
            // Into vectors that held other data, more or fewer of them.
            for held in [0, 2, 300] {
                let mut out = vec![vec![1u8; 3]; held];
                c.copy_into(&mut out);
                assert_eq!(out, list);
            }
        }
    }

    /// The same verdict as `packed::unpack` on malformed blocks.
    #[test]
    fn bad_packed_bytes_are_unpacks_errors() {
        let cases: &[&[u8]] = &[
            &[],
            &[0x80],
            &[1],
            &[1, 2, b'a'],
            &[2, 0],
            &[2, 0, 5, b'a'],
            &[0x80, 0x00],
            &[1, 0x81, 0x00, b'a'],
            &[0xff; 11],
            &[0, 0],
            &[1, 1, b'a', b'b'],
            &[0xff, 0xff, 0xff, 0xff, 0x0f],
        ];
        for bytes in cases {
            let want = crate::packed::unpack(bytes).unwrap_err();
            assert_eq!(
                Committables::from_packed(bytes.to_vec()),
                Err(want),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn empty_list_holds_no_buffer() {
        let c = Committables::from_packed(vec![0]).unwrap();
        assert_eq!(c, Committables::new());
        assert_eq!(c.as_packed(), &[0]);
        assert_eq!(c.iter().count(), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..Default::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48)) {
            if let Ok(c) = Committables::from_packed(bytes.clone()) {
                // Accepted bytes are canonical: they re-encode to themselves.
                proptest::prop_assert_eq!(postcard::to_allocvec(&c.to_vecs()).unwrap(), bytes);
            }
        }
    }
}
