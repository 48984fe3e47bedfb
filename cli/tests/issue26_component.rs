//! Issue 26, the component path of the CLI: a damaged compiled-code cache
//! file is recompiled, never executed; `replay` reads the table back in
//! bounded calls; and many thousand instances alive at once do not trap.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::Scratch;

fn replay(cache: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sinkcoord"));
    match cache {
        Some(dir) => cmd.env("SINKCOORD_CACHE_DIR", dir),
        // No cache: nothing of another test's cache is read or written.
        None => cmd.env("SINKCOORD_CACHE_DIR", ""),
    };
    cmd.arg("replay")
        .args(args)
        .output()
        .expect("run sinkcoord")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const HEAD: &str = r#""config": {"parallelism": 1, "commit_user": "job-1"}, "clock_start_ms": 1000, "clock_step_ms": 0"#;

/// A trace committing `n` checkpoints, one snapshot each.
fn commits_trace(n: u64) -> String {
    let mut steps = vec![r#"{"op": "start"}"#.to_string()];
    for cp in 1..=n {
        steps.push(format!(
            r#"{{"op": "event", "subtask": 0, "checkpoint": {cp}, "committables": ["x"]}}"#
        ));
        steps.push(format!(r#"{{"op": "complete", "checkpoint": {cp}}}"#));
    }
    format!("{{{HEAD}, \"steps\": [{}]}}", steps.join(", "))
}

#[test]
fn a_damaged_cache_file_is_recompiled_not_executed() {
    let s = Scratch::new("issue26-component", "cache");
    let cache = s.0.join("cache");
    let trace = s.0.join("trace.json");
    std::fs::write(&trace, commits_trace(3)).unwrap();
    let trace = trace.to_str().unwrap();
    let first = replay(Some(&cache), &[trace]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let files: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let good = std::fs::read(file).unwrap();
    // Flipped bytes at several places of the machine code, a truncation,
    // and an empty file. Before: at 30 % the next command died of SIGILL
    // (elsewhere of SIGSEGV), and every later one too, until the file was
    // deleted.
    let mut damaged: Vec<Vec<u8>> = (1..10)
        .map(|tenth| {
            let mut bytes = good.clone();
            let at = bytes.len() * tenth / 10;
            for b in &mut bytes[at..(at + 256).min(good.len())] {
                *b ^= 0xff;
            }
            bytes
        })
        .collect();
    damaged.push(good[..good.len() / 2].to_vec());
    damaged.push(Vec::new());
    for (i, bytes) in damaged.iter().enumerate() {
        std::fs::write(file, bytes).unwrap();
        let out = replay(Some(&cache), &[trace]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "damage {i}: {:?} {}",
            out.status,
            text(&out.stderr)
        );
        assert_eq!(out.stdout, first.stdout, "damage {i}");
        // Recompiled and replaced: the next command loads it again.
        assert_eq!(std::fs::read(file).unwrap().len(), good.len(), "damage {i}");
    }
}

#[test]
fn replay_reads_a_large_table_in_bounded_calls() {
    let s = Scratch::new("issue26-component", "large-table");
    let trace = s.0.join("trace.json");
    std::fs::write(&trace, commits_trace(2000)).unwrap();
    let trace = trace.to_str().unwrap();
    // The per-call budget is what a deadline is in time, deterministic:
    // each step fits in 1,000,000 units, the whole table read back in one
    // call (2,000 snapshots) did not, and `replay` failed where `--native`
    // printed the result.
    let native = replay(None, &["--native", trace]);
    assert_eq!(native.status.code(), Some(0), "{}", text(&native.stderr));
    let out = replay(None, &["--fuel", "1000000", trace]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), text(&native.stdout));
    assert!(text(&out.stdout).contains("\"id\": 2000,"));
}

#[test]
fn seventeen_thousand_instances_alive_at_once_do_not_trap() {
    let s = Scratch::new("issue26-component", "instances");
    let n = 17_000;
    let steps: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"op": "start", "instance": "i{i}"}}"#))
        .collect();
    let trace = s.0.join("trace.json");
    std::fs::write(
        &trace,
        format!("{{{HEAD}, \"steps\": [{}]}}", steps.join(", ")),
    )
    .unwrap();
    let trace = trace.to_str().unwrap();
    // Before: from instance 16,366 on every start trapped with "Cannot
    // allocate memory" (each instance past the pool cost four memory
    // mappings; the kernel allows 65,530 per process).
    let out = replay(None, &[trace]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !stdout.contains("trap"),
        "{}",
        &stdout[..stdout.len().min(2000)]
    );
    assert_eq!(stdout.matches("\"state\": \"running\"").count(), n);
    let native = replay(None, &["--native", trace]);
    assert_eq!(text(&native.stdout), stdout);
}
