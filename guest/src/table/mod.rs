//! The table: the log of snapshots and the tags, over the `Storage` trait.
//!
//! - [`log`](crate::table::log): this instance's view of the table and the exactly-once filter
//!   (SEMANTICS 5.2), whatever the format;
//! - [`format`](crate::table::format): the seam, [`TableFormat`](crate::table::TableFormat): how one format lays out its
//!   snapshots, hint and tags in storage;
//! - [`native`](crate::table::native): the native log, this project's own format.
//!
//! The functions below are the tagging steps of savepoints and the
//! read-only access of the `table` interface.

use alloc::format;
use alloc::vec::Vec;

use crate::env::{Env, Storage, StorageError};
use crate::error::{Error, Result};
use crate::types::{Snapshot, Tag, END};

pub mod format;
pub mod log;
pub mod native;

pub use format::{SnapshotRecord, StoredSnapshot, StoredTag, TableFormat, TagRecord, UserMark};
pub use log::{TableLog, Written};
pub use native::{
    decode_snapshot, encode_snapshot, snapshot_key, tag_key, NativeLog, LATEST_HINT,
    SNAPSHOT_PREFIX, TAG_PREFIX,
};

/// A storage failure while doing `what`, kept as the error's source.
pub(crate) fn storage_err(what: &str, e: StorageError) -> Error {
    Error::storage(format!("{what}: {e}")).with_source(e)
}

/// A commit user for a message: at most 64 bytes of it, quoted as is (no
/// `{:?}`: its escaping would pull Unicode tables into the component).
pub(crate) fn clip(user: &str) -> &str {
    let mut end = user.len().min(64);
    while !user.is_char_boundary(end) {
        end -= 1;
    }
    user.get(..end).unwrap_or_default()
}

/// Creates tag `name` unless it exists (idempotent). Returns whether it was created.
pub fn create_tag(
    env: &mut dyn Env,
    name: &str,
    snapshot_id: u64,
    identifier: u64,
    user: &str,
    retained_ms: Option<u64>,
) -> Result<bool> {
    let now = env.now_ms();
    let tag = TagRecord {
        name,
        snapshot_id,
        identifier,
        commit_user: user,
        create_time_ms: now,
        expire_time_ms: retained_ms.map(|r| now.saturating_add(r)),
    };
    NativeLog
        .create_tag(env, &tag)
        .map_err(|e| storage_err(&format!("creating tag {name}"), e))
}

/// Deletes tag `name` if it points at `user`'s snapshot with `identifier`,
/// or at `user`'s END snapshot (a drained savepoint's tag, SEMANTICS 5.4).
pub fn delete_own_tag(
    st: &mut dyn Storage,
    name: &str,
    user: &str,
    identifier: u64,
) -> Result<bool> {
    let Some(t) = NativeLog.read_tag(st, name)? else {
        return Ok(false);
    };
    if t.commit_user != user || (t.tag.identifier != identifier && t.tag.identifier != END) {
        return Ok(false);
    }
    NativeLog
        .delete_tag(st, name)
        .map_err(|e| storage_err(&format!("deleting tag {name}"), e))?;
    Ok(true)
}

// --- read-only access (the `table` interface) -------------------------------

/// The latest snapshot, if any.
pub fn latest_snapshot(st: &mut dyn Storage) -> Result<Option<Snapshot>> {
    let mut log = TableLog::default();
    log.load(st)?;
    if log.latest == 0 {
        return Ok(None);
    }
    snapshot_by_id(st, log.latest)
}

/// Snapshot `id`, if it exists.
pub fn snapshot_by_id(st: &mut dyn Storage, id: u64) -> Result<Option<Snapshot>> {
    Ok(NativeLog.read_snapshot(st, id)?.map(|s| s.snapshot))
}

/// Every snapshot, by id.
pub fn list_snapshots(st: &mut dyn Storage) -> Result<Vec<Snapshot>> {
    let mut out = Vec::new();
    let mut id = 1u64;
    while let Some(s) = NativeLog.read_snapshot(st, id)? {
        out.push(s.snapshot);
        id += 1;
    }
    Ok(out)
}

/// Every tag, by name in byte order.
pub fn list_tags(st: &mut dyn Storage) -> Result<Vec<Tag>> {
    let mut out = NativeLog.list_tags(st)?;
    // A format lists its tags in key order, which is name order unless a
    // record's name differs from its key (a damaged or hand-made table);
    // only then are they ordered, stably, by binary insertion: a sort
    // function would add 3 KB to the component.
    let by_name = |a: &Tag, b: &Tag| a.name.as_bytes() <= b.name.as_bytes();
    if !out.is_sorted_by(by_name) {
        let mut sorted: Vec<Tag> = Vec::with_capacity(out.len());
        for t in out {
            let i = sorted.partition_point(|s| by_name(s, &t));
            sorted.insert(i, t);
        }
        out = sorted;
    }
    Ok(out)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod contract;
