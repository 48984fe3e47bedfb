//! The contract of [`TableFormat`], as a test any format runs: the native
//! log below, and each format added beside it.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::format::{SnapshotRecord, TableFormat, TagRecord, UserMark};
use super::native::NativeLog;
use crate::env::{MemStorage, Storage, StorageError};
use crate::error::{ErrorKind, ErrorReason};

/// A storage that records the calls made through it.
#[derive(Default)]
pub(super) struct Calls {
    pub(super) inner: MemStorage,
    log: Vec<String>,
}

impl Calls {
    pub(super) fn take(&mut self) -> Vec<String> {
        core::mem::take(&mut self.log)
    }
}

impl Storage for Calls {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.log.push(alloc::format!("get {key}"));
        self.inner.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.log.push(alloc::format!("create {key}"));
        self.inner.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.log.push(alloc::format!("put {key}"));
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.log.push(alloc::format!("delete {key}"));
        self.inner.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.log.push(alloc::format!("list {prefix}"));
        self.inner.list(prefix)
    }
}

pub(super) fn mark(identifier: u64, snapshot_id: u64) -> UserMark {
    UserMark {
        identifier,
        snapshot_id,
    }
}

/// Creates user `job`'s snapshot `id` for checkpoint `id` (its previous
/// commit is snapshot `id - 1`, the only user) holding `committables`, at
/// time `id`; whether it was created.
pub(super) fn create_job_snapshot<F: TableFormat>(
    f: &mut F,
    st: &mut dyn Storage,
    id: u64,
    committables: &[(u32, &[u8])],
) -> bool {
    let users = [("job", mark(id, id))];
    let record = SnapshotRecord {
        id,
        commit_user: "job",
        identifier: id,
        watermark: None,
        time_ms: id,
        committables,
        previous_of_user: (id > 1).then(|| mark(id - 1, id - 1)),
        users: &users,
    };
    f.create_snapshot(st, &record).unwrap()
}

/// What the contract needs to know of a format beyond [`TableFormat`]: where
/// a format legitimately differs from the native log, it says so here.
pub(super) trait ContractFormat: TableFormat + Default {
    /// Makes the empty table the format writes into (a Paimon table has a
    /// schema, created by whoever created the table) and loads what the
    /// format reads once per instance, so the counted creates are the steady
    /// state's.
    fn prepare(&mut self, st: &mut dyn Storage) {
        let _ = st;
    }

    /// The `i`-th committable of a commit: any bytes for the native log,
    /// the format's committable encoding for a format that interprets them.
    fn committable(i: u32) -> Vec<u8> {
        alloc::vec![b'a' + i as u8; i as usize + 1]
    }

    /// Whether the log's read of a stored snapshot gives its committables
    /// (a Paimon table keeps them in manifests, which the log never reads).
    const COMMITTABLES_READ_BACK: bool = true;

    /// Calls the create of snapshot 1 makes beyond the others' (a format that
    /// must ask whether snapshot 1 was expired).
    const FIRST_CREATE_EXTRA_CALLS: usize = 0;

    /// A table expired below `earliest` (docs/retention.md): the earliest
    /// snapshot kept recorded in the format's place, the snapshots below it gone
    /// (the native log: snapshot 1's mark, the later marks already deleted).
    fn expire_below(st: &mut MemStorage, earliest: u64) {
        st.map.insert(
            super::native::snapshot_key(1),
            super::native::expiry_mark(earliest),
        );
        for id in 2..earliest {
            st.map.remove(&super::native::snapshot_key(id));
        }
    }

    /// Snapshot `id` as the read-only `table` functions see it: whatever the
    /// log's read gives, every format gives the committables here.
    fn read_back(&mut self, st: &mut dyn Storage, id: u64) -> Option<crate::types::Snapshot> {
        self.read_snapshot(st, id).unwrap().map(|s| s.snapshot)
    }
}

impl ContractFormat for NativeLog {}

/// Runs the contract on a fresh table of format `F`. `calls_per_create` is
/// how many storage calls one snapshot create makes (the format's constant:
/// it must not depend on the history).
pub(super) fn check_format<F: ContractFormat>(calls_per_create: usize) {
    let mut st = Calls::default();
    let mut f = F::default();
    f.prepare(&mut st);
    assert_eq!(f.read_hint(&mut st).unwrap(), 0, "no hint reads as 0");
    assert!(f.read_snapshot(&mut st, 1).unwrap().is_none());
    st.take();

    let (c0, c1) = (F::committable(0), F::committable(1));
    let committables: [(u32, &[u8]); 2] = [(0, &c0), (3, &c1)];
    for id in 1..=20u64 {
        let users = [("u", mark(id, id)), ("v", mark(1, 1))];
        let users = if id == 1 { &users[..1] } else { &users[..] };
        let record = SnapshotRecord {
            id,
            commit_user: "u",
            identifier: id,
            watermark: Some(-5),
            time_ms: 1000 + id,
            committables: &committables,
            previous_of_user: (id > 1).then(|| mark(id - 1, id - 1)),
            users,
        };
        assert!(f.create_snapshot(&mut st, &record).unwrap(), "created {id}");
        let calls = st.take();
        let extra = if id == 1 {
            F::FIRST_CREATE_EXTRA_CALLS
        } else {
            0
        };
        assert_eq!(
            calls.len(),
            calls_per_create + extra,
            "snapshot {id}: {calls:?}"
        );
        // The same id again: exists, nothing overwritten.
        assert!(!f.create_snapshot(&mut st, &record).unwrap());
        st.take();
    }

    let s = f.read_snapshot(&mut st, 20).unwrap().unwrap();
    assert_eq!(s.snapshot.id, 20);
    assert_eq!(s.snapshot.commit_user, "u");
    assert_eq!(s.snapshot.identifier, 20);
    assert_eq!(s.snapshot.watermark, Some(-5));
    assert_eq!(s.snapshot.time_ms, 1020);
    if F::COMMITTABLES_READ_BACK {
        assert_eq!(
            s.snapshot.committables,
            alloc::vec![(0, c0.clone()), (3, c1.clone())]
        );
    }
    let back = f.read_back(&mut st, 20).unwrap();
    assert_eq!(
        back.committables,
        alloc::vec![(0, c0.clone()), (3, c1.clone())]
    );
    assert_eq!(
        crate::types::Snapshot {
            committables: Vec::new(),
            ..back
        },
        crate::types::Snapshot {
            committables: Vec::new(),
            ..s.snapshot.clone()
        }
    );
    assert_eq!(s.previous_of_user, Some(mark(19, 19)));
    assert_eq!(s.users.get("u"), Some(&mark(20, 20)));
    assert_eq!(s.users.get("v"), Some(&mark(1, 1)));
    assert!(f.read_snapshot(&mut st, 21).unwrap().is_none());

    f.write_hint(&mut st, 20).unwrap();
    assert_eq!(f.read_hint(&mut st).unwrap(), 20);

    let tag = |name: &'static str, snapshot_id| TagRecord {
        name,
        snapshot_id,
        identifier: snapshot_id,
        commit_user: "u",
        create_time_ms: 7,
        expire_time_ms: Some(9),
    };
    assert!(f.create_tag(&mut st, &tag("savepoint-2", 2)).unwrap());
    assert!(!f.create_tag(&mut st, &tag("savepoint-2", 3)).unwrap());
    assert!(f.create_tag(&mut st, &tag("savepoint-10", 10)).unwrap());
    let t = f.read_tag(&mut st, "savepoint-2").unwrap().unwrap();
    assert_eq!((t.tag.snapshot_id, t.commit_user.as_str()), (2, "u"));
    assert_eq!((t.tag.create_time_ms, t.tag.expire_time_ms), (7, Some(9)));
    let names: Vec<String> = f
        .list_tags(&mut st)
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["savepoint-10", "savepoint-2"]);
    f.delete_tag(&mut st, "savepoint-2").unwrap();
    f.delete_tag(&mut st, "savepoint-2").unwrap();
    assert!(f.read_tag(&mut st, "savepoint-2").unwrap().is_none());

    // The earliest snapshot kept: 1 until an expiry ran, then its id; the
    // snapshots below it gone, those from it on as they were.
    assert_eq!(f.read_earliest(&mut st).unwrap(), 1, "no expiry reads as 1");
    F::expire_below(&mut st.inner, 15);
    assert_eq!(f.read_earliest(&mut st).unwrap(), 15);
    assert!(f.read_snapshot(&mut st, 14).unwrap().is_none());
    assert_eq!(
        f.read_snapshot(&mut st, 15).unwrap().unwrap().snapshot.id,
        15
    );
}

/// `e` is a fatal `corrupt-state` naming the record under `key` (what every format
/// returns for a record it cannot trust).
pub(crate) fn assert_corrupt_record(e: &crate::error::Error, key: &str) {
    assert_eq!(e.kind, ErrorKind::CorruptState);
    assert!(
        matches!(e.reason(), ErrorReason::TableRecord { key: k, .. } if k == key),
        "{e}"
    );
}

#[test]
fn the_native_log_keeps_the_contract() {
    check_format::<NativeLog>(1);
}

#[test]
fn native_records_that_cannot_be_trusted_are_corrupt_state() {
    let mut st = MemStorage::default();
    let mut f = NativeLog;
    st.map
        .insert(super::snapshot_key(4), b"\x01not postcard".to_vec());
    st.map.insert(super::tag_key("t"), b"\x09".to_vec());
    let e = f.read_snapshot(&mut st, 4).unwrap_err();
    assert_corrupt_record(&e, "snapshot/00000000000000000004");
    let e = f.read_tag(&mut st, "t").unwrap_err();
    assert_eq!(e.kind, ErrorKind::CorruptState);
    // A record stored under another snapshot's key.
    let record = SnapshotRecord {
        id: 5,
        commit_user: "u",
        identifier: 1,
        watermark: None,
        time_ms: 0,
        committables: &[],
        previous_of_user: None,
        users: &[("u", mark(1, 5))],
    };
    f.create_snapshot(&mut st, &record).unwrap();
    let bytes = st.map.remove(&super::snapshot_key(5)).unwrap();
    st.map.insert(super::snapshot_key(6), bytes);
    let e = f.read_snapshot(&mut st, 6).unwrap_err();
    assert_eq!(e.kind, ErrorKind::CorruptState);
    assert_eq!(
        e.reason(),
        &ErrorReason::RecordHoldsOtherSnapshot {
            key: super::snapshot_key(6),
            snapshot: 5
        }
    );
    assert_eq!(
        e.message(),
        "table record snapshot/00000000000000000006 holds snapshot 5"
    );
    // Hints are advisory: garbage reads as no hint.
    st.map
        .insert(super::LATEST_HINT.to_string(), b"not a number".to_vec());
    assert_eq!(f.read_hint(&mut st).unwrap(), 0);
}
