//! The check before `sinkcoord simulate` wipes its table: the table may hold
//! only what this project writes there, checked file by file, so that a
//! mistyped `--table` loses nothing.
//!
//! The simulator's own check (in the test kit) looks at the names at the
//! top of the directory only, and would then delete any file under
//! `snapshot/`, `tag/` or `hint/` (issue 26). This one walks the whole
//! table first and names the first path that is not the coordinator's:
//!
//! - `snapshot/<20 digits>` (a snapshot id above 0, as the core names it);
//! - `tag/savepoint-<decimal>` (the only tags the core creates);
//! - `hint/latest-snapshot`;
//! - the local storage's temporary files (`.sinkcoord-tmp.*`) in those
//!   directories (and at the top, where older versions left them);
//!
//! each a regular file (a directory, a symbolic link, a FIFO, a device or a
//! socket is refused). For a table URL the same key rules apply to every key
//! the store lists.

use std::fs::FileType;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use sink_coordinator::table;
use sink_coordinator::Storage;
use sink_coordinator_host::storage::{TableUrl, TMP_PREFIX};
use sink_coordinator_testkit::render;
use sink_coordinator_testkit::sim::TableLocation;

use crate::{clip, Failure};

/// Whether `key` (a path below the table root, `/`-separated) is a file the
/// coordinator writes.
pub fn is_coordinator_key(key: &str) -> bool {
    if let Some(digits) = key.strip_prefix(table::SNAPSHOT_PREFIX) {
        return digits.len() == 20
            && digits.bytes().all(|b| b.is_ascii_digit())
            && digits.parse::<u64>().is_ok_and(|id| id > 0);
    }
    if let Some(name) = key.strip_prefix(table::TAG_PREFIX) {
        return name.strip_prefix("savepoint-").is_some_and(|n| {
            !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && n.parse::<u64>().is_ok_and(|id| id.to_string() == n)
        });
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

fn refuse(table: &str, path: &str, why: &str) -> Failure {
    Failure::host(format!(
        "refusing to wipe {table}: it holds {} ({why}), which this project does not write \
         (choose another --table, or remove it yourself)",
        render::json_str(&clip(path, 300))
    ))
}

/// Refuses (exit 1, naming the offending path) a table that holds anything
/// the coordinator does not write; a storage that cannot be read is a
/// storage failure (exit 3). `memory` tables are always fine.
pub fn check_before_wipe(table: &str, memory: bool) -> Result<(), Failure> {
    if memory {
        return Ok(());
    }
    // An unparsable --table is the campaign's error, with its own message.
    match TableLocation::parse(table) {
        Ok(TableLocation::Memory) | Err(_) => Ok(()),
        Ok(TableLocation::Dir(dir)) => check_dir(table, &dir),
        Ok(TableLocation::Url { url, .. }) => check_url(&url),
    }
}

fn check_dir(table: &str, dir: &Path) -> Result<(), Failure> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(refuse(table, &dir.display().to_string(), "not a directory"))
        }
        Err(e) => {
            return Err(Failure::storage(format!(
                "cannot read {}: {e}",
                dir.display()
            )))
        }
    };
    for entry in entries {
        let entry =
            entry.map_err(|e| Failure::storage(format!("cannot read {}: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().map_err(|e| {
            Failure::storage(format!("cannot read {}: {e}", entry.path().display()))
        })?;
        if kind.is_file() && name.starts_with(TMP_PREFIX) {
            continue;
        }
        let prefix = match name.as_str() {
            "snapshot" | "tag" | "hint" if kind.is_dir() => format!("{name}/"),
            _ => {
                let why = if kind.is_file() {
                    "a file outside snapshot/, tag/ and hint/".to_string()
                } else {
                    format!("{} outside snapshot/, tag/ and hint/", kind_name(&kind))
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
fn check_subdir(table: &str, dir: &Path, prefix: &str) -> Result<(), Failure> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Failure::storage(format!("cannot read {}: {e}", dir.display())))?;
    for entry in entries {
        let entry =
            entry.map_err(|e| Failure::storage(format!("cannot read {}: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let key = format!("{prefix}{name}");
        let kind = entry.file_type().map_err(|e| {
            Failure::storage(format!("cannot read {}: {e}", entry.path().display()))
        })?;
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

fn check_url(url: &str) -> Result<(), Failure> {
    let mut storage = match TableUrl::parse(url).and_then(|u| u.open(true, &[])) {
        Ok(storage) => storage,
        // The campaign opens it again and reports the same error.
        Err(_) => return Ok(()),
    };
    let keys = storage
        .list("")
        .map_err(|e| Failure::storage(format!("cannot list {url}: {e}")))?;
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
            "hint/other",
            "notes.txt",
            "",
        ] {
            assert!(!is_coordinator_key(key), "{key}");
        }
    }
}
