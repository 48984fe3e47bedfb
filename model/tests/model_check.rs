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
