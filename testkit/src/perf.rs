//! The workloads of `make bench` (issue 10), shared by the criterion
//! benchmark (`benches/perf.rs`) and the table it is summarised in
//! (`examples/bench_table.rs`, which also runs them under callgrind).
//!
//! Every workload exists for both paths, the native core and the component,
//! behind one [`Subject`], so that a ratio compares the same calls with the
//! same inputs. Storage is in memory ([`BenchStorage`]); the clock is a
//! manual one. Nothing here asserts anything about time.

use std::collections::{BTreeMap, VecDeque};

use crate::driver::Engine;
use sink_coordinator::{
    Config, Coordinator, Entry, Lifecycle, OwnedEnv, RestorePoint, StepClock, Storage,
    StorageError, WriterEvent, END,
};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::component::ComponentCoordinator;
use sink_coordinator_host::engine::Runtime;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::storage::LocalDirStorage;

/// The realistic job's parallelism (issue 10).
pub const JOB_WRITERS: u32 = 256;
/// The realistic job's length in checkpoints.
pub const JOB_CHECKPOINTS: u64 = 1_000;
/// Committables per writer per checkpoint.
pub const JOB_COMMITTABLES: usize = 4;
/// Bytes per committable.
pub const JOB_COMMITTABLE_BYTES: usize = 200;
/// The parallelism of the state round trip, every writer ended.
pub const ROUND_TRIP_WRITERS: u32 = 100_000;
/// `RuntimeOptions::pool_keep_resident_bytes` of the round trip's variant
/// that keeps memory resident: more than the ~30 MiB its restore fills.
pub const ROUND_TRIP_KEEP_RESIDENT: usize = 64 << 20;

/// Both engines on `runtime`, native first (the benchmarks compare them
/// side by side).
pub fn both(runtime: &Runtime) -> [Engine; 2] {
    [Engine::NATIVE, Engine::Component(runtime.clone())]
}

/// In-memory storage that keeps only the latest snapshot records, so that
/// a benchmark of millions of checkpoints does not hold gigabytes: every
/// value is still copied in, as a real store would, and the coordinator
/// reads snapshots back only when it first loads the table (or on a
/// conflict, which a benchmark never has). It counts the calls it serves.
///
/// [`BenchStorage::on_dir`] keeps the table in a local directory instead
/// (the Rust host's `LocalDirStorage`, a tmpfs one in the benchmarks), the
/// storage the JVM benchmarks' coordinators have: their Rust-wasmtime
/// figure on the same kind of table.
#[derive(Debug, Default)]
pub struct BenchStorage {
    map: BTreeMap<String, Vec<u8>>,
    snapshots: VecDeque<String>,
    /// Storage calls served so far.
    pub calls: u64,
    dir: Option<LocalDirStorage>,
}

impl BenchStorage {
    /// A table in the directory `dir` (created if missing): every call goes
    /// to its files; the old snapshots are deleted by [`Self::prune`], which
    /// a benchmark calls outside its clock (as the JVM benchmarks prune
    /// theirs between invocations).
    pub fn on_dir(dir: &std::path::Path) -> std::io::Result<Self> {
        Ok(BenchStorage {
            dir: Some(LocalDirStorage::open(dir)?),
            ..BenchStorage::default()
        })
    }

    /// Deletes the snapshot files beyond the latest four (`KEPT_SNAPSHOTS`) of a
    /// directory table (in memory they go at once).
    pub fn prune(&mut self) {
        while self.snapshots.len() > KEPT_SNAPSHOTS {
            if let (Some(old), Some(dir)) = (self.snapshots.pop_front(), self.dir.as_mut()) {
                dir.delete(&old)
                    .expect("a benchmark table's snapshot is deleted");
            }
        }
    }

    fn kept(&mut self, key: &str) {
        if key.starts_with(sink_coordinator::table::SNAPSHOT_PREFIX) {
            self.snapshots.push_back(key.to_owned());
            if self.dir.is_none() {
                self.prune_memory();
            }
        }
    }

    fn prune_memory(&mut self) {
        if self.snapshots.len() > KEPT_SNAPSHOTS {
            if let Some(old) = self.snapshots.pop_front() {
                self.map.remove(&old);
            }
        }
    }
}

/// Snapshot records [`BenchStorage`] keeps.
const KEPT_SNAPSHOTS: usize = 4;

impl Storage for BenchStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.calls += 1;
        match self.dir.as_mut() {
            Some(dir) => dir.get(key),
            None => Ok(self.map.get(key).cloned()),
        }
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.calls += 1;
        let created = match self.dir.as_mut() {
            Some(dir) => dir.put_if_absent(key, value)?,
            None if self.map.contains_key(key) => false,
            None => {
                self.map.insert(key.to_owned(), value.to_vec());
                true
            }
        };
        if created {
            self.kept(key);
        }
        Ok(created)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.calls += 1;
        match self.dir.as_mut() {
            Some(dir) => dir.put(key, value),
            None => {
                self.map.insert(key.to_owned(), value.to_vec());
                Ok(())
            }
        }
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.calls += 1;
        match self.dir.as_mut() {
            Some(dir) => dir.delete(key),
            None => {
                self.map.remove(key);
                Ok(())
            }
        }
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.calls += 1;
        match self.dir.as_mut() {
            Some(dir) => dir.list(prefix),
            None => Ok(self
                .map
                .keys()
                .filter(|k| k.starts_with(prefix))
                .cloned()
                .collect()),
        }
    }
}

/// The native path's environment: the shared storage and a clock.
type NativeEnv = OwnedEnv<Shared<BenchStorage>, StepClock>;

enum Inner {
    Native(Box<Coordinator>, NativeEnv),
    Component(Box<ComponentCoordinator>),
}

/// One coordinator on either path, over a [`BenchStorage`] the caller can
/// inspect. Every call panics on an error: a benchmark's input is valid.
pub struct Subject {
    inner: Inner,
    storage: Shared<BenchStorage>,
}

impl Subject {
    /// A coordinator over a new table, not started.
    pub fn new(engine: &Engine, config: &Config) -> Self {
        Self::over(engine, config, None, Shared::new(BenchStorage::default()))
    }

    /// A coordinator over `storage`, restored from `restore`, not started.
    pub fn over(
        engine: &Engine,
        config: &Config,
        restore: Option<&RestorePoint>,
        storage: Shared<BenchStorage>,
    ) -> Self {
        // The benchmarks call the core and the component directly (not
        // through the driver's boxed `CoordinatorApi`), so that a ratio
        // compares the two implementations and nothing else.
        let inner = match engine {
            Engine::Native(limits) => {
                let env = NativeEnv {
                    storage: storage.clone(),
                    clock: StepClock { next: 0, step: 1 },
                };
                let mut c = Coordinator::new(config.clone(), restore.cloned());
                c.set_limits(*limits).expect("valid limits while created");
                Inner::Native(Box::new(c), env)
            }
            Engine::Component(runtime) => {
                let env = HostEnv::new(storage.clone(), ManualClock::new(0, 1));
                let c = ComponentCoordinator::new(runtime, env, config, restore)
                    .expect("the component instantiates");
                Inner::Component(Box::new(c))
            }
        };
        Subject { inner, storage }
    }

    /// A started coordinator of the realistic job's shape with `p` writers.
    pub fn job(engine: &Engine, p: u32) -> Self {
        Self::job_over(engine, p, BenchStorage::default())
    }

    /// [`Self::job`] over `storage` (a directory table: [`BenchStorage::on_dir`]).
    pub fn job_over(engine: &Engine, p: u32, storage: BenchStorage) -> Self {
        let mut s = Subject::over(engine, &Config::new(p, "bench"), None, Shared::new(storage));
        s.start();
        s
    }

    /// The table's storage.
    pub fn storage(&self) -> &Shared<BenchStorage> {
        &self.storage
    }

    /// `start`.
    pub fn start(&mut self) {
        match &mut self.inner {
            Inner::Native(c, env) => drop(c.start(env).expect("start")),
            Inner::Component(c) => drop(c.start().expect("start")),
        }
    }

    /// `event`; returns how many snapshots it committed.
    pub fn event(&mut self, s: u32, entry: Entry) -> usize {
        match &mut self.inner {
            Inner::Native(c, env) => c.event(env, s, 0, entry).expect("event").committed.len(),
            Inner::Component(c) => c.event(s, 0, entry).expect("event").committed.len(),
        }
    }

    /// `events` (one crossing for the whole batch on the component; the
    /// core's batch loop natively); returns how many snapshots it committed.
    pub fn events(&mut self, events: Vec<WriterEvent>) -> usize {
        match &mut self.inner {
            Inner::Native(c, env) => sink_coordinator::batch::events(c, env, events)
                .expect("events")
                .committed
                .len(),
            Inner::Component(c) => c.events(events).expect("events").committed.len(),
        }
    }

    /// `checkpoint`: the state bytes.
    pub fn checkpoint(&mut self, n: u64) -> Vec<u8> {
        match &mut self.inner {
            Inner::Native(c, env) => c.checkpoint(env, n).expect("checkpoint"),
            Inner::Component(c) => c.checkpoint(n).expect("checkpoint"),
        }
    }

    /// `checkpoint-complete`; returns how many snapshots it committed.
    pub fn complete(&mut self, n: u64) -> usize {
        match &mut self.inner {
            Inner::Native(c, env) => c
                .checkpoint_complete(env, n)
                .expect("complete")
                .committed
                .len(),
            Inner::Component(c) => c.checkpoint_complete(n).expect("complete").committed.len(),
        }
    }

    /// `state()`: the cheapest call there is.
    pub fn state(&mut self) -> Lifecycle {
        match &mut self.inner {
            Inner::Native(c, _) => c.state(),
            Inner::Component(c) => c.state(),
        }
    }
}

/// Writer `s`'s entry for checkpoint `c` in the realistic job: four
/// committables of 200 bytes (distinct per writer and checkpoint) and a
/// watermark.
pub fn job_entry(s: u32, c: u64) -> Entry {
    shaped_entry(s, c, JOB_COMMITTABLES, JOB_COMMITTABLE_BYTES)
}

/// Like [`job_entry`] with `n` committables of `bytes` bytes each (the
/// same bytes in fewer, larger committables isolate the cost of passing
/// one committable: its own guest allocation and list).
pub fn shaped_entry(s: u32, c: u64, n: usize, bytes: usize) -> Entry {
    let committables = (0..n)
        .map(|i| {
            let mut b = vec![b'x'; bytes];
            let tag = format!("{s}/{c}/{i}");
            b[..tag.len()].copy_from_slice(tag.as_bytes());
            b
        })
        .collect();
    Entry {
        checkpoint: c,
        committables,
        watermark: Some(c as i64 * 1_000),
        savepoint: false,
    }
}

/// Every writer's entry for checkpoint `c`, in subtask order: what the
/// host has in hand when the events arrive (built outside the measurement).
pub fn job_entries(p: u32, c: u64) -> Vec<Entry> {
    (0..p).map(|s| job_entry(s, c)).collect()
}

/// Every writer's event for checkpoint `entries[0].checkpoint`, subtask
/// `i` sending `entries[i]` (no commit may happen: the checkpoint is not
/// complete yet). Never inlined, so that callgrind can collect exactly this
/// function (`--toggle-collect=*perf_job_events*`).
#[inline(never)]
pub fn perf_job_events(subject: &mut Subject, entries: Vec<Entry>) {
    for (s, entry) in (0u32..).zip(entries) {
        let committed = subject.event(s, entry);
        debug_assert_eq!(committed, 0);
    }
}

/// The same events as [`perf_job_events`] as one `events` batch (one
/// crossing on the component): how a host that receives a checkpoint's
/// events in a burst sends them. Never inlined (callgrind collects
/// `*perf_job_batch*`); building the batch's `WriterEvent`s is part of it.
#[inline(never)]
pub fn perf_job_batch(subject: &mut Subject, entries: Vec<Entry>) {
    let committed = subject.events(writer_events(entries));
    debug_assert_eq!(committed, 0);
}

/// A checkpoint's entries, one per subtask from 0 on (first attempt), as
/// the events of one `events` batch.
pub fn writer_events(entries: Vec<Entry>) -> Vec<WriterEvent> {
    (0u32..)
        .zip(entries)
        .map(|(subtask, entry)| WriterEvent {
            subtask,
            attempt: 0,
            entry,
        })
        .collect()
}

/// How a cycle sends its events to the coordinator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// One `event` call per event.
    PerEvent,
    /// The checkpoint's events as one `events` batch.
    Batch,
}

/// One checkpoint cycle of the realistic job: every writer reports `c`
/// (`entries`, from [`job_entries`]; one `event` call each), the
/// coordinator takes its state, `c` completes and is committed as one
/// snapshot.
pub fn job_cycle(subject: &mut Subject, entries: Vec<Entry>, c: u64) {
    job_cycle_with(subject, entries, c, Delivery::PerEvent)
}

/// [`job_cycle`], the events delivered as `delivery` says.
pub fn job_cycle_with(subject: &mut Subject, entries: Vec<Entry>, c: u64, delivery: Delivery) {
    match delivery {
        Delivery::PerEvent => perf_job_events(subject, entries),
        Delivery::Batch => perf_job_batch(subject, entries),
    }
    std::hint::black_box(subject.checkpoint(c));
    let committed = subject.complete(c);
    assert_eq!(committed, 1, "checkpoint {c}: one snapshot per cycle");
}

/// A coordinator with [`ROUND_TRIP_WRITERS`] writers that all ended (each
/// END entry one 8-byte committable and a watermark), nothing committed:
/// its state bytes hold every END entry.
pub fn all_ended(engine: &Engine, p: u32) -> Subject {
    let mut subject = Subject::job(engine, p);
    for s in 0..p {
        let entry = Entry {
            checkpoint: END,
            committables: vec![format!("end{s:05}").into_bytes()].into(),
            watermark: Some(i64::from(s)),
            savepoint: false,
        };
        assert_eq!(
            subject.event(s, entry),
            0,
            "no final commit before a completion"
        );
    }
    subject
}

/// The state round trip: the state bytes of checkpoint `n`, then a new
/// coordinator restored from them and started (it decodes and installs the
/// state, and waits in `restoring` for the writers). Returns the state's size.
pub fn state_round_trip(subject: &mut Subject, engine: &Engine, p: u32) -> usize {
    let state = subject.checkpoint(1);
    let len = state.len();
    let restore = RestorePoint {
        checkpoint: 1,
        state,
        finished_subtasks: Vec::new(),
    };
    let mut restored = Subject::over(
        engine,
        &Config::new(p, "bench"),
        Some(&restore),
        subject.storage().clone(),
    );
    restored.start();
    assert_eq!(restored.state(), Lifecycle::Restoring);
    len
}

/// Storage calls a fresh instance makes up to and including its first
/// commit, on a table an earlier instance of the same commit user already
/// committed three checkpoints to; and those of a later commit (the steady
/// state). Native: the calls do not depend on the engine.
pub fn first_commit_storage_calls() -> (u64, u64) {
    let p = 4;
    let mut earlier = Subject::job(&Engine::NATIVE, p);
    for c in 1..=3 {
        job_cycle(&mut earlier, job_entries(p, c), c);
    }
    let storage = earlier.storage().clone();
    let mut fresh = Subject::over(
        &Engine::NATIVE,
        &Config::new(p, "bench"),
        None,
        storage.clone(),
    );
    let before = storage.lock().calls;
    fresh.start();
    job_cycle(&mut fresh, job_entries(p, 4), 4);
    let first = storage.lock().calls - before;
    let before = storage.lock().calls;
    job_cycle(&mut fresh, job_entries(p, 5), 5);
    let steady = storage.lock().calls - before;
    (first, steady)
}
