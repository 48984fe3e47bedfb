//! Issue 25, `sinkcoord expire`: snapshot retention on both table formats,
//! safe beside running coordinators (the concurrent-committer tests), tag
//! expiry, and the orphan data files of a Paimon table (docs/retention.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use sink_coordinator::table::{self, TableFormatKind};
use sink_coordinator::{
    Config, Coordinator, Entry, HostEnv, Lifecycle, RestorePoint, Shared, StepClock, Storage,
};
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_paimon::committable::{self, DataFile};
use sink_coordinator_paimon::schema::{encode_schema, CreateTable};
use sink_coordinator_paimon::snapshot as psnap;
use sink_coordinator_testkit::storage_hook::{BeforePut, FailTags};

mod common;
use common::job::{sinkcoord, Job};
use common::{json, path, strs, u64s, Scratch};

/// `sinkcoord expire DIR ARGS` (ARGS split at spaces).
fn run_expire(dir: &Path, args: &str) -> (Option<i32>, String, String) {
    let mut all = vec!["expire", path(dir)];
    all.extend(args.split_whitespace());
    sinkcoord(&all)
}

/// `sinkcoord expire DIR ARGS` exits with `code`, and what it says (stdout
/// on success, stderr otherwise) contains each of `wants`.
fn expire_says(dir: &Path, args: &str, code: i32, wants: &[&str]) {
    let (got, out, err) = run_expire(dir, args);
    assert_eq!(got, Some(code), "{out}{err}");
    let said = if code == 0 { &out } else { &err };
    for want in wants {
        assert!(said.contains(want), "{want:?}: {out}{err}");
    }
}

/// Makes `dir` an (empty) Apache Paimon table: one BIGINT column.
fn paimon_table(dir: &Path) {
    let mut st = LocalDirStorage::open(dir).unwrap();
    let schema = encode_schema(
        &CreateTable {
            columns: &[("value", "BIGINT")],
            partition_keys: &[],
            options: &[],
        },
        0,
    )
    .unwrap();
    assert!(st.put_if_absent("schema/schema-0", &schema).unwrap());
}

/// The data file name committer `user` reports for checkpoint `cp`.
fn file_name(user: &str, cp: u64) -> String {
    format!("data-{user}-{cp}-0.parquet")
}

fn committable_of(format: TableFormatKind, user: &str, cp: u64) -> Vec<u8> {
    match format {
        TableFormatKind::Paimon => {
            committable::encode(&DataFile::single_row(file_name(user, cp), 10))
        }
        _ => format!("{user}-{cp}").into_bytes(),
    }
}

/// One commit user's coordinator (parallelism 1) on a table directory,
/// with failovers that restore from the state of an older savepoint.
struct Committer {
    user: String,
    format: TableFormatKind,
    config: Config,
    env: HostEnv,
    coordinator: Coordinator,
    /// Every checkpoint some instance of this user reported committed.
    committed: Vec<u64>,
    /// The savepoints taken, with the coordinator's state of each.
    savepoints: Vec<(u64, Vec<u8>)>,
    /// Fails the table's tag creates while it is on.
    fail_tags: FailTags,
    /// A state that owes savepoint `.0` its tag (its create failed), taken at
    /// checkpoint `.1`.
    owing: Option<(u64, u64, Vec<u8>)>,
}

impl Committer {
    fn new(dir: &Path, user: &str, format: TableFormatKind, clock: Shared<StepClock>) -> Self {
        let mut config = Config::new(1, user);
        config.savepoint_auto_tag = true;
        config.tag_time_retained_ms = Some(20);
        let fail_tags = FailTags::default();
        let storage = BeforePut {
            inner: LocalDirStorage::open(dir).unwrap(),
            hook: fail_tags.clone(),
        };
        let env = HostEnv::new(storage, clock);
        let mut c = Committer {
            fail_tags,
            owing: None,
            user: user.into(),
            format,
            coordinator: Coordinator::new(config.clone(), None),
            config,
            env,
            committed: Vec::new(),
            savepoints: Vec::new(),
        };
        c.coordinator.set_table_format(format).unwrap();
        c.coordinator.start(&mut c.env).unwrap();
        c
    }

    fn commit(&mut self, cp: u64, savepoint: bool) {
        let entry = Entry {
            checkpoint: cp,
            committables: vec![committable_of(self.format, &self.user, cp)].into(),
            watermark: None,
            savepoint,
        };
        let user = self.user.clone();
        let fail = |what: &str, e: sink_coordinator::Error| -> ! {
            panic!("{user}: {what} of checkpoint {cp}: {e}")
        };
        if let Err(e) = self.coordinator.event(&mut self.env, 0, 0, entry) {
            fail("event", e)
        }
        let state = self
            .coordinator
            .checkpoint(&mut self.env, cp)
            .unwrap_or_else(|e| fail("checkpoint", e));
        let out = self
            .coordinator
            .checkpoint_complete(&mut self.env, cp)
            .unwrap_or_else(|e| fail("complete", e));
        self.committed.extend(&out.committed);
        if savepoint {
            self.savepoints.push((cp, state));
        }
    }

    /// Savepoint `cp` whose tag create fails: the snapshot is committed, the
    /// call fails, and the state of checkpoint `cp + 1`, taken at once, owes
    /// the tag (which the next call creates).
    fn commit_failing_its_tag(&mut self, cp: u64) {
        let entry = Entry {
            checkpoint: cp,
            committables: vec![committable_of(self.format, &self.user, cp)].into(),
            watermark: None,
            savepoint: true,
        };
        self.coordinator.event(&mut self.env, 0, 0, entry).unwrap();
        self.coordinator.checkpoint(&mut self.env, cp).unwrap();
        self.fail_tags.set(true);
        let e = self
            .coordinator
            .checkpoint_complete(&mut self.env, cp)
            .unwrap_err();
        self.fail_tags.set(false);
        assert!(e.to_string().contains("the test fails tag creates"), "{e}");
        // The snapshot landed before the tag's create failed.
        self.committed.push(cp);
        let next = cp + 1;
        let entry = Entry {
            checkpoint: next,
            committables: vec![committable_of(self.format, &self.user, next)].into(),
            watermark: None,
            savepoint: false,
        };
        // The state is taken before any call could retry the tag.
        let state = self.coordinator.checkpoint(&mut self.env, next).unwrap();
        let first = self.coordinator.event(&mut self.env, 0, 0, entry).unwrap();
        let out = self
            .coordinator
            .checkpoint_complete(&mut self.env, next)
            .unwrap();
        self.committed.extend(&first.committed);
        self.committed.extend(&out.committed);
        let created = [first.tags_created, out.tags_created].concat();
        assert_eq!(created, [format!("savepoint-{cp}")]);
        self.owing = Some((cp, next, state));
    }

    /// A new instance restored from `state` of checkpoint `cp` (not started).
    fn restart_from(&mut self, cp: u64, state: Vec<u8>) {
        let restore = RestorePoint {
            checkpoint: cp,
            state,
            finished_subtasks: vec![],
        };
        self.coordinator = Coordinator::new(self.config.clone(), Some(restore));
        self.coordinator.set_table_format(self.format).unwrap();
    }

    /// A failover restoring from the state that owes a tag: the walk back
    /// from this user's mark to the savepoint's snapshot, which an expiry
    /// removed by now, ends with no tag (SEMANTICS 5.4), not `corrupt-state`.
    fn failover_owing(&mut self) -> Vec<String> {
        let (s, cp, state) = self.owing.take().unwrap();
        self.restart_from(cp, state);
        let user = self.user.clone();
        let mut created = self
            .coordinator
            .start(&mut self.env)
            .unwrap_or_else(|e| panic!("{user}: restore owing savepoint {s}'s tag: {e}"))
            .tags_created;
        let out = self
            .coordinator
            .restored(&mut self.env, 0, 0, cp, vec![])
            .unwrap_or_else(|e| panic!("{user}: restored, owing savepoint {s}'s tag: {e}"));
        assert!(out.committed.is_empty(), "{out:?}");
        created.extend(out.tags_created);
        created
    }

    /// A failover restoring from the state of the savepoint `back` savepoints
    /// ago: its checkpoint is committed already, and its tag is owed again
    /// (the walk back from the user's mark, maybe into expired snapshots).
    fn failover(&mut self, back: usize) {
        let Some((cp, state)) = self.savepoints.iter().rev().nth(back).cloned() else {
            return;
        };
        self.restart_from(cp, state);
        let user = self.user.clone();
        let out = self
            .coordinator
            .start(&mut self.env)
            .unwrap_or_else(|e| panic!("{user}: restore from savepoint {cp}: {e}"));
        self.committed.extend(&out.committed);
        let out = self
            .coordinator
            .restored(&mut self.env, 0, 0, cp, vec![])
            .unwrap_or_else(|e| panic!("{user}: restored from savepoint {cp}: {e}"));
        assert_eq!(out.state, Lifecycle::Running);
        self.committed.extend(&out.committed);
    }
}

/// A committer thread's job: checkpoints `first..first + n`, every fifth a
/// savepoint, a failover to an older savepoint every seventh.
fn run_committer(mut c: Committer, first: u64, n: u64) -> Committer {
    for i in 0..n {
        let cp = first + i;
        if i == 4 {
            c.commit_failing_its_tag(cp);
            continue;
        }
        if i == 5 {
            continue; // committed by the call above
        }
        c.commit(cp, cp.is_multiple_of(5));
        // Room for expiry runs between checkpoints, as on a real job.
        std::thread::sleep(std::time::Duration::from_millis(5));
        if i % 7 == 6 {
            c.failover(1 + (i as usize % 3));
        }
    }
    c
}

/// Two commit users commit (with failovers) while `sinkcoord expire` runs in
/// a loop beside them; then everything the issue promises is checked.
fn concurrent_expiry(format: TableFormatKind, name: &str) {
    let s = Scratch::new("issue25-expire", name);
    if format == TableFormatKind::Paimon {
        paimon_table(&s.0);
    }
    let clock = Shared::new(StepClock::new(1_000_000, 1));
    let a = Committer::new(&s.0, "a", format, clock.clone());
    let b = Committer::new(&s.0, "b", format, clock.clone());
    let n = 40;
    let threads = [(a, 1), (b, 1001)]
        .map(|(c, first)| std::thread::spawn(move || run_committer(c, first, n)));
    let mut runs = 0;
    let mut expired_tags = BTreeSet::new();
    let mut expire = |runs: &mut u32| {
        let now = clock.lock().next.to_string();
        let (code, out, err) = sinkcoord(&[
            "expire",
            path(&s.0),
            "--retain-last",
            "2",
            "--min-age-ms",
            "0",
            "--now-ms",
            &now,
            "--json",
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        for t in json(&out)["expired_tags"].as_array().unwrap() {
            expired_tags.insert(t["name"].as_str().unwrap().to_string());
        }
        *runs += 1;
    };
    // Until both are done (or one panicked: its join below says why).
    while !threads.iter().all(|t| t.is_finished()) {
        expire(&mut runs);
    }
    let [mut a, mut b] = threads.map(|t| t.join().unwrap());
    expire(&mut runs);
    assert!(runs >= 4, "{runs}");
    // A restore from each user's state that owes an early savepoint's tag:
    // that snapshot was expired, so the walk back for its tag reaches expired
    // snapshots and ends with no tag (SEMANTICS 5.4), not `corrupt-state`.
    for c in [&mut a, &mut b] {
        assert_eq!(c.failover_owing(), Vec::<String>::new(), "{}", c.user);
    }

    let mut st = LocalDirStorage::open(&s.0).unwrap();
    let snapshots = table::list_snapshots(&mut st).unwrap();
    let ids: Vec<u64> = snapshots.iter().map(|s| s.id).collect();
    let (first, last) = (ids[0], *ids.last().unwrap());
    assert_eq!(
        ids,
        (first..=last).collect::<Vec<_>>(),
        "dense from the earliest kept"
    );
    assert!(first > 20, "expiry made progress: {ids:?}");
    for (c, base) in [(&a, 1), (&b, 1001)] {
        // Exactly once: every checkpoint reported committed by exactly one
        // instance, restores included, and the kept snapshots agree.
        let mut seen = c.committed.clone();
        seen.sort_unstable();
        assert_eq!(seen, (base..base + n).collect::<Vec<_>>(), "{}", c.user);
        let kept: Vec<u64> = snapshots
            .iter()
            .filter(|s| s.commit_user == c.user)
            .map(|s| s.identifier)
            .collect();
        assert!(kept.windows(2).all(|w| w[0] < w[1]), "{kept:?}");
        assert_eq!(kept.last(), Some(&(base + n - 1)));
        // Every savepoint whose snapshot was kept is tagged, unless its tag
        // expired (a run said so).
        for snap in snapshots
            .iter()
            .filter(|s| s.commit_user == c.user && s.identifier % 5 == 0)
        {
            let tag = format!("savepoint-{}", snap.identifier);
            let tags = table::list_tags(&mut st).unwrap();
            match tags.iter().find(|t| t.name == tag) {
                Some(t) => assert_eq!(t.snapshot_id, snap.id, "{tag}"),
                None => assert!(
                    expired_tags.contains(&tag),
                    "{tag} is missing: {expired_tags:?}"
                ),
            }
        }
    }
    // Below the earliest kept snapshot: only expiry marks (native), nothing (Paimon).
    let below: Vec<String> = st
        .list("snapshot/")
        .unwrap()
        .into_iter()
        .filter(|k| {
            let id = match format {
                TableFormatKind::Paimon => k
                    .strip_prefix("snapshot/")
                    .and_then(psnap::parse_snapshot_file_name)
                    .map(|i| i as u64),
                _ => k
                    .strip_prefix("snapshot/")
                    .and_then(|n| n.parse::<u64>().ok()),
            };
            let mut mark = || {
                let b = st.get(k).unwrap().unwrap();
                format != TableFormatKind::Paimon && table::decode_expiry_mark(&b).is_some()
            };
            id.is_some_and(|id| id < first) && !mark()
        })
        .collect();
    assert!(below.is_empty(), "{below:?}");
    // A new coordinator of each user finds its mark and goes on.
    for (user, cp) in [("a", n + 1), ("b", 1000 + n + 1)] {
        let mut c = Committer::new(&s.0, user, format, clock.clone());
        c.commit(cp, false);
        assert_eq!(c.committed, [cp]);
    }
    if format == TableFormatKind::Paimon {
        // Every manifest the kept snapshots and tags name is there: the
        // orphan listing reads them all without a problem.
        let (code, out, err) = run_expire(&s.0, "--orphans --json");
        assert_eq!(code, Some(0), "{out}{err}");
        assert!(
            json(&out)["problems"].as_array().unwrap().is_empty(),
            "{out}"
        );
    }
}

#[test]
fn native_expiry_beside_running_coordinators() {
    concurrent_expiry(TableFormatKind::Native, "native-concurrent");
}

#[test]
fn paimon_expiry_beside_running_coordinators() {
    concurrent_expiry(TableFormatKind::Paimon, "paimon-concurrent");
}

#[test]
fn retain_last_and_dry_run_on_a_native_table() {
    let s = Scratch::new("issue25-expire", "native-retain");
    let mut job = Job::new(&s.0, "job", None);
    for cp in 1..=10 {
        job.commit(cp, false, 1000 * cp);
    }
    expire_says(
        &s.0,
        "--retain-last 3 --dry-run",
        0,
        &["snapshots: would expire 1..=7 (7 snapshot(s)), kept 8..=10"],
    );
    assert_eq!(std::fs::read_dir(s.0.join("snapshot")).unwrap().count(), 10);

    expire_says(
        &s.0,
        "--retain-last 3",
        0,
        &["snapshots: expired 1..=7 (7 snapshot(s)), kept 8..=10: --retain-last"],
    );
    let mut st = LocalDirStorage::open(&s.0).unwrap();
    let ids: Vec<u64> = table::list_snapshots(&mut st)
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, [8, 9, 10]);
    // Every expired key holds the expiry mark.
    for id in 1..=7 {
        let mark = st.get(&table::snapshot_key(id)).unwrap().unwrap();
        assert_eq!(table::decode_expiry_mark(&mark), Some(8), "snapshot {id}");
    }
    // The running coordinator and a new one go on.
    job.commit(11, false, 11_000);
    let mut again = Job::new(&s.0, "job", None);
    again.commit(12, false, 12_000);
    // Nothing more to do at once; --retain-ms keeps the young ones.
    let (code, out, _) = run_expire(&s.0, "--retain-last 5 --json");
    assert_eq!(code, Some(0));
    let doc = json(&out);
    assert_eq!(doc["earliest"], 8);
    assert_eq!(doc["kept_because"]["reason"], "retention");
    // Snapshots of the last hour are kept whatever the retention says
    // (--min-age-ms, default one hour), then --retain-ms decides.
    expire_says(
        &s.0,
        "--retain-ms 2500 --now-ms 12000",
        0,
        &["none to expire, kept 8..=12: it is younger than --min-age-ms"],
    );
    expire_says(
        &s.0,
        "--retain-ms 2500 --min-age-ms 0 --now-ms 12000",
        0,
        &["expired 8..=9 (2 snapshot(s)), kept 10..=12"],
    );
    // The marks older than --min-age-ms (by the storage's times: the real
    // clock here) are deleted by the next run, snapshot 1's stays.
    std::thread::sleep(std::time::Duration::from_millis(5));
    expire_says(
        &s.0,
        "--retain-last 3 --min-age-ms 1",
        0,
        &["expiry marks: deleted 8 older than --min-age-ms"],
    );
    let keys = st.list("snapshot/").unwrap();
    assert_eq!(keys.len(), 4, "{keys:?}");
    let mark = st.get(&table::snapshot_key(1)).unwrap().unwrap();
    assert_eq!(table::decode_expiry_mark(&mark), Some(10));
    // inspect reads the expired table from its earliest snapshot.
    let (code, out, err) = sinkcoord(&["inspect", path(&s.0), "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(u64s(&json(&out)["snapshots"], "id"), [10, 11, 12]);
}

#[test]
fn marks_and_tags_hold_a_native_expiry_back() {
    let s = Scratch::new("issue25-expire", "native-pins");
    let mut old = Job::new(&s.0, "old", None);
    old.commit(1, false, 1000);
    let mut job = Job::new(&s.0, "job", Some(1000));
    for cp in 1..=6 {
        job.commit(cp, cp == 4, 1000 + cp);
    }
    // User "old" last committed at snapshot 1: nothing can go.
    expire_says(
        &s.0,
        "--retain-last 1 --min-age-ms 0 --now-ms 1",
        0,
        &["none to expire, kept 1..=7: commit user \"old\" is marked there"],
    );
    // Unpinned, the tag of savepoint 4 (snapshot 5, not expired yet) holds it.
    expire_says(
        &s.0,
        "--retain-last 1 --min-age-ms 0 --now-ms 1 --unpin-user old",
        0,
        &["expired 1..=4 (4 snapshot(s)), kept 5..=7: tag \"savepoint-4\" points there"],
    );
    // Once the tag expired, it goes and so do the snapshots it held.
    expire_says(
        &s.0,
        "--retain-last 1 --min-age-ms 0 --unpin-user old --now-ms 999999",
        0,
        &[
            "deleted tag \"savepoint-4\"",
            "expired 5..=6 (2 snapshot(s)), kept 7..=7",
        ],
    );
    // "old"'s mark is still in the latest snapshot: exactly once holds for it.
    let mut st = LocalDirStorage::open(&s.0).unwrap();
    let mut log = table::TableLog::default();
    log.load(&mut st).unwrap();
    assert_eq!(log.user_high("old"), Some(1));
    // Orphans are a Paimon matter.
    expire_says(
        &s.0,
        "--orphans",
        2,
        &["--orphans lists the data files of an Apache Paimon table"],
    );
    expire_says(&s.0, "", 2, &["nothing to do"]);
}

/// Sets a file's modification time to `ms` since the Unix epoch.
fn set_mtime(p: &Path, ms: u64) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn paimon_expiry_and_orphan_data_files() {
    let s = Scratch::new("issue25-expire", "paimon-orphans");
    paimon_table(&s.0);
    let clock = Shared::new(StepClock::new(1_000_000, 1));
    let mut c = Committer::new(&s.0, "a", TableFormatKind::Paimon, clock);
    let bucket = s.0.join("bucket-0");
    std::fs::create_dir_all(&bucket).unwrap();
    for cp in 1..=6 {
        c.commit(cp, false);
        std::fs::write(bucket.join(file_name("a", cp)), b"parquet").unwrap();
        set_mtime(&bucket.join(file_name("a", cp)), 1000);
    }
    // Written by writers and never committed: an old one and a fresh one.
    std::fs::write(bucket.join("data-lost-0.parquet"), b"x").unwrap();
    set_mtime(&bucket.join("data-lost-0.parquet"), 1000);
    std::fs::write(bucket.join("data-fresh-0.parquet"), b"x").unwrap();
    set_mtime(&bucket.join("data-fresh-0.parquet"), 9_500);
    let manifests_before = std::fs::read_dir(s.0.join("manifest")).unwrap().count();

    let (code, out, err) = run_expire(
        &s.0,
        "--retain-last 2 --min-age-ms 0 --orphans --grace-ms 1000 --now-ms 10000 --json",
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let doc = json(&out);
    assert_eq!(doc["format"], "paimon");
    assert_eq!(doc["earliest"], 5);
    assert_eq!(doc["expired_snapshots"], serde_json::json!([1, 2, 3, 4]));
    assert_eq!(
        strs(&doc["orphans"], "key"),
        ["bucket-0/data-lost-0.parquet"],
        "{out}"
    );
    assert!(
        bucket.join("data-lost-0.parquet").exists(),
        "listed, not deleted"
    );
    let mut st = LocalDirStorage::open(&s.0).unwrap();
    assert_eq!(st.get(psnap::EARLIEST_KEY).unwrap().unwrap(), b"5");
    assert_eq!(st.get(&psnap::snapshot_key(4)).unwrap(), None);
    // Manifests only the expired snapshots named are gone; every one the kept
    // ones name is there (a read of all rows finds every file exactly once).
    let deleted = doc["expired_manifests"].as_array().unwrap().len();
    assert!(deleted > 0, "{out}");
    assert_eq!(
        std::fs::read_dir(s.0.join("manifest")).unwrap().count(),
        manifests_before - deleted
    );
    let latest = table::latest_snapshot(&mut st).unwrap().unwrap();
    let mut files = BTreeMap::new();
    for snap in table::list_snapshots(&mut st).unwrap() {
        for (_, c) in snap.committables {
            let f = committable::decode_unchecked(&c).unwrap();
            *files.entry(f.file_name).or_insert(0) += 1;
        }
    }
    assert_eq!(latest.id, 6);
    assert_eq!(
        files.len(),
        2,
        "the delta files of the kept snapshots 5 and 6"
    );

    expire_says(
        &s.0,
        "--delete-orphans --grace-ms 1000 --now-ms 10000",
        0,
        &["1 deleted"],
    );
    assert!(!bucket.join("data-lost-0.parquet").exists());
    assert!(
        bucket.join("data-fresh-0.parquet").exists(),
        "within the grace period"
    );
    for cp in 1..=6 {
        assert!(
            bucket.join(file_name("a", cp)).exists(),
            "committed file {cp}"
        );
    }
    // The coordinator goes on, and a new one restores its view from EARLIEST.
    c.commit(7, false);
    let mut fresh = Committer::new(
        &s.0,
        "a",
        TableFormatKind::Paimon,
        Shared::new(StepClock::new(2_000_000, 1)),
    );
    fresh.commit(8, false);
    assert_eq!(fresh.committed, [8]);
}
