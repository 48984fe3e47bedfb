//! What `sinkcoord inspect` sees in a table directory besides the keys the
//! storage lists: special files at keys and a layout that is not a table.
//!
//! The directory storage lists regular files only (and names symbolic
//! links), so a FIFO, device, socket or directory where a snapshot should
//! be was not listed: `inspect` called the snapshot "missing", or printed
//! "0 snapshots" and exited 0, while every commit failed on it (the
//! storage refuses such a file at a key). A directory laid out otherwise,
//! such as the Flink connector's (the log under `log/`, records under
//! `data/`), printed `0 snapshot(s)` and exited 0 too (issue 26). Each is
//! now a problem of its own, so `inspect` exits 1.

use std::path::Path;

use sink_coordinator::table;
use sink_coordinator_host::storage::TMP_PREFIX;
use sink_coordinator_testkit::render;

use crate::clip;
use crate::wipe::kind_name;

/// The problems found, and the ids of snapshot keys held by special files
/// (present, so not a gap, but unreadable).
#[derive(Debug, Default)]
pub struct Layout {
    pub problems: Vec<String>,
    pub special_ids: Vec<u64>,
}

/// The directories the coordinator writes at the top of a table.
const TABLE_DIRS: [&str; 3] = ["snapshot", "tag", "hint"];

fn quoted(path: &str) -> String {
    render::json_str(&clip(path, 200))
}

/// Scans the table directory `root` (without following links below it).
/// A directory that cannot be read is a problem, not a failure: the rest
/// of the table is still listed.
pub fn scan(root: &Path) -> Layout {
    let mut out = Layout::default();
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) => {
            out.problems
                .push(format!("cannot read the table directory: {e}"));
            return out;
        }
    };
    let mut foreign = Vec::new();
    let mut table_dirs = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if name.starts_with(TMP_PREFIX) && kind.is_file() {
            continue;
        }
        if TABLE_DIRS.contains(&name.as_str()) {
            if kind.is_dir() {
                table_dirs += 1;
                scan_dir(&entry.path(), &format!("{name}/"), &mut out);
            } else if !(kind.is_symlink() && name != "hint") {
                // A linked snapshot/ or tag/ is named by the storage's
                // listing already.
                out.problems.push(format!(
                    "{}: {} where the table's directory {name}/ should be",
                    quoted(&name),
                    kind_name(&kind)
                ));
            }
            continue;
        }
        foreign.push((name, kind));
    }
    foreign.sort_by(|a, b| a.0.cmp(&b.0));
    let flink = table_dirs == 0 && root.join("log").join("snapshot").is_dir();
    if flink {
        out.problems.push(format!(
            "no snapshot/ directory, but log/snapshot/ exists: this looks like a table of the \
             Flink connector, whose log is under log/ (inspect {} instead)",
            root.join("log").display()
        ));
    }
    for (name, kind) in foreign {
        if flink && (name == "log" || name == "data") {
            continue;
        }
        out.problems.push(format!(
            "{}: {}, not part of a table (the coordinator writes only snapshot/, tag/ and hint/)",
            quoted(&name),
            kind_name(&kind)
        ));
    }
    out
}

/// One of the table's directories (`prefix` is `snapshot/`, `tag/` or
/// `hint/`): every entry that the storage would refuse or skip at a key.
fn scan_dir(dir: &Path, prefix: &str, out: &mut Layout) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        // The storage's listing reports an unreadable directory.
        return;
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        // Regular files are keys (checked by name by `inspect`); links are
        // named by the storage's listing; temporary files are the storage's.
        if kind.is_file() || name.starts_with(TMP_PREFIX) {
            continue;
        }
        if kind.is_symlink() && prefix != "hint/" {
            continue;
        }
        found.push((format!("{prefix}{name}"), kind));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, kind) in found {
        let snapshot_id = crate::inspect::snapshot_id_of(&key);
        if let Some(id) = snapshot_id {
            out.special_ids.push(id);
        }
        let at_key = snapshot_id.is_some() || key == table::LATEST_HINT || prefix == "tag/";
        out.problems.push(if at_key {
            format!(
                "{}: {} at a key, not a regular file (the storage refuses it: every read and \
                 commit of that key fails)",
                quoted(&key),
                kind_name(&kind)
            )
        } else {
            format!(
                "{}: {}, not written by the coordinator",
                quoted(&key),
                kind_name(&kind)
            )
        });
    }
}
