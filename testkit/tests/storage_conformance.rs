//! The storage conformance suite (`storage_conformance`) against the
//! backends that live in one process: the shared in-memory map, the local
//! directory, and `object_store`'s in-memory store through `ObjectStorage`.
//! The cases that need a second process (two processes racing, durability
//! across a kill) and S3 on moto run in `cli/tests/storage_conformance.rs`,
//! where the `sinkcoord` binary is the process helper.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use sink_coordinator_host::storage::{LocalDirStorage, ObjectStorage, SharedMemStorage};
use sink_coordinator_testkit::faults::{CallKind, Fault, FaultMode, FaultyStorage};
use sink_coordinator_testkit::storage_conformance::{run, Backend, Handle, Options, Report};

/// A handle whose next write lands and then reports an error.
fn ambiguous_next_write<S: sink_coordinator::Storage + Send + 'static>(inner: S) -> Handle {
    let mut st = FaultyStorage::new(inner);
    st.push_fault(
        CallKind::Put,
        Fault {
            skip: 0,
            count: 1,
            mode: FaultMode::Ambiguous,
        },
    );
    Box::new(st)
}

#[derive(Default)]
struct Memory {
    tables: Mutex<BTreeMap<String, SharedMemStorage>>,
}

impl Memory {
    fn table(&self, name: &str) -> SharedMemStorage {
        let mut tables = self.tables.lock().unwrap();
        tables.entry(name.to_string()).or_default().clone()
    }
}

impl Backend for Memory {
    fn name(&self) -> String {
        "shared in-memory map".into()
    }
    fn open(&self, table: &str) -> Result<Handle, String> {
        Ok(Box::new(self.table(table)))
    }
    fn open_ambiguous(&self, table: &str) -> Option<Result<Handle, String>> {
        Some(Ok(ambiguous_next_write(self.table(table))))
    }
}

/// `object_store`'s `InMemory`, one store, a prefix per table.
struct ObjectMemory {
    root: ObjectStorage,
}

impl ObjectMemory {
    fn table(&self, name: &str) -> Result<ObjectStorage, String> {
        ObjectStorage::new(self.root.store(), &format!("tables/{name}"), name)
            .map_err(|e| e.to_string())
    }
}

impl Backend for ObjectMemory {
    fn name(&self) -> String {
        "object_store InMemory".into()
    }
    fn open(&self, table: &str) -> Result<Handle, String> {
        Ok(Box::new(self.table(table)?))
    }
    fn open_ambiguous(&self, table: &str) -> Option<Result<Handle, String>> {
        Some(self.table(table).map(ambiguous_next_write))
    }
}

struct LocalDir {
    base: PathBuf,
}

impl Backend for LocalDir {
    fn name(&self) -> String {
        format!("local directory {}", self.base.display())
    }
    fn open(&self, table: &str) -> Result<Handle, String> {
        LocalDirStorage::open(self.base.join(table))
            .map(|s| Box::new(s) as Handle)
            .map_err(|e| e.to_string())
    }
    fn open_ambiguous(&self, table: &str) -> Option<Result<Handle, String>> {
        Some(
            LocalDirStorage::open(self.base.join(table))
                .map(ambiguous_next_write)
                .map_err(|e| e.to_string()),
        )
    }
}

fn passes(backend: &dyn Backend) -> Report {
    match run(backend, None, &Options::default()) {
        Ok(report) => {
            eprintln!("{}: {report:?}", backend.name());
            report
        }
        Err(failures) => panic!("{}", failures.join("\n")),
    }
}

#[test]
fn shared_memory_map_conforms() {
    let report = passes(&Memory::default());
    assert_eq!(report.cases.len(), 8);
    assert_eq!(report.thread_race, (50, 50, 50 * 7));
}

#[test]
fn object_store_in_memory_conforms() {
    let report = passes(&ObjectMemory {
        root: ObjectStorage::in_memory().unwrap(),
    });
    assert_eq!(report.cases.len(), 8);
}

#[test]
fn local_dir_conforms() {
    let base = std::env::temp_dir().join(format!("sinkcoord-conformance-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let report = passes(&LocalDir { base: base.clone() });
    assert_eq!(report.cases.len(), 8);
    let _ = std::fs::remove_dir_all(&base);
}
