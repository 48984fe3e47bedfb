//! Per-writer bookkeeping (SEMANTICS 3) with an incrementally kept commit
//! frontier, so that an event costs O(log P) and never scans all slots.
//!
//! Slots live in a `Vec` indexed by subtask (an event costs no map lookup
//! to find its slot), grown on demand to the highest subtask that reported
//! and never past the declared parallelism (at most `MAX_PARALLELISM`,
//! checked by `start`; every call checks the subtask range before it gets
//! here). A subtask outside that range, which no call lets through, would
//! go to a sparse map instead of growing the `Vec`. An empty slot (no max,
//! no entries) is the same as no slot.
//! Three aggregates are kept up to date by every mutation:
//! - `frontier`: multiset of `max` over slots without an END entry whose `max` is set;
//! - `ends`: the END entries (their count says whether every slot ended);
//! - `index`: checkpoint id -> subtasks holding an ordinary entry for it;
//! - `bytes_at`, `ended_bytes`: the sizes the limits check (see `limits`):
//!   per checkpoint, the bytes of its held entries; and the bytes of every
//!   ended slot's held entries and END entry (a bound of the END snapshot).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use crate::limits::committables_bytes;
use crate::types::MAX_PARALLELISM;

/// An ordinary entry buffered in a slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotEntry {
    /// The committables, in report order.
    pub committables: Vec<Vec<u8>>,
    /// The watermark (`None`: none yet).
    pub watermark: Option<i64>,
    /// The savepoint flag (cleared for an aborted savepoint).
    pub savepoint: bool,
}

/// A writer's END entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndEntry {
    /// The committables, in report order.
    pub committables: Vec<Vec<u8>>,
    /// The watermark (`None`: none yet).
    pub watermark: Option<i64>,
    /// Made up for a finished writer whose END entry was not in the state:
    /// neutral for the END snapshot's watermark (SEMANTICS 6.2).
    pub synthesized: bool,
}

impl EndEntry {
    /// A writer's reported END entry (its savepoint flag is ignored: end of
    /// input is never a savepoint).
    pub fn reported(e: crate::types::Entry) -> Self {
        EndEntry {
            committables: e.committables,
            watermark: e.watermark,
            synthesized: false,
        }
    }

    /// The END entry made up for a finished writer (see `synthesized`).
    pub fn synthesized() -> Self {
        EndEntry {
            committables: Vec::new(),
            watermark: None,
            synthesized: true,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Slot {
    max: Option<u64>,
    entries: BTreeMap<u64, SlotEntry>,
    /// Size of `entries` (as the limits count it).
    held: u64,
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

/// Every writer slot and the aggregates over them (see the module docs).
#[derive(Clone, Debug)]
pub struct Slots {
    parallelism: u32,
    /// Slot `s` at index `s`, for `s` below the parallelism (see the module docs).
    slots: Vec<Slot>,
    /// Slots of subtasks at or above the parallelism (never used by a call).
    spill: BTreeMap<u32, Slot>,
    ends: BTreeMap<u32, EndEntry>,
    frontier: BTreeMap<u64, u32>,
    tracked: u32,
    index: BTreeMap<u64, BTreeSet<u32>>,
    bytes_at: BTreeMap<u64, u64>,
    ended_bytes: u64,
}

impl Slots {
    /// No slot holds anything yet.
    pub fn new(parallelism: u32) -> Self {
        Slots {
            parallelism,
            slots: Vec::new(),
            spill: BTreeMap::new(),
            ends: BTreeMap::new(),
            frontier: BTreeMap::new(),
            tracked: 0,
            index: BTreeMap::new(),
            bytes_at: BTreeMap::new(),
            ended_bytes: 0,
        }
    }

    /// The number of writer subtasks.
    pub fn parallelism(&self) -> u32 {
        self.parallelism
    }

    // --- slot storage ------------------------------------------------------

    /// Whether subtask `s` has its slot in the `Vec`.
    fn indexed(&self, s: u32) -> bool {
        s < self.parallelism.min(MAX_PARALLELISM)
    }

    fn slot(&self, s: u32) -> Option<&Slot> {
        if self.indexed(s) {
            self.slots.get(s as usize)
        } else {
            self.spill.get(&s)
        }
    }

    fn slot_mut(&mut self, s: u32) -> Option<&mut Slot> {
        if self.indexed(s) {
            self.slots.get_mut(s as usize)
        } else {
            self.spill.get_mut(&s)
        }
    }

    /// Subtask `s`'s slot, created empty if needed.
    fn slot_or_default(&mut self, s: u32) -> &mut Slot {
        if !self.indexed(s) {
            return self.spill.entry(s).or_default();
        }
        let i = s as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, Slot::default);
        }
        &mut self.slots[i]
    }

    /// Drops subtask `s`'s slot if it is empty (only spilled slots are
    /// dropped; an empty slot in the `Vec` is the same as none).
    fn prune(&mut self, s: u32) {
        if self
            .spill
            .get(&s)
            .is_some_and(|slot| slot.max.is_none() && slot.entries.is_empty())
        {
            self.spill.remove(&s);
        }
    }

    // --- frontier bookkeeping -------------------------------------------

    /// The frontier contribution of subtask `s`: `Some(max)` when it has no END entry and a max.
    fn contribution(&self, s: u32) -> Option<u64> {
        if self.ends.contains_key(&s) {
            return None;
        }
        self.slot(s).and_then(|slot| slot.max)
    }

    fn detach(&mut self, s: u32) {
        if let Some(m) = self.contribution(s) {
            if let Some(n) = self.frontier.get_mut(&m) {
                *n -= 1;
                if *n == 0 {
                    self.frontier.remove(&m);
                }
            }
            self.tracked -= 1;
        }
    }

    fn attach(&mut self, s: u32) {
        if let Some(m) = self.contribution(s) {
            *self.frontier.entry(m).or_insert(0) += 1;
            self.tracked += 1;
        }
        self.prune(s);
    }

    // --- queries ---------------------------------------------------------

    /// Highest checkpoint subtask `s` reported (or was restored from).
    pub fn max(&self, s: u32) -> Option<u64> {
        self.slot(s).and_then(|slot| slot.max)
    }

    /// Subtask `s`'s ordinary entry for checkpoint `c`.
    pub fn entry(&self, s: u32, c: u64) -> Option<&SlotEntry> {
        self.slot(s).and_then(|slot| slot.entries.get(&c))
    }

    /// Size of the held entries for checkpoint `c`.
    pub fn bytes_at(&self, c: u64) -> u64 {
        self.bytes_at.get(&c).copied().unwrap_or(0)
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
        self.entry(s, c)
            .map_or(0, |e| committables_bytes(&e.committables))
    }

    /// Size of subtask `s`'s END entry, if it has one.
    pub fn end_bytes(&self, s: u32) -> u64 {
        self.ends
            .get(&s)
            .map_or(0, |e| committables_bytes(&e.committables))
    }

    /// Whether subtask `s` holds an END entry.
    pub fn has_end(&self, s: u32) -> bool {
        self.ends.contains_key(&s)
    }

    /// Whether every slot holds an END entry.
    pub fn all_ended(&self) -> bool {
        self.ends.len() as u64 == u64::from(self.parallelism)
    }

    /// The END entries, by subtask.
    pub fn ends(&self) -> &BTreeMap<u32, EndEntry> {
        &self.ends
    }

    /// `min over slots without END of max`, or none while any of them has no max
    /// (or every slot ended).
    pub fn frontier(&self) -> Option<u64> {
        let open = u64::from(self.parallelism) - self.ends.len() as u64;
        if open == 0 || u64::from(self.tracked) < open {
            return None;
        }
        self.frontier.keys().next().copied()
    }

    /// The ordinary entries of subtask `s`, in checkpoint order.
    pub fn entries_of(&self, s: u32) -> impl Iterator<Item = (u64, &SlotEntry)> + '_ {
        self.slot(s)
            .into_iter()
            .flat_map(|slot| slot.entries.iter().map(|(c, e)| (*c, e)))
    }

    /// Whether any ordinary entry is buffered.
    pub fn has_ordinary(&self) -> bool {
        !self.index.is_empty()
    }

    /// The lowest checkpoint id with an ordinary entry.
    pub fn first_checkpoint(&self) -> Option<u64> {
        self.index.keys().next().copied()
    }

    /// Checkpoint ids with at least one ordinary entry, up to `t` inclusive.
    pub fn checkpoints_up_to(&self, t: u64) -> Vec<u64> {
        self.index.range(..=t).map(|(c, _)| *c).collect()
    }

    /// Whether any ordinary entry for checkpoint `c` carries committables.
    pub fn has_committables(&self, c: u64) -> bool {
        self.each_entry(c).any(|(_, e)| !e.committables.is_empty())
    }

    /// Entries for checkpoint `c`, in subtask order.
    pub fn each_entry(&self, c: u64) -> impl Iterator<Item = (u32, &SlotEntry)> + '_ {
        self.index
            .get(&c)
            .into_iter()
            .flat_map(|subtasks| subtasks.iter())
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
            if !self.ends.contains_key(&s) {
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
        let slot = self.slot_or_default(s);
        let old = slot
            .entries
            .insert(c, entry)
            .map_or(0, |e| committables_bytes(&e.committables));
        slot.held = slot.held.saturating_sub(old).saturating_add(bytes);
        let at = self.bytes_at.entry(c).or_insert(0);
        *at = at.saturating_sub(old).saturating_add(bytes);
        if self.ends.contains_key(&s) {
            self.ended_bytes = self.ended_bytes.saturating_sub(old).saturating_add(bytes);
        }
        self.index.entry(c).or_default().insert(s);
    }

    /// Accounts for subtask `s`'s entry for `c` (`bytes`) leaving its slot.
    fn forget_bytes(&mut self, s: u32, c: u64, bytes: u64) {
        if let Some(slot) = self.slot_mut(s) {
            slot.held = slot.held.saturating_sub(bytes);
        }
        if let Some(at) = self.bytes_at.get_mut(&c) {
            *at = at.saturating_sub(bytes);
            if *at == 0 && !self.index.contains_key(&c) {
                self.bytes_at.remove(&c);
            }
        }
        if self.ends.contains_key(&s) {
            self.ended_bytes = self.ended_bytes.saturating_sub(bytes);
        }
    }

    /// Sets subtask `s`'s highest reported checkpoint.
    pub fn set_max(&mut self, s: u32, max: Option<u64>) {
        self.detach(s);
        self.slot_or_default(s).max = max;
        self.attach(s);
    }

    /// Sets or clears subtask `s`'s END entry.
    pub fn set_end(&mut self, s: u32, end: Option<EndEntry>) {
        self.detach(s);
        if self.ends.contains_key(&s) {
            let before = self.held_bytes(s).saturating_add(self.end_bytes(s));
            self.ended_bytes = self.ended_bytes.saturating_sub(before);
        }
        if let Some(e) = &end {
            let after = self
                .held_bytes(s)
                .saturating_add(committables_bytes(&e.committables));
            self.ended_bytes = self.ended_bytes.saturating_add(after);
        }
        match end {
            Some(e) => {
                self.ends.insert(s, e);
            }
            None => {
                self.ends.remove(&s);
            }
        }
        self.attach(s);
    }

    fn unindex(&mut self, s: u32, c: u64) {
        if let Some(set) = self.index.get_mut(&c) {
            set.remove(&s);
            if set.is_empty() {
                self.index.remove(&c);
                self.bytes_at.remove(&c);
            }
        }
    }

    /// Drops ordinary entries above `r` (all with `None`) and sets max to the
    /// highest remaining entry: a region failover (SEMANTICS 6.1).
    pub fn reset_ordinary(&mut self, s: u32, r: Option<u64>) {
        self.detach(s);
        let dropped: Vec<(u64, u64)> = match self.slot_mut(s) {
            Some(slot) => {
                let dropped = match r {
                    Some(r) if r < u64::MAX => slot.entries.split_off(&(r + 1)),
                    Some(_) => BTreeMap::new(),
                    None => core::mem::take(&mut slot.entries),
                };
                slot.max = slot.entries.keys().next_back().copied();
                dropped
                    .into_iter()
                    .map(|(c, e)| (c, committables_bytes(&e.committables)))
                    .collect()
            }
            None => Vec::new(),
        };
        for (c, bytes) in dropped {
            self.forget_bytes(s, c, bytes);
            self.unindex(s, c);
        }
        self.attach(s);
    }

    /// Removes every ordinary entry (after the final commit's END snapshot,
    /// which holds them, is durable). `max` values stay.
    pub fn clear_ordinary(&mut self) {
        self.index.clear();
        self.bytes_at.clear();
        for slot in &mut self.slots {
            slot.entries.clear();
            slot.held = 0;
        }
        self.spill.retain(|_, slot| {
            slot.entries.clear();
            slot.held = 0;
            slot.max.is_some()
        });
        self.ended_bytes = self.ends.values().fold(0u64, |sum, e| {
            sum.saturating_add(committables_bytes(&e.committables))
        });
    }

    /// Clears the savepoint flag of every held entry for checkpoint `c`.
    pub fn clear_savepoint_flags(&mut self, c: u64) {
        // Copied out of the index: the slots are borrowed mutably below (an
        // abort is rare; events never come here).
        let Some(subtasks) = self
            .index
            .get(&c)
            .map(|set| set.iter().copied().collect::<Vec<u32>>())
        else {
            return;
        };
        for s in subtasks {
            if let Some(e) = self.slot_mut(s).and_then(|slot| slot.entries.get_mut(&c)) {
                e.savepoint = false;
            }
        }
    }

    /// Removes every ordinary entry for checkpoint `c` (after its snapshot is durable).
    pub fn remove_checkpoint(&mut self, c: u64) {
        let Some(subtasks) = self.index.remove(&c) else {
            return;
        };
        self.bytes_at.remove(&c);
        for s in subtasks {
            let removed = self.slot_mut(s).and_then(|slot| {
                let e = slot.entries.remove(&c)?;
                let bytes = committables_bytes(&e.committables);
                slot.held = slot.held.saturating_sub(bytes);
                Some(bytes)
            });
            if let Some(bytes) = removed {
                if self.ends.contains_key(&s) {
                    self.ended_bytes = self.ended_bytes.saturating_sub(bytes);
                }
            }
            self.prune(s);
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
            committables: alloc::vec![b"e".to_vec()],
            watermark: w,
            synthesized: false,
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
