//! The measuring half of the Paimon commit benchmark, generic over the core's `Storage`:
//! a counting wrapper, a history builder and the measured commits. Shared (with `#[path]`)
//! by `paimon-bench` (local directory, memory) and testkit's `paimon_bench_s3` (the host's
//! object store on moto), so every storage measures the same commits the same way.
//!
//! Everything is deterministic but the clock readings of the timing: the data files, the
//! commit users, the checkpoint ids and the core's clock (a fixed start, a fixed step).

use serde_json::{json, Value};
use sink_coordinator::table::TableFormatKind;
use sink_coordinator::{Config, Coordinator, Entry, OwnedEnv, StepClock, Storage, StorageError};
use sink_coordinator_paimon::committable::{self, DataFile};
use sink_coordinator_paimon::{encode_schema, CreateTable};
use std::time::Instant;

/// The commit user of the history (another job that wrote the table before).
pub const HISTORY_USER: &str = "history";
/// The commit user of the measured commits (a run on a table that already holds a
/// measured run takes another, `bench-2`, ...: the exactly-once filter would skip a
/// second `bench` job's checkpoints 1..=K as committed).
pub const BENCH_USER: &str = "bench";
/// Every data file's size and row count: small files, as a streaming sink commits.
pub const FILE_SIZE: u64 = 4096;
pub const FILE_ROWS: u64 = 128;
/// The creation time of every file and the core clock's start (2023-11-14, fixed).
pub const EPOCH_MS: u64 = 1_700_000_000_000;

/// Storage calls and bytes, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub get: u64,
    pub put: u64,
    pub put_if_absent: u64,
    pub list: u64,
    pub delete: u64,
    /// Bytes of the values `get` returned.
    pub read: u64,
    /// Bytes of the values `put` and `put_if_absent` sent.
    pub written: u64,
}

impl Counts {
    pub fn calls(&self) -> u64 {
        self.get + self.put + self.put_if_absent + self.list + self.delete
    }

    fn minus(&self, before: &Counts) -> Counts {
        Counts {
            get: self.get - before.get,
            put: self.put - before.put,
            put_if_absent: self.put_if_absent - before.put_if_absent,
            list: self.list - before.list,
            delete: self.delete - before.delete,
            read: self.read - before.read,
            written: self.written - before.written,
        }
    }

    pub fn to_json(self) -> Value {
        json!({ "get": self.get, "put": self.put, "put_if_absent": self.put_if_absent,
                "list": self.list, "delete": self.delete, "calls": self.calls(),
                "read": self.read, "written": self.written })
    }
}

/// A storage that counts every call and byte, with the core's clock beside it (the core
/// takes one `Env`): a fixed start and a fixed step, so snapshots carry the same times
/// in every run.
pub struct Counting<S: Storage> {
    pub inner: S,
    pub counts: Counts,
}

/// The counting storage beside the core's clock (one second a reading, from [`EPOCH_MS`]).
pub type Counted<S> = OwnedEnv<Counting<S>, StepClock>;

/// `inner`, counted, with the clock.
pub fn counted<S: Storage>(inner: S) -> Counted<S> {
    let counting = Counting {
        inner,
        counts: Counts::default(),
    };
    OwnedEnv::new(counting, StepClock::new(EPOCH_MS + 1000, 1000))
}

impl<S: Storage> Storage for Counting<S> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.counts.get += 1;
        let v = self.inner.get(key)?;
        self.counts.read += v.as_ref().map_or(0, |b| b.len() as u64);
        Ok(v)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.counts.put_if_absent += 1;
        self.counts.written += value.len() as u64;
        self.inner.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.counts.put += 1;
        self.counts.written += value.len() as u64;
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.counts.delete += 1;
        self.inner.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.counts.list += 1;
        self.inner.list(prefix)
    }
}

pub fn parse_format(s: &str) -> Option<TableFormatKind> {
    match s {
        "paimon" => Some(TableFormatKind::Paimon),
        "native" => Some(TableFormatKind::Native),
        _ => None,
    }
}

/// The data file `user` reports for checkpoint `cp` (one per commit). bench.py builds
/// pypaimon's commit messages from the same fields (`file_json`).
pub fn data_file(user: &str, cp: u64) -> DataFile {
    DataFile {
        file_name: format!("data-{user}-{cp:05}-0.parquet"),
        file_size: FILE_SIZE,
        row_count: FILE_ROWS,
        schema_id: 0,
        min_sequence_number: 0,
        max_sequence_number: FILE_ROWS as i64 - 1,
        creation_time_millis: (EPOCH_MS + cp) as i64,
        partition: Vec::new(),
        value_stats: Vec::new(),
    }
}

pub fn file_json(f: &DataFile) -> Value {
    json!({ "file_name": f.file_name, "file_size": f.file_size, "row_count": f.row_count,
            "min_seq": f.min_sequence_number, "max_seq": f.max_sequence_number,
            "creation_time_millis": f.creation_time_millis })
}

/// `schema/schema-0` of the tests' table (id BIGINT, name STRING; Parquet files), which a
/// Paimon table needs before its first commit; the native format has no schema file.
pub fn create_table<S: Storage>(st: &mut S, kind: TableFormatKind) {
    if kind != TableFormatKind::Paimon {
        return;
    }
    let t = CreateTable {
        columns: &[("id", "BIGINT"), ("name", "STRING")],
        partition_keys: &[],
        options: &[("file.format", "parquet")],
    };
    st.put_if_absent("schema/schema-0", &encode_schema(&t, 0).expect("a schema"))
        .expect("schema/schema-0 written");
}

fn coordinator(kind: TableFormatKind, user: &str) -> Coordinator {
    let mut c = Coordinator::new(Config::new(1, user), None);
    c.set_table_format(kind)
        .expect("a format is set before start");
    c
}

/// One checkpoint of a one-writer job: the writer's event with one data file, then the
/// checkpoint's completion, which commits one snapshot.
fn one_commit<S: Storage>(c: &mut Coordinator, st: &mut Counted<S>, user: &str, cp: u64) {
    let e = Entry {
        checkpoint: cp,
        committables: vec![committable::encode(&data_file(user, cp))].into(),
        watermark: None,
        savepoint: false,
    };
    c.event(st, 0, 0, e).expect("the writer's event");
    let out = c.checkpoint_complete(st, cp).expect("the commit");
    assert_eq!(out.committed, vec![cp], "checkpoint {cp} committed");
}

/// Commits `n` snapshots (checkpoints 1..=n of [`HISTORY_USER`]) through the core: the
/// table's history, as the job before the measured one left it.
pub fn build_history<S: Storage>(st: &mut Counted<S>, kind: TableFormatKind, n: u64) {
    create_table(&mut st.storage, kind);
    let mut c = coordinator(kind, HISTORY_USER);
    c.start(st).expect("start on an empty table");
    for cp in 1..=n {
        one_commit(&mut c, st, HISTORY_USER, cp);
    }
}

/// One measured commit: its storage calls and bytes, and its wall time.
pub struct Measured {
    pub counts: Counts,
    pub nanos: u64,
}

/// What [`measure`] saw: the coordinator's start on the table, then each commit.
pub struct Run {
    pub user: String,
    pub start: Measured,
    pub commits: Vec<Measured>,
}

/// A new coordinator of `user` starts on the table (`st`, holding a history) and commits
/// checkpoints 1..=`commits`, one data file each. A commit is timed from the
/// writer's event to the end of `checkpoint-complete` (the event's admission check is
/// part of the work the core does for a commit).
pub fn measure<S: Storage>(
    st: &mut Counted<S>,
    kind: TableFormatKind,
    user: &str,
    commits: u64,
) -> Run {
    let mut c = coordinator(kind, user);
    let before = st.storage.counts;
    let t = Instant::now();
    c.start(st).expect("start on the history");
    let start = Measured {
        nanos: t.elapsed().as_nanos() as u64,
        counts: st.storage.counts.minus(&before),
    };
    let mut out = Vec::new();
    for cp in 1..=commits {
        let before = st.storage.counts;
        let t = Instant::now();
        one_commit(&mut c, st, user, cp);
        out.push(Measured {
            nanos: t.elapsed().as_nanos() as u64,
            counts: st.storage.counts.minus(&before),
        });
    }
    Run {
        user: user.to_string(),
        start,
        commits: out,
    }
}

/// The run as one JSON object (bench.py reads it): the start, then every commit with its
/// counts and nanoseconds, and the data files committed (pypaimon commits the same).
pub fn run_json(run: &Run, kind: &str, storage: &str, history: u64) -> Value {
    let commits: Vec<Value> = run
        .commits
        .iter()
        .map(|m| json!({ "ns": m.nanos, "counts": m.counts.to_json() }))
        .collect();
    let files: Vec<Value> = (1..=run.commits.len() as u64)
        .map(|cp| file_json(&data_file(&run.user, cp)))
        .collect();
    json!({ "format": kind, "storage": storage, "history": history,
            "start": { "ns": run.start.nanos, "counts": run.start.counts.to_json() },
            "commits": commits, "files": files })
}
