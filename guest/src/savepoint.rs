//! Savepoint auto-tags (SEMANTICS 5.4).
//!
//! The coordinator's own checkpoint is taken before writers learn that a
//! checkpoint is a savepoint, so a pending id whose snapshot does not exist
//! yet is not persisted: writers replay the flag from their state after a
//! failover (and a savepoint aborted after the coordinator's checkpoint
//! does not come back from it). The ids already owed a tag (their snapshot
//! exists) and the aborted ids above the committed mark are persisted
//! (SEMANTICS 7): a finished writer has no state, and a writer restarted
//! below the savepoint never holds its entry again.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::env::Env;
use crate::error::Result;
use crate::table::TableLog;
use crate::types::END;

/// The name of the auto-tag of savepoint `savepoint`.
pub fn tag_name(savepoint: u64) -> String {
    format!("savepoint-{savepoint}")
}

/// A set of checkpoint ids as an ascending `Vec`: a handful of ids at a
/// time, so a sorted vector is as fast as a `BTreeSet` and adds no B-tree
/// instantiation to the component (issue 10: each costs about 5 KB).
#[derive(Clone, Debug, Default)]
struct IdSet(Vec<u64>);

impl IdSet {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn contains(&self, c: u64) -> bool {
        self.0.binary_search(&c).is_ok()
    }
    fn insert(&mut self, c: u64) {
        if let Err(at) = self.0.binary_search(&c) {
            self.0.insert(at, c);
        }
    }
    fn remove(&mut self, c: u64) {
        if let Ok(at) = self.0.binary_search(&c) {
            self.0.remove(at);
        }
    }
    /// The ids in `start..end` (empty when `end <= start`).
    fn range(&self, start: u64, end: u64) -> &[u64] {
        let from = self.0.partition_point(|x| *x < start);
        let to = self.0.partition_point(|x| *x < end).max(from);
        self.0.get(from..to).unwrap_or_default()
    }
    /// Drops every id `<= c`.
    fn drop_up_to(&mut self, c: u64) {
        let n = self.0.partition_point(|x| *x <= c);
        self.0.drain(..n);
    }
}

/// Savepoint ids waiting for their tag, and those aborted.
#[derive(Clone, Debug, Default)]
pub struct Savepoints {
    enabled: bool,
    retained_ms: Option<u64>,
    pending: IdSet,
    /// Pending ids of a drained stop-with-savepoint, whose tag points at the
    /// END snapshot (decided once by the final commit).
    on_end: IdSet,
    /// Those of `on_end` whose checkpoint the deciding attempt passed
    /// knowing it has no snapshot of its own (see `no_snapshot`).
    no_own: IdSet,
    /// Ids aborted during this instance's lifetime: their late flags are ignored.
    aborted: IdSet,
}

/// Tags created or deleted by one operation.
#[derive(Default)]
pub struct TagChanges {
    /// Names of the tags created.
    pub created: alloc::vec::Vec<String>,
    /// Names of the tags deleted.
    pub deleted: alloc::vec::Vec<String>,
}

impl Savepoints {
    /// Auto-tagging on or off; tags expire `retained_ms` after creation.
    pub fn new(enabled: bool, retained_ms: Option<u64>) -> Self {
        Savepoints {
            enabled,
            retained_ms,
            ..Default::default()
        }
    }

    /// Whether auto-tagging is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether savepoint `c` was aborted during this instance's lifetime
    /// (and not yet forgotten as committed).
    pub fn is_aborted(&self, c: u64) -> bool {
        self.aborted.contains(c)
    }

    /// An accepted entry for checkpoint `c` carried the savepoint flag.
    pub fn flagged(&mut self, c: u64) {
        if self.enabled && !self.aborted.contains(c) {
            self.pending.insert(c);
        }
    }

    /// After a commit rule with target `t`: tag every pending `s <= t` whose
    /// snapshot this commit user wrote (for a drained savepoint, its END
    /// snapshot), then drop it (tagged or not). An id leaves the set only
    /// once its tag is durable, so a storage error keeps it.
    pub fn tag_up_to(
        &mut self,
        env: &mut Env<'_>,
        log: &mut TableLog,
        user: &str,
        t: u64,
        out: &mut TagChanges,
    ) -> Result<()> {
        while let Some(&s) = self.pending.0.first().filter(|s| **s <= t) {
            let mut target = log
                .find_user_snapshot(env.storage, user, s)?
                .map(|id| (id, s));
            if target.is_none() && self.on_end.contains(s) {
                target = log
                    .find_user_snapshot(env.storage, user, END)?
                    .map(|id| (id, END));
            }
            if let Some((id, identifier)) = target {
                let name = tag_name(s);
                if log.create_tag(env, &name, id, identifier, user, self.retained_ms)? {
                    out.created.push(name);
                }
            }
            self.pending.remove(s);
            self.on_end.remove(s);
        }
        Ok(())
    }

    /// Forgets the drained decisions of an earlier attempt of the final
    /// commit whose END create failed (the END snapshot did not land, or the
    /// repeat would have found it): this attempt decides again from the
    /// `taken` values it holds now.
    pub fn undecide_on_end(&mut self) {
        self.on_end = IdSet::default();
        self.no_own = IdSet::default();
    }

    /// A final commit attempt failed on storage before its END create: its
    /// drained decisions are void, and an id whose checkpoint it passed
    /// without a snapshot of its own is dropped as `no_snapshot` would have.
    pub fn forget_failed_decisions(&mut self) {
        for &s in &self.no_own.0 {
            self.pending.remove(s);
        }
        self.undecide_on_end();
    }

    /// The final commit of a drained stop-with-savepoint (SEMANTICS 5.4):
    /// pending `s` gets its tag on the END snapshot (unless it has a
    /// snapshot of its own), and is owed it until the tag exists.
    pub fn tag_on_end(&mut self, s: u64) {
        if self.pending.contains(s) {
            self.on_end.insert(s);
        }
    }

    /// The ids owed a tag, for the state bytes (SEMANTICS 5.4, 7): pending
    /// ids at or below `passed` (the snapshot they point at exists: their
    /// entries left the slots), every pending id once the final commit
    /// happened, and the drained ones; each with whether it points at END.
    pub fn owed(&self, final_done: bool, passed: Option<u64>) -> Vec<(u64, bool)> {
        self.pending
            .0
            .iter()
            .filter(|s| self.may_be_owed(**s, final_done, passed))
            .map(|s| (*s, self.on_end.contains(*s)))
            .collect()
    }

    /// Whether pending `s` goes into the state bytes as owed (SEMANTICS 5.4,
    /// 7): its checkpoint was passed (at or below `passed`), or the final
    /// commit happened. A drained decision points at the END snapshot, so it
    /// is persisted only once the final commit happened (an attempt whose
    /// END create failed keeps it, in case the END snapshot landed).
    fn may_be_owed(&self, s: u64, final_done: bool, passed: Option<u64>) -> bool {
        final_done || (passed.is_some_and(|p| s <= p) && !self.on_end.contains(s))
    }

    /// The aborted ids above `mark` (the committed mark of SEMANTICS 3 rule
    /// 2), for the state bytes.
    pub fn aborted_above(&self, mark: Option<u64>) -> &[u64] {
        let from = mark.map_or(0, |m| self.aborted.0.partition_point(|c| *c <= m));
        self.aborted.0.get(from..).unwrap_or_default()
    }

    /// A restored instance starts with the state's owed and aborted ids
    /// (ignored with auto-tagging off).
    pub fn restore(&mut self, owed: &[(u64, bool)], aborted: &[u64]) {
        if !self.enabled {
            return;
        }
        for &c in aborted {
            self.aborted.insert(c);
        }
        for &(s, on_end) in owed {
            if !self.aborted.contains(s) {
                self.pending.insert(s);
                if on_end {
                    self.on_end.insert(s);
                }
            }
        }
    }

    /// `checkpoint-aborted(s)`: forget the pending id, remember the abort, and
    /// delete a tag that already points at this user's snapshot for `s`.
    pub fn aborted(
        &mut self,
        env: &mut Env<'_>,
        log: &mut TableLog,
        user: &str,
        s: u64,
        out: &mut TagChanges,
    ) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        self.pending.remove(s);
        self.on_end.remove(s);
        self.aborted.insert(s);
        let name = tag_name(s);
        if log.delete_own_tag(env.storage, &name, user, s)? {
            out.deleted.push(name);
        }
        Ok(())
    }

    /// Once running, aborted ids up to the committed frontier can be
    /// forgotten: a late event for them is rejected or ignored as committed work.
    pub fn forget_aborted_up_to(&mut self, committed: u64) {
        self.aborted.drop_up_to(committed);
    }

    /// Drops pending savepoint `s`, known to have no snapshot of its own: it
    /// gets no tag and owes none (SEMANTICS 5.4, 5.5); a drained one keeps
    /// its tag on the END snapshot.
    pub fn no_snapshot(&mut self, s: u64) {
        if self.on_end.contains(s) {
            self.no_own.insert(s);
        } else {
            self.pending.remove(s);
        }
    }

    /// Pending ids in `range`, ascending.
    pub fn pending_in(&self, range: core::ops::Range<u64>) -> impl Iterator<Item = &u64> {
        self.pending.range(range.start, range.end).iter()
    }

    /// Nothing pending and nothing aborted: a run of the commit rule has no
    /// savepoint work (the commit rule's early exit relies on it).
    pub fn idle(&self) -> bool {
        self.pending.is_empty() && self.aborted.is_empty()
    }

    /// Pending ids, ascending.
    pub fn pending(&self) -> impl Iterator<Item = &u64> {
        self.pending.0.iter()
    }
}
