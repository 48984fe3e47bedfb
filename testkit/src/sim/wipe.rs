//! The check before the simulator wipes its table: the table may hold only
//! what this project writes there, checked file by file, so that a
//! mistyped `--table` (CLI or library) loses nothing. What is allowed:
//!
//! - `snapshot/<20 digits>` (a snapshot id above 0, as the core names it);
//! - `tag/savepoint-<decimal>` (the only tags the core creates);
//! - `hint/latest-snapshot`;
//! - of a Paimon table the simulator wrote (`--table-format paimon`):
//!   `schema/schema-<n>`, `snapshot/snapshot-<n>`, `snapshot/LATEST`,
//!   `snapshot/EARLIEST`, `manifest/manifest-…` and `manifest/manifest-list-…`,
//!   `tag/tag-savepoint-<n>`, and the writers' `bucket-0/data-….parquet`;
//! - the local storage's temporary files (`.sinkcoord-tmp.*`) in those
//!   directories (and at the top, where older versions left them);
//!
//! each a regular file (a directory, a symbolic link, a FIFO, a device or a
//! socket is refused). For a table URL the same key rules apply to every
//! key the store lists.

use std::fmt;
use std::fs::FileType;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use sink_coordinator::table;
use sink_coordinator_host::storage::TMP_PREFIX;

/// Why a table may not be wiped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WipeError {
    /// It holds something this project does not write (the message names it).
    Refused(String),
    /// It could not be read.
    Storage(String),
}

impl fmt::Display for WipeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WipeError::Refused(m) | WipeError::Storage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for WipeError {}

/// A decimal number as Paimon and the core write it (no sign, no leading zero).
fn is_number(n: &str) -> bool {
    !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && n.parse::<u64>().is_ok_and(|id| id.to_string() == n)
}

/// Whether `key` is a file of a Paimon table the simulator wrote.
fn is_paimon_key(key: &str) -> bool {
    let plain = |name: &str| !name.contains('/') && !name.is_empty();
    if let Some(n) = key.strip_prefix("schema/schema-") {
        return is_number(n);
    }
    if let Some(rest) = key.strip_prefix("snapshot/") {
        return rest == "LATEST"
            || rest == "EARLIEST"
            || rest.strip_prefix("snapshot-").is_some_and(is_number);
    }
    if let Some(name) = key.strip_prefix("manifest/") {
        return plain(name) && name.starts_with("manifest-");
    }
    if let Some(n) = key.strip_prefix("tag/tag-savepoint-") {
        return is_number(n);
    }
    key.strip_prefix("bucket-0/data-")
        .and_then(|n| n.strip_suffix(".parquet"))
        .is_some_and(plain)
}

/// Whether `key` (a path below the table root, `/`-separated) is a file the
/// coordinator writes (or, on a Paimon table, the simulator's writers).
pub fn is_coordinator_key(key: &str) -> bool {
    if is_paimon_key(key) {
        return true;
    }
    if let Some(digits) = key.strip_prefix(table::SNAPSHOT_PREFIX) {
        return digits.len() == 20
            && digits.bytes().all(|b| b.is_ascii_digit())
            && digits.parse::<u64>().is_ok_and(|id| id > 0);
    }
    if let Some(name) = key.strip_prefix(table::TAG_PREFIX) {
        return name.strip_prefix("savepoint-").is_some_and(is_number);
    }
    key == table::LATEST_HINT
}

/// What a file type is called in a refusal.
pub fn kind_name(t: &FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// At most 300 bytes of a path, cut at a character boundary.
fn clip(path: &str) -> &str {
    let mut end = path.len().min(300);
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    &path[..end]
}

fn refuse(table: &str, path: &str, why: &str) -> WipeError {
    WipeError::Refused(format!(
        "refusing to wipe {table}: it holds {} ({why}), which this project does not write \
         (choose another --table, or remove it yourself)",
        crate::render::json_str(clip(path))
    ))
}

fn unreadable(path: &Path, e: std::io::Error) -> WipeError {
    WipeError::Storage(format!("cannot read {}: {e}", path.display()))
}

/// Checks the table directory `dir` (named `table` in messages) before it
/// is wiped; a missing directory is fine.
pub fn check_dir(table: &str, dir: &Path) -> Result<(), WipeError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(refuse(table, &dir.display().to_string(), "not a directory"))
        }
        Err(e) => return Err(unreadable(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| unreadable(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry
            .file_type()
            .map_err(|e| unreadable(&entry.path(), e))?;
        if kind.is_file() && name.starts_with(TMP_PREFIX) {
            continue;
        }
        let prefix = match name.as_str() {
            "snapshot" | "tag" | "hint" | "schema" | "manifest" | "bucket-0" if kind.is_dir() => {
                format!("{name}/")
            }
            _ => {
                const DIRS: &str =
                    "snapshot/, tag/, hint/ (and a Paimon table's schema/, manifest/, bucket-0/)";
                let why = if kind.is_file() {
                    format!("a file outside {DIRS}")
                } else {
                    format!("{} outside {DIRS}", kind_name(&kind))
                };
                return Err(refuse(table, &name, &why));
            }
        };
        check_subdir(table, &entry.path(), &prefix)?;
    }
    Ok(())
}

/// One of `snapshot/`, `tag/`, `hint/`: regular files with the
/// coordinator's names (or temporary files) only; nothing below them.
fn check_subdir(table: &str, dir: &Path, prefix: &str) -> Result<(), WipeError> {
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| unreadable(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let key = format!("{prefix}{name}");
        let kind = entry
            .file_type()
            .map_err(|e| unreadable(&entry.path(), e))?;
        if !kind.is_file() {
            return Err(refuse(table, &key, kind_name(&kind)));
        }
        if !(name.starts_with(TMP_PREFIX) || is_coordinator_key(&key)) {
            return Err(refuse(
                table,
                &key,
                "a file not named like the coordinator's",
            ));
        }
    }
    Ok(())
}

/// Checks the keys a table opened by URL lists before they are deleted.
pub fn check_keys(url: &str, keys: &[String]) -> Result<(), WipeError> {
    match keys.iter().find(|k| !is_coordinator_key(k)) {
        Some(key) => Err(refuse(url, key, "a key not named like the coordinator's")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_keys() {
        for key in [
            "snapshot/00000000000000000001",
            "snapshot/18446744073709551615",
            "tag/savepoint-0",
            "tag/savepoint-42",
            "hint/latest-snapshot",
            "schema/schema-0",
            "snapshot/snapshot-12",
            "snapshot/LATEST",
            "snapshot/EARLIEST",
            "manifest/manifest-list-0f2a-1",
            "tag/tag-savepoint-3",
            "bucket-0/data-a-s0-c1-a0-k0.parquet",
        ] {
            assert!(is_coordinator_key(key), "{key}");
        }
        for key in [
            "snapshot/00000000000000000000",
            "snapshot/1",
            "snapshot/99999999999999999999",
            "snapshot/00000000000000000001/x",
            "tag/savepoint-",
            "tag/savepoint-01",
            "tag/release",
            "tag/savepoint-1/x",
            "schema/schema-01",
            "snapshot/snapshot-x",
            "manifest/other",
            "tag/tag-release",
            "bucket-0/part-0.parquet",
            "bucket-1/data-a.parquet",
            "hint/other",
            "notes.txt",
            "",
        ] {
            assert!(!is_coordinator_key(key), "{key}");
        }
    }

    #[test]
    fn files_below_the_table_directories_are_checked_too() {
        let root = std::env::temp_dir().join(format!("sinkcoord-wipe-deep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("snapshot")).unwrap();
        std::fs::write(root.join("snapshot/00000000000000000001"), b"x").unwrap();
        assert_eq!(check_dir("t", &root), Ok(()));
        // A foreign file inside snapshot/ (the top-level check let it through).
        std::fs::write(root.join("snapshot/notes.txt"), b"keep me").unwrap();
        let err = check_dir("t", &root).unwrap_err();
        assert!(
            matches!(&err, WipeError::Refused(m) if m.contains("snapshot/notes.txt")),
            "{err}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
