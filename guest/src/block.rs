//! The events block of WIT `coordinator.events-block` (0.2.10): a whole
//! batch of packed events as one byte string, postcard's encoding of a
//! sequence of [`BlockEvent`](crate::block::BlockEvent)s.
//!
//! Why: `events-packed` lowers one `packed-event` record and one
//! committables block per event, and each block is a host-to-guest call of
//! `cabi_realloc`: the largest share of a batched event's cost in the
//! component after the core itself (BENCHMARKS.md, issue 27). A block is one
//! allocation and one copy per batch, whatever its length.
//!
//! The layout is postcard's, field by field (so that any host writes it
//! with a few lines of LEB128 and no serde): an unsigned LEB128 event
//! count, then per event `subtask` (unsigned LEB128), `attempt` (unsigned
//! LEB128), `checkpoint` (unsigned LEB128), the committables block of
//! `packed-event` behind its unsigned LEB128 byte length, `watermark`
//! (byte 0 for none, or byte 1 and the value zigzag-encoded as an unsigned
//! LEB128), `savepoint` (byte 0 or 1). As in the committables block, every
//! number is in its shortest form (postcard always writes that), so one
//! batch has one block.
//!
//! The codec is written out with the committables block's LEB128 helpers
//! rather than run through serde: postcard's serializer and deserializer
//! cost about 400 instructions an event each way here (measured with
//! callgrind: BENCHMARKS.md), more than the per-event crossing the block
//! saves. The tests check it against postcard's encoding of [`BlockEvent`](crate::block::BlockEvent)
//! both ways.

use alloc::vec::Vec;
use core::fmt;

use serde::{Deserialize, Serialize};

use crate::packed::{leb_push, leb_read};
use crate::wire::{bytes, Bytes};

/// One event of a block: the fields of a WIT `packed-event`, the
/// committables block borrowed from the batch's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockEvent<'a> {
    /// The writer subtask.
    pub subtask: u32,
    /// Its attempt (informational, SEMANTICS 2).
    pub attempt: u32,
    /// The entry's checkpoint.
    pub checkpoint: u64,
    /// The entry's committables block (`packed-event`'s encoding).
    #[serde(borrow)]
    pub committables: Bytes<'a>,
    /// The entry's watermark.
    pub watermark: Option<i64>,
    /// The entry's savepoint flag.
    pub savepoint: bool,
}

impl<'a> BlockEvent<'a> {
    /// The event with its committables block `committables`.
    pub fn new(
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        committables: &'a [u8],
        watermark: Option<i64>,
        savepoint: bool,
    ) -> Self {
        BlockEvent {
            subtask,
            attempt,
            checkpoint,
            committables: bytes(committables),
            watermark,
            savepoint,
        }
    }
}

/// Why bytes are not an events block: where decoding stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockError {
    /// The count, or event `event`, does not decode from byte `at` on
    /// (truncated, a number too long for its type, a flag other than 0 or
    /// 1). `event` is the count of events the block says it holds when the
    /// count itself is malformed.
    Malformed {
        /// Index of the event that does not decode.
        event: u32,
        /// Offset of its first byte (of the count: 0).
        at: usize,
    },
    /// Bytes after the last of the block's `events` events.
    Trailing {
        /// How many events the block holds.
        events: u32,
        /// How many bytes follow them.
        bytes: usize,
    },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::Malformed { event, at } => write!(
                f,
                "the events block is truncated or malformed at event {event} (byte {at})"
            ),
            BlockError::Trailing { events, bytes } => write!(
                f,
                "the events block has {bytes} bytes after its last event (of {events})"
            ),
        }
    }
}

/// Decodes a whole block, or says where it stops being one; nothing is
/// applied from a block that does not decode whole.
///
/// The events are collected first (borrowing their committables) so that a
/// malformed block changes nothing. The count is not trusted for the
/// allocation: every event takes at least 7 bytes (5 one-byte fields, a
/// length and a committables count), which bounds the reservation by the
/// input's size.
pub fn decode(block: &[u8]) -> Result<Vec<BlockEvent<'_>>, BlockError> {
    const MIN_EVENT_BYTES: usize = 7;
    let mut at = 0;
    let count = read_u32(block, &mut at).ok_or(BlockError::Malformed { event: 0, at: 0 })?;
    let capacity = (count as usize).min((block.len() - at) / MIN_EVENT_BYTES);
    let mut events = Vec::with_capacity(capacity);
    for event in 0..count {
        let start = at;
        let e = read_event(block, &mut at).ok_or(BlockError::Malformed { event, at: start })?;
        events.push(e);
    }
    if at != block.len() {
        return Err(BlockError::Trailing {
            events: count,
            bytes: block.len() - at,
        });
    }
    Ok(events)
}

/// One event at `*at`, moving `*at` past it; none if it does not decode.
#[inline]
fn read_event<'a>(block: &'a [u8], at: &mut usize) -> Option<BlockEvent<'a>> {
    let subtask = read_u32(block, at)?;
    let attempt = read_u32(block, at)?;
    let checkpoint = leb_read(block, at).ok()?;
    let len = usize::try_from(leb_read(block, at).ok()?).ok()?;
    let committables = block.get(*at..)?.get(..len)?;
    *at += len;
    let watermark = match read_flag(block, at)? {
        false => None,
        true => {
            let z = leb_read(block, at).ok()?;
            // Zigzag: 0, -1, 1, -2, ... as 0, 1, 2, 3, ...
            Some((z >> 1) as i64 ^ -((z & 1) as i64))
        }
    };
    let savepoint = read_flag(block, at)?;
    Some(BlockEvent::new(
        subtask,
        attempt,
        checkpoint,
        committables,
        watermark,
        savepoint,
    ))
}

#[inline]
fn read_u32(block: &[u8], at: &mut usize) -> Option<u32> {
    u32::try_from(leb_read(block, at).ok()?).ok()
}

/// A byte 0 or 1.
#[inline]
fn read_flag(block: &[u8], at: &mut usize) -> Option<bool> {
    let flag = match block.get(*at)? {
        0 => false,
        1 => true,
        _ => return None,
    };
    *at += 1;
    Some(flag)
}

/// Appends the block of `events` to `out` (which a host reuses from batch
/// to batch); `events` must say how many it yields.
pub fn encode_into<'a, I>(events: I, out: &mut Vec<u8>)
where
    I: IntoIterator<Item = BlockEvent<'a>>,
    I::IntoIter: ExactSizeIterator,
{
    let events = events.into_iter();
    // A batch of more than 2^32 - 1 events is beyond the WIT's u32 index of
    // a `batch-error`; the count saturates, and the trailing events make the
    // block refused rather than misread.
    let count = u32::try_from(events.len()).unwrap_or(u32::MAX);
    leb_push(out, u64::from(count));
    for e in events {
        leb_push(out, u64::from(e.subtask));
        leb_push(out, u64::from(e.attempt));
        leb_push(out, e.checkpoint);
        leb_push(out, e.committables.len() as u64);
        out.extend_from_slice(e.committables);
        match e.watermark {
            None => out.push(0),
            Some(w) => {
                out.push(1);
                leb_push(out, ((w << 1) ^ (w >> 63)) as u64);
            }
        }
        out.push(u8::from(e.savepoint));
    }
}

/// The block of `events`, in a new buffer.
pub fn encode<'a, I>(events: I) -> Vec<u8>
where
    I: IntoIterator<Item = BlockEvent<'a>>,
    I::IntoIter: ExactSizeIterator,
{
    let mut out = Vec::new();
    encode_into(events, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packed::pack;
    use proptest::prelude::*;

    fn event(subtask: u32, block: &[u8]) -> BlockEvent<'_> {
        BlockEvent::new(subtask, 1, 7, block, Some(-3), true)
    }

    #[test]
    fn layout_is_the_documented_one() {
        let committables = pack(&[b"ab".as_slice()]);
        let bytes = encode([event(300, &committables)]);
        // count 1; subtask 300 = ac 02; attempt 1; checkpoint 7; block of 4
        // bytes (count 1, length 2, "ab"); watermark some(-3) = 1, zigzag 5;
        // savepoint 1.
        assert_eq!(
            bytes,
            [1, 0xac, 0x02, 1, 7, 4, 1, 2, b'a', b'b', 1, 5, 1].as_slice()
        );
        let none = encode([BlockEvent::new(0, 0, 0, &[0], None, false)]);
        assert_eq!(none, [1, 0, 0, 0, 1, 0, 0, 0].as_slice());
    }

    #[test]
    fn malformed_blocks_say_where() {
        let committables = pack(&[b"xyz".as_slice()]);
        let good = encode([event(1, &committables), event(2, &committables)]);
        assert_eq!(decode(&good).unwrap().len(), 2);
        // Truncated inside the second event (which starts at byte 13).
        let first = encode([event(1, &committables)]).len() - 1;
        assert_eq!(first, 12);
        assert_eq!(
            decode(&good[..good.len() - 1]),
            Err(BlockError::Malformed {
                event: 1,
                at: 1 + first
            })
        );
        let mut trailing = good.clone();
        trailing.extend_from_slice(&[0, 0]);
        assert_eq!(
            decode(&trailing),
            Err(BlockError::Trailing {
                events: 2,
                bytes: 2
            })
        );
        assert_eq!(decode(&[]), Err(BlockError::Malformed { event: 0, at: 0 }));
        // A savepoint flag of 2.
        let mut flag = encode([event(1, &committables)]);
        *flag.last_mut().unwrap() = 2;
        assert_eq!(
            decode(&flag),
            Err(BlockError::Malformed { event: 0, at: 1 })
        );
        // A count that promises more events than the bytes hold allocates
        // by the bytes, then fails at the first missing event.
        let lying = [0xff, 0xff, 0xff, 0xff, 0x0f];
        assert_eq!(
            decode(&lying),
            Err(BlockError::Malformed { event: 0, at: 5 })
        );
        assert_eq!(decode(&[0]), Ok(Vec::new()));
    }

    proptest! {
        #[test]
        fn round_trips(
            events in prop::collection::vec(
                (any::<u32>(), any::<u32>(), any::<u64>(),
                 prop::collection::vec(any::<u8>(), 0..20),
                 any::<Option<i64>>(), any::<bool>()),
                0..12,
            )
        ) {
            let block = encode(events.iter().map(|(s, a, c, b, w, sp)| {
                BlockEvent::new(*s, *a, *c, b, *w, *sp)
            }));
            let decoded = decode(&block).unwrap();
            prop_assert_eq!(decoded.len(), events.len());
            for (d, (s, a, c, b, w, sp)) in decoded.iter().zip(&events) {
                prop_assert_eq!(d, &BlockEvent::new(*s, *a, *c, b, *w, *sp));
            }
        }

        /// Any bytes: a block or a located error, never a panic. A block
        /// is postcard's encoding of its events, byte for byte (one batch,
        /// one block), and postcard decodes it to the same events.
        #[test]
        fn any_bytes_decode_or_fail(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(events) = decode(&bytes) {
                prop_assert_eq!(&encode(events.iter().copied()), &bytes);
                prop_assert_eq!(postcard::to_allocvec(&events).unwrap(), bytes.clone());
                let theirs: Vec<BlockEvent<'_>> = postcard::from_bytes(&bytes).unwrap();
                prop_assert_eq!(theirs, events);
            }
        }

        /// The encoding is postcard's of the same list.
        #[test]
        fn is_postcards_encoding(
            events in prop::collection::vec(
                (any::<u32>(), any::<u32>(), any::<u64>(),
                 prop::collection::vec(any::<u8>(), 0..200),
                 any::<Option<i64>>(), any::<bool>()),
                0..6,
            )
        ) {
            let events: Vec<BlockEvent<'_>> = events
                .iter()
                .map(|(s, a, c, b, w, sp)| BlockEvent::new(*s, *a, *c, b, *w, *sp))
                .collect();
            let ours = encode(events.iter().copied());
            prop_assert_eq!(&ours, &postcard::to_allocvec(&events).unwrap());
            prop_assert_eq!(decode(&ours).unwrap(), events);
        }
    }
}
