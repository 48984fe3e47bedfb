//! The committables block of WIT `packed-event` (0.2.2): an entry's
//! committables as one byte string in the coordinator state's encoding, an
//! unsigned LEB128 count, then per committable an unsigned LEB128 byte
//! length and its bytes.
//!
//! Why: lowering a `list<list<u8>>` into the guest costs one allocation
//! per committable, each a host-to-guest call of `cabi_realloc`; a block is
//! one allocation per event. Decoding is strict, so that one list has one
//! block: every number in its shortest form, no bytes after the last
//! committable.

use alloc::vec::Vec;
use core::fmt;

/// Why a block is not a valid committables block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnpackError {
    /// The block ends inside a number or a committable (`at`: the offset
    /// where more bytes were needed).
    Truncated {
        /// Offset of the number or committable that does not fit.
        at: usize,
    },
    /// A number is longer than its shortest form, or beyond 64 bits.
    Overlong {
        /// Offset of the number.
        at: usize,
    },
    /// A count or length beyond what this platform can hold.
    TooLarge {
        /// Offset of the number.
        at: usize,
        /// Its value.
        value: u64,
    },
    /// Bytes after the last committable.
    Trailing {
        /// How many.
        bytes: usize,
    },
}

impl fmt::Display for UnpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnpackError::Truncated { at } => {
                write!(f, "the committables block is truncated at byte {at}")
            }
            UnpackError::Overlong { at } => write!(
                f,
                "the committables block has an overlong number at byte {at}"
            ),
            UnpackError::TooLarge { at, value } => write!(
                f,
                "the committables block has a number too large ({value}) at byte {at}"
            ),
            UnpackError::Trailing { bytes } => write!(
                f,
                "the committables block has bytes after its last committable ({bytes})"
            ),
        }
    }
}

impl core::error::Error for UnpackError {}

/// The block's size for `committables`: what [`pack_into`] appends.
pub fn packed_len<C: AsRef<[u8]>>(committables: &[C]) -> usize {
    committables
        .iter()
        .fold(leb_len(committables.len() as u64), |n, c| {
            let len = c.as_ref().len();
            n + leb_len(len as u64) + len
        })
}

/// Appends the block of `committables` to `out` (reserving exactly its
/// size first, so a fresh `Vec` is one allocation).
pub fn pack_into<C: AsRef<[u8]>>(committables: &[C], out: &mut Vec<u8>) {
    out.reserve_exact(packed_len(committables));
    leb_push(out, committables.len() as u64);
    for c in committables {
        let c = c.as_ref();
        leb_push(out, c.len() as u64);
        out.extend_from_slice(c);
    }
}

/// The block of `committables`, in one allocation.
pub fn pack<C: AsRef<[u8]>>(committables: &[C]) -> Vec<u8> {
    let mut out = Vec::new();
    pack_into(committables, &mut out);
    out
}

/// The committables of a block, checked (see [`UnpackError`]). Nothing is
/// allocated from a count before the bytes behind it are seen: a count
/// above the bytes left is truncation.
pub fn unpack(block: &[u8]) -> Result<Vec<Vec<u8>>, UnpackError> {
    // One validation for both: the core keeps a block as it is
    // (`Committables::from_packed`).
    crate::Committables::from_packed(block.to_vec()).map(|c| c.to_vecs())
}

/// The length of `v` as an unsigned LEB128 number (for hosts that write a
/// block from pieces, as the Flink library does from Java arrays).
pub fn leb_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Appends `v` as an unsigned LEB128 number, in its shortest form.
pub fn leb_push(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads one unsigned LEB128 number at `*at`, in its shortest form and at
/// most 64 bits, and moves `*at` past it.
///
/// Inlined, with the one- and two-byte forms (counts, and lengths below
/// 16 KiB) read here and the rest out of line: the general loop cost many
/// instructions a number in the component (measured: BENCHMARKS.md).
#[inline]
pub(crate) fn leb_read(block: &[u8], at: &mut usize) -> Result<u64, UnpackError> {
    let start = *at;
    if let Some(&b0) = block.get(start) {
        if b0 < 0x80 {
            *at = start + 1;
            return Ok(u64::from(b0));
        }
        // A second byte of zero would be overlong: the general path says so.
        if let Some(&b1) = block.get(start + 1).filter(|&&b1| b1 < 0x80 && b1 != 0) {
            *at = start + 2;
            return Ok(u64::from(b0 & 0x7f) | (u64::from(b1) << 7));
        }
    }
    leb_read_long(block, at)
}

/// [`leb_read`] for any form (and every error).
#[cold]
#[inline(never)]
fn leb_read_long(block: &[u8], at: &mut usize) -> Result<u64, UnpackError> {
    let start = *at;
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = block.get(start + i) else {
            return Err(UnpackError::Truncated { at: start });
        };
        let bits = u64::from(b & 0x7f);
        // The 10th byte holds bit 63 only.
        if i == 9 && bits > 1 {
            return Err(UnpackError::Overlong { at: start });
        }
        value |= bits << (7 * i);
        if b & 0x80 == 0 {
            // A last byte of zero after others adds nothing: not shortest.
            if i > 0 && b == 0 {
                return Err(UnpackError::Overlong { at: start });
            }
            *at = start + i + 1;
            return Ok(value);
        }
    }
    Err(UnpackError::Overlong { at: start })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips(list in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..20)) {
            let block = pack(&list);
            prop_assert_eq!(block.len(), packed_len(&list));
            prop_assert_eq!(unpack(&block).unwrap(), list);
        }

        /// Any bytes: an error or a list whose block is those bytes, never a panic.
        #[test]
        fn any_bytes_decode_to_their_own_block_or_fail(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(list) = unpack(&bytes) {
                prop_assert_eq!(pack(&list), bytes);
            }
        }
    }

    #[test]
    fn is_the_state_encoding_of_a_list_of_byte_strings() {
        let list = vec![b"ab".to_vec(), vec![7u8; 200], Vec::new()];
        let views: Vec<crate::wire::Bytes> = list.iter().map(|c| crate::wire::bytes(c)).collect();
        let state = postcard::to_allocvec(&crate::wire::Seq(views)).unwrap();
        assert_eq!(pack(&list), state);
    }

    #[test]
    fn malformed_blocks_are_named() {
        use UnpackError::*;
        let cases: [(&[u8], UnpackError); 9] = [
            (&[], Truncated { at: 0 }),
            (&[1], Truncated { at: 1 }),
            (&[1, 3, b'a'], Truncated { at: 2 }),
            (&[1, 0x80], Truncated { at: 1 }),
            (&[0, 0], Trailing { bytes: 1 }),
            (&[1, 1, b'a', b'b'], Trailing { bytes: 1 }),
            (&[0x80, 0x00], Overlong { at: 0 }),
            (&[1, 0x81, 0x00, b'a'], Overlong { at: 1 }),
            (&[0xff; 11], Overlong { at: 0 }),
        ];
        for (block, want) in cases {
            assert_eq!(unpack(block), Err(want.clone()), "{block:?}");
        }
        // 2^64-1 fits; 2^64 does not.
        let mut max = vec![0xffu8; 9];
        max.push(0x01);
        assert_eq!(leb_read(&max, &mut 0), Ok(u64::MAX));
        let mut over = vec![0xffu8; 9];
        over.push(0x02);
        assert_eq!(leb_read(&over, &mut 0), Err(Overlong { at: 0 }));
        // A count far beyond the bytes left allocates nothing.
        assert_eq!(unpack(&max), Err(Truncated { at: 10 }));
    }
}
