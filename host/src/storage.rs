//! Storage backends for the `storage` import.
//!
//! - [`MemStorage`] (re-exported from the core): a map in memory.
//! - [`LocalDirStorage`]: one file per key under a root directory, with
//!   atomic create-once (`put_if_absent`) and atomic overwrite (`put`).
//! - [`FaultyStorage`]: a wrapper injecting the faults of TRACE-FORMAT's
//!   `storage_fault` step.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

pub use sink_coordinator::MemStorage;
use sink_coordinator::{Storage, StorageError};

// ---------------------------------------------------------------------------
// LocalDirStorage
// ---------------------------------------------------------------------------

/// Temporary files start with this; keys may not, so `list` never shows them.
/// The full name is `.sinkcoord-tmp.<pid>.<n>`: the writer's process id
/// tells [`LocalDirStorage::open`] whether its writer is still alive.
pub const TMP_PREFIX: &str = ".sinkcoord-tmp.";

/// Distinguishes temporary files of several storages in one process.
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How deep `list` and the temp-file sweep descend below the root. Keys
/// written by the coordinator have two segments; a deeper tree is hostile.
const MAX_DEPTH: usize = 64;

/// A table in a local directory: key `a/b/c` is the file `<root>/a/b/c`.
///
/// Keys are confined under the root: absolute keys, `.`/`..` segments, empty
/// segments, backslashes and NUL are rejected with `invalid-key`. The
/// directory's contents are not trusted either: every path is opened beneath
/// a descriptor of the root, one component at a time with `O_NOFOLLOW`, so a
/// symbolic link anywhere under the root (a linked `snapshot/` directory, a
/// snapshot file linked to `/etc/hostname`, a link in `tag/`) is an
/// `invalid-key` error naming its path, and no byte of the link's target is
/// read or written. (The root itself is opened once, following links: it is
/// the operator's choice, not the table's content.)
///
/// Writes go through a temporary file in the target directory that is
/// fsynced before it becomes visible (`link` for create-once, `rename` for
/// overwrite), so a reader never sees a partial value; the directory is
/// fsynced afterwards so the new name survives a crash.
#[derive(Debug)]
pub struct LocalDirStorage {
    root: PathBuf,
    /// The root directory, opened once; every other path is resolved from it.
    root_fd: OwnedFd,
    /// Temporary files of dead writers removed when the table was opened.
    removed_temp_files: Vec<String>,
}

/// The directory holding a key's file: open, absent, or a file in the way.
enum DirLookup {
    Found(OwnedFd),
    Missing,
}

impl LocalDirStorage {
    /// Opens the table at `root`, creating the directory if needed, and
    /// removes temporary files left by writers that died (see
    /// [`removed_temp_files`](Self::removed_temp_files)).
    pub fn open(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root)?;
        Self::open_existing(root)
    }

    /// Opens the table at `root`, which must be an existing directory, and
    /// removes temporary files left by writers that died.
    pub fn open_existing(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        if !fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        let root_fd = rustix::fs::open(
            &root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut storage = LocalDirStorage {
            root,
            root_fd,
            removed_temp_files: Vec::new(),
        };
        let mut removed = Vec::new();
        sweep_temp_files(storage.root_fd.as_fd(), "", 0, &mut removed);
        removed.sort();
        storage.removed_temp_files = removed;
        Ok(storage)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The temporary files (paths relative to the root) that opening the
    /// table removed: those named `.sinkcoord-tmp.<pid>.<n>` whose process
    /// `<pid>` no longer exists on this machine. A live writer's file is
    /// never removed (its pid answers `kill(pid, 0)`; a pid reused by an
    /// unrelated process only keeps a stale file a little longer). If a
    /// writer on another machine or pid namespace shares the directory and
    /// its file is removed, its `link`/`rename` fails with an I/O error and
    /// nothing partial becomes visible.
    pub fn removed_temp_files(&self) -> &[String] {
        &self.removed_temp_files
    }

    /// An `invalid-key` error for a symbolic link at `path` (relative to the root).
    fn link_error(&self, what: &str, key: &str, path: &str) -> StorageError {
        StorageError::InvalidKey(format!(
            "{what} {:?}: {:?} under the table root {} is a symbolic link (links are not followed)",
            clip(key),
            clip(path),
            self.root.display()
        ))
    }

    /// Opens the directory `segments` beneath the root, one component at a
    /// time without following links; with `create`, missing directories are
    /// made (and their names fsynced). A regular file in the way is
    /// `Missing` (a key is not a directory); a link is an error.
    fn dir(
        &self,
        what: &str,
        key: &str,
        segments: &[&str],
        create: bool,
    ) -> Result<DirLookup, StorageError> {
        let mut current: Option<OwnedFd> = None;
        let mut path = String::new();
        for segment in segments {
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(segment);
            let parent = current
                .as_ref()
                .map_or(self.root_fd.as_fd(), |fd| fd.as_fd());
            let opened = loop {
                match open_dir_at(parent, segment) {
                    Ok(fd) => break fd,
                    Err(Errno::NOENT) if create => {
                        match rustix::fs::mkdirat(parent, *segment, Mode::from_raw_mode(0o755)) {
                            // Make the new directory's own name durable too.
                            Ok(()) => rustix::fs::fsync(parent)
                                .map_err(|e| io_error("sync the directory of", key, e.into()))?,
                            Err(Errno::EXIST) => {}
                            Err(e) => {
                                return Err(io_error("create the directory of", key, e.into()))
                            }
                        }
                    }
                    Err(Errno::NOENT) => return Ok(DirLookup::Missing),
                    Err(Errno::LOOP | Errno::NOTDIR | Errno::MLINK) => {
                        return match kind_at(parent, segment) {
                            Some(FileType::Symlink) => Err(self.link_error(what, key, &path)),
                            // A file in the way: no key lives below it.
                            _ if !create => Ok(DirLookup::Missing),
                            _ => Err(io_error(
                                "create the directory of",
                                key,
                                io::Error::new(
                                    io::ErrorKind::NotADirectory,
                                    format!("{:?} is not a directory", clip(&path)),
                                ),
                            )),
                        };
                    }
                    Err(e) => return Err(io_error("open the directory of", key, e.into())),
                }
            };
            current = Some(opened);
        }
        match current {
            Some(fd) => Ok(DirLookup::Found(fd)),
            None => open_dir_at(self.root_fd.as_fd(), ".")
                .map(DirLookup::Found)
                .map_err(|e| io_error("open the directory of", key, e.into())),
        }
    }

    /// The directory of `key` (created with `create`) and the file's name.
    fn parent<'k>(
        &self,
        what: &str,
        key: &'k str,
        create: bool,
    ) -> Result<(DirLookup, &'k str), StorageError> {
        check_key(key)?;
        let segments: Vec<&str> = key.split('/').collect();
        let (name, dirs) = segments.split_last().expect("a key has a segment");
        Ok((self.dir(what, key, dirs, create)?, name))
    }

    /// Errors when `name` in `dir` is a symbolic link.
    fn refuse_link(
        &self,
        what: &str,
        key: &str,
        dir: BorrowedFd<'_>,
        name: &str,
    ) -> Result<(), StorageError> {
        match kind_at(dir, name) {
            Some(FileType::Symlink) => Err(self.link_error(what, key, key)),
            _ => Ok(()),
        }
    }

    /// Writes `value` to a fresh temporary file in `dir` and fsyncs it;
    /// returns its name.
    fn write_temp(&self, dir: BorrowedFd<'_>, value: &[u8]) -> io::Result<String> {
        loop {
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = format!("{TMP_PREFIX}{}.{n}", std::process::id());
            // O_EXCL: never reuse a stale temporary file of a crashed run.
            let fd = match rustix::fs::openat(
                dir,
                tmp.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            ) {
                Ok(fd) => fd,
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            };
            let mut file = File::from(fd);
            let written = file.write_all(value).and_then(|()| file.sync_all());
            if let Err(e) = written {
                let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
                return Err(e);
            }
            return Ok(tmp);
        }
    }
}

/// Opens the directory `name` in `parent` without following a link.
fn open_dir_at(parent: BorrowedFd<'_>, name: &str) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The type of `name` in `dir` (not following a link); `None` if absent.
fn kind_at(dir: BorrowedFd<'_>, name: &str) -> Option<FileType> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| FileType::from_raw_mode(st.st_mode))
}

/// Removes `.sinkcoord-tmp.<pid>.<n>` files whose process is gone, in `dir`
/// and below (never through links). Best effort: errors are ignored.
fn sweep_temp_files(dir: BorrowedFd<'_>, base: &str, depth: usize, removed: &mut Vec<String>) {
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else {
        return;
    };
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." {
            continue;
        }
        if let Some(rest) = name.strip_prefix(TMP_PREFIX) {
            if temp_writer_is_dead(rest)
                && kind_at(dir, name) == Some(FileType::RegularFile)
                && rustix::fs::unlinkat(dir, name, AtFlags::empty()).is_ok()
            {
                removed.push(format!("{base}{name}"));
            }
            continue;
        }
        let is_dir = match entry.file_type() {
            FileType::Directory => true,
            FileType::Unknown => kind_at(dir, name) == Some(FileType::Directory),
            _ => false,
        };
        if is_dir && depth < MAX_DEPTH {
            subdirs.push(name.to_string());
        }
    }
    for name in subdirs {
        if let Ok(fd) = open_dir_at(dir, &name) {
            sweep_temp_files(fd.as_fd(), &format!("{base}{name}/"), depth + 1, removed);
        }
    }
}

/// Whether the writer of temp file `.sinkcoord-tmp.<rest>` is gone: `<rest>`
/// is `<pid>.<n>`, and `kill(pid, 0)` says no such process. Our own files,
/// names of another form, and processes we may not signal (EPERM: alive)
/// are kept.
fn temp_writer_is_dead(rest: &str) -> bool {
    let Some((pid, n)) = rest.split_once('.') else {
        return false;
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(raw) = pid.parse::<i32>() else {
        return false;
    };
    if u32::try_from(raw).ok() == Some(std::process::id()) {
        return false;
    }
    match rustix::process::Pid::from_raw(raw) {
        Some(pid) if raw > 0 => {
            matches!(rustix::process::test_kill_process(pid), Err(Errno::SRCH))
        }
        _ => false,
    }
}

impl Storage for LocalDirStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let (dir, name) = self.parent("key", key, false)?;
        let DirLookup::Found(dir) = dir else {
            return Ok(None);
        };
        // O_NONBLOCK: a FIFO planted under the root must not hang the read.
        let fd = match rustix::fs::openat(
            &dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP | Errno::MLINK) => return Err(self.link_error("key", key, key)),
            Err(e) => return Err(io_error("read", key, e.into())),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| io_error("read", key, e.into()))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {}
            // A directory is a key prefix, not a key.
            FileType::Directory => return Ok(None),
            other => {
                return Err(StorageError::InvalidKey(format!(
                    "key {:?}: {:?} under the table root {} is not a regular file ({other:?})",
                    clip(key),
                    clip(key),
                    self.root.display()
                )))
            }
        }
        let mut file = File::from(fd);
        let mut bytes = Vec::with_capacity(usize::try_from(stat.st_size).unwrap_or(0));
        file.read_to_end(&mut bytes)
            .map_err(|e| io_error("read", key, e))?;
        Ok(Some(bytes))
    }

    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        let (dir, name) = self.parent("key", key, true)?;
        let DirLookup::Found(dir) = dir else {
            unreachable!("create makes the directory or fails")
        };
        let tmp = self
            .write_temp(dir.as_fd(), value)
            .map_err(|e| io_error("write", key, e))?;
        // link(2) fails if the name exists (a link included: it is not
        // followed): an atomic create that publishes a complete, fsynced
        // file, or nothing.
        let linked = rustix::fs::linkat(&dir, tmp.as_str(), &dir, name, AtFlags::empty());
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
        match linked {
            Ok(()) => {
                rustix::fs::fsync(&dir)
                    .map_err(|e| io_error("sync the directory of", key, e.into()))?;
                Ok(true)
            }
            Err(Errno::EXIST) => {
                self.refuse_link("key", key, dir.as_fd(), name)?;
                Ok(false)
            }
            Err(e) => Err(io_error("create", key, e.into())),
        }
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        let (dir, name) = self.parent("key", key, true)?;
        let DirLookup::Found(dir) = dir else {
            unreachable!("create makes the directory or fails")
        };
        // rename(2) would replace a link itself, never its target; refuse it
        // anyway, like every other call.
        self.refuse_link("key", key, dir.as_fd(), name)?;
        let tmp = self
            .write_temp(dir.as_fd(), value)
            .map_err(|e| io_error("write", key, e))?;
        // rename(2) replaces the target atomically.
        if let Err(e) = rustix::fs::renameat(&dir, tmp.as_str(), &dir, name) {
            let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
            return Err(io_error("replace", key, e.into()));
        }
        rustix::fs::fsync(&dir).map_err(|e| io_error("sync the directory of", key, e.into()))
    }

    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        let (dir, name) = self.parent("key", key, false)?;
        // Deleting a missing key succeeds.
        let DirLookup::Found(dir) = dir else {
            return Ok(());
        };
        match kind_at(dir.as_fd(), name) {
            None | Some(FileType::Directory) => return Ok(()),
            Some(FileType::Symlink) => return Err(self.link_error("key", key, key)),
            Some(_) => {}
        }
        match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
            Ok(()) => rustix::fs::fsync(&dir)
                .map_err(|e| io_error("sync the directory of", key, e.into())),
            Err(Errno::NOENT | Errno::ISDIR) => Ok(()),
            Err(e) => Err(io_error("delete", key, e.into())),
        }
    }

    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.list_keys(prefix, None)
    }
}

impl LocalDirStorage {
    /// Like `list`, but a symbolic link (or an unreadable directory) is
    /// reported and skipped instead of failing the whole listing: for tools
    /// that show what they can of a damaged table (`sinkcoord inspect`).
    /// Returns the keys and one message per problem.
    pub fn list_tolerant(
        &mut self,
        prefix: &str,
    ) -> Result<(Vec<String>, Vec<String>), StorageError> {
        let mut problems = Vec::new();
        let keys = match self.list_keys(prefix, Some(&mut problems)) {
            Ok(keys) => keys,
            // The prefix's own directory is a link, or cannot be opened.
            Err(e) => {
                problems.push(e.to_string());
                Vec::new()
            }
        };
        Ok((keys, problems))
    }

    fn list_keys(
        &self,
        prefix: &str,
        mut problems: Option<&mut Vec<String>>,
    ) -> Result<Vec<String>, StorageError> {
        check_prefix(prefix)?;
        // Only the directory named by the prefix's complete segments can hold
        // matching keys; walk it rather than the whole root.
        let (dir_part, _) = prefix.rsplit_once('/').unwrap_or(("", prefix));
        let segments: Vec<&str> = if dir_part.is_empty() {
            Vec::new()
        } else {
            dir_part.split('/').collect()
        };
        let mut keys = Vec::new();
        if let DirLookup::Found(dir) = self.dir("prefix", prefix, &segments, false)? {
            let base = if dir_part.is_empty() {
                String::new()
            } else {
                format!("{dir_part}/")
            };
            self.walk(dir.as_fd(), &base, prefix, 0, &mut keys, &mut problems)?;
        }
        // String order is byte order.
        keys.sort();
        Ok(keys)
    }
}

impl LocalDirStorage {
    /// Collects the keys under `dir` (whose key prefix is `base`) that start
    /// with `prefix`. A link that would be listed or descended into is an
    /// error; other links, temporary files, names that are not UTF-8, and
    /// special files are not keys.
    fn walk(
        &self,
        dir: BorrowedFd<'_>,
        base: &str,
        prefix: &str,
        depth: usize,
        keys: &mut Vec<String>,
        problems: &mut Option<&mut Vec<String>>,
    ) -> Result<(), StorageError> {
        // In a tolerant listing a problem is noted and the walk goes on.
        fn note(
            problems: &mut Option<&mut Vec<String>>,
            e: StorageError,
        ) -> Result<(), StorageError> {
            match problems.as_deref_mut() {
                Some(list) => {
                    list.push(e.to_string());
                    Ok(())
                }
                None => Err(e),
            }
        }
        let listing = |e: Errno| io_error("list", prefix, e.into());
        let entries = rustix::fs::Dir::read_from(dir).map_err(listing)?;
        for entry in entries {
            let entry = entry.map_err(listing)?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if name == "." || name == ".." || name.starts_with(TMP_PREFIX) {
                continue;
            }
            let key = format!("{base}{name}");
            let sub = format!("{key}/");
            let relevant = key.starts_with(prefix) || prefix.starts_with(&sub);
            if !relevant {
                continue;
            }
            let file_type = match entry.file_type() {
                FileType::Unknown => kind_at(dir, name).unwrap_or(FileType::Unknown),
                known => known,
            };
            match file_type {
                FileType::Symlink => note(problems, self.link_error("prefix", prefix, &key))?,
                FileType::Directory => {
                    // Descend only where matching keys can be.
                    if !(sub.starts_with(prefix) || prefix.starts_with(&sub)) {
                        continue;
                    }
                    if depth >= MAX_DEPTH {
                        return Err(StorageError::Io(format!(
                            "cannot list {:?}: directories nested deeper than {MAX_DEPTH} levels under the table root",
                            clip(prefix)
                        )));
                    }
                    let sub_fd = match open_dir_at(dir, name) {
                        Ok(fd) => fd,
                        // Replaced by a link since it was read.
                        Err(Errno::LOOP | Errno::NOTDIR | Errno::MLINK) => {
                            note(problems, self.link_error("prefix", prefix, &key))?;
                            continue;
                        }
                        Err(Errno::NOENT) => continue,
                        Err(e) => {
                            note(problems, listing(e))?;
                            continue;
                        }
                    };
                    self.walk(sub_fd.as_fd(), &sub, prefix, depth + 1, keys, problems)?;
                }
                FileType::RegularFile if key.starts_with(prefix) => keys.push(key),
                _ => {}
            }
        }
        Ok(())
    }
}

/// At most a few hundred bytes of `s` (on a char boundary), for messages
/// that echo a key.
fn clip(s: &str) -> String {
    const MAX: usize = 200;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

fn check_chars(what: &str, s: &str) -> Result<(), StorageError> {
    let problem = if s.contains('\\') {
        "contains a backslash"
    } else if s.contains('\0') {
        "contains NUL"
    } else if s.starts_with('/') {
        "is absolute"
    } else {
        return Ok(());
    };
    Err(StorageError::InvalidKey(format!(
        "{what} {:?} {problem}",
        clip(s)
    )))
}

fn check_segment(what: &str, s: &str, segment: &str) -> Result<(), StorageError> {
    let problem = if segment.is_empty() {
        "has an empty segment".to_string()
    } else if segment == "." || segment == ".." {
        format!("has a {segment:?} segment")
    } else if segment.starts_with(TMP_PREFIX) {
        format!("uses the reserved name prefix {TMP_PREFIX:?}")
    } else {
        return Ok(());
    };
    Err(StorageError::InvalidKey(format!(
        "{what} {:?} {problem}",
        clip(s)
    )))
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
    StorageError::Io(format!("cannot {op} {:?}: {e}", clip(key)))
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
