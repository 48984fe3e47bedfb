//! [`FaultyStorage`]: a wrapper injecting the faults of TRACE-FORMAT's
//! `storage_fault` step.

use std::collections::VecDeque;

use sink_coordinator::{Storage, StorageError};

/// A class of storage calls, as named by a `storage_fault` step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallKind {
    /// `put` and `put-if-absent`.
    Put,
    /// `get`.
    Get,
    /// `list`.
    List,
    /// `delete`.
    Delete,
}

impl CallKind {
    /// Every kind, in the order of TRACE-FORMAT's list.
    pub const ALL: [CallKind; 4] = [
        CallKind::Put,
        CallKind::Get,
        CallKind::List,
        CallKind::Delete,
    ];

    /// The name a `storage_fault` step's `call` uses.
    pub fn name(self) -> &'static str {
        match self {
            CallKind::Put => "put",
            CallKind::Get => "get",
            CallKind::List => "list",
            CallKind::Delete => "delete",
        }
    }

    /// The kind named `name` ([`CallKind::name`]), if any.
    pub fn parse(name: &str) -> Option<Self> {
        CallKind::ALL.into_iter().find(|k| k.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a faulty call misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultMode {
    /// The call returns an error and changes nothing.
    Fail,
    /// The change is applied, then an error is returned (for get and list
    /// the same as `Fail`).
    Ambiguous,
}

impl FaultMode {
    /// The name a `storage_fault` step's `mode` uses.
    pub fn name(self) -> &'static str {
        match self {
            FaultMode::Fail => "fail",
            FaultMode::Ambiguous => "ambiguous",
        }
    }

    /// The mode named `name` ([`FaultMode::name`]), if any.
    pub fn parse(name: &str) -> Option<Self> {
        [FaultMode::Fail, FaultMode::Ambiguous]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// One `storage_fault` step: after `skip` well-behaved calls of its kind, the
/// next `count` calls misbehave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fault {
    /// Well-behaved calls of the kind to let through first.
    pub skip: u64,
    /// Calls that misbehave after them (0: none; the fault is dropped).
    pub count: u64,
    /// How they misbehave.
    pub mode: FaultMode,
}

/// Which storage calls the fault queues count, by the table's layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FaultScope {
    /// Every call (the native layout: each of its calls is one TRACE-FORMAT speaks of).
    #[default]
    Every,
    /// A Paimon table's calls that have a native twin: snapshot, tag and `LATEST`
    /// puts and gets, the listing of `tag/`, tag deletes
    /// ([`crate::paimon::keys::counts`]). The others (manifests, manifest lists,
    /// `EARLIEST`, the schema, the listing of `snapshot/`) go through without
    /// counting, and an injected fault names the native twin of its key, so that a
    /// trace's faults hit the calls, and word the errors, they do natively.
    PaimonCommitPoints,
}

impl FaultScope {
    /// The scope of a table in `format`.
    pub fn of(format: sink_coordinator::table::TableFormatKind) -> Self {
        match format {
            sink_coordinator::table::TableFormatKind::Native => FaultScope::Every,
            sink_coordinator::table::TableFormatKind::Paimon => FaultScope::PaimonCommitPoints,
        }
    }

    /// Whether a call of `call` on `key` counts toward the queued faults.
    pub fn counts(self, call: CallKind, key: &str) -> bool {
        match self {
            FaultScope::Every => true,
            FaultScope::PaimonCommitPoints => crate::paimon::keys::counts(call, key),
        }
    }

    /// The key an injected fault's text names.
    fn shown(self, key: &str) -> std::borrow::Cow<'_, str> {
        match self {
            FaultScope::Every => std::borrow::Cow::Borrowed(key),
            FaultScope::PaimonCommitPoints => crate::paimon::keys::native_key(key),
        }
    }
}

/// Wraps a storage and injects queued faults (TRACE-FORMAT `storage_fault`).
///
/// Each call kind has a FIFO queue; only its front fault is active, and its
/// `skip` counts the calls made after the previous fault was used up. While
/// `suspended`, calls go straight through and consume nothing (the replayer's
/// own reads of the table). Calls outside its [`FaultScope`] go through likewise.
#[derive(Clone, Debug, Default)]
pub struct FaultyStorage<S> {
    inner: S,
    queues: [VecDeque<Fault>; 4],
    suspended: bool,
    scope: FaultScope,
    /// Calls that misbehaved so far, and how the last one did.
    injected: u64,
    last: Option<FaultMode>,
}

impl<S> FaultyStorage<S> {
    /// `inner` with no fault queued: every call goes through until a fault
    /// is pushed.
    pub fn new(inner: S) -> Self {
        FaultyStorage {
            inner,
            queues: Default::default(),
            suspended: false,
            scope: FaultScope::Every,
            injected: 0,
            last: None,
        }
    }

    /// The wrapped storage (reads past the fault queues).
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The wrapped storage, mutably (writes past the fault queues).
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped storage; queued faults are dropped.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Queues a fault behind the earlier ones of the same kind. A fault with
    /// `count == 0` would misbehave on no call and is dropped.
    pub fn push_fault(&mut self, call: CallKind, fault: Fault) {
        if fault.count > 0 {
            self.queues[call.index()].push_back(fault);
        }
    }

    /// The faults of `call` not yet used up, front first (the front one
    /// possibly partly: its `skip` and `count` as they stand).
    pub fn queued(&self, call: CallKind) -> impl Iterator<Item = &Fault> {
        self.queues[call.index()].iter()
    }

    /// How many calls have misbehaved so far (an armed-once fault fired
    /// during a call when this grew), and how the last one did.
    pub fn injected(&self) -> (u64, Option<FaultMode>) {
        (self.injected, self.last)
    }

    /// Faults of `call` not yet used up (the front one possibly partly).
    pub fn pending(&self, call: CallKind) -> usize {
        self.queues[call.index()].len()
    }

    /// Suspends fault injection (`true`) or resumes it: while suspended,
    /// calls go through and count toward no fault's `skip`, so a host's own
    /// reads of the table neither fail nor shift the faults a trace queued.
    pub fn set_suspended(&mut self, suspended: bool) {
        self.suspended = suspended;
    }

    /// Whether fault injection is suspended.
    pub fn is_suspended(&self) -> bool {
        self.suspended
    }

    /// Sets which calls count toward the faults (all of them by default).
    pub fn set_scope(&mut self, scope: FaultScope) {
        self.scope = scope;
    }

    /// Counts one call of `call` on `key`; returns how it must misbehave, if at all.
    fn take(&mut self, call: CallKind, key: &str) -> Option<FaultMode> {
        if self.suspended || !self.scope.counts(call, key) {
            return None;
        }
        let queue = &mut self.queues[call.index()];
        let front = queue.front_mut()?;
        if front.skip > 0 {
            front.skip -= 1;
            return None;
        }
        let mode = front.mode;
        self.injected += 1;
        self.last = Some(mode);
        front.count -= 1;
        if front.count == 0 {
            queue.pop_front();
        }
        Some(mode)
    }
}

fn injected(scope: FaultScope, op: &str, key: &str, mode: FaultMode) -> StorageError {
    let key = scope.shown(key);
    match mode {
        FaultMode::Fail => StorageError::Io(format!("injected fault: {op} {key:?} failed")),
        FaultMode::Ambiguous => StorageError::Io(format!(
            "injected fault: {op} {key:?} reported an error after it was applied"
        )),
    }
}

impl<S: Storage> Storage for FaultyStorage<S> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        match self.take(CallKind::Get, key) {
            // A read has no change to apply: ambiguous is fail.
            Some(_) => Err(injected(self.scope, "get", key, FaultMode::Fail)),
            None => self.inner.get(key),
        }
    }

    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        match self.take(CallKind::Put, key) {
            Some(FaultMode::Fail) => {
                Err(injected(self.scope, "put-if-absent", key, FaultMode::Fail))
            }
            Some(FaultMode::Ambiguous) => {
                self.inner.put_if_absent(key, value)?;
                Err(injected(
                    self.scope,
                    "put-if-absent",
                    key,
                    FaultMode::Ambiguous,
                ))
            }
            None => self.inner.put_if_absent(key, value),
        }
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        match self.take(CallKind::Put, key) {
            Some(FaultMode::Fail) => Err(injected(self.scope, "put", key, FaultMode::Fail)),
            Some(FaultMode::Ambiguous) => {
                self.inner.put(key, value)?;
                Err(injected(self.scope, "put", key, FaultMode::Ambiguous))
            }
            None => self.inner.put(key, value),
        }
    }

    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        match self.take(CallKind::Delete, key) {
            Some(FaultMode::Fail) => Err(injected(self.scope, "delete", key, FaultMode::Fail)),
            Some(FaultMode::Ambiguous) => {
                self.inner.delete(key)?;
                Err(injected(self.scope, "delete", key, FaultMode::Ambiguous))
            }
            None => self.inner.delete(key),
        }
    }

    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        match self.take(CallKind::List, prefix) {
            Some(_) => Err(injected(self.scope, "list", prefix, FaultMode::Fail)),
            None => self.inner.list(prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator::MemStorage;

    fn fault(skip: u64, count: u64, mode: FaultMode) -> Fault {
        Fault { skip, count, mode }
    }

    #[test]
    fn faulty_skip_and_count() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.push_fault(CallKind::Put, fault(1, 2, FaultMode::Fail));
        assert_eq!(st.put_if_absent("a", b"1"), Ok(true)); // skipped
        assert!(st.put_if_absent("b", b"1").is_err()); // 1st fault
        assert!(st.put("c", b"1").is_err()); // put counts with put-if-absent
        assert_eq!(st.put_if_absent("b", b"1"), Ok(true)); // used up
        assert_eq!(st.inner().map.keys().collect::<Vec<_>>(), ["a", "b"]);
        // Other kinds were never affected.
        assert_eq!(st.get("a"), Ok(Some(b"1".to_vec())));
    }

    #[test]
    fn faulty_queue_order_and_skip_after_previous() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.push_fault(CallKind::Get, fault(0, 1, FaultMode::Fail));
        st.push_fault(CallKind::Get, fault(2, 1, FaultMode::Ambiguous));
        st.push_fault(CallKind::List, fault(0, 1, FaultMode::Fail));
        assert_eq!(st.pending(CallKind::Get), 2);
        assert!(st.get("k").is_err()); // first fault
        assert!(st.get("k").is_ok()); // second fault's skip counts from here
        assert!(st.get("k").is_ok());
        assert!(st.get("k").is_err()); // ambiguous get = fail
        assert!(st.get("k").is_ok());
        assert_eq!(st.pending(CallKind::Get), 0);
        assert!(st.list("").is_err());
        assert!(st.list("").is_ok());
        // count 0 is dropped rather than blocking the queue.
        st.push_fault(CallKind::Delete, fault(0, 0, FaultMode::Fail));
        assert_eq!(st.pending(CallKind::Delete), 0);
    }

    #[test]
    fn faulty_ambiguous_applies_then_errors() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.push_fault(CallKind::Put, fault(0, 2, FaultMode::Ambiguous));
        st.push_fault(CallKind::Delete, fault(0, 1, FaultMode::Ambiguous));
        assert!(st.put_if_absent("a", b"1").is_err());
        assert!(st.put("b", b"2").is_err());
        assert_eq!(st.inner().map.len(), 2, "ambiguous writes landed");
        assert!(st.delete("a").is_err());
        assert_eq!(
            st.inner().map.keys().collect::<Vec<_>>(),
            ["b"],
            "ambiguous delete landed"
        );
        st.push_fault(CallKind::Put, fault(0, 1, FaultMode::Fail));
        assert!(st.put_if_absent("c", b"3").is_err());
        assert!(
            !st.inner().map.contains_key("c"),
            "failed write did not land"
        );
    }

    #[test]
    fn paimon_scope_counts_commit_points_and_names_native_keys() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.set_scope(FaultScope::PaimonCommitPoints);
        st.push_fault(CallKind::Put, fault(1, 1, FaultMode::Fail));
        // A commit: manifest and lists go through uncounted, the snapshot create is the
        // skipped call, `LATEST` the faulted one, `EARLIEST` uncounted.
        st.put("manifest/manifest-a-0", b"m").unwrap();
        st.put("manifest/manifest-list-a-0", b"l").unwrap();
        assert_eq!(st.put_if_absent("snapshot/snapshot-1", b"s"), Ok(true));
        let e = st.put("snapshot/LATEST", b"1").unwrap_err();
        assert_eq!(
            e,
            StorageError::Io("injected fault: put \"hint/latest-snapshot\" failed".into())
        );
        st.put("snapshot/EARLIEST", b"1").unwrap();
        assert_eq!(st.pending(CallKind::Put), 0);
        st.push_fault(CallKind::Get, fault(0, 1, FaultMode::Fail));
        st.get("schema/schema-0").unwrap();
        let e = st.get("snapshot/snapshot-1").unwrap_err();
        assert!(
            e.to_string().contains("snapshot/00000000000000000001"),
            "{e}"
        );
        st.push_fault(CallKind::List, fault(0, 1, FaultMode::Fail));
        st.list("snapshot/").unwrap();
        assert!(st.list("tag/").is_err());
    }

    #[test]
    fn faulty_suspended_bypasses_and_consumes_nothing() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.push_fault(CallKind::List, fault(1, 1, FaultMode::Fail));
        st.set_suspended(true);
        for _ in 0..3 {
            assert!(st.list("").is_ok());
        }
        st.set_suspended(false);
        assert!(st.list("").is_ok()); // the skip
        assert!(st.list("").is_err());
    }
}
