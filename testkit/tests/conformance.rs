//! Conformance: every `tests/conformance/*.trace.json` of the workspace is
//! replayed natively and through the component; both outputs must be
//! byte-identical to each other and to the sibling `*.result.json`.
//!
//! `BLESS=1 cargo test --release --test conformance` (re)writes the
//! `*.result.json` files from the native output instead of comparing them
//! (native/component mismatches still fail). `CONFORMANCE_DIR=DIR` runs the
//! traces of another directory. `tests/regressions/` (simulator seeds that
//! once failed) is checked the same way.

use std::fs;
use std::io::Write as _;
use std::path::PathBuf;

use sink_coordinator_host::Runtime;
use sink_coordinator_testkit::replay::{replay, Engine, ReplayResult};
use sink_coordinator_testkit::trace;
use sink_coordinator_trace::corpus::{
    self, first_difference, mask_placeholders, result_path, traces,
};

fn conformance_dir() -> PathBuf {
    match std::env::var_os("CONFORMANCE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => corpus::repository_dir("conformance"),
    }
}

#[test]
fn conformance_traces() {
    check_dir(conformance_dir());
}

/// The simulator's regression traces (`tests/regressions/`): seeds that once
/// failed, pinned with the result they give now.
#[test]
fn regression_traces() {
    check_dir(corpus::repository_dir("regressions"));
}

fn check_dir(dir: PathBuf) {
    let paths = traces(&dir);
    assert!(!paths.is_empty(), "no *.trace.json in {}", dir.display());
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let runtime = Runtime::embedded().expect("the embedded component loads");
    let mut failures = Vec::new();
    let mut blessed = 0;
    // Traces whose expected file still holds placeholders.
    let mut placeholders = 0;
    // Result files whose normative content BLESS changed.
    let mut changed: Vec<String> = Vec::new();
    for path in &paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let text = match fs::read(path) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{name}: cannot read: {e}"));
                continue;
            }
        };
        let parsed = match trace::parse_slice(&text) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let native_result = match replay(&parsed, &Engine::NATIVE) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{name}: native replay failed: {e}"));
                continue;
            }
        };
        let native = native_result.render();
        let component = match replay(&parsed, &Engine::Component(runtime.clone())) {
            Ok(r) => r.render(),
            Err(e) => {
                failures.push(format!("{name}: component replay failed: {e}"));
                continue;
            }
        };
        if native != component {
            failures.push(format!(
                "{name}: native and component outputs differ ({})",
                first_difference(&native, &component)
            ));
        }
        let expected_path = result_path(path);
        let result_name = expected_path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let expected = fs::read_to_string(&expected_path);
        // The output as the expected file sees it: its placeholders masked.
        let masked = match &expected {
            Ok(expected) => {
                let mut masked = native_result.clone();
                if mask_placeholders(&mut masked, expected) {
                    placeholders += 1;
                }
                masked.render()
            }
            Err(_) => native.clone(),
        };
        if bless {
            if expected.as_deref().ok() != Some(native.as_str()) {
                if expected.as_deref().ok() != Some(masked.as_str()) {
                    changed.push(result_name.clone());
                }
                fs::write(&expected_path, &native).expect("write the result file");
                blessed += 1;
            }
            continue;
        }
        match expected {
            // A hand-derived result still waiting for BLESS: its normative part must match.
            Ok(expected) if expected != native && expected == masked => failures.push(format!(
                "{name}: {result_name} still holds placeholders (its content matches; run BLESS=1 to fill them in)"
            )),
            Ok(expected) if expected == native => {}
            Ok(expected) => failures.push(format!(
                "{name}: output differs from {result_name} ({})",
                first_difference(&expected, &masked)
            )),
            Err(e) => failures.push(format!(
                "{name}: cannot read {}: {e} (run with BLESS=1 to create it)",
                expected_path.display()
            )),
        }
    }
    // Written to the stderr handle rather than with println!, which the test
    // harness captures: the count shows even when the test passes.
    let mut summary = format!(
        "conformance: {} trace(s) ran from {}\n",
        paths.len(),
        dir.display()
    );
    if placeholders > 0 {
        summary.push_str(&format!(
            "conformance: {placeholders} result file(s) hold placeholders (masked; BLESS=1 fills them in)\n"
        ));
    }
    if bless {
        summary.push_str(&format!(
            "conformance: BLESS=1 rewrote {blessed} result file(s)\n"
        ));
        if !changed.is_empty() {
            summary.push_str(&format!(
                "conformance: BLESS=1 changed more than placeholders in {}: {}\n",
                changed.len(),
                changed.join(", ")
            ));
        }
    }
    let _ = std::io::stderr().write_all(summary.as_bytes());
    assert!(
        failures.is_empty(),
        "{} of {} conformance trace(s) failed:\n  {}",
        failures.len(),
        paths.len(),
        failures.join("\n  ")
    );
}

/// `writer_committed` (TRACE-FORMAT "Writer steps"): without `checkpoint`
/// it forwards the named coordinator's committed-up-to and does nothing
/// while that is none; with `checkpoint` it forwards that value, even one the
/// coordinator has not reached (a host bug the trace can reproduce: the
/// writer drops an entry the table lacks, and a global failover loses it).
#[test]
fn writer_committed_forwards_committed_up_to() {
    let trace = |committed: &str| {
        format!(
            r#"{{"config": {{"parallelism": 1, "commit_user": "job-1"}}, "clock_start_ms": 1000, "steps": [
                {{"op": "start"}},
                {{"op": "write", "subtask": 0, "checkpoint": 1, "committables": ["a1"]}},
                {{"op": "writer_committed"}},
                {{"op": "complete", "checkpoint": 1}},
                {{"op": "write", "subtask": 0, "checkpoint": 2, "committables": ["a2"]}},
                {committed},
                {{"op": "writer_snapshot", "checkpoint": 2}},
                {{"op": "checkpoint", "checkpoint": 2}},
                {{"op": "failover", "checkpoint": 2}},
                {{"op": "writer_restore", "subtask": 0, "checkpoint": 2}}
            ]}}"#
        )
    };
    let runtime = Runtime::embedded().expect("the embedded component loads");
    let run = |text: &str| {
        let native = sink_coordinator_testkit::replay::replay_str(text, &Engine::NATIVE)
            .expect("native replay");
        let component =
            sink_coordinator_testkit::replay::replay_str(text, &Engine::Component(runtime.clone()))
                .expect("component replay");
        assert_eq!(
            native.render(),
            component.render(),
            "native and component differ"
        );
        native
    };
    let identifiers =
        |r: &ReplayResult| r.snapshots.iter().map(|s| s.identifier).collect::<Vec<_>>();

    // Default: u = 1 after complete(1); the writer keeps a2, the recovery commits it.
    let forwarded = run(&trace(r#"{"op": "writer_committed"}"#));
    assert_eq!(
        forwarded.steps[2].committed_up_to, None,
        "nothing committed yet"
    );
    assert_eq!(forwarded.steps[3].committed_up_to, Some(1));
    assert_eq!(forwarded.steps[5].committed_up_to, Some(1));
    assert!(forwarded.steps.iter().all(|s| s.error.is_none()));
    assert_eq!(identifiers(&forwarded), vec![1, 2]);
    assert!(forwarded.steps[9].restart_required);
    assert_eq!(forwarded.steps[9].committed_up_to, Some(2));

    // An explicit checkpoint ahead of the coordinator: the writer drops a2
    // before the table holds it, and the failover cannot bring it back.
    let ahead = run(&trace(
        r#"{"op": "writer_committed", "subtask": 0, "checkpoint": 2}"#,
    ));
    assert_eq!(identifiers(&ahead), vec![1]);
    assert!(!ahead.steps[9].restart_required);
}
