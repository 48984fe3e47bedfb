//! The golden manifest (`tests/golden/manifest.json`) of the 0.1.0 state
//! bytes: loading the files and the content each must restore to (used by
//! `golden_states.rs`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use sink_coordinator::{Entry, END, MAX_CHECKPOINT};

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("golden")
}

pub fn manifest() -> Value {
    let path = golden_dir().join("manifest.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn files(m: &Value, kind: &str) -> Vec<Value> {
    m["files"]
        .as_array()
        .expect("manifest: files")
        .iter()
        .filter(|f| f["kind"] == kind)
        .cloned()
        .collect()
}

pub fn str_of<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("manifest: {what} is not a string: {v}"))
}

pub fn u64_of(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("manifest: {what} is not a u64: {v}"))
}

pub fn watermark_of(v: &Value) -> Option<i64> {
    if v.is_null() {
        None
    } else {
        Some(
            v.as_i64()
                .unwrap_or_else(|| panic!("manifest: watermark {v}")),
        )
    }
}

/// `"end"` or a number.
pub fn checkpoint_of(v: &Value) -> u64 {
    if v == "end" {
        END
    } else {
        u64_of(v, "checkpoint")
    }
}

pub fn hex_decode(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "manifest: odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("manifest: bad hex"))
        .collect()
}

/// `{"utf8": text}` or `{"hex": bytes}`.
pub fn committable_of(v: &Value) -> Vec<u8> {
    if let Some(s) = v.get("utf8") {
        str_of(s, "utf8 committable").as_bytes().to_vec()
    } else if let Some(h) = v.get("hex") {
        hex_decode(str_of(h, "hex committable"))
    } else {
        panic!("manifest: committable {v}")
    }
}

pub fn committables_of(v: &Value) -> Vec<Vec<u8>> {
    v.as_array()
        .expect("manifest: committables")
        .iter()
        .map(committable_of)
        .collect()
}

pub fn load(f: &Value) -> Vec<u8> {
    let path = golden_dir().join(str_of(&f["file"], "file"));
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    if let Some(size) = f["size"].as_u64() {
        assert_eq!(bytes.len() as u64, size, "{}: size", path.display());
    }
    bytes
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoldenEnd {
    pub subtask: u32,
    pub committables: Vec<Vec<u8>>,
    pub watermark: Option<i64>,
    pub synthesized: bool,
}

#[derive(Clone, Debug)]
pub struct GoldenCoordinator {
    pub name: String,
    pub bytes: Vec<u8>,
    pub r: u64,
    pub commit_user: String,
    pub parallelism: u32,
    pub ends: Vec<GoldenEnd>,
}

impl GoldenCoordinator {
    pub fn from(f: &Value) -> Self {
        let ends = f["end_entries"]
            .as_array()
            .expect("manifest: end_entries")
            .iter()
            .map(|e| GoldenEnd {
                subtask: u64_of(&e["subtask"], "subtask") as u32,
                committables: committables_of(&e["committables"]),
                watermark: watermark_of(&e["watermark"]),
                synthesized: e["synthesized"].as_bool().expect("manifest: synthesized"),
            })
            .collect();
        GoldenCoordinator {
            name: str_of(&f["name"], "name").to_string(),
            bytes: load(f),
            r: u64_of(&f["checkpoint"], "checkpoint"),
            commit_user: str_of(&f["commit_user"], "commit_user").to_string(),
            parallelism: u64_of(&f["parallelism"], "parallelism") as u32,
            ends,
        }
    }

    pub fn has_end(&self, s: u32) -> bool {
        self.ends.iter().any(|e| e.subtask == s)
    }

    pub fn all_ended(&self) -> bool {
        self.ends.len() as u64 == u64::from(self.parallelism)
    }

    /// The END snapshot's committables: per subtask in order, its END entry's.
    pub fn end_snapshot_committables(&self) -> Vec<(u32, Vec<u8>)> {
        self.ends
            .iter()
            .flat_map(|e| e.committables.iter().map(move |c| (e.subtask, c.clone())))
            .collect()
    }

    /// The END snapshot's watermark (SEMANTICS 3) when the golden END entries
    /// are joined by `extra` END entries of the other subtasks: the minimum,
    /// "no watermark" below every number, synthesized entries neutral, and no
    /// watermark if every entry is neutral.
    pub fn end_watermark(&self, extra: &[Option<i64>]) -> Option<i64> {
        let ws: Vec<Option<i64>> = self
            .ends
            .iter()
            .filter(|e| !e.synthesized)
            .map(|e| e.watermark)
            .chain(extra.iter().copied())
            .collect();
        if ws.is_empty() || ws.contains(&None) {
            None
        } else {
            ws.into_iter().flatten().min()
        }
    }

    /// A checkpoint id after `r` for later calls (`r` itself at the top).
    pub fn next(&self) -> u64 {
        if self.r >= MAX_CHECKPOINT {
            MAX_CHECKPOINT
        } else {
            self.r + 1
        }
    }
}

pub struct GoldenWriter {
    pub name: String,
    pub bytes: Vec<u8>,
    pub subtask: u32,
    pub r: u64,
    pub entries: Vec<Entry>,
}

impl GoldenWriter {
    pub fn from(f: &Value) -> Self {
        let entries = f["entries"]
            .as_array()
            .expect("manifest: entries")
            .iter()
            .map(|e| Entry {
                checkpoint: checkpoint_of(&e["checkpoint"]),
                committables: committables_of(&e["committables"]).into(),
                watermark: watermark_of(&e["watermark"]),
                savepoint: e["savepoint"].as_bool().expect("manifest: savepoint"),
            })
            .collect();
        GoldenWriter {
            name: str_of(&f["name"], "name").to_string(),
            bytes: load(f),
            subtask: u64_of(&f["subtask"], "subtask") as u32,
            r: u64_of(&f["checkpoint"], "checkpoint"),
            entries,
        }
    }
}
