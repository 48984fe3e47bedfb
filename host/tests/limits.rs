//! Size limits (issue 11): a large committable commits identically on the
//! native core and through the component with the default limits, and above
//! a configured limit both paths refuse the event with the same
//! `invalid-event`. Plus a timing probe for large commits (ignored: run with
//! `SINKCOORD_COMMIT_MIB=N cargo test --release -p sink-coordinator-host
//! --test limits -- --ignored --nocapture`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sink_coordinator::{
    Config, Coordinator, Entry, ErrorKind, Lifecycle, Limits, MemEnv, MemStorage, Outcome,
    StepClock, Storage, StorageError, END,
};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::engine::{EMBEDDED_WASM, MAX_HOSTCALL_RANGE};
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::{
    ComponentCoordinator, HostError, HostErrorKind, HostResult, Runtime, RuntimeOptions,
};

const MIB: usize = 1 << 20;

mod common;
use common::entry;

/// A committable of `len` bytes that is not all one value (so nothing can
/// shortcut it), the same on every call.
fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
#[ignore = "timing probe: needs several GiB of memory and minutes at 1 GiB"]
fn large_commit_timing() {
    let mib: usize = std::env::var("SINKCOORD_COMMIT_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let runtime = Runtime::embedded().unwrap();
    let storage = Shared::new(MemStorage::default());
    let env = HostEnv::new(storage.clone(), ManualClock::new(0, 0));
    let mut c = ComponentCoordinator::new(&runtime, env, &Config::new(1, "job"), None).unwrap();
    c.start().unwrap();
    let t = Instant::now();
    c.event(0, 0, entry(1, vec![payload(mib * MIB)])).unwrap();
    let event = t.elapsed();
    let t = Instant::now();
    let outcome = c.checkpoint_complete(1).unwrap();
    let commit = t.elapsed();
    assert_eq!(outcome.committed, vec![1]);
    let stored = storage
        .lock()
        .map
        .get("snapshot/00000000000000000001")
        .map_or(0, Vec::len);
    println!(
        "{mib} MiB committable through the component: event {:.2} s, commit {:.2} s, snapshot {stored} bytes",
        event.as_secs_f64(),
        commit.as_secs_f64()
    );
}

/// One coordinator on either path, over its own in-memory table.
enum Path {
    Native(Box<Coordinator>, MemEnv),
    Component(Box<ComponentCoordinator>, Shared<MemStorage>),
}

impl Path {
    fn native(p: u32, limits: Option<Limits>) -> Self {
        let env = MemEnv {
            clock: StepClock {
                next: 1000,
                step: 1,
            },
            ..MemEnv::default()
        };
        let mut c = Coordinator::new(Config::new(p, "job"), None);
        if let Some(limits) = limits {
            c.set_limits(limits).unwrap();
        }
        Path::Native(Box::new(c), env)
    }

    fn component(runtime: &Runtime, p: u32, limits: Option<Limits>) -> Self {
        let storage = Shared::new(MemStorage::default());
        let env = HostEnv::new(storage.clone(), ManualClock::new(1000, 1));
        let mut c = ComponentCoordinator::new(runtime, env, &Config::new(p, "job"), None).unwrap();
        if let Some(limits) = limits {
            c.set_limits(&limits).unwrap();
        }
        Path::Component(Box::new(c), storage)
    }

    fn start(&mut self) -> HostResult<Outcome> {
        match self {
            Path::Native(c, env) => c.start(env).map_err(HostError::from),
            Path::Component(c, _) => c.start(),
        }
    }

    fn event(&mut self, s: u32, e: Entry) -> HostResult<Outcome> {
        match self {
            Path::Native(c, env) => c.event(env, s, 0, e).map_err(HostError::from),
            Path::Component(c, _) => c.event(s, 0, e),
        }
    }

    fn complete(&mut self, n: u64) -> HostResult<Outcome> {
        match self {
            Path::Native(c, env) => c.checkpoint_complete(env, n).map_err(HostError::from),
            Path::Component(c, _) => c.checkpoint_complete(n),
        }
    }

    fn state(&mut self) -> Lifecycle {
        match self {
            Path::Native(c, _) => c.state(),
            Path::Component(c, _) => c.state(),
        }
    }

    /// The table's records, key by key.
    fn table(&self) -> BTreeMap<String, Vec<u8>> {
        match self {
            Path::Native(_, env) => env.storage.map.clone(),
            Path::Component(_, storage) => storage.lock().map.clone(),
        }
    }
}

/// Issue 11: one 130 MiB committable (past wasmtime's default host-call
/// copy limit of 128 MiB, which used to trap at commit on every retry)
/// commits with the default limits, and both paths write the same table.
#[test]
fn committable_of_130_mib_commits_identically_on_both_paths() {
    let runtime = Runtime::embedded().unwrap();
    let big = payload(130 * MIB);
    let mut tables = Vec::new();
    for mut path in [Path::native(1, None), Path::component(&runtime, 1, None)] {
        path.start().unwrap();
        path.event(0, entry(1, vec![big.clone(), b"small".to_vec()]))
            .unwrap();
        let o = path.complete(1).unwrap();
        assert_eq!(o.committed, vec![1]);
        assert_eq!(o.committed_up_to, Some(1));
        tables.push(path.table());
    }
    let snapshot = &tables[0]["snapshot/00000000000000000001"];
    assert!(snapshot.len() > 130 * MIB);
    assert!(
        tables[0] == tables[1],
        "the two paths wrote different tables"
    );
}

fn small_limits() -> Limits {
    Limits {
        max_committable_bytes: 1000,
        max_event_bytes: 1500,
        max_snapshot_bytes: 2000,
    }
}

/// Above a configured limit both paths refuse the event when it arrives,
/// with the same fatal `invalid-event`; the limits reach the component
/// through `set-limits` or through the runtime's options.
#[test]
fn configured_limits_give_the_same_invalid_event_on_both_paths() {
    let limits = small_limits();
    let default_runtime = Runtime::embedded().unwrap();
    let limited_runtime = Runtime::new(EMBEDDED_WASM, RuntimeOptions::from_limits(limits)).unwrap();
    let paths = || {
        [
            Path::native(2, Some(limits)),
            Path::component(&default_runtime, 2, Some(limits)),
            Path::component(&limited_runtime, 2, None),
        ]
    };
    type Case = (
        &'static str,
        fn(&mut Path) -> HostResult<Outcome>,
        &'static str,
    );
    let cases: [Case; 3] = [
        (
            "committable",
            |p| p.event(0, entry(1, vec![payload(1001)])),
            "event of subtask 0 for checkpoint 1: committable 0 holds 1001 bytes, more than max-committable-bytes 1000",
        ),
        (
            "event",
            |p| p.event(1, entry(END, vec![payload(1000), payload(500)])),
            "event of subtask 1 for checkpoint END: the entry holds 1532 bytes (2 committables), more than max-event-bytes 1500",
        ),
        (
            "snapshot",
            |p| {
                // 997 + 998 bytes of entries, plus the commit user "job"
                // named twice in the snapshot (0.2.4): 2001.
                p.event(0, entry(3, vec![payload(981)]))?;
                p.event(1, entry(3, vec![payload(982)]))
            },
            "entry of subtask 1 for checkpoint 3 (998 bytes) would make the snapshot of checkpoint 3 hold 2001 bytes, more than max-snapshot-bytes 2000",
        ),
    ];
    for (name, call, message) in cases {
        for mut path in paths() {
            path.start().unwrap();
            let err = call(&mut path).unwrap_err();
            assert_eq!(
                err.kind,
                HostErrorKind::Core(ErrorKind::InvalidEvent),
                "{name}: {err}"
            );
            assert_eq!(err.message, message, "{name}");
            assert_eq!(path.state(), Lifecycle::Failed, "{name}");
            assert!(path.table().is_empty(), "{name}: nothing was committed");
        }
    }
    // Within the limits the same calls commit (2000 bytes with the user's 6).
    for mut path in paths() {
        path.start().unwrap();
        path.event(0, entry(1, vec![payload(981)])).unwrap();
        path.event(1, entry(1, vec![payload(981)])).unwrap();
        assert_eq!(path.complete(1).unwrap().committed, vec![1]);
    }
}

#[test]
fn set_limits_after_start_is_illegal_state_in_the_component() {
    let runtime = Runtime::embedded().unwrap();
    let mut path = Path::component(&runtime, 1, None);
    path.start().unwrap();
    let Path::Component(c, _) = &mut path else {
        unreachable!()
    };
    let err = c.set_limits(&small_limits()).unwrap_err();
    assert_eq!(
        err.kind,
        HostErrorKind::Core(ErrorKind::IllegalState),
        "{err}"
    );
    let mut bad = small_limits();
    bad.max_event_bytes = 0;
    let mut fresh = Path::component(&runtime, 1, None);
    let Path::Component(c, _) = &mut fresh else {
        unreachable!()
    };
    let err = c.set_limits(&bad).unwrap_err();
    assert_eq!(
        err.kind,
        HostErrorKind::Core(ErrorKind::InvalidConfig),
        "{err}"
    );
}

/// The wasmtime limits derive from the sizes, and `validate` refuses
/// wasmtime limits too small for them.
#[test]
fn runtime_limits_derive_from_the_sizes() {
    let defaults = RuntimeOptions::default();
    assert_eq!(defaults.limits, Limits::default());
    assert_eq!(defaults.memory_limit(), 4 << 30, "the wasm32 maximum");
    assert!(defaults.max_hostcall_bytes as u64 >= 2 * Limits::default().max_snapshot_bytes);
    defaults.validate().unwrap();

    let small = RuntimeOptions::from_limits(small_limits());
    assert_eq!(small.memory_limit(), 3 * 2000 + (256 << 20));
    assert_eq!(small.max_hostcall_bytes, 2 * 2000 + (64 << 20));
    assert_eq!(small.call_deadline, Some(Duration::from_millis(60_000)));
    small.validate().unwrap();

    let too_small = RuntimeOptions {
        max_hostcall_bytes: *MAX_HOSTCALL_RANGE.start() as usize,
        ..RuntimeOptions::default()
    };
    let e = too_small.validate().unwrap_err();
    assert!(e.contains("max-snapshot-bytes"), "{e}");
}

/// A storage whose `put-if-absent` advances the engine's epoch past any
/// call deadline: when the guest resumes it has run out of time, as a guest
/// stuck in a loop has once the ticker passed its deadline. Deterministic:
/// nothing depends on how fast this machine moves bytes.
struct ExpiringStorage {
    inner: Shared<MemStorage>,
    engine: wasmtime::Engine,
}

impl Storage for ExpiringStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        // The 200 ms deadline is two ticks; a few more than that.
        for _ in 0..8 {
            self.engine.increment_epoch();
        }
        self.inner.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.inner.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.inner.list(prefix)
    }
}

/// A call past its deadline traps with a one-line message (and the
/// instance is discarded, like after any trap).
#[test]
fn call_past_its_deadline_traps_with_one_line() {
    let options = RuntimeOptions {
        call_deadline: Some(Duration::from_millis(200)),
        fuel_per_call: None,
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::new(EMBEDDED_WASM, options).unwrap();
    let storage = ExpiringStorage {
        inner: Shared::new(MemStorage::default()),
        engine: runtime.engine().clone(),
    };
    let env = HostEnv::new(storage, ManualClock::new(1000, 1));
    let mut c = ComponentCoordinator::new(&runtime, env, &Config::new(1, "job"), None).unwrap();
    c.start().unwrap();
    c.event(0, 0, entry(1, vec![payload(1000)])).unwrap();
    // The commit's create runs out the deadline.
    let err = c.checkpoint_complete(1).unwrap_err();
    assert_eq!(err.kind, HostErrorKind::Trap, "{err}");
    assert!(
        err.message
            .ends_with("the call exceeded its deadline of 200 ms"),
        "{err}"
    );
    assert!(!err.message.contains('\n'), "{err}");
    assert_eq!(c.state(), Lifecycle::Failed);
}
