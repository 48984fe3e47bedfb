//! The core's Coordinator on a Paimon table (feature `paimon`): the job of
//! `paimon_job/scenario.rs` on a `MemStorage` and on a directory, read back through the
//! table functions (which detect the format) and the crate's decoders; the calls per
//! commit measured; bad committables refused when they arrive.
#![cfg(feature = "paimon")]

#[path = "paimon_job/scenario.rs"]
mod scenario;

use std::collections::BTreeMap;

use scenario::{job_env, DirStorage, Job};
use sink_coordinator::table::{self, TableFormatKind};
use sink_coordinator::{
    Config, Coordinator, Entry, ErrorKind, ErrorReason, Lifecycle, MemStorage, Storage, END,
};
use sink_coordinator_paimon::committable::{self, CommittableError, DataFile};
use sink_coordinator_paimon::manifest;
use sink_coordinator_paimon::snapshot as psnap;
use sink_coordinator_paimon::{encode_schema, CreateTable};

fn create_table(st: &mut dyn Storage) {
    let t = CreateTable {
        columns: &[("id", "BIGINT"), ("name", "STRING")],
        partition_keys: &[],
        options: &[("file.format", "parquet")],
    };
    assert!(st
        .put_if_absent("schema/schema-0", &encode_schema(&t, 0).unwrap())
        .unwrap());
}

fn file(s: u32, c: u64) -> Vec<u8> {
    let cp = if c == END {
        "end".to_string()
    } else {
        c.to_string()
    };
    committable::encode(&DataFile {
        file_name: format!("data-{s}-{cp}.parquet"),
        file_size: 1000 + u64::from(s),
        row_count: 10 + u64::from(s),
        schema_id: 0,
        min_sequence_number: 0,
        max_sequence_number: 9,
        creation_time_millis: 0,
        partition: Vec::new(),
        value_stats: Vec::new(),
    })
}

/// Every data file the table's latest snapshot reaches (base + delta lists), by name.
fn files_in(st: &mut dyn Storage) -> BTreeMap<String, usize> {
    let latest = psnap::parse_hint(&st.get(psnap::LATEST_KEY).unwrap().unwrap()).unwrap();
    let snap =
        psnap::decode_snapshot(&st.get(&psnap::snapshot_key(latest)).unwrap().unwrap()).unwrap();
    let mut out = BTreeMap::new();
    for list in [&snap.base_manifest_list, &snap.delta_manifest_list] {
        let bytes = st.get(&psnap::manifest_key(list)).unwrap().unwrap();
        for m in manifest::decode_manifest_list(&bytes).unwrap() {
            let bytes = st.get(&psnap::manifest_key(&m.file_name)).unwrap().unwrap();
            for e in manifest::decode_manifest(&bytes).unwrap() {
                *out.entry(e.file_name).or_insert(0) += 1;
            }
        }
    }
    out
}

/// A started coordinator of `parallelism` writers on a fresh Paimon table in
/// memory (the job's clock and fault switches).
fn started_job(parallelism: u32) -> (Coordinator, Job<MemStorage>) {
    let mut st = job_env(MemStorage::default());
    create_table(&mut st.storage.inner);
    let mut c = Coordinator::new(Config::new(parallelism, "job"), None);
    c.set_table_format(TableFormatKind::Paimon).unwrap();
    c.start(&mut st).unwrap();
    (c, st)
}

fn check_job<S: Storage>(st: &mut Job<S>) {
    create_table(&mut st.storage.inner);
    let r = scenario::run(st, &mut file);
    assert_eq!(r.committed, vec![1, 2, 3, 4, END]);
    assert_eq!(r.tags, vec!["savepoint-2".to_string()]);
    // Read back without configuration: the table functions detect Paimon.
    let snaps = table::list_snapshots(&mut st.storage.inner).unwrap();
    let ids: Vec<u64> = snaps.iter().map(|s| s.identifier).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, END]);
    assert!(snaps.iter().all(|s| s.commit_user == "job"));
    let latest = table::latest_snapshot(&mut st.storage.inner)
        .unwrap()
        .unwrap();
    assert_eq!(latest.identifier, END);
    let tags = table::list_tags(&mut st.storage.inner).unwrap();
    assert_eq!(tags.len(), 1);
    assert_eq!(
        (tags[0].name.as_str(), tags[0].snapshot_id),
        ("savepoint-2", 2)
    );
    // Each reported file exactly once in the table.
    let files = files_in(&mut st.storage.inner);
    assert_eq!(files.len(), r.reported.len(), "{files:?}");
    assert!(files.values().all(|n| *n == 1), "{files:?}");
    for (s, c, f) in &r.reported {
        let name = committable::decode_unchecked(f).unwrap().file_name;
        assert!(files.contains_key(&name), "{s} {c} {name}");
    }
    // Steady-state commit: manifest, base list, delta list, snapshot, LATEST, plus the
    // savepoint's tag at checkpoint 2 (its create: the tagged snapshot is the one just
    // created, cached); the first adds EARLIEST, read before snapshot 1 is created (an
    // expired table's snapshot 1 is missing, not free) and created after it.
    assert_eq!(r.calls_per_commit, vec![7, 6], "{:?}", r.calls_per_commit);
}

#[test]
fn a_job_on_a_paimon_table_in_memory() {
    check_job(&mut job_env(MemStorage::default()));
}

#[test]
fn a_job_on_a_paimon_table_in_a_directory() {
    let root = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("paimon-job");
    let _ = std::fs::remove_dir_all(&root);
    check_job(&mut job_env(DirStorage { root }));
}

/// Calls per commit over a long history: 5 (manifest, two lists, snapshot, LATEST),
/// except a commit that merges manifests (every ~30 commits at Paimon's default
/// `manifest.merge-min-count`), which adds the merged manifests' gets and one put.
#[test]
fn calls_per_commit_do_not_grow_with_history() {
    let (mut c, mut st) = started_job(2);
    let mut per_commit = Vec::new();
    for cp in 1..=200u64 {
        for s in 0..2 {
            let e = Entry {
                checkpoint: cp,
                committables: vec![file(s, cp)].into(),
                watermark: None,
                savepoint: false,
            };
            c.event(&mut st, s, 0, e).unwrap();
        }
        let before = st.storage.calls;
        c.checkpoint_complete(&mut st, cp).unwrap();
        per_commit.push(st.storage.calls - before);
    }
    let plain = per_commit[1..].iter().filter(|n| **n == 5).count();
    let most = per_commit.iter().max().copied().unwrap();
    println!(
        "calls per commit: first {}, {plain} of 199 later ones 5, most {most}",
        per_commit[0]
    );
    // The first also reads and creates EARLIEST.
    assert_eq!(per_commit[0], 7);
    assert!(plain >= 190, "{per_commit:?}");
    assert!(most <= 5 + 31 + 1, "{per_commit:?}");
    assert_eq!(files_in(&mut st.storage.inner).len(), 400);
}

/// A committable the table cannot take is a fatal `invalid-event` naming the subtask
/// and the checkpoint when it arrives, and nothing is written.
#[test]
fn bad_committables_are_refused_on_arrival() {
    let bad: [(Vec<u8>, CommittableError); 3] = [
        (b"not a committable".to_vec(), CommittableError::BadMagic),
        (
            committable::encode(&DataFile {
                file_name: "../../etc/x".into(),
                ..committable::decode_unchecked(&file(0, 1)).unwrap()
            }),
            CommittableError::BadFileName,
        ),
        (
            committable::encode(&DataFile {
                schema_id: 3,
                ..committable::decode_unchecked(&file(0, 1)).unwrap()
            }),
            CommittableError::SchemaIdMismatch {
                expected: 0,
                found: 3,
            },
        ),
    ];
    for (bytes, why) in bad {
        let (mut c, mut st) = started_job(2);
        let e = Entry {
            checkpoint: 7,
            committables: vec![file(1, 7), bytes].into(),
            watermark: None,
            savepoint: false,
        };
        let err = c.event(&mut st, 1, 0, e).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidEvent);
        let text = err.message();
        assert_eq!(
            err.into_reason(),
            ErrorReason::CommittableRejected {
                what: "event",
                subtask: 1,
                checkpoint: 7,
                index: 1,
                why: Box::new(ErrorReason::PaimonCommittable(why)),
            }
        );
        assert!(
            text.starts_with("event of subtask 1 for checkpoint 7: committable 1: "),
            "{text}"
        );
        assert_eq!(c.state(), Lifecycle::Failed);
        assert_eq!(
            st.storage.inner.map.keys().collect::<Vec<_>>(),
            vec!["schema/schema-0"]
        );
    }
}

#[test]
fn the_format_is_chosen_only_while_created() {
    let st = MemStorage::default();
    let mut c = Coordinator::new(Config::new(1, "job"), None);
    assert_eq!(c.table_format(), TableFormatKind::Native);
    c.start(&mut job_env(st)).unwrap();
    let e = c.set_table_format(TableFormatKind::Paimon).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalState);
}

/// A Paimon writer's commit under this coordinator's own commit user, landing between
/// an event and the checkpoint's completion (a running coordinator, its view cached):
/// the create of the next snapshot conflicts, the snapshot found there (no marks of
/// ours) is read as `job`'s mark for checkpoint 2, and the filter skips checkpoint 2.
/// The next checkpoint commits, linked back to the Paimon writer's snapshot.
/// (tests/paimon/test_paimon.py `test_pypaimon_same_commit_user` covers the restarts
/// with real pypaimon commits.)
#[test]
fn a_paimon_commit_of_our_user_landing_first_is_filtered() {
    let (mut c, mut st) = started_job(1);
    let entry = |cp: u64| Entry {
        checkpoint: cp,
        committables: vec![file(0, cp)].into(),
        watermark: None,
        savepoint: false,
    };
    c.event(&mut st, 0, 0, entry(1)).unwrap();
    assert_eq!(
        c.checkpoint_complete(&mut st, 1).unwrap().committed,
        vec![1]
    );
    c.event(&mut st, 0, 0, entry(2)).unwrap();
    // pypaimon's stream commit as "job", identifier 2: snapshot 1's JSON without the
    // properties (the same lists: readers see snapshot 1's files once).
    let ours = psnap::decode_snapshot(
        &st.storage
            .inner
            .get(&psnap::snapshot_key(1))
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    let foreign = psnap::Snapshot {
        id: 2,
        commit_identifier: 2,
        properties: None,
        ..ours
    };
    assert!(foreign.marks().unwrap().is_none());
    st.storage
        .inner
        .put(&psnap::snapshot_key(2), &foreign.encode())
        .unwrap();
    let out = c.checkpoint_complete(&mut st, 2).unwrap();
    assert_eq!(
        out.committed,
        Vec::<u64>::new(),
        "checkpoint 2 is committed already"
    );
    assert_eq!(st.storage.inner.get(&psnap::snapshot_key(3)).unwrap(), None);
    c.event(&mut st, 0, 0, entry(3)).unwrap();
    assert_eq!(
        c.checkpoint_complete(&mut st, 3).unwrap().committed,
        vec![3]
    );
    let s3 = psnap::decode_snapshot(
        &st.storage
            .inner
            .get(&psnap::snapshot_key(3))
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    let props = s3.properties.unwrap();
    assert_eq!(props["sinkcoord.user.job"], "3,3");
    assert_eq!(props["sinkcoord.previous"], "2");
    assert_eq!(props["sinkcoord.previous.identifier"], "2");
    // Snapshot 1's file and checkpoint 3's: 2's is not in the table.
    let files = files_in(&mut st.storage.inner);
    assert_eq!(
        files.keys().cloned().collect::<Vec<_>>(),
        vec![
            "data-0-1.parquet".to_string(),
            "data-0-3.parquet".to_string()
        ]
    );
    assert!(files.values().all(|n| *n == 1), "{files:?}");
}
