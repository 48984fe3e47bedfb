//! `sinkcoord inspect` (issue 11): a damaged table's gaps, corrupt snapshots
//! and links are named and the rest is listed; a healthy table written
//! through the component is shown as the library reads it.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use sink_coordinator::{table, Config, Coordinator, Entry, Lifecycle, StepClock};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::HostEnv;
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_host::{ComponentCoordinator, ComponentTable, Runtime};
use sink_coordinator_testkit::render;

const SECRET: &[u8] = b"SECRET-BYTES-OUTSIDE-THE-TABLE\n";

/// A fresh directory (removed on drop) holding `table/` and `outside/`.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("sinkcoord-inspect-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("table")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        Scratch(dir)
    }
    fn table(&self) -> PathBuf {
        self.0.join("table")
    }
    fn outside(&self) -> PathBuf {
        self.0.join("outside")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sinkcoord"));
    cmd.arg("inspect");
    if json {
        cmd.arg("--json");
    }
    let out = cmd.arg(dir).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A table with `n` snapshots of commit user "job", made by the native core.
fn table_with_snapshots(dir: &Path, n: u64) {
    let st = LocalDirStorage::open(dir).unwrap();
    let mut env = HostEnv::new(st, StepClock { next: 1, step: 1 });
    let mut c = Coordinator::new(Config::new(1, "job"), None);
    c.start(&mut env).unwrap();
    for cp in 1..=n {
        c.event(
            &mut env,
            0,
            0,
            Entry {
                checkpoint: cp,
                committables: vec![format!("c{cp}").into_bytes()].into(),
                watermark: None,
                savepoint: false,
            },
        )
        .unwrap();
        c.checkpoint(&mut env, cp).unwrap();
        c.checkpoint_complete(&mut env, cp).unwrap();
    }
}

#[test]
fn inspect_reports_a_gap_and_lists_the_rest() {
    let s = Scratch::new("inspect-gap");
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
    let s = Scratch::new("inspect-corrupt");
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
    let s = Scratch::new("inspect-link");
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
    let s = Scratch::new("inspect-ok");
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
    let s = Scratch::new("component");
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
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .arg("inspect")
        .arg(&table_dir)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The snapshots and tags as a replay result lays them out (the
    // document has more keys since issue 25: tests/issue25_inspect.rs).
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let replay: serde_json::Value =
        serde_json::from_str(&render::render_table(&snapshots, &tags)).unwrap();
    assert_eq!(doc["snapshots"], replay["snapshots"]);
    assert_eq!(doc["tags"], replay["tags"]);
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .arg("inspect")
        .arg(&table_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 snapshot(s)"));
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .arg("inspect")
        .arg(dir.join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

fn inspect_with(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .arg("inspect")
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn inspect_prints_rfc3339_and_filters_by_limit_and_since() {
    let s = Scratch::new("inspect-filters");
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
