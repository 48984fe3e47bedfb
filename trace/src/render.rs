//! The canonical text of a replay result (TRACE-FORMAT "Result").
//!
//! The layout is fixed so that the native and the component path, and every
//! run, print identical bytes: 2-space indentation, one step / snapshot / tag
//! object per line, `", "` and `": "` inside a line, serde_json string
//! escaping, END printed as `"end"`, and a trailing newline
//! ([`crate::format::layout`]). The documents are serde views of the replay
//! types, with the keys in TRACE-FORMAT's order.

use serde::Serialize;
use sink_coordinator::{Snapshot, Tag, END};

use crate::format::layout::to_canonical;
use crate::format::value::Checkpoint;
use crate::replay::{CheckpointState, ReplayResult, StepResult};

// The text forms of the replay types live here, beside the layout they
// follow, so that `replay` does not depend on `render` (one direction only).
impl ReplayResult {
    /// The canonical text (see [`render`]).
    pub fn render(&self) -> String {
        render(self)
    }
}

impl CheckpointState {
    /// `{"step": I, "instance": NAME, "checkpoint": C, "state_hex": HEX}` and
    /// a newline: the line the Node and Python hosts write with `--states`.
    pub fn render_line(&self) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            step: usize,
            instance: &'a str,
            checkpoint: Checkpoint,
            state_hex: String,
        }
        to_canonical(
            &Line {
                step: self.step,
                instance: &self.instance,
                checkpoint: Checkpoint(self.checkpoint),
                state_hex: hex::encode(&self.state),
            },
            false,
        )
    }
}

/// A result document.
#[derive(Serialize)]
struct ResultDoc<'a> {
    steps: Vec<StepDoc<'a>>,
    snapshots: Vec<SnapshotDoc<'a>>,
    tags: Vec<TagDoc<'a>>,
}

/// A table document (`inspect --json`).
#[derive(Serialize)]
struct TableDoc<'a> {
    snapshots: Vec<SnapshotDoc<'a>>,
    tags: Vec<TagDoc<'a>>,
}

#[derive(Serialize)]
struct StepDoc<'a> {
    state: &'static str,
    committed: Vec<Checkpoint>,
    tags_created: &'a [String],
    tags_deleted: &'a [String],
    restart_required: bool,
    committed_up_to: Option<Checkpoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorDoc<'a>>,
}

#[derive(Serialize)]
struct ErrorDoc<'a> {
    kind: &'static str,
    message: &'a str,
}

/// A snapshot as a result document shows it (also `sinkcoord inspect --json`).
#[derive(Serialize)]
pub struct SnapshotDoc<'a> {
    id: u64,
    commit_user: &'a str,
    identifier: Checkpoint,
    watermark: Option<i64>,
    time_ms: u64,
    /// `[subtask, committable]`; committables that are not UTF-8 print
    /// lossily (a JSON string cannot hold them).
    committables: Vec<(u32, String)>,
}

/// A tag as a result document shows it (also `sinkcoord inspect --json`).
#[derive(Serialize)]
pub struct TagDoc<'a> {
    name: &'a str,
    snapshot_id: u64,
    identifier: Checkpoint,
    create_time_ms: u64,
    expire_time_ms: Option<u64>,
}

impl<'a> StepDoc<'a> {
    fn of(s: &'a StepResult) -> Self {
        StepDoc {
            state: s.state.name(),
            committed: s.committed.iter().copied().map(Checkpoint).collect(),
            tags_created: &s.tags_created,
            tags_deleted: &s.tags_deleted,
            restart_required: s.restart_required,
            committed_up_to: s.committed_up_to.map(Checkpoint),
            state_bytes: s.state_bytes,
            error: s.error.as_ref().map(|e| ErrorDoc {
                kind: e.kind.name(),
                message: &e.message,
            }),
        }
    }
}

impl<'a> SnapshotDoc<'a> {
    /// The document of `s`.
    pub fn of(s: &'a Snapshot) -> Self {
        SnapshotDoc {
            id: s.id,
            commit_user: &s.commit_user,
            identifier: Checkpoint(s.identifier),
            watermark: s.watermark,
            time_ms: s.time_ms,
            committables: s
                .committables
                .iter()
                .map(|(subtask, bytes)| (*subtask, String::from_utf8_lossy(bytes).into_owned()))
                .collect(),
        }
    }
}

impl<'a> TagDoc<'a> {
    /// The document of `t`.
    pub fn of(t: &'a Tag) -> Self {
        TagDoc {
            name: &t.name,
            snapshot_id: t.snapshot_id,
            identifier: Checkpoint(t.identifier),
            create_time_ms: t.create_time_ms,
            expire_time_ms: t.expire_time_ms,
        }
    }
}

/// Renders a replay result document.
pub fn render(result: &ReplayResult) -> String {
    to_canonical(
        &ResultDoc {
            steps: result.steps.iter().map(StepDoc::of).collect(),
            snapshots: result.snapshots.iter().map(SnapshotDoc::of).collect(),
            tags: result.tags.iter().map(TagDoc::of).collect(),
        },
        true,
    )
}

/// The `snapshots` and `tags` of a table as a document of its own
/// (`sinkcoord inspect --json`), in the same layout as a replay result.
pub fn render_table(snapshots: &[Snapshot], tags: &[Tag]) -> String {
    to_canonical(
        &TableDoc {
            snapshots: snapshots.iter().map(SnapshotDoc::of).collect(),
            tags: tags.iter().map(TagDoc::of).collect(),
        },
        true,
    )
}

/// A JSON string literal (serde_json's escaping), for text output that
/// quotes input (`sinkcoord inspect`).
pub fn json_str(s: &str) -> String {
    // Serializing a &str cannot fail; the fallback is never taken.
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

/// A checkpoint id or snapshot identifier as printed: a number, or `"end"`.
pub fn checkpoint(c: u64) -> String {
    if c == END {
        "\"end\"".into()
    } else {
        c.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator::{ErrorKind, Lifecycle};
    use sink_coordinator::{HostError, HostErrorKind};

    #[test]
    fn canonical_layout() {
        let result = ReplayResult {
            steps: vec![
                StepResult {
                    state: Lifecycle::Running,
                    committed: vec![1, END],
                    committed_up_to: Some(END),
                    ..StepResult::new(Lifecycle::Running)
                },
                StepResult {
                    state_bytes: Some(41),
                    committed_up_to: Some(1),
                    ..StepResult::new(Lifecycle::Running)
                },
                StepResult {
                    error: Some(HostError::new(
                        HostErrorKind::Core(ErrorKind::InvalidEvent),
                        "bad \"x\"\n",
                    )),
                    tags_created: vec!["savepoint-3".into()],
                    ..StepResult::new(Lifecycle::Failed)
                },
            ],
            snapshots: vec![Snapshot {
                id: 1,
                commit_user: "job-1".into(),
                identifier: END,
                watermark: Some(-100),
                time_ms: 1000,
                committables: vec![(0, b"v1".to_vec()), (1, vec![0xff])],
            }],
            tags: vec![Tag {
                name: "savepoint-3".into(),
                snapshot_id: 2,
                identifier: 3,
                create_time_ms: 1004,
                expire_time_ms: None,
            }],
        };
        let expected = r#"{
  "steps": [
    {"state": "running", "committed": [1, "end"], "tags_created": [], "tags_deleted": [], "restart_required": false, "committed_up_to": "end"},
    {"state": "running", "committed": [], "tags_created": [], "tags_deleted": [], "restart_required": false, "committed_up_to": 1, "state_bytes": 41},
    {"state": "failed", "committed": [], "tags_created": ["savepoint-3"], "tags_deleted": [], "restart_required": false, "committed_up_to": null, "error": {"kind": "invalid-event", "message": "bad \"x\"\n"}}
  ],
  "snapshots": [
    {"id": 1, "commit_user": "job-1", "identifier": "end", "watermark": -100, "time_ms": 1000, "committables": [[0, "v1"], [1, "\ufffd"]]}
  ],
  "tags": [
    {"name": "savepoint-3", "snapshot_id": 2, "identifier": 3, "create_time_ms": 1004, "expire_time_ms": null}
  ]
}
"#;
        assert_eq!(render(&result), expected.replace("\\ufffd", "\u{fffd}"));
        let empty = ReplayResult {
            steps: vec![],
            snapshots: vec![],
            tags: vec![],
        };
        assert_eq!(
            render(&empty),
            "{\n  \"steps\": [],\n  \"snapshots\": [],\n  \"tags\": []\n}\n"
        );
        // The document is valid JSON.
        let _: serde_json::Value = serde_json::from_str(&render(&result)).unwrap();
    }

    #[test]
    fn state_lines() {
        let line = CheckpointState {
            step: 3,
            instance: "b\"".into(),
            checkpoint: END,
            state: vec![0, 0xab],
        };
        assert_eq!(
            line.render_line(),
            "{\"step\": 3, \"instance\": \"b\\\"\", \"checkpoint\": \"end\", \"state_hex\": \"00ab\"}\n"
        );
    }
}
