//! Per checkpoint id, the subtasks holding an ordinary entry for it and the
//! entries' total size (what the snapshot limit checks).
//!
//! A deque of buckets ascending by checkpoint instead of ordered maps: an
//! event almost always lands in the newest checkpoint (the last bucket) and
//! commits take the oldest (the first), both O(1). Subtasks are appended in
//! arrival order; hosts usually deliver them in subtask order, and the
//! bucket remembers whether they are, so the commit assembles its snapshot
//! without sorting; out-of-order arrivals are sorted once, when the
//! checkpoint is committed (`ordered`). The subtask lists of committed
//! checkpoints are kept for reuse, so that an event allocates nothing here.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

#[derive(Clone, Debug)]
struct Bucket {
    checkpoint: u64,
    subtasks: Vec<u32>,
    /// `subtasks` ascends.
    sorted: bool,
    bytes: u64,
}

/// Spare subtask lists kept for reuse (a few checkpoints in flight).
const SPARE_LISTS: usize = 4;

/// The buckets, ascending by checkpoint, none empty.
#[derive(Clone, Debug, Default)]
pub(super) struct Checkpoints {
    buckets: VecDeque<Bucket>,
    spare: Vec<Vec<u32>>,
}

impl Checkpoints {
    fn find(&self, c: u64) -> Result<usize, usize> {
        match self.buckets.back() {
            Some(b) if b.checkpoint == c => Ok(self.buckets.len() - 1),
            Some(b) if b.checkpoint < c => Err(self.buckets.len()),
            _ => self.buckets.binary_search_by_key(&c, |b| b.checkpoint),
        }
    }

    /// The lowest checkpoint held.
    pub(super) fn first(&self) -> Option<u64> {
        self.buckets.front().map(|b| b.checkpoint)
    }

    /// Whether no checkpoint is held.
    pub(super) fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The checkpoints held up to `t`, ascending.
    pub(super) fn up_to(&self, t: u64) -> impl Iterator<Item = u64> + '_ {
        self.buckets
            .iter()
            .map(|b| b.checkpoint)
            .take_while(move |c| *c <= t)
    }

    /// Total size of the entries held for `c`.
    pub(super) fn bytes(&self, c: u64) -> u64 {
        self.find(c).map_or(0, |i| self.buckets[i].bytes)
    }

    /// The subtasks holding an entry for `c`, in subtask order once
    /// [`Self::order`] ran for `c`.
    pub(super) fn subtasks(&self, c: u64) -> &[u32] {
        match self.find(c) {
            Ok(i) => &self.buckets[i].subtasks,
            Err(_) => &[],
        }
    }

    /// Sorts the subtasks of `c` if they arrived out of order (unstable
    /// sort: the values are distinct, so the result is deterministic).
    pub(super) fn order(&mut self, c: u64) {
        if let Ok(i) = self.find(c) {
            let b = &mut self.buckets[i];
            if !b.sorted {
                b.subtasks.sort_unstable();
                b.sorted = true;
            }
        }
    }

    /// Subtask `s`, which holds no entry for `c` yet, now holds one of `bytes`.
    pub(super) fn add(&mut self, c: u64, s: u32, bytes: u64) {
        let i = match self.find(c) {
            Ok(i) => i,
            Err(i) => {
                let subtasks = self.spare.pop().unwrap_or_default();
                let bucket = Bucket {
                    checkpoint: c,
                    subtasks,
                    sorted: true,
                    bytes: 0,
                };
                self.buckets.insert(i, bucket);
                i
            }
        };
        let b = &mut self.buckets[i];
        b.sorted &= b.subtasks.last().is_none_or(|last| *last < s);
        b.subtasks.push(s);
        b.bytes = b.bytes.saturating_add(bytes);
    }

    /// An entry for `c` was replaced: its size changes from `old` to `new`.
    pub(super) fn resize(&mut self, c: u64, old: u64, new: u64) {
        if let Ok(i) = self.find(c) {
            let b = &mut self.buckets[i];
            b.bytes = b.bytes.saturating_sub(old).saturating_add(new);
        }
    }

    /// Subtask `s`'s entry for `c` (of `bytes`) left (a reset; rare).
    pub(super) fn remove_one(&mut self, c: u64, s: u32, bytes: u64) {
        let Ok(i) = self.find(c) else {
            return;
        };
        let b = &mut self.buckets[i];
        if let Some(pos) = b.subtasks.iter().position(|x| *x == s) {
            // `remove`, not `swap_remove`: the order stays as it was.
            b.subtasks.remove(pos);
            b.bytes = b.bytes.saturating_sub(bytes);
        }
        if b.subtasks.is_empty() {
            self.take(i);
        }
    }

    /// Removes checkpoint `c` and returns its subtasks in subtask order;
    /// the caller hands the list back with [`Self::recycle`].
    pub(super) fn remove(&mut self, c: u64) -> Option<Vec<u32>> {
        self.order(c);
        let i = self.find(c).ok()?;
        let b = self.buckets.remove(i)?;
        Some(b.subtasks)
    }

    fn take(&mut self, i: usize) {
        if let Some(b) = self.buckets.remove(i) {
            self.recycle(b.subtasks);
        }
    }

    /// Keeps a subtask list for the next checkpoint.
    pub(super) fn recycle(&mut self, mut list: Vec<u32>) {
        if self.spare.len() < SPARE_LISTS {
            list.clear();
            self.spare.push(list);
        }
    }

    /// Removes every checkpoint.
    pub(super) fn clear(&mut self) {
        while let Some(b) = self.buckets.pop_front() {
            self.recycle(b.subtasks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_stay_ascending_and_subtasks_ordered() {
        let mut cp = Checkpoints::default();
        cp.add(5, 2, 10);
        cp.add(5, 0, 1);
        cp.add(3, 1, 4);
        cp.add(7, 1, 0);
        assert_eq!(cp.up_to(5).collect::<Vec<_>>(), [3, 5]);
        assert_eq!((cp.bytes(5), cp.bytes(4)), (11, 0));
        assert_eq!(cp.subtasks(5), [2, 0]);
        cp.order(5);
        assert_eq!(cp.subtasks(5), [0, 2]);
        cp.resize(5, 10, 3);
        assert_eq!(cp.bytes(5), 4);
        cp.remove_one(3, 1, 4);
        assert_eq!(cp.first(), Some(5));
        let list = cp.remove(5).unwrap();
        assert_eq!(list, [0, 2]);
        cp.recycle(list);
        assert_eq!(cp.first(), Some(7));
        cp.clear();
        assert!(cp.is_empty());
        assert!(!cp.spare.is_empty());
    }
}
