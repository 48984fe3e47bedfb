//! What the simulator runs: the coordinator and the writer helpers, natively
//! or in the component, behind the driver's [`CoordinatorApi`] and
//! [`WriterApi`], over one shared table and clock.
//!
//! The table is `FaultyStorage` over memory or a local directory, so the
//! simulator injects exactly the faults that TRACE-FORMAT's `storage_fault`
//! step describes, and a recorded trace replays them.

use std::path::PathBuf;

use sink_coordinator::{
    Config, Lifecycle, Outcome, RestorePoint, Snapshot, Storage, StorageError, Tag, Writer,
};

use crate::clock::ManualClock;
use crate::component::{ComponentCoordinator, ComponentWriter};
pub use crate::driver::WriterApi;
use crate::driver::{CoordinatorApi, NativeCoordinator};
use crate::engine::Runtime;
use crate::env::{HostEnv, Shared};
use crate::error::{HostError, HostResult};
use crate::storage::{FaultyStorage, LocalDirStorage, MemStorage};

/// Where the simulated table lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableLocation {
    Memory,
    /// A local directory, wiped when the run starts.
    Dir(PathBuf),
}

/// The storage under the fault injector: memory or a local directory.
pub enum SimStore {
    Mem(MemStorage),
    Dir(LocalDirStorage),
}

impl Storage for SimStore {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        match self {
            SimStore::Mem(s) => s.get(key),
            SimStore::Dir(s) => s.get(key),
        }
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        match self {
            SimStore::Mem(s) => s.put_if_absent(key, value),
            SimStore::Dir(s) => s.put_if_absent(key, value),
        }
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        match self {
            SimStore::Mem(s) => s.put(key, value),
            SimStore::Dir(s) => s.put(key, value),
        }
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        match self {
            SimStore::Mem(s) => s.delete(key),
            SimStore::Dir(s) => s.delete(key),
        }
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        match self {
            SimStore::Mem(s) => s.list(prefix),
            SimStore::Dir(s) => s.list(prefix),
        }
    }
}

/// The shared table (behind the fault injector) and clock of one run.
pub type SharedStorage = Shared<FaultyStorage<SimStore>>;

/// Opens the table of a run; a directory is wiped first.
pub fn open_table(location: &TableLocation) -> Result<SharedStorage, String> {
    let store = match location {
        TableLocation::Memory => SimStore::Mem(MemStorage::default()),
        TableLocation::Dir(dir) => {
            refuse_foreign_dir(dir)?;
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
    };
    Ok(Shared::new(FaultyStorage::new(store)))
}

/// The simulator wipes its table directory; it refuses to wipe one that
/// holds anything a table does not (`snapshot/`, `tag/`, `hint/` and the
/// storage's temporary files), so a mistyped `--table` loses nothing.
fn refuse_foreign_dir(dir: &std::path::Path) -> Result<(), String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let table_part = matches!(name.as_ref(), "snapshot" | "tag" | "hint")
            || name.starts_with(crate::storage::TMP_PREFIX);
        if !table_part {
            return Err(format!(
                "refusing to wipe {}: it holds {name:?}, which is not part of a table (choose another --table, or remove it yourself)",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// Reads the table natively with faults suspended (the host's own reads
/// must neither fail nor consume injected faults).
pub fn with_table<T>(storage: &SharedStorage, read: impl FnOnce(&mut dyn Storage) -> T) -> T {
    let mut guard = storage.lock();
    guard.set_suspended(true);
    let out = read(&mut *guard);
    guard.set_suspended(false);
    out
}

/// How coordinators and writers are run.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // one per run
pub enum Engine {
    Native,
    Component(Runtime),
}

impl Engine {
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Native => "native",
            Engine::Component(_) => "component",
        }
    }

    pub fn is_component(&self) -> bool {
        matches!(self, Engine::Component(_))
    }

    /// A new coordinator instance (state `created`).
    pub fn coordinator(
        &self,
        storage: &SharedStorage,
        clock: &Shared<ManualClock>,
        config: &Config,
        restore: Option<RestorePoint>,
    ) -> HostResult<SimCoordinator> {
        let env = HostEnv::new(storage.clone(), clock.clone());
        Ok(match self {
            Engine::Native => {
                SimCoordinator::Native(NativeCoordinator::new(config.clone(), restore, env))
            }
            Engine::Component(runtime) => SimCoordinator::Component(Box::new(
                ComponentCoordinator::new(runtime, env, config, restore.as_ref())?,
            )),
        })
    }

    /// A fresh writer helper for subtask `s`.
    pub fn writer(&self, s: u32) -> HostResult<Box<dyn WriterApi>> {
        Ok(match self {
            Engine::Native => Box::new(Writer::new(s)),
            Engine::Component(runtime) => Box::new(ComponentWriter::new(runtime, s)?),
        })
    }

    /// The table as this engine reads it (the component's `table`
    /// interface, or the native functions), faults suspended.
    pub fn read_table(&self, storage: &SharedStorage) -> HostResult<(Vec<Snapshot>, Vec<Tag>)> {
        match self {
            Engine::Native => with_table(storage, |st| {
                let snapshots = sink_coordinator::table::list_snapshots(st)?;
                let tags = sink_coordinator::table::list_tags(st)?;
                Ok((snapshots, tags))
            }),
            Engine::Component(runtime) => {
                storage.lock().set_suspended(true);
                let result = (|| {
                    let mut table =
                        crate::component::ComponentTable::new(runtime, storage.clone())?;
                    Ok::<_, HostError>((table.list_snapshots()?, table.list_tags()?))
                })();
                storage.lock().set_suspended(false);
                result
            }
        }
    }
}

/// One coordinator instance of the simulation.
#[allow(clippy::large_enum_variant)] // one per run: boxing buys nothing
pub enum SimCoordinator {
    Native(NativeCoordinator),
    Component(Box<ComponentCoordinator>),
}

impl SimCoordinator {
    pub fn api(&mut self) -> &mut dyn CoordinatorApi {
        match self {
            SimCoordinator::Native(c) => c,
            SimCoordinator::Component(c) => c.as_mut(),
        }
    }

    /// Starves the next calls of fuel so that the guest traps at their very
    /// first instructions (before any storage call). False natively.
    pub fn starve(&mut self) -> bool {
        match self {
            SimCoordinator::Native(_) => false,
            SimCoordinator::Component(c) => {
                c.set_fuel_per_call(1);
                true
            }
        }
    }

    pub fn state(&mut self) -> Lifecycle {
        self.api().state()
    }

    pub fn start(&mut self) -> HostResult<Outcome> {
        self.api().start()
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
        assert!(refuse_foreign_dir(&root).is_ok());
        std::fs::create_dir_all(root.join("snapshot")).unwrap();
        std::fs::create_dir_all(root.join("tag")).unwrap();
        assert!(refuse_foreign_dir(&root).is_ok());
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
