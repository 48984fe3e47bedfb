//! Tests of the local-directory backend.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use sink_coordinator::{MemStorage, Storage, StorageError};

use super::{LocalDirStorage, ValueTooLarge, DEFAULT_MAX_VALUE_BYTES, MAX_HINT_BYTES, TMP_COUNTER};
use crate::storage::checks::{creates_once_overwrites_and_deletes, is_invalid_key};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("sinkcoord-test-{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn local_dir_create_once() {
    let dir = TempDir::new("create-once");
    let mut st = LocalDirStorage::open(dir.0.join("table")).unwrap();
    creates_once_overwrites_and_deletes(&mut st);
    // A directory at a key is neither a value nor missing (issue 26).
    assert!(matches!(
        st.get("snapshot"),
        Err(StorageError::InvalidKey(_))
    ));
    // No temporary file is left behind.
    let names: Vec<_> = fs::read_dir(dir.0.join("table/snapshot"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("1")]);
    // A second handle on the same directory sees the same table.
    let mut other = LocalDirStorage::open_existing(dir.0.join("table")).unwrap();
    assert!(!other.put_if_absent("snapshot/1", b"third").unwrap());
}

#[test]
fn local_dir_confines_keys() {
    let dir = TempDir::new("confine");
    let mut st = LocalDirStorage::open(dir.0.join("table")).unwrap();
    for bad in [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        "a//b",
        "a/",
        "./a",
        "a\\b",
        "a\0b",
        ".sinkcoord-tmp.1",
    ] {
        assert!(is_invalid_key(&st.get(bad)), "get {bad:?}");
        let created = st.put_if_absent(bad, b"x");
        assert!(is_invalid_key(&created), "put_if_absent {bad:?}");
        assert!(is_invalid_key(&st.put(bad, b"x")), "put {bad:?}");
        assert!(is_invalid_key(&st.delete(bad)), "delete {bad:?}");
    }
    for bad in ["/", "../", "a//", "a\\", "/snapshot/"] {
        assert!(is_invalid_key(&st.list(bad)), "list {bad:?}");
    }
    // Nothing was written outside (or inside) the root.
    assert!(!dir.0.join("x").exists());
    assert_eq!(st.list("").unwrap(), Vec::<String>::new());
}

#[test]
fn local_dir_lists_in_byte_order() {
    let dir = TempDir::new("list");
    let mut st = LocalDirStorage::open(dir.0.join("table")).unwrap();
    for key in [
        "snapshot/00000000000000000010",
        "snapshot/00000000000000000002",
        "tag/savepoint-3",
        "tag/Z",
        "tag/a/b",
        "snap",
        "hint",
    ] {
        assert!(st.put_if_absent(key, key.as_bytes()).unwrap());
    }
    assert_eq!(
        st.list("snapshot/").unwrap(),
        [
            "snapshot/00000000000000000002",
            "snapshot/00000000000000000010"
        ]
    );
    assert_eq!(
        st.list("tag/").unwrap(),
        ["tag/Z", "tag/a/b", "tag/savepoint-3"]
    );
    assert_eq!(st.list("tag/s").unwrap(), ["tag/savepoint-3"]);
    assert_eq!(
        st.list("snap").unwrap(),
        [
            "snap",
            "snapshot/00000000000000000002",
            "snapshot/00000000000000000010"
        ]
    );
    assert_eq!(st.list("missing/").unwrap(), Vec::<String>::new());
    assert_eq!(st.list("").unwrap().len(), 7);
    // The listing equals MemStorage's for the same keys.
    let mut mem = MemStorage::default();
    for key in st.list("").unwrap() {
        mem.put(&key, b"").unwrap();
    }
    for prefix in ["", "s", "snapshot/", "tag/", "tag/a", "hint"] {
        assert_eq!(
            st.list(prefix).unwrap(),
            mem.list(prefix).unwrap(),
            "prefix {prefix:?}"
        );
    }
}

/// The [`ValueTooLarge`] an error carries, if any.
fn too_large(e: &StorageError) -> Option<&ValueTooLarge> {
    match e {
        StorageError::Backend { source, .. } => source.downcast_ref::<ValueTooLarge>(),
        _ => None,
    }
}

/// The peak resident set of this process (VmHWM), in KiB; Linux only.
fn peak_rss_kib() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn local_dir_bounds_reads_of_sparse_files() {
    // Issue 26: a sparse 3 GiB snapshot (no disk used) was read whole, and
    // `inspect` peaked at 6.3 GB; a sparse 1 GiB hint cost 1 GB per open.
    let dir = TempDir::new("sparse");
    let mut st = LocalDirStorage::open(dir.0.join("table")).unwrap();
    assert!(st.put_if_absent("snapshot/1", b"x").unwrap());
    assert!(st.put_if_absent("hint/latest-snapshot", b"1").unwrap());
    let snapshot = fs::OpenOptions::new()
        .write(true)
        .open(dir.0.join("table/snapshot/1"))
        .unwrap();
    snapshot.set_len(3 << 30).unwrap();
    let hint = fs::OpenOptions::new()
        .write(true)
        .open(dir.0.join("table/hint/latest-snapshot"))
        .unwrap();
    hint.set_len(1 << 30).unwrap();
    let before = peak_rss_kib();
    let e = st.get("snapshot/1").unwrap_err();
    let t = too_large(&e).unwrap_or_else(|| panic!("not ValueTooLarge: {e}"));
    assert_eq!(
        (t.key.as_str(), t.size, t.limit),
        ("snapshot/1", 3 << 30, DEFAULT_MAX_VALUE_BYTES)
    );
    let text = e.to_string();
    assert!(
        text.contains("\"snapshot/1\"") && text.contains("2147483648"),
        "{text}"
    );
    let e = st.get("hint/latest-snapshot").unwrap_err();
    let t = too_large(&e).unwrap_or_else(|| panic!("not ValueTooLarge: {e}"));
    assert_eq!((t.size, t.limit), (1 << 30, MAX_HINT_BYTES));
    assert!(e.to_string().contains("hint limit"), "{e}");
    // Nothing near the files' sizes was allocated (64 MiB of slack for the
    // other tests of this process).
    if let (Some(before), Some(after)) = (before, peak_rss_kib()) {
        assert!(
            after < before + (64 << 10),
            "peak RSS {before} KiB -> {after} KiB"
        );
    }
}

#[test]
fn local_dir_bounds_values_both_ways() {
    let dir = TempDir::new("bound");
    let mut st = LocalDirStorage::open(dir.0.join("table"))
        .unwrap()
        .with_max_value_bytes(8);
    assert_eq!(st.max_value_bytes(), 8);
    // At the bound: written and read back; one byte above: refused, and
    // nothing (not even a temporary file) is written.
    assert!(st.put_if_absent("snapshot/1", b"12345678").unwrap());
    assert_eq!(
        st.get("snapshot/1").unwrap().as_deref(),
        Some(&b"12345678"[..])
    );
    let e = st.put_if_absent("snapshot/2", b"123456789").unwrap_err();
    assert_eq!(
        too_large(&e).map(|t| (t.size, t.limit)),
        Some((9, 8)),
        "{e}"
    );
    let e = st.put("tag/a", b"123456789").unwrap_err();
    assert!(too_large(&e).is_some(), "{e}");
    assert_eq!(st.list("").unwrap(), ["snapshot/1"]);
    assert_eq!(
        fs::read_dir(dir.0.join("table/snapshot")).unwrap().count(),
        1
    );
    // A file that another writer made larger is refused on read.
    fs::write(dir.0.join("table/snapshot/1"), b"123456789").unwrap();
    let e = st.get("snapshot/1").unwrap_err();
    assert_eq!(
        too_large(&e).map(|t| (t.size, t.limit)),
        Some((9, 8)),
        "{e}"
    );
}

#[test]
fn local_dir_refuses_special_files_at_keys() {
    let dir = TempDir::new("special");
    let mut st = LocalDirStorage::open(dir.0.join("table")).unwrap();
    let snapshots = dir.0.join("table/snapshot");
    fs::create_dir_all(snapshots.join("1")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &snapshots.join("2"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    for key in ["snapshot/1", "snapshot/2"] {
        // Neither missing nor "already created": refused, and no hang.
        assert!(is_invalid_key(&st.get(key)), "get {key}");
        let created = st.put_if_absent(key, b"v");
        assert!(is_invalid_key(&created), "put_if_absent {key}: {created:?}");
    }
    // /dev/zero linked in: refused as a link, never read.
    std::os::unix::fs::symlink("/dev/zero", snapshots.join("3")).unwrap();
    assert!(matches!(
        st.get("snapshot/3"),
        Err(StorageError::InvalidKey(_))
    ));
}
