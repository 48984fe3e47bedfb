//! Glue for effects: a cloneable shared handle (one storage and one clock
//! serve several coordinator instances, e.g. across a failover) and the
//! storage + clock pair a Store or a native call runs against.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::env::{AsEnv, Env};
use crate::{Clock, Storage, StorageError};

/// A cloneable handle to one value; clones see the same value.
///
/// A Mutex (rather than `Rc<RefCell>`) keeps Store data `Send`. Calls never
/// nest, so the lock is never contended by the same thread.
pub struct Shared<T: ?Sized>(Arc<Mutex<T>>);

impl<T> Shared<T> {
    /// The first handle on `value`; clone it to share.
    pub fn new(value: T) -> Self {
        Shared(Arc::new(Mutex::new(value)))
    }
}

impl<T: ?Sized> Shared<T> {
    /// Locks the value. A panic while locked cannot leave a storage or clock
    /// half-updated in a way later readers must avoid, so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<T: Storage + Send + 'static> Shared<T> {
    /// The same value, seen only as a storage.
    pub fn as_storage(&self) -> Shared<dyn Storage + Send> {
        Shared(Arc::clone(&self.0) as Arc<Mutex<dyn Storage + Send>>)
    }
}

impl<T: Clock + Send + 'static> Shared<T> {
    /// The same value, seen only as a clock.
    pub fn as_clock(&self) -> Shared<dyn Clock + Send> {
        Shared(Arc::clone(&self.0) as Arc<Mutex<dyn Clock + Send>>)
    }
}

impl<T: ?Sized> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T: Storage + ?Sized> Storage for Shared<T> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.lock().get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.lock().put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.lock().put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.lock().delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.lock().list(prefix)
    }
}

impl<T: Clock + ?Sized> Clock for Shared<T> {
    fn now_ms(&mut self) -> u64 {
        self.lock().now_ms()
    }
}

/// A storage and a clock, boxed: the data of a component Store, and the
/// `Env` of a native coordinator.
pub struct HostEnv {
    /// The table the coordinator's storage imports read and write.
    pub storage: Box<dyn Storage + Send>,
    /// What the `now` import reads (tag creation times and expiry).
    pub clock: Box<dyn Clock + Send>,
}

impl HostEnv {
    /// Boxes `storage` and `clock` (wrap them in [`Shared`] to keep a
    /// handle outside, e.g. to read the table afterwards).
    pub fn new(storage: impl Storage + Send + 'static, clock: impl Clock + Send + 'static) -> Self {
        HostEnv {
            storage: Box::new(storage),
            clock: Box::new(clock),
        }
    }

    /// For Stores that must not touch a table or time (e.g. a writer): an
    /// empty in-memory storage and a clock stuck at 0.
    pub fn detached() -> Self {
        HostEnv::new(crate::MemStorage::default(), crate::StepClock::default())
    }
}

impl AsEnv for HostEnv {
    fn as_env(&mut self) -> Env<'_> {
        Env::new(&mut *self.storage, &mut *self.clock)
    }
}
