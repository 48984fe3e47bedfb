//! The seam between the log and a table format.
//!
//! The log ([`super::TableLog`]) owns everything the exactly-once rule needs:
//! the view of the latest snapshot, every commit user's mark, the create in
//! doubt, when to probe and when to write the hint. A format only says how
//! one record is laid out in storage: which keys, which bytes, and what a
//! damaged record is. A second table format is a second implementation of
//! [`TableFormat`] beside [`super::native::NativeLog`]; the commit rule, the
//! recovery and the savepoint tagging do not change.
//!
//! The methods return the storage backend's own error for the calls whose
//! failure the log must tell apart (the create: a failed create may have
//! landed) or word itself (the hint, the tags), so the error texts stay
//! those of SEMANTICS' results whatever the format.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::env::{Storage, StorageError};
use crate::error::{Defect, Result};
use crate::types::{Snapshot, Tag, MAX_TABLE_USERS_BYTES};

/// A commit user's last snapshot as of some snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMark {
    /// Highest identifier (checkpoint id) the user committed.
    pub identifier: u64,
    /// The snapshot that committed it.
    pub snapshot_id: u64,
}

/// What the table's exactly-once filter and its walks back rely on, checked
/// by every format before a snapshot record is used: the snapshot of `user`
/// marks its own commit (`own`), no mark points past it, the previous-of-user
/// link goes strictly back (so a walk along it ends: a self-link or a cycle
/// is `corrupt-state`, never a loop), and its commit users stay within
/// [`MAX_TABLE_USERS_BYTES`]. `strict` is false for a snapshot Paimon wrote,
/// whose previous link goes back in ids but may repeat an identifier
/// (pypaimon's batch commits are all END).
pub(crate) fn check_marks<'u>(
    users: impl IntoIterator<Item = (&'u str, UserMark)>,
    user: &str,
    own: UserMark,
    previous: Option<UserMark>,
    strict: bool,
) -> core::result::Result<(), Defect> {
    let mut bytes: u64 = 0;
    let mut marks_own = false;
    for (u, m) in users {
        bytes = bytes.saturating_add(u.len() as u64 + 16);
        if m.snapshot_id == 0 || m.snapshot_id > own.snapshot_id {
            return Err(Defect::MarkOutsideSnapshots {
                user: u.into(),
                snapshot: m.snapshot_id,
                latest: own.snapshot_id,
            });
        }
        marks_own |= u == user && m == own;
    }
    if bytes > MAX_TABLE_USERS_BYTES {
        return Err(Defect::UsersTooLarge { bytes });
    }
    if !marks_own {
        return Err(Defect::NoOwnMark {
            user: user.into(),
            checkpoint: own.identifier,
        });
    }
    if let Some(p) = previous {
        if p.snapshot_id >= own.snapshot_id || (strict && p.identifier >= own.identifier) {
            return Err(Defect::LinkDoesNotGoBack {
                previous: p.snapshot_id,
                previous_checkpoint: p.identifier,
                snapshot: own.snapshot_id,
                checkpoint: own.identifier,
            });
        }
    }
    Ok(())
}

/// A decoded snapshot plus the bookkeeping the log needs.
#[derive(Clone, Debug)]
pub struct StoredSnapshot {
    /// The snapshot as readers see it.
    pub snapshot: Snapshot,
    /// The same commit user's previous snapshot.
    pub previous_of_user: Option<UserMark>,
    /// Every commit user's last snapshot, as of this one.
    pub users: BTreeMap<String, UserMark>,
}

/// What a probe of one snapshot id found.
#[derive(Clone, Debug)]
pub enum Probe {
    /// The snapshot.
    Found(StoredSnapshot),
    /// No snapshot with this id (yet).
    Missing,
    /// Expired: every id below this one may be gone.
    Expired(u64),
}

/// One snapshot to create, borrowed from the log and the committing call
/// (no copy of the committables before the format encodes them).
#[derive(Clone, Copy, Debug)]
pub struct SnapshotRecord<'a> {
    /// Its id: the log's latest + 1.
    pub id: u64,
    /// Who commits it.
    pub commit_user: &'a str,
    /// The checkpoint it commits (or END).
    pub identifier: u64,
    /// The writers' watermark, if any.
    pub watermark: Option<i64>,
    /// The clock's reading for it.
    pub time_ms: u64,
    /// The committables, by subtask.
    pub committables: &'a [(u32, &'a [u8])],
    /// The same commit user's previous snapshot.
    pub previous_of_user: Option<UserMark>,
    /// Every commit user's last snapshot, this one included, in user order.
    pub users: &'a [(&'a str, UserMark)],
}

/// One tag to create.
#[derive(Clone, Copy, Debug)]
pub struct TagRecord<'a> {
    /// Its name.
    pub name: &'a str,
    /// The snapshot it points at.
    pub snapshot_id: u64,
    /// That snapshot's identifier.
    pub identifier: u64,
    /// Whose snapshot it is: an abort deletes only its own tags.
    pub commit_user: &'a str,
    /// The clock's reading at creation.
    pub create_time_ms: u64,
    /// When it expires (none: never).
    pub expire_time_ms: Option<u64>,
}

/// A decoded tag and whose snapshot it points at.
#[derive(Clone, Debug)]
pub struct StoredTag {
    /// The tag as readers see it.
    pub tag: Tag,
    /// The commit user of the snapshot it points at.
    pub commit_user: String,
}

/// How a table format stores snapshots, the latest-snapshot hint and tags.
///
/// Contract the log relies on (checked for the native log by its tests):
/// - snapshot ids are dense from 1, and a snapshot is immutable once created;
/// - [`TableFormat::create_snapshot`] is atomic: `Ok(true)` only if this call
///   created it, `Ok(false)` if the id existed; an error means it may or
///   may not have landed;
/// - [`TableFormat::read_snapshot`] returns `corrupt-state` for a record it
///   cannot trust (its own id, its marks and its links checked), never a
///   record whose walks back could loop;
/// - the hint is advisory: a missing or unreadable hint reads as 0;
/// - an expiry (`sinkcoord expire`, docs/retention.md) removes a prefix of the
///   ids: it records the earliest id it keeps first, then deletes the ids
///   below it in ascending order, so every id from there up to the latest is
///   present, and a snapshot below it that is missing was expired.
pub trait TableFormat {
    /// Snapshot `id`, if it exists (`storage` if the read failed,
    /// `corrupt-state` if the record is damaged).
    fn read_snapshot(&mut self, st: &mut dyn Storage, id: u64) -> Result<Option<StoredSnapshot>>;

    /// Atomically creates snapshot `record.id`.
    fn create_snapshot(
        &mut self,
        st: &mut dyn Storage,
        record: &SnapshotRecord<'_>,
    ) -> core::result::Result<bool, StorageError>;

    /// The latest snapshot id the hint names (0 when there is no usable hint).
    fn read_hint(&mut self, st: &mut dyn Storage) -> core::result::Result<u64, StorageError>;

    /// The earliest snapshot id an expiry kept: every id below it may be gone
    /// (1 when nothing was expired). Read only where a snapshot the log looked
    /// for is missing, never by a commit.
    fn read_earliest(&mut self, st: &mut dyn Storage) -> Result<u64>;

    /// Snapshot `id` for a probe: found, missing, or expired (its key, or for
    /// snapshot 1 the table, says every id below some `E` was expired). What a
    /// probe of a view reads, so that it never takes an expired table for an
    /// empty one, nor the gap an expiry leaves for the end of the log.
    fn probe(&mut self, st: &mut dyn Storage, id: u64) -> Result<Probe>;

    /// Checked once a fresh read of the table stopped at `latest` (no snapshot
    /// after it): the earliest snapshot kept if this format must ask, above
    /// `latest` when an expiry ran past it meanwhile. 1 where the probe sees
    /// expiry by itself (the native log's marks).
    fn earliest_after_load(&mut self, st: &mut dyn Storage, latest: u64) -> Result<u64> {
        let _ = (st, latest);
        Ok(1)
    }

    /// Overwrites the hint with `latest`.
    fn write_hint(
        &mut self,
        st: &mut dyn Storage,
        latest: u64,
    ) -> core::result::Result<(), StorageError>;

    /// Creates a tag unless one of that name exists (`Ok(false)`).
    fn create_tag(
        &mut self,
        st: &mut dyn Storage,
        tag: &TagRecord<'_>,
    ) -> core::result::Result<bool, StorageError>;

    /// Tag `name`, if it exists.
    fn read_tag(&mut self, st: &mut dyn Storage, name: &str) -> Result<Option<StoredTag>>;

    /// Deletes tag `name` (a missing tag is no error).
    fn delete_tag(
        &mut self,
        st: &mut dyn Storage,
        name: &str,
    ) -> core::result::Result<(), StorageError>;

    /// Every tag, in key order (the caller orders them by name).
    fn list_tags(&mut self, st: &mut dyn Storage) -> Result<Vec<Tag>>;
}
