//! [`LocalDirStorage`]: one file per key under a root directory, with
//! atomic create-once (`put_if_absent`) and atomic overwrite (`put`), fsync
//! of files and directories, keys confined under the root (no link is
//! followed), and every value bounded (see [`ValueTooLarge`]).

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use sink_coordinator::{Storage, StorageError};

use super::keys::{check_key, clip};

mod list;
#[cfg(test)]
mod tests;

/// Temporary files start with this; keys may not, so `list` never shows them.
/// The full name is `.sinkcoord-tmp.<pid>.<n>`: the writer's process id
/// tells [`LocalDirStorage::open`] whether its writer is still alive.
pub const TMP_PREFIX: &str = ".sinkcoord-tmp.";

/// Distinguishes temporary files of several storages in one process.
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How deep `list` and the temp-file sweep descend below the root. Keys
/// written by the coordinator have two segments; a deeper tree is hostile.
const MAX_DEPTH: usize = 64;

/// The default bound on one value ([`LocalDirStorage::max_value_bytes`]):
/// 2 GiB, above the largest snapshot the core's default limits let a commit
/// write (`max-snapshot-bytes` 1.25 GiB plus framing), and below the 3 GiB
/// sparse file of issue 26 that used to be read whole. The Node and Python
/// hosts' directory storages use the same default.
pub const DEFAULT_MAX_VALUE_BYTES: u64 = 2 << 30;

/// The bound on a value under `hint/`: the core writes a decimal snapshot id
/// there (at most 20 bytes), so a larger hint is hostile and must not cost
/// its size in memory on every open.
pub const MAX_HINT_BYTES: u64 = 4096;

/// Keys whose values are hints (bounded by [`MAX_HINT_BYTES`]).
const HINT_PREFIX: &str = "hint/";

/// A value above the storage's bound: refused before a byte of it is read
/// (its size is checked with `fstat` first, and at most `limit + 1` bytes
/// are ever read), and refused before it is written, so no value this
/// storage publishes is one it cannot read back. Carried as the source of a
/// [`StorageError::Backend`] (`io` across the WIT boundary, with this text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueTooLarge {
    /// The key.
    pub key: String,
    /// The value's size in bytes (at least `limit + 1` if it grew while read).
    pub size: u64,
    /// The bound that applies to the key.
    pub limit: u64,
}

impl std::fmt::Display for ValueTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bound = if self.key.starts_with(HINT_PREFIX) {
            "the hint limit"
        } else {
            "the storage's max value bytes"
        };
        write!(
            f,
            "the value of key {:?} holds {} bytes, more than {bound} ({} bytes)",
            clip(&self.key),
            self.size,
            self.limit
        )
    }
}

impl std::error::Error for ValueTooLarge {}

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
    /// The largest value read or written (see [`ValueTooLarge`]).
    max_value_bytes: u64,
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
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
        };
        let mut removed = Vec::new();
        sweep_temp_files(storage.root_fd.as_fd(), "", 0, &mut removed);
        removed.sort();
        storage.removed_temp_files = removed;
        Ok(storage)
    }

    /// The table's directory, as given to `open`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Sets the bound on one value (default [`DEFAULT_MAX_VALUE_BYTES`]);
    /// values under `hint/` are bounded by [`MAX_HINT_BYTES`] too. A larger
    /// value is a [`ValueTooLarge`] error on `get`, `put` and
    /// `put_if_absent`. Set it above the snapshots the coordinator's limits
    /// allow (`max-snapshot-bytes` plus framing).
    pub fn with_max_value_bytes(mut self, max: u64) -> Self {
        self.max_value_bytes = max;
        self
    }

    /// The bound on one value (see [`with_max_value_bytes`](Self::with_max_value_bytes)).
    pub fn max_value_bytes(&self) -> u64 {
        self.max_value_bytes
    }

    /// The bound that applies to `key`'s value.
    fn limit_for(&self, key: &str) -> u64 {
        if key.starts_with(HINT_PREFIX) {
            self.max_value_bytes.min(MAX_HINT_BYTES)
        } else {
            self.max_value_bytes
        }
    }

    /// A [`ValueTooLarge`] error, as a storage error of `op`.
    fn too_large(&self, op: &str, key: &str, size: u64, limit: u64) -> StorageError {
        StorageError::backend(
            format!("cannot {op} {:?}", clip(key)),
            ValueTooLarge {
                key: key.to_string(),
                size,
                limit,
            },
        )
    }

    /// Refuses a value larger than `key`'s bound before anything is written
    /// (after the key's own check, which comes first as for every call).
    fn check_write_size(&self, op: &str, key: &str, value: &[u8]) -> Result<(), StorageError> {
        check_key(key)?;
        let limit = self.limit_for(key);
        let size = value.len() as u64;
        if size > limit {
            return Err(self.too_large(op, key, size, limit));
        }
        Ok(())
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

    /// When the value at `key` was last written, in milliseconds since the
    /// Unix epoch (`None`: no such key). For tools that must leave recent
    /// files alone (`sinkcoord expire --orphans`).
    pub fn modified_ms(&self, key: &str) -> Result<Option<u64>, StorageError> {
        let (dir, name) = self.parent("key", key, false)?;
        let DirLookup::Found(dir) = dir else {
            return Ok(None);
        };
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            // The nanoseconds' type differs between rustix's backends.
            #[allow(clippy::unnecessary_cast)]
            Ok(st) => Ok(Some(
                u64::try_from(st.st_mtime)
                    .unwrap_or(0)
                    .saturating_mul(1000)
                    .saturating_add(st.st_mtime_nsec as u64 / 1_000_000),
            )),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io_error("stat", key, e.into())),
        }
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

    /// An `invalid-key` error for a FIFO, device, socket or directory at a
    /// key: it is neither a value nor missing.
    fn special_error(&self, key: &str, kind: FileType) -> StorageError {
        StorageError::InvalidKey(format!(
            "key {:?}: {:?} under the table root {} is not a regular file ({kind:?})",
            clip(key),
            clip(key),
            self.root.display()
        ))
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
            // A directory at a key the core reads (a snapshot, a tag, the
            // hint) is planted, and calling it missing would let a commit
            // "create" it and fail (issue 26): refused like a FIFO.
            other => return Err(self.special_error(key, other)),
        }
        // The size is checked before a byte is read (a sparse file costs no
        // disk and would cost its whole size in memory), and at most
        // limit + 1 bytes are read in case the file grows meanwhile.
        let limit = self.limit_for(key);
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size > limit {
            return Err(self.too_large("read", key, size, limit));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        File::from(fd)
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| io_error("read", key, e))?;
        if bytes.len() as u64 > limit {
            return Err(self.too_large("read", key, bytes.len() as u64, limit));
        }
        Ok(Some(bytes))
    }

    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.check_write_size("create", key, value)?;
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
            // Only a value exists: a link, FIFO, device or directory in the
            // way is refused, not reported as the key's value.
            Err(Errno::EXIST) => match kind_at(dir.as_fd(), name) {
                Some(FileType::Symlink) => Err(self.link_error("key", key, key)),
                Some(FileType::RegularFile) | None => Ok(false),
                Some(other) => Err(self.special_error(key, other)),
            },
            Err(e) => Err(io_error("create", key, e.into())),
        }
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.check_write_size("write", key, value)?;
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

pub(crate) fn io_error(op: &str, key: &str, e: io::Error) -> StorageError {
    StorageError::Io(format!("cannot {op} {:?}: {e}", clip(key)))
}
