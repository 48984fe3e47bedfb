//! [`ComponentTable`]: read-only access to a table through the component's
//! `table` interface, in calls of bounded size.
//!
//! The WIT `list-snapshots` and `list-tags` read the whole table in one
//! guest call, under one call deadline and in one guest memory: a large
//! table made `sinkcoord replay` hit the deadline and exit with nothing
//! printed, while the native path printed the result (issue 26). The WIT
//! has no paged reads (and is not changed for this), so the table is read
//! in pages made of the calls it has:
//!
//! - snapshots one `snapshot-by-id` call each, ids 1, 2, ... until one is
//!   absent: exactly the reads the guest's `list-snapshots` makes, in the
//!   same order, so the result (and the first error) is the same;
//! - tags [`TAG_PAGE`] at a time: the host lists the tag keys itself and
//!   lets the guest's `list-tags` see one page of them at a time (the
//!   storage it reads lists only that page); the pages' tags, each page
//!   ordered by the guest, are then ordered by name stably, which gives the
//!   guest's one-call order (it orders the keys' records stably by name).

use sink_coordinator::table::TAG_PREFIX;
use sink_coordinator::{Shared, Snapshot, Storage, StorageError, Tag};
use wasmtime::Store;

use super::{from_wit_snapshot, from_wit_tag, Instance};
use crate::clock::ManualClock;
use crate::engine::{wit, Bindings, Runtime, StoreData};
use crate::env::HostEnv;
use crate::error::HostResult;

/// Tag keys one `list-tags` call reads at most.
pub const TAG_PAGE: usize = 64;

/// Read-only access to a table through the component's `table` interface.
///
/// Tables are stateless, so after a trap the next call instantiates a fresh
/// Store over the same storage. Its clock is detached: reading the table must
/// not consume readings of a replay's trace clock.
///
/// No call grows with the table: [`Self::list_snapshots`] reads one
/// snapshot per guest call and [`Self::list_tags`] [`TAG_PAGE`] tags per
/// guest call, with the same result (and the same first error) as the
/// WIT's one-call `list-snapshots` and `list-tags`, which made a large
/// table hit the call deadline.
pub struct ComponentTable {
    instance: Instance,
    /// The tag keys the guest's `list-tags` sees, while a page is read.
    window: Shared<Option<Vec<String>>>,
}

/// The table's storage, except that while a page of tags is read, listing
/// `tag/` returns that page.
struct Paged<S> {
    inner: S,
    window: Shared<Option<Vec<String>>>,
}

impl<S: Storage> Storage for Paged<S> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.inner.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.inner.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        if prefix == TAG_PREFIX {
            if let Some(page) = self.window.lock().as_ref() {
                return Ok(page.clone());
            }
        }
        self.inner.list(prefix)
    }
}

impl ComponentTable {
    /// A table view over `storage`, in its own Store.
    pub fn new(runtime: &Runtime, storage: impl Storage + Send + 'static) -> HostResult<Self> {
        let window = Shared::new(None);
        let paged = Paged {
            inner: storage,
            window: window.clone(),
        };
        let env = HostEnv::new(paged, ManualClock::new(0, 0));
        Ok(ComponentTable {
            instance: Instance::new(runtime, env)?,
            window,
        })
    }

    /// A live instance: after a trap, a fresh one over the same storage.
    fn revive(&mut self) -> HostResult<()> {
        if !self.instance.is_live() {
            if let Some(env) = self.instance.discarded_env.take() {
                self.instance = Instance::new(&self.instance.runtime, env)?;
            }
        }
        Ok(())
    }

    fn call<R>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Store<StoreData>, &Bindings) -> wasmtime::Result<Result<R, wit::Error>>,
    ) -> HostResult<R> {
        self.revive()?;
        self.instance.call(what, f)
    }

    /// The latest snapshot, if any.
    pub fn latest_snapshot(&mut self) -> HostResult<Option<Snapshot>> {
        self.call("latest-snapshot", |s, b| {
            b.sink_coordinator_table().call_latest_snapshot(s)
        })
        .map(|o| o.map(from_wit_snapshot))
    }

    /// Snapshot `id`, if it exists.
    pub fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>> {
        self.call("snapshot-by-id", |s, b| {
            b.sink_coordinator_table().call_snapshot_by_id(s, id)
        })
        .map(|o| o.map(from_wit_snapshot))
    }

    /// Every snapshot, by id: snapshot 1, 2, ... up to the first absent
    /// one, one `snapshot-by-id` call each (the reads the guest's
    /// `list-snapshots` makes, in the same order).
    pub fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>> {
        let mut out = Vec::new();
        let mut id = 1u64;
        while let Some(snapshot) = self.snapshot_by_id(id)? {
            out.push(snapshot);
            match id.checked_add(1) {
                Some(next) => id = next,
                // No id follows u64::MAX.
                None => break,
            }
        }
        Ok(out)
    }

    /// Every tag, by name in byte order: the host lists the tag keys, the
    /// guest's `list-tags` reads [`TAG_PAGE`] of them per call, and the
    /// pages are ordered by name stably (the guest's own order).
    pub fn list_tags(&mut self) -> HostResult<Vec<Tag>> {
        self.revive()?;
        let keys = match self.instance.env_mut() {
            Some(env) => env.storage.list(TAG_PREFIX),
            // Not reached: a table's instance keeps its environment.
            None => Ok(Vec::new()),
        }
        .map_err(|e| {
            crate::error::HostError::core(
                sink_coordinator::ErrorKind::Storage,
                format!("listing tags: {e}"),
            )
        })?;
        let mut tags = Vec::new();
        for page in keys.chunks(TAG_PAGE) {
            *self.window.lock() = Some(page.to_vec());
            let listed = self.call("list-tags", |s, b| {
                b.sink_coordinator_table().call_list_tags(s)
            });
            *self.window.lock() = None;
            tags.extend(listed?.into_iter().map(from_wit_tag));
        }
        // Stable: records whose name differs from their key keep their
        // relative order, as in the guest's own ordering.
        tags.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(tags)
    }
}
