//! The simulator's oracles: what must end up in the table, computed from
//! what the simulated job did, independently of what the coordinator says.
//!
//! - [`Ledger`]: every committable ever produced, with the input records it
//!   covers and its fate (pending, discarded by a rollback, committed).
//! - [`Records`]: per writer, the input records committed so far; a record
//!   committed twice is a duplicate (exactly-once broken), whatever the
//!   committable's name.
//! - [`Mirror`]: what the coordinator has been told (SEMANTICS 3 and 6):
//!   per writer the ordinary entries, `max` and the END entry, so that a
//!   snapshot's committables and watermark, and the END entries of the state
//!   bytes, can be recomputed.

use std::collections::{BTreeMap, BTreeSet};

use sink_coordinator::{Entry, END};

/// What happened to one committable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Reported (or about to be); neither committed nor rolled back.
    Pending,
    /// Dropped by a rollback of its writer to a point before it (at step).
    Discarded(u64),
    /// In the snapshot with this id.
    Committed(u64),
}

#[derive(Clone, Debug)]
pub struct Item {
    pub subtask: u32,
    /// The checkpoint it was reported for, or END.
    pub checkpoint: u64,
    pub attempt: u32,
    pub k: u32,
    /// Input records `[lo, hi)` of its writer.
    pub lo: u64,
    pub hi: u64,
    pub fate: Fate,
    /// Produced after the job's final commit (a replay of committed input):
    /// never required, and committing it duplicates records.
    pub post_final: bool,
    /// Sent again in the `restored` event of a region failover: from then on
    /// only the coordinator's slot holds it (SEMANTICS 11 drops restored
    /// entries from the writer's buffer).
    pub region_restored: bool,
}

#[derive(Default, Debug)]
pub struct Ledger {
    pub items: BTreeMap<String, Item>,
}

impl Ledger {
    pub fn name(subtask: u32, checkpoint: u64, attempt: u32, k: u32) -> String {
        if checkpoint == END {
            format!("s{subtask}-end-a{attempt}-k{k}")
        } else {
            format!("s{subtask}-c{checkpoint}-a{attempt}-k{k}")
        }
    }

    /// Marks the pending committables of `subtask` that a rollback to `r`
    /// drops: ordinary ones after `r` (every one without `r`) and END ones
    /// the writer's state at `r` does not hold. Returns how many.
    pub fn discard(
        &mut self,
        subtask: u32,
        r: Option<u64>,
        kept_end: &BTreeSet<String>,
        step: u64,
    ) -> usize {
        let mut n = 0;
        for (name, item) in self.items.iter_mut() {
            if item.subtask != subtask || item.fate != Fate::Pending {
                continue;
            }
            let dropped = if item.checkpoint == END {
                !kept_end.contains(name)
            } else {
                r.is_none_or(|r| item.checkpoint > r)
            };
            if dropped {
                item.fate = Fate::Discarded(step);
                n += 1;
            }
        }
        n
    }
}

/// Input records committed per writer, as disjoint half-open ranges.
#[derive(Default, Debug)]
pub struct Records {
    /// subtask -> (lo -> hi)
    pub committed: BTreeMap<u32, BTreeMap<u64, u64>>,
}

impl Records {
    /// Adds `[lo, hi)`; on overlap returns the first record committed twice.
    pub fn add(&mut self, subtask: u32, lo: u64, hi: u64) -> Result<(), u64> {
        if lo >= hi {
            return Ok(());
        }
        let ranges = self.committed.entry(subtask).or_default();
        // The range starting at or before lo, and the first one after it.
        if let Some((&a, &b)) = ranges.range(..=lo).next_back() {
            if b > lo {
                return Err(lo.max(a));
            }
        }
        if let Some((&a, _)) = ranges.range(lo..).next() {
            if a < hi {
                return Err(a);
            }
        }
        // Merge with neighbours to keep the map small.
        let mut new_lo = lo;
        let mut new_hi = hi;
        if let Some((&a, &b)) = ranges.range(..lo).next_back() {
            if b == lo {
                new_lo = a;
                ranges.remove(&a);
            }
        }
        if let Some(&b) = ranges.get(&hi) {
            new_hi = b;
            ranges.remove(&hi);
        }
        ranges.insert(new_lo, new_hi);
        Ok(())
    }

    /// True if exactly `[0, n)` is committed for `subtask`.
    pub fn is_exactly(&self, subtask: u32, n: u64) -> bool {
        match self.committed.get(&subtask) {
            None => n == 0,
            Some(r) => (n == 0 && r.is_empty()) || (r.len() == 1 && r.get(&0) == Some(&n)),
        }
    }

    pub fn describe(&self, subtask: u32) -> String {
        match self.committed.get(&subtask) {
            None => "nothing".into(),
            Some(r) => r
                .iter()
                .map(|(a, b)| format!("[{a},{b})"))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// An entry as the coordinator holds it: committable names and watermark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MEntry {
    pub names: Vec<String>,
    pub watermark: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MEnd {
    pub names: Vec<String>,
    pub watermark: Option<i64>,
    pub synthesized: bool,
}

impl MEnd {
    /// The mirror's view of an END entry decoded from coordinator state bytes.
    pub fn from_state(e: &sink_coordinator::slots::EndEntry) -> Self {
        MEnd {
            names: e
                .committables
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect(),
            watermark: e.watermark,
            synthesized: e.synthesized,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct MSlot {
    pub entries: BTreeMap<u64, MEntry>,
    pub max: Option<u64>,
    pub end: Option<MEnd>,
}

/// The coordinator instance's inputs, as SEMANTICS says it keeps them.
/// Entries are never pruned on commit: a committed checkpoint is never
/// committed again, so stale entries are harmless.
#[derive(Clone, Debug, Default)]
pub struct Mirror {
    pub slots: Vec<MSlot>,
    /// The instance made (or found) the final commit.
    pub final_done: bool,
    /// While restoring: the restore checkpoint, persisted END entries, and
    /// the subtasks restored so far.
    pub restoring: Option<(u64, BTreeMap<u32, MEnd>, BTreeSet<u32>)>,
}

fn names(e: &Entry) -> Vec<String> {
    e.committables
        .iter()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect()
}

fn m_entry(e: &Entry) -> MEntry {
    MEntry {
        names: names(e),
        watermark: e.watermark,
    }
}

fn m_end(e: &Entry) -> MEnd {
    MEnd {
        names: names(e),
        watermark: e.watermark,
        synthesized: false,
    }
}

/// A watermark with both infinities, ordered (SEMANTICS 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wm {
    NegInf,
    At(i64),
    PosInf,
}

impl Mirror {
    pub fn new(parallelism: u32) -> Self {
        Mirror {
            slots: vec![MSlot::default(); parallelism as usize],
            final_done: false,
            restoring: None,
        }
    }

    /// A new instance restored from state whose END entries are `ends`.
    pub fn restoring(
        parallelism: u32,
        r: u64,
        ends: BTreeMap<u32, MEnd>,
        finished: &BTreeSet<u32>,
    ) -> Self {
        let mut m = Mirror::new(parallelism);
        let mut ends = ends;
        for &s in finished {
            ends.entry(s).or_insert(MEnd {
                names: Vec::new(),
                watermark: None,
                synthesized: true,
            });
        }
        for (s, e) in &ends {
            m.slots[*s as usize].end = Some(e.clone());
        }
        m.restoring = Some((r, ends, finished.clone()));
        m
    }

    pub fn all_ended(&self) -> bool {
        self.slots.iter().all(|s| s.end.is_some())
    }

    pub fn event(&mut self, s: u32, e: &Entry) {
        if self.final_done || self.restoring.is_some() {
            return;
        }
        let slot = &mut self.slots[s as usize];
        if e.checkpoint == END {
            slot.end = Some(m_end(e));
        } else {
            slot.entries.insert(e.checkpoint, m_entry(e));
            slot.max = slot.max.max(Some(e.checkpoint));
        }
    }

    /// A restore event; returns true if it completed a global recovery.
    pub fn restored(&mut self, s: u32, r: u64, entries: &[Entry]) -> bool {
        if let Some((_, persisted, restored)) = &mut self.restoring {
            let slot = &mut self.slots[s as usize];
            slot.entries.clear();
            slot.end = persisted.get(&s).cloned();
            for e in entries {
                if e.checkpoint == END {
                    slot.end = Some(m_end(e));
                } else {
                    slot.entries.insert(e.checkpoint, m_entry(e));
                }
            }
            slot.max = Some(r);
            restored.insert(s);
            return restored.len() == self.slots.len();
        }
        if self.final_done {
            return false;
        }
        let slot = &mut self.slots[s as usize];
        for e in entries {
            if e.checkpoint == END {
                slot.end = Some(m_end(e));
            } else {
                slot.entries.insert(e.checkpoint, m_entry(e));
            }
        }
        slot.max = slot.max.max(Some(r));
        false
    }

    pub fn reset(&mut self, s: u32, r: Option<u64>) {
        if let Some((_, persisted, restored)) = &mut self.restoring {
            let slot = &mut self.slots[s as usize];
            slot.entries.clear();
            slot.max = None;
            slot.end = persisted.get(&s).cloned();
            restored.remove(&s);
            return;
        }
        if self.final_done {
            return;
        }
        let slot = &mut self.slots[s as usize];
        match r {
            Some(r) => {
                slot.entries = slot
                    .entries
                    .range(..=r)
                    .map(|(c, e)| (*c, e.clone()))
                    .collect();
            }
            None => slot.entries.clear(),
        }
        slot.max = slot.entries.keys().next_back().copied();
        slot.end = None;
    }

    /// The recovery became complete (the call that completed it succeeded).
    pub fn finish_recovery(&mut self) {
        self.restoring = None;
    }

    pub fn is_restoring(&self) -> bool {
        self.restoring.is_some()
    }

    pub fn restore_point(&self) -> Option<u64> {
        self.restoring.as_ref().map(|(r, _, _)| *r)
    }

    pub fn all_restored(&self) -> bool {
        self.restoring
            .as_ref()
            .is_some_and(|(_, _, restored)| restored.len() == self.slots.len())
    }

    /// The committables and watermark a snapshot for ordinary checkpoint
    /// `c` must have (SEMANTICS 1 and 3).
    pub fn expected_ordinary(&self, c: u64) -> (Vec<(u32, String)>, Option<i64>) {
        let mut committables = Vec::new();
        let mut wm = Wm::PosInf;
        for (s, slot) in self.slots.iter().enumerate() {
            let w = match slot.entries.get(&c) {
                Some(e) => {
                    committables.extend(e.names.iter().map(|n| (s as u32, n.clone())));
                    e.watermark.map_or(Wm::NegInf, Wm::At)
                }
                None if slot.end.is_some() => Wm::PosInf,
                None => Wm::NegInf,
            };
            wm = wm.min(w);
        }
        let wm = match wm {
            Wm::At(v) => Some(v),
            _ => None,
        };
        (committables, wm)
    }

    /// The committables and watermark of the END snapshot.
    pub fn expected_end(&self) -> (Vec<(u32, String)>, Option<i64>) {
        let mut committables = Vec::new();
        let mut wm = Wm::PosInf;
        for (s, slot) in self.slots.iter().enumerate() {
            if let Some(e) = &slot.end {
                committables.extend(e.names.iter().map(|n| (s as u32, n.clone())));
                if !e.synthesized {
                    wm = wm.min(e.watermark.map_or(Wm::NegInf, Wm::At));
                }
            }
        }
        let wm = match wm {
            Wm::At(v) => Some(v),
            _ => None,
        };
        (committables, wm)
    }

    /// The END entries the state bytes must hold: (subtask, names,
    /// watermark, synthesized), none after the final commit.
    pub fn expected_state_ends(&self) -> Vec<(u32, MEnd)> {
        if self.final_done {
            return Vec::new();
        }
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(s, slot)| slot.end.clone().map(|e| (s as u32, e)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_detect_overlap_and_merge() {
        let mut r = Records::default();
        assert_eq!(r.add(0, 0, 3), Ok(()));
        assert_eq!(r.add(0, 5, 7), Ok(()));
        assert_eq!(r.add(0, 3, 5), Ok(()));
        assert!(r.is_exactly(0, 7));
        assert_eq!(r.add(0, 6, 9), Err(6));
        assert_eq!(r.add(1, 2, 4), Ok(()));
        assert_eq!(r.add(1, 0, 3), Err(2));
        assert!(!r.is_exactly(1, 4));
        assert!(r.is_exactly(2, 0));
    }
}
