//! [`ObjectStorage`]: a table on any store of the `object_store` crate (S3,
//! GCS, Azure, its in-memory store) behind the synchronous `storage` import.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use sink_coordinator::{Storage, StorageError};

use super::keys::{check_key, check_prefix, clip};

/// A table stored as objects under a prefix of an object store: key `a/b`
/// is the object `<prefix>/a/b`.
///
/// - `put_if_absent` is a conditional create (`PutMode::Create`: S3's
///   `If-None-Match: *`, GCS's `ifGenerationMatch=0`, Azure's
///   `If-None-Match: *`); "already exists" and "precondition failed" mean
///   the key existed (`Ok(false)`), not an error. The crate does not retry
///   a conditional create after it was sent, so a timeout or a lost
///   connection surfaces as an error, which the import defines as
///   ambiguous (the write may or may not have landed).
/// - `put` is a plain overwrite (the hint), `delete` of a missing key
///   succeeds, `list` returns the keys with the prefix in byte order (sorted
///   here: the listing order of a store is not relied on).
/// - Errors keep the store's error as their
///   [`source`](std::error::Error::source) (`StorageError::Backend`); an
///   object path the store refuses is `invalid-key`.
///
/// The store's futures run on a current-thread tokio runtime owned by this
/// value, so each call blocks its caller until the store answers. It must
/// not be called from inside another tokio runtime (that call returns an
/// I/O error rather than blocking the runtime).
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    /// The table's prefix inside the store (empty: the store's root).
    prefix: Path,
    /// The table, for messages (`s3://bucket/prefix`).
    location: String,
    runtime: tokio::runtime::Runtime,
}

impl fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStorage")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl ObjectStorage {
    /// A table under `prefix` (a `/`-separated path; empty for the root) of
    /// `store`; `location` names it in messages. Several handles may share
    /// one store (`Arc`); each owns its runtime.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        location: impl Into<String>,
    ) -> Result<Self, StorageError> {
        let prefix = Path::parse(prefix).map_err(|e| {
            StorageError::InvalidKey(format!("table prefix {:?}: {e}", clip(prefix)))
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StorageError::backend("cannot start the object store's runtime", e))?;
        Ok(ObjectStorage {
            store,
            prefix,
            location: location.into(),
            runtime,
        })
    }

    /// A table in `object_store`'s in-memory store (what `memory://` opens).
    pub fn in_memory() -> Result<Self, StorageError> {
        Self::new(
            Arc::new(object_store::memory::InMemory::new()),
            "",
            "memory://",
        )
    }

    /// The store (to open another handle on the same table).
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.store)
    }

    /// The table's prefix inside the store.
    pub fn prefix(&self) -> &str {
        self.prefix.as_ref()
    }

    /// The table's location, as given when it was opened.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// When the object at `key` was last written, in milliseconds since the
    /// Unix epoch (`None`: no such key), from the store's metadata.
    pub fn modified_ms(&self, key: &str) -> Result<Option<u64>, StorageError> {
        check_key(key)?;
        let path = self.path(key)?;
        let store = Arc::clone(&self.store);
        let head = self.block_on("stat", key, async move { store.head(&path).await })?;
        match head {
            Ok(meta) => Ok(Some(
                u64::try_from(meta.last_modified.timestamp_millis()).unwrap_or(0),
            )),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error("stat", key, e)),
        }
    }

    /// Runs one of the store's futures to completion.
    fn block_on<T>(
        &self,
        op: &str,
        key: &str,
        future: impl Future<Output = object_store::Result<T>>,
    ) -> Result<object_store::Result<T>, StorageError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(StorageError::Io(format!(
                "cannot {op} {:?} on {}: called from inside a tokio runtime (the object store blocks its caller)",
                clip(key),
                self.location
            )));
        }
        Ok(self.runtime.block_on(future))
    }

    /// The object path of `key` (checked by the caller).
    fn path(&self, key: &str) -> Result<Path, StorageError> {
        let full = if self.prefix.as_ref().is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix.as_ref())
        };
        Path::parse(&full).map_err(|e| {
            StorageError::InvalidKey(format!(
                "key {:?} is not a valid object path on {}: {e}",
                clip(key),
                self.location
            ))
        })
    }

    fn error(&self, op: &str, key: &str, e: object_store::Error) -> StorageError {
        let ambiguous = if matches!(op, "create" | "write" | "delete") {
            " (the change may or may not have landed)"
        } else {
            ""
        };
        match e {
            object_store::Error::InvalidPath { .. } => StorageError::InvalidKey(format!(
                "cannot {op} {:?} on {}: {e}",
                clip(key),
                self.location
            )),
            e => StorageError::backend(
                format!(
                    "cannot {op} {:?} on {}{ambiguous}",
                    clip(key),
                    self.location
                ),
                e,
            ),
        }
    }

    /// The key of an object listed under the table's prefix; `None` for an
    /// object that is not a key of the table (outside the prefix, or a name
    /// the key rules refuse, such as a directory marker).
    fn key_of(&self, location: &Path) -> Option<String> {
        let raw = location.as_ref();
        let prefix = self.prefix.as_ref();
        let key = if prefix.is_empty() {
            raw
        } else {
            raw.strip_prefix(prefix)?.strip_prefix('/')?
        };
        check_key(key).is_ok().then(|| key.to_string())
    }
}

impl Storage for ObjectStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        check_key(key)?;
        let path = self.path(key)?;
        let store = Arc::clone(&self.store);
        let read = self.block_on("read", key, async move {
            let result = store.get(&path).await?;
            result.bytes().await
        })?;
        match read {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error("read", key, e)),
        }
    }

    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        check_key(key)?;
        let path = self.path(key)?;
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let payload = PutPayload::from(value.to_vec());
        let store = Arc::clone(&self.store);
        let created = self.block_on("create", key, async move {
            store.put_opts(&path, payload, options).await
        })?;
        match created {
            Ok(_) => Ok(true),
            // The key existed: the existing value is untouched.
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(false),
            Err(e) => Err(self.error("create", key, e)),
        }
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        check_key(key)?;
        let path = self.path(key)?;
        let payload = PutPayload::from(value.to_vec());
        let store = Arc::clone(&self.store);
        let written =
            self.block_on("write", key, async move { store.put(&path, payload).await })?;
        written.map(|_| ()).map_err(|e| self.error("write", key, e))
    }

    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        check_key(key)?;
        let path = self.path(key)?;
        let store = Arc::clone(&self.store);
        let deleted = self.block_on("delete", key, async move { store.delete(&path).await })?;
        match deleted {
            // Deleting a missing key succeeds.
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error("delete", key, e)),
        }
    }

    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        use futures_util::TryStreamExt;
        check_prefix(prefix)?;
        // A store lists by path (whole segments): list the directory holding
        // the prefix's last, partial segment, then match the text.
        let dir = match prefix.rsplit_once('/') {
            Some((dir, _)) => self.path(dir)?,
            None => self.prefix.clone(),
        };
        let store = Arc::clone(&self.store);
        let listed = self.block_on("list", prefix, async move {
            let root = (!dir.as_ref().is_empty()).then_some(dir);
            store.list(root.as_ref()).try_collect::<Vec<_>>().await
        })?;
        let objects = listed.map_err(|e| self.error("list", prefix, e))?;
        let mut keys: Vec<String> = objects
            .iter()
            .filter_map(|meta| self.key_of(&meta.location))
            .filter(|key| key.starts_with(prefix))
            .collect();
        // Byte order (a store's listing order is not relied on).
        keys.sort_unstable();
        keys.dedup();
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_memory_store_behaves_like_a_table() {
        let mut st = ObjectStorage::in_memory().unwrap();
        crate::storage::checks::creates_once_overwrites_and_deletes(&mut st);
        assert_eq!(st.list("").unwrap(), ["snapshot/1"]);
        assert_eq!(st.list("snap").unwrap(), ["snapshot/1"]);
        assert_eq!(st.list("snapshot/").unwrap(), ["snapshot/1"]);
        assert_eq!(st.list("tag/").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn prefixed_tables_do_not_see_each_other() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let mut a = ObjectStorage::new(Arc::clone(&store), "tables/a", "a").unwrap();
        let mut b = ObjectStorage::new(Arc::clone(&store), "tables/ab", "ab").unwrap();
        assert!(a.put_if_absent("tag/x", b"a").unwrap());
        assert!(b.put_if_absent("tag/x", b"b").unwrap());
        assert_eq!(a.list("").unwrap(), ["tag/x"]);
        assert_eq!(b.get("tag/x").unwrap().as_deref(), Some(&b"b"[..]));
    }

    #[test]
    fn refuses_keys_like_every_backend() {
        let mut st = ObjectStorage::in_memory().unwrap();
        for bad in ["", "/x", "../x", "a//b", "a\0b", "a/./b"] {
            assert!(
                st.put_if_absent(bad, b"x").unwrap_err().is_invalid_key(),
                "{bad:?}"
            );
        }
        // A control character passes the common rules but not object paths.
        assert!(st.put("a\u{1}b", b"x").unwrap_err().is_invalid_key());
    }
}
