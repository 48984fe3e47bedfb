//! Per-writer bookkeeping (SEMANTICS 3) with incrementally kept aggregates,
//! so that an event costs O(1) in the usual case, allocates nothing but
//! what stores its committables, and never scans all slots.
//!
//! Slots live in a `Vec` indexed by subtask (an event costs no lookup to
//! find its slot), grown on demand to the highest subtask that reported and
//! never past the declared parallelism (at most `MAX_PARALLELISM`, checked
//! by `start`; every call checks the subtask range before it gets here, so
//! a subtask outside it reads as an empty slot and changes nothing). A slot
//! holds its ordinary entries ascending by checkpoint (writers report in
//! increasing order, so an entry is appended and a commit takes the first).
//! The aggregates, kept up to date by every mutation:
//! - `frontier`: multiset of `max` over slots without an END entry whose
//!   `max` is set (see `frontier`);
//! - `ends`: the END entries by subtask, in order for the state bytes and
//!   the END snapshot (their count says whether every slot ended; a slot's
//!   own flag answers "has an END entry" without a lookup);
//! - `checkpoints`: per checkpoint, the subtasks holding an entry for it, in
//!   subtask order, and their size (see `checkpoints`);
//! - `ended_bytes`: the bytes of every ended slot's held entries and END
//!   entry (a bound of the END snapshot, which the limits check);
//! - `takens`: multiset of the END entries' `taken`, whose maximum decides
//!   whether the on-checkpoint final commit is due (SEMANTICS 5.3).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::committables::Committables;
use crate::limits::committables_bytes;
use crate::types::MAX_PARALLELISM;

mod checkpoints;
mod frontier;

use checkpoints::Checkpoints;
use frontier::Frontier;

/// An ordinary entry buffered in a slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotEntry {
    /// The committables, in report order.
    pub committables: Committables,
    /// The watermark (`None`: none yet).
    pub watermark: Option<i64>,
    /// The savepoint flag (cleared for an aborted savepoint).
    pub savepoint: bool,
}

/// A writer's END entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndEntry {
    /// The committables, in report order.
    pub committables: Committables,
    /// The watermark (`None`: none yet).
    pub watermark: Option<i64>,
    /// Made up for a finished writer whose END entry was not in the state:
    /// neutral for the END snapshot's watermark (SEMANTICS 6.2).
    pub synthesized: bool,
    /// The first checkpoint whose writer state holds this entry (SEMANTICS
    /// 3): the on-checkpoint final commit waits until every END entry's
    /// `taken` is completed (5.3).
    pub taken: u64,
}

impl EndEntry {
    /// A writer's reported END entry, first held by the state of checkpoint
    /// `taken` (its savepoint flag is ignored: end of input is never a
    /// savepoint).
    pub fn reported(e: crate::types::Entry, taken: u64) -> Self {
        EndEntry {
            committables: e.committables,
            watermark: e.watermark,
            synthesized: false,
            taken,
        }
    }

    /// The END entry made up for a finished writer of a restore from `r`
    /// (see `synthesized`).
    pub fn synthesized(r: u64) -> Self {
        EndEntry {
            committables: Committables::new(),
            watermark: None,
            synthesized: true,
            taken: r,
        }
    }

    /// The same report as `other` (committables and watermark): a restore
    /// event that re-delivers the END entry the state holds keeps its
    /// `taken` (SEMANTICS 3).
    pub fn same_report(&self, other: &EndEntry) -> bool {
        self.committables == other.committables && self.watermark == other.watermark
    }
}

/// An ordinary entry held by a slot, with its size (as the limits count it).
#[derive(Clone, Debug)]
struct Held {
    checkpoint: u64,
    bytes: u64,
    entry: SlotEntry,
}

#[derive(Clone, Debug, Default)]
struct Slot {
    max: Option<u64>,
    /// Holds an END entry (kept in `Slots::ends`).
    ended: bool,
    /// Ascending by checkpoint.
    entries: Vec<Held>,
    /// Size of `entries`.
    held: u64,
}

impl Slot {
    fn find(&self, c: u64) -> Result<usize, usize> {
        // Usually the last (a new report) or the first (a commit).
        match self.entries.last() {
            None => Err(0),
            Some(h) if h.checkpoint < c => Err(self.entries.len()),
            _ => self.entries.binary_search_by_key(&c, |h| h.checkpoint),
        }
    }
}

/// A watermark with both infinities (SEMANTICS 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Watermark {
    /// No watermark: below every number.
    NegInf,
    /// A number.
    At(i64),
    /// An ended writer without an entry: neutral in a minimum.
    PosInf,
}

impl Watermark {
    /// A reported watermark (`None`: `-inf`).
    pub fn of(w: Option<i64>) -> Self {
        w.map_or(Watermark::NegInf, Watermark::At)
    }
    /// What a snapshot records: `-inf` is "no watermark"; `+inf` is never
    /// written (it cannot reach a snapshot, see SEMANTICS 3), so it maps to none.
    pub fn recorded(self) -> Option<i64> {
        match self {
            Watermark::At(v) => Some(v),
            _ => None,
        }
    }
}

/// One ended slot of restored state: subtask, END entry, ordinary entries
/// ascending by checkpoint, and the lowest `max` it starts with.
pub type RestoredSlot = (u32, EndEntry, Vec<(u64, SlotEntry)>, Option<u64>);

/// Every writer slot and the aggregates over them (see the module docs).
#[derive(Clone, Debug)]
pub struct Slots {
    parallelism: u32,
    /// Slot `s` at index `s`, for `s` below the parallelism (see the module docs).
    slots: Vec<Slot>,
    ends: BTreeMap<u32, EndEntry>,
    frontier: Frontier,
    /// Slots counted in `frontier`.
    tracked: u32,
    checkpoints: Checkpoints,
    ended_bytes: u64,
    /// The END entries' `taken` values (see the module docs).
    takens: Frontier,
}

impl Slots {
    /// No slot holds anything yet.
    pub fn new(parallelism: u32) -> Self {
        Slots {
            parallelism,
            slots: Vec::new(),
            ends: BTreeMap::new(),
            frontier: Frontier::default(),
            tracked: 0,
            checkpoints: Checkpoints::default(),
            ended_bytes: 0,
            takens: Frontier::default(),
        }
    }

    /// The number of writer subtasks.
    pub fn parallelism(&self) -> u32 {
        self.parallelism
    }

    // --- slot storage ------------------------------------------------------

    fn slot(&self, s: u32) -> Option<&Slot> {
        self.slots.get(s as usize)
    }

    /// Subtask `s`'s slot, created empty if needed; none outside the
    /// parallelism (no call lets such a subtask through).
    fn slot_mut(&mut self, s: u32) -> Option<&mut Slot> {
        if s >= self.parallelism.min(MAX_PARALLELISM) {
            return None;
        }
        let i = s as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, Slot::default);
        }
        self.slots.get_mut(i)
    }

    // --- queries ---------------------------------------------------------

    /// Highest checkpoint subtask `s` reported (or was restored from).
    pub fn max(&self, s: u32) -> Option<u64> {
        self.slot(s).and_then(|slot| slot.max)
    }

    /// Subtask `s`'s ordinary entry for checkpoint `c`.
    pub fn entry(&self, s: u32, c: u64) -> Option<&SlotEntry> {
        let slot = self.slot(s)?;
        let i = slot.find(c).ok()?;
        slot.entries.get(i).map(|h| &h.entry)
    }

    /// Size of the held entries for checkpoint `c`.
    pub fn bytes_at(&self, c: u64) -> u64 {
        self.checkpoints.bytes(c)
    }

    /// Size of every ended slot's held entries and END entry: an upper
    /// bound of the END snapshot.
    pub fn ended_bytes(&self) -> u64 {
        self.ended_bytes
    }

    /// Size of subtask `s`'s held ordinary entries.
    pub fn held_bytes(&self, s: u32) -> u64 {
        self.slot(s).map_or(0, |slot| slot.held)
    }

    /// Size of subtask `s`'s entry for `c`, if it holds one.
    pub fn entry_bytes(&self, s: u32, c: u64) -> u64 {
        self.slot(s)
            .and_then(|slot| slot.find(c).ok().map(|i| slot.entries[i].bytes))
            .unwrap_or(0)
    }

    /// Size of subtask `s`'s END entry, if it has one.
    pub fn end_bytes(&self, s: u32) -> u64 {
        self.ends
            .get(&s)
            .map_or(0, |e| committables_bytes(&e.committables))
    }

    /// Whether subtask `s` holds an END entry.
    pub fn has_end(&self, s: u32) -> bool {
        self.slot(s).is_some_and(|slot| slot.ended)
    }

    /// Whether every slot holds an END entry.
    pub fn all_ended(&self) -> bool {
        self.ends.len() as u64 == u64::from(self.parallelism)
    }

    /// The END entries, by subtask.
    pub fn ends(&self) -> &BTreeMap<u32, EndEntry> {
        &self.ends
    }

    /// The highest `taken` over the END entries (none without any).
    pub fn latest_taken(&self) -> Option<u64> {
        self.takens.max()
    }

    /// `min over slots without END of max`, or none while any of them has no max
    /// (or every slot ended).
    pub fn frontier(&self) -> Option<u64> {
        let open = u64::from(self.parallelism) - self.ends.len() as u64;
        if open == 0 || u64::from(self.tracked) < open {
            return None;
        }
        self.frontier.min()
    }

    /// The ordinary entries of subtask `s`, in checkpoint order.
    pub fn entries_of(
        &self,
        s: u32,
    ) -> impl ExactSizeIterator<Item = (u64, &SlotEntry)> + Clone + '_ {
        self.slot(s)
            .map_or(&[][..], |slot| slot.entries.as_slice())
            .iter()
            .map(|h| (h.checkpoint, &h.entry))
    }

    /// Whether any ordinary entry is buffered.
    pub fn has_ordinary(&self) -> bool {
        !self.checkpoints.is_empty()
    }

    /// The lowest checkpoint id with an ordinary entry.
    pub fn first_checkpoint(&self) -> Option<u64> {
        self.checkpoints.first()
    }

    /// Checkpoint ids with at least one ordinary entry, up to `t` inclusive.
    pub fn checkpoints_up_to(&self, t: u64) -> Vec<u64> {
        self.checkpoints.up_to(t).collect()
    }

    /// Whether any ordinary entry for checkpoint `c` carries committables.
    pub fn has_committables(&self, c: u64) -> bool {
        self.each_entry(c).any(|(_, e)| !e.committables.is_empty())
    }

    /// Puts the entries for checkpoint `c` in subtask order (they are,
    /// unless they arrived out of order): call before [`Self::each_entry`]
    /// where the order matters.
    pub fn order(&mut self, c: u64) {
        self.checkpoints.order(c);
    }

    /// Entries for checkpoint `c`, in subtask order after [`Self::order`].
    pub fn each_entry(&self, c: u64) -> impl Iterator<Item = (u32, &SlotEntry)> + '_ {
        self.checkpoints
            .subtasks(c)
            .iter()
            .filter_map(move |s| self.entry(*s, c).map(|e| (*s, e)))
    }

    /// Watermark of a snapshot for ordinary checkpoint `c`: the minimum over all
    /// slots of the entry's watermark, `+inf` for an ended slot without one,
    /// `-inf` for any other slot without one. Costs O(entries at c).
    pub fn watermark_at(&self, c: u64) -> Watermark {
        let open = u64::from(self.parallelism) - self.ends.len() as u64;
        let mut open_with_entry = 0u64;
        let mut min = Watermark::PosInf;
        for (s, e) in self.each_entry(c) {
            if !self.has_end(s) {
                open_with_entry += 1;
            }
            min = min.min(Watermark::of(e.watermark));
        }
        if open_with_entry < open {
            return Watermark::NegInf;
        }
        min
    }

    /// Watermark of the END snapshot: minimum over END entries, synthesized
    /// ones neutral; none when every END entry is synthesized.
    pub fn end_watermark(&self) -> Option<i64> {
        let mut min = Watermark::PosInf;
        for e in self.ends.values().filter(|e| !e.synthesized) {
            min = min.min(Watermark::of(e.watermark));
        }
        min.recorded()
    }

    // --- mutations -------------------------------------------------------

    /// Inserts or replaces the ordinary entry `c` of subtask `s` (max unchanged).
    pub fn put_entry(&mut self, s: u32, c: u64, entry: SlotEntry) {
        let bytes = committables_bytes(&entry.committables);
        self.put_sized_entry(s, c, entry, bytes);
    }

    /// As [`Self::put_entry`], with the entry's size already counted
    /// (`limits::committables_bytes`).
    pub fn put_sized_entry(&mut self, s: u32, c: u64, entry: SlotEntry, bytes: u64) {
        let Some(slot) = self.slot_mut(s) else {
            return;
        };
        let ended = slot.ended;
        let held = Held {
            checkpoint: c,
            bytes,
            entry,
        };
        let old = match slot.find(c) {
            Ok(i) => Some(core::mem::replace(&mut slot.entries[i], held).bytes),
            Err(i) => {
                slot.entries.insert(i, held);
                None
            }
        };
        let old_bytes = old.unwrap_or(0);
        slot.held = slot.held.saturating_sub(old_bytes).saturating_add(bytes);
        match old {
            Some(old) => self.checkpoints.resize(c, old, bytes),
            None => self.checkpoints.add(c, s, bytes),
        }
        if ended {
            self.ended_bytes = self
                .ended_bytes
                .saturating_sub(old_bytes)
                .saturating_add(bytes);
        }
    }

    /// Appends subtask `s`'s entry for checkpoint `c` above its max and
    /// every entry it holds (a writer's next report, the usual event) and
    /// raises its max to `c`: [`Self::put_sized_entry`] and
    /// [`Self::set_max`] with one slot lookup. Anything else takes that
    /// general path.
    pub fn push_reported(&mut self, s: u32, c: u64, entry: SlotEntry, bytes: u64) {
        let Some(slot) = self.slot_mut(s) else {
            return;
        };
        let above =
            slot.max.is_none_or(|m| m < c) && slot.entries.last().is_none_or(|h| h.checkpoint < c);
        if !above {
            self.put_sized_entry(s, c, entry, bytes);
            self.set_max(s, Some(c));
            return;
        }
        slot.entries.push(Held {
            checkpoint: c,
            bytes,
            entry,
        });
        slot.held = slot.held.saturating_add(bytes);
        let (old, ended) = (slot.max.replace(c), slot.ended);
        self.checkpoints.add(c, s, bytes);
        if ended {
            self.ended_bytes = self.ended_bytes.saturating_add(bytes);
        } else {
            self.retrack(old, Some(c));
        }
    }

    /// Sets subtask `s`'s highest reported checkpoint.
    pub fn set_max(&mut self, s: u32, max: Option<u64>) {
        let Some(slot) = self.slot_mut(s) else {
            return;
        };
        let (old, ended) = (core::mem::replace(&mut slot.max, max), slot.ended);
        if !ended {
            self.retrack(old, max);
        }
    }

    /// Moves one slot's frontier contribution from `old` to `new`.
    fn retrack(&mut self, old: Option<u64>, new: Option<u64>) {
        if old == new {
            return;
        }
        if let Some(m) = old {
            self.frontier.remove(m);
            self.tracked -= 1;
        }
        if let Some(m) = new {
            self.frontier.add(m);
            self.tracked += 1;
        }
    }

    /// Sets or clears subtask `s`'s END entry.
    pub fn set_end(&mut self, s: u32, end: Option<EndEntry>) {
        let Some(slot) = self.slot_mut(s) else {
            return;
        };
        let (was, held, max) = (slot.ended, slot.held, slot.max);
        slot.ended = end.is_some();
        if was {
            let before = held.saturating_add(self.end_bytes(s));
            self.ended_bytes = self.ended_bytes.saturating_sub(before);
            if let Some(old) = self.ends.get(&s) {
                self.takens.remove(old.taken);
            }
        }
        match end {
            Some(e) => {
                let after = held.saturating_add(committables_bytes(&e.committables));
                self.ended_bytes = self.ended_bytes.saturating_add(after);
                self.takens.add(e.taken);
                self.ends.insert(s, e);
                if !was {
                    self.retrack(max, None);
                }
            }
            None => {
                self.ends.remove(&s);
                if was {
                    self.retrack(None, max);
                }
            }
        }
    }

    /// Drops ordinary entries above `r` (all with `None`) and sets max to the
    /// highest remaining entry: a region failover (SEMANTICS 6.1).
    pub fn reset_ordinary(&mut self, s: u32, r: Option<u64>) {
        let Some(slot) = self.slot_mut(s) else {
            return;
        };
        let keep = match r {
            Some(r) => slot.entries.partition_point(|h| h.checkpoint <= r),
            None => 0,
        };
        let dropped: Vec<Held> = slot.entries.split_off(keep);
        let max = slot.entries.last().map(|h| h.checkpoint);
        let ended = slot.ended;
        let mut gone = 0u64;
        for h in &dropped {
            gone = gone.saturating_add(h.bytes);
            self.checkpoints.remove_one(h.checkpoint, s, h.bytes);
        }
        if let Some(slot) = self.slot_mut(s) {
            slot.held = slot.held.saturating_sub(gone);
        }
        if ended {
            self.ended_bytes = self.ended_bytes.saturating_sub(gone);
        }
        self.set_max(s, max);
    }

    /// Removes every ordinary entry (after the final commit's END snapshot,
    /// which holds them, is durable). `max` values stay.
    pub fn clear_ordinary(&mut self) {
        self.checkpoints.clear();
        for slot in &mut self.slots {
            slot.entries.clear();
            slot.held = 0;
        }
        self.ended_bytes = self.ends.values().fold(0u64, |sum, e| {
            sum.saturating_add(committables_bytes(&e.committables))
        });
    }

    /// Clears the savepoint flag of every held entry for checkpoint `c`.
    pub fn clear_savepoint_flags(&mut self, c: u64) {
        for s in self.checkpoints.subtasks(c) {
            if let Some(slot) = self.slots.get_mut(*s as usize) {
                if let Ok(i) = slot.find(c) {
                    slot.entries[i].entry.savepoint = false;
                }
            }
        }
    }

    /// Removes every ordinary entry for checkpoint `c` (after its snapshot is durable).
    pub fn remove_checkpoint(&mut self, c: u64) {
        let Some(subtasks) = self.checkpoints.remove(c) else {
            return;
        };
        for s in &subtasks {
            let Some(slot) = self.slots.get_mut(*s as usize) else {
                continue;
            };
            let Ok(i) = slot.find(c) else {
                continue;
            };
            let bytes = slot.entries.remove(i).bytes;
            slot.held = slot.held.saturating_sub(bytes);
            if slot.ended {
                self.ended_bytes = self.ended_bytes.saturating_sub(bytes);
            }
        }
        self.checkpoints.recycle(subtasks);
    }

    /// Installs the ended slots of restored state bytes, ascending by
    /// subtask, into slots that hold nothing (`start` of a restore): one pass
    /// that fills each slot directly and builds the END entries' map in bulk
    /// from the sorted input, instead of one incremental update of every
    /// aggregate per slot. Ended slots are not in the frontier. A subtask
    /// out of range or out of order is skipped (the decoder rejects both).
    /// `last_subtask` is the highest subtask of `restored` and `at_least` a
    /// lower bound of their number: the slots through the last and room for
    /// the END entries are allocated once each, not by doubling.
    pub fn restore_ended(
        &mut self,
        last_subtask: Option<u32>,
        at_least: usize,
        restored: impl Iterator<Item = RestoredSlot>,
    ) {
        if let Some(s) = last_subtask {
            self.slot_mut(s);
        }
        let mut ends = Vec::with_capacity(at_least);
        let mut last: Option<u32> = None;
        for (s, end, entries, max) in restored {
            if last.is_some_and(|l| s <= l) || self.has_end(s) {
                continue;
            }
            if self.slot_mut(s).is_none() {
                continue;
            }
            last = Some(s);
            let slot = &mut self.slots[s as usize];
            let old_max = slot.max;
            slot.ended = true;
            slot.max = max.max(entries.last().map(|(c, _)| *c)).max(old_max);
            for (c, entry) in entries {
                let bytes = committables_bytes(&entry.committables);
                slot.held = slot.held.saturating_add(bytes);
                slot.entries.push(Held {
                    checkpoint: c,
                    bytes,
                    entry,
                });
                self.checkpoints.add(c, s, bytes);
            }
            self.ended_bytes = self
                .ended_bytes
                .saturating_add(slot.held)
                .saturating_add(committables_bytes(&end.committables));
            // It was open with its old max, if any: no longer in the frontier.
            self.retrack(old_max, None);
            self.takens.add(end.taken);
            ends.push((s, end));
        }
        if self.ends.is_empty() {
            // Sorted and distinct: built in bulk.
            self.ends = ends.into_iter().collect();
        } else {
            self.ends.extend(ends);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(w: Option<i64>, data: &[&str]) -> SlotEntry {
        SlotEntry {
            committables: data.iter().map(|d| d.as_bytes().to_vec()).collect(),
            watermark: w,
            savepoint: false,
        }
    }

    fn end(w: Option<i64>) -> EndEntry {
        EndEntry {
            committables: alloc::vec![b"e".to_vec()].into(),
            watermark: w,
            synthesized: false,
            taken: 0,
        }
    }

    #[test]
    fn frontier_needs_every_open_slot() {
        let mut s = Slots::new(3);
        assert_eq!(s.frontier(), None);
        s.put_entry(0, 5, entry(None, &[]));
        s.set_max(0, Some(5));
        s.set_max(1, Some(3));
        assert_eq!(s.frontier(), None);
        s.set_max(2, Some(9));
        assert_eq!(s.frontier(), Some(3));
        // An ended writer covers everything (K15).
        s.set_end(1, Some(end(None)));
        assert_eq!(s.frontier(), Some(5));
        s.set_end(0, Some(end(None)));
        s.set_end(2, Some(end(None)));
        assert!(s.all_ended());
        assert_eq!(s.frontier(), None);
        // reset clears END (K22).
        s.set_end(2, None);
        assert_eq!(s.frontier(), Some(9));
    }

    #[test]
    fn watermark_rules() {
        let mut s = Slots::new(2);
        s.put_entry(0, 1, entry(Some(500), &["a"]));
        s.set_max(0, Some(1));
        // Subtask 1 reported nothing for 1: -inf.
        assert_eq!(s.watermark_at(1), Watermark::NegInf);
        // Ended writer is neutral (K19, L9).
        s.set_end(1, Some(end(Some(5))));
        assert_eq!(s.watermark_at(1), Watermark::At(500));
        s.put_entry(1, 1, entry(None, &[]));
        assert_eq!(s.watermark_at(1), Watermark::NegInf);
        assert_eq!(s.end_watermark(), Some(5));
    }

    #[test]
    fn reset_drops_above_and_recomputes_max() {
        let mut s = Slots::new(1);
        for c in 1..=4 {
            s.put_entry(0, c, entry(None, &["x"]));
        }
        s.set_max(0, Some(4));
        s.reset_ordinary(0, Some(2));
        assert_eq!(s.max(0), Some(2));
        assert_eq!(s.checkpoints_up_to(10), alloc::vec![1, 2]);
        s.reset_ordinary(0, None);
        assert_eq!(s.max(0), None);
        assert!(s.checkpoints_up_to(10).is_empty());
        assert_eq!(s.frontier(), None);
    }

    /// The size totals follow every mutation (they are what the limits check).
    #[test]
    fn size_totals_follow_every_mutation() {
        let mut s = Slots::new(2);
        s.put_entry(0, 1, entry(None, &["aaaa"])); // 4 + 16
        s.put_entry(1, 1, entry(None, &["bb", ""])); // 2 + 32
        s.put_entry(0, 2, entry(None, &["c"])); // 17
        assert_eq!((s.bytes_at(1), s.bytes_at(2)), (54, 17));
        assert_eq!((s.held_bytes(0), s.ended_bytes()), (37, 0));
        // Replacing an entry replaces its size.
        s.put_entry(0, 1, entry(None, &["a"]));
        assert_eq!((s.bytes_at(1), s.held_bytes(0)), (51, 34));
        // An END entry brings the slot's held entries into the END total.
        s.set_end(0, Some(end(None))); // "e": 17
        assert_eq!(s.ended_bytes(), 34 + 17);
        s.put_entry(0, 3, entry(None, &["dd"]));
        assert_eq!(s.ended_bytes(), 34 + 17 + 18);
        s.remove_checkpoint(1);
        assert_eq!((s.bytes_at(1), s.ended_bytes()), (0, 17 + 17 + 18));
        s.reset_ordinary(0, Some(2));
        assert_eq!(
            (s.bytes_at(3), s.ended_bytes(), s.held_bytes(0)),
            (0, 34, 17)
        );
        s.set_end(0, None);
        assert_eq!(s.ended_bytes(), 0);
        s.set_end(1, Some(end(None)));
        s.clear_ordinary();
        assert_eq!(
            (s.ended_bytes(), s.bytes_at(2), s.held_bytes(1)),
            (17, 0, 0)
        );
    }

    #[test]
    fn remove_checkpoint_keeps_max() {
        let mut s = Slots::new(2);
        s.put_entry(0, 1, entry(None, &["a"]));
        s.put_entry(1, 1, entry(None, &["b"]));
        s.set_max(0, Some(1));
        s.set_max(1, Some(1));
        let order: Vec<u32> = s.each_entry(1).map(|(s, _)| s).collect();
        assert_eq!(order, alloc::vec![0, 1]);
        s.remove_checkpoint(1);
        assert!(s.entry(0, 1).is_none());
        assert_eq!(s.frontier(), Some(1));
    }
}
