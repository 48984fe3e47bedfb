//! Savepoint auto-tags (SEMANTICS 5.4).
//!
//! The coordinator's own checkpoint is taken before writers learn that a
//! checkpoint is a savepoint, so the pending set is not persisted: writers
//! replay the flag from their state after a failover.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::env::Env;
use crate::error::Result;
use crate::table::{self, TableLog};

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
    /// snapshot this commit user wrote, then drop it (tagged or not). An id
    /// leaves the set only once its tag is durable, so a storage error keeps it.
    pub fn tag_up_to(
        &mut self,
        env: &mut dyn Env,
        log: &mut TableLog,
        user: &str,
        t: u64,
        out: &mut TagChanges,
    ) -> Result<()> {
        while let Some(&s) = self.pending.0.first().filter(|s| **s <= t) {
            if let Some(id) = log.find_user_snapshot(env, user, s)? {
                let name = tag_name(s);
                if table::create_tag(env, &name, id, s, user, self.retained_ms)? {
                    out.created.push(name);
                }
            }
            self.pending.remove(s);
        }
        Ok(())
    }

    /// `checkpoint-aborted(s)`: forget the pending id, remember the abort, and
    /// delete a tag that already points at this user's snapshot for `s`.
    pub fn aborted(
        &mut self,
        env: &mut dyn Env,
        user: &str,
        s: u64,
        out: &mut TagChanges,
    ) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        self.pending.remove(s);
        self.aborted.insert(s);
        let name = tag_name(s);
        if table::delete_own_tag(env, &name, user, s)? {
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
    /// gets no tag and owes none (SEMANTICS 5.4, 5.5).
    pub fn no_snapshot(&mut self, s: u64) {
        self.pending.remove(s);
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
