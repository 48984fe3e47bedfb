//! Hostile tables and sizes (issue 26) through both engines: a table whose
//! links loop or point forward, whose record does not mark its own commit,
//! whose snapshot ids are exhausted or whose commit users pass the table
//! bound, a walk back (a savepoint replayed after a restore) reaching a
//! missing or another user's snapshot, a commit user past the bound, and a
//! new user taking the table past its users bound: the same fatal error
//! natively and in the component, at once (no loop, no trap). The core's
//! unit tests (`guest/src/table/tests.rs`, `guest/tests/hostile.rs`) pin
//! the messages.

use std::collections::BTreeMap;

use sink_coordinator::table::{self, StoredSnapshot, UserMark};
use sink_coordinator::{
    Config, Entry, ErrorKind, HostErrorKind, MemStorage, RestorePoint, Shared, Snapshot, StepClock,
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
    record_of("job", id, identifier, previous, users)
}

/// A record of `user` at `id`.
fn record_of(
    user: &str,
    id: u64,
    identifier: u64,
    previous: Option<UserMark>,
    users: &[(&str, UserMark)],
) -> Vec<u8> {
    table::encode_snapshot(&StoredSnapshot {
        snapshot: Snapshot {
            id,
            commit_user: user.into(),
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

fn table(records: Vec<(u64, Vec<u8>)>) -> MemStorage {
    let mut st = MemStorage::default();
    for (id, bytes) in records {
        st.map.insert(table::snapshot_key(id), bytes);
    }
    st
}

/// Snapshot 1 of "v", listing `total` bytes of commit users as the table
/// bound counts them (each name's bytes and 16 for its mark): v itself and
/// names of at most 1 MiB.
fn users_record(total: u64) -> Vec<u8> {
    let mut left = total - (1 + 16);
    let mut names = Vec::new();
    while left > 16 + 3 {
        let len = (left - 16).min((1 << 20) - 16);
        names.push(format!(
            "{:03}{}",
            names.len(),
            "x".repeat(len as usize - 3)
        ));
        left -= len + 16;
    }
    let mut users: Vec<(&str, UserMark)> = names.iter().map(|n| (n.as_str(), mark(1, 1))).collect();
    users.push(("v", mark(1, 1)));
    record_of("v", 1, 1, None, &users)
}

/// "job" has committed checkpoint 9 in snapshot 3, whose link to its
/// previous commit is `previous`: a savepoint of checkpoint 7 replayed after
/// a restore is found by walking back from 3.
fn walked(previous: UserMark) -> MemStorage {
    let mut st = table(vec![
        (1, record_of("v", 1, 1, None, &[("v", mark(1, 1))])),
        (
            3,
            record(
                3,
                9,
                Some(previous),
                &[("job", mark(9, 3)), ("v", mark(1, 1))],
            ),
        ),
    ]);
    st.map.insert(table::LATEST_HINT.into(), b"3".to_vec());
    st
}

fn hostile_tables() -> Vec<(&'static str, MemStorage)> {
    vec![
        ("snapshot ids exhausted", {
            let mut st = table(vec![(
                u64::MAX,
                record_of("v", u64::MAX, 1, None, &[("v", mark(1, u64::MAX))]),
            )]);
            st.map
                .insert(table::LATEST_HINT.into(), u64::MAX.to_string().into_bytes());
            st
        }),
        (
            "more commit users than the table bound",
            // 17 MiB of names: past MAX_TABLE_USERS_BYTES (16 MiB).
            table(vec![(1, users_record(17 << 20))]),
        ),
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
    match outcome {
        Err(e) => (e.kind, e.message),
        Ok(o) => panic!("the hostile input was taken: {o:?}"),
    }
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

/// A coordinator of "job" restored from its checkpoint 7, whose state holds
/// the savepoint entry of checkpoint 7, on `storage`: it finds the
/// checkpoint committed (9 is) and walks back to tag the savepoint.
fn run_restored(engine: &Engine, storage: MemStorage, config: Config) -> (HostErrorKind, String) {
    let state = {
        let scratch = Shared::new(MemStorage::default());
        let clock = Shared::new(StepClock::default());
        let mut driver = Engine::NATIVE
            .driver(scratch.as_storage(), clock.as_clock())
            .expect("a driver");
        let mut c = driver.create(config.clone(), None).expect("an instance");
        c.start().expect("start");
        c.event(0, 0, entry(7, true)).expect("the savepoint entry");
        c.checkpoint(7).expect("the state of checkpoint 7")
    };
    let point = RestorePoint {
        checkpoint: 7,
        state,
        finished_subtasks: vec![],
    };
    let driver_storage = Shared::new(storage);
    let clock = Shared::new(StepClock::default());
    let mut driver = engine
        .driver(driver_storage.as_storage(), clock.as_clock())
        .expect("a driver");
    let e = driver
        .create(config, Some(point))
        .and_then(|mut c| {
            c.start()?;
            c.restored(0, 1, 7, vec![entry(7, true)])?;
            c.checkpoint_complete(8)
        })
        .expect_err("the hostile table is refused");
    (e.kind, e.message)
}

#[test]
fn walking_to_a_missing_or_foreign_snapshot_is_corrupt_state_on_both_engines() {
    let component = Engine::Component(Runtime::embedded().expect("the embedded component"));
    for (name, previous, words) in [
        ("link to a missing snapshot", mark(8, 2), "which is missing"),
        (
            "link to another user's snapshot",
            mark(8, 1),
            "holds another commit",
        ),
    ] {
        let mut config = Config::new(1, "job");
        config.savepoint_auto_tag = true;
        let native = run_restored(&Engine::NATIVE, walked(previous), config.clone());
        let wasm = run_restored(&component, walked(previous), config);
        assert_eq!(native, wasm, "{name}: the engines differ");
        assert_eq!(
            native.0,
            HostErrorKind::Core(ErrorKind::CorruptState),
            "{name}: {native:?}"
        );
        assert!(native.1.contains(words), "{name}: {native:?}");
    }
}

#[test]
fn a_commit_user_taking_the_table_past_its_users_bound_is_invalid_config_on_both_engines() {
    let component = Engine::Component(Runtime::embedded().expect("the embedded component"));
    // 32 KiB below the bound: room for a short user, not for one of
    // MAX_COMMIT_USER_BYTES (64 KiB).
    let mut st = table(vec![(1, users_record((16 << 20) - (32 << 10)))]);
    st.map.insert(table::LATEST_HINT.into(), b"1".to_vec());
    let config = Config::new(1, "u".repeat(MAX_COMMIT_USER_BYTES));
    let native = run(&Engine::NATIVE, st.clone(), config.clone());
    let wasm = run(&component, st, config);
    assert_eq!(native, wasm);
    assert_eq!(
        native.0,
        HostErrorKind::Core(ErrorKind::InvalidConfig),
        "{native:?}"
    );
    assert!(native.1.contains("commit users take"), "{native:?}");
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
