//! The CLI on malformed traces: exit code 2, nothing on stdout, and a message
//! on stderr that names the step and the field.

mod common;

use std::path::Path;
use std::process::Command;

use common::TempFile;

const HEAD: &str = r#""config": {"parallelism": 2, "commit_user": "job-1"}"#;

fn temp_file(name: &str, text: &str) -> TempFile {
    common::temp_file("malformed", name, text.as_bytes())
}

/// Runs `sinkcoord replay [--native] FILE`; returns (exit code, stdout, stderr).
fn replay(path: &Path, native: bool) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sinkcoord"));
    cmd.arg("replay");
    if native {
        cmd.arg("--native");
    }
    let out = cmd.arg(path).output().expect("run sinkcoord");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn steps(steps: &str) -> String {
    format!("{{{HEAD}, \"steps\": [{steps}]}}")
}

#[test]
fn malformed_traces_exit_2_with_located_messages() {
    // (file name, document, substrings stderr must contain)
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "bad-json",
            "{\n  \"config\": {\"parallelism\": 2,,\n".into(),
            vec!["invalid JSON", "line 2", "column"],
        ),
        (
            "unknown-field",
            steps(r#"{"op": "start"}, {"op": "close", "bogus": 1}"#),
            vec!["step 1", "\"bogus\""],
        ),
        (
            "unknown-config-field",
            steps(r#"{"op": "start", "config": {"paralelism": 3}}"#),
            vec!["step 0", "config.paralelism"],
        ),
        (
            "missing-field",
            steps(r#"{"op": "start"}, {"op": "event", "checkpoint": 1}"#),
            vec!["step 1", "\"subtask\""],
        ),
        (
            "end-in-reset",
            steps(r#"{"op": "start"}, {"op": "reset_subtask", "subtask": 0, "checkpoint": "end"}"#),
            vec!["step 1", "\"checkpoint\""],
        ),
        (
            "count-0",
            steps(
                r#"{"op": "start"}, {"op": "storage_fault", "call": "put", "mode": "fail", "count": 0}"#,
            ),
            vec!["step 1", "\"count\""],
        ),
        (
            "first-not-start",
            steps(r#"{"op": "event", "subtask": 0, "checkpoint": 1}"#),
            vec!["step 0", "first step"],
        ),
        (
            "no-instance",
            steps(r#"{"op": "start"}, {"op": "close", "instance": "b"}"#),
            vec!["step 1", "\"instance\"", "\"b\""],
        ),
        (
            "failover-without-bytes",
            steps(
                r#"{"op": "start"}, {"op": "checkpoint", "checkpoint": 1}, {"op": "failover", "checkpoint": 2}"#,
            ),
            vec!["step 2", "\"checkpoint\"", "no state bytes"],
        ),
        (
            "failover-other-instance",
            steps(
                r#"{"op": "start"}, {"op": "checkpoint", "checkpoint": 1}, {"op": "failover", "checkpoint": 1, "instance": "b"}"#,
            ),
            vec!["step 2", "no state bytes"],
        ),
        (
            "subtask-too-big",
            steps(r#"{"op": "start"}, {"op": "event", "subtask": 4294967296, "checkpoint": 1}"#),
            vec!["step 1", "\"subtask\""],
        ),
        (
            "state-hex-null",
            steps(r#"{"op": "failover", "checkpoint": null, "state_hex": "00"}"#),
            vec!["step 0", "\"state_hex\""],
        ),
        (
            "missing-config",
            r#"{"steps": []}"#.into(),
            vec!["\"config\""],
        ),
        // Writer steps (TRACE-FORMAT "Writer steps").
        (
            "write-end-checkpoint",
            steps(r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": "end"}"#),
            vec!["step 1", "\"checkpoint\"", "\"end\" is not allowed"],
        ),
        (
            "write-unknown-field",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1, "attempt": 1}"#,
            ),
            vec!["step 1", "\"attempt\"", "unknown field"],
        ),
        (
            "write-missing-checkpoint",
            steps(r#"{"op": "start"}, {"op": "write", "subtask": 0}"#),
            vec!["step 1", "\"checkpoint\"", "missing"],
        ),
        (
            "write-send-not-bool",
            steps(r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1, "send": 1}"#),
            vec!["step 1", "\"send\""],
        ),
        (
            "write-no-instance",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1, "instance": "b"}"#,
            ),
            vec!["step 1", "\"instance\"", "\"b\""],
        ),
        (
            "end-input-checkpoint-field",
            steps(r#"{"op": "start"}, {"op": "end_input", "subtask": 0, "checkpoint": 1}"#),
            vec!["step 1", "\"checkpoint\"", "unknown field"],
        ),
        (
            "end-input-savepoint-field",
            steps(r#"{"op": "start"}, {"op": "end_input", "subtask": 0, "savepoint": true}"#),
            vec!["step 1", "\"savepoint\"", "unknown field"],
        ),
        (
            "send-count-0",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1, "send": false}, {"op": "send", "subtask": 0, "count": 0}"#,
            ),
            vec!["step 2", "\"count\""],
        ),
        (
            "send-missing-subtask",
            steps(r#"{"op": "start"}, {"op": "send"}"#),
            vec!["step 1", "\"subtask\"", "missing"],
        ),
        (
            // v1's writer_complete is not part of TRACE-FORMAT v2.
            "writer-complete-is-unknown",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_complete", "checkpoint": 1}"#,
            ),
            vec!["step 2", "\"op\"", "unknown op \"writer_complete\""],
        ),
        (
            "writer-committed-bad-checkpoint",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_committed", "checkpoint": "END"}"#,
            ),
            vec!["step 2", "\"checkpoint\""],
        ),
        (
            "writer-committed-null-checkpoint",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_committed", "checkpoint": null}"#,
            ),
            vec!["step 2", "\"checkpoint\""],
        ),
        (
            "writer-committed-unknown-field",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_committed", "send": true}"#,
            ),
            vec!["step 2", "\"send\"", "unknown field"],
        ),
        (
            "writer-committed-no-writer",
            steps(r#"{"op": "start"}, {"op": "writer_committed"}"#),
            vec!["step 1", "\"subtask\"", "no writer"],
        ),
        (
            "writer-committed-no-instance",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_committed", "instance": "b"}"#,
            ),
            vec!["step 2", "\"instance\"", "\"b\""],
        ),
        (
            "writer-abort-unknown-field",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_abort", "checkpoint": 1, "attempt": 0}"#,
            ),
            vec!["step 2", "\"attempt\"", "unknown field"],
        ),
        (
            "writer-snapshot-no-writer",
            steps(r#"{"op": "start"}, {"op": "writer_snapshot", "checkpoint": 1}"#),
            vec!["step 1", "\"subtask\"", "no writer"],
        ),
        (
            "writer-committed-unknown-writer",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_committed", "subtask": 1, "checkpoint": 1}"#,
            ),
            vec!["step 2", "\"subtask\"", "no writer 1"],
        ),
        (
            "writer-snapshot-other-instance",
            steps(
                r#"{"op": "start"}, {"op": "start", "instance": "b"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_snapshot", "checkpoint": 1, "instance": "b"}"#,
            ),
            vec!["step 3", "\"subtask\"", "\"b\""],
        ),
        (
            "writer-restore-without-bytes",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_restore", "subtask": 0, "checkpoint": 2}"#,
            ),
            vec!["step 3", "\"checkpoint\"", "no writer state bytes"],
        ),
        (
            "writer-restore-other-subtask-bytes",
            steps(
                r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_restore", "subtask": 1, "checkpoint": 1}"#,
            ),
            vec!["step 3", "\"checkpoint\"", "no writer state bytes"],
        ),
        (
            "writer-restore-other-instance-bytes",
            steps(
                r#"{"op": "start"}, {"op": "start", "instance": "b"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_restore", "subtask": 0, "checkpoint": 1, "instance": "b"}"#,
            ),
            vec!["step 4", "\"checkpoint\"", "no writer state bytes"],
        ),
        (
            "writer-restore-missing-checkpoint",
            steps(r#"{"op": "start"}, {"op": "writer_restore", "subtask": 0}"#),
            vec!["step 1", "\"checkpoint\"", "missing"],
        ),
        (
            "writer-restore-end",
            steps(
                r#"{"op": "start"}, {"op": "writer_restore", "subtask": 0, "checkpoint": "end"}"#,
            ),
            vec!["step 1", "\"checkpoint\""],
        ),
        (
            "writer-restore-attempt-overflow",
            steps(
                r#"{"op": "start"}, {"op": "writer_restore", "subtask": 0, "checkpoint": null, "attempt": 4294967295}, {"op": "writer_restore", "subtask": 0, "checkpoint": null}"#,
            ),
            vec!["step 2", "\"attempt\""],
        ),
        (
            "writer-restore-first-step",
            steps(r#"{"op": "writer_restore", "subtask": 0, "checkpoint": null}"#),
            vec!["step 0", "first step"],
        ),
    ];
    for (name, text, needles) in &cases {
        let path = temp_file(&format!("{name}.trace.json"), text);
        for native in [false, true] {
            let (code, stdout, stderr) = replay(&path, native);
            let which = if native { "native" } else { "component" };
            assert_eq!(
                code,
                Some(2),
                "{name} ({which}): exit code; stderr: {stderr}"
            );
            assert!(
                stdout.is_empty(),
                "{name} ({which}): stdout must be empty, got {stdout:?}"
            );
            for needle in needles {
                assert!(
                    stderr.contains(needle),
                    "{name} ({which}): stderr {stderr:?} lacks {needle:?}"
                );
            }
        }
    }
}

#[test]
fn semantic_errors_are_results_not_malformed() {
    // Parallelism 0 and an out-of-range subtask fit their WIT types: the
    // coordinator reports them, the replay succeeds.
    let text = format!(
        "{{\"config\": {{\"parallelism\": 0, \"commit_user\": \"\"}}, \"steps\": [{}]}}",
        r#"{"op": "start"}, {"op": "event", "subtask": 7, "checkpoint": 1}"#
    );
    let path = temp_file("semantic.trace.json", &text);
    let (code, native_out, stderr) = replay(&path, true);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(
        native_out.contains("\"kind\": \"invalid-config\""),
        "{native_out}"
    );
    let (code, component_out, _) = replay(&path, false);
    assert_eq!(code, Some(0));
    assert_eq!(native_out, component_out);
}

#[test]
fn writer_errors_are_results_not_malformed() {
    // A writer helper error (a checkpoint that does not increase) and a
    // writer subtask out of the coordinator's range are step errors.
    let text = format!(
        "{{\"config\": {{\"parallelism\": 1, \"commit_user\": \"job-1\"}}, \"steps\": [{}]}}",
        r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 2}, {"op": "write", "subtask": 0, "checkpoint": 1},
           {"op": "write", "subtask": 5, "checkpoint": 1}"#
    );
    let path = temp_file("writer-semantic.trace.json", &text);
    let (code, native_out, stderr) = replay(&path, true);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(
        native_out.contains("checkpoints must increase"),
        "{native_out}"
    );
    assert!(native_out.contains("\"state\": \"failed\""), "{native_out}");
    let (code, component_out, _) = replay(&path, false);
    assert_eq!(code, Some(0));
    assert_eq!(native_out, component_out);
}

#[test]
fn missing_file_and_bad_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .args(["replay", "/nonexistent/x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .args(["replay"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}
