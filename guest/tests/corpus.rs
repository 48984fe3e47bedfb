//! The core replays its own conformance and regression corpora natively:
//! every `tests/conformance/*.trace.json` and `tests/regressions/*.trace.json`
//! through the pure trace crate (no wasmtime in this build), each result
//! byte for byte its sibling `*.result.json`. The test kit's `conformance`
//! test runs the same corpora through the component as well.

use sink_coordinator_trace::corpus::{self, Verdict};
use sink_coordinator_trace::{format, replay};

fn check(dir: &str) {
    let paths = corpus::traces(&corpus::repository_dir(dir));
    assert!(!paths.is_empty(), "no traces in tests/{dir}");
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.display();
        let outcome = std::fs::read(path)
            .map_err(|e| format!("cannot read: {e}"))
            .and_then(|text| format::parse_slice(&text).map_err(|e| e.to_string()))
            .and_then(|trace| replay::replay_native(&trace).map_err(|e| e.to_string()))
            .and_then(|result| {
                let expected = std::fs::read_to_string(corpus::result_path(path))
                    .map_err(|e| format!("cannot read its result: {e}"))?;
                Ok(corpus::compare(&result, &expected))
            });
        match outcome {
            Ok(Verdict::Same) => {}
            Ok(Verdict::Placeholders) => {
                failures.push(format!("{name}: its result still holds placeholders"))
            }
            Ok(Verdict::Differs(at)) => failures.push(format!("{name}: {at}")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} trace(s) of tests/{dir} differ natively:\n  {}",
        failures.len(),
        paths.len(),
        failures.join("\n  ")
    );
}

#[test]
fn conformance_corpus_replays_natively() {
    check("conformance");
}

#[test]
fn regression_corpus_replays_natively() {
    check("regressions");
}
