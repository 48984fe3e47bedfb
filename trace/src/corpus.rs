//! The repository's trace corpora (`tests/conformance/`, `tests/regressions/`)
//! and how a replay's result is held against a trace's sibling
//! `*.result.json`: shared by the core's own native corpus test, the test
//! kit's native-and-component one, and any other runner.

use std::fs;
use std::path::{Path, PathBuf};

use crate::replay::ReplayResult;

/// `tests/<name>` of the repository this crate was built from.
pub fn repository_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join(name)
}

/// Every `*.trace.json` directly in `dir`, sorted by path (none if `dir`
/// cannot be read).
pub fn traces(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".trace.json"))
        })
        .collect();
    paths.sort();
    paths
}

/// The `X.result.json` beside `X.trace.json`.
pub fn result_path(trace: &Path) -> PathBuf {
    let name = trace
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    trace.with_file_name(format!(
        "{}.result.json",
        name.trim_end_matches(".trace.json")
    ))
}

/// The first differing line, for a readable failure message.
pub fn first_difference(expected: &str, actual: &str) -> String {
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

/// Applies the placeholders of `tests/conformance/README.md`: a hand-derived
/// result leaves implementation-defined values open as `"message": "..."`
/// and `"state_bytes": 0`. Where the expected step has one, the actual value
/// is replaced by the placeholder. Returns whether anything was masked.
pub fn mask_placeholders(actual: &mut ReplayResult, expected: &str) -> bool {
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(expected) else {
        return false;
    };
    let Some(steps) = doc.get("steps").and_then(|s| s.as_array()) else {
        return false;
    };
    let mut masked = false;
    for (step, exp) in actual.steps.iter_mut().zip(steps) {
        if exp.get("state_bytes").and_then(|v| v.as_u64()) == Some(0) {
            if let Some(n) = step.state_bytes.as_mut() {
                *n = 0;
                masked = true;
            }
        }
        if exp.pointer("/error/message").and_then(|m| m.as_str()) == Some("...") {
            if let Some(e) = step.error.as_mut() {
                e.message = "...".into();
                masked = true;
            }
        }
    }
    masked
}

/// How a replay's result compares with the expected document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Byte for byte the expected document.
    Same,
    /// The same once the expected file's placeholders are applied: the file
    /// still waits for `BLESS=1`.
    Placeholders,
    /// Different: the first differing line.
    Differs(String),
}

/// Holds `result` against the expected document `expected`.
pub fn compare(result: &ReplayResult, expected: &str) -> Verdict {
    let rendered = result.render();
    if rendered == expected {
        return Verdict::Same;
    }
    let mut masked = result.clone();
    mask_placeholders(&mut masked, expected);
    let masked = masked.render();
    if masked == expected {
        Verdict::Placeholders
    } else {
        Verdict::Differs(first_difference(expected, &masked))
    }
}
