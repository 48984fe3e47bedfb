//! The Apache Paimon half of `sinkcoord expire` (docs/retention.md): which
//! manifest files only expired snapshots referenced, and the orphan data
//! files that no kept snapshot or tag references.
//!
//! Both are decided from what is referenced, never from what merely exists:
//! a manifest is deleted only if an expired snapshot referenced it and no
//! kept snapshot or tag does. A committer writing its next snapshot writes
//! new manifest files, which no expired snapshot can name, and builds on the
//! lists of a snapshot it has read (kept: no snapshot at or above a commit
//! user's mark is expired). Data files are never deleted by snapshot expiry
//! (an append table only adds them); an unreferenced one is an orphan only
//! when it is older than the grace period, because a writer writes it before
//! the commit that will reference it. If any reference cannot be read, no
//! manifest and no orphan is deleted.

use std::collections::BTreeSet;

use serde::Serialize;
use sink_coordinator::Storage;
use sink_coordinator_host::storage::AnyStorage;
use sink_coordinator_paimon::manifest;
use sink_coordinator_paimon::snapshot as psnap;

/// An orphan data file.
#[derive(Clone, Debug, Serialize)]
pub struct Orphan {
    /// Its key under the table.
    pub key: String,
    /// When it was last written (milliseconds since the Unix epoch).
    pub modified_ms: u64,
    /// Whether this run deleted it.
    pub deleted: bool,
}

/// What a set of snapshots references.
#[derive(Default)]
struct Refs {
    /// Manifest lists and index manifests (names under `manifest/`).
    lists: BTreeSet<String>,
    /// Manifests (names under `manifest/`).
    manifests: BTreeSet<String>,
    /// Data file names (with `files`).
    files: BTreeSet<String>,
}

impl Refs {
    fn names(&self) -> impl Iterator<Item = &String> {
        self.lists.iter().chain(&self.manifests)
    }
}

fn snapshot_at(storage: &mut AnyStorage, key: &str) -> Result<Option<psnap::Snapshot>, String> {
    let Some(bytes) = storage
        .get(key)
        .map_err(|e| format!("cannot read {key}: {e}"))?
    else {
        return Ok(None);
    };
    psnap::decode_snapshot(&bytes)
        .map(Some)
        .map_err(|e| format!("{key} is not a Paimon snapshot: {e:?}"))
}

/// Adds what `s` references to `refs`. A manifest list that is missing is an
/// error unless `tolerate_missing` (an expired snapshot's, which an earlier
/// run may have deleted already); with `files`, every manifest is read for
/// its data files' names (once per manifest).
fn add_refs(
    storage: &mut AnyStorage,
    s: &psnap::Snapshot,
    refs: &mut Refs,
    files: bool,
    tolerate_missing: bool,
) -> Result<(), String> {
    let lists = [
        Some(&s.base_manifest_list),
        Some(&s.delta_manifest_list),
        s.changelog_manifest_list.as_ref(),
    ];
    if let Some(index) = &s.index_manifest {
        refs.lists.insert(index.clone());
    }
    for list in lists.into_iter().flatten() {
        if !refs.lists.insert(list.clone()) {
            continue;
        }
        let key = psnap::manifest_key(list);
        let Some(bytes) = storage
            .get(&key)
            .map_err(|e| format!("cannot read {key}: {e}"))?
        else {
            if tolerate_missing {
                continue;
            }
            return Err(format!(
                "{key}, which snapshot {} references, is missing",
                s.id
            ));
        };
        let metas = manifest::decode_manifest_list(&bytes)
            .map_err(|e| format!("{key} cannot be decoded: {e:?}"))?;
        for m in metas {
            if !refs.manifests.insert(m.file_name.clone()) || !files {
                continue;
            }
            let key = psnap::manifest_key(&m.file_name);
            let bytes = storage
                .get(&key)
                .map_err(|e| format!("cannot read {key}: {e}"))?
                .ok_or_else(|| format!("{key}, which snapshot {} references, is missing", s.id))?;
            let entries = manifest::decode_manifest(&bytes)
                .map_err(|e| format!("{key} cannot be decoded: {e:?}"))?;
            refs.files.extend(entries.into_iter().map(|e| e.file_name));
        }
    }
    Ok(())
}

/// What the kept snapshots (from `earliest` up to the latest, and any a
/// committer created since `latest` was read) and the kept tags reference.
fn kept_refs(
    storage: &mut AnyStorage,
    earliest: u64,
    latest: u64,
    files: bool,
) -> Result<Refs, String> {
    let mut refs = Refs::default();
    let mut id = earliest.max(1);
    loop {
        let key = psnap::snapshot_key(id as i64);
        match snapshot_at(storage, &key)? {
            Some(s) => add_refs(storage, &s, &mut refs, files, false)?,
            None if id <= latest => return Err(format!("kept snapshot {key} is missing")),
            None => break,
        }
        id += 1;
    }
    // Listed now, not when the run began: a tag created since (a restored
    // coordinator tagging an owed savepoint) keeps its files too.
    let tags = storage
        .list("tag/")
        .map_err(|e| format!("cannot list the tags: {e}"))?;
    for key in tags {
        // A tag deleted since it was listed references nothing any more.
        if let Some(s) = snapshot_at(storage, &key)? {
            add_refs(storage, &s, &mut refs, files, false)?;
        }
    }
    Ok(refs)
}

/// The manifest files (lists and manifests) that the snapshots `expired`
/// referenced and that nothing kept references, by name.
pub fn only_expired_manifests(
    storage: &mut AnyStorage,
    expired: &[u64],
    earliest: u64,
    latest: u64,
) -> Result<Vec<String>, String> {
    let mut gone = Refs::default();
    for id in expired {
        if let Some(s) = snapshot_at(storage, &psnap::snapshot_key(*id as i64))? {
            add_refs(storage, &s, &mut gone, false, true)?;
        }
    }
    let kept = kept_refs(storage, earliest, latest, false)?;
    let kept: BTreeSet<&String> = kept.names().collect();
    Ok(gone
        .names()
        .filter(|n| !kept.contains(n))
        .cloned()
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect())
}

/// The directories of a Paimon table that hold no data files.
const METADATA_DIRS: [&str; 10] = [
    "snapshot",
    "manifest",
    "schema",
    "tag",
    "index",
    "statistics",
    "changelog",
    "branch",
    "consumer",
    "service",
];

/// Whether `key` is where Paimon keeps a data file: `[partition/]bucket-<n>/<name>`.
fn data_file_name(key: &str) -> Option<&str> {
    let (dir, name) = key.rsplit_once('/')?;
    let first = key.split('/').next()?;
    let bucket = dir.rsplit('/').next()?;
    let is_bucket = bucket
        .strip_prefix("bucket-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    (is_bucket && !METADATA_DIRS.contains(&first)).then_some(name)
}

/// The orphan data files: under a bucket directory, named by no manifest of a
/// kept snapshot (`earliest..`) or tag, and last written before `before_ms`.
/// Deleted with `delete`. What cannot be decided is a problem, and then
/// nothing is listed or deleted.
pub fn orphans(
    storage: &mut AnyStorage,
    earliest: u64,
    latest: u64,
    before_ms: u64,
    delete: bool,
    problems: &mut Vec<String>,
) -> Vec<Orphan> {
    let refs = if latest == 0 {
        Ok(Refs::default())
    } else {
        kept_refs(storage, earliest, latest, true)
    };
    let refs = match refs {
        Ok(r) => r,
        Err(why) => {
            problems.push(format!(
                "orphan data files not listed (every reference must be read): {why}"
            ));
            return Vec::new();
        }
    };
    let keys = match storage.list("") {
        Ok(keys) => keys,
        Err(e) => {
            problems.push(format!(
                "orphan data files not listed: cannot list the table: {e}"
            ));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for key in keys {
        let Some(name) = data_file_name(&key) else {
            continue;
        };
        if refs.files.contains(name) {
            continue;
        }
        let modified_ms = match storage.modified_ms(&key) {
            Ok(Some(ms)) => ms,
            Ok(None) => continue,
            Err(e) => {
                problems.push(format!("{key}: {e} (kept)"));
                continue;
            }
        };
        if modified_ms >= before_ms {
            continue;
        }
        let mut deleted = false;
        if delete {
            match storage.delete(&key) {
                Ok(()) => deleted = true,
                Err(e) => problems.push(format!("cannot delete orphan {key}: {e}")),
            }
        }
        out.push(Orphan {
            key,
            modified_ms,
            deleted,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::data_file_name;

    #[test]
    fn data_files_are_those_under_a_bucket_directory() {
        assert_eq!(
            data_file_name("bucket-0/data-1.parquet"),
            Some("data-1.parquet")
        );
        assert_eq!(
            data_file_name("dt=2026-12-01/bucket-0/d.parquet"),
            Some("d.parquet")
        );
        assert_eq!(data_file_name("a=1/b=x/bucket-12/d.orc"), Some("d.orc"));
        assert_eq!(data_file_name("manifest/manifest-1"), None);
        assert_eq!(data_file_name("snapshot/bucket-0/x"), None);
        assert_eq!(data_file_name("bucket-/x"), None);
        assert_eq!(data_file_name("bucket-0x/x"), None);
        assert_eq!(data_file_name("data.parquet"), None);
    }
}
