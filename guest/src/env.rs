//! The only two effects the core has: storage and time. The component
//! bindings implement them with the WIT imports; native hosts and tests
//! implement them directly (e.g. in memory).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// A storage failure, as returned by the `storage` import.
#[derive(Clone, Debug)]
pub enum StorageError {
    /// The backend failed; for writes the change may or may not have landed.
    Io(String),
    /// The key is not acceptable to the backend.
    InvalidKey(String),
    /// Like [`StorageError::Io`], keeping the backend's own error as the
    /// [`source`](core::error::Error::source) (native backends; across the
    /// WIT boundary it travels as `io` with the full text).
    Backend {
        /// What the backend was doing.
        context: String,
        /// The backend's error.
        source: Arc<dyn core::error::Error + Send + Sync>,
    },
}

impl StorageError {
    /// A backend failure with its cause kept.
    pub fn backend(
        context: impl Into<String>,
        source: impl core::error::Error + Send + Sync + 'static,
    ) -> Self {
        StorageError::Backend {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// Whether the key was refused (`invalid-key`) rather than the backend failing.
    pub fn is_invalid_key(&self) -> bool {
        matches!(self, StorageError::InvalidKey(_))
    }

    /// The text of the WIT variant's payload: the message, for a backend
    /// error with its cause (`context: source`).
    pub fn detail(&self) -> String {
        match self {
            StorageError::Io(m) | StorageError::InvalidKey(m) => m.clone(),
            StorageError::Backend { context, source } => alloc::format!("{context}: {source}"),
        }
    }
}

/// Equal when the variant and the text are (a backend error compares by
/// its context and its source's text).
impl PartialEq for StorageError {
    fn eq(&self, other: &Self) -> bool {
        self.is_invalid_key() == other.is_invalid_key() && self.detail() == other.detail()
    }
}

impl Eq for StorageError {}

impl core::fmt::Display for StorageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StorageError::Io(m) => write!(f, "storage i/o error: {m}"),
            StorageError::InvalidKey(m) => write!(f, "invalid storage key: {m}"),
            StorageError::Backend { context, source } => {
                write!(f, "storage i/o error: {context}: {source}")
            }
        }
    }
}

impl core::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            StorageError::Backend { source, .. } => {
                Some(&**source as &(dyn core::error::Error + 'static))
            }
            _ => None,
        }
    }
}

/// Object-store style key/value storage (see `wit/coordinator.wit`, interface `storage`).
pub trait Storage {
    /// The value of `key`, if any.
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError>;
    /// Atomic create; `Ok(true)` if this call created the key, `Ok(false)` if it existed.
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError>;
    /// Overwriting write (hints only).
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError>;
    /// Deletes `key`; deleting a missing key succeeds.
    fn delete(&mut self, key: &str) -> Result<(), StorageError>;
    /// Keys starting with `prefix`, in byte order.
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError>;
}

/// A boxed storage is a storage (e.g. `Box<dyn Storage + Send>`, the table a
/// replay runs on, whatever its backend).
impl<S: Storage + ?Sized> Storage for alloc::boxed::Box<S> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        (**self).get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        (**self).put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        (**self).put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        (**self).delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        (**self).list(prefix)
    }
}

/// The time source.
pub trait Clock {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&mut self) -> u64;
}

/// Everything a coordinator call may touch: one storage and one clock,
/// borrowed for the length of the call. A struct rather than a
/// `Storage + Clock` supertrait, so that a pair of a storage and a clock
/// never has to forward every method of both (what it lends is
/// [`AsEnv`]).
pub struct Env<'a> {
    /// The table's storage.
    pub storage: &'a mut dyn Storage,
    /// The time source.
    pub clock: &'a mut dyn Clock,
}

impl<'a> Env<'a> {
    /// The environment of `storage` and `clock`.
    pub fn new(storage: &'a mut dyn Storage, clock: &'a mut dyn Clock) -> Self {
        Env { storage, clock }
    }

    /// The same storage and clock, for a shorter borrow.
    pub fn reborrow(&mut self) -> Env<'_> {
        Env {
            storage: &mut *self.storage,
            clock: &mut *self.clock,
        }
    }
}

/// What a call is given: anything that lends a storage and a clock
/// (wasmtime's `AsContextMut` is the model). Implemented by [`Env`]
/// itself, by [`OwnedEnv`] (and so [`MemEnv`]) and by [`crate::HostEnv`].
pub trait AsEnv {
    /// The storage and the clock, borrowed.
    fn as_env(&mut self) -> Env<'_>;
}

impl AsEnv for Env<'_> {
    fn as_env(&mut self) -> Env<'_> {
        self.reborrow()
    }
}

/// An in-memory storage, for tests and the native replay path.
#[derive(Clone, Debug, Default)]
pub struct MemStorage {
    /// The records, by key.
    pub map: alloc::collections::BTreeMap<String, Vec<u8>>,
}

impl Storage for MemStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.map.get(key).cloned())
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        if self.map.contains_key(key) {
            return Ok(false);
        }
        self.map.insert(key.into(), value.to_vec());
        Ok(true)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.map.insert(key.into(), value.to_vec());
        Ok(())
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.map.remove(key);
        Ok(())
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        Ok(self
            .map
            .range::<str, _>((
                core::ops::Bound::Included(prefix),
                core::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }
}

/// A clock that returns `start` first and adds `step` on every later
/// reading: the trace clock of TRACE-FORMAT (`clock_start_ms`,
/// `clock_step_ms`; a `clock` step is [`StepClock::set_next`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepClock {
    /// The next reading.
    pub next: u64,
    /// Added after every reading (0 stops time).
    pub step: u64,
}

impl StepClock {
    /// A clock whose first reading is `start_ms` and whose every later
    /// reading adds `step_ms`.
    pub fn new(start_ms: u64, step_ms: u64) -> Self {
        StepClock {
            next: start_ms,
            step: step_ms,
        }
    }

    /// The next reading returns `ms`; later ones add the step again.
    pub fn set_next(&mut self, ms: u64) {
        self.next = ms;
    }

    /// What the next reading will return, without reading.
    pub fn peek(&self) -> u64 {
        self.next
    }
}

impl Clock for StepClock {
    fn now_ms(&mut self) -> u64 {
        let now = self.next;
        // Saturate rather than wrap: time never runs backwards.
        self.next = self.next.saturating_add(self.step);
        now
    }
}

/// A storage and a clock owned together: what a native caller hands to a
/// coordinator (any storage type, e.g. one with injected faults, beside any
/// clock).
#[derive(Clone, Debug, Default)]
pub struct OwnedEnv<S, C = StepClock> {
    /// The storage.
    pub storage: S,
    /// The clock.
    pub clock: C,
}

impl<S: Storage, C: Clock> OwnedEnv<S, C> {
    /// `storage` beside `clock`.
    pub fn new(storage: S, clock: C) -> Self {
        OwnedEnv { storage, clock }
    }
}

impl<S: Storage, C: Clock> AsEnv for OwnedEnv<S, C> {
    fn as_env(&mut self) -> Env<'_> {
        Env::new(&mut self.storage, &mut self.clock)
    }
}

/// An in-memory table and a step clock, for tests and the native replay.
pub type MemEnv = OwnedEnv<MemStorage, StepClock>;
