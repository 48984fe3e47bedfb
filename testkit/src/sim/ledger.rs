//! The simulator's oracles: what must end up in the table, computed from
//! what the simulated job did, independently of what the coordinator says.
//!
//! - [`Ledger`]: every committable ever produced, with the input records it
//!   covers and its fate (pending, discarded by a rollback, committed).
//! - [`Records`]: per writer, the input records committed so far; a record
//!   committed twice is a duplicate (exactly-once broken), whatever the
//!   committable's name.
//! - [`Mirror`]: what one coordinator instance has been told (SEMANTICS 3, 4
//!   and 6): per writer the ordinary entries, `max` and the END entry, and
//!   the instance's `completed`, so that a snapshot's committables and
//!   watermark, the END snapshot (5.3) and the state bytes (7) can be
//!   recomputed.

use std::collections::{BTreeMap, BTreeSet};

use sink_coordinator::{Entry, END};

/// What happened to one committable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Produced; neither committed nor rolled back.
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
    /// Input records `[lo, hi)` of its writer.
    pub lo: u64,
    pub hi: u64,
    pub fate: Fate,
    /// Produced after the job's final commit (a replay of committed input):
    /// never required, and committing it duplicates records.
    pub post_final: bool,
    /// Delivered to a coordinator at least once (in an event or a restore
    /// event): a committable never reported must never be committed.
    pub reported: bool,
}

#[derive(Default, Debug)]
pub struct Ledger {
    pub items: BTreeMap<String, Item>,
}

impl Ledger {
    /// `a-s3-c17-a2-k0`: job, subtask, checkpoint (or `end`), attempt, index.
    pub fn name(job: &str, subtask: u32, checkpoint: u64, attempt: u32, k: u32) -> String {
        if checkpoint == END {
            format!("{job}-s{subtask}-end-a{attempt}-k{k}")
        } else {
            format!("{job}-s{subtask}-c{checkpoint}-a{attempt}-k{k}")
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

    pub fn mark_reported(&mut self, entries: &[Entry]) {
        for e in entries {
            for c in &e.committables {
                if let Some(item) = self.items.get_mut(String::from_utf8_lossy(c).as_ref()) {
                    item.reported = true;
                }
            }
        }
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

/// An ordinary entry as the coordinator holds it: committable names,
/// watermark and savepoint flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MEntry {
    pub names: Vec<String>,
    pub watermark: Option<i64>,
    pub savepoint: bool,
}

/// An END entry as the coordinator holds it, with `taken`: the first
/// checkpoint whose writer state holds it (SEMANTICS 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MEnd {
    pub names: Vec<String>,
    pub watermark: Option<i64>,
    pub synthesized: bool,
    pub taken: u64,
}

impl MEnd {
    fn synthesized(r: u64) -> Self {
        MEnd {
            names: Vec::new(),
            watermark: None,
            synthesized: true,
            taken: r,
        }
    }

    /// The same report (committables and watermark) as `other`.
    fn same_report(&self, other: &MEnd) -> bool {
        self.names == other.names && self.watermark == other.watermark
    }
}

/// What one slot of a coordinator's state bytes holds (SEMANTICS 7).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PSlot {
    pub end: Option<MEnd>,
    pub entries: BTreeMap<u64, MEntry>,
}

#[derive(Clone, Debug, Default)]
pub struct MSlot {
    pub entries: BTreeMap<u64, MEntry>,
    pub max: Option<u64>,
    pub end: Option<MEnd>,
}

/// A restoring instance: the restore point, what the state held per slot
/// (finished subtasks included), and the subtasks restored so far.
#[derive(Clone, Debug)]
pub struct Restoring {
    pub r: u64,
    pub persisted: BTreeMap<u32, PSlot>,
    pub restored: BTreeSet<u32>,
}

/// One coordinator instance's inputs, as SEMANTICS says it keeps them.
/// Entries are not pruned on commit (a committed checkpoint is never
/// committed again, so stale entries are harmless); the checks that need to
/// know what is committed ask the ledger.
#[derive(Clone, Debug, Default)]
pub struct Mirror {
    pub slots: Vec<MSlot>,
    /// The instance made (or found) the final commit.
    pub final_done: bool,
    /// SEMANTICS 4: the highest completion accepted (`r` after a recovery).
    pub completed: Option<u64>,
    pub restoring: Option<Restoring>,
    /// The highest committed-up-to the instance reported.
    pub up_to: Option<u64>,
    /// Savepoints aborted during the instance's life: flags for them are
    /// cleared, and ignored when they arrive later (SEMANTICS 5.4).
    pub aborted: BTreeSet<u64>,
    /// The subtasks named finished at the restore: finished for the
    /// instance's lifetime, their restore events and resets are ignored
    /// (SEMANTICS 6.2).
    pub finished: BTreeSet<u32>,
    /// The checkpoint the instance was restored from.
    pub restored_from: Option<u64>,
}

pub fn names<B: AsRef<[u8]>>(committables: impl IntoIterator<Item = B>) -> Vec<String> {
    committables
        .into_iter()
        .map(|c| String::from_utf8_lossy(c.as_ref()).into_owned())
        .collect()
}

fn m_entry(e: &Entry, aborted: &BTreeSet<u64>) -> MEntry {
    MEntry {
        names: names(&e.committables),
        watermark: e.watermark,
        savepoint: e.savepoint && !aborted.contains(&e.checkpoint),
    }
}

fn m_end(e: &Entry, taken: u64) -> MEnd {
    MEnd {
        names: names(&e.committables),
        watermark: e.watermark,
        synthesized: false,
        taken,
    }
}

/// A watermark with both infinities, ordered (SEMANTICS 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wm {
    NegInf,
    At(i64),
    PosInf,
}

fn recorded(w: Wm) -> Option<i64> {
    match w {
        Wm::At(v) => Some(v),
        _ => None,
    }
}

impl Mirror {
    pub fn new(parallelism: u32) -> Self {
        Mirror {
            slots: vec![MSlot::default(); parallelism as usize],
            ..Mirror::default()
        }
    }

    /// A new instance restored from state holding `persisted` (finished
    /// subtasks without one get a synthesized END entry).
    pub fn restoring(
        parallelism: u32,
        r: u64,
        mut persisted: BTreeMap<u32, PSlot>,
        finished: &BTreeSet<u32>,
    ) -> Self {
        let mut m = Mirror::new(parallelism);
        for p in persisted.values_mut() {
            if let Some(e) = p.end.as_mut() {
                // Kept from the state bytes, at most `r` (v1 and v2 bytes
                // recorded none: END, read as `r`).
                e.taken = e.taken.min(r);
            }
        }
        for &s in finished {
            let slot = persisted.entry(s).or_default();
            if slot.end.is_none() {
                slot.end = Some(MEnd::synthesized(r));
            }
        }
        m.finished = finished.clone();
        m.restored_from = Some(r);
        for (s, p) in &persisted {
            let slot = &mut m.slots[*s as usize];
            slot.end = p.end.clone();
            slot.entries = p.entries.clone();
        }
        for &s in finished {
            m.slots[s as usize].max = Some(r);
        }
        m.restoring = Some(Restoring {
            r,
            persisted,
            restored: finished.clone(),
        });
        m
    }

    pub fn all_ended(&self) -> bool {
        self.slots.iter().all(|s| s.end.is_some())
    }

    pub fn is_restoring(&self) -> bool {
        self.restoring.is_some()
    }

    pub fn restore_point(&self) -> Option<u64> {
        self.restoring.as_ref().map(|r| r.r)
    }

    pub fn all_restored(&self) -> bool {
        self.restoring
            .as_ref()
            .is_some_and(|r| r.restored.len() == self.slots.len())
    }

    /// While restoring: the restore event of `s` arrived (or `s` finished).
    pub fn is_restored(&self, s: u32) -> bool {
        self.restoring
            .as_ref()
            .is_none_or(|r| r.restored.contains(&s))
    }

    /// An event the coordinator accepted (SEMANTICS 3; in `restoring` only
    /// END events of restored slots are delivered, 6.2).
    pub fn event(&mut self, s: u32, e: &Entry) {
        if self.final_done {
            return;
        }
        let restoring = self.restoring.as_ref().map(|r| r.r);
        let slot = &mut self.slots[s as usize];
        if e.checkpoint == END {
            // One above the slot's max (in `restoring`: `r + 1`).
            let taken = match restoring {
                Some(r) => r.saturating_add(1),
                None => slot.max.map_or(0, |m| m.saturating_add(1)),
            };
            let mut end = m_end(e, taken);
            // The reading the core takes (tests/regressions/README.md,
            // drained-savepoint-tag-lost-after-end-resent): an END event
            // equal to the END entry the slot holds is the same entry, whose
            // `taken` stays the first checkpoint that held it (`max + 1` and
            // `r + 1` bound it), also while restoring.
            if let Some(old) = slot.end.as_ref().filter(|o| o.same_report(&end)) {
                end.taken = end.taken.min(old.taken);
            }
            slot.end = Some(end);
        } else if restoring.is_none() {
            slot.entries.insert(e.checkpoint, m_entry(e, &self.aborted));
            slot.max = slot.max.max(Some(e.checkpoint));
        }
    }

    /// A restore event (6.1 in `running`, 6.2 in `restoring`).
    pub fn restored(&mut self, s: u32, r: u64, entries: &[Entry]) {
        if self.finished.contains(&s) {
            // A finished subtask's operator run again (SEMANTICS 6.2): ignored.
            return;
        }
        if let Some(rest) = &mut self.restoring {
            // Applied to what the state held: its ordinary entries replace
            // the state's, its END entry (if any) the persisted one (keeping
            // its `taken` if it is the same report, else `r`).
            let held = rest.persisted.get(&s).cloned().unwrap_or_default();
            let slot = &mut self.slots[s as usize];
            slot.entries = BTreeMap::new();
            slot.end = held.end.clone();
            for e in entries {
                if e.checkpoint == END {
                    let mut end = m_end(e, r);
                    if let Some(old) = held.end.as_ref().filter(|o| o.same_report(&end)) {
                        end.taken = old.taken;
                    }
                    slot.end = Some(end);
                } else {
                    slot.entries.insert(e.checkpoint, m_entry(e, &self.aborted));
                }
            }
            slot.max = Some(r);
            rest.restored.insert(s);
            return;
        }
        if self.final_done {
            return;
        }
        let slot = &mut self.slots[s as usize];
        for e in entries {
            if e.checkpoint == END {
                slot.end = Some(m_end(e, r));
            } else {
                slot.entries.insert(e.checkpoint, m_entry(e, &self.aborted));
            }
        }
        slot.max = slot.max.max(Some(r));
    }

    pub fn reset(&mut self, s: u32, r: Option<u64>) {
        if self.finished.contains(&s) {
            // A finished subtask stays finished (SEMANTICS 6.2): ignored.
            return;
        }
        if let Some(rest) = &mut self.restoring {
            let held = rest.persisted.get(&s).cloned().unwrap_or_default();
            let slot = &mut self.slots[s as usize];
            slot.entries = held.entries;
            slot.end = held.end;
            slot.max = None;
            rest.restored.remove(&s);
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

    /// `checkpoint-aborted(n)` was accepted.
    pub fn abort(&mut self, n: u64) {
        self.aborted.insert(n);
        for slot in &mut self.slots {
            if let Some(e) = slot.entries.get_mut(&n) {
                e.savepoint = false;
            }
        }
        if let Some(rest) = &mut self.restoring {
            for p in rest.persisted.values_mut() {
                if let Some(e) = p.entries.get_mut(&n) {
                    e.savepoint = false;
                }
            }
        }
    }

    /// `checkpoint-complete(n)` was accepted.
    pub fn complete(&mut self, n: u64) {
        if !self.final_done && self.restoring.is_none() {
            self.completed = self.completed.max(Some(n));
        }
    }

    /// The recovery commit ran to completion (the call succeeded).
    pub fn finish_recovery(&mut self) {
        if let Some(rest) = self.restoring.take() {
            self.completed = self.completed.max(Some(rest.r));
        }
    }

    /// The highest `taken` over the END entries (none without any).
    pub fn max_taken(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter_map(|s| s.end.as_ref().map(|e| e.taken))
            .max()
    }

    /// The on-checkpoint final commit is due (SEMANTICS 5.3): every slot
    /// holds an END entry, each captured by a completed checkpoint
    /// (`taken <= completed`; a recovery commit runs with `r`).
    pub fn final_due(&self) -> bool {
        self.all_ended()
            && match (self.max_taken(), self.effective_completed()) {
                (Some(t), Some(c)) => t <= c,
                _ => false,
            }
    }

    /// `completed` as a commit uses it: a recovery commit runs with `r`.
    pub fn effective_completed(&self) -> Option<u64> {
        self.completed.max(self.restore_point())
    }

    /// Every slot covers `c` (SEMANTICS 3): a commit of `c` needs it.
    pub fn covers(&self, c: u64) -> bool {
        self.slots
            .iter()
            .all(|s| s.end.is_some() || s.max.is_some_and(|m| m >= c) || s.entries.contains_key(&c))
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
        (committables, recorded(wm))
    }

    /// The committables and watermark of the END snapshot (SEMANTICS 5.3):
    /// per subtask, its entries of checkpoints above `completed` (all of
    /// them without one), then its END entry; the watermark from the END
    /// entries, synthesized ones neutral.
    pub fn expected_end(&self) -> (Vec<(u32, String)>, Option<i64>) {
        let mut committables = Vec::new();
        let mut wm = Wm::PosInf;
        for (s, slot) in self.slots.iter().enumerate() {
            let above = match self.effective_completed() {
                Some(c) => slot.entries.range(c.saturating_add(1)..),
                None => slot.entries.range(..),
            };
            for e in above.map(|(_, e)| e) {
                committables.extend(e.names.iter().map(|n| (s as u32, n.clone())));
            }
            if let Some(e) = &slot.end {
                committables.extend(e.names.iter().map(|n| (s as u32, n.clone())));
                if !e.synthesized {
                    wm = wm.min(e.watermark.map_or(Wm::NegInf, Wm::At));
                }
            }
        }
        (committables, recorded(wm))
    }

    /// The END entries the state bytes must hold (none after the final
    /// commit): `(subtask, entry)` in subtask order.
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

    fn entry(c: u64, names: &[&str], wm: Option<i64>) -> Entry {
        Entry {
            checkpoint: c,
            committables: names.iter().map(|n| n.as_bytes().to_vec()).collect(),
            watermark: wm,
            savepoint: false,
        }
    }

    #[test]
    fn end_snapshot_holds_entries_above_completed() {
        let mut m = Mirror::new(2);
        m.event(0, &entry(1, &["a"], Some(5)));
        m.event(0, &entry(2, &["b"], Some(6)));
        m.event(1, &entry(1, &["c"], Some(4)));
        m.complete(1);
        m.event(0, &entry(END, &["e0"], Some(9)));
        m.event(1, &entry(END, &[], None));
        let (names, wm) = m.expected_end();
        assert_eq!(
            names,
            vec![(0, "b".to_string()), (0, "e0".to_string())],
            "checkpoint 2 never completed: its entry goes into the END snapshot"
        );
        assert_eq!(wm, None, "an END entry without a watermark is -inf");
        assert!(m.covers(2));
    }

    #[test]
    fn taken_follows_section_3() {
        // END with no max: 0; after reports: max + 1; a replacement recomputes.
        let mut m = Mirror::new(2);
        m.event(0, &entry(END, &["e0"], None));
        assert_eq!(m.slots[0].end.as_ref().map(|e| e.taken), Some(0));
        m.event(1, &entry(1, &["b1"], None));
        m.event(1, &entry(2, &[], None));
        m.event(1, &entry(END, &["f1"], None));
        assert_eq!(m.max_taken(), Some(3));
        m.complete(2);
        assert!(
            !m.final_due(),
            "a completion below some taken does not make it"
        );
        m.complete(3);
        assert!(m.final_due());
        // A region restore event's END entry: taken = r.
        m.reset(1, Some(1));
        assert!(!m.all_ended());
        m.restored(1, 1, &[entry(END, &["f1"], None)]);
        assert_eq!(m.slots[1].end.as_ref().map(|e| e.taken), Some(1));
        // The restored writer ends again with the same END entry: it keeps
        // the lower taken (the core's reading, tests/regressions/README.md);
        // another END entry gets max + 1.
        m.event(1, &entry(END, &["f1"], None));
        assert_eq!(m.slots[1].end.as_ref().map(|e| e.taken), Some(1));
        m.event(1, &entry(END, &["f1", "f2"], None));
        assert_eq!(m.slots[1].end.as_ref().map(|e| e.taken), Some(2));
    }

    #[test]
    fn restore_keeps_taken_and_ignores_finished_subtasks() {
        let mut persisted = BTreeMap::new();
        let end = |names: &[&str], taken| MEnd {
            names: names.iter().map(|n| n.to_string()).collect(),
            watermark: None,
            synthesized: false,
            taken,
        };
        persisted.insert(
            1,
            PSlot {
                end: Some(end(&["f1"], 0)),
                entries: BTreeMap::new(),
            },
        );
        // Subtask 2 finished without an END entry in the state: synthesized, t = r.
        let finished: BTreeSet<u32> = [2].into_iter().collect();
        let mut m = Mirror::restoring(3, 5, persisted, &finished);
        assert_eq!(
            m.slots[2].end.as_ref().map(|e| (e.synthesized, e.taken)),
            Some((true, 5))
        );
        // A finished subtask's replays change nothing.
        m.restored(2, 5, &[]);
        m.reset(2, Some(5));
        assert!(m.is_restored(2) && m.slots[2].end.is_some());
        // Subtask 0 restores and ends while restoring: t = r + 1 (its
        // resend of the same END entry keeps that).
        m.restored(0, 5, &[entry(4, &["a4"], None)]);
        m.event(0, &entry(END, &["e0"], None));
        assert_eq!(m.slots[0].end.as_ref().map(|e| e.taken), Some(6));
        m.event(0, &entry(END, &["e0"], None));
        assert_eq!(m.slots[0].end.as_ref().map(|e| e.taken), Some(6));
        // Subtask 1 re-delivers the state's END entry: its taken is kept;
        // another report gets r.
        m.restored(1, 5, &[entry(END, &["f1"], None)]);
        assert_eq!(m.slots[1].end.as_ref().map(|e| e.taken), Some(0));
        m.restored(1, 5, &[entry(END, &["f1", "f2"], None)]);
        assert_eq!(m.slots[1].end.as_ref().map(|e| e.taken), Some(5));
        assert!(m.all_restored());
        m.finish_recovery();
        assert!(
            m.finished.contains(&2),
            "finished for the instance's lifetime"
        );
        m.reset(2, None);
        assert!(m.slots[2].end.is_some());
        assert!(!m.final_due(), "t = 6 > completed 5");
        m.complete(6);
        assert!(m.final_due());
    }
}
