//! The conformance suite on Apache Paimon through the component (issue 22): every trace
//! of `tests/conformance/` and `tests/regressions/` replayed by the component on a Paimon
//! table gives the result document and the checkpoint state bytes of the native core on
//! the native log, byte for byte (the native core on Paimon is
//! `guest/tests/paimon_corpus.rs`; the mapping of committables to synthetic data files
//! and of faults to commit points is `sink_coordinator_trace::paimon`).

use sink_coordinator::TableFormatKind;
use sink_coordinator_host::Runtime;
use sink_coordinator_testkit::replay::{replay_with_states_in, Engine};
use sink_coordinator_testkit::trace;
use sink_coordinator_trace::corpus::{self, first_difference, traces};

#[test]
fn every_trace_on_paimon_through_the_component() {
    let runtime = Runtime::embedded().expect("the embedded component loads");
    let component = Engine::Component(runtime);
    let (mut total, mut failures) = (0, Vec::new());
    for dir in ["conformance", "regressions"] {
        for path in traces(&corpus::repository_dir(dir)) {
            total += 1;
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("?")
                .to_string();
            let text = std::fs::read(&path).expect("a readable trace");
            let parsed = trace::parse_slice(&text).expect("a valid trace");
            let native = replay_with_states_in(&parsed, &Engine::NATIVE, TableFormatKind::Native)
                .expect("the native replay");
            match replay_with_states_in(&parsed, &component, TableFormatKind::Paimon) {
                Ok((result, states)) => {
                    let (a, b) = (native.0.render(), result.render());
                    if a != b {
                        failures.push(format!("{name}: {}", first_difference(&a, &b)));
                    } else if native.1 != states {
                        failures.push(format!("{name}: the checkpoint state bytes differ"));
                    }
                }
                Err(e) => failures.push(format!("{name}: component replay on Paimon: {e}")),
            }
        }
    }
    println!(
        "component on paimon: {total} traces, {} identical to the native log's",
        total - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
