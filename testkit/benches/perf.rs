//! Issue 10's measurements, native core and component side by side in one
//! run (criterion; the workloads are `sink_coordinator_testkit::perf`).
//! `make bench` runs this, then `examples/bench_table.rs` prints the table
//! with the goals from criterion's estimates and adds callgrind's
//! instruction counts. Timings are reported, never asserted.
//!
//! Bench ids (criterion writes `target/criterion/<group>/<path>/`):
//! - `job_p256/{native,component}`: one checkpoint cycle of the realistic
//!   job (256 writers × 4 committables × 200 B, checkpoint, completion);
//! - `empty_call/{native,component}`: `state()`;
//! - `instantiate/component`: a Store, the instance and the constructor;
//! - `state_round_trip_p100000/{native,component}`: state bytes of 100,000
//!   ended writers, then a coordinator restored from them and started.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use sink_coordinator::Config;
use sink_coordinator_host::engine::Runtime;
use sink_coordinator_testkit::driver::Engine;
use sink_coordinator_testkit::perf::{
    all_ended, both, job_cycle, job_entries, state_round_trip, Subject, JOB_WRITERS,
    ROUND_TRIP_WRITERS,
};

fn runtime() -> Runtime {
    Runtime::embedded().expect("the embedded component loads")
}

/// One criterion iteration is one checkpoint cycle; the job keeps running
/// across iterations (checkpoint ids keep increasing; the storage keeps
/// only the latest snapshots).
fn job(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group(format!("job_p{JOB_WRITERS}"));
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    for engine in both(&rt) {
        let mut subject = Subject::job(&engine, JOB_WRITERS);
        let mut checkpoint = 0u64;
        group.bench_function(engine.name(), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    checkpoint += 1;
                    // The host has the entries in hand: not measured.
                    let entries = job_entries(JOB_WRITERS, checkpoint);
                    let start = Instant::now();
                    job_cycle(&mut subject, entries, checkpoint);
                    spent += start.elapsed();
                }
                spent
            })
        });
    }
    group.finish();
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
    for engine in both(&rt) {
        let mut subject = all_ended(&engine, ROUND_TRIP_WRITERS);
        group.bench_function(engine.name(), |b| {
            b.iter(|| state_round_trip(&mut subject, &engine, ROUND_TRIP_WRITERS))
        });
    }
    group.finish();
}

criterion_group!(benches, job, empty_call, instantiate, round_trip);
criterion_main!(benches);
