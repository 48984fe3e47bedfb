use serde_json::json;

use super::*;
use crate::replay::{replay_with_states, Engine};

/// A trace with a commit, a storage fault, a writer and a failover.
const TRACE: &str = r#"{
  "config": {"parallelism": 1, "commit_user": "u"},
  "clock_start_ms": 1000,
  "clock_step_ms": 5,
  "steps": [
    {"op": "start"},
    {"op": "write", "subtask": 0, "checkpoint": 1, "committables": ["6869"], "send": false},
    {"op": "send", "subtask": 0},
    {"op": "checkpoint", "checkpoint": 1},
    {"op": "storage_fault", "call": "put", "mode": "ambiguous"},
    {"op": "complete", "checkpoint": 1},
    {"op": "failover", "checkpoint": 1},
    {"op": "complete", "checkpoint": 1}
  ]
}"#;

/// What a faithful host prints: the native core's results.
fn faithful_raw(trace: &Trace) -> String {
    to_json_lines(&record(trace).unwrap().results)
}

#[test]
fn a_faithful_host_renders_the_native_document() {
    let trace = crate::trace::parse(TRACE).unwrap();
    let (native, native_states) = replay_with_states(&trace, &Engine::NATIVE).unwrap();
    let (played, states) = play(&trace, &faithful_raw(&trace)).unwrap();
    assert_eq!(played.render(), native.render());
    assert_eq!(states, native_states);
    let script = record(&trace).unwrap().script;
    assert!(script.iter().any(|l| l["fault"]["applied"] == json!(true)));
    assert!(script.iter().any(|l| l.get("clock").is_some()));
}

#[test]
fn a_wrong_value_changes_the_document_or_stops_the_playback() {
    let trace = crate::trace::parse(TRACE).unwrap();
    let (native, _) = replay_with_states(&trace, &Engine::NATIVE).unwrap();
    let raw = faithful_raw(&trace);
    let lines: Vec<&str> = raw.lines().collect();
    let mut bent_lines = 0;
    for (i, line) in lines.iter().enumerate() {
        // A `state()` answer the document shows, or a committable's bytes.
        let bent = line
            .replace(r#"{"ok":"running"}"#, r#"{"ok":"closed"}"#)
            .replace("6869", "6969");
        if bent == *line {
            continue;
        }
        bent_lines += 1;
        let mut changed = lines.clone();
        changed[i] = &bent;
        let text = changed.join("\n");
        match play(&trace, &text) {
            Ok((doc, _)) => assert_ne!(doc.render(), native.render(), "raw line {i}"),
            Err(ReplayError::Host(m)) => assert!(m.contains("differ"), "{m}"),
            Err(e) => panic!("{e}"),
        }
    }
    assert!(bent_lines >= 5, "{bent_lines}");
    // A missing result stops the playback.
    let short: String = lines[..lines.len() - 1].join("\n");
    assert!(matches!(play(&trace, &short), Err(ReplayError::Host(_))));
    // So does an extra one.
    let long = format!("{raw}{{\"ok\": null}}\n");
    assert!(matches!(play(&trace, &long), Err(ReplayError::Host(_))));
}
