//! The Apache Paimon table format: real append-table snapshots (unaware buckets) that
//! Paimon's own readers read, written through the pure `sink-coordinator-paimon` crate.
//!
//! Layout (Paimon's, see docs/paimon.md): `schema/schema-<n>` (written by whoever created
//! the table), `snapshot/snapshot-<id>` JSON created with one `put_if_absent`, the
//! `snapshot/LATEST` and `snapshot/EARLIEST` hints, `manifest/manifest-*` Avro manifests
//! and manifest lists, and `tag/tag-<name>` tags. A commit's committables are the crate's
//! committable encoding (one new data file each); the log's marks ride in the snapshot's
//! `properties`, so the exactly-once filter still reads one snapshot.
//!
//! What this format keeps across calls, so that a commit makes a constant number of
//! storage calls (SEMANTICS 5.2's filter, and Paimon's own lists):
//! - the table schema, read once (and again only when a snapshot names another id);
//! - the last snapshot read or created and, after a create of ours, its manifest lists
//!   decoded: the next create needs the previous base + delta lists, and taking them from
//!   the cache saves two gets per commit.
//!
//! Differences from the native log the log can live with (see `contract.rs`):
//! - the log's reads of a snapshot give no committables: Paimon keeps data files in
//!   manifests, which the log never needs (reading them would cost gets per snapshot).
//!   The read-only `table` functions read them back (`PaimonTable::read_back`, in
//!   `paimon_read.rs`): each file of the delta manifests re-encoded as its committable,
//!   with the subtask the commit recorded in the snapshot's `sinkcoord.subtasks`;
//! - snapshots Paimon itself wrote carry no marks: their users come from the snapshot
//!   before (cached when the log probes forward, else a bounded walk back).

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use sink_coordinator_paimon::committable::{self, DataFile};
use sink_coordinator_paimon::manifest::{self, ManifestFileMeta, MergeOptions};
use sink_coordinator_paimon::naming::Role;
use sink_coordinator_paimon::schema;
use sink_coordinator_paimon::snapshot::{self as psnap, Marks, NewSnapshot};
use sink_coordinator_paimon::subtasks;
use sink_coordinator_paimon::{decode_schema, TableSchema};

use super::format::{
    check_marks, Probe, SnapshotRecord, StoredSnapshot, StoredTag, TableFormat, TagRecord, UserMark,
};
use super::{clip, storage_err};
use crate::env::{Storage, StorageError};
use crate::error::{Defect, Error, ErrorKind, ErrorReason, PaimonDefect, Result, StorageOp};
use crate::types::{checkpoint_name, Snapshot, Tag};

/// The schema every table has (Paimon's first schema id): its presence tells a Paimon
/// table from a native one where nothing configures the format.
pub const FIRST_SCHEMA_KEY: &str = "schema/schema-0";
/// The committing user's previous identifier, beside the crate's `sinkcoord.previous`
/// (its snapshot id): the log's walk back through a user's snapshots compares
/// identifiers before it reads a snapshot.
const P_PREVIOUS_IDENTIFIER: &str = "sinkcoord.previous.identifier";
/// A tag's creation and expiry times (ms), in the tag's copy of the snapshot.
const P_TAG_CREATE: &str = "sinkcoord.tag.create-time";
const P_TAG_EXPIRE: &str = "sinkcoord.tag.expire-time";

/// The last snapshot this instance read or created.
#[derive(Clone, Debug)]
struct Last {
    id: u64,
    users: BTreeMap<String, UserMark>,
    snapshot: psnap::Snapshot,
    /// Its base list then delta list, decoded (known after a create of ours).
    lists: Option<Vec<ManifestFileMeta>>,
}

/// The Paimon format (see the module doc). Its caches are an optimisation: every record
/// it reads is checked as the native log checks its own.
#[derive(Clone, Debug, Default)]
pub struct PaimonTable {
    schema: Option<TableSchema>,
    last: Option<Box<Last>>,
    /// This instance created snapshot 1: the next hint write also writes `EARLIEST`.
    earliest_due: bool,
    merge: MergeOptions,
}

/// A storage error for a record this format cannot use while writing (the trait's
/// create returns storage errors only): the log keeps the commit pending and retries.
fn unusable(what: String) -> StorageError {
    StorageError::Io(what)
}

/// The Paimon record under `key` is corrupt.
#[cold]
fn corrupt(key: &str, defect: impl Into<Defect>) -> Error {
    ErrorReason::TableRecord {
        key: key.into(),
        defect: defect.into(),
    }
    .into()
}

/// A Paimon identifier as the log's: END is `Long.MAX_VALUE` in both; a negative one
/// (Paimon allows any long) cannot be a checkpoint id.
fn identifier_of(v: i64) -> Option<u64> {
    u64::try_from(v).ok()
}

fn user_mark(m: &psnap::UserMark) -> Option<UserMark> {
    Some(UserMark {
        identifier: identifier_of(m.identifier)?,
        snapshot_id: u64::try_from(m.snapshot_id).ok()?,
    })
}

impl PaimonTable {
    /// A table whose schema is known already (tests, tools).
    pub fn with_schema(schema: TableSchema) -> Self {
        PaimonTable {
            schema: Some(schema),
            ..PaimonTable::default()
        }
    }

    /// Sets the manifest merge rule (tests use a small bound).
    pub fn set_merge_options(&mut self, o: MergeOptions) {
        self.merge = o;
    }

    /// The schema id the next commit writes with: the last snapshot's, or 0.
    fn schema_id(&self) -> i64 {
        self.last.as_ref().map_or(0, |l| l.snapshot.schema_id)
    }

    /// The table schema, read once.
    pub fn schema(&mut self, st: &mut dyn Storage) -> Result<&TableSchema> {
        self.schema_at(st, self.schema_id())
    }

    /// Schema `id`, read unless it is the cached one.
    fn schema_at(&mut self, st: &mut dyn Storage, id: i64) -> Result<&TableSchema> {
        if self.schema.as_ref().is_none_or(|s| s.id != id) {
            let key = schema::schema_key(id);
            let bytes = st
                .get(&key)
                .map_err(|e| storage_err(StorageOp::ReadingPaimonSchema(key.clone()), e))?
                .ok_or_else(|| Error::from(ErrorReason::NoPaimonSchema { key: key.clone() }))?;
            let s = decode_schema(&bytes).map_err(|e| corrupt(&key, PaimonDefect::Schema(e)))?;
            if s.id != id {
                return Err(corrupt(&key, PaimonDefect::SchemaId { found: s.id }));
            }
            self.schema = Some(s);
        }
        // Just set when it was missing.
        self.schema
            .as_ref()
            .ok_or_else(|| ErrorReason::PaimonSchemaUnavailable.into())
    }

    /// Checks one committable against the table's schema (an event's admission):
    /// `invalid-event` with the reason, `storage` if the schema cannot be read.
    pub fn check_committable(&mut self, st: &mut dyn Storage, bytes: &[u8]) -> Result<()> {
        let schema = self.schema(st)?;
        committable::decode(bytes, schema)
            .map(|_| ())
            .map_err(|e| ErrorReason::PaimonCommittable(e).into())
    }

    /// The raw snapshot `id` (`None` if missing), its key for messages.
    fn get_snapshot(
        &self,
        st: &mut dyn Storage,
        id: u64,
    ) -> Result<Option<(String, psnap::Snapshot)>> {
        // Ids start at 1 (a record claiming id 0 is never asked for: the walks back
        // below subtract from ids).
        let Some(pid) = i64::try_from(id).ok().filter(|p| *p > 0) else {
            return Ok(None);
        };
        let key = psnap::snapshot_key(pid);
        let Some(bytes) = st
            .get(&key)
            .map_err(|e| storage_err(StorageOp::ReadingSnapshot(id), e))?
        else {
            return Ok(None);
        };
        let s = psnap::decode_snapshot(&bytes)
            .map_err(|_| corrupt(&key, PaimonDefect::NotASnapshot))?;
        if s.id != pid {
            return Err(corrupt(&key, PaimonDefect::SnapshotId { found: s.id }));
        }
        Ok(Some((key, s)))
    }

    /// Every commit user's mark as of foreign snapshot `s` (no marks of ours): the
    /// cached view of the snapshot before it, else a walk back to the newest snapshot
    /// with marks (or the oldest snapshot left), adding the users seen.
    ///
    /// Unbounded on purpose: a bound lost the mark of a user whose last commit lay
    /// below it, and a restored coordinator of that user then committed its replayed
    /// checkpoints twice (pinned by `test_pypaimon_same_commit_user`). Paimon's own
    /// filter walks back the same way (`latestSnapshotOfUser`). It costs one get per
    /// snapshot without marks, only when the newest snapshot is foreign and this
    /// instance has not read the one before it: once per restart; a commit of ours
    /// then carries every user's mark again.
    fn foreign_users(
        &mut self,
        st: &mut dyn Storage,
        id: u64,
    ) -> Result<BTreeMap<String, UserMark>> {
        if let Some(l) = self.last.as_ref().filter(|l| l.id + 1 == id) {
            return Ok(l.users.clone());
        }
        let mut seen: Vec<(String, UserMark)> = Vec::new();
        let mut users = BTreeMap::new();
        let mut at = id - 1;
        while at >= 1 {
            let Some((key, older)) = self.get_snapshot(st, at)? else {
                break; // expired: what was seen is all there is
            };
            if older
                .marks()
                .map_err(|_| corrupt(&key, PaimonDefect::MarksMalformed))?
                .is_some()
            {
                users = self.stored(st, &key, older, at)?.users;
                break;
            }
            let mark = identifier_of(older.commit_identifier)
                .map(|identifier| UserMark {
                    identifier,
                    snapshot_id: at,
                })
                .ok_or_else(|| corrupt(&key, PaimonDefect::NegativeIdentifier))?;
            seen.push((older.commit_user.clone(), mark));
            at -= 1;
        }
        // Oldest first, so the newest commit of a user wins.
        for (u, m) in seen.into_iter().rev() {
            users.insert(u, m);
        }
        Ok(users)
    }

    /// A decoded Paimon snapshot as the log's record, checked as the native log checks
    /// its own (own mark, marks not past it, the previous link strictly back).
    fn stored(
        &mut self,
        st: &mut dyn Storage,
        key: &str,
        s: psnap::Snapshot,
        id: u64,
    ) -> Result<StoredSnapshot> {
        let identifier = identifier_of(s.commit_identifier)
            .ok_or_else(|| corrupt(key, PaimonDefect::NegativeIdentifier))?;
        let own = UserMark {
            identifier,
            snapshot_id: id,
        };
        let marks = s
            .marks()
            .map_err(|_| corrupt(key, PaimonDefect::MarksMalformed))?;
        let (users, previous_of_user, ours) = match marks {
            Some(m) => {
                let mut users = BTreeMap::new();
                for (u, mark) in &m.users {
                    let mark =
                        user_mark(mark).ok_or_else(|| corrupt(key, PaimonDefect::NegativeMark))?;
                    users.insert(u.clone(), mark);
                }
                let previous = match m.previous_of_user {
                    None => None,
                    Some(p) => {
                        let snapshot_id = u64::try_from(p)
                            .map_err(|_| corrupt(key, PaimonDefect::NegativePreviousLink))?;
                        // None: the link names an expired snapshot of a table whose
                        // snapshots do not say its identifier (the chain ends there).
                        self.previous_identifier(st, key, &s, snapshot_id)?
                            .map(|identifier| UserMark {
                                identifier,
                                snapshot_id,
                            })
                    }
                };
                (users, previous, true)
            }
            None => {
                let mut users = self.foreign_users(st, id)?;
                let previous = users.get(&s.commit_user).copied();
                users.insert(s.commit_user.clone(), own);
                (users, previous, false)
            }
        };
        let marks = users.iter().map(|(u, m)| (u.as_str(), *m));
        check_marks(marks, &s.commit_user, own, previous_of_user, ours)
            .map_err(|d| corrupt(key, d))?;
        let snapshot = Snapshot {
            id,
            commit_user: s.commit_user.clone(),
            identifier,
            watermark: s.watermark,
            time_ms: u64::try_from(s.time_millis).unwrap_or(0),
            committables: Vec::new(),
        };
        Ok(StoredSnapshot {
            snapshot,
            previous_of_user,
            users,
        })
    }

    /// The identifier of the committing user's previous snapshot: in the properties
    /// when this format wrote them, else read from that snapshot (tables of the crate's
    /// own driver).
    fn previous_identifier(
        &mut self,
        st: &mut dyn Storage,
        key: &str,
        s: &psnap::Snapshot,
        previous: u64,
    ) -> Result<Option<u64>> {
        let bad = || corrupt(key, PaimonDefect::PreviousIdentifierMalformed);
        if let Some(v) = s
            .properties
            .as_ref()
            .and_then(|p| p.get(P_PREVIOUS_IDENTIFIER))
        {
            return v.parse::<u64>().map(Some).map_err(|_| bad());
        }
        match self.get_snapshot(st, previous)? {
            Some((_, p)) => identifier_of(p.commit_identifier).map(Some).ok_or_else(bad),
            None if previous < self.read_earliest(st)? => Ok(None),
            None => Err(corrupt(key, PaimonDefect::PreviousMissing { previous })),
        }
    }

    /// The previous snapshot's base + delta lists for a create of `id`, from the cache
    /// after a create of ours, else read (the snapshot if not cached, and two lists).
    #[inline(never)] // see `new_snapshot`
    fn previous_lists(
        &mut self,
        st: &mut dyn Storage,
        id: u64,
    ) -> core::result::Result<Option<(psnap::Snapshot, Vec<ManifestFileMeta>)>, StorageError> {
        if id <= 1 {
            return Ok(None);
        }
        let prev = id - 1;
        if let Some(l) = self.last.as_ref().filter(|l| l.id == prev) {
            if let Some(lists) = &l.lists {
                return Ok(Some((l.snapshot.clone(), lists.clone())));
            }
        }
        let snapshot = match self.last.as_ref().filter(|l| l.id == prev) {
            Some(l) => l.snapshot.clone(),
            None => match self.get_snapshot(st, prev) {
                Ok(Some((_, s))) => s,
                Ok(None) => return Err(unusable(format!("snapshot {prev} is missing"))),
                Err(e) => return Err(as_storage(e)),
            },
        };
        let mut lists = read_list(st, &snapshot.base_manifest_list)?;
        lists.extend(read_list(st, &snapshot.delta_manifest_list)?);
        Ok(Some((snapshot, lists)))
    }

    /// The commit's data files, decoded against the schema (admission checked each one:
    /// a failure here means state from elsewhere, and nothing is written).
    #[inline(never)] // see `new_snapshot`
    fn files(
        schema: &TableSchema,
        r: &SnapshotRecord<'_>,
    ) -> core::result::Result<Vec<DataFile>, StorageError> {
        r.committables
            .iter()
            .map(|(s, c)| {
                committable::decode(c, schema).map_err(|e| {
                    unusable(format!(
                        "a committable of subtask {s} for checkpoint {} does not fit the Paimon table: {}",
                        checkpoint_name(r.identifier),
                        committable_error_text(&e)
                    ))
                })
            })
            .collect()
    }
}

/// A core error met while writing, as the storage error the trait's create returns.
fn as_storage(e: Error) -> StorageError {
    match e.storage_source() {
        Some(s) if e.kind == ErrorKind::Storage => s.clone(),
        _ => unusable(e.message()),
    }
}

fn read_list(
    st: &mut dyn Storage,
    name: &str,
) -> core::result::Result<Vec<ManifestFileMeta>, StorageError> {
    let key = psnap::manifest_key(name);
    let bytes = st
        .get(&key)?
        .ok_or_else(|| unusable(format!("the manifest list {key} is missing")))?;
    manifest::decode_manifest_list(&bytes)
        .map_err(|_| unusable(format!("the manifest list {key} cannot be decoded")))
}

/// Snapshot `r.id` of schema `schema_id` over `files`, with its manifest lists
/// (name, size), the marks of every commit user and the properties the
/// read-back uses. Out of line: inlined, it made `create_snapshot` too large
/// for a JVM's JIT (BENCHMARKS.md, "Huge functions on the JVM").
#[inline(never)]
fn new_snapshot(
    r: &SnapshotRecord<'_>,
    previous: Option<&psnap::Snapshot>,
    schema_id: i64,
    files: &[DataFile],
    base_list: (&str, i64),
    delta_list: (&str, i64),
) -> core::result::Result<psnap::Snapshot, StorageError> {
    let id = pi(r.id)?;
    let mut marks = Marks::default();
    for (u, m) in r.users {
        marks.users.insert(
            (*u).to_string(),
            psnap::UserMark {
                identifier: pi(m.identifier)?,
                snapshot_id: pi(m.snapshot_id)?,
            },
        );
    }
    marks.previous_of_user = r.previous_of_user.map(|p| p.snapshot_id as i64);
    // Each count fits i64 (the decoder checks); their sum saturates.
    let delta_rows = files
        .iter()
        .fold(0i64, |n, f| n.saturating_add(f.row_count as i64));
    let total = previous
        .and_then(|p| p.total_record_count)
        .unwrap_or(0)
        .saturating_add(delta_rows);
    let mut snap = psnap::Snapshot::new_append(&NewSnapshot {
        id,
        schema_id,
        base_manifest_list: base_list,
        delta_manifest_list: delta_list,
        commit_user: r.commit_user,
        commit_identifier: pi(r.identifier)?,
        time_millis: pi(r.time_ms)?,
        total_record_count: total,
        delta_record_count: delta_rows,
        watermark: r.watermark,
        marks: &marks,
    });
    if let Some(props) = snap.properties.as_mut() {
        if let Some(p) = r.previous_of_user {
            props.insert(P_PREVIOUS_IDENTIFIER.into(), format!("{}", p.identifier));
        }
        // Which subtask reported each file, for the read-back (the manifest entry
        // has no field for it): computed from the record, no storage call.
        if let Some(runs) = subtasks::encode_runs(r.committables.iter().map(|(s, _)| *s)) {
            props.insert(subtasks::P_SUBTASKS.into(), runs);
        }
    }
    Ok(snap)
}

fn pi(v: u64) -> core::result::Result<i64, StorageError> {
    i64::try_from(v).map_err(|_| unusable(format!("{v} does not fit a Paimon long")))
}

impl PaimonTable {
    /// The base manifests after the merge the options ask for now, if any (its
    /// inputs read, its outputs written); as they were otherwise. A function of
    /// its own: inlined, it made `create_snapshot` too large for a JVM's JIT
    /// (BENCHMARKS.md, "Huge functions on the JVM").
    #[inline(never)]
    fn merge_due(
        &self,
        st: &mut dyn Storage,
        schema: &TableSchema,
        mut base: Vec<ManifestFileMeta>,
        id: i64,
        snapshot: u64,
    ) -> core::result::Result<Vec<ManifestFileMeta>, StorageError> {
        let bad = |what: &str| unusable(format!("writing snapshot {snapshot}: {what}"));
        if let Some(range) = manifest::plan_merge(&base, &self.merge) {
            let mut inputs = Vec::with_capacity(range.len());
            for m in &base[range.clone()] {
                let key = psnap::manifest_key(&m.file_name);
                inputs.push(
                    st.get(&key)?
                        .ok_or_else(|| unusable(format!("the manifest {key} is missing")))?,
                );
            }
            let refs: Vec<&[u8]> = inputs.iter().map(|b| b.as_slice()).collect();
            let merged = manifest::merge_manifests(
                &schema.partition_kinds(),
                &base[range.clone()],
                &refs,
                id,
            )
            .map_err(|_| bad("merging its manifests failed"))?;
            if let Some(m) = merged {
                for (meta, bytes) in &m.written {
                    st.put(&psnap::manifest_key(&meta.file_name), bytes)?;
                }
                base = manifest::apply_merge(&base, range, &m);
            }
        }
        Ok(base)
    }
}

// The larger methods are kept out of `AnyFormat`'s dispatch (and so out
// of the native commit path's functions): HotSpot's JIT compiles no method
// over 8,000 bytecode bytes, and a wasm function that grew past that by
// inlining ran in the JVM's interpreter on Chicory (BENCHMARKS.md, "Huge
// functions on the JVM").
impl TableFormat for PaimonTable {
    #[inline(never)]
    fn read_snapshot(&mut self, st: &mut dyn Storage, id: u64) -> Result<Option<StoredSnapshot>> {
        let Some((key, s)) = self.get_snapshot(st, id)? else {
            return Ok(None);
        };
        let stored = self.stored(st, &key, s.clone(), id)?;
        let lists = self
            .last
            .take()
            .filter(|l| l.id == id && l.snapshot == s)
            .and_then(|l| l.lists);
        self.last = Some(Box::new(Last {
            id,
            users: stored.users.clone(),
            snapshot: s,
            lists,
        }));
        Ok(Some(stored))
    }

    #[inline(never)]
    fn create_snapshot(
        &mut self,
        st: &mut dyn Storage,
        r: &SnapshotRecord<'_>,
    ) -> core::result::Result<bool, StorageError> {
        let id = pi(r.id)?;
        // Snapshot 1 of an expired table is missing, not free: a view read while the
        // table was empty must not create it again (a get no fault counts).
        if r.id == 1
            && st
                .get(psnap::EARLIEST_KEY)?
                .and_then(|b| psnap::parse_hint(&b))
                .is_some_and(|e| e > 1)
        {
            return Ok(false);
        }
        let prev = self.previous_lists(st, r.id)?;
        // The schema the table is at: the previous snapshot's (0 for the first).
        let schema_id = prev.as_ref().map_or(0, |(p, _)| p.schema_id);
        let schema = self.schema_at(st, schema_id).cloned().map_err(as_storage)?;
        let files = Self::files(&schema, r)?;
        let bad = |what: &str| unusable(format!("writing snapshot {}: {what}", r.id));
        let mut delta: Vec<ManifestFileMeta> = Vec::new();
        if !files.is_empty() {
            let (meta, bytes) = manifest::write_manifest(&schema, &files, id)
                .map_err(|_| bad("its manifest cannot be encoded"))?;
            st.put(&psnap::manifest_key(&meta.file_name), &bytes)?;
            delta.push(meta);
        }
        let (previous, base) = match prev {
            Some((p, lists)) => (Some(p), lists),
            None => (None, Vec::new()),
        };
        let mut base = self.merge_due(st, &schema, base, id, r.id)?;
        let (base_name, base_bytes) = manifest::write_manifest_list(&base, Role::BaseList, id);
        let (delta_name, delta_bytes) = manifest::write_manifest_list(&delta, Role::DeltaList, id);
        st.put(&psnap::manifest_key(&base_name), &base_bytes)?;
        st.put(&psnap::manifest_key(&delta_name), &delta_bytes)?;
        let snap = new_snapshot(
            r,
            previous.as_ref(),
            schema.id,
            &files,
            (&base_name, base_bytes.len() as i64),
            (&delta_name, delta_bytes.len() as i64),
        )?;
        let created = st.put_if_absent(&psnap::snapshot_key(id), &snap.encode())?;
        if created {
            base.extend(delta);
            self.last = Some(Box::new(Last {
                id: r.id,
                users: r
                    .users
                    .iter()
                    .map(|(u, m)| ((*u).to_string(), *m))
                    .collect(),
                snapshot: snap,
                lists: Some(base),
            }));
            self.schema = Some(schema);
            self.earliest_due |= r.id == 1;
        }
        Ok(created)
    }

    /// `LATEST`, else (no usable hint: a table Paimon created, or one whose hint was
    /// lost) the highest id a listing of `snapshot/` shows, as Paimon's readers do: with
    /// expired snapshots a probe from 1 would find none.
    fn read_hint(&mut self, st: &mut dyn Storage) -> core::result::Result<u64, StorageError> {
        if let Some(id) = st
            .get(psnap::LATEST_KEY)?
            .and_then(|b| psnap::parse_hint(&b))
        {
            return Ok(id as u64);
        }
        let keys = st.list("snapshot/")?;
        Ok(keys
            .iter()
            .filter_map(|k| psnap::parse_snapshot_file_name(k.strip_prefix("snapshot/")?))
            .max()
            .map_or(0, |id| id as u64))
    }

    /// Paimon's `EARLIEST` hint (Paimon's own expiry keeps it too).
    fn read_earliest(&mut self, st: &mut dyn Storage) -> Result<u64> {
        Ok(st
            .get(psnap::EARLIEST_KEY)
            .map_err(|e| storage_err(StorageOp::ReadingEarliestHint, e))?
            .and_then(|b| psnap::parse_hint(&b))
            .map_or(1, |id| (id as u64).max(1)))
    }

    /// A missing snapshot 1 is expired if `EARLIEST` is above 1 (a Paimon table keeps no
    /// marks in the keys it expired: its own readers list `snapshot/`).
    fn probe(&mut self, st: &mut dyn Storage, id: u64) -> Result<Probe> {
        if let Some(s) = self.read_snapshot(st, id)? {
            return Ok(Probe::Found(s));
        }
        if id == 1 {
            let earliest = self.read_earliest(st)?;
            if earliest > 1 {
                return Ok(Probe::Expired(earliest));
            }
        }
        Ok(Probe::Missing)
    }

    /// `EARLIEST` (a get no fault counts): a read that started from a `LATEST` hint
    /// below it can have stopped at the gap an expiry was making.
    fn earliest_after_load(&mut self, st: &mut dyn Storage, latest: u64) -> Result<u64> {
        let _ = latest;
        self.read_earliest(st)
    }

    fn write_hint(
        &mut self,
        st: &mut dyn Storage,
        latest: u64,
    ) -> core::result::Result<(), StorageError> {
        st.put(psnap::LATEST_KEY, &psnap::hint_bytes(pi(latest)?))?;
        if self.earliest_due {
            // Created only if absent: an expiry may have raised it since this
            // instance created snapshot 1 (a put after a failed hint write
            // would set it back to a snapshot that is gone).
            st.put_if_absent(psnap::EARLIEST_KEY, &psnap::hint_bytes(1))?;
            self.earliest_due = false;
        }
        Ok(())
    }

    /// A Paimon tag: the tagged snapshot's JSON, with the tag's times in its properties.
    #[inline(never)]
    fn create_tag(
        &mut self,
        st: &mut dyn Storage,
        t: &TagRecord<'_>,
    ) -> core::result::Result<bool, StorageError> {
        let key = psnap::tag_key(t.name)
            .map_err(|_| StorageError::InvalidKey(format!("tag name \"{}\"", clip(t.name))))?;
        // The snapshot a savepoint tags is usually the one just created: cached (a
        // snapshot never changes, so the cache is its stored content).
        let cached = self
            .last
            .as_ref()
            .filter(|l| l.id == t.snapshot_id)
            .map(|l| l.snapshot.clone());
        let found = match cached {
            Some(s) => Some(s),
            None => self
                .get_snapshot(st, t.snapshot_id)
                .map_err(as_storage)?
                .map(|(_, s)| s),
        };
        let Some(mut snap) = found else {
            return Err(unusable(format!(
                "snapshot {} to tag is missing",
                t.snapshot_id
            )));
        };
        let props = snap.properties.get_or_insert_with(BTreeMap::new);
        props.insert(P_TAG_CREATE.into(), format!("{}", t.create_time_ms));
        if let Some(x) = t.expire_time_ms {
            props.insert(P_TAG_EXPIRE.into(), format!("{x}"));
        }
        // Paimon's own times too, so that its tag expiration sees the retention.
        let retained = t.expire_time_ms.map(|x| x.saturating_sub(t.create_time_ms));
        let times = Some((t.create_time_ms, retained));
        st.put_if_absent(&key, &psnap::tag_bytes(&snap.encode(), times))
    }

    #[inline(never)]
    fn read_tag(&mut self, st: &mut dyn Storage, name: &str) -> Result<Option<StoredTag>> {
        let Ok(key) = psnap::tag_key(name) else {
            return Ok(None); // no such key can exist
        };
        st.get(&key)
            .map_err(|e| storage_err(StorageOp::ReadingTag(name.into()), e))?
            .map(|b| decode_tag(&key, name, &b))
            .transpose()
    }

    fn delete_tag(
        &mut self,
        st: &mut dyn Storage,
        name: &str,
    ) -> core::result::Result<(), StorageError> {
        match psnap::tag_key(name) {
            Ok(key) => st.delete(&key),
            Err(_) => Ok(()),
        }
    }

    #[inline(never)]
    fn list_tags(&mut self, st: &mut dyn Storage) -> Result<Vec<Tag>> {
        let keys = st
            .list("tag/")
            .map_err(|e| storage_err(StorageOp::ListingTags, e))?;
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let Some(name) = key.strip_prefix("tag/tag-") else {
                continue; // not a Paimon tag
            };
            if let Some(bytes) = st
                .get(&key)
                .map_err(|e| storage_err(StorageOp::Reading(key.clone()), e))?
            {
                out.push(decode_tag(&key, name, &bytes)?.tag);
            }
        }
        Ok(out)
    }
}

fn decode_tag(key: &str, name: &str, bytes: &[u8]) -> Result<StoredTag> {
    let s = psnap::decode_snapshot(bytes).map_err(|_| corrupt(key, PaimonDefect::NotATag))?;
    let prop = |k: &str| -> Result<Option<u64>> {
        match s.properties.as_ref().and_then(|p| p.get(k)) {
            None => Ok(None),
            Some(v) => v
                .parse::<u64>()
                .map(Some)
                .map_err(|_| corrupt(key, PaimonDefect::TimesMalformed)),
        }
    };
    let tag = Tag {
        name: name.to_string(),
        snapshot_id: u64::try_from(s.id)
            .map_err(|_| corrupt(key, PaimonDefect::NegativeSnapshotId))?,
        identifier: identifier_of(s.commit_identifier)
            .ok_or_else(|| corrupt(key, PaimonDefect::NegativeIdentifier))?,
        create_time_ms: prop(P_TAG_CREATE)?.unwrap_or(0),
        expire_time_ms: prop(P_TAG_EXPIRE)?,
    };
    Ok(StoredTag {
        tag,
        commit_user: s.commit_user,
    })
}

#[path = "paimon_read.rs"]
mod read;
#[path = "paimon_text.rs"]
mod text;
pub use text::committable_error_text;

#[cfg(test)]
#[path = "paimon_tests.rs"]
mod tests;
