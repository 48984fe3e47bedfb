//! Hostile tables and sizes (issue 26) through both engines: a table whose
//! links loop, point forward or at a missing or foreign snapshot, or whose
//! record does not mark its own commit, and a commit user past the bound,
//! give the same fatal error natively and in the component, at once (no
//! loop, no trap). The core's unit tests (`guest/src/table/tests.rs`,
//! `guest/tests/hostile.rs`) pin the messages.

use std::collections::BTreeMap;

use sink_coordinator::table::{self, StoredSnapshot, UserMark};
use sink_coordinator::{
    Config, Entry, ErrorKind, HostErrorKind, MemStorage, Shared, Snapshot, StepClock,
    MAX_COMMIT_USER_BYTES,
};
use sink_coordinator_host::Runtime;
use sink_coordinator_testkit::driver::Engine;

fn mark(identifier: u64, snapshot_id: u64) -> UserMark {
    UserMark {
        identifier,
        snapshot_id,
    }
}

/// A record of "job" at `id` for `identifier` with the given link and marks.
fn record(
    id: u64,
    identifier: u64,
    previous: Option<UserMark>,
    users: &[(&str, UserMark)],
) -> Vec<u8> {
    table::encode_snapshot(&StoredSnapshot {
        snapshot: Snapshot {
            id,
            commit_user: "job".into(),
            identifier,
            watermark: None,
            time_ms: 0,
            committables: vec![(0, b"x".to_vec())],
        },
        previous_of_user: previous,
        users: users
            .iter()
            .map(|(u, m)| (u.to_string(), *m))
            .collect::<BTreeMap<_, _>>(),
    })
}

fn hostile_tables() -> Vec<(&'static str, MemStorage)> {
    let table = |records: Vec<(u64, Vec<u8>)>| {
        let mut st = MemStorage::default();
        for (id, bytes) in records {
            st.map.insert(table::snapshot_key(id), bytes);
        }
        st
    };
    vec![
        (
            "self-link",
            table(vec![(
                1,
                record(1, 5, Some(mark(5, 1)), &[("job", mark(5, 1))]),
            )]),
        ),
        (
            "forward link",
            table(vec![
                (1, record(1, 4, Some(mark(6, 2)), &[("job", mark(4, 1))])),
                (2, record(2, 6, Some(mark(4, 1)), &[("job", mark(6, 2))])),
            ]),
        ),
        (
            "no own mark",
            table(vec![(1, record(1, 5, None, &[("job", mark(4, 1))]))]),
        ),
        (
            "mark past the record",
            table(vec![(
                1,
                record(1, 5, None, &[("job", mark(5, 1)), ("other", mark(1, 9))]),
            )]),
        ),
    ]
}

fn entry(checkpoint: u64, savepoint: bool) -> Entry {
    Entry {
        checkpoint,
        committables: vec![b"a".to_vec()].into(),
        watermark: None,
        savepoint,
    }
}

/// Start, a savepoint entry for checkpoint 7 and its completion: the first
/// call that reads the table, then commits and tags (walking back).
fn run(engine: &Engine, storage: MemStorage, config: Config) -> (HostErrorKind, String) {
    let driver_storage = Shared::new(storage);
    let clock = Shared::new(StepClock::default());
    let mut driver = engine
        .driver(driver_storage.as_storage(), clock.as_clock())
        .expect("a driver");
    let mut c = driver.create(config, None).expect("an instance");
    let outcome = c
        .start()
        .and_then(|_| c.event(0, 0, entry(7, true)))
        .and_then(|_| c.checkpoint_complete(7));
    let e = outcome.expect_err("the hostile input is refused");
    (e.kind, e.message)
}

#[test]
fn hostile_tables_are_corrupt_state_on_both_engines() {
    let component = Engine::Component(Runtime::embedded().expect("the embedded component"));
    for (name, storage) in hostile_tables() {
        let mut config = Config::new(1, "job");
        config.savepoint_auto_tag = true;
        let native = run(&Engine::NATIVE, storage.clone(), config.clone());
        let wasm = run(&component, storage, config);
        assert_eq!(native, wasm, "{name}: the engines differ");
        assert_eq!(
            native.0,
            HostErrorKind::Core(ErrorKind::CorruptState),
            "{name}: {native:?}"
        );
    }
}

#[test]
fn an_overlong_commit_user_is_invalid_config_on_both_engines() {
    let component = Engine::Component(Runtime::embedded().expect("the embedded component"));
    let config = Config::new(1, "u".repeat(MAX_COMMIT_USER_BYTES + 1));
    let native = run(&Engine::NATIVE, MemStorage::default(), config.clone());
    let wasm = run(&component, MemStorage::default(), config);
    assert_eq!(native, wasm);
    assert_eq!(native.0, HostErrorKind::Core(ErrorKind::InvalidConfig));
}
