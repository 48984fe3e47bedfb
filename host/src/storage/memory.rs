//! In-memory tables: the core's [`MemStorage`] and [`SharedMemStorage`],
//! a map that several handles of one process share.

pub use sink_coordinator::MemStorage;
use sink_coordinator::{Storage, StorageError};

use super::keys::{check_key, check_prefix};
use std::sync::{Arc, Mutex, MutexGuard};

/// An in-memory table shared by every clone (threads of one process), with
/// the key rules of the other backends ([`check_key`]): what a test needs
/// when two coordinators share one table in memory.
#[derive(Clone, Debug, Default)]
pub struct SharedMemStorage {
    map: Arc<Mutex<MemStorage>>,
}

impl SharedMemStorage {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of every key and value, in key order.
    pub fn snapshot(&self) -> MemStorage {
        self.lock().clone()
    }

    /// A panic while locked cannot leave the map half-updated (each call is
    /// one map operation), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, MemStorage> {
        self.map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Storage for SharedMemStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        check_key(key)?;
        self.lock().get(key)
    }

    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        check_key(key)?;
        // One lock: the check and the insert are one atomic step.
        self.lock().put_if_absent(key, value)
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        check_key(key)?;
        self.lock().put(key, value)
    }

    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        check_key(key)?;
        self.lock().delete(key)
    }

    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        check_prefix(prefix)?;
        self.lock().list(prefix)
    }
}
