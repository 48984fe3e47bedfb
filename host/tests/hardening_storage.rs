//! Issue 11: a table directory is not trusted. Symbolic links planted under
//! the root are refused by name and never followed (nothing outside the root
//! is read or written); temporary files of dead writers are removed when the
//! table is opened. (`sinkcoord inspect` on damaged tables: cli/tests/inspect.rs.)

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use sink_coordinator::{table, Config, Coordinator, Entry, StepClock, Storage, StorageError};
use sink_coordinator_host::env::HostEnv;
use sink_coordinator_host::storage::{LocalDirStorage, TMP_PREFIX};

/// A fresh directory (removed on drop) holding `table/` and `outside/`.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("sinkcoord-hardening-{name}-{}", std::process::id()));
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
    /// A file `name` outside the table holding [`SECRET`]: the target of
    /// the links a test plants.
    fn secret(&self, name: &str) -> PathBuf {
        let target = self.outside().join(name);
        std::fs::write(&target, SECRET).unwrap();
        target
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every file under `dir` with its bytes, sorted (a fingerprint of "untouched").
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn invalid_key_naming<T: std::fmt::Debug>(r: Result<T, StorageError>, path: &str) -> String {
    match r {
        Err(StorageError::InvalidKey(m)) => {
            assert!(m.contains(&format!("{path:?}")), "{m}");
            assert!(m.contains("symbolic link"), "{m}");
            m
        }
        other => panic!("expected invalid-key naming {path:?}, got {other:?}"),
    }
}

const SECRET: &[u8] = b"SECRET-BYTES-OUTSIDE-THE-TABLE\n";

#[test]
fn linked_snapshot_directory_is_refused_and_outside_untouched() {
    let s = Scratch::new("linked-dir");
    s.secret("keep");
    symlink(s.outside(), s.table().join("snapshot")).unwrap();
    let before = contents(&s.outside());

    let mut st = LocalDirStorage::open(s.table()).unwrap();
    let key = table::snapshot_key(1);
    invalid_key_naming(st.put_if_absent(&key, b"x"), "snapshot");
    invalid_key_naming(st.put(&key, b"x"), "snapshot");
    invalid_key_naming(st.get("snapshot/keep"), "snapshot");
    invalid_key_naming(st.delete("snapshot/keep"), "snapshot");
    invalid_key_naming(st.list("snapshot/"), "snapshot");
    // Listing from the root meets the link too.
    invalid_key_naming(st.list(""), "snapshot");
    invalid_key_naming(st.list("snap"), "snapshot");

    // The coordinator fails (when it first reads the table, or at the
    // commit) instead of reading or writing outside.
    let mut env = HostEnv::new(st, StepClock { next: 1, step: 1 });
    let mut c = Coordinator::new(Config::new(1, "job"), None);
    let entry = Entry {
        checkpoint: 1,
        committables: vec![b"c".to_vec()].into(),
        watermark: None,
        savepoint: false,
    };
    let err = c
        .start(&mut env)
        .and_then(|_| c.event(&mut env, 0, 0, entry))
        .and_then(|_| c.checkpoint(&mut env, 1))
        .and_then(|_| c.checkpoint_complete(&mut env, 1))
        .unwrap_err();
    assert!(err.message().contains("symbolic link"), "{err:?}");

    assert_eq!(
        contents(&s.outside()),
        before,
        "nothing outside was written"
    );
}

#[test]
fn linked_snapshot_file_is_never_read_or_written() {
    let s = Scratch::new("linked-file");
    let target = s.secret("hostname");
    std::fs::create_dir_all(s.table().join("snapshot")).unwrap();
    let key = table::snapshot_key(1);
    symlink(&target, s.table().join(&key)).unwrap();

    let mut st = LocalDirStorage::open(s.table()).unwrap();
    let m = invalid_key_naming(st.get(&key), &key);
    assert!(!m.contains("SECRET"), "a byte of the target leaked: {m}");
    invalid_key_naming(st.put_if_absent(&key, b"overwrite"), &key);
    invalid_key_naming(st.put(&key, b"overwrite"), &key);
    invalid_key_naming(st.delete(&key), &key);
    invalid_key_naming(st.list("snapshot/"), &key);
    // The native table reader surfaces the error instead of the target's bytes.
    let err = table::list_snapshots(&mut st).unwrap_err();
    assert!(!err.message().contains("SECRET"), "{err:?}");
    assert!(err.message().contains("symbolic link"), "{err:?}");

    assert_eq!(std::fs::read(&target).unwrap(), SECRET);
    assert!(std::fs::symlink_metadata(s.table().join(&key))
        .unwrap()
        .file_type()
        .is_symlink());
    // No temporary file was left in the table either.
    let names: Vec<_> = std::fs::read_dir(s.table().join("snapshot"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec![key.trim_start_matches("snapshot/").to_string()]);
}

#[test]
fn links_in_tag_and_hint_are_refused() {
    let s = Scratch::new("tag-hint");
    let target = s.secret("target");
    std::fs::create_dir_all(s.table().join("tag")).unwrap();
    std::fs::create_dir_all(s.table().join("hint")).unwrap();
    symlink(&target, s.table().join("tag/savepoint-1")).unwrap();
    symlink(&target, s.table().join(table::LATEST_HINT)).unwrap();
    // A dangling link is refused the same way.
    symlink(s.outside().join("missing"), s.table().join("tag/dangling")).unwrap();

    let mut st = LocalDirStorage::open(s.table()).unwrap();
    invalid_key_naming(st.list("tag/"), "tag/");
    invalid_key_naming(st.get("tag/savepoint-1"), "tag/savepoint-1");
    invalid_key_naming(st.get("tag/dangling"), "tag/dangling");
    invalid_key_naming(st.put_if_absent("tag/dangling", b"x"), "tag/dangling");
    invalid_key_naming(st.put(table::LATEST_HINT, b"x"), table::LATEST_HINT);
    invalid_key_naming(st.get(table::LATEST_HINT), table::LATEST_HINT);
    let err = table::list_tags(&mut st).unwrap_err();
    assert!(err.message().contains("symbolic link"), "{err:?}");

    assert_eq!(std::fs::read(&target).unwrap(), SECRET);
    assert!(
        !s.outside().join("missing").exists(),
        "the dangling link was not followed"
    );

    // A linked tag/ directory too.
    let s2 = Scratch::new("tag-dir");
    symlink(s2.outside(), s2.table().join("tag")).unwrap();
    let mut st = LocalDirStorage::open(s2.table()).unwrap();
    invalid_key_naming(st.put_if_absent("tag/x", b"x"), "tag");
    assert!(contents(&s2.outside()).is_empty());
}

#[test]
fn ordinary_tables_still_work() {
    let s = Scratch::new("ordinary");
    let mut st = LocalDirStorage::open(s.table()).unwrap();
    assert!(st.put_if_absent("snapshot/1", b"a").unwrap());
    assert!(!st.put_if_absent("snapshot/1", b"b").unwrap());
    st.put("hint/h", b"1").unwrap();
    st.put("hint/h", b"2").unwrap();
    assert_eq!(st.get("hint/h").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(st.list("").unwrap(), ["hint/h", "snapshot/1"]);
    // A file where a directory is expected: no such key, and no create.
    assert_eq!(st.get("snapshot/1/x").unwrap(), None);
    assert!(st.put_if_absent("snapshot/1/x", b"c").is_err());
    // A FIFO is not a key and does not hang the read.
    let fifo = s.table().join("snapshot/fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    assert!(st.get("snapshot/fifo").is_err());
    assert_eq!(st.list("snapshot/").unwrap(), ["snapshot/1"]);
}

#[test]
fn opening_removes_only_dead_writers_temp_files() {
    let s = Scratch::new("temps");
    std::fs::create_dir_all(s.table().join("snapshot")).unwrap();
    std::fs::create_dir_all(s.table().join("tag")).unwrap();
    // A process that has exited: its pid answers ESRCH.
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    // A live writer (another process).
    let mut live = Command::new("sleep").arg("30").spawn().unwrap();
    let live_pid = live.id();

    let dead1 = format!("snapshot/{TMP_PREFIX}{dead_pid}.0");
    let dead2 = format!("tag/{TMP_PREFIX}{dead_pid}.7");
    let dead3 = format!("{TMP_PREFIX}{dead_pid}.1");
    let live1 = format!("snapshot/{TMP_PREFIX}{live_pid}.0");
    let mine = format!("snapshot/{TMP_PREFIX}{}.999999", std::process::id());
    let odd = format!("snapshot/{TMP_PREFIX}not-a-pid");
    for name in [&dead1, &dead2, &dead3, &live1, &mine, &odd] {
        std::fs::write(s.table().join(name), b"partial").unwrap();
    }
    // A temp-named link is never followed or removed through.
    let target = s.secret("t");
    let linked = format!("snapshot/{TMP_PREFIX}{dead_pid}.5");
    symlink(&target, s.table().join(&linked)).unwrap();

    let st = LocalDirStorage::open_existing(s.table()).unwrap();
    let mut removed = st.removed_temp_files().to_vec();
    removed.sort();
    let mut expected = vec![dead3.clone(), dead1.clone(), dead2.clone()];
    expected.sort();
    assert_eq!(removed, expected);
    for gone in [&dead1, &dead2, &dead3] {
        assert!(!s.table().join(gone).exists(), "{gone} removed");
    }
    for kept in [&live1, &mine, &odd] {
        assert!(s.table().join(kept).exists(), "{kept} kept");
    }
    assert_eq!(std::fs::read(&target).unwrap(), SECRET);
    let _ = live.kill();
    let _ = live.wait();
}
