//! Regression mode: every file of `corpus/<target>/` through its target
//! once (stable Rust, no libFuzzer). A crash that fuzzing finds is fixed and
//! its input added to the target's corpus, so it stays fixed.
//!
//! `cargo test --release --manifest-path fuzz/Cargo.toml`

use std::path::Path;

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("state_decode", sink_coordinator_fuzz::state_decode),
    ("writer_restore", sink_coordinator_fuzz::writer_restore),
    ("table_decode", sink_coordinator_fuzz::table_decode),
    ("trace_parse", sink_coordinator_fuzz::trace_parse),
    ("calls", sink_coordinator_fuzz::calls),
    ("table_walk", sink_coordinator_fuzz::table_walk),
];

fn run(name: &str, target: Target) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no seed corpus", dir.display());
    for file in &files {
        let data = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(|| target(&data));
        assert!(
            outcome.is_ok(),
            "{name}: {} crashes the target",
            file.display()
        );
    }
    println!("{name}: {} input(s)", files.len());
}

#[test]
fn state_decode_corpus() {
    run(TARGETS[0].0, TARGETS[0].1);
}

#[test]
fn writer_restore_corpus() {
    run(TARGETS[1].0, TARGETS[1].1);
}

#[test]
fn table_decode_corpus() {
    run(TARGETS[2].0, TARGETS[2].1);
}

#[test]
fn trace_parse_corpus() {
    run(TARGETS[3].0, TARGETS[3].1);
}

#[test]
fn calls_corpus() {
    run(TARGETS[4].0, TARGETS[4].1);
}

#[test]
fn table_walk_corpus() {
    run(TARGETS[5].0, TARGETS[5].1);
}

/// Replays one input (`SINKCOORD_FUZZ_INPUT=FILE`, target `SINKCOORD_FUZZ_TARGET`,
/// default `calls`); with `SINKCOORD_FUZZ_TRACE=1` the calls are printed.
#[test]
#[ignore = "tool: replays one input named by SINKCOORD_FUZZ_INPUT, on request"]
fn replay_one_input() {
    let Some(file) = std::env::var_os("SINKCOORD_FUZZ_INPUT") else {
        return;
    };
    let name = std::env::var("SINKCOORD_FUZZ_TARGET").unwrap_or_else(|_| "calls".into());
    let (_, target) = TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a target name");
    target(&std::fs::read(file).unwrap());
}
