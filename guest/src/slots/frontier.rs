//! The multiset of `max` over the slots without an END entry, whose
//! minimum is the commit frontier (SEMANTICS 5.1); the same type counts the
//! END entries' `taken` (whose maximum the final commit waits for, 5.3).
//!
//! A sorted deque of `(max, count)` rather than an ordered map: writers
//! report checkpoints in increasing order and stay close to each other, so
//! the values held are few and an event moves one count from the front
//! (the lowest max) to the back (the newest checkpoint), both O(1) without
//! allocation; any other value is found by binary search.

use alloc::collections::VecDeque;

/// Counts of each `max` value, ascending by value, no zero counts.
#[derive(Clone, Debug, Default)]
pub(super) struct Frontier {
    counts: VecDeque<(u64, u32)>,
}

impl Frontier {
    /// The lowest value held.
    pub(super) fn min(&self) -> Option<u64> {
        self.counts.front().map(|(m, _)| *m)
    }

    /// The highest value held.
    pub(super) fn max(&self) -> Option<u64> {
        self.counts.back().map(|(m, _)| *m)
    }

    /// Adds one occurrence of `m`.
    pub(super) fn add(&mut self, m: u64) {
        match self.counts.back_mut() {
            Some((last, n)) if *last == m => *n += 1,
            Some((last, _)) if *last > m => match self.counts.binary_search_by_key(&m, |(v, _)| *v)
            {
                Ok(i) => self.counts[i].1 += 1,
                Err(i) => self.counts.insert(i, (m, 1)),
            },
            _ => self.counts.push_back((m, 1)),
        }
    }

    /// Removes one occurrence of `m` (nothing if it is not held).
    pub(super) fn remove(&mut self, m: u64) {
        let i = match self.counts.front() {
            Some((first, _)) if *first == m => 0,
            _ => match self.counts.binary_search_by_key(&m, |(v, _)| *v) {
                Ok(i) => i,
                Err(_) => return,
            },
        };
        if let Some((_, n)) = self.counts.get_mut(i) {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_counts_in_order() {
        let mut f = Frontier::default();
        assert_eq!(f.min(), None);
        for m in [5, 3, 9, 5, 3, 7] {
            f.add(m);
        }
        assert_eq!(f.min(), Some(3));
        f.remove(3);
        assert_eq!(f.min(), Some(3));
        f.remove(3);
        assert_eq!(f.min(), Some(5));
        f.remove(4); // not held: nothing
        f.remove(7);
        f.remove(5);
        f.remove(5);
        assert_eq!(f.min(), Some(9));
        f.remove(9);
        assert_eq!(f.min(), None);
        assert!(f.counts.is_empty());
    }
}
