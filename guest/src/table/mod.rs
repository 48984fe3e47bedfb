//! The table: the log of snapshots and the tags, over the `Storage` trait.
//!
//! - [`log`](crate::table::log): this instance's view of the table and the exactly-once filter
//!   (SEMANTICS 5.2), whatever the format;
//! - [`format`](crate::table::format): the seam, [`TableFormat`](crate::table::TableFormat): how one format lays out its
//!   snapshots, hint and tags in storage;
//! - [`native`](crate::table::native): the native log, this project's own format;
//! - `paimon` (feature `paimon`): Apache Paimon append tables;
//! - [`formats`](crate::table::formats): the choice between them.
//!
//! The functions below are the tagging steps of savepoints and the
//! read-only access of the `table` interface.

use alloc::vec::Vec;

use crate::env::{AsEnv, Storage, StorageError};
use crate::error::{Error, ErrorReason, Result, StorageOp};
use crate::types::{Snapshot, Tag, END};

pub mod format;
pub mod formats;
pub mod log;
pub mod native;
#[cfg(feature = "paimon")]
pub mod paimon;

pub use format::{SnapshotRecord, StoredSnapshot, StoredTag, TableFormat, TagRecord, UserMark};
pub use formats::{AnyFormat, TableFormatKind};
pub use log::{TableLog, Written};
pub use native::{
    decode_expiry_mark, decode_snapshot, encode_snapshot, expiry_mark, snapshot_key, tag_key,
    NativeLog, LATEST_HINT, SNAPSHOT_PREFIX, TAG_PREFIX,
};

/// A storage failure while doing `op`, kept as the error's source.
pub(crate) fn storage_err(op: StorageOp, e: StorageError) -> Error {
    ErrorReason::Storage { op, error: e }.into()
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

/// Creates tag `name` unless it exists (idempotent). Returns whether it was
/// created. Native tables; the coordinator goes through [`TableLog::create_tag`].
pub fn create_tag(
    env: &mut dyn AsEnv,
    name: &str,
    snapshot_id: u64,
    identifier: u64,
    user: &str,
    retained_ms: Option<u64>,
) -> Result<bool> {
    TableLog::default().create_tag(
        &mut env.as_env(),
        name,
        snapshot_id,
        identifier,
        user,
        retained_ms,
    )
}

/// Deletes tag `name` if it points at `user`'s snapshot with `identifier`,
/// or at `user`'s END snapshot (a drained savepoint's tag, SEMANTICS 5.4).
/// Native tables; the coordinator goes through [`TableLog::delete_own_tag`].
pub fn delete_own_tag(
    st: &mut dyn Storage,
    name: &str,
    user: &str,
    identifier: u64,
) -> Result<bool> {
    delete_own_tag_in(
        &mut AnyFormat::Native(NativeLog),
        st,
        name,
        user,
        identifier,
    )
}

/// [`delete_own_tag`] in `format`.
pub(crate) fn delete_own_tag_in(
    format: &mut AnyFormat,
    st: &mut dyn Storage,
    name: &str,
    user: &str,
    identifier: u64,
) -> Result<bool> {
    let Some(t) = format.read_tag(st, name)? else {
        return Ok(false);
    };
    if t.commit_user != user || (t.tag.identifier != identifier && t.tag.identifier != END) {
        return Ok(false);
    }
    format
        .delete_tag(st, name)
        .map_err(|e| storage_err(StorageOp::DeletingTag(name.into()), e))?;
    Ok(true)
}

// --- read-only access (the `table` interface) -------------------------------
//
// No configuration says the format here. Without the `paimon` feature these
// read the native log (the code the component compiles). With it (module
// `detecting`), each reads the native layout first and, only where that
// found nothing (or a record the native log cannot read), asks whether the
// table is a Paimon one (one `get` of `schema/schema-0`): a native table with
// records costs exactly the calls it did before.

/// The latest snapshot, if any.
#[cfg(not(feature = "paimon"))]
pub fn latest_snapshot(st: &mut dyn Storage) -> Result<Option<Snapshot>> {
    let mut log = TableLog::default();
    log.load(st)?;
    if log.latest == 0 {
        return Ok(None);
    }
    snapshot_by_id(st, log.latest)
}

/// Snapshot `id`, if it exists.
#[cfg(not(feature = "paimon"))]
pub fn snapshot_by_id(st: &mut dyn Storage, id: u64) -> Result<Option<Snapshot>> {
    Ok(NativeLog.read_snapshot(st, id)?.map(|s| s.snapshot))
}

/// Every snapshot, by id.
#[cfg(not(feature = "paimon"))]
pub fn list_snapshots(st: &mut dyn Storage) -> Result<Vec<Snapshot>> {
    listing(&mut NativeLog, st, |f, st, id| {
        Ok(f.read_snapshot(st, id)?.map(|s| s.snapshot))
    })
}

/// Every snapshot from the first, read by `read`. Where one is missing, the
/// earliest snapshot an expiry kept says whether that was the end or an expired
/// id (an expiry ran before, or runs beside, this listing): then the listing
/// goes on there. One get more than the snapshots, at the end.
fn listing<F: TableFormat>(
    f: &mut F,
    st: &mut dyn Storage,
    mut read: impl FnMut(&mut F, &mut dyn Storage, u64) -> Result<Option<Snapshot>>,
) -> Result<Vec<Snapshot>> {
    let mut out = Vec::new();
    let mut id = 1u64;
    let mut jumps = 0;
    loop {
        if let Some(s) = read(f, st, id)? {
            out.push(s);
            id += 1;
            continue;
        }
        let earliest = f.read_earliest(st)?;
        if earliest <= id {
            return Ok(out);
        }
        jumps += 1;
        if jumps > 3 {
            return Err(ErrorReason::ListingKeepsMoving { earliest }.into());
        }
        id = earliest;
    }
}

/// Every tag, by name in byte order.
#[cfg(not(feature = "paimon"))]
pub fn list_tags(st: &mut dyn Storage) -> Result<Vec<Tag>> {
    Ok(by_name(NativeLog.list_tags(st)?))
}

#[cfg(feature = "paimon")]
pub use detecting::{latest_snapshot, list_snapshots, list_tags, snapshot_by_id};

/// The read-only functions with the `paimon` feature: the native reading first, then,
/// where it found nothing, a Paimon table if `schema/schema-0` says so. Apart from the
/// native versions above, so that the component (no feature) compiles exactly their code.
#[cfg(feature = "paimon")]
mod detecting {
    use super::*;

    /// The format to read the table in after the native reading found nothing.
    fn other_format(st: &mut dyn Storage) -> Result<Option<AnyFormat>> {
        let f = AnyFormat::detect(st)?;
        Ok((f.kind() != TableFormatKind::Native).then_some(f))
    }

    /// The latest snapshot, if any.
    pub fn latest_snapshot(st: &mut dyn Storage) -> Result<Option<Snapshot>> {
        let mut log = TableLog::default();
        log.load(st)?;
        if log.latest != 0 {
            return snapshot_by_id(st, log.latest);
        }
        let Some(f) = other_format(st)? else {
            return Ok(None);
        };
        let mut log = TableLog::over(f);
        log.load(st)?;
        let latest = log.latest;
        if latest == 0 {
            return Ok(None);
        }
        log.format_mut().read_back(st, latest)
    }

    /// Snapshot `id`, if it exists.
    pub fn snapshot_by_id(st: &mut dyn Storage, id: u64) -> Result<Option<Snapshot>> {
        if let Some(s) = NativeLog.read_snapshot(st, id)? {
            return Ok(Some(s.snapshot));
        }
        match other_format(st)? {
            Some(mut f) => f.read_back(st, id),
            None => Ok(None),
        }
    }

    /// Every snapshot, by id.
    pub fn list_snapshots(st: &mut dyn Storage) -> Result<Vec<Snapshot>> {
        let mut out = read_all(&mut AnyFormat::Native(NativeLog), st)?;
        if out.is_empty() {
            if let Some(mut f) = other_format(st)? {
                out = read_all(&mut f, st)?;
            }
        }
        Ok(out)
    }

    fn read_all(f: &mut AnyFormat, st: &mut dyn Storage) -> Result<Vec<Snapshot>> {
        listing(f, st, |f, st, id| f.read_back(st, id))
    }

    /// Every tag, by name in byte order. A Paimon table's tags do not decode as
    /// native ones (JSON, not postcard): an error or an empty list asks for the other
    /// format.
    pub fn list_tags(st: &mut dyn Storage) -> Result<Vec<Tag>> {
        let out = match NativeLog.list_tags(st) {
            Ok(tags) if !tags.is_empty() => tags,
            native => match other_format(st)? {
                Some(mut f) => f.list_tags(st)?,
                None => native?,
            },
        };
        Ok(by_name(out))
    }
}

/// `out` ordered by name, stably. A format lists its tags in key order, which
/// is name order unless a record's name differs from its key (a damaged or
/// hand-made table); only then are they ordered, by binary insertion: a sort
/// function would add 3 KB to the component.
fn by_name(mut out: Vec<Tag>) -> Vec<Tag> {
    let by_name = |a: &Tag, b: &Tag| a.name.as_bytes() <= b.name.as_bytes();
    if !out.is_sorted_by(by_name) {
        let mut sorted: Vec<Tag> = Vec::with_capacity(out.len());
        for t in out {
            let i = sorted.partition_point(|s| by_name(s, &t));
            sorted.insert(i, t);
        }
        out = sorted;
    }
    out
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod contract;
