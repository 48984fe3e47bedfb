//! Issue 26: `ComponentTable` reads a table in bounded calls (one snapshot
//! per `snapshot-by-id`, `TAG_PAGE` tags per `list-tags`) and returns what
//! the core's one-pass readers return, also on damaged tables: a gap ends
//! the snapshots, a corrupt snapshot is the same error, and tags whose
//! record names differ from their keys come out in the same order.

use sink_coordinator::table::{self, TAG_PREFIX};
use sink_coordinator::{Config, Coordinator, Entry, MemEnv, MemStorage, StepClock};
use sink_coordinator_host::component::TAG_PAGE;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::{ComponentTable, HostErrorKind, Runtime, RuntimeOptions};

/// A table of `n` snapshots of commit user "job".
fn table_with_snapshots(n: u64) -> MemStorage {
    let storage = Shared::new(MemStorage::default());
    let mut env = HostEnv::new(storage.clone(), StepClock { next: 1, step: 1 });
    let mut c = Coordinator::new(Config::new(1, "job"), None);
    c.start(&mut env).unwrap();
    for cp in 1..=n {
        let entry = Entry {
            checkpoint: cp,
            committables: vec![format!("c{cp}").into_bytes()].into(),
            watermark: None,
            savepoint: false,
        };
        c.event(&mut env, 0, 0, entry).unwrap();
        c.checkpoint(&mut env, cp).unwrap();
        c.checkpoint_complete(&mut env, cp).unwrap();
    }
    drop(env);
    let map = storage.lock().map.clone();
    MemStorage { map }
}

fn runtime(fuel: Option<u64>) -> Runtime {
    let options = RuntimeOptions {
        fuel_per_call: fuel,
        ..RuntimeOptions::default()
    };
    Runtime::new(sink_coordinator_host::engine::EMBEDDED_WASM, options).unwrap()
}

#[test]
fn snapshots_read_one_call_each_match_the_core() {
    // 1,000,000 fuel per call: enough for one snapshot, not for 600 in
    // one call (that trapped: "all fuel consumed").
    let rt = runtime(Some(1_000_000));
    let mut st = table_with_snapshots(600);
    let native = table::list_snapshots(&mut st).unwrap();
    let paged = ComponentTable::new(&rt, st.clone())
        .unwrap()
        .list_snapshots()
        .unwrap();
    assert_eq!(paged.len(), 600);
    assert_eq!(paged, native);

    // A gap: both stop before it.
    let mut gap = st.clone();
    gap.map.remove(&table::snapshot_key(300));
    let native = table::list_snapshots(&mut gap).unwrap();
    let paged = ComponentTable::new(&rt, gap)
        .unwrap()
        .list_snapshots()
        .unwrap();
    assert_eq!(native.len(), 299);
    assert_eq!(paged, native);

    // A corrupt snapshot: the same error.
    let mut bad = st;
    bad.map
        .insert(table::snapshot_key(7), b"\x01garbage".to_vec());
    let native = table::list_snapshots(&mut bad).unwrap_err();
    let paged = ComponentTable::new(&rt, bad)
        .unwrap()
        .list_snapshots()
        .unwrap_err();
    assert_eq!(paged.kind, HostErrorKind::Core(native.kind), "{paged}");
    assert_eq!(paged.message, native.message());
}

#[test]
fn tags_read_in_pages_match_the_core() {
    let rt = runtime(None);
    let mut env = MemEnv {
        storage: table_with_snapshots(3),
        ..MemEnv::default()
    };
    let n = 3 * TAG_PAGE as u64 + 5;
    for i in 0..n {
        let name = format!("savepoint-{i}");
        assert!(table::create_tag(&mut env, &name, 1 + i % 3, 1 + i % 3, "job", None).unwrap());
    }
    let mut st = env.storage;
    // Records whose names differ from their keys (a hand-made table): the
    // order is by name, stable, across pages too.
    for (key, from) in [
        ("tag/zz-first", "savepoint-100"),
        ("tag/aa-last", "savepoint-2"),
    ] {
        let bytes = st.map[&format!("{TAG_PREFIX}{from}")].clone();
        st.map.insert(key.to_string(), bytes);
    }
    let native = table::list_tags(&mut st).unwrap();
    let paged = ComponentTable::new(&rt, st.clone())
        .unwrap()
        .list_tags()
        .unwrap();
    assert_eq!(paged.len() as u64, n + 2);
    assert_eq!(paged, native);

    // A tag that does not decode: the same error.
    st.map
        .insert("tag/savepoint-150".into(), b"\x01garbage".to_vec());
    let native = table::list_tags(&mut st).unwrap_err();
    let paged = ComponentTable::new(&rt, st)
        .unwrap()
        .list_tags()
        .unwrap_err();
    assert_eq!(paged.kind, HostErrorKind::Core(native.kind), "{paged}");
    assert_eq!(paged.message, native.message());
}
