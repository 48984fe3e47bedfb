//! Tests of the local-directory backend.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use sink_coordinator::{MemStorage, Storage, StorageError};

use super::{LocalDirStorage, TMP_COUNTER};

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
    assert_eq!(st.get("snapshot/1").unwrap(), None);
    assert!(st.put_if_absent("snapshot/1", b"first").unwrap());
    assert!(!st.put_if_absent("snapshot/1", b"second").unwrap());
    assert_eq!(
        st.get("snapshot/1").unwrap().as_deref(),
        Some(&b"first"[..])
    );
    st.put("hint/latest", b"a").unwrap();
    st.put("hint/latest", b"bb").unwrap();
    assert_eq!(st.get("hint/latest").unwrap().as_deref(), Some(&b"bb"[..]));
    st.delete("hint/latest").unwrap();
    st.delete("hint/latest").unwrap();
    assert_eq!(st.get("hint/latest").unwrap(), None);
    // A directory is not a key.
    assert_eq!(st.get("snapshot").unwrap(), None);
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
        assert!(
            matches!(st.get(bad), Err(StorageError::InvalidKey(_))),
            "get {bad:?}"
        );
        assert!(
            matches!(
                st.put_if_absent(bad, b"x"),
                Err(StorageError::InvalidKey(_))
            ),
            "put_if_absent {bad:?}"
        );
        assert!(
            matches!(st.put(bad, b"x"), Err(StorageError::InvalidKey(_))),
            "put {bad:?}"
        );
        assert!(
            matches!(st.delete(bad), Err(StorageError::InvalidKey(_))),
            "delete {bad:?}"
        );
    }
    for bad in ["/", "../", "a//", "a\\", "/snapshot/"] {
        assert!(
            matches!(st.list(bad), Err(StorageError::InvalidKey(_))),
            "list {bad:?}"
        );
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
