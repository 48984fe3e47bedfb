//! Golden coordinator states written by 0.2.3 (SEMANTICS v2.1, section 7):
//! format version 3 where the state needs it (END entries with `taken`, the
//! savepoint ids owed a tag, the aborted ids above the mark), version 2
//! otherwise. The files are in `tests/golden/coordinator-v3/`; each is the
//! state of a fixed scenario run on the native core (`BLESS=1` rewrites them
//! after a deliberate format change).
//!
//! - the native core writes exactly the files;
//! - each restores natively and in the embedded component, with every
//!   subtask finished (the recovery inside `start`) and over the scenario's
//!   table: both give the same outcome, table and state bytes, and an owed
//!   tag whose only carrier is the state is created;
//! - rollback: the previous release's component
//!   (`dist/sink-coordinator-0.2.2.wasm`) restores the version-2 state the
//!   new core writes, and refuses every version-3 one with `corrupt-state`.
//!
//! `cargo test --release -p sink-coordinator-testkit --test golden_v3`

use std::path::PathBuf;

use sink_coordinator::{
    Config, Coordinator, Entry, ErrorKind, MemStorage, OwnedEnv, RestorePoint, StepClock, Storage,
    END,
};
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::{
    ComponentCoordinator, ComponentTable, HostErrorKind, Runtime, RuntimeOptions,
};
use sink_coordinator_testkit::storage_hook::{BeforePut, FailTags};

/// Memory storage whose tag creates fail while its hook is on.
type TagFaults = BeforePut<MemStorage, FailTags>;

/// The table and a clock stopped at 1,000 ms.
type Table = OwnedEnv<TagFaults, StepClock>;

fn table() -> Table {
    OwnedEnv::new(TagFaults::default(), StepClock::new(1_000, 0))
}

fn e(c: u64, data: &[&str], savepoint: bool) -> Entry {
    Entry {
        checkpoint: c,
        committables: data.iter().map(|d| d.as_bytes().to_vec()).collect(),
        watermark: None,
        savepoint,
    }
}

/// One golden state: its file, the scenario's configuration, the
/// checkpoint it was taken at, its bytes and the table it left.
struct Golden {
    name: &'static str,
    config: Config,
    r: u64,
    state: Vec<u8>,
    table: Table,
    /// The version the state must be written in.
    version: u32,
}

fn tagged(p: u32) -> Config {
    let mut config = Config::new(p, "job-v3");
    config.savepoint_auto_tag = true;
    config
}

/// The scenarios, run on the native core.
fn scenarios() -> Vec<Golden> {
    let mut out = Vec::new();
    let mut run = |name: &'static str,
                   config: Config,
                   version: u32,
                   f: &dyn Fn(&mut Coordinator, &mut Table) -> u64| {
        let mut table = table();
        let mut c = Coordinator::new(config.clone(), None);
        c.start(&mut table).unwrap();
        let r = f(&mut c, &mut table);
        let state = c.checkpoint(&mut table, r).unwrap();
        table.storage.hook.set(false);
        out.push(Golden {
            name,
            config,
            r,
            state,
            table,
            version,
        });
    };
    // Nothing that needs version 3: version 2.
    run("v2_no_end", tagged(2), 2, &|c, t| {
        c.event(t, 0, 0, e(1, &["a1"], false)).unwrap();
        c.event(t, 1, 0, e(1, &["b1"], false)).unwrap();
        c.checkpoint_complete(t, 1).unwrap();
        2
    });
    // An END entry with its `taken` (2: subtask 0 had reported 1).
    run("v3_end_taken", Config::new(2, "job-v3"), 3, &|c, t| {
        c.event(t, 0, 0, e(1, &["a1"], false)).unwrap();
        c.event(t, 0, 0, e(END, &["a-end"], false)).unwrap();
        2
    });
    // Savepoint 1 committed, its tag put failed (owed); 3 aborted above
    // the mark; subtask 0 ended.
    run("v3_owed_aborted_end", tagged(2), 3, &|c, t| {
        c.event(t, 0, 0, e(1, &["a1"], true)).unwrap();
        c.event(t, 1, 0, e(1, &["b1"], true)).unwrap();
        c.event(t, 0, 0, e(END, &["a-end"], false)).unwrap();
        c.checkpoint_aborted(t, 3).unwrap();
        t.storage.hook.set(true);
        assert!(c.checkpoint_complete(t, 1).is_err());
        2
    });
    // An owed tag alone (no END entry) needs version 3 too.
    run("v3_owed_only", tagged(1), 3, &|c, t| {
        c.event(t, 0, 0, e(1, &["a1"], true)).unwrap();
        t.storage.hook.set(true);
        assert!(c.checkpoint_complete(t, 1).is_err());
        2
    });
    // A drained stop-with-savepoint: the tag on the END snapshot is decided
    // and its put fails; the state carries it with its END mark.
    run("v3_drained_on_end", tagged(1), 3, &|c, t| {
        c.event(t, 0, 0, e(END, &["a-end"], false)).unwrap();
        c.event(t, 0, 0, e(1, &[], true)).unwrap();
        t.storage.hook.set(true);
        assert!(c.checkpoint_complete(t, 1).is_err());
        2
    });
    out
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden/coordinator-v3")
        .join(format!("{name}.bin"))
}

#[test]
fn the_core_writes_the_golden_v3_states() {
    for g in scenarios() {
        let path = golden_path(g.name);
        if std::env::var_os("BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &g.state).unwrap();
        }
        let golden = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            g.state, golden,
            "{}: the core no longer writes these bytes",
            g.name
        );
        assert_eq!(
            u32::from(g.state[0]),
            g.version,
            "{}: format version",
            g.name
        );
    }
}

/// The outcome of a restore with every subtask finished, its table and the
/// state checkpointed after it, as comparable text.
type Restored = (String, Vec<(String, Vec<u8>)>, Vec<u8>);

fn restore_native(g: &Golden, state: &[u8]) -> Restored {
    let mut table = g.table.clone();
    let rp = RestorePoint {
        checkpoint: g.r,
        state: state.to_vec(),
        finished_subtasks: (0..g.config.parallelism).collect(),
    };
    let mut c = Coordinator::new(g.config.clone(), Some(rp));
    let out = format!("{:?}", c.start(&mut table).map_err(|e| e.kind));
    let again = c.checkpoint(&mut table, g.r + 1).unwrap_or_default();
    (out, dump(&mut table.storage.inner), again)
}

fn restore_component(runtime: &Runtime, g: &Golden, state: &[u8]) -> Restored {
    let table = Shared::new(g.table.storage.inner.clone());
    let env = HostEnv::new(table.clone(), g.table.clock);
    let rp = RestorePoint {
        checkpoint: g.r,
        state: state.to_vec(),
        finished_subtasks: (0..g.config.parallelism).collect(),
    };
    let mut c = ComponentCoordinator::new(runtime, env, &g.config, Some(&rp)).unwrap();
    let out = format!(
        "{:?}",
        c.start().map_err(|e| match e.kind {
            HostErrorKind::Core(k) => k,
            HostErrorKind::Trap => panic!("{}: trap: {}", g.name, e.message),
        })
    );
    let again = c.checkpoint(g.r + 1).unwrap_or_default();
    let map = dump(&mut table.lock().clone());
    (out, map, again)
}

fn dump(map: &mut MemStorage) -> Vec<(String, Vec<u8>)> {
    let keys = map.list("").unwrap();
    keys.into_iter()
        .map(|k| {
            let v = map.get(&k).unwrap().unwrap_or_default();
            (k, v)
        })
        .collect()
}

#[test]
fn golden_v3_states_restore_alike_natively_and_in_the_component() {
    let runtime = Runtime::embedded().unwrap();
    for g in scenarios() {
        let native = restore_native(&g, &g.state);
        let component = restore_component(&runtime, &g, &g.state);
        assert_eq!(native, component, "{}", g.name);
        assert!(native.0.starts_with("Ok("), "{}: {}", g.name, native.0);
        let tags: Vec<&str> = native
            .1
            .iter()
            .filter_map(|(k, _)| k.strip_prefix("tag/"))
            .collect();
        match g.name {
            // The only carrier of the owed tag is the state bytes.
            "v3_owed_aborted_end" | "v3_owed_only" => {
                assert_eq!(tags, ["savepoint-1"], "{}", g.name)
            }
            "v3_drained_on_end" => {
                assert_eq!(tags, ["savepoint-1"], "{}", g.name);
                let tag = ComponentTable::new(&runtime, native_table(&native.1))
                    .unwrap()
                    .list_tags()
                    .unwrap();
                assert_eq!(tag[0].identifier, END, "the drained tag points at END");
            }
            _ => assert!(tags.is_empty(), "{}: {tags:?}", g.name),
        }
    }
}

fn native_table(entries: &[(String, Vec<u8>)]) -> MemStorage {
    let mut map = MemStorage::default();
    for (k, v) in entries {
        map.put(k, v).unwrap();
    }
    map
}

/// A rollback to the previous release: it restores what the new core
/// writes in version 2 and refuses version 3 with `corrupt-state`.
#[test]
fn the_previous_release_restores_version_2_and_refuses_version_3() {
    let old = Runtime::new(
        include_bytes!("../../dist/sink-coordinator-0.2.2.wasm"),
        RuntimeOptions::default(),
    )
    .unwrap();
    for g in scenarios() {
        let (out, _, _) = restore_component(&old, &g, &g.state);
        if g.version == 2 {
            assert!(out.starts_with("Ok("), "{}: {out}", g.name);
        } else {
            assert_eq!(
                out,
                format!("Err({:?})", ErrorKind::CorruptState),
                "{}",
                g.name
            );
        }
    }
}
