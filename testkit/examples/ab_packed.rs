use sink_coordinator_host::engine::{Runtime, RuntimeOptions};
use sink_coordinator_testkit::driver::Engine;
use sink_coordinator_testkit::perf::{perf_job_batch, shaped_entry, Subject, JOB_WRITERS};
use std::time::Instant;

fn main() {
    let cur = Runtime::embedded().unwrap();
    let old = Runtime::new(
        include_bytes!("../../dist/sink-coordinator-0.2.1.wasm"),
        RuntimeOptions::default(),
    )
    .unwrap();
    let engines = [
        ("native", Engine::NATIVE),
        ("0.2.2-packed", Engine::Component(cur)),
        ("0.2.1-events", Engine::Component(old)),
    ];
    let (n, bytes) = (4usize, 200usize);
    let mut subjects: Vec<Subject> = engines
        .iter()
        .map(|(_, e)| Subject::job(e, JOB_WRITERS))
        .collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); 3];
    for cp in 1..=600u64 {
        for (i, s) in subjects.iter_mut().enumerate() {
            let entries = (0..JOB_WRITERS)
                .map(|w| shaped_entry(w, cp, n, bytes))
                .collect();
            let t = Instant::now();
            perf_job_batch(s, entries);
            let dt = t.elapsed().as_secs_f64() * 1e6;
            if cp > 50 {
                times[i].push(dt);
            }
            std::hint::black_box(s.checkpoint(cp));
            s.complete(cp);
        }
    }
    for (i, (name, _)) in engines.iter().enumerate() {
        let t = &mut times[i];
        t.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "{name}: min {:.1} us, p25 {:.1}, median {:.1} us per batch of {JOB_WRITERS}",
            t[0],
            t[t.len() / 4],
            t[t.len() / 2]
        );
    }
}
