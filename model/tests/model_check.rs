//! `cargo test` explores the `reduced` suite to exhaustion (`tiny` in
//! unoptimized builds) and fails on any counterexample, printing its path;
//! its TRACE-FORMAT trace goes to target/model-findings.

use std::path::Path;

use sink_coordinator_model::{check, Scope, FINDINGS_DIR};

#[test]
fn reduced_scope_has_no_counterexample() {
    let suite = if cfg!(debug_assertions) {
        "tiny"
    } else {
        "reduced"
    };
    let mut failures = Vec::new();
    for scope in Scope::suite(suite).expect("a known suite") {
        let report = check(scope, 2, Some(Path::new(FINDINGS_DIR)), false, false);
        println!("{}", report.render());
        if !report.ok() {
            failures.push(report.render());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The traces the model writes replay, natively through the trace crate
/// (no wasmtime), to exactly the table the model built: the counterexample
/// traces a finding writes mean what the model saw.
/// A snapshot as both sides see it: commit user, identifier, committables.
type Row = (String, u64, Vec<(u32, Vec<u8>)>);

#[test]
fn sample_traces_replay_to_the_model_table() {
    let scope = Scope::suite("tiny")
        .expect("a known suite")
        .into_iter()
        .next()
        .expect("a scope");
    let (model, runs) = sink_coordinator_model::sample_runs(scope, 200, 7);
    let mut steps = 0;
    for (i, st) in runs.iter().enumerate() {
        let trace = model.trace(st);
        steps += trace.steps.len();
        // The written document parses back to the same trace.
        let text = sink_coordinator_trace::format::to_json(&trace);
        let parsed = sink_coordinator_trace::format::parse(&text)
            .unwrap_or_else(|e| panic!("sample {i}: the model's trace is malformed: {e}\n{text}"));
        let result = sink_coordinator_trace::replay::replay_native(&parsed)
            .unwrap_or_else(|e| panic!("sample {i}: replay failed: {e}"));
        let replayed: Vec<Row> = result
            .snapshots
            .iter()
            .map(|s| (s.commit_user.clone(), s.identifier, s.committables.clone()))
            .collect();
        let modelled: Vec<Row> = st
            .table
            .iter()
            .map(|s| (s.commit_user.clone(), s.identifier, s.committables.clone()))
            .collect();
        assert_eq!(
            replayed, modelled,
            "sample {i}: the replayed table differs\n{text}"
        );
    }
    assert!(
        steps > 200,
        "the samples are too short to mean anything ({steps} steps)"
    );
}
