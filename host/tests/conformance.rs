//! Conformance: every `tests/conformance/*.trace.json` of the workspace is
//! replayed natively and through the component; both outputs must be
//! byte-identical to each other and to the sibling `*.result.json`.
//!
//! `BLESS=1 cargo test --release --test conformance` (re)writes the
//! `*.result.json` files from the native output instead of comparing them
//! (native/component mismatches still fail).

use std::fs;
use std::path::{Path, PathBuf};

use sink_coordinator_host::replay::{replay, Mode};
use sink_coordinator_host::trace;
use sink_coordinator_host::Runtime;

fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("tests").join("conformance")
}

fn traces(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".trace.json")))
        .collect();
    paths.sort();
    paths
}

fn result_path(trace: &Path) -> PathBuf {
    let name = trace.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    trace.with_file_name(format!("{}.result.json", name.trim_end_matches(".trace.json")))
}

/// The first differing line, for a readable failure message.
fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    for i in 0..e.len().max(a.len()) {
        let (el, al) = (e.get(i).copied(), a.get(i).copied());
        if el != al {
            return format!(
                "first difference at line {}:\n      expected: {}\n      actual:   {}",
                i + 1,
                el.unwrap_or("<end of file>"),
                al.unwrap_or("<end of file>")
            );
        }
    }
    if expected.ends_with('\n') != actual.ends_with('\n') {
        return "the documents differ only in the trailing newline".into();
    }
    "the documents are identical".into()
}

#[test]
fn conformance_traces() {
    let dir = conformance_dir();
    let paths = traces(&dir);
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let runtime = Runtime::embedded().expect("the embedded component loads");
    let mut failures = Vec::new();
    let mut blessed = 0;
    for path in &paths {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
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
        let native = match replay(&parsed, Mode::Native) {
            Ok(r) => r.render(),
            Err(e) => {
                failures.push(format!("{name}: native replay failed: {e}"));
                continue;
            }
        };
        let component = match replay(&parsed, Mode::Component(&runtime)) {
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
        if bless {
            if fs::read_to_string(&expected_path).ok().as_deref() != Some(native.as_str()) {
                fs::write(&expected_path, &native).expect("write the result file");
                blessed += 1;
            }
            continue;
        }
        match fs::read_to_string(&expected_path) {
            Ok(expected) if expected == native => {}
            Ok(expected) => failures.push(format!(
                "{name}: output differs from {} ({})",
                expected_path.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
                first_difference(&expected, &native)
            )),
            Err(e) => failures.push(format!("{name}: cannot read {}: {e} (run with BLESS=1 to create it)", expected_path.display())),
        }
    }
    println!("conformance: {} trace(s) ran from {}", paths.len(), dir.display());
    if bless {
        println!("conformance: BLESS=1 rewrote {blessed} result file(s)");
    }
    assert!(
        failures.is_empty(),
        "{} of {} conformance trace(s) failed:\n  {}",
        failures.len(),
        paths.len(),
        failures.join("\n  ")
    );
}
