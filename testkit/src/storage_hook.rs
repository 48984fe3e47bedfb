//! A storage that lets a test act before each `put-if-absent`: fail one
//! kind of create (a tag's), or act at the moment the guest writes (run a
//! call past its deadline).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sink_coordinator::table::TAG_PREFIX;
use sink_coordinator::{Storage, StorageError};

/// What a [`BeforePut`] runs before each `put-if-absent`.
pub trait PutHook {
    /// Called with the key before the `put-if-absent` reaches the inner
    /// storage; an error fails the call, and nothing is written.
    fn before_put(&mut self, key: &str) -> Result<(), StorageError>;
}

impl<F: FnMut(&str) -> Result<(), StorageError>> PutHook for F {
    fn before_put(&mut self, key: &str) -> Result<(), StorageError> {
        self(key)
    }
}

/// `inner`, with `hook` run before each of its `put-if-absent` calls; every
/// other call goes straight through.
#[derive(Clone, Debug, Default)]
pub struct BeforePut<S, H> {
    /// The storage the calls reach.
    pub inner: S,
    /// Runs before each `put-if-absent`.
    pub hook: H,
}

impl<S: Storage, H: PutHook> Storage for BeforePut<S, H> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.hook.before_put(key)?;
        self.inner.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.inner.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.inner.list(prefix)
    }
}

/// A [`PutHook`] that fails each tag create (`put-if-absent` of a `tag/`
/// key) with an I/O error while it is on; its clones share the switch.
#[derive(Clone, Debug, Default)]
pub struct FailTags(Arc<AtomicBool>);

impl FailTags {
    /// The message of the error a failed tag create returns.
    pub const MESSAGE: &'static str = "the test fails tag creates";

    /// Turns the failures on or off.
    pub fn set(&self, fail: bool) {
        self.0.store(fail, Ordering::SeqCst);
    }
}

impl PutHook for FailTags {
    fn before_put(&mut self, key: &str) -> Result<(), StorageError> {
        if key.starts_with(TAG_PREFIX) && self.0.load(Ordering::SeqCst) {
            return Err(StorageError::Io(Self::MESSAGE.into()));
        }
        Ok(())
    }
}
