//! The table on S3 (moto on loopback, started here; a test that cannot start
//! it fails): every conformance and regression trace replayed through the
//! component with the table on S3 must print the in-memory native result
//! byte for byte, and simulation seeds with the table on S3 must verify.

use std::fs;
use std::path::{Path, PathBuf};

use sink_coordinator_host::Runtime;
use sink_coordinator_testkit::moto::Moto;
use sink_coordinator_testkit::replay::{replay, replay_on};
use sink_coordinator_testkit::sim::backend::SimStore;
use sink_coordinator_testkit::sim::{self, Engine, FaultLevel, SimOptions, TableLocation};
use sink_coordinator_testkit::trace;

fn traces() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let mut paths = Vec::new();
    for dir in ["conformance", "regressions"] {
        for entry in fs::read_dir(root.join(dir)).expect("the trace directory") {
            let path = entry.expect("a directory entry").path();
            if path.to_string_lossy().ends_with(".trace.json") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
}

#[test]
fn traces_replay_identically_on_s3() {
    let moto = Moto::start().unwrap_or_else(|e| panic!("{e}"));
    let runtime = Runtime::embedded().expect("the embedded component loads");
    let paths = traces();
    assert!(paths.len() > 200, "the trace suites are there");
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let text = fs::read(path).expect("read the trace");
        let parsed = match trace::parse_slice(&text) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let in_memory = replay(&parsed, &Engine::NATIVE).map(|r| r.render());
        let table = moto
            .open(&moto.fresh_url("trace"))
            .unwrap_or_else(|e| panic!("{e}"));
        let on_s3 = replay_on(
            &parsed,
            &Engine::Component(runtime.clone()),
            SimStore::Url(table),
        )
        .map(|r| r.render());
        match (in_memory, on_s3) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(a), Ok(b)) => {
                let line = a
                    .lines()
                    .zip(b.lines())
                    .position(|(x, y)| x != y)
                    .map_or(0, |i| i + 1);
                failures.push(format!(
                    "{name}: the S3 result differs from the in-memory one at line {line}"
                ));
            }
            (a, b) => failures.push(format!(
                "{name}: in memory {:?}, on S3 {:?}",
                a.err().map(|e| e.to_string()),
                b.err().map(|e| e.to_string())
            )),
        }
    }
    eprintln!(
        "{} traces replayed on S3 (moto) in {:.1} s",
        paths.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The seeds' levels in turn.
fn level(seed: u64) -> FaultLevel {
    FaultLevel::ALL[(seed % 4) as usize]
}

#[test]
fn simulation_seeds_verify_on_s3() {
    let moto = Moto::start().unwrap_or_else(|e| panic!("{e}"));
    let runtime = Runtime::embedded().expect("the embedded component loads");
    let mut failures = Vec::new();
    let mut snapshots = 0;
    for (seed, engine) in [
        (1, Engine::NATIVE),
        (2, Engine::NATIVE),
        (3, Engine::Component(runtime.clone())),
        (4, Engine::Component(runtime.clone())),
    ] {
        let mut opts = SimOptions::new(seed);
        opts.writers = 4;
        opts.checkpoints = 12;
        opts.faults = level(seed);
        opts.table = TableLocation::Url {
            url: moto.fresh_url("sim"),
            options: moto.options(),
        };
        let outcome = sim::run(&opts, &engine, None).unwrap_or_else(|e| panic!("{e}"));
        snapshots += outcome.stats.snapshots;
        if let Err(v) = &outcome.verdict {
            failures.push(format!("seed {seed} ({}): {v}", engine.name()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(snapshots > 0, "the seeds committed");
}
