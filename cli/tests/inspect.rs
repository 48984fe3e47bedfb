//! `sinkcoord inspect` (issue 11): a damaged table's gaps, corrupt snapshots
//! and links are named and the rest is listed; a healthy table written
//! through the component is shown as the library reads it.

use std::os::unix::fs::symlink;
use std::path::Path;

use sink_coordinator::{table, Config, Entry, Lifecycle};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::HostEnv;
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_host::{ComponentCoordinator, ComponentTable, Runtime};
use sink_coordinator_testkit::render;

mod common;
use common::{sinkcoord_on, table_with_snapshots, Scratch};

const SECRET: &[u8] = b"SECRET-BYTES-OUTSIDE-THE-TABLE\n";

/// A fresh directory (removed on drop) holding `table/` and `outside/`.
fn scratch(name: &str) -> Scratch {
    Scratch::with_table("inspect", name)
}

fn entry(checkpoint: u64, committables: &[&str]) -> Entry {
    Entry {
        checkpoint,
        committables: committables.iter().map(|c| c.as_bytes().to_vec()).collect(),
        watermark: None,
        savepoint: false,
    }
}

fn inspect(dir: &Path, json: bool) -> (Option<i32>, String, String) {
    inspect_with(dir, if json { &["--json"] } else { &[] })
}

#[test]
fn inspect_reports_a_gap_and_lists_the_rest() {
    let s = scratch("inspect-gap");
    table_with_snapshots(&s.table(), 42);
    std::fs::remove_file(s.table().join(table::snapshot_key(1))).unwrap();
    let (code, out, err) = inspect(&s.table(), false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("41 snapshot(s)"), "{out}");
    assert!(out.contains("snapshot 42:"), "{out}");
    assert!(out.contains("snapshot 1 is missing"), "{out}");
    assert!(err.contains("1 problem"), "{err}");

    let (code, out, _) = inspect(&s.table(), true);
    assert_eq!(code, Some(1));
    assert!(out.contains("\"problems\""), "{out}");
    assert!(out.contains("snapshot 1 is missing"), "{out}");
}

#[test]
fn inspect_reports_a_corrupt_snapshot_by_name() {
    let s = scratch("inspect-corrupt");
    table_with_snapshots(&s.table(), 5);
    let key = table::snapshot_key(3);
    std::fs::write(s.table().join(&key), b"\x01garbage").unwrap();
    let (code, out, err) = inspect(&s.table(), false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("4 snapshot(s)"), "{out}");
    for id in [1, 2, 4, 5] {
        assert!(out.contains(&format!("snapshot {id}:")), "{out}");
    }
    assert!(out.contains(&key), "{out}");
    assert!(out.contains("corrupt"), "{out}");
}

#[test]
fn inspect_names_a_link_and_lists_the_rest() {
    let s = scratch("inspect-link");
    table_with_snapshots(&s.table(), 3);
    let target = s.outside().join("hostname");
    std::fs::write(&target, SECRET).unwrap();
    let key = table::snapshot_key(2);
    std::fs::remove_file(s.table().join(&key)).unwrap();
    symlink(&target, s.table().join(&key)).unwrap();
    let (code, out, err) = inspect(&s.table(), false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("snapshot 1:") && out.contains("snapshot 3:"),
        "{out}"
    );
    assert!(out.contains(&key) && out.contains("symbolic link"), "{out}");
    assert!(!out.contains("SECRET") && !err.contains("SECRET"));
}

#[test]
fn inspect_of_a_healthy_table_exits_0() {
    let s = scratch("inspect-ok");
    table_with_snapshots(&s.table(), 3);
    let (code, out, err) = inspect(&s.table(), false);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("3 snapshot(s)"), "{out}");
    assert!(!out.contains("problem"), "{out}");
    let (code, out, _) = inspect(&s.table(), true);
    assert_eq!(code, Some(0));
    assert!(!out.contains("problems"), "{out}");
}

/// A table committed through the component: `inspect` (through the
/// component, and `--json` in the replay layout) shows what the library reads.
#[test]
fn inspect_shows_a_table_written_through_the_component() {
    let s = scratch("component");
    let table_dir = s.table();
    let runtime = Runtime::embedded().unwrap();
    let env = HostEnv::new(
        LocalDirStorage::open(&table_dir).unwrap(),
        ManualClock::new(1000, 0),
    );
    let mut coordinator =
        ComponentCoordinator::new(&runtime, env, &Config::new(2, "job-1"), None).unwrap();
    coordinator.start().unwrap();
    coordinator.event(0, 0, entry(1, &["a0"])).unwrap();
    coordinator.event(1, 0, entry(1, &["a1"])).unwrap();
    coordinator.checkpoint_complete(1).unwrap();
    assert_eq!(coordinator.close().unwrap().state, Lifecycle::Closed);
    let mut table = ComponentTable::new(
        &runtime,
        LocalDirStorage::open_existing(&table_dir).unwrap(),
    )
    .unwrap();
    let snapshots = table.list_snapshots().unwrap();
    assert_eq!(snapshots.len(), 1);
    let dir = s.0.clone();

    // The CLI shows the same table.
    let tags = table.list_tags().unwrap();
    let (code, out, err) = inspect(&table_dir, true);
    assert_eq!(code, Some(0), "{err}");
    // The snapshots and tags as a replay result lays them out (the
    // document has more keys since issue 25: tests/issue25_inspect.rs).
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let replay: serde_json::Value =
        serde_json::from_str(&render::render_table(&snapshots, &tags)).unwrap();
    assert_eq!(doc["snapshots"], replay["snapshots"]);
    assert_eq!(doc["tags"], replay["tags"]);
    let (code, out, _) = inspect(&table_dir, false);
    assert_eq!(code, Some(0));
    assert!(out.contains("1 snapshot(s)"));
    let (code, _, _) = inspect(&dir.join("missing"), false);
    assert_eq!(code, Some(1));
}

fn inspect_with(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["inspect"];
    all.extend_from_slice(args);
    sinkcoord_on(&all, dir)
}

#[test]
fn inspect_prints_rfc3339_and_filters_by_limit_and_since() {
    let s = scratch("inspect-filters");
    table_with_snapshots(&s.table(), 5);
    let (code, out, err) = inspect_with(&s.table(), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("5 snapshot(s)"), "{out}");
    // The step clock starts at 1 ms after the epoch.
    assert!(out.contains(" ms (1970-01-01T00:00:00.0"), "{out}");
    let (code, out, err) = inspect_with(&s.table(), &["--limit", "2"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("2 snapshot(s)\n  snapshot 4:"), "{out}");
    let (_, json, _) = inspect_with(&s.table(), &["--json", "--limit", "2"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["snapshots"].as_array().map(Vec::len), Some(2), "{json}");
    let (code, out, _) = inspect_with(&s.table(), &["--since", "2100-01-01T00:00:00Z"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("0 snapshot(s)"), "{out}");
    let (_, out, _) = inspect_with(&s.table(), &["--since", "0"]);
    assert!(out.contains("5 snapshot(s)"), "{out}");
    let (code, _, err) = inspect_with(&s.table(), &["--since", "yesterday"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, _) = inspect_with(&s.table(), &["--limit", "0"]);
    assert_eq!(code, Some(2));
}
