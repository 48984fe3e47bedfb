//! The coordinator's state bytes (SEMANTICS 7): format version, commit user,
//! parallelism and, for every slot holding an END entry not yet committed,
//! that END entry and the slot's uncommitted ordinary entries. The ordinary
//! entries of writers that have not ended live in writer state, never here;
//! those of ended writers are kept because a writer that finished (FLIP-147)
//! has no state left (SEMANTICS 6.2, 12 item 5).
//!
//! Version history (a later component must restore every earlier version):
//! - 1 (0.1.0): `{commit_user, parallelism, end_entries: [(subtask, {committables, watermark, synthesized})]}`;
//! - 2 (0.2.0): `{commit_user, parallelism, slots: [(subtask, {end, entries: [{checkpoint, committables, watermark, savepoint}]})]}`.
//!   Version 1 bytes decode as slots without ordinary entries.
//! - 3 (0.2.3, SEMANTICS v2.1): `{commit_user, parallelism, slots: [(subtask, {end, taken, entries})], owed: [(savepoint, on_end)], aborted: [checkpoint]}`:
//!   each END entry's `taken`, the savepoint ids owed a tag (with whether
//!   the tag points at the END snapshot) and the aborted ids above the
//!   committed mark, both ascending without repeats. Written only when the
//!   state holds an END entry or an id (otherwise version 2, which the
//!   previous release restores). Version 1 and 2 bytes decode with both
//!   lists empty and `taken` = END ("not recorded"), which a restore from
//!   `r` reads as `r` (the coordinator's state at `r` held the entry).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::committables::Committables;
use crate::error::{Defect, Error, ErrorReason, Result};
use crate::slots::{EndEntry, SlotEntry};
use crate::types::{MAX_CHECKPOINT, MAX_COMMIT_USER_BYTES, MAX_PARALLELISM};
use crate::wire::{self, Seq};

/// The newest format version, which `encode` writes whenever the state
/// needs it (see the module docs).
pub const CURRENT_VERSION: u32 = 3;

/// The version `encode` writes for a state with no END entry and no id.
const PLAIN_VERSION: u32 = 2;

/// What the state holds for one ended slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndedSlot {
    /// The END entry.
    pub end: EndEntry,
    /// Uncommitted ordinary entries, by checkpoint.
    pub entries: Vec<(u64, SlotEntry)>,
}

/// Decoded coordinator state ([`decode`]; [`CoordinatorState::encode`] gives the bytes
/// back as the coordinator writes them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoordinatorState {
    /// The commit user.
    pub commit_user: String,
    /// The parallelism the state was taken with.
    pub parallelism: u32,
    /// In subtask order.
    pub slots: Vec<(u32, EndedSlot)>,
    /// Savepoint ids owed a tag, ascending, each with whether the tag points
    /// at the END snapshot (SEMANTICS 5.4).
    pub owed: Vec<(u64, bool)>,
    /// Checkpoint ids known aborted above the committed mark, ascending.
    pub aborted: Vec<u64>,
}

impl CoordinatorState {
    /// The state's bytes as the coordinator encodes them (a decoded state encodes to the
    /// bytes it was decoded from, in the current version).
    pub fn encode(&self) -> Vec<u8> {
        encode(
            &self.commit_user,
            self.parallelism,
            self.slots
                .iter()
                .map(|(s, slot)| (*s, &slot.end, slot.entries.iter().map(|(c, e)| (*c, e)))),
            Ids {
                owed: &self.owed,
                aborted: &self.aborted,
            },
        )
    }
}

#[derive(Serialize, Deserialize)]
struct EndWire {
    committables: Committables,
    watermark: Option<i64>,
    synthesized: bool,
}

#[derive(Serialize, Deserialize)]
struct EntryWire {
    checkpoint: u64,
    committables: Committables,
    watermark: Option<i64>,
    savepoint: bool,
}

#[derive(Serialize, Deserialize)]
struct SlotWire {
    end: EndWire,
    entries: Seq<EntryWire>,
}

/// A slot of version 3: `SlotWire` with the END entry's `taken`.
#[derive(Serialize, Deserialize)]
struct SlotWireV3 {
    end: EndWire,
    taken: u64,
    entries: Seq<EntryWire>,
}

#[cfg(test)]
#[derive(Serialize, Deserialize)]
struct StateV1<'a> {
    commit_user: &'a str,
    parallelism: u32,
    end_entries: Seq<(u32, EndWire)>,
}

#[cfg(test)]
#[derive(Serialize, Deserialize)]
struct StateV2<'a> {
    commit_user: &'a str,
    parallelism: u32,
    slots: Seq<(u32, SlotWire)>,
}

// Encoding serializes views of the coordinator's own values, so that taking
// state builds no intermediate vector per slot or entry. Each view writes
// exactly what the `*Wire` type of the same shape writes (postcard writes a
// struct as its fields in order, a sequence as its length and items), which
// the golden states check byte for byte.

/// As `EndWire`.
#[derive(Serialize)]
struct EndRef<'a> {
    committables: &'a Committables,
    watermark: Option<i64>,
    synthesized: bool,
}

/// As `EntryWire`.
#[derive(Serialize)]
struct EntryRef<'a> {
    checkpoint: u64,
    committables: &'a Committables,
    watermark: Option<i64>,
    savepoint: bool,
}

/// As `Seq<EntryWire>`; serialized twice (size, then bytes), hence `Clone`.
struct EntriesRef<E>(E);

impl<'a, E> Serialize for EntriesRef<E>
where
    E: ExactSizeIterator<Item = (u64, &'a SlotEntry)> + Clone,
{
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.0.clone().map(|(c, e)| EntryRef {
            checkpoint: c,
            committables: &e.committables,
            watermark: e.watermark,
            savepoint: e.savepoint,
        }))
    }
}

/// As `SlotWire`, or `SlotWireV3` with `v3`.
struct SlotRef<'a, E> {
    end: &'a EndEntry,
    entries: E,
    v3: bool,
}

impl<'a, E> Serialize for SlotRef<'a, E>
where
    E: ExactSizeIterator<Item = (u64, &'a SlotEntry)> + Clone,
{
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SlotWire", 3)?;
        st.serialize_field(
            "end",
            &EndRef {
                committables: &self.end.committables,
                watermark: self.end.watermark,
                synthesized: self.end.synthesized,
            },
        )?;
        if self.v3 {
            st.serialize_field("taken", &self.end.taken)?;
        }
        st.serialize_field("entries", &EntriesRef(self.entries.clone()))?;
        st.end()
    }
}

/// As `StateV2`, or `StateV3` with `v3`.
struct StateRef<'u, I> {
    commit_user: &'u str,
    parallelism: u32,
    slots: I,
    ids: Ids<'u>,
    v3: bool,
}

/// The id lists of version 3 (SEMANTICS 5.4, 7).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ids<'a> {
    /// Savepoint ids owed a tag, ascending, with "points at the END snapshot".
    pub owed: &'a [(u64, bool)],
    /// Aborted ids above the committed mark, ascending.
    pub aborted: &'a [u64],
}

impl Ids<'_> {
    fn is_empty(&self) -> bool {
        self.owed.is_empty() && self.aborted.is_empty()
    }
}

impl<'a, I, E> Serialize for StateRef<'_, I>
where
    I: ExactSizeIterator<Item = EncodeSlot<'a, E>> + Clone,
    E: ExactSizeIterator<Item = (u64, &'a SlotEntry)> + Clone,
{
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("StateV3", 5)?;
        st.serialize_field("commit_user", self.commit_user)?;
        st.serialize_field("parallelism", &self.parallelism)?;
        let v3 = self.v3;
        let slots = self
            .slots
            .clone()
            .map(|(s, end, entries)| (s, SlotRef { end, entries, v3 }));
        st.serialize_field("slots", &SeqOf(slots))?;
        if v3 {
            st.serialize_field("owed", self.ids.owed)?;
            st.serialize_field("aborted", self.ids.aborted)?;
        }
        st.end()
    }
}

/// A sequence of the items of an exact-size iterator.
struct SeqOf<I>(I);

impl<I> Serialize for SeqOf<I>
where
    I: ExactSizeIterator + Clone,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.0.clone())
    }
}

/// One ended slot to encode: subtask, END entry, ordinary entries in
/// checkpoint order (an iterator, walked twice: size, then bytes).
pub type EncodeSlot<'a, E> = (u32, &'a EndEntry, E);

/// Encodes the state: commit user, parallelism, the ended slots in subtask
/// order and the id lists; version 2 when there is no slot and no id, else
/// version 3 (see the module docs).
///
/// Out of line: a JVM JIT compiles no method over 8,000 bytecode bytes
/// (BENCHMARKS.md, "Huge functions on the JVM").
#[inline(never)]
pub fn encode<'a, I, E>(commit_user: &str, parallelism: u32, slots: I, ids: Ids<'_>) -> Vec<u8>
where
    I: ExactSizeIterator<Item = EncodeSlot<'a, E>> + Clone,
    E: ExactSizeIterator<Item = (u64, &'a SlotEntry)> + Clone,
{
    let v3 = slots.len() > 0 || !ids.is_empty();
    let version = if v3 { CURRENT_VERSION } else { PLAIN_VERSION };
    let size = encoded_len(commit_user, parallelism, slots.clone(), ids, v3);
    wire::encode_sized(
        version,
        &StateRef {
            commit_user,
            parallelism,
            slots,
            ids,
            v3,
        },
        size,
    )
}

/// Bytes of an unsigned varint (postcard's integers other than `u8`).
fn varint_len(v: u64) -> usize {
    crate::packed::leb_len(v)
}

/// Bytes of an `Option<i64>` (a tag, then the zigzag varint).
fn watermark_len(w: Option<i64>) -> usize {
    w.map_or(1, |v| 1 + varint_len(((v << 1) ^ (v >> 63)) as u64))
}

/// What [`encode`] writes, counted from the values (a packed committable
/// list is its own encoding): the output is sized once, without the
/// serializer's size pass (which walked every slot as a second encode).
/// Only the capacity depends on it; `exact_size` checks it against
/// postcard's own count.
fn encoded_len<'a, I, E>(
    commit_user: &str,
    parallelism: u32,
    slots: I,
    ids: Ids<'_>,
    v3: bool,
) -> usize
where
    I: ExactSizeIterator<Item = EncodeSlot<'a, E>>,
    E: ExactSizeIterator<Item = (u64, &'a SlotEntry)>,
{
    let mut n = varint_len(u64::from(CURRENT_VERSION))
        + varint_len(commit_user.len() as u64)
        + commit_user.len()
        + varint_len(u64::from(parallelism))
        + varint_len(slots.len() as u64);
    if v3 {
        n += varint_len(ids.owed.len() as u64)
            + ids
                .owed
                .iter()
                .map(|(c, _)| varint_len(*c) + 1)
                .sum::<usize>()
            + varint_len(ids.aborted.len() as u64)
            + ids.aborted.iter().map(|c| varint_len(*c)).sum::<usize>();
    }
    for (s, end, entries) in slots {
        n += varint_len(u64::from(s))
            + end.committables.as_packed().len()
            + watermark_len(end.watermark)
            + 1
            + if v3 { varint_len(end.taken) } else { 0 }
            + varint_len(entries.len() as u64);
        for (c, e) in entries {
            n += varint_len(c) + e.committables.as_packed().len() + watermark_len(e.watermark) + 1;
        }
    }
    n
}

/// Decodes state bytes of any version; bad bytes are `corrupt-state`.
pub fn decode(bytes: &[u8]) -> Result<CoordinatorState> {
    decode_indexed(bytes).map(|d| d.state)
}

/// Decoded state with what [`decode_slot_at`] needs to decode one slot
/// again from the same bytes.
#[derive(Clone, Debug)]
pub struct IndexedState {
    /// The decoded state.
    pub state: CoordinatorState,
    /// The bytes' format version.
    pub version: u32,
    /// Where each slot of `state.slots` starts in the bytes.
    pub offsets: Vec<usize>,
}

/// One postcard value off the front of `b`.
fn take<'a, T: Deserialize<'a>>(
    b: &'a [u8],
) -> core::result::Result<(T, &'a [u8]), wire::DecodeError> {
    postcard::take_from_bytes(b).map_err(|_| wire::DecodeError::Malformed)
}

/// One slot of a state of `version` off the front of `b`.
fn take_slot(
    version: u32,
    b: &[u8],
) -> core::result::Result<((u32, SlotWireV3), &[u8]), wire::DecodeError> {
    match version {
        1 => {
            let ((s, end), rest) = take::<(u32, EndWire)>(b)?;
            let slot = SlotWireV3 {
                end,
                taken: NOT_RECORDED,
                entries: Seq(Vec::new()),
            };
            Ok(((s, slot), rest))
        }
        2 => {
            let ((s, w), rest) = take::<(u32, SlotWire)>(b)?;
            let slot = SlotWireV3 {
                end: w.end,
                taken: NOT_RECORDED,
                entries: w.entries,
            };
            Ok(((s, slot), rest))
        }
        _ => take::<(u32, SlotWireV3)>(b),
    }
}

/// The `taken` of an END entry from version 1 or 2 bytes, which did not
/// record it: a restore from `r` reads it as `r` (`min(taken, r)`).
pub const NOT_RECORDED: u64 = crate::types::END;

/// The least bytes a slot takes (subtask, committables count, watermark
/// tag, flag): bounds what a declared slot count may pre-allocate.
const MIN_SLOT_BYTES: usize = 4;

/// As [`decode`], keeping where each slot starts: the state is read slot by
/// slot (the same postcard layout as the `State*` types), so that a restore
/// can keep the bytes and decode one slot again instead of a second copy of
/// every slot ([`decode_slot_at`]).
///
/// Not inlined into `start`: together they grew past what a JVM's JIT
/// compiles (8,000 bytecode bytes), and Chicory ran the restore interpreted.
#[inline(never)]
pub fn decode_indexed(bytes: &[u8]) -> Result<IndexedState> {
    let corrupt = |defect: Defect| -> Error {
        ErrorReason::CoordinatorState {
            bytes: bytes.len(),
            defect,
        }
        .into()
    };
    let (version, rest) = wire::version(bytes).map_err(|e| corrupt(e.into()))?;
    if !(1..=CURRENT_VERSION).contains(&version) {
        return Err(corrupt(wire::DecodeError::UnknownVersion(version).into()));
    }
    // One pass: each slot is checked and converted as it is read, its first
    // content error kept and reported only after the whole structure, the
    // commit user and the parallelism passed (the order of the checks).
    let structure = || -> core::result::Result<_, wire::DecodeError> {
        let (commit_user, rest) = take::<&str>(rest)?;
        let (parallelism, rest) = take::<u32>(rest)?;
        let (count, mut rest) = take::<usize>(rest)?;
        let room = count.min(rest.len() / MIN_SLOT_BYTES);
        let (mut slots, mut offsets) = (Vec::with_capacity(room), Vec::with_capacity(room));
        let mut bad: Option<Defect> = None;
        let mut last: Option<u32> = None;
        for _ in 0..count {
            offsets.push(bytes.len() - rest.len());
            let ((s, w), after) = take_slot(version, rest)?;
            rest = after;
            if bad.is_some() {
                continue;
            }
            if s >= parallelism {
                bad = Some(Defect::EndOutsideParallelism {
                    subtask: s,
                    parallelism,
                });
            } else if last.is_some_and(|l| s <= l) {
                bad = Some(Defect::EndsOutOfOrder { subtask: s });
            } else {
                last = Some(s);
                match ended_slot(s, w) {
                    Ok(slot) => slots.push((s, slot)),
                    Err(why) => bad = Some(why),
                }
            }
        }
        let (mut owed, mut aborted) = (Seq(Vec::new()), Seq(Vec::new()));
        if version >= 3 {
            (owed, rest) = take::<Seq<(u64, bool)>>(rest)?;
            (aborted, rest) = take::<Seq<u64>>(rest)?;
        }
        if !rest.is_empty() {
            return Err(wire::DecodeError::TrailingBytes(rest.len()));
        }
        if bad.is_none() {
            bad = check_ids("owed savepoint", owed.0.iter().map(|(c, _)| *c))
                .or_else(|| check_ids("aborted checkpoint", aborted.0.iter().copied()));
        }
        Ok((
            commit_user,
            parallelism,
            slots,
            offsets,
            bad,
            owed.0,
            aborted.0,
        ))
    };
    let (commit_user, parallelism, slots, offsets, bad, owed, aborted) =
        structure().map_err(|e| corrupt(e.into()))?;
    if commit_user.is_empty() {
        return Err(corrupt(Defect::EmptyCommitUser));
    }
    if commit_user.len() > MAX_COMMIT_USER_BYTES {
        return Err(corrupt(Defect::CommitUserTooLong {
            bytes: commit_user.len(),
        }));
    }
    if parallelism == 0 || parallelism > MAX_PARALLELISM {
        return Err(corrupt(Defect::ParallelismOutOfRange { parallelism }));
    }
    if let Some(why) = bad {
        return Err(corrupt(why));
    }
    Ok(IndexedState {
        state: CoordinatorState {
            commit_user: commit_user.to_string(),
            parallelism,
            slots,
            owed,
            aborted,
        },
        version,
        offsets,
    })
}

/// The first problem of an id list: out of range, out of order or repeated.
fn check_ids(what: &'static str, ids: impl Iterator<Item = u64>) -> Option<Defect> {
    let mut prev: Option<u64> = None;
    for c in ids {
        if c > MAX_CHECKPOINT || prev.is_some_and(|p| c <= p) {
            return Some(Defect::IdsOutOfOrder { what, id: c });
        }
        prev = Some(c);
    }
    None
}

/// One slot's content, checked (the subtask's range and order are the
/// caller's).
fn ended_slot(s: u32, w: SlotWireV3) -> core::result::Result<EndedSlot, Defect> {
    if w.end.synthesized && (!w.end.committables.is_empty() || w.end.watermark.is_some()) {
        return Err(Defect::SynthesizedEndCarriesData { subtask: s });
    }
    if w.taken > crate::types::END {
        return Err(Defect::TakenOutOfRange {
            subtask: s,
            taken: w.taken,
        });
    }
    let mut entries = Vec::with_capacity(w.entries.0.len());
    let mut prev: Option<u64> = None;
    for e in w.entries.0 {
        if e.checkpoint > MAX_CHECKPOINT || prev.is_some_and(|p| e.checkpoint <= p) {
            return Err(Defect::SlotEntriesOutOfOrder {
                subtask: s,
                checkpoint: e.checkpoint,
            });
        }
        prev = Some(e.checkpoint);
        entries.push((
            e.checkpoint,
            SlotEntry {
                committables: e.committables,
                watermark: e.watermark,
                savepoint: e.savepoint,
            },
        ));
    }
    let end = EndEntry {
        committables: w.end.committables,
        watermark: w.end.watermark,
        synthesized: w.end.synthesized,
        taken: w.taken,
    };
    Ok(EndedSlot { end, entries })
}

/// Decodes again the slot at `offset` of state bytes that
/// [`decode_indexed`] accepted (with its `version` and one of its
/// `offsets`); `None` for anything else.
pub fn decode_slot_at(bytes: &[u8], version: u32, offset: usize) -> Option<(u32, EndedSlot)> {
    let ((s, w), _) = take_slot(version, bytes.get(offset..)?).ok()?;
    Some((s, ended_slot(s, w).ok()?))
}

#[cfg(test)]
mod tests;
