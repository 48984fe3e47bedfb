//! The model's storage: an in-memory table behind a fault injector that
//! behaves exactly like the replayer's `storage_fault` step with
//! `call: "put"` (TRACE-FORMAT): after `skip` well-behaved put-class calls
//! (`put` and `put-if-absent`), the next one fails (`fail`: nothing changes)
//! or fails ambiguously (`ambiguous`: the change is applied, then an error
//! is returned). Reads, lists and deletes always succeed.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use sink_coordinator::{AsEnv, Env, MemStorage, StepClock, Storage, StorageError};
use sink_coordinator_trace::faults::{CallKind, Fault, FaultyStorage};

/// How the armed fault misbehaves: the trace crate's, so that a
/// counterexample's `storage_fault` step replays the same fault.
pub use sink_coordinator_trace::faults::FaultMode;

/// Storage + clock of one model run (the clock always reads 0: the trace's
/// `clock_start_ms` and `clock_step_ms` are 0). The fault injector is the
/// replayer's own ([`FaultyStorage`]) with at most one `put` fault queued.
#[derive(Clone, Debug, Default)]
pub struct FaultEnv {
    store: FaultStore,
    clock: StepClock,
}

/// The storage half of a [`FaultEnv`]: the injector, and what it did.
#[derive(Clone, Debug, Default)]
struct FaultStore {
    storage: FaultyStorage<MemStorage>,
    /// The fault misbehaved (at most one per run).
    fired: Option<FaultMode>,
    /// The fault misbehaved during the current call (reset before every call).
    fired_now: Option<FaultMode>,
}

impl FaultEnv {
    /// Arms the run's fault: after `skip` well-behaved put-class calls, the
    /// next one misbehaves as `mode` (a `storage_fault` step with `count` 1).
    pub fn arm(&mut self, skip: u64, mode: FaultMode) {
        self.store.storage.push_fault(
            CallKind::Put,
            Fault {
                skip,
                count: 1,
                mode,
            },
        );
    }

    /// Whether a fault is armed and has not fired yet.
    pub fn is_armed(&self) -> bool {
        self.store.storage.pending(CallKind::Put) > 0
    }

    /// The table's records.
    pub fn map(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.store.storage.inner().map
    }

    fn armed(&self) -> Option<Fault> {
        self.store.storage.queued(CallKind::Put).next().copied()
    }

    /// Same storage contents and fault queue (the replay check).
    pub fn same(&self, other: &FaultEnv) -> bool {
        self.map() == other.map()
            && self.armed() == other.armed()
            && self.store.fired == other.store.fired
    }

    /// The fault misbehaved during the current call.
    pub fn fired_now(&self) -> Option<FaultMode> {
        self.store.fired_now
    }

    /// Forgets the last call's fault, before the next call.
    pub fn start_call(&mut self) {
        self.store.fired_now = None;
    }
}

impl Hash for FaultEnv {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.map().hash(h);
        self.armed().hash(h);
        // `fired` is history (coverage), not behaviour: not hashed.
    }
}

impl FaultStore {
    /// A put-class call through the injector, noting whether it fired.
    fn put_call<T>(&mut self, call: impl FnOnce(&mut FaultyStorage<MemStorage>) -> T) -> T {
        let (before, _) = self.storage.injected();
        let result = call(&mut self.storage);
        let (after, mode) = self.storage.injected();
        if after > before {
            self.fired = mode;
            self.fired_now = mode;
        }
        result
    }
}

impl Storage for FaultStore {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.storage.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.put_call(|s| s.put_if_absent(key, value))
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.put_call(|s| s.put(key, value))
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.storage.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.storage.list(prefix)
    }
}

impl AsEnv for FaultEnv {
    fn as_env(&mut self) -> Env<'_> {
        Env::new(&mut self.store, &mut self.clock)
    }
}

/// Read-only view of a table, for the model's own reads (they must not
/// consume the fault, like the replayer's suspended reads).
pub struct ReadOnly<'a>(pub &'a BTreeMap<String, Vec<u8>>);

impl Storage for ReadOnly<'_> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.0.get(key).cloned())
    }
    fn put_if_absent(&mut self, _: &str, _: &[u8]) -> Result<bool, StorageError> {
        Err(StorageError::Io("read-only".into()))
    }
    fn put(&mut self, _: &str, _: &[u8]) -> Result<(), StorageError> {
        Err(StorageError::Io("read-only".into()))
    }
    fn delete(&mut self, _: &str) -> Result<(), StorageError> {
        Err(StorageError::Io("read-only".into()))
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        Ok(self
            .0
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect())
    }
}
