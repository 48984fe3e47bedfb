//! Issue 26: `ComponentTable` reads a table in bounded calls (one snapshot
//! per `snapshot-by-id`, `TAG_PAGE` tags per `list-tags`) and returns what
//! the core's one-pass readers return, also on damaged tables: a gap ends
//! the snapshots, a corrupt snapshot is the same error, and tags whose
//! record names differ from their keys come out in the same order.

use sink_coordinator::table::{self, TAG_PREFIX};
use sink_coordinator::{Config, Coordinator, Entry, MemEnv, MemStorage, StepClock, Storage};
use sink_coordinator_host::component::TAG_PAGE;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::{ComponentTable, HostErrorKind, HostResult, Runtime, RuntimeOptions};

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

/// What the core's one-pass reader (`native`) and the component's bounded
/// calls (`paged`) read of the table `st`.
fn read_both<T>(
    rt: &Runtime,
    mut st: MemStorage,
    native: fn(&mut dyn Storage) -> sink_coordinator::Result<T>,
    paged: fn(&mut ComponentTable) -> HostResult<T>,
) -> (sink_coordinator::Result<T>, HostResult<T>) {
    let native = native(&mut st);
    let paged = paged(&mut ComponentTable::new(rt, st).unwrap());
    (native, paged)
}

/// Both readers succeeded and read the same: what they read.
fn assert_same<T: PartialEq + std::fmt::Debug>(
    (native, paged): (sink_coordinator::Result<T>, HostResult<T>),
) -> T {
    let native = native.unwrap();
    assert_eq!(paged.unwrap(), native);
    native
}

/// Both readers failed, and with the same error.
fn assert_same_error<T: std::fmt::Debug>(
    (native, paged): (sink_coordinator::Result<T>, HostResult<T>),
) {
    let native = native.unwrap_err();
    let paged = paged.unwrap_err();
    assert_eq!(paged.kind, HostErrorKind::Core(native.kind), "{paged}");
    assert_eq!(paged.message, native.message());
}

#[test]
fn snapshots_read_one_call_each_match_the_core() {
    // 1,000,000 fuel per call: enough for one snapshot, not for 600 in
    // one call (that trapped: "all fuel consumed").
    let rt = runtime(Some(1_000_000));
    let snapshots = |st| {
        read_both(
            &rt,
            st,
            table::list_snapshots,
            ComponentTable::list_snapshots,
        )
    };
    let st = table_with_snapshots(600);
    assert_eq!(assert_same(snapshots(st.clone())).len(), 600);

    // A gap: both stop before it.
    let mut gap = st.clone();
    gap.map.remove(&table::snapshot_key(300));
    assert_eq!(assert_same(snapshots(gap)).len(), 299);

    // A corrupt snapshot: the same error.
    let mut bad = st;
    bad.map
        .insert(table::snapshot_key(7), b"\x01garbage".to_vec());
    assert_same_error(snapshots(bad));
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
    let tags = |st| read_both(&rt, st, table::list_tags, ComponentTable::list_tags);
    assert_eq!(assert_same(tags(st.clone())).len() as u64, n + 2);

    // A tag that does not decode: the same error.
    st.map
        .insert("tag/savepoint-150".into(), b"\x01garbage".to_vec());
    assert_same_error(tags(st));
}
