//! Issue 25, `sinkcoord inspect` for operators: tags in the order of their
//! numbers, a summary per commit user (last identifier, its snapshot and
//! time, the lag behind the latest snapshot), `--timeline`, the JSON
//! document's shape, and no coordinator size limits in `inspect --help`.

use std::path::Path;

use serde_json::Value;
use sink_coordinator::{Snapshot, Tag, END};
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_testkit::render;

mod common;
use common::job::{sinkcoord, Job};
use common::{assert_has, path, strs, Scratch};

/// Savepoints 1, 2, 12 and 1000001 of one job, at times 100, 200, ...
fn numbered_savepoints(dir: &Path) {
    let mut job = Job::new(dir, "job", None);
    for (i, cp) in [1u64, 2, 12, 1_000_001].into_iter().enumerate() {
        job.commit(cp, true, 100 * (i as u64 + 1));
    }
}

#[test]
fn tags_are_listed_in_the_order_of_their_numbers() {
    let s = Scratch::new("issue25-inspect", "order");
    numbered_savepoints(&s.0);
    let want = [
        "savepoint-1",
        "savepoint-2",
        "savepoint-12",
        "savepoint-1000001",
    ];
    for native in [false, true] {
        let mut args = vec!["inspect", path(&s.0)];
        if native {
            args.push("--native");
        }
        let (code, out, err) = sinkcoord(&args);
        assert_eq!(code, Some(0), "{out}{err}");
        let at: Vec<usize> = want
            .iter()
            .map(|t| out.find(&format!("tag \"{t}\"")).unwrap_or(usize::MAX))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{out}");
        args.push("--json");
        let (_, out, _) = sinkcoord(&args);
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(strs(&doc["tags"], "name"), want);
    }
}

/// Two commit users: "a" commits 1, 2, 3 (a savepoint) at 1000, 2000,
/// 3000; "b" commits 1 at 1500 and its END at 2500. Snapshots: a1 b1 a2
/// bEND a3.
fn two_users(dir: &Path) {
    let mut a = Job::new(dir, "a", None);
    let mut b = Job::new(dir, "b", None);
    a.commit(1, false, 1000);
    b.commit(1, false, 1500);
    a.commit(2, false, 2000);
    b.commit(END, false, 2500);
    a.commit(3, true, 3000);
}

#[test]
fn the_summary_names_each_users_last_commit_and_lag() {
    let s = Scratch::new("issue25-inspect", "summary");
    two_users(&s.0);
    let (code, out, err) = sinkcoord(&["inspect", path(&s.0)]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_has(
        &out,
        "2 commit user(s), as of the latest snapshot 5 (1970-01-01T00:00:03Z)\n",
    );
    assert_has(&out, "  commit user \"a\": last identifier 3 in snapshot 5, time 3000 ms (1970-01-01T00:00:03Z); lag 0 snapshot(s), 0 ms\n");
    assert_has(&out, "  commit user \"b\": last identifier END in snapshot 4, time 2500 ms (1970-01-01T00:00:02.5Z); lag 1 snapshot(s), 500 ms\n");
    // Line 2 is still the snapshot count (tests/s3.rs reads it).
    assert_eq!(out.lines().nth(1), Some("5 snapshot(s)"), "{out}");

    // The summary is the table's, whatever --limit and --since show; a
    // mark outside the snapshots read still has its time.
    for args in [
        &["--limit", "1"][..],
        &["--since", "3000"],
        &["--native", "--limit", "1"],
    ] {
        let mut all = vec!["inspect", "--json", path(&s.0)];
        all.extend_from_slice(args);
        let (code, out, err) = sinkcoord(&all);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["snapshots"].as_array().unwrap().len(), 1, "{args:?}");
        assert_eq!(
            doc["users"],
            serde_json::json!([
                {"commit_user": "a", "identifier": 3, "snapshot_id": 5, "time_ms": 3000, "lag_snapshots": 0, "lag_ms": 0},
                {"commit_user": "b", "identifier": "end", "snapshot_id": 4, "time_ms": 2500, "lag_snapshots": 1, "lag_ms": 500}
            ]),
            "{args:?}"
        );
        assert_eq!(
            doc["latest"],
            serde_json::json!({"snapshot_id": 5, "time_ms": 3000})
        );
    }
}

#[test]
fn an_empty_table_has_no_users_and_a_damaged_latest_snapshot_no_summary() {
    let s = Scratch::new("issue25-inspect", "empty");
    let (code, out, err) = sinkcoord(&["inspect", path(&s.0)]);
    assert_eq!(code, Some(0), "{err}");
    assert_has(&out, "0 commit user(s)\n");
    let (_, out, _) = sinkcoord(&["inspect", "--json", path(&s.0)]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["users"], serde_json::json!([]));
    assert_eq!(doc["latest"], Value::Null);

    two_users(&s.0);
    let key = sink_coordinator::table::snapshot_key(5);
    std::fs::write(s.0.join(&key), b"\x01garbage").unwrap();
    let (code, out, _) = sinkcoord(&["inspect", "--json", path(&s.0)]);
    assert_eq!(code, Some(1), "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["users"], serde_json::json!([]), "{out}");
    assert!(doc["problems"][0].as_str().unwrap().contains(&key), "{out}");
}

/// The JSON document: `snapshots` and `tags` as a replay result lays them
/// out (tags in number order), then `users` and `latest`; `timeline` only
/// with --timeline, `problems` only when there are any.
#[test]
fn the_json_document_keeps_the_replay_layout() {
    let s = Scratch::new("issue25-inspect", "json");
    two_users(&s.0);
    let mut st = LocalDirStorage::open_existing(&s.0).unwrap();
    let snapshots: Vec<Snapshot> = sink_coordinator::table::list_snapshots(&mut st).unwrap();
    let tags: Vec<Tag> = sink_coordinator::table::list_tags(&mut st).unwrap();
    let replay: Value = serde_json::from_str(&render::render_table(&snapshots, &tags)).unwrap();
    let (code, out, err) = sinkcoord(&["inspect", "--json", path(&s.0)]);
    assert_eq!(code, Some(0), "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["snapshots"], replay["snapshots"]);
    assert_eq!(doc["tags"], replay["tags"]);
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut sorted_want = vec!["snapshots", "tags", "users", "latest"];
    sorted_want.sort();
    assert_eq!(keys, sorted_want, "{out}");
    // One top-level key per line, in this order.
    let top: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  \""))
        .map(|l| l.trim_start().split('"').nth(1).unwrap())
        .collect();
    assert_eq!(top, ["snapshots", "tags", "users", "latest"], "{out}");
    let (_, out, _) = sinkcoord(&["inspect", "--json", "--timeline", path(&s.0)]);
    let top: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  \""))
        .map(|l| l.trim_start().split('"').nth(1).unwrap())
        .collect();
    assert_eq!(
        top,
        ["snapshots", "tags", "users", "latest", "timeline"],
        "{out}"
    );
}

#[test]
fn the_timeline_shows_commits_and_tags_in_order() {
    let s = Scratch::new("issue25-inspect", "timeline");
    two_users(&s.0);
    let (code, out, err) = sinkcoord(&["inspect", "--timeline", path(&s.0)]);
    assert_eq!(code, Some(0), "{err}");
    let want = [
        "timeline of table ",
        "  1970-01-01T00:00:01Z  snapshot 1  commit user \"a\"  identifier 1",
        "  1970-01-01T00:00:01.5Z  snapshot 2  commit user \"b\"  identifier 1",
        "  1970-01-01T00:00:02Z  snapshot 3  commit user \"a\"  identifier 2",
        "  1970-01-01T00:00:02.5Z  snapshot 4  commit user \"b\"  identifier END",
        "  1970-01-01T00:00:03Z  snapshot 5  commit user \"a\"  identifier 3  tags \"savepoint-3\"",
        "  1970-01-01T00:00:03Z  tag \"savepoint-3\" created  snapshot 5  identifier 3  expires never",
    ];
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), want.len(), "{out}");
    assert!(lines[0].starts_with(want[0]) && lines[0].contains("failovers are not recorded"));
    assert_eq!(&lines[1..], &want[1..], "{out}");
    // With --since the timeline is cut the same way as the listing; the
    // tags pointing at a snapshot are still named.
    let (_, out, _) = sinkcoord(&["inspect", "--timeline", "--since", "2500", path(&s.0)]);
    assert_eq!(out.lines().count(), 4, "{out}");
    let (_, out, _) = sinkcoord(&["inspect", "--json", "--timeline", path(&s.0)]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let timeline = doc["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 6);
    assert_eq!(
        timeline[3],
        serde_json::json!({"kind": "snapshot", "time_ms": 2500, "snapshot_id": 4, "commit_user": "b", "identifier": "end", "tags": []})
    );
    assert_eq!(
        timeline[5],
        serde_json::json!({"kind": "tag", "time_ms": 3000, "name": "savepoint-3", "snapshot_id": 5, "identifier": 3, "expire_time_ms": null})
    );
    let (code, help, _) = sinkcoord(&["inspect", "--help"]);
    assert_eq!(code, Some(0));
    assert!(
        help.contains("--timeline") && help.contains("Failovers are not in it"),
        "{help}"
    );
    // A damaged table: the timeline of what can be read, then its problems.
    std::fs::remove_file(s.0.join(sink_coordinator::table::snapshot_key(2))).unwrap();
    let (code, out, err) = sinkcoord(&["inspect", "--timeline", path(&s.0)]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(!out.contains("Z  snapshot 2  "), "{out}");
    assert!(
        out.ends_with("1 problem(s)\n  snapshot 2 is missing (a gap in the snapshot ids)\n"),
        "{out}"
    );
}

/// A Flink connector table: its root is refused with the directory to give
/// instead, and that directory (`log/`) is summarized like any table.
#[test]
fn a_flink_table_is_inspected_through_its_log() {
    let s = Scratch::new("issue25-inspect", "flink");
    let log = s.0.join("log");
    std::fs::create_dir_all(s.0.join("data")).unwrap();
    two_users(&log);
    let (code, out, _) = sinkcoord(&["inspect", "--timeline", path(&s.0)]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("Flink connector") && out.contains(path(&log)),
        "{out}"
    );
    let (code, out, err) = sinkcoord(&["inspect", path(&log)]);
    assert_eq!(code, Some(0), "{err}");
    assert_has(&out, "commit user \"b\": last identifier END");
    let (code, out, _) = sinkcoord(&["inspect", "--timeline", path(&log)]);
    assert_eq!(code, Some(0));
    assert_has(&out, "tag \"savepoint-3\" created");
}

/// `inspect` reads a table: the coordinator's size limits, which only a
/// coordinator sets, are not among its options; the limits of the
/// component's calls still are (they bound the instance that decodes).
#[test]
fn inspect_takes_no_size_limits() {
    let (_, help, _) = sinkcoord(&["inspect", "--help"]);
    for flag in [
        "--max-committable-bytes",
        "--max-event-bytes",
        "--max-snapshot-bytes",
    ] {
        // Named as an option (`--flag <BYTES>`), not in another's text.
        assert!(!help.contains(&format!("{flag} <")), "{flag}: {help}");
        let (code, _, err) = sinkcoord(&["inspect", flag, "1K", "no-such-table"]);
        assert_eq!(code, Some(2), "{flag}: {err}");
        assert_has(&err, "unexpected argument");
    }
    for flag in ["--fuel", "--max-memory", "--max-hostcall-bytes"] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
    let (_, help, _) = sinkcoord(&["replay", "--help"]);
    for flag in [
        "--max-committable-bytes",
        "--max-snapshot-bytes",
        "--fuel",
        "--max-memory",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
    // The runtime limits are still accepted by inspect.
    let s = Scratch::new("issue25-inspect", "fuel");
    two_users(&s.0);
    let (code, out, _) = sinkcoord(&["inspect", "--fuel", "1000000", path(&s.0)]);
    assert_eq!(code, Some(0), "{out}");
}
