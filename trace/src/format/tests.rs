//! The parser on every op, its defaults, and its messages.

use crate::faults::{CallKind, Fault, FaultMode};
use sink_coordinator::{Config, Entry, RecoveryMode, END};

use super::*;

const HEAD: &str = r#""config": {"parallelism": 2, "commit_user": "job-1"}"#;

fn with_steps(steps: &str) -> String {
    format!("{{{HEAD}, \"steps\": [{steps}]}}")
}

fn malformed(text: &str) -> Malformed {
    match parse(text) {
        Ok(t) => panic!("expected malformed, got {t:?}"),
        Err(e) => e,
    }
}

#[test]
fn parses_defaults_and_every_op() {
    let t = parse(&with_steps(
        r#"{"op": "start"},
           {"op": "event", "subtask": 1, "checkpoint": 3, "committables": ["a", "b"], "watermark": -5, "savepoint": true},
           {"op": "event", "subtask": 0, "attempt": 2, "checkpoint": "end"},
           {"op": "checkpoint", "checkpoint": 3},
           {"op": "complete", "checkpoint": "end"},
           {"op": "abort", "checkpoint": 0},
           {"op": "reset_subtask", "subtask": 1, "checkpoint": null},
           {"op": "restored", "subtask": 1, "checkpoint": 3, "entries": [{"checkpoint": "end", "committables": ["x"]}]},
           {"op": "failover", "checkpoint": 3, "finished_subtasks": [0], "config": {"recovery": "continue"}, "state_hex": "0aFF"},
           {"op": "failover", "checkpoint": null, "finished_subtasks": [0], "instance": "b"},
           {"op": "close", "instance": "b"},
           {"op": "clock", "ms": 5},
           {"op": "storage_fault", "call": "put", "mode": "ambiguous", "skip": 2}"#,
    ))
    .unwrap();
    assert_eq!(t.config, Config::new(2, "job-1"));
    assert_eq!(t.steps.len(), 13);
    assert_eq!(
        t.steps[1].op,
        Op::Event {
            subtask: 1,
            attempt: 0,
            entry: Entry {
                checkpoint: 3,
                committables: vec![b"a".to_vec(), b"b".to_vec()].into(),
                watermark: Some(-5),
                savepoint: true
            }
        }
    );
    assert!(
        matches!(&t.steps[2].op, Op::Event { attempt: 2, entry, .. } if entry.checkpoint == END)
    );
    match &t.steps[8].op {
        Op::Failover {
            checkpoint,
            finished_subtasks,
            config,
            state,
        } => {
            assert_eq!(*checkpoint, Some(3));
            assert_eq!(finished_subtasks, &[0]);
            assert_eq!(config.recovery, RecoveryMode::Continue);
            assert_eq!(state.as_deref(), Some(&[0x0a, 0xff][..]));
        }
        other => panic!("{other:?}"),
    }
    // finished_subtasks is ignored with a null checkpoint.
    assert!(
        matches!(&t.steps[9].op, Op::Failover { finished_subtasks, .. } if finished_subtasks.is_empty())
    );
    assert_eq!(t.steps[10].instance, "b");
    assert_eq!(
        t.steps[12].op,
        Op::StorageFault {
            call: CallKind::Put,
            fault: Fault {
                skip: 2,
                count: 1,
                mode: FaultMode::Ambiguous
            }
        }
    );
}

#[test]
fn parses_writer_ops_with_defaults() {
    let t = parse(&with_steps(
        r#"{"op": "start"},
           {"op": "write", "subtask": 1, "checkpoint": 3, "committables": ["a"], "watermark": 7, "savepoint": true, "send": false},
           {"op": "write", "subtask": 0, "checkpoint": 0},
           {"op": "end_input", "subtask": 1, "committables": ["e"]},
           {"op": "send", "subtask": 1},
           {"op": "send", "subtask": 1, "count": 2},
           {"op": "writer_committed"},
           {"op": "writer_abort", "subtask": 0, "checkpoint": 0},
           {"op": "writer_snapshot", "checkpoint": 3},
           {"op": "writer_restore", "subtask": 1, "checkpoint": 3},
           {"op": "writer_restore", "subtask": 1, "checkpoint": null, "send": false},
           {"op": "writer_restore", "subtask": 0, "checkpoint": 3, "attempt": 7},
           {"op": "writer_restore", "subtask": 0, "checkpoint": null},
           {"op": "writer_restore", "subtask": 4, "checkpoint": null},
           {"op": "start", "instance": "b"},
           {"op": "writer_restore", "subtask": 1, "checkpoint": null, "instance": "b"},
           {"op": "writer_committed", "subtask": 1, "checkpoint": 4},
           {"op": "writer_committed", "checkpoint": "end", "instance": "b"}"#,
    ))
    .unwrap();
    assert_eq!(
        t.steps[1].op,
        Op::Write {
            subtask: 1,
            entry: Entry {
                checkpoint: 3,
                committables: vec![b"a".to_vec()].into(),
                watermark: Some(7),
                savepoint: true
            },
            send: false
        }
    );
    assert!(
        matches!(&t.steps[2].op, Op::Write { send: true, entry, .. } if entry.committables.is_empty() && entry.watermark.is_none() && !entry.savepoint)
    );
    assert_eq!(
        t.steps[3].op,
        Op::EndInput {
            subtask: 1,
            committables: vec![b"e".to_vec()],
            watermark: None,
            send: true
        }
    );
    assert_eq!(
        t.steps[4].op,
        Op::Send {
            subtask: 1,
            count: None
        }
    );
    assert_eq!(
        t.steps[5].op,
        Op::Send {
            subtask: 1,
            count: Some(2)
        }
    );
    assert_eq!(
        t.steps[6].op,
        Op::WriterCommitted {
            subtask: None,
            checkpoint: None
        }
    );
    assert_eq!(
        t.steps[16].op,
        Op::WriterCommitted {
            subtask: Some(1),
            checkpoint: Some(4)
        }
    );
    assert_eq!(
        t.steps[17].op,
        Op::WriterCommitted {
            subtask: None,
            checkpoint: Some(END)
        }
    );
    assert_eq!(
        t.steps[7].op,
        Op::WriterAbort {
            subtask: Some(0),
            checkpoint: 0
        }
    );
    // Attempts: writers start at 0; the default is the previous + 1; an
    // explicit attempt is kept; a writer that did not exist starts at 0;
    // writers of another instance are separate.
    let attempts: Vec<(u32, u32, bool)> = t.steps[9..]
        .iter()
        .filter_map(|s| match &s.op {
            Op::WriterRestore {
                subtask,
                attempt,
                send,
                ..
            } => Some((*subtask, *attempt, *send)),
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts,
        vec![
            (1, 1, true),
            (1, 2, false),
            (0, 7, true),
            (0, 8, true),
            (4, 0, true),
            (1, 0, true)
        ]
    );
    assert!(t
        .steps
        .iter()
        .skip(1)
        .all(|s| s.op.is_writer_op() || s.op.name() == "start"));
}

#[test]
fn writer_steps_report_step_and_field() {
    let cases: &[(&str, usize, &str)] = &[
        (
            r#"{"op": "write", "subtask": 0, "checkpoint": "end"}"#,
            1,
            "checkpoint",
        ),
        (
            r#"{"op": "write", "subtask": 0, "checkpoint": 1, "attempt": 0}"#,
            1,
            "attempt",
        ),
        (r#"{"op": "write", "checkpoint": 1}"#, 1, "subtask"),
        (
            r#"{"op": "end_input", "subtask": 0, "checkpoint": "end"}"#,
            1,
            "checkpoint",
        ),
        (
            r#"{"op": "end_input", "subtask": 0, "watermark": 1.5}"#,
            1,
            "watermark",
        ),
        (r#"{"op": "send", "subtask": 0, "count": 0}"#, 1, "count"),
        (r#"{"op": "send", "subtask": 0, "count": -1}"#, 1, "count"),
        (r#"{"op": "writer_committed"}"#, 1, "subtask"),
        (
            r#"{"op": "writer_committed", "checkpoint": 1}"#,
            1,
            "subtask",
        ),
        // v1's writer_complete is gone: an unknown op.
        (r#"{"op": "writer_complete", "checkpoint": 1}"#, 1, "op"),
        (
            r#"{"op": "writer_committed", "instance": "x"}"#,
            1,
            "instance",
        ),
        (
            r#"{"op": "writer_snapshot", "subtask": 0, "checkpoint": 1}"#,
            1,
            "subtask",
        ),
        (r#"{"op": "writer_abort", "subtask": 0}"#, 1, "checkpoint"),
        (
            r#"{"op": "writer_restore", "subtask": 0, "checkpoint": 1}"#,
            1,
            "checkpoint",
        ),
        (
            r#"{"op": "writer_restore", "subtask": 0, "checkpoint": "end"}"#,
            1,
            "checkpoint",
        ),
        (
            r#"{"op": "writer_restore", "subtask": 0, "checkpoint": null, "entries": []}"#,
            1,
            "entries",
        ),
        (
            r#"{"op": "write", "subtask": 0, "checkpoint": 1, "instance": "x"}"#,
            1,
            "instance",
        ),
    ];
    for (step, index, field) in cases {
        let e = malformed(&with_steps(&format!(r#"{{"op": "start"}}, {step}"#)));
        assert_eq!(
            (e.step, e.field.as_deref()),
            (Some(*index), Some(*field)),
            "{step}: {e}"
        );
        assert!(e.to_string().contains(&format!("step {index}")), "{e}");
    }
    // The writer must exist; its kept bytes must exist for that
    // (instance, subtask, checkpoint).
    let e = malformed(&with_steps(
        r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1},
           {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_committed", "subtask": 1, "checkpoint": 1}"#,
    ));
    assert_eq!(
        (e.step, e.field.as_deref()),
        (Some(3), Some("subtask")),
        "{e}"
    );
    let e = malformed(&with_steps(
        r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1},
           {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_restore", "subtask": 0, "checkpoint": 2}"#,
    ));
    assert_eq!(
        (e.step, e.field.as_deref()),
        (Some(3), Some("checkpoint")),
        "{e}"
    );
    assert!(e.to_string().contains("no writer state bytes"), "{e}");
    // Kept by a snapshot of every writer; a restore keeps them.
    parse(&with_steps(
        r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "write", "subtask": 1, "checkpoint": 1},
           {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_restore", "subtask": 1, "checkpoint": 1},
           {"op": "writer_restore", "subtask": 1, "checkpoint": 1}, {"op": "failover", "checkpoint": null},
           {"op": "writer_restore", "subtask": 0, "checkpoint": 1}"#,
    ))
    .unwrap();
    // The default attempt must fit u32.
    let e = malformed(&with_steps(
        r#"{"op": "start"}, {"op": "writer_restore", "subtask": 0, "checkpoint": null, "attempt": 4294967295},
           {"op": "writer_restore", "subtask": 0, "checkpoint": null}"#,
    ));
    assert_eq!(
        (e.step, e.field.as_deref()),
        (Some(2), Some("attempt")),
        "{e}"
    );
}

#[test]
fn semantic_errors_are_not_malformed() {
    let t = parse(
        r#"{"config": {"parallelism": 0, "commit_user": ""}, "steps": [
            {"op": "start"}, {"op": "event", "subtask": 4000000000, "checkpoint": 1}]}"#,
    )
    .unwrap();
    assert_eq!(t.config.parallelism, 0);
}

#[test]
fn reports_step_and_field() {
    let cases: &[(&str, Option<usize>, Option<&str>)] = &[
        (r#"{"op": "start", "bogus": 1}"#, Some(0), Some("bogus")),
        (
            r#"{"op": "start"}, {"op": "event", "checkpoint": 1}"#,
            Some(1),
            Some("subtask"),
        ),
        (
            r#"{"op": "start"}, {"op": "reset_subtask", "subtask": 0, "checkpoint": "end"}"#,
            Some(1),
            Some("checkpoint"),
        ),
        (
            r#"{"op": "start"}, {"op": "reset_subtask", "subtask": 0}"#,
            Some(1),
            Some("checkpoint"),
        ),
        (
            r#"{"op": "start"}, {"op": "storage_fault", "call": "get", "mode": "fail", "count": 0}"#,
            Some(1),
            Some("count"),
        ),
        (
            r#"{"op": "event", "subtask": 0, "checkpoint": 1}"#,
            Some(0),
            Some("op"),
        ),
        (
            r#"{"op": "start"}, {"op": "close", "instance": "other"}"#,
            Some(1),
            Some("instance"),
        ),
        (
            r#"{"op": "start"}, {"op": "event", "subtask": -1, "checkpoint": 1}"#,
            Some(1),
            Some("subtask"),
        ),
        (
            r#"{"op": "start"}, {"op": "event", "subtask": 0, "checkpoint": 9223372036854775807}"#,
            Some(1),
            Some("checkpoint"),
        ),
        (
            r#"{"op": "start"}, {"op": "event", "subtask": 0, "checkpoint": 1.5}"#,
            Some(1),
            Some("checkpoint"),
        ),
        (
            r#"{"op": "start"}, {"op": "restored", "subtask": 0, "checkpoint": 1, "entries": [{"checkpoint": 1, "attempt": 0}]}"#,
            Some(1),
            Some("entries[0].attempt"),
        ),
        (
            r#"{"op": "start"}, {"op": "restored", "subtask": 0, "checkpoint": "end", "entries": []}"#,
            Some(1),
            Some("checkpoint"),
        ),
        (
            r#"{"op": "failover", "checkpoint": null, "state_hex": "00"}"#,
            Some(0),
            Some("state_hex"),
        ),
        (
            r#"{"op": "failover", "checkpoint": 1, "state_hex": "0g"}"#,
            Some(0),
            Some("state_hex"),
        ),
        (
            r#"{"op": "start", "config": {"parallelism": 4294967296}}"#,
            Some(0),
            Some("config.parallelism"),
        ),
        (
            r#"{"op": "start"}, {"op": "clock", "ms": -1}"#,
            Some(1),
            Some("ms"),
        ),
        (
            r#"{"op": "start"}, {"op": "event", "subtask": 0, "checkpoint": 1, "committables": [1]}"#,
            Some(1),
            Some("committables[0]"),
        ),
        (r#"{"op": "start"}, {"op": "nope"}"#, Some(1), Some("op")),
        (
            r#"{"op": "start"}, {"op": "event", "subtask": 0, "attempt": null, "checkpoint": 1}"#,
            Some(1),
            Some("attempt"),
        ),
    ];
    for (steps, step, field) in cases {
        let e = malformed(&with_steps(steps));
        assert_eq!(
            (e.step, e.field.as_deref()),
            (*step, *field),
            "{steps}: {e}"
        );
        let text = e.to_string();
        if let Some(i) = step {
            assert!(text.contains(&format!("step {i}")), "{text}");
        }
    }
}

#[test]
fn top_level_rules() {
    let e = malformed(r#"{"config": {"parallelism": 1}, "steps": []}"#);
    assert_eq!(e.field.as_deref(), Some("config.commit_user"));
    let e = malformed(r#"{"config": {"parallelism": 1, "commit_user": "u", "x": 1}, "steps": []}"#);
    assert_eq!(e.field.as_deref(), Some("config.x"));
    let e = malformed(&format!("{{{HEAD}, \"steps\": [], \"extra\": true}}"));
    assert_eq!(e.field.as_deref(), Some("extra"));
    let e = malformed(&format!("{{{HEAD}}}"));
    assert_eq!(e.field.as_deref(), Some("steps"));
    let e = malformed(&format!(
        "{{{HEAD}, \"clock_step_ms\": 1.0, \"steps\": []}}"
    ));
    assert_eq!(e.field.as_deref(), Some("clock_step_ms"));
    let e = malformed("[1, 2]");
    assert!(e.to_string().contains("expected a trace"), "{e}");
    let e = malformed(&format!(
        "{{{HEAD}, \"steps\": [{{\"op\": \"start\", \"op\": \"close\"}}]}}"
    ));
    assert!(
        e.to_string().contains("duplicate field \\\"op\\\"")
            || e.to_string().contains("duplicate field"),
        "{e}"
    );
}

#[test]
fn json_syntax_errors_name_line_and_column() {
    let e = malformed("{\n  \"config\": {\n    \"parallelism\": 1,,\n");
    let text = e.to_string();
    assert!(text.contains("line 3"), "{text}");
    assert!(text.contains("column"), "{text}");
    let e = malformed("");
    assert!(e.to_string().contains("line 1"), "{e}");
    let e = malformed(&format!("{{{HEAD}, \"steps\": []}} trailing"));
    assert!(e.to_string().contains("invalid JSON"), "{e}");
}

#[test]
fn state_hex_either_case_and_errors() {
    let t = parse(&with_steps(
        r#"{"op": "failover", "checkpoint": 1, "state_hex": "00ffA1"}"#,
    ))
    .unwrap();
    assert!(matches!(&t.steps[0].op, Op::Failover { state: Some(s), .. } if s == &[0, 255, 0xa1]));
    for bad in ["0", "zz", "é0"] {
        let e = malformed(&with_steps(&format!(
            r#"{{"op": "failover", "checkpoint": 1, "state_hex": "{bad}"}}"#
        )));
        assert_eq!(e.field.as_deref(), Some("state_hex"), "{e}");
        assert!(e.to_string().contains("not valid hex"), "{e}");
    }
}

#[test]
fn objects_must_be_objects() {
    // serde's derived structs would take a list of the fields in order.
    let e = malformed(r#"{"config": [2, "job-1"], "steps": []}"#);
    assert_eq!(e.field.as_deref(), Some("config"), "{e}");
    let e = malformed(&with_steps(
        r#"{"op": "start"}, {"op": "restored", "subtask": 0, "checkpoint": 1, "entries": [[1]]}"#,
    ));
    assert_eq!(
        (e.step, e.field.as_deref()),
        (Some(1), Some("entries[0]")),
        "{e}"
    );
    let e = malformed(&with_steps(r#"{"op": "start"}, 7"#));
    assert_eq!(e.step, Some(1));
    assert!(
        e.to_string().contains("expected a step (an object), got 7"),
        "{e}"
    );
}

#[test]
fn present_optional_fields_must_not_be_null() {
    for step in [
        r#"{"op": "start", "instance": null}"#,
        r#"{"op": "start", "config": null}"#,
        r#"{"op": "failover", "checkpoint": 1, "state_hex": null}"#,
    ] {
        let e = malformed(&with_steps(step));
        assert_eq!(e.step, Some(0), "{step}: {e}");
        assert!(e.field.is_some(), "{step}: {e}");
    }
    // tag_time_retained_ms takes null (no retention).
    let t = parse(&with_steps(
        r#"{"op": "start", "config": {"tag_time_retained_ms": null}}"#,
    ))
    .unwrap();
    assert!(
        matches!(&t.steps[0].op, Op::Start { config } if config.tag_time_retained_ms.is_none())
    );
}

#[test]
fn numbers_are_described_as_written() {
    let e = malformed(&with_steps(
        r#"{"op": "start"}, {"op": "event", "subtask": 0, "checkpoint": 18446744073709551616}"#,
    ));
    assert_eq!(e.field.as_deref(), Some("checkpoint"), "{e}");
    assert!(e.to_string().contains("got 18446744073709551616"), "{e}");
    let e = malformed(&with_steps(
        r#"{"op": "start"}, {"op": "clock", "ms": 2.50e1}"#,
    ));
    assert!(
        e.to_string().contains("the non-integer number 2.50e1"),
        "{e}"
    );
    // -0 is 0.
    let t = parse(&with_steps(r#"{"op": "start"}, {"op": "clock", "ms": -0}"#)).unwrap();
    assert_eq!(t.steps[1].op, Op::Clock { ms: 0 });
}

#[test]
fn written_traces_read_back() {
    let text = with_steps(
        r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1, "committables": ["a\n\"b"]},
           {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_restore", "subtask": 0, "checkpoint": 1},
           {"op": "failover", "checkpoint": 2, "finished_subtasks": [1], "state_hex": "0aff", "instance": "b"},
           {"op": "storage_fault", "call": "list", "mode": "ambiguous", "count": 3},
           {"op": "start", "config": {"recovery": "continue", "tag_time_retained_ms": 5}, "instance": "c"}"#,
    );
    let trace = parse(&text).unwrap();
    let written = to_json(&trace);
    assert_eq!(parse(&written).unwrap(), trace);
    assert!(
        written.contains(r#"{"op": "failover", "instance": "b", "checkpoint": 2, "finished_subtasks": [1], "state_hex": "0aff"}"#),
        "{written}"
    );
}
