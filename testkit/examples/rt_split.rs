//! The P = 100,000 state round trip of `benches/perf.rs` split into its
//! parts: the state taken (`checkpoint`), the new instance given the restore
//! point, its `start` (decode and install), and dropping it; the minimum of
//! 8 runs each, native and through the embedded component (BENCHMARKS.md,
//! issue 27 item 3). Wall-clock figures to read, nothing asserted:
//!
//! `cargo run --release -p sink-coordinator-testkit --example rt_split`
use sink_coordinator::{Config, RestorePoint};
use sink_coordinator_host::engine::Runtime;
use sink_coordinator_testkit::driver::Engine;
use sink_coordinator_testkit::perf::{all_ended, Subject, ROUND_TRIP_WRITERS};
use std::time::{Duration, Instant};

fn main() {
    let p = ROUND_TRIP_WRITERS;
    let rt = Runtime::embedded().unwrap();
    for engine in [Engine::NATIVE, Engine::Component(rt)] {
        let mut s = all_ended(&engine, p);
        let mut t = [Duration::MAX; 4];
        let mut len = 0;
        for _ in 0..8 {
            let a = Instant::now();
            let state = s.checkpoint(1);
            let b = Instant::now();
            len = state.len();
            let restore = RestorePoint {
                checkpoint: 1,
                state,
                finished_subtasks: Vec::new(),
            };
            let mut r = Subject::over(
                &engine,
                &Config::new(p, "bench"),
                Some(&restore),
                s.storage().clone(),
            );
            let c = Instant::now();
            r.start();
            let d = Instant::now();
            drop(r);
            drop(restore);
            let e = Instant::now();
            for (i, x) in [b - a, c - b, d - c, e - d].into_iter().enumerate() {
                t[i] = t[i].min(x);
            }
        }
        println!("{}: state {len} B; checkpoint {:?}, new instance {:?}, start (restore) {:?}, drop {:?}", engine.name(), t[0], t[1], t[2], t[3]);
    }
}
