//! Storage backends for the `storage` import.
//!
//! - [`MemStorage`] (re-exported from the core): a map in memory.
//! - [`LocalDirStorage`]: one file per key under a root directory, with
//!   atomic create-once (`put_if_absent`) and atomic overwrite (`put`).
//! - [`FaultyStorage`]: a wrapper injecting the faults of TRACE-FORMAT's
//!   `storage_fault` step.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use sink_coordinator::MemStorage;
use sink_coordinator::{Storage, StorageError};

// ---------------------------------------------------------------------------
// LocalDirStorage
// ---------------------------------------------------------------------------

/// Temporary files start with this; keys may not, so `list` never shows them.
pub const TMP_PREFIX: &str = ".sinkcoord-tmp.";

/// Distinguishes temporary files of several storages in one process.
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A table in a local directory: key `a/b/c` is the file `<root>/a/b/c`.
///
/// Keys are confined under the root: absolute keys, `.`/`..` segments, empty
/// segments, backslashes and NUL are rejected with `invalid-key`. Writes go
/// through a temporary file in the target directory that is fsynced before it
/// becomes visible, so a reader never sees a partial value; the directory is
/// fsynced afterwards so the new name survives a crash.
#[derive(Debug)]
pub struct LocalDirStorage {
    root: PathBuf,
}

impl LocalDirStorage {
    /// Opens the table at `root`, creating the directory if needed.
    pub fn open(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root)?;
        Self::open_existing(root)
    }

    /// Opens the table at `root`, which must be an existing directory.
    pub fn open_existing(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        if !fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(LocalDirStorage { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of `key`, after checking that it stays under the root.
    fn key_path(&self, key: &str) -> Result<PathBuf, StorageError> {
        check_key(key)?;
        let mut path = self.root.clone();
        path.extend(key.split('/'));
        Ok(path)
    }

    /// Writes `value` to a fresh temporary file in `dir` and fsyncs it.
    fn write_temp(&self, dir: &Path, value: &[u8]) -> io::Result<PathBuf> {
        loop {
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = dir.join(format!("{TMP_PREFIX}{}.{n}", std::process::id()));
            // create_new: never reuse a stale temporary file of a crashed run.
            let mut file = match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            };
            let written = file.write_all(value).and_then(|()| file.sync_all());
            if let Err(e) = written {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
            return Ok(tmp);
        }
    }

    /// Creates the parent directories of `path`; returns the parent.
    fn prepare_dir<'p>(&'p self, key: &str, path: &'p Path) -> Result<&'p Path, StorageError> {
        let dir = path.parent().unwrap_or(&self.root);
        if !dir.is_dir() {
            fs::create_dir_all(dir).map_err(|e| io_error("create the directory of", key, e))?;
            // Make the new directory's own name durable too.
            if let Some(parent) = dir.parent() {
                sync_dir(parent).map_err(|e| io_error("sync the directory of", key, e))?;
            }
        }
        Ok(dir)
    }
}

impl Storage for LocalDirStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let path = self.key_path(key)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            // A directory is a key prefix, not a key.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound
                        | io::ErrorKind::IsADirectory
                        | io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(io_error("read", key, e)),
        }
    }

    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        let path = self.key_path(key)?;
        let dir = self.prepare_dir(key, &path)?;
        let tmp = self
            .write_temp(dir, value)
            .map_err(|e| io_error("write", key, e))?;
        // link(2) fails if the name exists: an atomic create that publishes a
        // complete, fsynced file, or nothing.
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                sync_dir(dir).map_err(|e| io_error("sync the directory of", key, e))?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io_error("create", key, e)),
        }
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        let path = self.key_path(key)?;
        let dir = self.prepare_dir(key, &path)?;
        let tmp = self
            .write_temp(dir, value)
            .map_err(|e| io_error("write", key, e))?;
        // rename(2) replaces the target atomically.
        if let Err(e) = fs::rename(&tmp, &path) {
            let _ = fs::remove_file(&tmp);
            return Err(io_error("replace", key, e));
        }
        sync_dir(dir).map_err(|e| io_error("sync the directory of", key, e))
    }

    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        let path = self.key_path(key)?;
        match fs::remove_file(&path) {
            Ok(()) => {
                let dir = path.parent().unwrap_or(&self.root);
                sync_dir(dir).map_err(|e| io_error("sync the directory of", key, e))
            }
            // Deleting a missing key succeeds.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound
                        | io::ErrorKind::IsADirectory
                        | io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(io_error("delete", key, e)),
        }
    }

    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        check_prefix(prefix)?;
        // Only the directory named by the prefix's complete segments can hold
        // matching keys; walk it rather than the whole root.
        let (dir_part, _) = prefix.rsplit_once('/').unwrap_or(("", prefix));
        let mut dir = self.root.clone();
        if !dir_part.is_empty() {
            dir.extend(dir_part.split('/'));
        }
        let mut keys = Vec::new();
        if dir.is_dir() {
            let base = if dir_part.is_empty() {
                String::new()
            } else {
                format!("{dir_part}/")
            };
            walk(&dir, &base, prefix, &mut keys).map_err(|e| io_error("list", prefix, e))?;
        }
        // String order is byte order.
        keys.sort();
        Ok(keys)
    }
}

/// Collects the keys under `dir` (whose key prefix is `base`) that start with `prefix`.
fn walk(dir: &Path, base: &str, prefix: &str, keys: &mut Vec<String>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        // Names that are not UTF-8 or are temporary files cannot be keys.
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with(TMP_PREFIX) {
            continue;
        }
        let key = format!("{base}{name}");
        // file_type() does not follow symlinks: links are never keys, and
        // following them could leave the root.
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            let sub = format!("{key}/");
            // Descend only where matching keys can be.
            if sub.starts_with(prefix) || prefix.starts_with(&sub) {
                walk(&entry.path(), &sub, prefix, keys)?;
            }
        } else if file_type.is_file() && key.starts_with(prefix) {
            keys.push(key);
        }
    }
    Ok(())
}

fn check_chars(what: &str, s: &str) -> Result<(), StorageError> {
    if s.contains('\\') {
        return Err(StorageError::InvalidKey(format!(
            "{what} {s:?} contains a backslash"
        )));
    }
    if s.contains('\0') {
        return Err(StorageError::InvalidKey(format!(
            "{what} {s:?} contains NUL"
        )));
    }
    if s.starts_with('/') {
        return Err(StorageError::InvalidKey(format!(
            "{what} {s:?} is absolute"
        )));
    }
    Ok(())
}

fn check_segment(what: &str, s: &str, segment: &str) -> Result<(), StorageError> {
    if segment.is_empty() {
        return Err(StorageError::InvalidKey(format!(
            "{what} {s:?} has an empty segment"
        )));
    }
    if segment == "." || segment == ".." {
        return Err(StorageError::InvalidKey(format!(
            "{what} {s:?} has a {segment:?} segment"
        )));
    }
    if segment.starts_with(TMP_PREFIX) {
        return Err(StorageError::InvalidKey(format!(
            "{what} {s:?} uses the reserved name prefix {TMP_PREFIX:?}"
        )));
    }
    Ok(())
}

/// A key: relative, `/`-separated, non-empty segments other than `.` and `..`.
fn check_key(key: &str) -> Result<(), StorageError> {
    if key.is_empty() {
        return Err(StorageError::InvalidKey("empty key".into()));
    }
    check_chars("key", key)?;
    key.split('/')
        .try_for_each(|segment| check_segment("key", key, segment))
}

/// A prefix: like a key, except that it may be empty and its last segment
/// (the part after the last `/`) may be empty or partial.
fn check_prefix(prefix: &str) -> Result<(), StorageError> {
    check_chars("prefix", prefix)?;
    match prefix.rsplit_once('/') {
        Some((dirs, _)) => dirs
            .split('/')
            .try_for_each(|segment| check_segment("prefix", prefix, segment)),
        None => Ok(()),
    }
}

fn io_error(op: &str, key: &str, e: io::Error) -> StorageError {
    StorageError::Io(format!("cannot {op} {key:?}: {e}"))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

// ---------------------------------------------------------------------------
// FaultyStorage
// ---------------------------------------------------------------------------

/// A class of storage calls, as named by a `storage_fault` step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallKind {
    /// `put` and `put-if-absent`.
    Put,
    Get,
    List,
    Delete,
}

impl CallKind {
    pub const ALL: [CallKind; 4] = [
        CallKind::Put,
        CallKind::Get,
        CallKind::List,
        CallKind::Delete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CallKind::Put => "put",
            CallKind::Get => "get",
            CallKind::List => "list",
            CallKind::Delete => "delete",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        CallKind::ALL.into_iter().find(|k| k.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a faulty call misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMode {
    /// The call returns an error and changes nothing.
    Fail,
    /// The change is applied, then an error is returned (for get and list
    /// the same as `Fail`).
    Ambiguous,
}

impl FaultMode {
    pub fn name(self) -> &'static str {
        match self {
            FaultMode::Fail => "fail",
            FaultMode::Ambiguous => "ambiguous",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [FaultMode::Fail, FaultMode::Ambiguous]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// One `storage_fault` step: after `skip` well-behaved calls of its kind, the
/// next `count` calls misbehave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub skip: u64,
    pub count: u64,
    pub mode: FaultMode,
}

/// Wraps a storage and injects queued faults (TRACE-FORMAT `storage_fault`).
///
/// Each call kind has a FIFO queue; only its front fault is active, and its
/// `skip` counts the calls made after the previous fault was used up. While
/// `suspended`, calls go straight through and consume nothing (the replayer's
/// own reads of the table).
#[derive(Clone, Debug, Default)]
pub struct FaultyStorage<S> {
    inner: S,
    queues: [VecDeque<Fault>; 4],
    suspended: bool,
}

impl<S> FaultyStorage<S> {
    pub fn new(inner: S) -> Self {
        FaultyStorage {
            inner,
            queues: Default::default(),
            suspended: false,
        }
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Queues a fault behind the earlier ones of the same kind. A fault with
    /// `count == 0` would misbehave on no call and is dropped.
    pub fn push_fault(&mut self, call: CallKind, fault: Fault) {
        if fault.count > 0 {
            self.queues[call.index()].push_back(fault);
        }
    }

    /// Faults of `call` not yet used up (the front one possibly partly).
    pub fn pending(&self, call: CallKind) -> usize {
        self.queues[call.index()].len()
    }

    pub fn set_suspended(&mut self, suspended: bool) {
        self.suspended = suspended;
    }

    pub fn is_suspended(&self) -> bool {
        self.suspended
    }

    /// Counts one call of `call`; returns how it must misbehave, if at all.
    fn take(&mut self, call: CallKind) -> Option<FaultMode> {
        if self.suspended {
            return None;
        }
        let queue = &mut self.queues[call.index()];
        let front = queue.front_mut()?;
        if front.skip > 0 {
            front.skip -= 1;
            return None;
        }
        let mode = front.mode;
        front.count -= 1;
        if front.count == 0 {
            queue.pop_front();
        }
        Some(mode)
    }
}

fn injected(op: &str, key: &str, mode: FaultMode) -> StorageError {
    match mode {
        FaultMode::Fail => StorageError::Io(format!("injected fault: {op} {key:?} failed")),
        FaultMode::Ambiguous => StorageError::Io(format!(
            "injected fault: {op} {key:?} reported an error after it was applied"
        )),
    }
}

impl<S: Storage> Storage for FaultyStorage<S> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        match self.take(CallKind::Get) {
            // A read has no change to apply: ambiguous is fail.
            Some(_) => Err(injected("get", key, FaultMode::Fail)),
            None => self.inner.get(key),
        }
    }

    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        match self.take(CallKind::Put) {
            Some(FaultMode::Fail) => Err(injected("put-if-absent", key, FaultMode::Fail)),
            Some(FaultMode::Ambiguous) => {
                self.inner.put_if_absent(key, value)?;
                Err(injected("put-if-absent", key, FaultMode::Ambiguous))
            }
            None => self.inner.put_if_absent(key, value),
        }
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        match self.take(CallKind::Put) {
            Some(FaultMode::Fail) => Err(injected("put", key, FaultMode::Fail)),
            Some(FaultMode::Ambiguous) => {
                self.inner.put(key, value)?;
                Err(injected("put", key, FaultMode::Ambiguous))
            }
            None => self.inner.put(key, value),
        }
    }

    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        match self.take(CallKind::Delete) {
            Some(FaultMode::Fail) => Err(injected("delete", key, FaultMode::Fail)),
            Some(FaultMode::Ambiguous) => {
                self.inner.delete(key)?;
                Err(injected("delete", key, FaultMode::Ambiguous))
            }
            None => self.inner.delete(key),
        }
    }

    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        match self.take(CallKind::List) {
            Some(_) => Err(injected("list", prefix, FaultMode::Fail)),
            None => self.inner.list(prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("sinkcoord-test-{name}-{}-{n}", std::process::id()));
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

    fn fault(skip: u64, count: u64, mode: FaultMode) -> Fault {
        Fault { skip, count, mode }
    }

    #[test]
    fn faulty_skip_and_count() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.push_fault(CallKind::Put, fault(1, 2, FaultMode::Fail));
        assert_eq!(st.put_if_absent("a", b"1"), Ok(true)); // skipped
        assert!(st.put_if_absent("b", b"1").is_err()); // 1st fault
        assert!(st.put("c", b"1").is_err()); // put counts with put-if-absent
        assert_eq!(st.put_if_absent("b", b"1"), Ok(true)); // used up
        assert_eq!(st.inner().map.keys().collect::<Vec<_>>(), ["a", "b"]);
        // Other kinds were never affected.
        assert_eq!(st.get("a"), Ok(Some(b"1".to_vec())));
    }

    #[test]
    fn faulty_queue_order_and_skip_after_previous() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.push_fault(CallKind::Get, fault(0, 1, FaultMode::Fail));
        st.push_fault(CallKind::Get, fault(2, 1, FaultMode::Ambiguous));
        st.push_fault(CallKind::List, fault(0, 1, FaultMode::Fail));
        assert_eq!(st.pending(CallKind::Get), 2);
        assert!(st.get("k").is_err()); // first fault
        assert!(st.get("k").is_ok()); // second fault's skip counts from here
        assert!(st.get("k").is_ok());
        assert!(st.get("k").is_err()); // ambiguous get = fail
        assert!(st.get("k").is_ok());
        assert_eq!(st.pending(CallKind::Get), 0);
        assert!(st.list("").is_err());
        assert!(st.list("").is_ok());
        // count 0 is dropped rather than blocking the queue.
        st.push_fault(CallKind::Delete, fault(0, 0, FaultMode::Fail));
        assert_eq!(st.pending(CallKind::Delete), 0);
    }

    #[test]
    fn faulty_ambiguous_applies_then_errors() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.push_fault(CallKind::Put, fault(0, 2, FaultMode::Ambiguous));
        st.push_fault(CallKind::Delete, fault(0, 1, FaultMode::Ambiguous));
        assert!(st.put_if_absent("a", b"1").is_err());
        assert!(st.put("b", b"2").is_err());
        assert_eq!(st.inner().map.len(), 2, "ambiguous writes landed");
        assert!(st.delete("a").is_err());
        assert_eq!(
            st.inner().map.keys().collect::<Vec<_>>(),
            ["b"],
            "ambiguous delete landed"
        );
        st.push_fault(CallKind::Put, fault(0, 1, FaultMode::Fail));
        assert!(st.put_if_absent("c", b"3").is_err());
        assert!(
            !st.inner().map.contains_key("c"),
            "failed write did not land"
        );
    }

    #[test]
    fn faulty_suspended_bypasses_and_consumes_nothing() {
        let mut st = FaultyStorage::new(MemStorage::default());
        st.push_fault(CallKind::List, fault(1, 1, FaultMode::Fail));
        st.set_suspended(true);
        for _ in 0..3 {
            assert!(st.list("").is_ok());
        }
        st.set_suspended(false);
        assert!(st.list("").is_ok()); // the skip
        assert!(st.list("").is_err());
    }
}
