//! The conformance suite on both table formats (issue 22): every trace of
//! `tests/conformance/` and `tests/regressions/` replays natively on the native
//! format and on Apache Paimon, and the two result documents are identical, byte for
//! byte, as are the coordinator state bytes of every `checkpoint` step (both in the
//! trace's terms: on Paimon the replayer maps each opaque committable to a synthetic
//! data file and back, `sink_coordinator_trace::paimon`).
//!
//! How faults map (`trace/src/paimon/keys.rs`, docs/paimon.md): a trace's storage
//! faults count only the Paimon calls with a native twin (snapshot, tag and `LATEST`
//! puts and gets, the listing of `tag/`, tag deletes), and an injected fault names the
//! native twin of its key; the manifests, manifest lists, `EARLIEST` and the schema
//! are never faulted.

#![cfg(feature = "paimon")]

use sink_coordinator::table::TableFormatKind;
use sink_coordinator::{MemStorage, Shared};
use sink_coordinator_trace::corpus::{self, first_difference};
use sink_coordinator_trace::format;
use sink_coordinator_trace::replay::{self, CheckpointState, ReplayResult};

/// Traces whose Paimon result may differ from the native one, by file name, each
/// with its reason. Every other trace must give identical documents.
const EXCEPTIONS: &[(&str, &str)] = &[];

/// A replay on a fresh in-memory table in `kind`, and the table's keys afterwards.
fn run(
    trace: &format::Trace,
    kind: TableFormatKind,
) -> Result<(ReplayResult, Vec<CheckpointState>, Vec<String>), String> {
    let table = Shared::new(MemStorage::default());
    let (result, states) = replay::replay_on(
        trace,
        Box::new(table.clone()),
        replay::native_driver_in(kind),
    )
    .map_err(|e| format!("{} replay: {e}", kind.name()))?;
    let keys = table.lock().map.keys().cloned().collect();
    Ok((result, states, keys))
}

/// The replay on Paimon wrote a Paimon table, and nothing of the native layout.
fn check_paimon_table(keys: &[String], snapshots: usize) -> Result<(), String> {
    if let Some(k) = keys
        .iter()
        .find(|k| k.starts_with("hint/") || k.starts_with("snapshot/0"))
    {
        return Err(format!("the Paimon table holds the native key {k}"));
    }
    let paimon_snapshots = keys
        .iter()
        .filter(|k| k.starts_with("snapshot/snapshot-"))
        .count();
    if !keys.iter().any(|k| k == "schema/schema-0") || paimon_snapshots != snapshots {
        return Err(format!(
            "the Paimon table holds {paimon_snapshots} snapshots, the result {snapshots}: {keys:?}"
        ));
    }
    Ok(())
}

#[test]
fn every_trace_replays_identically_on_both_formats() {
    let mut paths = corpus::traces(&corpus::repository_dir("conformance"));
    paths.extend(corpus::traces(&corpus::repository_dir("regressions")));
    assert!(paths.len() > 100, "only {} traces", paths.len());
    let (mut identical, mut excepted, mut committed) = (0, 0, 0);
    let mut failures = Vec::new();
    let mut unused: Vec<&str> = EXCEPTIONS.iter().map(|(n, _)| *n).collect();
    for path in &paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let outcome = std::fs::read(path)
            .map_err(|e| format!("cannot read: {e}"))
            .and_then(|text| format::parse_slice(&text).map_err(|e| e.to_string()))
            .and_then(|trace| {
                let native = run(&trace, TableFormatKind::Native)?;
                let paimon = run(&trace, TableFormatKind::Paimon)?;
                check_paimon_table(&paimon.2, paimon.0.snapshots.len())?;
                committed += usize::from(!paimon.0.snapshots.is_empty());
                let (n, p) = (native.0.render(), paimon.0.render());
                if n != p {
                    return Err(format!(
                        "the result documents differ: {}",
                        first_difference(&n, &p)
                    ));
                }
                if native.1 != paimon.1 {
                    return Err("the checkpoint state bytes differ".into());
                }
                Ok(())
            });
        let exception = EXCEPTIONS.iter().find(|(n, _)| *n == name);
        match (outcome, exception) {
            (Ok(()), None) => identical += 1,
            (Ok(()), Some(_)) => failures.push(format!(
                "{name}: identical on both formats, but listed as an exception"
            )),
            (Err(_), Some(_)) => excepted += 1,
            (Err(e), None) => failures.push(format!("{name}: {e}")),
        }
        unused.retain(|n| *n != name);
    }
    println!(
        "paimon corpus: {} traces, {identical} identical, {excepted} excepted \
         ({committed} wrote Paimon snapshots)",
        paths.len()
    );
    assert!(committed > paths.len() / 2, "{committed} traces committed");
    assert!(unused.is_empty(), "exceptions naming no trace: {unused:?}");
    assert!(
        failures.is_empty(),
        "{} of {} trace(s) differ between the formats:\n  {}",
        failures.len(),
        paths.len(),
        failures.join("\n  ")
    );
}
