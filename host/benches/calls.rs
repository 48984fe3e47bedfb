//! Per-call cost of the coordinator, native and through the component.
//!
//! A bench binary (`harness = false`): `cargo bench -p sink-coordinator-host
//! --bench calls` or `make bench`. It prints one line per measurement; it
//! asserts nothing about time (timings belong to benchmarks, not tests).
//!
//! Measured: an ordinary event (the O(log P) path), a checkpoint commit of P
//! entries (one snapshot), and the state taken at a checkpoint, for P in
//! {16, 1024, 16384} writers.

use std::hint::black_box;
use std::time::{Duration, Instant};

use sink_coordinator::{Config, Coordinator, Entry, MemEnv, MemStorage};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::component::ComponentCoordinator;
use sink_coordinator_host::engine::Runtime;
use sink_coordinator_host::env::HostEnv;

fn entry(c: u64, s: u32) -> Entry {
    Entry {
        checkpoint: c,
        committables: vec![format!("s{s}-c{c}").into_bytes()],
        watermark: Some(c as i64),
        savepoint: false,
    }
}

/// One coordinator behind a uniform interface for the two paths.
enum Subject {
    Native(Box<Coordinator>, MemEnv),
    Component(Box<ComponentCoordinator>),
}

impl Subject {
    fn event(&mut self, s: u32, e: Entry) {
        match self {
            Subject::Native(c, env) => drop(c.event(env, s, 0, e).expect("event")),
            Subject::Component(c) => drop(c.event(s, 0, e).expect("event")),
        }
    }
    fn complete(&mut self, n: u64) -> usize {
        match self {
            Subject::Native(c, env) => c
                .checkpoint_complete(env, n)
                .expect("complete")
                .committed
                .len(),
            Subject::Component(c) => c.checkpoint_complete(n).expect("complete").committed.len(),
        }
    }
    fn checkpoint(&mut self, n: u64) -> usize {
        match self {
            Subject::Native(c, env) => c.checkpoint(env, n).expect("checkpoint").len(),
            Subject::Component(c) => c.checkpoint(n).expect("checkpoint").len(),
        }
    }
}

fn subject(runtime: Option<&Runtime>, p: u32) -> Subject {
    let config = Config::new(p, "bench");
    match runtime {
        None => {
            let mut env = MemEnv::default();
            let mut c = Coordinator::new(config, None);
            c.start(&mut env).expect("start");
            Subject::Native(Box::new(c), env)
        }
        Some(rt) => {
            let env = HostEnv::new(MemStorage::default(), ManualClock::new(0, 0));
            let mut c = ComponentCoordinator::new(rt, env, &config, None).expect("instantiate");
            c.start().expect("start");
            Subject::Component(Box::new(c))
        }
    }
}

fn per(d: Duration, n: u64) -> String {
    let ns = d.as_nanos() / u128::from(n.max(1));
    if ns >= 10_000 {
        format!("{:>9.1} µs", ns as f64 / 1000.0)
    } else {
        format!("{ns:>9} ns")
    }
}

fn main() {
    let runtime = Runtime::embedded().expect("the embedded component loads");
    println!(
        "{:<10} {:>7} {:>14} {:>14} {:>14}",
        "path", "writers", "event", "commit(P)", "checkpoint"
    );
    for (name, rt) in [("native", None), ("component", Some(&runtime))] {
        for p in [16u32, 1024, 16384] {
            let mut sub = subject(rt, p);
            let rounds = (200_000 / u64::from(p)).clamp(3, 50);
            let (mut t_event, mut t_commit, mut t_ckpt) =
                (Duration::ZERO, Duration::ZERO, Duration::ZERO);
            for c in 1..=rounds {
                let start = Instant::now();
                for s in 0..p {
                    sub.event(s, entry(c, s));
                }
                t_event += start.elapsed();
                let start = Instant::now();
                black_box(sub.checkpoint(c));
                t_ckpt += start.elapsed();
                let start = Instant::now();
                assert_eq!(sub.complete(c), 1, "one snapshot per checkpoint");
                t_commit += start.elapsed();
            }
            println!(
                "{:<10} {:>7} {:>14} {:>14} {:>14}",
                name,
                p,
                per(t_event, rounds * u64::from(p)),
                per(t_commit, rounds),
                per(t_ckpt, rounds)
            );
        }
    }
}
