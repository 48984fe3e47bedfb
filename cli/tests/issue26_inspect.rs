//! Issue 26, `sinkcoord inspect`: a FIFO, socket, device or directory at a
//! key is named as what it is (the storage refuses it, so commits fail on
//! it), never "missing" or "0 snapshots, exit 0"; a directory laid out
//! otherwise (the Flink connector's table, its log under `log/`) is named
//! too, and the command exits 1.

use std::path::Path;
use std::process::Command;

use sink_coordinator::table;

mod common;
use common::{assert_has, sinkcoord_on, table_with_snapshots, Scratch};

fn inspect(dir: &Path, native: bool) -> (Option<i32>, String, String) {
    let args: &[&str] = if native {
        &["inspect", "--native"]
    } else {
        &["inspect"]
    };
    sinkcoord_on(args, dir)
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Each special file in place of snapshot 2 of 3, and in place of the only
/// snapshot: named by key and kind, exit 1, and never called missing.
#[test]
fn a_special_file_at_a_snapshot_key_is_named() {
    type Plant = fn(&Path);
    let mut kinds: Vec<(&str, Plant)> = vec![
        ("a FIFO", |p| mkfifo(p)),
        ("a directory", |p| std::fs::create_dir(p).unwrap()),
        ("a socket", |p| {
            // The listener is closed at once; the socket file stays.
            drop(std::os::unix::net::UnixListener::bind(p).unwrap())
        }),
    ];
    // A device needs privileges (mknod): checked where the test may make one.
    let probe = std::env::temp_dir().join(format!("sinkcoord-issue26-dev-{}", std::process::id()));
    let made = Command::new("mknod")
        .arg(&probe)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    let _ = std::fs::remove_file(&probe);
    if made {
        kinds.push(("a device", |p| {
            assert!(Command::new("mknod")
                .arg(p)
                .args(["c", "1", "3"])
                .status()
                .unwrap()
                .success())
        }));
    }
    for (kind, plant) in kinds {
        for (snapshots, replaced) in [(3u64, 2u64), (1, 1)] {
            let s = Scratch::new("issue26-inspect", "special");
            let t = s.0.join("table");
            table_with_snapshots(&t, snapshots);
            let key = table::snapshot_key(replaced);
            std::fs::remove_file(t.join(&key)).unwrap();
            plant(&t.join(&key));
            for native in [false, true] {
                let (code, out, err) = inspect(&t, native);
                let case = format!("{kind} at {key} of {snapshots} (native {native})");
                // Before: exit 1 with "snapshot 2 is missing", or for the
                // only snapshot "0 snapshot(s)" and exit 0.
                assert_eq!(code, Some(1), "{case}: {out}{err}");
                assert!(
                    out.contains(&format!("\"{key}\": {kind} at a key")),
                    "{case}: {out}"
                );
                assert!(!out.contains("missing"), "{case}: {out}");
                assert!(
                    out.contains(&format!("{} snapshot(s)", snapshots - 1)),
                    "{case}: {out}"
                );
            }
        }
    }
}

#[test]
fn special_files_at_tag_and_hint_keys_are_named() {
    let s = Scratch::new("issue26-inspect", "tag-hint");
    let t = s.0.join("table");
    table_with_snapshots(&t, 2);
    std::fs::create_dir_all(t.join("tag")).unwrap();
    mkfifo(&t.join("tag/savepoint-7"));
    let hint = t.join(table::LATEST_HINT);
    let _ = std::fs::remove_file(&hint);
    std::fs::create_dir_all(&hint).unwrap();
    let (code, out, err) = inspect(&t, false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_has(&out, "\"tag/savepoint-7\": a FIFO at a key");
    assert_has(&out, "\"hint/latest-snapshot\": a directory at a key");
    assert_has(&out, "2 snapshot(s)");
}

#[test]
fn a_flink_connector_table_is_not_called_empty() {
    let s = Scratch::new("issue26-inspect", "flink");
    let t = s.0.join("table");
    // The connector's layout: the component's log under log/, the records
    // under data/.
    table_with_snapshots(&t.join("log"), 2);
    std::fs::create_dir_all(t.join("data")).unwrap();
    std::fs::write(t.join("data/part-0"), b"records").unwrap();
    // Before: "0 snapshot(s)", exit 0.
    let (code, out, err) = inspect(&t, false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("log/snapshot/ exists") && out.contains("Flink connector"),
        "{out}"
    );
    assert_has(&out, &t.join("log").display().to_string());
    // Its log itself is a table.
    let (code, out, err) = inspect(&t.join("log"), false);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_has(&out, "2 snapshot(s)");
}

#[test]
fn foreign_entries_at_the_top_are_named() {
    let s = Scratch::new("issue26-inspect", "foreign");
    let t = s.0.join("table");
    table_with_snapshots(&t, 1);
    std::fs::write(t.join("README"), b"x").unwrap();
    mkfifo(&t.join("pipe"));
    let (code, out, err) = inspect(&t, false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_has(&out, "\"README\": a regular file, not part of a table");
    assert_has(&out, "\"pipe\": a FIFO, not part of a table");
    // An empty directory is an empty table.
    let empty = s.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, out, _) = inspect(&empty, false);
    assert_eq!(code, Some(0), "{out}");
    assert_has(&out, "0 snapshot(s)");
}
