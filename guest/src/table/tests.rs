//! Unit tests of the table log.

use super::*;
use crate::env::AsEnv;
use crate::env::{MemEnv, MemStorage, StepClock};
use crate::error::Defect;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};

fn commit(log: &mut TableLog, env: &mut MemEnv, user: &str, id: u64) -> Written {
    log.commit(
        &mut env.as_env(),
        user,
        id,
        Some(1),
        &[(0, b"x".as_slice())],
    )
    .unwrap()
}

/// A table in memory with user `u`'s checkpoints `1..=n` committed, and the
/// log that committed them.
fn committed(n: u64) -> (MemEnv, TableLog) {
    let mut env = MemEnv::default();
    let mut log = TableLog::default();
    for i in 1..=n {
        commit(&mut log, &mut env, "u", i);
    }
    (env, log)
}

#[test]
fn filter_and_conflict() {
    let mut env = MemEnv::default();
    let mut a = TableLog::default();
    let mut b = TableLog::default();
    assert_eq!(commit(&mut a, &mut env, "u", 1), Written::Created(1));
    // b has a stale view; the create conflicts, b adopts snapshot 1 and filters.
    assert_eq!(commit(&mut b, &mut env, "u", 1), Written::Skipped);
    assert_eq!(commit(&mut b, &mut env, "v", 1), Written::Created(2));
    assert_eq!(commit(&mut a, &mut env, "u", 2), Written::Created(3));
    assert_eq!(
        a.find_user_snapshot(&mut env.storage, "u", 1).unwrap(),
        Some(1)
    );
    assert_eq!(
        a.find_user_snapshot(&mut env.storage, "u", 2).unwrap(),
        Some(3)
    );
    assert_eq!(
        a.find_user_snapshot(&mut env.storage, "v", 2).unwrap(),
        None
    );
    let all = list_snapshots(&mut env.storage).unwrap();
    assert_eq!(
        all.iter().map(|s| s.identifier).collect::<Vec<_>>(),
        alloc::vec![1, 1, 2]
    );
}

#[test]
fn stale_hint_is_probed_past() {
    let mut env = MemEnv::default();
    let mut a = TableLog::default();
    commit(&mut a, &mut env, "u", 1);
    a.write_hint(&mut env.storage).unwrap();
    commit(&mut a, &mut env, "u", 2);
    let mut fresh = TableLog::default();
    fresh.load(&mut env.storage).unwrap();
    assert_eq!(fresh.latest, 2);
    assert_eq!(fresh.user_high("u"), Some(2));
    assert_eq!(
        latest_snapshot(&mut env.storage)
            .unwrap()
            .unwrap()
            .identifier,
        2
    );
}

#[test]
fn tags_are_idempotent_and_owned() {
    let mut env = MemEnv {
        clock: StepClock { next: 10, step: 1 },
        ..Default::default()
    };
    assert!(create_tag(&mut env, "savepoint-1", 1, 1, "u", Some(5)).unwrap());
    assert!(!create_tag(&mut env, "savepoint-1", 2, 1, "u", None).unwrap());
    let st = &mut env.storage;
    let tags = list_tags(st).unwrap();
    assert_eq!(tags[0].snapshot_id, 1);
    assert_eq!(tags[0].expire_time_ms, Some(15));
    assert!(!delete_own_tag(st, "savepoint-1", "other", 1).unwrap());
    assert!(delete_own_tag(st, "savepoint-1", "u", 1).unwrap());
    assert!(list_tags(st).unwrap().is_empty());
}

/// Names that do not follow their keys (a damaged table) are still
/// listed by name, stably.
#[test]
fn tags_are_listed_by_name_whatever_their_keys() {
    let mut env = MemEnv::default();
    for (name, id) in [("b", 1), ("c", 2), ("a", 3), ("c", 4)] {
        create_tag(&mut env, name, id, id, "u", None).unwrap();
        let bytes = env.storage.get(&tag_key(name)).unwrap().unwrap();
        env.storage.delete(&tag_key(name)).unwrap();
        env.storage
            .put(&format!("{TAG_PREFIX}{id}"), &bytes)
            .unwrap();
    }
    let tags = list_tags(&mut env.storage).unwrap();
    let got: Vec<(&str, u64)> = tags
        .iter()
        .map(|t| (t.name.as_str(), t.snapshot_id))
        .collect();
    assert_eq!(got, [("a", 3), ("b", 1), ("c", 2), ("c", 4)]);
}

// --- hostile tables (issue 26): damaged links are corrupt-state, never a loop ---

/// A snapshot record of `user` at `id` for `identifier`, with the given
/// previous-of-user link and every mark in `users` (its own added).
fn record(
    id: u64,
    user: &str,
    identifier: u64,
    previous: Option<UserMark>,
    users: &[(&str, UserMark)],
) -> Vec<u8> {
    let mut map: BTreeMap<String, UserMark> =
        users.iter().map(|(u, m)| (u.to_string(), *m)).collect();
    map.entry(user.to_string()).or_insert(UserMark {
        identifier,
        snapshot_id: id,
    });
    encode_snapshot(&StoredSnapshot {
        snapshot: Snapshot {
            id,
            commit_user: user.to_string(),
            identifier,
            watermark: None,
            time_ms: 0,
            committables: alloc::vec![(0, b"x".to_vec())],
        },
        previous_of_user: previous,
        users: map,
    })
}

fn mark(identifier: u64, snapshot_id: u64) -> UserMark {
    UserMark {
        identifier,
        snapshot_id,
    }
}

fn corrupt(r: Result<Option<u64>>) -> ErrorReason {
    let e = r.expect_err("a damaged table is corrupt-state");
    assert_eq!(e.kind, crate::error::ErrorKind::CorruptState, "{e}");
    e.into_reason()
}

/// The defect of a corrupt table record.
fn defect(r: ErrorReason) -> Defect {
    match r {
        ErrorReason::TableRecord { defect, .. } => defect,
        other => panic!("not a table record's defect: {other}"),
    }
}

#[test]
fn encode_snapshot_round_trips_what_commit_writes() {
    let mut env = MemEnv::default();
    let mut log = TableLog::default();
    commit(&mut log, &mut env, "u", 1);
    commit(&mut log, &mut env, "w", 1);
    commit(&mut log, &mut env, "v", 2);
    // Three users in one record: the commit's borrowed pairs and the
    // decoder's wire structs must be the same bytes.
    let key = snapshot_key(3);
    let stored = env.storage.map[&key].clone();
    let decoded = decode_snapshot(&key, &stored).unwrap();
    assert_eq!(encode_snapshot(&decoded), stored);
}

#[test]
fn a_self_linked_snapshot_is_corrupt_state() {
    let mut st = MemStorage::default();
    // Snapshot 1 claims to be its own predecessor: a walk back would loop.
    st.map
        .insert(snapshot_key(1), record(1, "u", 5, Some(mark(5, 1)), &[]));
    let reason = corrupt(TableLog::default().find_user_snapshot(&mut st, "u", 3));
    assert_eq!(
        defect(reason),
        Defect::LinkDoesNotGoBack {
            previous: 1,
            previous_checkpoint: 5,
            snapshot: 1,
            checkpoint: 5
        }
    );
}

#[test]
fn a_cycle_of_links_is_corrupt_state() {
    let mut st = MemStorage::default();
    // 2 -> 1 is fine, but 1 points forward to 2.
    st.map
        .insert(snapshot_key(1), record(1, "u", 4, Some(mark(6, 2)), &[]));
    st.map
        .insert(snapshot_key(2), record(2, "u", 6, Some(mark(4, 1)), &[]));
    let reason = corrupt(TableLog::default().find_user_snapshot(&mut st, "u", 3));
    assert!(
        matches!(defect(reason), Defect::LinkDoesNotGoBack { .. }),
        "a cycle"
    );
}

#[test]
fn a_mark_at_a_missing_or_foreign_snapshot_is_corrupt_state() {
    let mut st = MemStorage::default();
    // Snapshot 3's link names snapshot 2, which is missing (1 and 3 exist).
    st.map.insert(snapshot_key(1), record(1, "v", 1, None, &[]));
    st.map.insert(
        snapshot_key(3),
        record(3, "u", 9, Some(mark(7, 2)), &[("v", mark(1, 1))]),
    );
    st.map.insert(LATEST_HINT.into(), b"3".to_vec());
    let reason = corrupt(TableLog::default().find_user_snapshot(&mut st, "u", 5));
    assert_eq!(
        reason,
        ErrorReason::MarkedSnapshotMissing {
            user: "u".into(),
            snapshot: 2
        }
    );
    // The link names v's snapshot 1 as u's.
    st.map.insert(
        snapshot_key(3),
        record(3, "u", 9, Some(mark(7, 1)), &[("v", mark(1, 1))]),
    );
    let reason = corrupt(TableLog::default().find_user_snapshot(&mut st, "u", 5));
    assert_eq!(
        reason,
        ErrorReason::MarkedSnapshotOtherCommit {
            user: "u".into(),
            snapshot: 1,
            checkpoint: 7
        }
    );
    // The text is the contract.
    assert_eq!(
        reason.to_string(),
        "commit user \"u\" is marked at snapshot 1 for checkpoint 7, which holds another commit"
    );
}

#[test]
fn a_snapshot_that_does_not_mark_itself_or_marks_the_future_is_corrupt_state() {
    let mut own = BTreeMap::new();
    own.insert("u".to_string(), mark(4, 1));
    let bytes = encode_snapshot(&StoredSnapshot {
        snapshot: Snapshot {
            id: 1,
            commit_user: "u".into(),
            identifier: 5,
            watermark: None,
            time_ms: 0,
            committables: alloc::vec![],
        },
        previous_of_user: None,
        users: own,
    });
    let e = decode_snapshot(&snapshot_key(1), &bytes).unwrap_err();
    assert_eq!(
        defect(e.into_reason()),
        Defect::NoOwnMark {
            user: "u".into(),
            checkpoint: 5
        }
    );
    let bytes = record(1, "u", 5, None, &[("v", mark(1, 7))]);
    let e = decode_snapshot(&snapshot_key(1), &bytes).unwrap_err();
    assert_eq!(
        defect(e.into_reason()),
        Defect::MarkOutsideSnapshots {
            user: "v".into(),
            snapshot: 7,
            latest: 1
        }
    );
}

#[test]
fn commit_users_are_bounded_in_a_record_and_in_a_commit() {
    // A record listing more than MAX_TABLE_USERS_BYTES of commit users.
    // Names of 1 MiB: 16 of them (with their marks) pass 16 MiB.
    let name = "x".repeat(1 << 20);
    let many: Vec<(String, UserMark)> = (0..20)
        .map(|i| (format!("{i:03}{name}"), mark(1, 1)))
        .collect();
    let refs: Vec<(&str, UserMark)> = many.iter().map(|(u, m)| (u.as_str(), *m)).collect();
    let bytes = record(1, "u", 1, None, &refs);
    let e = decode_snapshot(&snapshot_key(1), &bytes).unwrap_err();
    assert!(
        matches!(
            e.reason(),
            ErrorReason::TableRecord {
                defect: Defect::UsersTooLarge { .. },
                ..
            }
        ),
        "{e}"
    );
    // A new commit user that would take the table past the bound is refused.
    let mut env = MemEnv::default();
    let mut log = TableLog::default();
    for i in 0..15 {
        commit(&mut log, &mut env, &format!("{i:03}{name}"), 1);
    }
    let e = log
        .commit(&mut env.as_env(), &format!("999{name}"), 1, None, &[])
        .unwrap_err();
    assert_eq!(e.kind, crate::error::ErrorKind::InvalidConfig, "{e}");
    assert!(
        matches!(
            e.reason(),
            ErrorReason::TooManyCommitUsers { users: 16, .. }
        ),
        "{e}"
    );
}

#[test]
fn exhausted_snapshot_ids_are_fatal_not_storage() {
    let mut env = MemEnv::default();
    env.storage
        .map
        .insert(snapshot_key(u64::MAX), record(u64::MAX, "v", 1, None, &[]));
    env.storage
        .map
        .insert(LATEST_HINT.into(), u64::MAX.to_string().into_bytes());
    let e = TableLog::default()
        .commit(&mut env.as_env(), "u", 1, None, &[])
        .unwrap_err();
    assert_eq!(e.kind, crate::error::ErrorKind::CorruptState, "{e}");
    assert_eq!(
        e.reason(),
        &ErrorReason::SnapshotIdsExhausted {
            checkpoint: 1,
            latest: u64::MAX
        }
    );
}

/// What `sinkcoord expire` does (docs/retention.md): the expiry mark in
/// snapshot 1's key first, then in every expired key in ascending order.
fn expire_below(st: &mut MemStorage, earliest: u64) {
    for id in 1..earliest {
        st.map.insert(snapshot_key(id), expiry_mark(earliest));
    }
}

#[test]
fn a_walk_into_expired_snapshots_ends_with_none() {
    let (mut env, mut log) = committed(5);
    commit(&mut log, &mut env, "v", 1);
    expire_below(&mut env.storage, 4);
    let mut fresh = TableLog::default();
    // u's chain is 5 -> 4 -> 3: snapshot 3 is below the hint, so no snapshot
    // of u with identifier 2 exists any more (SEMANTICS 5.4: no tag).
    assert_eq!(
        fresh.find_user_snapshot(&mut env.storage, "u", 2).unwrap(),
        None
    );
    assert_eq!(
        fresh.find_user_snapshot(&mut env.storage, "u", 4).unwrap(),
        Some(4)
    );
    // A link at or above the earliest kept that names a missing snapshot is
    // still damage: the same table expired below 3 only, with 4 then lost.
    let mut log = TableLog::default();
    let mut env = MemEnv::default();
    for i in 1..=5 {
        commit(&mut log, &mut env, "u", i);
    }
    log.write_hint(&mut env.storage).unwrap();
    expire_below(&mut env.storage, 3);
    env.storage.map.remove(&snapshot_key(4));
    let reason = corrupt(TableLog::default().find_user_snapshot(&mut env.storage, "u", 2));
    assert!(
        matches!(
            reason,
            ErrorReason::MarkedSnapshotMissing { snapshot: 4, .. }
        ),
        "{reason}"
    );
}

#[test]
fn a_hint_naming_an_expired_snapshot_starts_the_probe_at_the_earliest() {
    let mut env = MemEnv::default();
    let mut log = TableLog::default();
    commit(&mut log, &mut env, "u", 1);
    log.write_hint(&mut env.storage).unwrap();
    for i in 2..=6 {
        commit(&mut log, &mut env, "u", i);
    }
    // The hint still names snapshot 1 (a committer that stopped writing it),
    // and an expiry kept 4..=6; a hint that is gone reads the same way.
    expire_below(&mut env.storage, 4);
    let mut fresh = TableLog::default();
    // Had snapshot 1's key been deleted, this probe would have found nothing
    // there and the commit created snapshot 1 again: u's checkpoint 6 would
    // have been committed twice and the table forked.
    assert_eq!(commit(&mut fresh, &mut env, "u", 6), Written::Skipped);
    assert_eq!(commit(&mut fresh, &mut env, "u", 7), Written::Created(7));
    let first = &env.storage.map[&snapshot_key(1)];
    assert_eq!(
        decode_expiry_mark(first),
        Some(4),
        "snapshot 1's key keeps the mark"
    );
    let ids: Vec<u64> = list_snapshots(&mut env.storage)
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, [4, 5, 6, 7]);
    assert_eq!(latest_snapshot(&mut env.storage).unwrap().unwrap().id, 7);
}

#[test]
fn an_earliest_hint_that_keeps_moving_is_a_retryable_storage_error() {
    let (mut env, _) = committed(3);
    env.storage.map.insert(LATEST_HINT.into(), b"1".to_vec());
    // The hint says 3 but 3 is gone too: a second expiry moved on.
    expire_below(&mut env.storage, 4);
    env.storage.map.insert(snapshot_key(1), expiry_mark(3));
    env.storage.map.remove(&snapshot_key(3));
    let e = TableLog::default().load(&mut env.storage).unwrap_err();
    assert_eq!(e.kind, crate::error::ErrorKind::Storage, "{e}");
    assert!(
        matches!(
            e.reason(),
            ErrorReason::ExpiredSnapshotKeepsMoving { .. } | ErrorReason::EarliestKeepsMoving
        ),
        "{e}"
    );
}

/// A storage that runs an expiry below `to` right after its `after`-th get.
struct ExpiresDuring {
    inner: MemStorage,
    gets: usize,
    after: usize,
    to: u64,
}

impl crate::env::Storage for ExpiresDuring {
    fn get(
        &mut self,
        key: &str,
    ) -> core::result::Result<Option<Vec<u8>>, crate::env::StorageError> {
        let v = self.inner.get(key);
        self.gets += 1;
        if self.gets == self.after {
            expire_below(&mut self.inner, self.to);
        }
        v
    }
    fn put_if_absent(
        &mut self,
        k: &str,
        v: &[u8],
    ) -> core::result::Result<bool, crate::env::StorageError> {
        self.inner.put_if_absent(k, v)
    }
    fn put(&mut self, k: &str, v: &[u8]) -> core::result::Result<(), crate::env::StorageError> {
        self.inner.put(k, v)
    }
    fn delete(&mut self, k: &str) -> core::result::Result<(), crate::env::StorageError> {
        self.inner.delete(k)
    }
    fn list(&mut self, p: &str) -> core::result::Result<Vec<String>, crate::env::StorageError> {
        self.inner.list(p)
    }
}

#[test]
fn a_listing_goes_on_past_an_expiry_that_runs_beside_it() {
    let (env, _) = committed(8);
    // Never expired: the snapshots, then one get past the end and one of snapshot 1.
    let mut st = ExpiresDuring {
        inner: env.storage.clone(),
        gets: 0,
        after: 0,
        to: 0,
    };
    assert_eq!(list_snapshots(&mut st).unwrap().len(), 8);
    assert_eq!(st.gets, 10);
    // 1..=3 read, then an expiry to 6 marks 1..=5: the listing does not end at 4.
    let mut st = ExpiresDuring {
        inner: env.storage.clone(),
        gets: 0,
        after: 3,
        to: 6,
    };
    let ids: Vec<u64> = list_snapshots(&mut st)
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, [1, 2, 3, 6, 7, 8]);
}

#[test]
fn an_expired_table_is_never_taken_for_an_empty_one() {
    let mut env = MemEnv::default();
    // A view read while the table was empty.
    let mut early = TableLog::default();
    early.load(&mut env.storage).unwrap();
    let mut log = TableLog::default();
    for i in 1..=6 {
        commit(&mut log, &mut env, "u", i);
    }
    expire_below(&mut env.storage, 4);
    // Its create of snapshot 1 conflicts with the expiry mark, and it reads on
    // from the earliest snapshot kept.
    assert_eq!(commit(&mut early, &mut env, "w", 1), Written::Created(7));
    // No latest hint at all (deleted by hand): the probe reads the mark.
    env.storage.map.remove(LATEST_HINT);
    let mut fresh = TableLog::default();
    assert_eq!(commit(&mut fresh, &mut env, "u", 6), Written::Skipped);
    assert_eq!(commit(&mut fresh, &mut env, "u", 7), Written::Created(8));
}

#[test]
fn a_match_reached_through_a_link_is_read_first() {
    let (mut env, _) = committed(5);
    expire_below(&mut env.storage, 4);
    // u's chain 5 -> 4 -> 3: the link names snapshot 3 with identifier 3, which
    // an expiry removed: no snapshot (a tag there would dangle).
    assert_eq!(
        TableLog::default()
            .find_user_snapshot(&mut env.storage, "u", 3)
            .unwrap(),
        None
    );
    assert_eq!(
        TableLog::default()
            .find_user_snapshot(&mut env.storage, "u", 4)
            .unwrap(),
        Some(4)
    );
}

#[test]
fn a_probe_from_a_snapshot_left_below_the_marks_jumps_over_them() {
    let (mut env, _) = committed(6);
    // An expiry to 5 that marked 1 and 3..=4 but not yet 2, and a stale hint
    // naming 2: the probe reads 2, then 3's mark, and goes on at 5.
    let two = env.storage.map[&snapshot_key(2)].clone();
    expire_below(&mut env.storage, 5);
    env.storage.map.insert(snapshot_key(2), two);
    env.storage.map.insert(LATEST_HINT.into(), b"2".to_vec());
    let mut fresh = TableLog::default();
    assert_eq!(commit(&mut fresh, &mut env, "u", 6), Written::Skipped);
    assert_eq!(commit(&mut fresh, &mut env, "u", 7), Written::Created(7));
}
