//! What the simulator runs: the coordinator and the writer helpers, natively
//! or in the component, behind the driver's [`CoordinatorApi`] and
//! [`WriterApi`], over one shared table and clock.
//!
//! The table is `FaultyStorage` over memory, a local directory or any table
//! URL (an object store such as `s3://bucket/prefix`), so the
//! simulator injects exactly the faults that TRACE-FORMAT's `storage_fault`
//! step describes, and a recorded trace replays them. Coordinators reach it
//! through a `Probed` handle that counts each call's storage calls and can
//! "crash" the call after its k-th write (or k-th storage call): from then on
//! every storage call fails, as if the process died there.
//!
//! A component coordinator has a **native twin**: the native core over its
//! own in-memory table, fed the same calls, faults and clock. After every call
//! both tables must be byte-identical and the outcomes equal. When a guest
//! call runs out of fuel in the middle (a real trap), the twin repeats the
//! call crashing after the same number of storage calls, which tells which
//! storage call the trap preempted: the recorded trace fails that call with a
//! `storage_fault`, so that a replay leaves the same table.

use std::path::PathBuf;

use sink_coordinator::{
    Config, Lifecycle, RestorePoint, Snapshot, Storage, StorageError, TableFormatKind, Tag, Writer,
};

use super::paimon::PaimonSide;
use crate::driver::{CoordinatorApi, NativeCoordinator};
pub use crate::driver::{Engine, WriterApi};
use crate::faults::{CallKind, FaultScope, FaultyStorage};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::component::{ComponentCoordinator, ComponentWriter};
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::error::{HostError, HostResult};
use sink_coordinator_host::storage::{AnyStorage, LocalDirStorage, MemStorage, TableUrl};

/// Where the simulated table lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableLocation {
    /// In memory: fast, gone after the run.
    Memory,
    /// A local directory, wiped when the run starts.
    Dir(PathBuf),
    /// A table URL other than a local directory (`s3://bucket/prefix`,
    /// `memory://`, ...), with options for the object store's builder
    /// (after the environment's `AWS_*` etc.); its keys are deleted when
    /// the run starts.
    Url {
        /// The table's URL.
        url: String,
        /// `object_store` builder options (`aws_endpoint`, ...).
        options: Vec<(String, String)>,
    },
}

impl TableLocation {
    /// `memory` (the core's map), a local directory (a plain path or
    /// `file://`), or another table URL.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text == "memory" {
            return Ok(TableLocation::Memory);
        }
        match TableUrl::parse(text).map_err(|e| e.to_string())? {
            TableUrl::Dir(dir) => Ok(TableLocation::Dir(dir)),
            _ => Ok(TableLocation::Url {
                url: text.to_string(),
                options: Vec::new(),
            }),
        }
    }
}

impl std::fmt::Display for TableLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableLocation::Memory => f.write_str("memory"),
            TableLocation::Dir(dir) => write!(f, "{}", dir.display()),
            TableLocation::Url { url, .. } => f.write_str(url),
        }
    }
}

/// The storage under the fault injector: memory, a local directory, or a
/// table opened by URL.
pub enum SimStore {
    /// The core's map (no key rules: a trace may seed any key).
    Mem(MemStorage),
    /// A local directory.
    Dir(LocalDirStorage),
    /// A table opened by URL (an object store, `memory://`).
    Url(AnyStorage),
}

impl Storage for SimStore {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        match self {
            SimStore::Mem(s) => s.get(key),
            SimStore::Dir(s) => s.get(key),
            SimStore::Url(s) => s.get(key),
        }
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        match self {
            SimStore::Mem(s) => s.put_if_absent(key, value),
            SimStore::Dir(s) => s.put_if_absent(key, value),
            SimStore::Url(s) => s.put_if_absent(key, value),
        }
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        match self {
            SimStore::Mem(s) => s.put(key, value),
            SimStore::Dir(s) => s.put(key, value),
            SimStore::Url(s) => s.put(key, value),
        }
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        match self {
            SimStore::Mem(s) => s.delete(key),
            SimStore::Dir(s) => s.delete(key),
            SimStore::Url(s) => s.delete(key),
        }
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        match self {
            SimStore::Mem(s) => s.list(prefix),
            SimStore::Dir(s) => s.list(prefix),
            SimStore::Url(s) => s.list(prefix),
        }
    }
}

/// The shared table (behind the fault injector) and clock of one run.
pub(crate) type SharedStorage = Shared<FaultyStorage<Watched>>;

/// The table under the fault injector, remembering the first error the
/// storage itself returned. Injected faults never reach it (a failing
/// fault stops above it; an ambiguous one lets the call through and fails
/// it afterwards), and neither do the "crashes" of a call, so an error
/// here is a real one: a full disk, an unreachable or refusing object
/// store. Such a run says nothing about the coordinator (the recorded trace
/// lacks the failure, and the checks expect only the faults they injected),
/// and is reported as a storage failure instead of a violation (issue 26:
/// a full disk read "invariant violated").
pub(crate) struct Watched {
    store: SimStore,
    failure: Option<String>,
}

impl Watched {
    pub(crate) fn new(store: SimStore) -> Self {
        Watched {
            store,
            failure: None,
        }
    }

    /// The first error of the storage itself, if any.
    pub(crate) fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    fn note<T>(&mut self, r: Result<T, StorageError>) -> Result<T, StorageError> {
        if let Err(e) = &r {
            if self.failure.is_none() {
                self.failure = Some(e.to_string());
            }
        }
        r
    }
}

impl Storage for Watched {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let r = self.store.get(key);
        self.note(r)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        let r = self.store.put_if_absent(key, value);
        self.note(r)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        let r = self.store.put(key, value);
        self.note(r)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        let r = self.store.delete(key);
        self.note(r)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let r = self.store.list(prefix);
        self.note(r)
    }
}

/// What a `Probed` storage saw during one coordinator call, and when it
/// makes the call "crash".
#[derive(Clone, Debug, Default)]
pub(crate) struct Probe {
    /// Storage calls and writes (put, put-if-absent, delete) of the current
    /// coordinator call.
    pub calls: u64,
    pub writes: u64,
    /// Per kind (`Probe::kind_index`): calls made while no fault of that
    /// kind was queued (the skip of a fault pushed before the call).
    pub free_per_kind: [u64; 4],
    /// Every call, in order (kind and key), kept while `logging`.
    pub log: Vec<(CallKind, String)>,
    pub logging: bool,
    /// Crash at the first storage call after this many writes whose kind
    /// has no fault queued (so that a `storage_fault` recorded before the
    /// call fails exactly it), or forced after this many storage calls.
    pub crash_after_writes: Option<u64>,
    pub crash_after_calls: Option<u64>,
    /// The storage call the crash preempted: its kind and the skip of a
    /// fault that fails it when pushed before the coordinator call.
    pub crashed: Option<(CallKind, u64)>,
    /// Storage calls that returned an error (injected, or the crash), and
    /// storage calls made after the first of them (SEMANTICS 8: nothing
    /// happens after it).
    pub errors: u64,
    pub calls_after_error: u64,
    /// Which calls a crash may preempt and the fault queues count (a Paimon
    /// table's commit points, see [`FaultScope`]): a crash then fails the
    /// first such call, which a recorded `storage_fault` can stand for.
    pub scope: FaultScope,
}

impl Probe {
    /// Starts a coordinator call.
    pub(crate) fn begin(
        &mut self,
        crash_after_writes: Option<u64>,
        crash_after_calls: Option<u64>,
    ) {
        let (logging, scope) = (self.logging, self.scope);
        *self = Probe {
            logging,
            scope,
            crash_after_writes,
            crash_after_calls,
            ..Probe::default()
        };
    }

    fn kind_index(kind: CallKind) -> usize {
        match kind {
            CallKind::Put => 0,
            CallKind::Get => 1,
            CallKind::List => 2,
            CallKind::Delete => 3,
        }
    }

    /// Counts a call (`queued`: faults of its kind not used up); `Err` once
    /// the coordinator call has crashed.
    fn enter(&mut self, kind: CallKind, key: &str, queued: usize) -> Result<(), StorageError> {
        let i = Self::kind_index(kind);
        if self.errors > 0 {
            self.calls_after_error += 1;
        }
        let counted = self.scope.counts(kind, key);
        let crash_now = self.crashed.is_some()
            || (counted
                && (self.crash_after_calls.is_some_and(|k| self.calls >= k)
                    || (queued == 0 && self.crash_after_writes.is_some_and(|k| self.writes >= k))));
        if crash_now {
            if self.crashed.is_none() {
                self.crashed = Some((kind, self.free_per_kind[i]));
            }
            self.errors += 1;
            return Err(StorageError::Io(format!(
                "simulated crash: the coordinator process died before {} {key:?}",
                kind.name()
            )));
        }
        self.calls += 1;
        if queued == 0 && counted {
            self.free_per_kind[i] += 1;
        }
        if matches!(kind, CallKind::Put | CallKind::Delete) {
            self.writes += 1;
        }
        if self.logging {
            self.log.push((kind, key.to_string()));
        }
        Ok(())
    }
}

/// A coordinator's view of the table: the shared storage behind a probe.
#[derive(Clone)]
pub(crate) struct Probed {
    pub inner: SharedStorage,
    pub probe: Shared<Probe>,
}

impl Probed {
    fn enter(&self, kind: CallKind, key: &str) -> Result<(), StorageError> {
        let queued = self.inner.lock().pending(kind);
        self.probe.lock().enter(kind, key, queued)
    }

    fn seen<T>(&self, result: Result<T, StorageError>) -> Result<T, StorageError> {
        if result.is_err() {
            self.probe.lock().errors += 1;
        }
        result
    }
}

impl Storage for Probed {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.enter(CallKind::Get, key)?;
        let r = self.inner.lock().get(key);
        self.seen(r)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.enter(CallKind::Put, key)?;
        let r = self.inner.lock().put_if_absent(key, value);
        self.seen(r)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.enter(CallKind::Put, key)?;
        let r = self.inner.lock().put(key, value);
        self.seen(r)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.enter(CallKind::Delete, key)?;
        let r = self.inner.lock().delete(key);
        self.seen(r)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.enter(CallKind::List, prefix)?;
        let r = self.inner.lock().list(prefix);
        self.seen(r)
    }
}

/// Every key and value of a table (faults suspended): the twin comparison.
pub(crate) fn dump(storage: &SharedStorage) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
    with_table(storage, |st| {
        let keys = st.list("")?;
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            let v = st.get(&k)?.unwrap_or_default();
            out.push((k, v));
        }
        Ok(out)
    })
}

/// The tables one run uses: the real one, and the native twin's.
#[derive(Clone)]
pub(crate) struct Tables {
    pub real: Probed,
    pub twin: Option<Probed>,
}

impl Tables {
    pub(crate) fn open(location: &TableLocation, twin: bool) -> Result<Self, String> {
        let real = Probed {
            inner: open_table(location)?,
            probe: Shared::new(Probe::default()),
        };
        let twin = twin.then(|| Probed {
            inner: Shared::new(FaultyStorage::new(Watched::new(SimStore::Mem(
                MemStorage::default(),
            )))),
            probe: Shared::new(Probe {
                logging: true,
                ..Probe::default()
            }),
        });
        if twin.is_some() {
            real.probe.lock().logging = true;
        }
        Ok(Tables { real, twin })
    }

    /// Queues a storage fault on both tables.
    pub(crate) fn push_fault(&self, call: CallKind, fault: crate::faults::Fault) {
        self.real.inner.lock().push_fault(call, fault);
        if let Some(t) = &self.twin {
            t.inner.lock().push_fault(call, fault);
        }
    }

    /// The first error the real table's storage itself returned (see
    /// [`Watched`]); the twin's table is in memory and cannot fail.
    pub(crate) fn storage_failure(&self) -> Option<String> {
        self.real.inner.lock().inner().failure().map(str::to_string)
    }

    /// No storage fault is queued (a crash is armed only then, so that the
    /// recorded `storage_fault` standing for it fails exactly that call).
    pub(crate) fn no_faults_queued(&self) -> bool {
        let st = self.real.inner.lock();
        CallKind::ALL.iter().all(|k| st.pending(*k) == 0)
    }
}

/// Opens the table of a run; a directory is wiped first.
pub(crate) fn open_table(location: &TableLocation) -> Result<SharedStorage, String> {
    let store = match location {
        TableLocation::Memory => SimStore::Mem(MemStorage::default()),
        TableLocation::Dir(dir) => {
            super::wipe::check_dir(&dir.display().to_string(), dir).map_err(|e| e.to_string())?;
            match std::fs::remove_dir_all(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot wipe {}: {e}", dir.display())),
            }
            SimStore::Dir(
                LocalDirStorage::open(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?,
            )
        }
        TableLocation::Url { url, options } => {
            let mut table = TableUrl::parse(url)
                .and_then(|u| u.open(true, options))
                .map_err(|e| e.to_string())?;
            wipe_table(&mut table, url)?;
            SimStore::Url(table)
        }
    };
    Ok(Shared::new(FaultyStorage::new(Watched::new(store))))
}

/// Deletes every key of a table opened by URL, refusing (like
/// [`super::wipe::check_dir`]) a table holding a key the coordinator does
/// not write.
fn wipe_table(table: &mut AnyStorage, url: &str) -> Result<(), String> {
    let keys = table
        .list("")
        .map_err(|e| format!("cannot list {url}: {e}"))?;
    super::wipe::check_keys(url, &keys).map_err(|e| e.to_string())?;
    for key in keys {
        table
            .delete(&key)
            .map_err(|e| format!("cannot wipe {url}: {e}"))?;
    }
    Ok(())
}

/// Reads the table natively with faults suspended (the host's own reads
/// must neither fail nor consume injected faults).
pub(crate) fn with_table<T>(
    storage: &SharedStorage,
    read: impl FnOnce(&mut dyn Storage) -> T,
) -> T {
    let mut guard = storage.lock();
    guard.set_suspended(true);
    let out = read(&mut *guard);
    guard.set_suspended(false);
    out
}

/// What the simulator needs of an [`Engine`] beyond a replay's [`Driver`](crate::driver::Driver):
/// coordinators over its two tables (a component coordinator has a native
/// twin), writers, and reading the table with faults suspended.
impl Engine {
    /// A new coordinator instance (state `created`), with its native twin
    /// when it runs in the component; on a Paimon table (`paimon`) both are set
    /// to the format and their calls go through the run's committable map.
    pub(crate) fn coordinator(
        &self,
        tables: &Tables,
        clock: &Shared<ManualClock>,
        config: &Config,
        restore: Option<RestorePoint>,
        paimon: Option<&PaimonSide>,
    ) -> HostResult<SimCoordinator> {
        let restore = match paimon {
            Some(p) => p.restore_to_table(restore),
            None => restore,
        };
        let env = HostEnv::new(tables.real.clone(), clock.clone());
        let native =
            |restore: Option<RestorePoint>, env, limits| -> HostResult<NativeCoordinator> {
                let mut c = NativeCoordinator::with_limits(config.clone(), restore, env, limits)?;
                if paimon.is_some() {
                    c.set_table_format(TableFormatKind::Paimon)?;
                }
                Ok(c)
            };
        let coordinator = match self {
            Engine::Native(limits) => SimCoordinator::Native(native(restore, env, *limits)?),
            Engine::Component(runtime) => {
                let twin = match tables.twin.as_ref() {
                    Some(t) => Some(native(
                        restore.clone(),
                        HostEnv::new(t.clone(), clock.clone()),
                        runtime.options().limits,
                    )?),
                    None => None,
                };
                let mut comp = ComponentCoordinator::new(runtime, env, config, restore.as_ref())?;
                if paimon.is_some() {
                    comp.set_table_format(TableFormatKind::Paimon)?;
                }
                SimCoordinator::Component {
                    comp: Box::new(comp),
                    twin,
                }
            }
        };
        Ok(match paimon {
            None => coordinator,
            Some(p) => {
                let (api, twin): (Box<dyn CoordinatorApi>, Option<Box<dyn CoordinatorApi>>) =
                    match coordinator {
                        SimCoordinator::Native(c) => (Box::new(c), None),
                        SimCoordinator::Component { comp, twin } => {
                            (comp, twin.map(|t| Box::new(t) as Box<dyn CoordinatorApi>))
                        }
                        SimCoordinator::Mapped { api, twin } => (api, twin),
                    };
                SimCoordinator::Mapped {
                    api: Box::new(p.mapped(api)),
                    twin: twin.map(|t| Box::new(p.mapped(t)) as Box<dyn CoordinatorApi>),
                }
            }
        })
    }

    /// A fresh writer helper for subtask `s`.
    pub fn writer(&self, s: u32) -> HostResult<Box<dyn WriterApi>> {
        Ok(match self {
            Engine::Native(_) => Box::new(Writer::new(s)),
            Engine::Component(runtime) => Box::new(ComponentWriter::new(runtime, s)?),
        })
    }

    /// The table as this engine reads it (the component's `table`
    /// interface, or the native functions), faults suspended.
    pub(crate) fn read_table(
        &self,
        storage: &SharedStorage,
    ) -> HostResult<(Vec<Snapshot>, Vec<Tag>)> {
        match self {
            Engine::Native(_) => with_table(storage, |st| {
                let snapshots = sink_coordinator::table::list_snapshots(st)?;
                let tags = sink_coordinator::table::list_tags(st)?;
                Ok((snapshots, tags))
            }),
            Engine::Component(runtime) => {
                storage.lock().set_suspended(true);
                let result = (|| {
                    let mut table = sink_coordinator_host::component::ComponentTable::new(
                        runtime,
                        storage.clone(),
                    )?;
                    Ok::<_, HostError>((table.list_snapshots()?, table.list_tags()?))
                })();
                storage.lock().set_suspended(false);
                result
            }
        }
    }
}

/// One coordinator instance of the simulation.
#[allow(clippy::large_enum_variant)] // a few per run: boxing buys nothing
pub(crate) enum SimCoordinator {
    Native(NativeCoordinator),
    Component {
        comp: Box<ComponentCoordinator>,
        twin: Option<NativeCoordinator>,
    },
    /// On a Paimon table: the instance (and a component's twin) behind the
    /// run's committable map ([`super::paimon`]); no fuel is metered.
    Mapped {
        api: Box<dyn CoordinatorApi>,
        twin: Option<Box<dyn CoordinatorApi>>,
    },
}

impl SimCoordinator {
    /// The instance under test (the component, or the native core).
    pub(crate) fn api(&mut self) -> &mut dyn CoordinatorApi {
        match self {
            SimCoordinator::Native(c) => c,
            SimCoordinator::Component { comp, .. } => comp.as_mut(),
            SimCoordinator::Mapped { api, .. } => api.as_mut(),
        }
    }

    /// The native twin of a component instance.
    pub(crate) fn twin(&mut self) -> Option<&mut dyn CoordinatorApi> {
        match self {
            SimCoordinator::Native(_) => None,
            SimCoordinator::Component { twin, .. } => {
                twin.as_mut().map(|t| t as &mut dyn CoordinatorApi)
            }
            SimCoordinator::Mapped { twin, .. } => match twin {
                Some(t) => Some(t.as_mut()),
                None => None,
            },
        }
    }

    /// Grants the next call `fuel` (component only; false natively): a small
    /// budget makes the guest trap in the middle of the call.
    pub(crate) fn set_fuel(&mut self, fuel: u64) -> bool {
        match self {
            SimCoordinator::Native(_) | SimCoordinator::Mapped { .. } => false,
            // A runtime without metering cannot run out of fuel.
            SimCoordinator::Component { comp, .. } if comp.meters_fuel() => {
                comp.set_fuel_per_call(fuel);
                true
            }
            SimCoordinator::Component { .. } => false,
        }
    }

    pub(crate) fn restore_fuel(&mut self) {
        if let SimCoordinator::Component { comp, .. } = self {
            comp.set_fuel_per_call(sink_coordinator_host::engine::DEFAULT_FUEL_PER_CALL);
        }
    }

    pub(crate) fn state(&mut self) -> Lifecycle {
        self.api().state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wipes_only_tables() {
        let root = std::env::temp_dir().join(format!("sinkcoord-wipe-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // Missing: fine. A table: fine.
        assert!(super::super::wipe::check_dir("t", &root).is_ok());
        std::fs::create_dir_all(root.join("snapshot")).unwrap();
        std::fs::create_dir_all(root.join("tag")).unwrap();
        assert!(super::super::wipe::check_dir("t", &root).is_ok());
        // Anything else: refused, and nothing is removed.
        std::fs::write(root.join("notes.txt"), b"keep me").unwrap();
        let err = open_table(&TableLocation::Dir(root.clone()))
            .err()
            .unwrap_or_default();
        assert!(err.contains("refusing to wipe"), "{err}");
        assert!(root.join("notes.txt").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
