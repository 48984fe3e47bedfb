//! Listing a local-directory table: the byte-ordered `list` and the
//! tolerant listing of `sinkcoord inspect`.

use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::FileType;
use rustix::io::Errno;

use sink_coordinator::StorageError;

use super::{io_error, kind_at, open_dir_at, DirLookup, LocalDirStorage, MAX_DEPTH, TMP_PREFIX};
use crate::storage::keys::{check_prefix, clip};

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

    pub(super) fn list_keys(
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
