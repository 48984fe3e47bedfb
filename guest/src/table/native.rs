//! The native table format: this project's own log, in postcard.
//!
//! Layout:
//! - `snapshot/<id, 20 digits>`: one snapshot, created with one atomic
//!   `put_if_absent`; ids are dense (a writer creates `n` only after seeing `n-1`);
//! - `hint/latest-snapshot`: the latest snapshot id as decimal text, an
//!   overwritable hint written after the creates of a commit (may be stale);
//! - after an expiry (docs/retention.md), the key of every expired snapshot
//!   holds an expiry mark instead: the earliest id the expiry kept. A later
//!   expiry deletes the marks older than its minimum age, except snapshot 1's,
//!   which stays. So a probe that reaches an expired id reads the mark in the
//!   get it makes anyway, and a create there conflicts: an expired table is
//!   never taken for an empty one, nor the end of its expired range for the
//!   end of the log. A reader of an older version refuses a mark as a record
//!   of an unknown version (`corrupt-state`), never as an empty table;
//! - `tag/<name>`: one tag, created with `put_if_absent`.
//!
//! Each snapshot carries the log's bookkeeping as it is (every commit user's
//! mark and the committing user's previous snapshot) beside the committables,
//! so one `get` gives the log all it needs: the fastest format, and the one
//! the conformance corpus pins byte for byte.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::format::{
    check_marks, Probe, SnapshotRecord, StoredSnapshot, StoredTag, TableFormat, TagRecord, UserMark,
};
use super::storage_err;
use crate::env::{Storage, StorageError};
use crate::error::{Defect, Error, ErrorReason, Result, StorageOp};
use crate::types::{Snapshot, Tag};
use crate::wire::{self, Bytes, Seq};

/// Key prefix of the snapshots.
pub const SNAPSHOT_PREFIX: &str = "snapshot/";
/// Key prefix of the tags.
pub const TAG_PREFIX: &str = "tag/";
/// Key of the latest-snapshot hint.
pub const LATEST_HINT: &str = "hint/latest-snapshot";
const SNAPSHOT_VERSION: u32 = 1;
/// The record version of an expiry mark (far from the snapshots' versions).
const EXPIRY_MARK_VERSION: u32 = 1000;

/// The expiry mark `sinkcoord expire` puts in snapshot 1's key: every id
/// below `earliest` was expired.
pub fn expiry_mark(earliest: u64) -> Vec<u8> {
    wire::encode(EXPIRY_MARK_VERSION, &ExpiryMarkWire { earliest })
}

/// The earliest id an expiry mark names, if `bytes` are one (an id above 1).
pub fn decode_expiry_mark(bytes: &[u8]) -> Option<u64> {
    match wire::version(bytes) {
        Ok((EXPIRY_MARK_VERSION, rest)) => wire::body::<ExpiryMarkWire>(rest)
            .ok()
            .map(|m| m.earliest)
            .filter(|e| *e > 1),
        _ => None,
    }
}

#[derive(Serialize, Deserialize)]
struct ExpiryMarkWire {
    earliest: u64,
}
const TAG_VERSION: u32 = 1;

/// The key of snapshot `id`.
pub fn snapshot_key(id: u64) -> String {
    format!("{SNAPSHOT_PREFIX}{id:020}")
}

/// The key of tag `name`.
pub fn tag_key(name: &str) -> String {
    format!("{TAG_PREFIX}{name}")
}

#[derive(Serialize, Deserialize)]
struct UserWire<'a> {
    commit_user: &'a str,
    mark: UserMark,
}

#[derive(Serialize, Deserialize)]
struct SnapshotWire<'a> {
    id: u64,
    commit_user: &'a str,
    identifier: u64,
    watermark: Option<i64>,
    time_ms: u64,
    #[serde(borrow)]
    committables: Seq<(u32, Bytes<'a>)>,
    /// The same commit user's previous snapshot.
    previous_of_user: Option<UserMark>,
    /// Every commit user's last snapshot, this one included.
    #[serde(borrow)]
    users: Seq<UserWire<'a>>,
}

/// [`SnapshotWire`] as a commit writes it: the same fields in the same
/// order (postcard writes a struct as its fields, so `(user, mark)` pairs
/// are `UserWire`s byte for byte), with the users borrowed as the log
/// holds them instead of copied into wire structs first.
#[derive(Serialize)]
struct SnapshotOut<'a> {
    id: u64,
    commit_user: &'a str,
    identifier: u64,
    watermark: Option<i64>,
    time_ms: u64,
    committables: Seq<(u32, Bytes<'a>)>,
    previous_of_user: Option<UserMark>,
    users: &'a [(&'a str, UserMark)],
}

#[derive(Serialize, Deserialize)]
struct TagWire<'a> {
    name: &'a str,
    snapshot_id: u64,
    identifier: u64,
    /// Whose snapshot the tag points at: an abort deletes only its own tags.
    commit_user: &'a str,
    create_time_ms: u64,
    expire_time_ms: Option<u64>,
}

/// The native log (stateless: every record says all it means).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeLog;

impl TableFormat for NativeLog {
    fn read_snapshot(&mut self, st: &mut dyn Storage, id: u64) -> Result<Option<StoredSnapshot>> {
        read_snapshot(st, id)
    }

    // Out of line: a JVM JIT compiles no method over 8,000 bytecode bytes
    // (BENCHMARKS.md, "Huge functions on the JVM").
    #[inline(never)]
    fn create_snapshot(
        &mut self,
        st: &mut dyn Storage,
        r: &SnapshotRecord<'_>,
    ) -> core::result::Result<bool, StorageError> {
        let bytes = wire::encode(
            SNAPSHOT_VERSION,
            &SnapshotOut {
                id: r.id,
                commit_user: r.commit_user,
                identifier: r.identifier,
                watermark: r.watermark,
                time_ms: r.time_ms,
                committables: Seq(r
                    .committables
                    .iter()
                    .map(|(s, c)| (*s, wire::bytes(c)))
                    .collect()),
                previous_of_user: r.previous_of_user,
                users: r.users,
            },
        );
        st.put_if_absent(&snapshot_key(r.id), &bytes)
    }

    fn read_hint(&mut self, st: &mut dyn Storage) -> core::result::Result<u64, StorageError> {
        Ok(st
            .get(LATEST_HINT)?
            .and_then(|b| {
                core::str::from_utf8(&b)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
            })
            .unwrap_or(0))
    }

    /// The expiry mark in snapshot 1's key, if there is one.
    fn read_earliest(&mut self, st: &mut dyn Storage) -> Result<u64> {
        Ok(st
            .get(&snapshot_key(1))
            .map_err(|e| storage_err(StorageOp::ReadingSnapshot(1), e))?
            .and_then(|b| decode_expiry_mark(&b))
            .unwrap_or(1))
    }

    /// One get: an expired id's key holds the expiry mark (snapshot 1's key
    /// from the first expiry on, the others until a later expiry deletes them).
    fn probe(&mut self, st: &mut dyn Storage, id: u64) -> Result<Probe> {
        let key = snapshot_key(id);
        let Some(bytes) = st
            .get(&key)
            .map_err(|e| storage_err(StorageOp::ReadingSnapshot(id), e))?
        else {
            return Ok(Probe::Missing);
        };
        if let Some(earliest) = decode_expiry_mark(&bytes) {
            if earliest <= id {
                return Err(ErrorReason::ExpiryMarkNotAbove { key, earliest }.into());
            }
            return Ok(Probe::Expired(earliest));
        }
        decode_at(&key, id, &bytes).map(Probe::Found)
    }

    fn write_hint(
        &mut self,
        st: &mut dyn Storage,
        latest: u64,
    ) -> core::result::Result<(), StorageError> {
        st.put(LATEST_HINT, format!("{latest}").as_bytes())
    }

    fn create_tag(
        &mut self,
        st: &mut dyn Storage,
        t: &TagRecord<'_>,
    ) -> core::result::Result<bool, StorageError> {
        let bytes = wire::encode(
            TAG_VERSION,
            &TagWire {
                name: t.name,
                snapshot_id: t.snapshot_id,
                identifier: t.identifier,
                commit_user: t.commit_user,
                create_time_ms: t.create_time_ms,
                expire_time_ms: t.expire_time_ms,
            },
        );
        st.put_if_absent(&tag_key(t.name), &bytes)
    }

    fn read_tag(&mut self, st: &mut dyn Storage, name: &str) -> Result<Option<StoredTag>> {
        let key = tag_key(name);
        st.get(&key)
            .map_err(|e| storage_err(StorageOp::ReadingTag(name.into()), e))?
            .map(|b| decode_tag(&key, &b))
            .transpose()
    }

    fn delete_tag(
        &mut self,
        st: &mut dyn Storage,
        name: &str,
    ) -> core::result::Result<(), StorageError> {
        st.delete(&tag_key(name))
    }

    fn list_tags(&mut self, st: &mut dyn Storage) -> Result<Vec<Tag>> {
        let keys = st
            .list(TAG_PREFIX)
            .map_err(|e| storage_err(StorageOp::ListingTags, e))?;
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(bytes) = st
                .get(&key)
                .map_err(|e| storage_err(StorageOp::Reading(key.clone()), e))?
            {
                out.push(decode_tag(&key, &bytes)?.tag);
            }
        }
        Ok(out)
    }
}

/// Decodes the snapshot record stored under `key`.
pub fn decode_snapshot(key: &str, bytes: &[u8]) -> Result<StoredSnapshot> {
    let corrupt = |defect: Defect| record_defect(key, defect);
    let (version, rest) = wire::version(bytes).map_err(|e| corrupt(e.into()))?;
    if version != SNAPSHOT_VERSION {
        return Err(corrupt(wire::DecodeError::UnknownVersion(version).into()));
    }
    let w: SnapshotWire = wire::body(rest).map_err(|e| corrupt(e.into()))?;
    let own = UserMark {
        identifier: w.identifier,
        snapshot_id: w.id,
    };
    let users = w.users.0.iter().map(|u| (u.commit_user, u.mark));
    check_marks(users, w.commit_user, own, w.previous_of_user, true).map_err(corrupt)?;
    Ok(StoredSnapshot {
        snapshot: Snapshot {
            id: w.id,
            commit_user: w.commit_user.to_string(),
            identifier: w.identifier,
            watermark: w.watermark,
            time_ms: w.time_ms,
            committables: w
                .committables
                .0
                .into_iter()
                .map(|(s, c)| (s, c.to_vec()))
                .collect(),
        },
        previous_of_user: w.previous_of_user,
        // Inserted one by one, not collected: `collect` into a map sorts
        // first, one more stable-sort copy in the component (issue 10); a
        // repeated user keeps its last mark either way.
        users: w.users.0.into_iter().fold(BTreeMap::new(), |mut m, u| {
            m.insert(u.commit_user.to_string(), u.mark);
            m
        }),
    })
}

/// The record of `s` as the table stores it (what [`decode_snapshot`]
/// reads): for tools and tests that build tables, hostile ones included; the
/// coordinator's own commits encode the same layout.
pub fn encode_snapshot(s: &StoredSnapshot) -> Vec<u8> {
    wire::encode(
        SNAPSHOT_VERSION,
        &SnapshotWire {
            id: s.snapshot.id,
            commit_user: &s.snapshot.commit_user,
            identifier: s.snapshot.identifier,
            watermark: s.snapshot.watermark,
            time_ms: s.snapshot.time_ms,
            committables: Seq(s
                .snapshot
                .committables
                .iter()
                .map(|(t, c)| (*t, wire::bytes(c)))
                .collect()),
            previous_of_user: s.previous_of_user,
            users: Seq(s
                .users
                .iter()
                .map(|(u, m)| UserWire {
                    commit_user: u,
                    mark: *m,
                })
                .collect()),
        },
    )
}

fn decode_tag(key: &str, bytes: &[u8]) -> Result<StoredTag> {
    let corrupt = |defect: Defect| record_defect(key, defect);
    let (version, rest) = wire::version(bytes).map_err(|e| corrupt(e.into()))?;
    if version != TAG_VERSION {
        return Err(corrupt(wire::DecodeError::UnknownVersion(version).into()));
    }
    let w: TagWire = wire::body(rest).map_err(|e| corrupt(e.into()))?;
    Ok(StoredTag {
        tag: Tag {
            name: w.name.to_string(),
            snapshot_id: w.snapshot_id,
            identifier: w.identifier,
            create_time_ms: w.create_time_ms,
            expire_time_ms: w.expire_time_ms,
        },
        commit_user: w.commit_user.to_string(),
    })
}

/// Snapshot `id` from its record, whose own id must be `id`.
fn read_snapshot(st: &mut dyn Storage, id: u64) -> Result<Option<StoredSnapshot>> {
    let key = snapshot_key(id);
    match st
        .get(&key)
        .map_err(|e| storage_err(StorageOp::ReadingSnapshot(id), e))?
    {
        // Expired: its key holds the expiry mark.
        Some(bytes) if decode_expiry_mark(&bytes).is_some() => Ok(None),
        Some(bytes) => decode_at(&key, id, &bytes).map(Some),
        None => Ok(None),
    }
}

/// The record under `key`, which must be snapshot `id`.
fn decode_at(key: &str, id: u64, bytes: &[u8]) -> Result<StoredSnapshot> {
    let s = decode_snapshot(key, bytes)?;
    if s.snapshot.id != id {
        return Err(ErrorReason::RecordHoldsOtherSnapshot {
            key: key.into(),
            snapshot: s.snapshot.id,
        }
        .into());
    }
    Ok(s)
}

/// The table record under `key` is corrupt.
#[cold]
fn record_defect(key: &str, defect: Defect) -> Error {
    ErrorReason::TableRecord {
        key: key.into(),
        defect,
    }
    .into()
}
