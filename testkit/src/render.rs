//! The canonical text of a replay result (TRACE-FORMAT "Result").
//!
//! The layout is fixed so that the native and the component path, and every
//! run, print identical bytes: 2-space indentation, one step / snapshot / tag
//! object per line, `", "` and `": "` inside a line, serde_json string
//! escaping, END printed as `"end"`, and a trailing newline.

use std::fmt::Write as _;

use sink_coordinator::{Snapshot, Tag, END};

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
        let hex: String = self.state.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{{\"step\": {}, \"instance\": {}, \"checkpoint\": {}, \"state_hex\": \"{hex}\"}}\n",
            self.step,
            json_str(&self.instance),
            checkpoint(self.checkpoint),
        )
    }
}

/// Renders a replay result document.
pub fn render(result: &ReplayResult) -> String {
    let mut out = String::from("{\n");
    out.push_str("  \"steps\": ");
    list(&mut out, &result.steps, step);
    out.push_str(",\n  \"snapshots\": ");
    list(&mut out, &result.snapshots, snapshot);
    out.push_str(",\n  \"tags\": ");
    list(&mut out, &result.tags, tag);
    out.push_str("\n}\n");
    out
}

/// `[]`, or one item per line between brackets on their own lines.
fn list<T>(out: &mut String, items: &[T], item: fn(&mut String, &T)) {
    if items.is_empty() {
        out.push_str("[]");
        return;
    }
    out.push_str("[\n");
    for (i, value) in items.iter().enumerate() {
        out.push_str("    ");
        item(out, value);
        if i + 1 < items.len() {
            out.push(',');
        }
        out.push('\n');
    }
    out.push_str("  ]");
}

/// A JSON string literal (serde_json's escaping).
pub fn json_str(s: &str) -> String {
    // Serializing a &str cannot fail; the fallback is never taken.
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

/// A checkpoint id or snapshot identifier: a number, or `"end"`.
pub fn checkpoint(c: u64) -> String {
    if c == END {
        "\"end\"".into()
    } else {
        c.to_string()
    }
}

fn option<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "null".into(), |v| v.to_string())
}

fn joined<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(", ")
}

fn step(out: &mut String, s: &StepResult) {
    let _ = write!(
        out,
        "{{\"state\": {}, \"committed\": [{}], \"tags_created\": [{}], \"tags_deleted\": [{}], \"restart_required\": {}, \"committed_up_to\": {}",
        json_str(s.state.name()),
        joined(&s.committed, |c| checkpoint(*c)),
        joined(&s.tags_created, |t| json_str(t)),
        joined(&s.tags_deleted, |t| json_str(t)),
        s.restart_required,
        s.committed_up_to
            .map_or_else(|| "null".into(), checkpoint),
    );
    if let Some(n) = s.state_bytes {
        let _ = write!(out, ", \"state_bytes\": {n}");
    }
    if let Some(e) = &s.error {
        let _ = write!(
            out,
            ", \"error\": {{\"kind\": {}, \"message\": {}}}",
            json_str(e.kind.name()),
            json_str(&e.message)
        );
    }
    out.push('}');
}

/// One snapshot, as printed by `replay` and `inspect --json`.
pub fn snapshot(out: &mut String, s: &Snapshot) {
    let _ = write!(
        out,
        "{{\"id\": {}, \"commit_user\": {}, \"identifier\": {}, \"watermark\": {}, \"time_ms\": {}, \"committables\": [{}]}}",
        s.id,
        json_str(&s.commit_user),
        checkpoint(s.identifier),
        option(s.watermark),
        s.time_ms,
        joined(&s.committables, |(subtask, bytes)| format!(
            "[{subtask}, {}]",
            json_str(&String::from_utf8_lossy(bytes))
        )),
    );
}

/// One tag, as printed by `replay` and `inspect --json`.
pub fn tag(out: &mut String, t: &Tag) {
    let _ = write!(
        out,
        "{{\"name\": {}, \"snapshot_id\": {}, \"identifier\": {}, \"create_time_ms\": {}, \"expire_time_ms\": {}}}",
        json_str(&t.name),
        t.snapshot_id,
        checkpoint(t.identifier),
        t.create_time_ms,
        option(t.expire_time_ms),
    );
}

/// The `snapshots` and `tags` of a table as a document of its own
/// (`sinkcoord inspect --json`), in the same layout as a replay result.
pub fn render_table(snapshots: &[Snapshot], tags: &[Tag]) -> String {
    let mut out = String::from("{\n  \"snapshots\": ");
    list(&mut out, snapshots, snapshot);
    out.push_str(",\n  \"tags\": ");
    list(&mut out, tags, tag);
    out.push_str("\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator::{ErrorKind, Lifecycle};
    use sink_coordinator_host::error::{HostError, HostErrorKind};

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
}
