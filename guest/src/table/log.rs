//! The log: this instance's view of the table and the exactly-once filter,
//! over any [`TableFormat`].
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
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::format::{Probe, SnapshotRecord, TableFormat, TagRecord, UserMark};
use super::formats::{AnyFormat, TableFormatKind};
use super::storage_err;
#[cfg(feature = "paimon")]
use crate::committables::Committables;
use crate::env::{Env, Storage};
use crate::error::{Error, ErrorReason, Result, StorageOp};
use crate::types::{Snapshot, END, MAX_TABLE_USERS_BYTES};

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
    /// How the table stores its records (the native log unless
    /// [`TableLog::with_format`] chose another).
    format: AnyFormat,
    loaded: bool,
    pub(in crate::table) latest: u64,
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

/// The next id a probe reads after finding `id` expired with `earliest` kept.
fn jump(jumps: &mut u32, id: u64, earliest: u64) -> Result<u64> {
    *jumps += 1;
    if *jumps > 3 || earliest <= id {
        return Err(ErrorReason::ExpiredSnapshotKeepsMoving { id, earliest }.into());
    }
    Ok(earliest)
}

impl TableLog {
    /// A log of a table in format `kind` (`invalid-config` if this build lacks it).
    pub fn with_format(kind: TableFormatKind) -> Result<TableLog> {
        Ok(TableLog {
            format: AnyFormat::of(kind)?,
            ..TableLog::default()
        })
    }

    /// A log over `format` (the read-only functions' detected one).
    #[cfg(feature = "paimon")]
    pub(in crate::table) fn over(format: AnyFormat) -> TableLog {
        TableLog {
            format,
            ..TableLog::default()
        }
    }

    /// The table's format.
    pub fn format_kind(&self) -> TableFormatKind {
        self.format.kind()
    }

    /// The format, for the read-only functions.
    #[cfg(feature = "paimon")]
    pub(in crate::table) fn format_mut(&mut self) -> &mut AnyFormat {
        &mut self.format
    }

    /// Checks the committables of an arriving entry against the table's format
    /// (SEMANTICS 3's content checks): the native log takes any bytes and makes no
    /// call; a Paimon table refuses one its schema cannot take, as `invalid-event`
    /// naming `what` ("event", "restore event"), the subtask and the checkpoint.
    #[cfg(feature = "paimon")]
    #[inline]
    pub fn check_committables(
        &mut self,
        st: &mut dyn Storage,
        what: &'static str,
        s: u32,
        checkpoint: u64,
        committables: &Committables,
    ) -> Result<()> {
        if !self.format.checks_committables() {
            return Ok(());
        }
        for (i, c) in committables.iter().enumerate() {
            self.format.check_committable(st, c).map_err(|e| {
                if e.kind == crate::error::ErrorKind::InvalidEvent {
                    ErrorReason::CommittableRejected {
                        what,
                        subtask: s,
                        checkpoint,
                        index: i,
                        why: Box::new(e.into_reason()),
                    }
                    .into()
                } else {
                    e
                }
            })?;
        }
        Ok(())
    }

    /// Creates tag `name` in this table's format unless it exists (idempotent).
    /// Returns whether it was created.
    pub fn create_tag(
        &mut self,
        env: &mut Env<'_>,
        name: &str,
        snapshot_id: u64,
        identifier: u64,
        user: &str,
        retained_ms: Option<u64>,
    ) -> Result<bool> {
        let now = env.clock.now_ms();
        let tag = TagRecord {
            name,
            snapshot_id,
            identifier,
            commit_user: user,
            create_time_ms: now,
            expire_time_ms: retained_ms.map(|r| now.saturating_add(r)),
        };
        self.format
            .create_tag(env.storage, &tag)
            .map_err(|e| storage_err(StorageOp::CreatingTag(name.into()), e))
    }

    /// Deletes tag `name` if it points at `user`'s snapshot with `identifier`, or at
    /// `user`'s END snapshot (a drained savepoint's tag, SEMANTICS 5.4).
    pub fn delete_own_tag(
        &mut self,
        st: &mut dyn Storage,
        name: &str,
        user: &str,
        identifier: u64,
    ) -> Result<bool> {
        super::delete_own_tag_in(&mut self.format, st, name, user, identifier)
    }

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
        let mut next = latest.checked_add(1);
        // Jumps over an expired range (bounded: an expiry running beside this
        // read can move the earliest snapshot kept while it is read).
        let mut jumps = 0;
        let mut jumped = false;
        while let Some(id) = next {
            match self.format.probe(st, id)? {
                Probe::Found(s) => {
                    if watch == Some(id) {
                        watched = Some(s.snapshot);
                    }
                    latest = id;
                    users = Some(s.users);
                    next = id.checked_add(1);
                    jumped = false;
                }
                // Right after a jump, the earliest snapshot kept is missing only
                // if a later expiry removed it: its earliest is read again.
                Probe::Missing if jumped => {
                    let earliest = self.format.read_earliest(st)?;
                    next = Some(jump(&mut jumps, id, earliest)?);
                }
                Probe::Missing => break,
                // The probe reached the expired range (from an empty view, or a
                // hint naming an expired snapshot): the log goes on at the earliest
                // snapshot kept, never at this id (a create here would fork it).
                Probe::Expired(earliest) => {
                    next = Some(jump(&mut jumps, id, earliest)?);
                    jumped = true;
                }
            }
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
            None => self.format.read_snapshot(st, id)?.map(|s| s.snapshot),
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
        let hinted = self
            .format
            .read_hint(st)
            .map_err(|e| storage_err(StorageOp::ReadingLatestHint, e))?;
        let mut latest = 0;
        let mut users = BTreeMap::new();
        if hinted > 0 {
            if let Some(s) = self.format.read_snapshot(st, hinted)? {
                latest = hinted;
                users = s.users;
            }
        }
        self.advance(st, latest, Some(users), None)?;
        // A format whose expired keys hold no marks (Paimon) is asked whether the
        // read stopped inside the expired range (a hint below it, read while an
        // expiry was deleting): then it goes on from the earliest kept.
        for _ in 0..3 {
            let earliest = self.format.earliest_after_load(st, self.latest)?;
            if earliest <= 1 || self.latest >= earliest {
                return Ok(());
            }
            self.advance(st, earliest - 1, Some(BTreeMap::new()), None)?;
        }
        Err(ErrorReason::EarliestKeepsMoving.into())
    }

    /// The latest snapshot id this view knows of (0: none), for tools that
    /// read the table (`sinkcoord expire`).
    pub fn latest_id(&self) -> u64 {
        self.latest
    }

    /// Every commit user's mark as of [`TableLog::latest_id`], in user order.
    pub fn marks(&self) -> &BTreeMap<String, UserMark> {
        &self.users
    }

    /// The earliest snapshot an expiry kept (1 if none ran), in this table's format.
    pub fn earliest(&mut self, st: &mut dyn Storage) -> Result<u64> {
        self.format.read_earliest(st)
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
        env: &mut Env<'_>,
        user: &str,
        identifier: u64,
        watermark: Option<i64>,
        committables: &[(u32, &[u8])],
    ) -> Result<Written> {
        if !self.loaded {
            self.load(env.storage)?;
        }
        loop {
            if self.user_high(user).is_some_and(|h| identifier <= h) {
                return Ok(Written::Skipped);
            }
            // Fatal, not `storage`: repeating the call cannot help.
            let id = self.latest.checked_add(1).ok_or_else(|| {
                Error::from(ErrorReason::SnapshotIdsExhausted {
                    checkpoint: identifier,
                    latest: self.latest,
                })
            })?;
            let mark = UserMark {
                identifier,
                snapshot_id: id,
            };
            let previous_of_user = self.users.get(user).copied();
            if previous_of_user.is_none() {
                self.check_room_for(user)?;
            }
            let mut users: Vec<(&str, UserMark)> = self
                .users
                .iter()
                .filter(|(u, _)| u.as_str() != user)
                .map(|(u, m)| (u.as_str(), *m))
                .collect();
            // In user order (the map's order, this user at its place):
            // an insert, not a sort (one sort copy less in the component).
            let at = users.partition_point(|(u, _)| *u < user);
            users.insert(at, (user, mark));
            let record = SnapshotRecord {
                id,
                commit_user: user,
                identifier,
                watermark,
                time_ms: env.clock.now_ms(),
                committables,
                previous_of_user,
                users: &users,
            };
            let created = self.format.create_snapshot(env.storage, &record);
            drop(users);
            match created {
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
                    let other = match self.format.probe(env.storage, id)? {
                        Probe::Found(other) => other,
                        // `id` is in an expired range (this view was read while the
                        // table was empty): read on from the earliest kept.
                        Probe::Expired(_) => {
                            self.advance(env.storage, self.latest, None, None)?;
                            self.hint_stale = true;
                            continue;
                        }
                        Probe::Missing => {
                            return Err(ErrorReason::SnapshotUnreadable {
                                checkpoint: identifier,
                                snapshot: id,
                            }
                            .into())
                        }
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
                    return Err(storage_err(
                        StorageOp::Committing {
                            checkpoint: identifier,
                            snapshot: id,
                        },
                        e,
                    ));
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
            return Err(ErrorReason::TooManyCommitUsers {
                user: user.into(),
                users: self.users.len() + 1,
                bytes: taken,
            }
            .into());
        }
        Ok(())
    }

    /// Writes the latest-snapshot hint if this instance appended since the last one.
    pub fn write_hint(&mut self, st: &mut dyn Storage) -> Result<()> {
        if !self.hint_stale {
            return Ok(());
        }
        self.format
            .write_hint(st, self.latest)
            .map_err(|e| storage_err(StorageOp::WritingLatestHint, e))?;
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
        // A match in the view's own marks is the latest snapshot's word; one
        // reached through a link is read first, since an expiry may have
        // removed it (one get, only on a walk back).
        let mut via_link = false;
        while let Some(m) = mark {
            if m.identifier < identifier {
                return Ok(None);
            }
            if m.identifier == identifier && !via_link {
                return Ok(Some(m.snapshot_id));
            }
            // Each record's link goes strictly back (`format::check_marks`), so the
            // walk ends; a mark that names a missing or another snapshot is
            // a damaged table, not "no such snapshot", unless an expiry removed
            // it: then the walk ends with no snapshot (SEMANTICS 5.4: an
            // expired snapshot gets no tag).
            let s = match self.format.probe(st, m.snapshot_id)? {
                Probe::Found(s) => s,
                Probe::Expired(_) => return Ok(None),
                Probe::Missing => {
                    if m.snapshot_id < self.format.read_earliest(st)? {
                        return Ok(None);
                    }
                    return Err(ErrorReason::MarkedSnapshotMissing {
                        user: user.into(),
                        snapshot: m.snapshot_id,
                    }
                    .into());
                }
            };
            if s.snapshot.commit_user != user || s.snapshot.identifier != m.identifier {
                return Err(ErrorReason::MarkedSnapshotOtherCommit {
                    user: user.into(),
                    snapshot: m.snapshot_id,
                    checkpoint: m.identifier,
                }
                .into());
            }
            if m.identifier == identifier {
                return Ok(Some(m.snapshot_id));
            }
            mark = s.previous_of_user;
            via_link = true;
        }
        Ok(None)
    }
}
