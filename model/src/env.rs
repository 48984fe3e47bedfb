//! The model's storage: an in-memory table behind a fault injector that
//! behaves exactly like the replayer's `storage_fault` step with
//! `call: "put"` (TRACE-FORMAT): after `skip` well-behaved put-class calls
//! (`put` and `put-if-absent`), the next one fails (`fail`: nothing changes)
//! or fails ambiguously (`ambiguous`: the change is applied, then an error
//! is returned). Reads, lists and deletes always succeed.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use sink_coordinator::{Clock, MemStorage, StepClock, Storage, StorageError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultMode {
    Fail,
    Ambiguous,
}

impl FaultMode {
    pub fn name(self) -> &'static str {
        match self {
            FaultMode::Fail => "fail",
            FaultMode::Ambiguous => "ambiguous",
        }
    }
}

/// Storage + clock of one model run (the clock always reads 0: the trace's
/// `clock_start_ms` and `clock_step_ms` are 0).
#[derive(Clone, Debug, Default)]
pub struct FaultEnv {
    pub mem: MemStorage,
    clock: StepClock,
    /// The queued fault: `(skip, mode)`.
    pub armed: Option<(u64, FaultMode)>,
    /// The fault misbehaved (at most one per run).
    pub fired: Option<FaultMode>,
    /// The fault misbehaved during the current call (reset before every call).
    pub fired_now: Option<FaultMode>,
}

impl FaultEnv {
    fn take(&mut self) -> Option<FaultMode> {
        let (skip, mode) = self.armed.as_mut()?;
        if *skip > 0 {
            *skip -= 1;
            return None;
        }
        let mode = *mode;
        self.armed = None;
        self.fired = Some(mode);
        self.fired_now = Some(mode);
        Some(mode)
    }

    /// Same storage contents and fault queue (the replay check).
    pub fn same(&self, other: &FaultEnv) -> bool {
        self.mem.map == other.mem.map && self.armed == other.armed && self.fired == other.fired
    }
}

impl Hash for FaultEnv {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.mem.map.hash(h);
        self.armed.hash(h);
        // `fired` is history (coverage), not behaviour: not hashed.
    }
}

fn injected(op: &str, key: &str, mode: FaultMode) -> StorageError {
    StorageError::Io(format!("injected fault ({}): {op} {key:?}", mode.name()))
}

impl Storage for FaultEnv {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.mem.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        match self.take() {
            None => self.mem.put_if_absent(key, value),
            Some(FaultMode::Fail) => Err(injected("put-if-absent", key, FaultMode::Fail)),
            Some(FaultMode::Ambiguous) => {
                self.mem.put_if_absent(key, value)?;
                Err(injected("put-if-absent", key, FaultMode::Ambiguous))
            }
        }
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        match self.take() {
            None => self.mem.put(key, value),
            Some(FaultMode::Fail) => Err(injected("put", key, FaultMode::Fail)),
            Some(FaultMode::Ambiguous) => {
                self.mem.put(key, value)?;
                Err(injected("put", key, FaultMode::Ambiguous))
            }
        }
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.mem.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.mem.list(prefix)
    }
}

impl Clock for FaultEnv {
    fn now_ms(&mut self) -> u64 {
        self.clock.now_ms()
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
