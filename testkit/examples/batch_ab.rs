//! The batched crossing side by side in one process: the realistic job's
//! `events` batch (P = 256, 4 × 200 B per event) natively, through the
//! embedded component (0.2.10: `events-block`, the whole batch as one byte
//! string), the 0.2.9 artifact (`events-packed`, each event's committables
//! as one block) and the 0.2.1 artifact (`events`, a list per event and
//! per committable), batches interleaved so that the machine's load touches
//! all four alike (criterion's separate runs swing by ±30 % on a shared
//! machine). Prints the minimum, first quartile and median per batch.
//!
//! `cargo run --release -p sink-coordinator-testkit --example batch_ab`

use std::time::Instant;

use sink_coordinator_host::engine::{Runtime, RuntimeOptions};
use sink_coordinator_testkit::driver::Engine;
use sink_coordinator_testkit::perf::{perf_job_batch, shaped_entry, Subject, JOB_WRITERS};

/// Batches per engine, and how many of the first are warm-up.
const BATCHES: u64 = 600;
const WARM: u64 = 50;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let current = Runtime::embedded()?;
    let v029 = Runtime::new(
        include_bytes!("../../dist/sink-coordinator-0.2.9.wasm"),
        RuntimeOptions::default(),
    )?;
    let v021 = Runtime::new(
        include_bytes!("../../dist/sink-coordinator-0.2.1.wasm"),
        RuntimeOptions::default(),
    )?;
    let engines = [
        ("native", Engine::NATIVE),
        (
            "component, events-block (0.2.10)",
            Engine::Component(current),
        ),
        ("component, events-packed (0.2.9)", Engine::Component(v029)),
        ("component, events (0.2.1)", Engine::Component(v021)),
    ];
    let mut subjects: Vec<Subject> = engines
        .iter()
        .map(|(_, e)| Subject::job(e, JOB_WRITERS))
        .collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); engines.len()];
    for checkpoint in 1..=BATCHES {
        for (subject, spent) in subjects.iter_mut().zip(&mut times) {
            let entries = (0..JOB_WRITERS)
                .map(|s| shaped_entry(s, checkpoint, 4, 200))
                .collect();
            let start = Instant::now();
            perf_job_batch(subject, entries);
            if checkpoint > WARM {
                spent.push(start.elapsed().as_secs_f64() * 1e6);
            }
            std::hint::black_box(subject.checkpoint(checkpoint));
            subject.complete(checkpoint);
        }
    }
    for ((name, _), t) in engines.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        println!(
            "{name}: min {:.1} µs, p25 {:.1} µs, median {:.1} µs per batch of {JOB_WRITERS}",
            t[0],
            t[t.len() / 4],
            t[t.len() / 2]
        );
    }
    Ok(())
}
