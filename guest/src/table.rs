//! The table's snapshot log and tags, over the `Storage` trait.
//!
//! Layout:
//! - `snapshot/<id, 20 digits>`: one snapshot, created with one atomic
//!   `put_if_absent`; ids are dense (a writer creates `n` only after seeing `n-1`);
//! - `hint/latest-snapshot`: the latest snapshot id as decimal text, an
//!   overwritable hint written after the creates of a commit (may be stale);
//! - `tag/<name>`: one tag, created with `put_if_absent`.
//!
//! Exactly-once without scanning history: every snapshot carries, for every
//! commit user, the user's last `(identifier, snapshot id)` as of that
//! snapshot, and a pointer to the same user's previous snapshot. Reading the
//! latest snapshot therefore answers "highest identifier committed by this
//! user", and the atomic create of `latest + 1` proves nothing was appended
//! in between. A commit in steady state makes `k` creates (one per snapshot)
//! and one hint put; each snapshot appended by someone else since this
//! instance last looked costs one extra get and one extra create. The map
//! grows with the number of distinct commit users, never with the log length.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::env::{Env, Storage, StorageError};
use crate::error::{Error, Result};
use crate::types::{checkpoint_name, Snapshot, Tag, END, MAX_TABLE_USERS_BYTES};
use crate::wire::{self, Bytes, Seq};

/// Key prefix of the snapshots.
pub const SNAPSHOT_PREFIX: &str = "snapshot/";
/// Key prefix of the tags.
pub const TAG_PREFIX: &str = "tag/";
/// Key of the latest-snapshot hint.
pub const LATEST_HINT: &str = "hint/latest-snapshot";
const SNAPSHOT_VERSION: u32 = 1;
const TAG_VERSION: u32 = 1;

/// The key of snapshot `id`.
pub fn snapshot_key(id: u64) -> String {
    format!("{SNAPSHOT_PREFIX}{id:020}")
}

/// The key of tag `name`.
pub fn tag_key(name: &str) -> String {
    format!("{TAG_PREFIX}{name}")
}

/// A storage failure while doing `what`, kept as the error's source.
fn storage_err(what: &str, e: StorageError) -> Error {
    Error::storage(format!("{what}: {e}")).with_source(e)
}

/// A commit user's last snapshot as of some snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMark {
    /// Highest identifier (checkpoint id) the user committed.
    pub identifier: u64,
    /// The snapshot that committed it.
    pub snapshot_id: u64,
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

/// Decodes the snapshot record stored under `key`.
pub fn decode_snapshot(key: &str, bytes: &[u8]) -> Result<StoredSnapshot> {
    let corrupt =
        |why: &dyn core::fmt::Display| Error::corrupt_state(format!("table record {key}: {why}"));
    let (version, rest) = wire::version(bytes).map_err(|e| corrupt(&e))?;
    if version != SNAPSHOT_VERSION {
        return Err(corrupt(&wire::DecodeError::UnknownVersion(version)));
    }
    let w: SnapshotWire = wire::body(rest).map_err(|e| corrupt(&e))?;
    check_links(&w).map_err(|why| corrupt(&why))?;
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

/// What the table's exactly-once filter and its walks back rely on, checked
/// before a record is used: the snapshot marks its own commit, no mark
/// points past it, the previous-of-user link goes strictly back (so a walk
/// along it ends: a self-link or a cycle is `corrupt-state`, never a loop),
/// and its commit users stay within [`MAX_TABLE_USERS_BYTES`].
fn check_links(w: &SnapshotWire<'_>) -> core::result::Result<(), String> {
    let own = UserMark {
        identifier: w.identifier,
        snapshot_id: w.id,
    };
    let mut bytes: u64 = 0;
    let mut marks_own = false;
    for u in &w.users.0 {
        bytes = bytes.saturating_add(u.commit_user.len() as u64 + 16);
        if u.mark.snapshot_id == 0 || u.mark.snapshot_id > w.id {
            return Err(format!(
                "commit user \"{}\" is marked at snapshot {}, outside 1..={}",
                clip(u.commit_user),
                u.mark.snapshot_id,
                w.id
            ));
        }
        marks_own |= u.commit_user == w.commit_user && u.mark == own;
    }
    if bytes > MAX_TABLE_USERS_BYTES {
        return Err(format!(
            "its commit users take {bytes} bytes, more than {MAX_TABLE_USERS_BYTES}"
        ));
    }
    if !marks_own {
        return Err(format!(
            "it does not mark its own commit (\"{}\", checkpoint {})",
            clip(w.commit_user),
            checkpoint_name(w.identifier)
        ));
    }
    if let Some(p) = w.previous_of_user {
        if p.snapshot_id >= w.id || p.identifier >= w.identifier {
            return Err(format!(
                "its previous-of-user link (snapshot {}, checkpoint {}) does not go back from snapshot {}, checkpoint {}",
                p.snapshot_id,
                checkpoint_name(p.identifier),
                w.id,
                checkpoint_name(w.identifier)
            ));
        }
    }
    Ok(())
}

/// A commit user for a message: at most 64 bytes of it, quoted as is (no
/// `{:?}`: its escaping would pull Unicode tables into the component).
fn clip(user: &str) -> &str {
    let mut end = user.len().min(64);
    while !user.is_char_boundary(end) {
        end -= 1;
    }
    user.get(..end).unwrap_or_default()
}

struct DecodedTag {
    tag: Tag,
    commit_user: String,
}

fn decode_tag(key: &str, bytes: &[u8]) -> Result<DecodedTag> {
    let corrupt =
        |why: &dyn core::fmt::Display| Error::corrupt_state(format!("table record {key}: {why}"));
    let (version, rest) = wire::version(bytes).map_err(|e| corrupt(&e))?;
    if version != TAG_VERSION {
        return Err(corrupt(&wire::DecodeError::UnknownVersion(version)));
    }
    let w: TagWire = wire::body(rest).map_err(|e| corrupt(&e))?;
    Ok(DecodedTag {
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

fn read_snapshot(st: &mut dyn Storage, id: u64) -> Result<Option<StoredSnapshot>> {
    let key = snapshot_key(id);
    match st
        .get(&key)
        .map_err(|e| storage_err(&format!("reading snapshot {id}"), e))?
    {
        Some(bytes) => {
            let s = decode_snapshot(&key, &bytes)?;
            if s.snapshot.id != id {
                return Err(Error::corrupt_state(format!(
                    "table record {key} holds snapshot {}",
                    s.snapshot.id
                )));
            }
            Ok(Some(s))
        }
        None => Ok(None),
    }
}

/// Result of writing one snapshot through the exactly-once filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Created now, with this id.
    Created(u64),
    /// An earlier create of this instance that reported an error had landed.
    Landed(u64),
    /// Filtered: the commit user already committed this identifier.
    Skipped,
}

impl Written {
    /// Whether a snapshot of ours is in the table now.
    pub fn wrote(self) -> bool {
        !matches!(self, Written::Skipped)
    }
}

/// This instance's view of the log: the latest snapshot it knows of and
/// every commit user's last snapshot as of it. Kept across calls and
/// corrected by the atomic create (a conflict means someone appended).
#[derive(Clone, Debug, Default)]
pub struct TableLog {
    loaded: bool,
    latest: u64,
    users: BTreeMap<String, UserMark>,
    /// The commit user this instance commits as (see [`TableLog::watch`])
    /// and its entry of `users`, kept in step with every change of `users`:
    /// rule 2 asks for it on every event, and a string-keyed map lookup
    /// was a tenth of an event's instructions (issue 10, BENCHMARKS.md).
    own_user: String,
    own_mark: Option<UserMark>,
    /// A create of ours that returned an error: `(snapshot id, identifier)`.
    /// If a retry finds exactly that snapshot, our write landed.
    uncertain: Option<(u64, u64)>,
    /// Snapshots created since the hint was last written.
    hint_stale: bool,
    /// A storage call failed since the last read: the next call that needs
    /// the table reads it again before deciding anything (SEMANTICS 5.3).
    stale: bool,
}

impl TableLog {
    /// Sets the commit user whose mark [`TableLog::own_high`] answers
    /// without a map lookup (the coordinator's own, set again when a
    /// restore's state changes it).
    pub fn watch(&mut self, user: &str) {
        if self.own_user != user {
            self.own_user = user.to_string();
        }
        self.refresh_own();
    }

    /// Re-reads the watched user's mark after `users` changed.
    fn refresh_own(&mut self) {
        self.own_mark = self.users.get(self.own_user.as_str()).copied();
    }

    /// [`TableLog::user_high`] of the user set by [`TableLog::watch`].
    pub fn own_high(&self) -> Option<u64> {
        self.own_mark.map(|m| m.identifier)
    }

    /// Whether the table was read at least once.
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// Whether the view must be (re-)read before it is used for a decision.
    pub fn needs_read(&self) -> bool {
        !self.loaded || self.stale
    }

    /// Whether snapshots were created since the hint was last written (the
    /// commit rule's early exit must not skip the hint's write).
    pub fn hint_stale(&self) -> bool {
        self.hint_stale
    }

    /// Marks the view as possibly out of date (after a storage error).
    pub fn invalidate(&mut self) {
        self.stale = true;
    }

    /// Reads the table again. Returns the identifier of a create of this
    /// instance for `user` that reported an error but is found to have landed.
    ///
    /// A loaded view only probes forward from its latest snapshot: snapshots
    /// are immutable and their ids dense, so what the view holds is still
    /// true and only later ids can be new (one `get` when nothing landed,
    /// against three through the hint). The create in doubt, the view's
    /// latest + 1, is the first snapshot the probe reads.
    pub fn refresh(&mut self, st: &mut dyn Storage, user: &str) -> Result<Option<u64>> {
        if !self.loaded {
            self.load(st)?;
            return self.settle_uncertain(st, user, None);
        }
        let watched = self.advance(st, self.latest, None, self.uncertain.map(|(id, _)| id))?;
        self.settle_uncertain(st, user, watched)
    }

    /// Probes forward from snapshot `latest` (whose users are `users`, or
    /// the view's own when `None`) until a missing id, then installs the
    /// result as the view: it changes only once the whole read succeeded.
    /// Returns snapshot `watch` if the probe read it.
    fn advance(
        &mut self,
        st: &mut dyn Storage,
        mut latest: u64,
        mut users: Option<BTreeMap<String, UserMark>>,
        watch: Option<u64>,
    ) -> Result<Option<Snapshot>> {
        let mut watched = None;
        while let Some(next) = latest.checked_add(1) {
            let Some(s) = read_snapshot(st, next)? else {
                break;
            };
            if watch == Some(next) {
                watched = Some(s.snapshot);
            }
            latest = next;
            users = Some(s.users);
        }
        self.latest = latest;
        if let Some(users) = users {
            self.users = users;
            self.refresh_own();
        }
        self.loaded = true;
        self.stale = false;
        Ok(watched)
    }

    /// Whether the create in doubt landed, once the view is current: the
    /// snapshot at its id (already read, or read now) is `user`'s with its
    /// identifier.
    fn settle_uncertain(
        &mut self,
        st: &mut dyn Storage,
        user: &str,
        read: Option<Snapshot>,
    ) -> Result<Option<u64>> {
        let Some((id, identifier)) = self.uncertain else {
            return Ok(None);
        };
        if id > self.latest {
            return Ok(None);
        }
        let snapshot = match read {
            Some(s) => Some(s),
            None => read_snapshot(st, id)?.map(|s| s.snapshot),
        };
        let landed = snapshot.is_some_and(|s| s.commit_user == user && s.identifier == identifier);
        self.uncertain = None;
        Ok(landed.then_some(identifier))
    }

    /// Reads the latest snapshot: the hint, the snapshot it names, then a
    /// probe forward until a missing id (the hint may be stale).
    ///
    /// The probe cannot be left to the atomic create of the next commit:
    /// the first read decides SEMANTICS 3 rule 2 and 5.3 for the events
    /// before that commit, and the hint is stale exactly after a create that
    /// landed although storage reported an error (or a crash before the hint
    /// put), so trusting it would miss this user's own END snapshot
    /// (conformance trace `v2-sched6-uncompleted-entries-in-end-snapshot-ambiguous`).
    pub fn load(&mut self, st: &mut dyn Storage) -> Result<()> {
        let hint = st
            .get(LATEST_HINT)
            .map_err(|e| storage_err("reading the latest-snapshot hint", e))?;
        let hinted = hint
            .and_then(|b| {
                core::str::from_utf8(&b)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
            })
            .unwrap_or(0);
        let mut latest = 0;
        let mut users = BTreeMap::new();
        if hinted > 0 {
            if let Some(s) = read_snapshot(st, hinted)? {
                latest = hinted;
                users = s.users;
            }
        }
        self.advance(st, latest, Some(users), None)?;
        Ok(())
    }

    /// Highest identifier committed by `user`, as far as this view knows.
    pub fn user_high(&self, user: &str) -> Option<u64> {
        self.users.get(user).map(|m| m.identifier)
    }

    /// Whether `user` made its final commit (an END snapshot).
    pub fn has_final(&self, user: &str) -> bool {
        self.user_high(user) == Some(END)
    }

    /// Writes one snapshot for `identifier` unless `user` already committed
    /// it (SEMANTICS 5.2). The filter is re-checked after every conflict.
    pub fn commit(
        &mut self,
        env: &mut dyn Env,
        user: &str,
        identifier: u64,
        watermark: Option<i64>,
        committables: &[(u32, &[u8])],
    ) -> Result<Written> {
        let what = || format!("committing checkpoint {}", checkpoint_name(identifier));
        if !self.loaded {
            self.load(env)?;
        }
        loop {
            if self.user_high(user).is_some_and(|h| identifier <= h) {
                return Ok(Written::Skipped);
            }
            // Fatal, not `storage`: repeating the call cannot help.
            let id = self.latest.checked_add(1).ok_or_else(|| {
                Error::corrupt_state(format!(
                    "{}: the table's snapshot ids are exhausted (snapshot {} is the last)",
                    what(),
                    self.latest
                ))
            })?;
            let mark = UserMark {
                identifier,
                snapshot_id: id,
            };
            let previous_of_user = self.users.get(user).copied();
            if previous_of_user.is_none() {
                self.check_room_for(user)?;
            }
            let mut users: Vec<UserWire> = self
                .users
                .iter()
                .filter(|(u, _)| u.as_str() != user)
                .map(|(u, m)| UserWire {
                    commit_user: u,
                    mark: *m,
                })
                .collect();
            // In user order (the map's order, this user at its place):
            // an insert, not a sort (one sort copy less in the component).
            let at = users.partition_point(|u| u.commit_user < user);
            users.insert(
                at,
                UserWire {
                    commit_user: user,
                    mark,
                },
            );
            let bytes = wire::encode(
                SNAPSHOT_VERSION,
                &SnapshotWire {
                    id,
                    commit_user: user,
                    identifier,
                    watermark,
                    time_ms: env.now_ms(),
                    committables: Seq(committables
                        .iter()
                        .map(|(s, c)| (*s, wire::bytes(c)))
                        .collect()),
                    previous_of_user,
                    users: Seq(users),
                },
            );
            match env.put_if_absent(&snapshot_key(id), &bytes) {
                Ok(true) => {
                    self.latest = id;
                    self.users.insert(user.to_string(), mark);
                    self.refresh_own();
                    self.uncertain = None;
                    self.hint_stale = true;
                    return Ok(Written::Created(id));
                }
                Ok(false) => {
                    // Someone appended `id`: adopt it and re-check the filter.
                    let Some(other) = read_snapshot(env, id)? else {
                        return Err(Error::storage(format!(
                            "{}: snapshot {id} exists but cannot be read",
                            what()
                        )));
                    };
                    self.latest = id;
                    self.users = other.users;
                    self.refresh_own();
                    self.hint_stale = true;
                    if self.uncertain == Some((id, identifier))
                        && other.snapshot.commit_user == user
                    {
                        self.uncertain = None;
                        return Ok(Written::Landed(id));
                    }
                }
                Err(e) => {
                    self.uncertain = Some((id, identifier));
                    return Err(storage_err(&format!("{} (snapshot {id})", what()), e));
                }
            }
        }
    }

    /// Refuses a commit user new to the table that would take the table's
    /// commit users past [`MAX_TABLE_USERS_BYTES`] (fatal: every later
    /// snapshot would list it).
    fn check_room_for(&self, user: &str) -> Result<()> {
        let taken: u64 = self
            .users
            .keys()
            .map(|u| u.len() as u64 + 16)
            .sum::<u64>()
            .saturating_add(user.len() as u64 + 16);
        if taken > MAX_TABLE_USERS_BYTES {
            return Err(Error::invalid_config(format!(
                "commit user \"{}\" would make the table's {} commit users take {taken} bytes, more than {MAX_TABLE_USERS_BYTES}",
                clip(user),
                self.users.len() + 1
            )));
        }
        Ok(())
    }

    /// Writes the latest-snapshot hint if this instance appended since the last one.
    pub fn write_hint(&mut self, st: &mut dyn Storage) -> Result<()> {
        if !self.hint_stale {
            return Ok(());
        }
        st.put(LATEST_HINT, format!("{}", self.latest).as_bytes())
            .map_err(|e| storage_err("writing the latest-snapshot hint", e))?;
        self.hint_stale = false;
        Ok(())
    }

    /// The id of `user`'s snapshot with exactly `identifier`, walking back
    /// through the user's own snapshots from its latest one (usually zero or
    /// one read: savepoints are recent).
    pub fn find_user_snapshot(
        &mut self,
        st: &mut dyn Storage,
        user: &str,
        identifier: u64,
    ) -> Result<Option<u64>> {
        if !self.loaded {
            self.load(st)?;
        }
        let mut mark = self.users.get(user).copied();
        while let Some(m) = mark {
            if m.identifier == identifier {
                return Ok(Some(m.snapshot_id));
            }
            if m.identifier < identifier {
                return Ok(None);
            }
            // Each record's link goes strictly back (`check_links`), so the
            // walk ends; a mark that names a missing or another snapshot is
            // a damaged table, not "no such snapshot".
            let s = read_snapshot(st, m.snapshot_id)?.ok_or_else(|| {
                Error::corrupt_state(format!(
                    "commit user \"{}\" is marked at snapshot {}, which is missing",
                    clip(user),
                    m.snapshot_id
                ))
            })?;
            if s.snapshot.commit_user != user || s.snapshot.identifier != m.identifier {
                return Err(Error::corrupt_state(format!(
                    "commit user \"{}\" is marked at snapshot {} for checkpoint {}, which holds another commit",
                    clip(user),
                    m.snapshot_id,
                    checkpoint_name(m.identifier)
                )));
            }
            mark = s.previous_of_user;
        }
        Ok(None)
    }
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
    let bytes = wire::encode(
        TAG_VERSION,
        &TagWire {
            name,
            snapshot_id,
            identifier,
            commit_user: user,
            create_time_ms: now,
            expire_time_ms: retained_ms.map(|r| now.saturating_add(r)),
        },
    );
    env.put_if_absent(&tag_key(name), &bytes)
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
    let key = tag_key(name);
    let Some(bytes) = st
        .get(&key)
        .map_err(|e| storage_err(&format!("reading tag {name}"), e))?
    else {
        return Ok(false);
    };
    let t = decode_tag(&key, &bytes)?;
    if t.commit_user != user || (t.tag.identifier != identifier && t.tag.identifier != END) {
        return Ok(false);
    }
    st.delete(&key)
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
    Ok(read_snapshot(st, id)?.map(|s| s.snapshot))
}

/// Every snapshot, by id.
pub fn list_snapshots(st: &mut dyn Storage) -> Result<Vec<Snapshot>> {
    let mut out = Vec::new();
    let mut id = 1u64;
    while let Some(s) = read_snapshot(st, id)? {
        out.push(s.snapshot);
        id += 1;
    }
    Ok(out)
}

/// Every tag, by name in byte order.
pub fn list_tags(st: &mut dyn Storage) -> Result<Vec<Tag>> {
    let keys = st
        .list(TAG_PREFIX)
        .map_err(|e| storage_err("listing tags", e))?;
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        if let Some(bytes) = st
            .get(&key)
            .map_err(|e| storage_err(&format!("reading {key}"), e))?
        {
            out.push(decode_tag(&key, &bytes)?.tag);
        }
    }
    // Storage lists keys in byte order and a tag's key is `tag/<name>`, so
    // the names arrive sorted unless a record's name differs from its key
    // (a damaged or hand-made table); only then are they ordered, stably,
    // by binary insertion: a sort function would add 3 KB to the component.
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
