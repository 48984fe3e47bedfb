//! Test driver: the core's Coordinator on a Paimon table in a local directory, one step at
//! a time, so that a test can interleave it with other writers' commits (pypaimon's, in
//! tests/paimon/test_paimon.py `test_pypaimon_same_commit_user`) and restart it from the
//! state bytes an earlier run printed.
//!
//! Reads one JSON request on stdin:
//!
//! ```json
//! {"table": "<dir>", "user": "job", "parallelism": 1, "run": "a",
//!  "restore": {"checkpoint": 3, "state": "<hex>", "finished_subtasks": []},
//!  "steps": [
//!    {"op": "event", "subtask": 0, "checkpoint": 4, "rows": [40, 41]},
//!    {"op": "event", "subtask": 0, "checkpoint": 5, "files": [{"file_name", "file_size", "row_count"}]},
//!    {"op": "restored", "subtask": 0, "checkpoint": 3,
//!     "entries": [{"checkpoint": 2, "committables": ["<hex>"]}, {"checkpoint": 3, "rows": [30]}]},
//!    {"op": "checkpoint", "checkpoint": 4},
//!    {"op": "complete", "checkpoint": 4}
//!  ]}
//! ```
//!
//! `restore` absent: a fresh start. An entry (an `event`'s, or one of `restored`'s
//! `entries`) carries its data as `rows` (ids: one Parquet file written here by
//! `DataFileWriter`, rows `(id, "<user>c<checkpoint>")`, named from `run`, which must
//! differ between runs on one table), `files` (the caller's data files' metadata, written
//! by the caller under `bucket-0/`) or `committables` (hex, e.g. as an earlier `event`
//! printed them: a writer's replay after a failover); optional `watermark`, `savepoint`.
//! END is 9223372036854775807. Creates `schema/schema-0` (id BIGINT, name STRING,
//! `file.format` parquet) unless it exists, starts the coordinator (`Config::new(
//! parallelism, user)`, recovery `continue`), runs the steps and prints one JSON line:
//!
//! `{"start": R, "steps": [R, ...], "state": "<lifecycle>"}`, each `R` = `{"committed":
//! [identifiers], "snapshots": [{"id", "user", "identifier"}], "committed_up_to"}` (the
//! snapshots that appeared in the table during the step, whoever wrote them), plus
//! `"committables": [hex]` for an event and `"state": "<hex>"` for a checkpoint. A step
//! that fails prints `{"error": {"kind", "message"}, "at": <step index>}` after the
//! steps so far and exits 3.

#[path = "../../guest/tests/paimon_job/scenario.rs"]
#[allow(dead_code)]
mod scenario;

use scenario::DirStorage;
use serde_json::{json, Value};
use sink_coordinator::table::TableFormatKind;
use sink_coordinator::{
    Config, Coordinator, Entry, Error, Outcome, OwnedEnv, RecoveryMode, RestorePoint, StepClock,
    Storage,
};
use sink_coordinator_paimon::committable::{self, DataFile};
use sink_coordinator_paimon::{decode_schema, encode_schema, CreateTable, Datum, TableSchema};
use sink_coordinator_paimon_writer::DataFileWriter;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The directory storage with a clock that reads one second later each time.
type Dir = OwnedEnv<DirStorage, StepClock>;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The snapshot ids in the table's `snapshot/` directory.
fn snapshot_ids(root: &Path) -> BTreeSet<u64> {
    let Ok(rd) = std::fs::read_dir(root.join("snapshot")) else {
        return BTreeSet::new();
    };
    rd.filter_map(|e| {
        let name = e.ok()?.file_name().into_string().ok()?;
        name.strip_prefix("snapshot-")?.parse().ok()
    })
    .collect()
}

/// `{"id", "user", "identifier"}` of each snapshot in `now` but not in `before`.
fn new_snapshots(root: &Path, before: &BTreeSet<u64>, now: &BTreeSet<u64>) -> Vec<Value> {
    now.difference(before)
        .map(|id| {
            let bytes = std::fs::read(root.join(format!("snapshot/snapshot-{id}")))
                .expect("a snapshot just listed");
            let s: Value = serde_json::from_slice(&bytes).expect("snapshot JSON");
            json!({ "id": id, "user": s["commitUser"], "identifier": s["commitIdentifier"] })
        })
        .collect()
}

struct Job {
    root: PathBuf,
    schema: TableSchema,
    user: String,
    run: String,
    files_written: u64,
}

impl Job {
    /// The committables of one entry spec (see the module doc).
    fn committables(&mut self, e: &Value) -> Vec<Vec<u8>> {
        let checkpoint = e["checkpoint"].as_u64().expect("checkpoint");
        let mut out = Vec::new();
        if let Some(rows) = e.get("rows").and_then(Value::as_array) {
            let name = format!(
                "data-{}-{}-{}-0.parquet",
                self.user, self.run, self.files_written
            );
            self.files_written += 1;
            let mut w = DataFileWriter::new(&self.schema, &name, Vec::new(), 0, 1_700_000_000_000)
                .expect("a data file writer");
            for id in rows {
                let id = id.as_i64().expect("a row id");
                w.write_row(&[
                    Datum::Long(id),
                    Datum::Str(format!("{}c{checkpoint}", self.user)),
                ])
                .expect("a row of the table");
            }
            let f = w.finish().expect("a Parquet file");
            let p = self.root.join(&f.key);
            std::fs::create_dir_all(p.parent().expect("a parent")).expect("bucket-0");
            std::fs::write(&p, &f.bytes).expect("the data file written");
            out.push(f.committable());
        }
        if let Some(files) = e.get("files").and_then(Value::as_array) {
            for f in files {
                let rows = f["row_count"].as_u64().expect("row_count");
                out.push(committable::encode(&DataFile {
                    file_name: f["file_name"].as_str().expect("file_name").to_string(),
                    file_size: f["file_size"].as_u64().expect("file_size"),
                    row_count: rows,
                    schema_id: 0,
                    min_sequence_number: 0,
                    max_sequence_number: rows as i64 - 1,
                    creation_time_millis: 1_700_000_000_000,
                    partition: Vec::new(),
                    value_stats: Vec::new(),
                }));
            }
        }
        if let Some(cs) = e.get("committables").and_then(Value::as_array) {
            out.extend(cs.iter().map(|c| unhex(c.as_str().expect("hex"))));
        }
        out
    }

    fn entry(&mut self, e: &Value) -> Entry {
        Entry {
            checkpoint: e["checkpoint"].as_u64().expect("checkpoint"),
            committables: self.committables(e).into(),
            watermark: e.get("watermark").and_then(Value::as_i64),
            savepoint: e.get("savepoint").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

fn outcome(o: &Outcome) -> Value {
    json!({ "committed": o.committed, "committed_up_to": o.committed_up_to,
            "tags_created": o.tags_created })
}

fn fail(done: &[Value], start: &Value, at: usize, e: &Error) -> ! {
    println!(
        "{}",
        json!({ "start": start, "steps": done, "at": at,
                "error": { "kind": e.kind.name(), "message": e.message() } })
    );
    std::process::exit(3);
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("stdin");
    let r: Value = serde_json::from_str(&input).expect("a JSON request");
    let root = PathBuf::from(r["table"].as_str().expect("table"));
    let mut st = Dir::new(
        DirStorage { root: root.clone() },
        StepClock::new(1_700_000_001_000, 1000),
    );
    let t = CreateTable {
        columns: &[("id", "BIGINT"), ("name", "STRING")],
        partition_keys: &[],
        options: &[("file.format", "parquet")],
    };
    st.storage
        .put_if_absent("schema/schema-0", &encode_schema(&t, 0).expect("a schema"))
        .expect("schema/schema-0 written");
    let schema = st
        .storage
        .get("schema/schema-0")
        .ok()
        .flatten()
        .and_then(|b| decode_schema(&b).ok())
        .expect("a readable schema/schema-0");
    let user = r["user"].as_str().unwrap_or("job").to_string();
    let mut job = Job {
        root: root.clone(),
        schema,
        user: user.clone(),
        run: r["run"].as_str().unwrap_or("run").to_string(),
        files_written: 0,
    };
    let parallelism = r["parallelism"].as_u64().unwrap_or(1) as u32;
    let mut config = Config::new(parallelism, &user);
    config.recovery = RecoveryMode::Continue;
    let restore = r
        .get("restore")
        .filter(|v| !v.is_null())
        .map(|v| RestorePoint {
            checkpoint: v["checkpoint"].as_u64().expect("restore.checkpoint"),
            state: unhex(v["state"].as_str().expect("restore.state")),
            finished_subtasks: v["finished_subtasks"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| s.as_u64().expect("a subtask") as u32)
                        .collect()
                })
                .unwrap_or_default(),
        });
    let mut c = Coordinator::new(config, restore);
    c.set_table_format(TableFormatKind::Paimon)
        .expect("the core's paimon feature");
    let mut done: Vec<Value> = Vec::new();
    let mut before = snapshot_ids(&root);
    let start = match c.start(&mut st) {
        Ok(o) => {
            let now = snapshot_ids(&root);
            let mut v = outcome(&o);
            v["snapshots"] = Value::Array(new_snapshots(&root, &before, &now));
            before = now;
            v
        }
        Err(e) => fail(&done, &Value::Null, 0, &e),
    };
    let steps = r["steps"].as_array().cloned().unwrap_or_default();
    for (i, s) in steps.iter().enumerate() {
        let op = s["op"].as_str().expect("op");
        let sub = s["subtask"].as_u64().unwrap_or(0) as u32;
        let cp = s["checkpoint"].as_u64().unwrap_or(0);
        let mut extra = json!({});
        let result: Result<Option<Outcome>, Error> = match op {
            "event" => {
                let e = job.entry(s);
                extra["committables"] = e.committables.iter().map(hex).collect::<Vec<_>>().into();
                c.event(&mut st, sub, 0, e).map(Some)
            }
            "restored" => {
                let entries: Vec<Entry> = s["entries"]
                    .as_array()
                    .map(|a| a.iter().map(|e| job.entry(e)).collect())
                    .unwrap_or_default();
                c.restored(&mut st, sub, 1, cp, entries).map(Some)
            }
            "checkpoint" => c.checkpoint(&mut st, cp).map(|state| {
                extra["state"] = hex(&state).into();
                None
            }),
            "complete" => c.checkpoint_complete(&mut st, cp).map(Some),
            other => panic!("unknown op {other}"),
        };
        match result {
            Ok(o) => {
                let now = snapshot_ids(&root);
                let mut v = o
                    .as_ref()
                    .map_or_else(|| json!({ "committed": [] }), outcome);
                v["op"] = op.into();
                v["snapshots"] = Value::Array(new_snapshots(&root, &before, &now));
                before = now;
                if let (Some(m), Some(x)) = (v.as_object_mut(), extra.as_object()) {
                    m.extend(x.clone());
                }
                done.push(v);
            }
            Err(e) => fail(&done, &start, i, &e),
        }
    }
    println!(
        "{}",
        json!({ "start": start, "steps": done, "state": c.state().name() })
    );
}
