//! Tests of the Paimon format: the contract every format keeps, the committable check,
//! Paimon-written snapshots, and the constant calls per commit with merging.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use sink_coordinator_paimon::committable::{self, CommittableError, DataFile};
use sink_coordinator_paimon::manifest::MergeOptions;
use sink_coordinator_paimon::snapshot as psnap;
use sink_coordinator_paimon::{encode_schema, CreateTable, Datum};

use super::PaimonTable;
use crate::env::{MemStorage, Storage};
use crate::error::{Defect, ErrorKind, ErrorReason, PaimonDefect};
use crate::table::contract::{
    assert_corrupt_record, check_format, create_job_snapshot, mark, Calls, ContractFormat,
};
use crate::table::format::{SnapshotRecord, TableFormat, UserMark};

/// An unpartitioned table's schema-0.
pub(crate) fn schema_bytes(partitioned: bool) -> Vec<u8> {
    let t = CreateTable {
        columns: &[("id", "INT"), ("name", "STRING"), ("day", "STRING")],
        partition_keys: if partitioned { &["day"] } else { &[] },
        options: &[],
    };
    encode_schema(&t, 0).unwrap()
}

/// A data file's committable: `rows` rows in file `name`.
pub(crate) fn data_file(name: &str, rows: u64, partition: Vec<Datum>) -> Vec<u8> {
    committable::encode(&DataFile {
        file_name: name.to_string(),
        file_size: 100 + rows,
        row_count: rows,
        schema_id: 0,
        min_sequence_number: 0,
        max_sequence_number: 0,
        creation_time_millis: 0,
        partition,
        value_stats: Vec::new(),
    })
}

impl ContractFormat for PaimonTable {
    fn prepare(&mut self, st: &mut dyn Storage) {
        assert!(st
            .put_if_absent(super::FIRST_SCHEMA_KEY, &schema_bytes(false))
            .unwrap());
        self.schema(st).unwrap();
    }

    fn committable(i: u32) -> Vec<u8> {
        let name = alloc::format!("data-{i}.parquet");
        data_file(&name, u64::from(i) + 1, Vec::new())
    }

    fn expire_below(st: &mut MemStorage, earliest: u64) {
        st.map.insert(
            psnap::EARLIEST_KEY.to_string(),
            psnap::hint_bytes(earliest as i64),
        );
        for id in 1..earliest {
            st.map.remove(&psnap::snapshot_key(id as i64));
        }
    }

    /// Paimon keeps a snapshot's data files in its manifests, which the log never
    /// reads: a read of them would cost two gets per snapshot the log probes.
    const COMMITTABLES_READ_BACK: bool = false;

    /// `EARLIEST`: a Paimon table keeps no mark in an expired snapshot 1's key.
    const FIRST_CREATE_EXTRA_CALLS: usize = 1;

    fn read_back(&mut self, st: &mut dyn Storage, id: u64) -> Option<crate::types::Snapshot> {
        PaimonTable::read_back(self, st, id).unwrap()
    }
}

/// Four calls per create whatever the history: the manifest, the base and delta lists
/// (puts), and the snapshot (put-if-absent); the previous lists come from the cache.
#[test]
fn the_paimon_format_keeps_the_contract() {
    check_format::<PaimonTable>(4);
}

fn table(partitioned: bool) -> (MemStorage, PaimonTable) {
    let mut st = MemStorage::default();
    st.put(super::FIRST_SCHEMA_KEY, &schema_bytes(partitioned))
        .unwrap();
    (st, PaimonTable::default())
}

#[test]
fn bad_committables_are_invalid_events() {
    let (mut st, mut f) = table(true);
    let ok = data_file("f.parquet", 3, alloc::vec![Datum::Str("d1".into())]);
    f.check_committable(&mut st, &ok).unwrap();
    let wrong_schema = committable::encode(&DataFile {
        schema_id: 1,
        ..committable::decode_unchecked(&ok).unwrap()
    });
    let cases: [(&[u8], CommittableError); 5] = [
        (b"garbage", CommittableError::BadMagic),
        (
            &data_file("../x", 1, alloc::vec![Datum::Str("d".into())]),
            CommittableError::BadFileName,
        ),
        (
            &wrong_schema,
            CommittableError::SchemaIdMismatch {
                expected: 0,
                found: 1,
            },
        ),
        (
            &data_file("f", 1, Vec::new()),
            CommittableError::PartitionArity {
                expected: 1,
                found: 0,
            },
        ),
        (
            &data_file("f", 1, alloc::vec![Datum::Int(3)]),
            CommittableError::PartitionType { index: 0 },
        ),
    ];
    for (bytes, why) in cases {
        let e = f.check_committable(&mut st, bytes).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidEvent);
        assert_eq!(e.reason(), &ErrorReason::PaimonCommittable(why));
    }
    // The text is the contract.
    let e = f.check_committable(&mut st, &wrong_schema).unwrap_err();
    assert_eq!(
        e.message(),
        "its file was written with schema 1, the table's schema is 0"
    );
    // No table: the schema is missing.
    let e = PaimonTable::default()
        .check_committable(&mut MemStorage::default(), &ok)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidConfig, "{e}");
    assert!(
        matches!(e.reason(), ErrorReason::NoPaimonSchema { .. }),
        "{e}"
    );
}

fn commit(st: &mut dyn Storage, f: &mut PaimonTable, id: u64, user: &str, files: &[Vec<u8>]) {
    let committables: Vec<(u32, &[u8])> = files.iter().map(|c| (0, c.as_slice())).collect();
    let prev = f.read_snapshot(st, id - 1).ok().flatten();
    let mut users: Vec<(String, UserMark)> = prev
        .as_ref()
        .map(|p| p.users.iter().map(|(u, m)| (u.clone(), *m)).collect())
        .unwrap_or_default();
    let previous_of_user = users.iter().find(|(u, _)| u == user).map(|(_, m)| *m);
    users.retain(|(u, _)| u != user);
    users.push((user.to_string(), mark(id, id)));
    users.sort_by(|a, b| a.0.cmp(&b.0));
    let users: Vec<(&str, UserMark)> = users.iter().map(|(u, m)| (u.as_str(), *m)).collect();
    let record = SnapshotRecord {
        id,
        commit_user: user,
        identifier: id,
        watermark: None,
        time_ms: id,
        committables: &committables,
        previous_of_user,
        users: &users,
    };
    assert!(f.create_snapshot(st, &record).unwrap());
}

/// A snapshot Paimon wrote (no marks): its user's mark is its own, the others' come
/// from the snapshot before it (the cache when probing forward, else a walk back).
#[test]
fn paimon_written_snapshots_are_understood() {
    let (mut st, mut f) = table(false);
    commit(&mut st, &mut f, 1, "job", &[data_file("a", 1, Vec::new())]);
    // pypaimon's batch commit as user "py": a copy of ours without the properties.
    let ours = psnap::decode_snapshot(&st.get(&psnap::snapshot_key(1)).unwrap().unwrap()).unwrap();
    for id in 2..=3 {
        let foreign = psnap::Snapshot {
            id,
            commit_user: "py".into(),
            commit_identifier: psnap::END_OF_INPUT,
            properties: None,
            ..ours.clone()
        };
        st.put(&psnap::snapshot_key(id), &foreign.encode()).unwrap();
    }
    for fresh in [false, true] {
        let mut g = if fresh {
            PaimonTable::default()
        } else {
            f.clone()
        };
        let s = g.read_snapshot(&mut st, 3).unwrap().unwrap();
        assert_eq!(s.users.get("job"), Some(&mark(1, 1)), "fresh {fresh}");
        assert_eq!(s.users.get("py"), Some(&mark(crate::END, 3)));
        assert_eq!(s.previous_of_user, Some(mark(crate::END, 2)));
        assert_eq!(s.snapshot.identifier, crate::END);
    }
    // The next commit of ours lists both users and reads the lists it needs.
    let s3 = f.read_snapshot(&mut st, 3).unwrap().unwrap();
    assert_eq!(s3.users.len(), 2);
}

/// With a small merge bound the base list stays bounded and a commit's calls stay
/// constant (merging adds the gets of the merged manifests and one put).
#[test]
fn calls_per_commit_stay_constant_with_merging() {
    let mut st = Calls::default();
    st.put(super::FIRST_SCHEMA_KEY, &schema_bytes(false))
        .unwrap();
    let mut f = PaimonTable::default();
    f.set_merge_options(MergeOptions {
        max_manifests: 6,
        ..MergeOptions::default()
    });
    f.schema(&mut st).unwrap();
    let mut most = 0;
    let mut plain = None;
    for id in 1..=40u64 {
        let file = data_file(&alloc::format!("f-{id}"), id, Vec::new());
        // Through the log's order: the read of the previous snapshot is the log's
        // (counted apart), then the create.
        if id > 1 {
            f.read_snapshot(&mut st, id - 1).unwrap();
        }
        st.take();
        commit_counted(&mut st, &mut f, id, &file);
        let calls = st.take();
        most = most.max(calls.len());
        if calls.len() == 4 {
            plain = Some(calls);
        }
    }
    let plain = plain.unwrap();
    assert!(plain[0].starts_with("put manifest/manifest-"), "{plain:?}");
    assert!(
        plain[3].starts_with("create snapshot/snapshot-"),
        "{plain:?}"
    );
    // A merge reads at most max_manifests + 1 manifests and writes one.
    assert!(most <= 4 + 7 + 1, "{most}");
    let last = psnap::decode_snapshot(&st.get(&psnap::snapshot_key(40)).unwrap().unwrap()).unwrap();
    let base = sink_coordinator_paimon::manifest::decode_manifest_list(
        &st.get(&psnap::manifest_key(&last.base_manifest_list))
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert!(base.len() <= 7, "{}", base.len());
    assert_eq!(last.total_record_count, Some((1..=40).sum()));
}

fn commit_counted(st: &mut Calls, f: &mut PaimonTable, id: u64, file: &[u8]) {
    assert!(create_job_snapshot(f, st, id, &[(0, file)]));
}

#[test]
fn damaged_records_are_corrupt_state() {
    let (mut st, mut f) = table(false);
    st.put(&psnap::snapshot_key(1), b"{not json").unwrap();
    let e = f.read_snapshot(&mut st, 1).unwrap_err();
    assert_corrupt_record(&e, "snapshot/snapshot-1");
    st.put("tag/tag-t", b"[]").unwrap();
    assert_eq!(
        f.read_tag(&mut st, "t").unwrap_err().kind,
        ErrorKind::CorruptState
    );
    // A hint is advisory; without one the listing decides.
    st.put(psnap::LATEST_KEY, b"nope").unwrap();
    assert_eq!(f.read_hint(&mut st).unwrap(), 1);
}

/// A committable with every kind of content a file can carry.
fn rich_file(name: &str, day: Datum, stats: Vec<committable::ColumnStats>) -> Vec<u8> {
    committable::encode(&DataFile {
        file_name: name.to_string(),
        file_size: 1 << 40,
        row_count: 12345,
        schema_id: 0,
        min_sequence_number: -7,
        max_sequence_number: i64::MAX,
        creation_time_millis: 1_700_000_000_123,
        partition: alloc::vec![day],
        value_stats: stats,
    })
}

fn col(name: &str, min: Datum, max: Datum, nulls: Option<i64>) -> committable::ColumnStats {
    committable::ColumnStats {
        column: name.to_string(),
        min,
        max,
        null_count: nulls,
    }
}

/// The read-only functions give each snapshot's committables back byte for byte, with
/// their subtasks, in commit order (the contract test above counts the commit's calls:
/// recording the subtasks costs none).
#[test]
fn committables_read_back_exactly() {
    let (mut st, mut f) = table(true);
    let files = [
        (
            0,
            rich_file("data-1.parquet", Datum::Str("d1".into()), Vec::new()),
        ),
        (
            0,
            rich_file(
                "data-2.parquet",
                Datum::Null,
                alloc::vec![
                    col("id", Datum::Null, Datum::Int(i32::MAX), None),
                    col(
                        "name",
                        Datum::Str("a".repeat(40)),
                        Datum::Str("é".into()),
                        Some(3)
                    ),
                ],
            ),
        ),
        (
            2,
            rich_file(
                "data-3.parquet",
                Datum::Str("a long partition value".into()),
                alloc::vec![col("day", Datum::Null, Datum::Null, Some(0))],
            ),
        ),
        (
            7,
            data_file("data-4.parquet", 0, alloc::vec![Datum::Str(String::new())]),
        ),
    ];
    let committables: Vec<(u32, &[u8])> = files.iter().map(|(s, c)| (*s, c.as_slice())).collect();
    for (id, c) in [
        (1u64, &committables[..]),
        (2, &[][..]),
        (3, &committables[1..2]),
    ] {
        let users = [("job", mark(id, id))];
        let record = SnapshotRecord {
            id,
            commit_user: "job",
            identifier: id,
            watermark: Some(5),
            time_ms: 10,
            committables: c,
            previous_of_user: (id > 1).then(|| mark(id - 1, id - 1)),
            users: &users,
        };
        assert!(f.create_snapshot(&mut st, &record).unwrap());
    }
    let want = |c: &[(u32, &[u8])]| -> Vec<(u32, Vec<u8>)> {
        c.iter().map(|(s, b)| (*s, b.to_vec())).collect()
    };
    let all = crate::table::list_snapshots(&mut st).unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].committables, want(&committables));
    assert!(all[1].committables.is_empty());
    assert_eq!(all[2].committables, want(&committables[1..2]));
    let one = crate::table::snapshot_by_id(&mut st, 1).unwrap().unwrap();
    assert_eq!(one, all[0]);
    // No hint was written: the latest is found by listing `snapshot/`.
    assert_eq!(
        crate::table::latest_snapshot(&mut st).unwrap().as_ref(),
        Some(&all[2])
    );
    let raw = psnap::decode_snapshot(&st.get(&psnap::snapshot_key(1)).unwrap().unwrap()).unwrap();
    assert_eq!(
        raw.properties
            .unwrap()
            .get("sinkcoord.subtasks")
            .map(String::as_str),
        Some("0:2,2:1,7:1")
    );

    // A snapshot Paimon wrote (no properties): every file reads back as subtask 0.
    let foreign = psnap::Snapshot {
        id: 4,
        commit_user: "py".into(),
        properties: None,
        ..psnap::decode_snapshot(&st.get(&psnap::snapshot_key(1)).unwrap().unwrap()).unwrap()
    };
    st.put(&psnap::snapshot_key(4), &foreign.encode()).unwrap();
    let s4 = crate::table::snapshot_by_id(&mut st, 4).unwrap().unwrap();
    let zeros: Vec<(u32, Vec<u8>)> = files.iter().map(|(_, c)| (0, c.clone())).collect();
    assert_eq!(s4.committables, zeros);

    // Subtasks that do not match the files are a damaged snapshot.
    let mut bad = raw_snapshot(&mut st, 3);
    bad.properties
        .as_mut()
        .unwrap()
        .insert("sinkcoord.subtasks".into(), "0:2".into());
    st.put(&psnap::snapshot_key(3), &bad.encode()).unwrap();
    let e = crate::table::snapshot_by_id(&mut st, 3).unwrap_err();
    assert_eq!(e.kind, ErrorKind::CorruptState);
    assert_eq!(
        e.reason(),
        &ErrorReason::TableRecord {
            key: psnap::snapshot_key(3),
            defect: Defect::Paimon(PaimonDefect::SubtasksCount { files: 1, runs: 2 }),
        },
        "{e}"
    );
}

fn raw_snapshot(st: &mut MemStorage, id: i64) -> psnap::Snapshot {
    psnap::decode_snapshot(&st.get(&psnap::snapshot_key(id)).unwrap().unwrap()).unwrap()
}

/// A deterministic generator for the round trip below (splitmix64).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn text(&mut self) -> String {
        let n = self.below(20) as usize;
        (0..n)
            .map(|_| ['a', 'é', '0', ' ', '/', '\u{1F600}'][self.below(6) as usize])
            .collect()
    }
    /// A value of column type `ty` (or null one time in four).
    fn datum(&mut self, ty: &str) -> Datum {
        if self.below(4) == 0 {
            return Datum::Null;
        }
        let v = self.next();
        match ty {
            "BOOLEAN" => Datum::Bool(v & 1 == 1),
            "TINYINT" => Datum::Int(i32::from(v as i8)),
            "SMALLINT" => Datum::Int(i32::from(v as i16)),
            "INT" | "DATE" => Datum::Int(v as i32),
            "BIGINT" => Datum::Long(v as i64),
            _ => Datum::Str(self.text()),
        }
    }
}

/// Any committable a table accepts, committed from any subtasks, reads back as exactly
/// the committed bytes (every column type a partition or stats value can have, nulls,
/// long and short strings, extreme numbers, unknown null counts).
#[test]
fn any_accepted_committable_reads_back_as_its_bytes() {
    const COLUMNS: [(&str, &str); 10] = [
        ("b", "BOOLEAN"),
        ("t", "TINYINT"),
        ("s", "SMALLINT"),
        ("i", "INT"),
        ("l", "BIGINT"),
        ("d", "DATE"),
        ("str", "VARCHAR(30)"),
        ("x", "DOUBLE"),
        ("p1", "STRING"),
        ("p2", "INT"),
    ];
    let schema = encode_schema(
        &CreateTable {
            columns: &COLUMNS,
            partition_keys: &["p1", "p2"],
            options: &[],
        },
        0,
    )
    .unwrap();
    let mut st = MemStorage::default();
    st.put(super::FIRST_SCHEMA_KEY, &schema).unwrap();
    let mut f = PaimonTable::default();
    let mut g = Gen(22);
    for id in 1..=60u64 {
        let mut committed: Vec<(u32, Vec<u8>)> = Vec::new();
        for n in 0..g.below(5) {
            let mut stats = Vec::new();
            for (name, ty) in COLUMNS {
                if ty != "DOUBLE" && g.below(2) == 0 {
                    let nulls = match g.below(3) {
                        0 => None,
                        1 => Some(0),
                        _ => Some((g.next() >> 1) as i64),
                    };
                    stats.push(col(name, g.datum(ty), g.datum(ty), nulls));
                }
            }
            // Stats columns in any order.
            let k = stats.len();
            for i in (1..k).rev() {
                stats.swap(i, g.below(i as u64 + 1) as usize);
            }
            let file = DataFile {
                file_name: alloc::format!("data-{id}-{n}-{}.parquet", g.text().replace('/', "_")),
                file_size: g.next() >> 1,
                row_count: g.next() >> 1,
                schema_id: 0,
                min_sequence_number: g.next() as i64,
                max_sequence_number: g.next() as i64,
                creation_time_millis: g.next() as i64,
                partition: alloc::vec![g.datum("STRING"), g.datum("INT")],
                value_stats: stats,
            };
            let bytes = committable::encode(&file);
            f.check_committable(&mut st, &bytes).unwrap();
            committed.push((g.below(4) as u32, bytes));
        }
        // The log hands committables over in subtask order.
        committed.sort_by_key(|(s, _)| *s);
        let refs: Vec<(u32, &[u8])> = committed.iter().map(|(s, c)| (*s, c.as_slice())).collect();
        assert!(create_job_snapshot(&mut f, &mut st, id, &refs));
        let back = crate::table::snapshot_by_id(&mut st, id).unwrap().unwrap();
        assert_eq!(back.committables, committed, "snapshot {id}");
    }
}

/// `EARLIEST` is written once, after snapshot 1, and only where it is absent: an
/// expiry that raised it before this instance's (delayed) hint write keeps it.
#[test]
fn earliest_is_never_set_back_by_a_late_hint_write() {
    let (mut st, mut f) = table(false);
    commit(&mut st, &mut f, 1, "job", &[data_file("a", 1, Vec::new())]);
    f.write_hint(&mut st, 1).unwrap();
    assert_eq!(st.map[psnap::EARLIEST_KEY], b"1");
    let (mut st, mut f) = table(false);
    commit(&mut st, &mut f, 1, "job", &[data_file("a", 1, Vec::new())]);
    // The first hint write failed; an expiry ran; the hint is written now.
    st.map
        .insert(psnap::EARLIEST_KEY.to_string(), psnap::hint_bytes(5));
    f.write_hint(&mut st, 1).unwrap();
    assert_eq!(st.map[psnap::EARLIEST_KEY], b"5");
    assert_eq!(f.read_earliest(&mut st).unwrap(), 5);
}

/// A Paimon table expired below 4 (as `sinkcoord expire` leaves it: `EARLIEST`, the
/// snapshot files below it deleted, none marked), read by the log.
#[test]
fn the_log_reads_an_expired_paimon_table() {
    use crate::env::MemEnv;
    use crate::table::{TableFormatKind, TableLog, Written};
    let mut env = MemEnv::default();
    env.storage
        .put(super::FIRST_SCHEMA_KEY, &schema_bytes(false))
        .unwrap();
    let log_of = || TableLog::with_format(TableFormatKind::Paimon).unwrap();
    let commit = |log: &mut TableLog, env: &mut MemEnv, user: &str, cp: u64| {
        let file = data_file(&alloc::format!("{user}-{cp}"), 1, Vec::new());
        log.commit(
            &mut crate::env::AsEnv::as_env(env),
            user,
            cp,
            None,
            &[(0, file.as_slice())],
        )
        .unwrap()
    };
    // A view read while the table was empty.
    let mut early = log_of();
    early.load(&mut env.storage).unwrap();
    let mut log = log_of();
    for cp in 1..=5 {
        assert_eq!(commit(&mut log, &mut env, "u", cp), Written::Created(cp));
        log.write_hint(&mut env.storage).unwrap();
    }
    env.storage
        .put(psnap::EARLIEST_KEY, &psnap::hint_bytes(4))
        .unwrap();
    for id in 1..=3 {
        env.storage.delete(&psnap::snapshot_key(id)).unwrap();
    }
    // Its create of snapshot 1 is refused (EARLIEST), and it reads on from 4.
    assert_eq!(commit(&mut early, &mut env, "w", 1), Written::Created(6));
    assert!(env.storage.get(&psnap::snapshot_key(1)).unwrap().is_none());
    // A walk back into the expired snapshots ends with no snapshot.
    assert_eq!(
        log_of()
            .find_user_snapshot(&mut env.storage, "u", 2)
            .unwrap(),
        None
    );
    assert_eq!(
        log_of()
            .find_user_snapshot(&mut env.storage, "u", 4)
            .unwrap(),
        Some(4)
    );
    // A LATEST hint below the gap, naming a snapshot the expiry had not deleted yet
    // (2, restored here), whose successor is gone: the read goes on from EARLIEST.
    let two = {
        let mut again = MemEnv::default();
        again
            .storage
            .put(super::FIRST_SCHEMA_KEY, &schema_bytes(false))
            .unwrap();
        let mut l = log_of();
        commit(&mut l, &mut again, "u", 1);
        commit(&mut l, &mut again, "u", 2);
        again.storage.map[&psnap::snapshot_key(2)].clone()
    };
    env.storage.map.insert(psnap::snapshot_key(2), two);
    env.storage
        .put(psnap::LATEST_KEY, &psnap::hint_bytes(2))
        .unwrap();
    let mut fresh = log_of();
    assert_eq!(commit(&mut fresh, &mut env, "u", 5), Written::Skipped);
    assert_eq!(commit(&mut fresh, &mut env, "u", 6), Written::Created(7));
}
