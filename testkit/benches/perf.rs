//! Issue 10's measurements, native core and component side by side in one
//! run (criterion; the workloads are `sink_coordinator_testkit::perf`).
//! `make bench` runs this, then `examples/bench_table.rs` prints the table
//! with the goals from criterion's estimates and adds callgrind's
//! instruction counts. Timings are reported, never asserted.
//!
//! Bench ids (criterion writes `target/criterion/<group>/<path>/`):
//! - `job_p256/{native,component,component_no_deadline}`: one checkpoint
//!   cycle of the realistic job (256 writers × 4 committables × 200 B, the
//!   checkpoint's events as one `events` batch, checkpoint, completion);
//!   `component_no_deadline` without the call deadline's epoch checks;
//! - `job_p256_per_event/{native,component}`: the same cycle with one
//!   `event` call per event;
//! - `events_batch_p256/{native,component}`: only the cycle's `events`
//!   batch (checkpoint and completion outside the clock): the crossing per
//!   event in a batch is (component − native) / 256;
//! - `events_shape_p256/{native,component}_{4x200,1x800}`: the same batch
//!   with the same bytes in 4 committables or in 1 (what one committable's
//!   own list and guest allocation cost);
//! - `job_p256_tmpfs/component`: the realistic job through the component
//!   over a directory table on tmpfs (the JVM benchmarks' storage);
//! - `empty_call/{native,component}`: `state()`;
//! - `instantiate/component`: a Store, the instance and the constructor;
//! - `state_round_trip_p100000/{native,component}`: state bytes of 100,000
//!   ended writers, then a coordinator restored from them and started;
//!   `.../component_keep_resident` with the pool keeping
//!   [`ROUND_TRIP_KEEP_RESIDENT`] of each memory resident between instances.

use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use sink_coordinator::Config;
use sink_coordinator_host::engine::{Runtime, RuntimeOptions};
use sink_coordinator_testkit::driver::Engine;
use sink_coordinator_testkit::perf::{
    all_ended, both, job_cycle_with, job_entries, perf_job_batch, shaped_entry, state_round_trip,
    BenchStorage, Delivery, Subject, JOB_WRITERS, ROUND_TRIP_KEEP_RESIDENT, ROUND_TRIP_WRITERS,
};

fn runtime() -> Runtime {
    Runtime::embedded().expect("the embedded component loads")
}

/// The embedded component on a runtime with `options` (a variant row).
fn component_with(options: RuntimeOptions) -> Engine {
    Engine::Component(
        Runtime::new(sink_coordinator_host::artifact::EMBEDDED_WASM, options)
            .expect("the embedded component loads"),
    )
}

/// Benchmarks `id`: a job of `engine` whose criterion iterations are its
/// checkpoints, one each (ids keep increasing across iterations); `cycle`
/// runs checkpoint `checkpoint` and returns the part of it that is timed.
fn bench_checkpoints(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: String,
    engine: &Engine,
    cycle: impl FnMut(&mut Subject, u64) -> Duration,
) {
    bench_job(group, id, Subject::job(engine, JOB_WRITERS), cycle);
}

/// [`bench_checkpoints`] on a given job; a directory table's old
/// snapshots are pruned outside the clock.
fn bench_job(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: String,
    mut subject: Subject,
    mut cycle: impl FnMut(&mut Subject, u64) -> Duration,
) {
    let mut checkpoint = 0u64;
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                checkpoint += 1;
                spent += cycle(&mut subject, checkpoint);
                subject.storage().lock().prune();
            }
            spent
        })
    });
}

/// The realistic job through the component over a directory table on
/// tmpfs (`/dev/shm` when there is one): the storage the JVM benchmarks'
/// coordinators have (hosts/flink's `BenchLog`), so that their cycles are
/// also compared with Rust-wasmtime's on the same kind of table.
fn job_tmpfs(c: &mut Criterion) {
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("sinkcoord-bench-{}", std::process::id()));
    let storage = BenchStorage::on_dir(&dir).expect("a benchmark table directory");
    let engine = Engine::Component(runtime());
    let mut group = c.benchmark_group(format!("job_p{JOB_WRITERS}_tmpfs"));
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    let subject = Subject::job_over(&engine, JOB_WRITERS, storage);
    bench_job(
        &mut group,
        "component".into(),
        subject,
        |subject, checkpoint| {
            let entries = job_entries(JOB_WRITERS, checkpoint);
            let start = Instant::now();
            job_cycle_with(subject, entries, checkpoint, Delivery::Batch);
            start.elapsed()
        },
    );
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

/// One criterion iteration is one checkpoint cycle; the job keeps running
/// across iterations (checkpoint ids keep increasing; the storage keeps
/// only the latest snapshots).
fn job(c: &mut Criterion) {
    let rt = runtime();
    // The default options with no call deadline: no epoch checks in the
    // machine code (what they cost, BENCHMARKS.md).
    let no_deadline = component_with(RuntimeOptions {
        call_deadline: None,
        ..RuntimeOptions::default()
    });
    for (group, delivery) in [
        (format!("job_p{JOB_WRITERS}"), Delivery::Batch),
        (format!("job_p{JOB_WRITERS}_per_event"), Delivery::PerEvent),
    ] {
        let mut group = c.benchmark_group(group);
        group
            .sample_size(30)
            .warm_up_time(Duration::from_secs(2))
            .measurement_time(Duration::from_secs(8));
        let mut engines: Vec<(String, Engine)> = both(&rt)
            .into_iter()
            .map(|e| (e.name().to_string(), e))
            .collect();
        if delivery == Delivery::Batch {
            engines.push(("component_no_deadline".into(), no_deadline.clone()));
        }
        for (name, engine) in engines {
            bench_checkpoints(&mut group, name, &engine, |subject, checkpoint| {
                // The host has the entries in hand: not measured.
                let entries = job_entries(JOB_WRITERS, checkpoint);
                let start = Instant::now();
                job_cycle_with(subject, entries, checkpoint, delivery);
                start.elapsed()
            });
        }
        group.finish();
    }
}

/// Only a checkpoint's `events` batch is timed; its checkpoint and
/// completion run outside the clock (the job goes on as in [`job`]).
fn events_batch(c: &mut Criterion) {
    let rt = runtime();
    let shapes: [(&str, String, usize, usize); 3] = [
        ("", format!("events_batch_p{JOB_WRITERS}"), 4, 200),
        ("_4x200", format!("events_shape_p{JOB_WRITERS}"), 4, 200),
        ("_1x800", format!("events_shape_p{JOB_WRITERS}"), 1, 800),
    ];
    for (suffix, group_name, n, bytes) in shapes {
        let mut group = c.benchmark_group(group_name);
        group
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(4));
        for engine in both(&rt) {
            let id = format!("{}{suffix}", engine.name());
            bench_checkpoints(&mut group, id, &engine, |subject, checkpoint| {
                let entries = (0..JOB_WRITERS)
                    .map(|s| shaped_entry(s, checkpoint, n, bytes))
                    .collect();
                let start = Instant::now();
                perf_job_batch(subject, entries);
                let spent = start.elapsed();
                std::hint::black_box(subject.checkpoint(checkpoint));
                assert_eq!(subject.complete(checkpoint), 1);
                spent
            });
        }
        group.finish();
    }
}

fn empty_call(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("empty_call");
    group.measurement_time(Duration::from_secs(3));
    for engine in both(&rt) {
        let mut subject = Subject::job(&engine, JOB_WRITERS);
        group.bench_function(engine.name(), |b| b.iter(|| subject.state()));
    }
    group.finish();
}

fn instantiate(c: &mut Criterion) {
    let engine = Engine::Component(runtime());
    let config = Config::new(JOB_WRITERS, "bench");
    let mut group = c.benchmark_group("instantiate");
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("component", |b| b.iter(|| Subject::new(&engine, &config)));
    group.finish();
}

fn round_trip(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group(format!("state_round_trip_p{ROUND_TRIP_WRITERS}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    // The default options with the restored instance's whole memory kept
    // resident between instances (what that saves, BENCHMARKS.md).
    let keep = component_with(RuntimeOptions {
        pool_keep_resident_bytes: ROUND_TRIP_KEEP_RESIDENT,
        ..RuntimeOptions::default()
    });
    let mut engines: Vec<(String, Engine)> = both(&rt)
        .into_iter()
        .map(|e| (e.name().to_string(), e))
        .collect();
    engines.push(("component_keep_resident".into(), keep));
    for (name, engine) in engines {
        let mut subject = all_ended(&engine, ROUND_TRIP_WRITERS);
        group.bench_function(name, |b| {
            b.iter(|| state_round_trip(&mut subject, &engine, ROUND_TRIP_WRITERS))
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    job,
    job_tmpfs,
    events_batch,
    empty_call,
    instantiate,
    round_trip
);
criterion_main!(benches);
