//! The component handles: traps, a local-directory table end to end, and
//! the writer helper.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sink_coordinator::{Config, Entry, ErrorKind, Lifecycle, MemStorage, Storage, END};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::engine::{DEADLINE_TICK, DEFAULT_FUEL_PER_CALL};
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_host::{
    ComponentCoordinator, ComponentTable, HostError, HostErrorKind, Runtime, RuntimeOptions,
};
use sink_coordinator_testkit::driver::{ComponentDriver, Driver, NativeDriver};
use sink_coordinator_testkit::storage_hook::BeforePut;

fn entry(checkpoint: u64, committables: &[&str]) -> Entry {
    Entry {
        checkpoint,
        committables: committables.iter().map(|c| c.as_bytes().to_vec()).collect(),
        watermark: None,
        savepoint: false,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sinkcoord-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A guest that overruns its deadline is interrupted (epoch interruption,
/// the default sandbox: no fuel metering), its instance is discarded, and
/// the runtime and the table stay usable.
#[test]
fn overrun_is_interrupted_and_the_host_stays_usable() {
    // A runtime of its own: the test advances its engine's epoch by a whole
    // deadline, which would interrupt the calls other tests of this file make
    // at the same moment on the shared `Runtime::embedded()` (it failed
    // `local_dir_table_end_to_end` once in CI that way).
    let runtime = Runtime::new(
        sink_coordinator_host::engine::EMBEDDED_WASM,
        RuntimeOptions::default(),
    )
    .unwrap();
    assert_eq!(
        runtime.options().fuel_per_call,
        None,
        "no metering by default"
    );
    let deadline = runtime
        .options()
        .call_deadline
        .expect("a deadline by default");
    let storage = Shared::new(MemStorage::default());
    let armed = Arc::new(AtomicBool::new(false));
    let engine = runtime.engine().clone();
    let ticks = deadline.as_millis() / DEADLINE_TICK.as_millis() + 2;
    // Once armed, the storage advances the runtime's epoch past any call
    // deadline inside a `put-if-absent`: when the guest resumes it has run
    // out of time, exactly as a guest stuck in a loop does once the ticker
    // passed its deadline (deterministic: no waiting on the clock).
    let overrun = {
        let armed = armed.clone();
        move |_: &str| {
            if armed.swap(false, Ordering::SeqCst) {
                for _ in 0..ticks {
                    engine.increment_epoch();
                }
            }
            Ok(())
        }
    };
    let env = HostEnv::new(
        BeforePut {
            inner: storage.clone(),
            hook: overrun,
        },
        ManualClock::new(0, 0),
    );
    let coordinator =
        ComponentCoordinator::new(&runtime, env, &Config::new(1, "trapped"), None).unwrap();
    let err = trap_then_usable(&runtime, &storage, coordinator, |c| {
        armed.store(true, Ordering::SeqCst);
        c.event(0, 0, entry(2, &["b"])).unwrap();
        c.checkpoint_complete(2).unwrap_err()
    });
    assert!(
        err.message.ends_with(&format!(
            "the call exceeded its deadline of {} ms",
            deadline.as_millis()
        )),
        "{err}"
    );
    // The snapshot of checkpoint 2 was created before the guest overran.
    assert_eq!(
        ComponentTable::new(&runtime, storage)
            .unwrap()
            .list_snapshots()
            .unwrap()
            .len(),
        3
    );
}

/// With fuel metering turned on, a guest out of fuel traps the same way.
#[test]
fn out_of_fuel_is_a_trap_and_the_host_stays_usable() {
    let runtime = Runtime::new(
        sink_coordinator_host::engine::EMBEDDED_WASM,
        RuntimeOptions {
            fuel_per_call: Some(DEFAULT_FUEL_PER_CALL),
            ..RuntimeOptions::default()
        },
    )
    .unwrap();
    let storage = Shared::new(MemStorage::default());
    let env = HostEnv::new(storage.clone(), ManualClock::new(0, 0));
    let coordinator =
        ComponentCoordinator::new(&runtime, env, &Config::new(1, "trapped"), None).unwrap();
    assert!(coordinator.meters_fuel());
    let err = trap_then_usable(&runtime, &storage, coordinator, |c| {
        // A budget far too small for any call: the guest runs out of fuel.
        c.set_fuel_per_call(10);
        let err = c.event(0, 0, entry(2, &["b"])).unwrap_err();
        c.set_fuel_per_call(u64::MAX);
        err
    });
    assert!(err.message.contains("all fuel consumed"), "{err}");
}

/// Commits checkpoint 1, makes the guest trap with `trap`, then checks
/// that the instance is discarded, answers like a failed one, and that a
/// new instance over the same table works. Returns the trap.
fn trap_then_usable(
    runtime: &Runtime,
    storage: &Shared<MemStorage>,
    mut coordinator: ComponentCoordinator,
    trap: impl FnOnce(&mut ComponentCoordinator) -> HostError,
) -> HostError {
    assert_eq!(coordinator.committed_up_to(), None, "none in created");
    let started = coordinator.start().unwrap();
    assert_eq!(coordinator.state(), Lifecycle::Running);
    assert_eq!(started.committed_up_to, None);
    coordinator.event(0, 0, entry(1, &["a"])).unwrap();
    let completed = coordinator.checkpoint_complete(1).unwrap();
    assert_eq!(completed.committed, vec![1]);
    assert_eq!(completed.committed_up_to, Some(1));
    assert_eq!(coordinator.committed_up_to(), Some(1));

    let err = trap(&mut coordinator);
    assert_eq!(err.kind, HostErrorKind::Trap, "{err}");
    assert_eq!(err.kind.name(), "trap");
    assert!(err.kind.is_fatal());
    assert!(!err.message.contains('\n'), "{err}");
    assert!(coordinator.is_discarded());
    assert_eq!(coordinator.state(), Lifecycle::Failed);
    // What the host last knew: still true, the guest's value only grows.
    assert_eq!(coordinator.committed_up_to(), Some(1));

    // Later calls fail like on any failed instance, without entering the guest.
    let e = coordinator.event(0, 0, entry(3, &["c"])).unwrap_err();
    assert_eq!(e.kind, HostErrorKind::Core(ErrorKind::IllegalState), "{e}");
    assert_eq!(
        coordinator.checkpoint(1).unwrap_err().kind,
        HostErrorKind::Core(ErrorKind::IllegalState)
    );
    let closed = coordinator.close().unwrap();
    assert_eq!(closed.state, Lifecycle::Failed);
    assert_eq!(closed.committed_up_to, Some(1));

    // The runtime and the table are fine: a new instance works.
    let env = HostEnv::new(storage.clone(), ManualClock::new(0, 0));
    let mut fresh = ComponentCoordinator::new(runtime, env, &Config::new(1, "job"), None).unwrap();
    assert_eq!(fresh.start().unwrap().state, Lifecycle::Running);
    fresh.event(0, 0, entry(1, &["a"])).unwrap();
    assert_eq!(
        fresh.checkpoint_complete(1).unwrap().committed_up_to,
        Some(1)
    );
    let mut table = ComponentTable::new(runtime, storage.clone()).unwrap();
    let snapshots = table.list_snapshots().unwrap();
    let last = snapshots.last().unwrap();
    assert_eq!((last.identifier, last.commit_user.as_str()), (1, "job"));
    err
}

#[test]
fn fuel_limit_from_runtime_options() {
    let runtime = Runtime::new(
        sink_coordinator_host::engine::EMBEDDED_WASM,
        RuntimeOptions {
            fuel_per_call: Some(1),
            ..RuntimeOptions::default()
        },
    )
    .unwrap();
    // One unit of fuel is not enough to instantiate, construct or start.
    let result =
        ComponentCoordinator::new(&runtime, HostEnv::detached(), &Config::new(1, "job"), None)
            .and_then(|mut c| c.start());
    assert_eq!(result.unwrap_err().kind, HostErrorKind::Trap);
}

#[test]
fn precompiled_cache_is_written_and_reused() {
    let dir = temp_dir("cache");
    let options = RuntimeOptions {
        cache_dir: Some(dir.clone()),
        ..RuntimeOptions::default()
    };
    let first = Runtime::new(
        sink_coordinator_host::engine::EMBEDDED_WASM,
        options.clone(),
    )
    .unwrap();
    let cached: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    // The second runtime loads the precompiled file; both run the same code.
    let second = Runtime::new(sink_coordinator_host::engine::EMBEDDED_WASM, options).unwrap();
    for runtime in [&first, &second] {
        let mut c =
            ComponentCoordinator::new(runtime, HostEnv::detached(), &Config::new(1, "job"), None)
                .unwrap();
        assert_eq!(c.start().unwrap().state, Lifecycle::Running);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn local_dir_table_end_to_end() {
    let dir = temp_dir("localdir-e2e");
    let table_dir = dir.join("table");
    let runtime = Runtime::embedded().unwrap();
    let storage = LocalDirStorage::open(&table_dir).unwrap();
    let env = HostEnv::new(storage, ManualClock::new(1000, 0));
    let mut coordinator =
        ComponentCoordinator::new(&runtime, env, &Config::new(2, "job-1"), None).unwrap();
    coordinator.start().unwrap();
    coordinator.event(0, 0, entry(1, &["a0"])).unwrap();
    coordinator.event(1, 0, entry(1, &["a1"])).unwrap();
    coordinator.checkpoint_complete(1).unwrap();
    assert_eq!(coordinator.close().unwrap().state, Lifecycle::Closed);

    // Read back through a new handle on the directory: component and native agree.
    let mut table = ComponentTable::new(
        &runtime,
        LocalDirStorage::open_existing(&table_dir).unwrap(),
    )
    .unwrap();
    let snapshots = table.list_snapshots().unwrap();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    assert_eq!(snapshots[0].identifier, 1);
    assert_eq!(snapshots[0].commit_user, "job-1");
    assert_eq!(snapshots[0].time_ms, 1000);
    assert_eq!(
        snapshots[0].committables,
        vec![(0, b"a0".to_vec()), (1, b"a1".to_vec())]
    );
    assert_eq!(table.latest_snapshot().unwrap().as_ref(), snapshots.last());
    assert_eq!(
        table.snapshot_by_id(snapshots[0].id).unwrap().as_ref(),
        Some(&snapshots[0])
    );
    let mut native_storage = LocalDirStorage::open_existing(&table_dir).unwrap();
    assert_eq!(
        sink_coordinator::table::list_snapshots(&mut native_storage).unwrap(),
        snapshots
    );
    assert!(native_storage
        .list("")
        .unwrap()
        .iter()
        .all(|k| !k.contains(".sinkcoord-tmp")));

    // A restarted job with the same commit user does not commit checkpoint 1 twice.
    let env = HostEnv::new(
        LocalDirStorage::open_existing(&table_dir).unwrap(),
        ManualClock::new(2000, 0),
    );
    let mut again =
        ComponentCoordinator::new(&runtime, env, &Config::new(2, "job-1"), None).unwrap();
    again.start().unwrap();
    let _ = again.event(0, 0, entry(1, &["a0"]));
    let _ = again.event(1, 0, entry(1, &["a1"]));
    let _ = again.checkpoint_complete(1);
    assert_eq!(table.list_snapshots().unwrap().len(), 1);

    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn writer_helper_native_and_component_agree() {
    let runtime = Runtime::embedded().unwrap();
    let storage = Shared::new(MemStorage::default());
    let clock = Shared::new(ManualClock::new(0, 0));
    let mut native = NativeDriver::new(storage.as_storage(), clock.as_clock());
    let mut component =
        ComponentDriver::new(&runtime, storage.as_storage(), clock.as_clock()).unwrap();
    let mut outputs = Vec::new();
    for driver in [&mut native as &mut dyn Driver, &mut component] {
        let mut w = driver.create_writer(3).unwrap();
        let sent = w.report(1, vec![b"x".to_vec()], Some(5), true).unwrap();
        assert_eq!(
            sent,
            Entry {
                checkpoint: 1,
                committables: vec![b"x".to_vec()].into(),
                watermark: Some(5),
                savepoint: true
            }
        );
        w.report(2, vec![b"y".to_vec()], None, false).unwrap();
        // Checkpoints must increase: a helper error, not a trap.
        let err = w.report(2, vec![], None, false).unwrap_err();
        assert_eq!(
            err.kind,
            HostErrorKind::Core(ErrorKind::InvalidEvent),
            "{err}"
        );
        let end = w.end_input(vec![b"z".to_vec()], Some(9)).unwrap();
        w.checkpoint_aborted(2).unwrap();
        // committed(u) drops entries <= u; a lower u later changes nothing.
        w.committed(1).unwrap();
        w.committed(0).unwrap();
        let state = w.state().unwrap();
        let mut restored = driver.create_writer(3).unwrap();
        let replay = restored.restore(&state, 2).unwrap();
        let err = driver
            .create_writer(3)
            .unwrap()
            .restore(&[0xff, 0xff, 0xff], 1)
            .unwrap_err();
        assert_eq!(
            err.kind,
            HostErrorKind::Core(ErrorKind::CorruptState),
            "{err}"
        );
        outputs.push((end, state, replay, err.message));
    }
    assert_eq!(
        outputs[0], outputs[1],
        "native and component writers differ"
    );
}

#[test]
fn committed_up_to_native_and_component_agree() {
    // SEMANTICS 5.5: none until the commit rule ran with a target; the
    // target after a run that wrote everything; END after the final commit;
    // answered in every state (closed included) and equal to the outcomes'.
    let runtime = Runtime::embedded().unwrap();
    let mut seen = Vec::new();
    for component in [false, true] {
        let storage = Shared::new(MemStorage::default());
        let clock = Shared::new(ManualClock::new(0, 0));
        let mut driver: Box<dyn Driver> = if component {
            Box::new(
                ComponentDriver::new(&runtime, storage.as_storage(), clock.as_clock()).unwrap(),
            )
        } else {
            Box::new(NativeDriver::new(storage.as_storage(), clock.as_clock()))
        };
        let mut c = driver.create(Config::new(2, "job"), None).unwrap();
        let mut values = vec![c.committed_up_to()];
        let mut outcomes = vec![c.start().unwrap().committed_up_to];
        values.push(c.committed_up_to());
        outcomes.push(c.event(0, 0, entry(1, &["a"])).unwrap().committed_up_to);
        outcomes.push(c.event(1, 0, entry(1, &["b"])).unwrap().committed_up_to);
        outcomes.push(c.checkpoint_complete(1).unwrap().committed_up_to);
        values.push(c.committed_up_to());
        outcomes.push(c.event(0, 0, entry(END, &[])).unwrap().committed_up_to);
        outcomes.push(c.event(1, 0, entry(END, &["e"])).unwrap().committed_up_to);
        outcomes.push(c.checkpoint_complete(2).unwrap().committed_up_to);
        values.push(c.committed_up_to());
        outcomes.push(c.close().unwrap().committed_up_to);
        values.push(c.committed_up_to());
        assert_eq!(c.state(), Lifecycle::Closed);
        seen.push((values, outcomes));
    }
    assert_eq!(
        seen[0],
        (
            vec![None, None, Some(1), Some(END), Some(END)],
            vec![
                None,
                None,
                None,
                Some(1),
                Some(1),
                Some(1),
                Some(END),
                Some(END)
            ]
        ),
        "native"
    );
    assert_eq!(seen[0], seen[1], "native and component differ");
}
