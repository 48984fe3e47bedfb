//! The golden Paimon job of every host (`tests/paimon/golden/two-checkpoints.json`):
//! one fixed job on a Paimon table, run on the native core with a stopped clock, and
//! the table it leaves, every key and value. Each host's test suite (Node, Python, Go,
//! JVM) reads the same file, runs the job's steps through its own API on the component
//! (or its core module) and asserts that its table equals this one byte for byte, so a
//! host that marshals a committable, a watermark or the format wrongly fails there.
//!
//! `UPDATE_GOLDEN=1 cargo test --release -p sink-coordinator --test paimon_golden`
//! rewrites the file; without it the test asserts that the file is what the core
//! writes today (a change of the Paimon encoding must be a deliberate re-bless).
#![cfg(feature = "paimon")]

use std::path::PathBuf;

use serde_json::{json, Value};
use sink_coordinator::{
    Config, Coordinator, Entry, MemEnv, MemStorage, StepClock, TableFormatKind, END,
};
use sink_coordinator_paimon::committable::{self, ColumnStats, DataFile};
use sink_coordinator_paimon::types::Datum;
use sink_coordinator_paimon::{encode_schema, CreateTable};

/// Every clock reading of the job (the clock is stopped: a host's call pattern may
/// read it more or less often than the native core without changing a byte).
const CLOCK_MS: u64 = 1_700_000_000_000;
const SCHEMA_KEY: &str = "schema/schema-0";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn schema() -> Vec<u8> {
    let t = CreateTable {
        columns: &[("id", "BIGINT"), ("name", "STRING")],
        partition_keys: &[],
        options: &[("file.format", "parquet")],
    };
    encode_schema(&t, CLOCK_MS as i64).expect("the golden schema encodes")
}

/// One data file's committable; `stats` adds value statistics for `id`.
fn file(name: &str, rows: u64, first_seq: i64, stats: bool) -> Vec<u8> {
    committable::encode(&DataFile {
        file_name: name.to_string(),
        file_size: 4096 + rows,
        row_count: rows,
        schema_id: 0,
        min_sequence_number: first_seq,
        max_sequence_number: first_seq + rows as i64 - 1,
        creation_time_millis: CLOCK_MS as i64 - 500,
        partition: Vec::new(),
        value_stats: if stats {
            vec![ColumnStats {
                column: "id".into(),
                min: Datum::Long(first_seq),
                max: Datum::Long(first_seq + rows as i64 - 1),
                null_count: Some(0),
            }]
        } else {
            Vec::new()
        },
    })
}

/// One writer event of the job.
struct Event {
    subtask: u32,
    checkpoint: u64,
    committables: Vec<Vec<u8>>,
    watermark: Option<i64>,
    savepoint: bool,
}

/// The job: checkpoint 1 (subtask 0 two files, one with stats; subtask 1 one file),
/// then checkpoint 2 as a savepoint (one file each), auto-tagged `savepoint-2`.
fn events() -> Vec<Vec<Event>> {
    vec![
        vec![
            Event {
                subtask: 0,
                checkpoint: 1,
                committables: vec![
                    file("data-golden-0-1a.parquet", 10, 0, true),
                    file("data-golden-0-1b.parquet", 3, 10, false),
                ],
                watermark: Some(100),
                savepoint: false,
            },
            Event {
                subtask: 1,
                checkpoint: 1,
                committables: vec![file("data-golden-1-1.parquet", 7, 0, false)],
                watermark: Some(120),
                savepoint: false,
            },
        ],
        vec![
            Event {
                subtask: 0,
                checkpoint: 2,
                committables: vec![file("data-golden-0-2.parquet", 5, 13, true)],
                watermark: Some(200),
                savepoint: true,
            },
            Event {
                subtask: 1,
                checkpoint: 2,
                committables: vec![file("data-golden-1-2.parquet", 2, 7, false)],
                watermark: None,
                savepoint: true,
            },
        ],
    ]
}

fn config() -> Config {
    let mut c = Config::new(2, "golden");
    c.savepoint_auto_tag = true;
    c
}

/// Runs the job on the native core and returns the golden document.
fn golden() -> Value {
    let mut env = MemEnv {
        storage: MemStorage::default(),
        clock: StepClock::new(CLOCK_MS, 0),
    };
    let schema = schema();
    env.storage.map.insert(SCHEMA_KEY.into(), schema.clone());
    let cfg = config();
    let mut c = Coordinator::new(cfg.clone(), None);
    c.set_table_format(TableFormatKind::Paimon)
        .expect("created: the format can be chosen");
    c.start(&mut env).expect("start");
    let mut steps = vec![json!({"call": "start"})];
    for round in events() {
        let checkpoint = round[0].checkpoint;
        for e in round {
            let entry = Entry {
                checkpoint: e.checkpoint,
                committables: e.committables.clone().into(),
                watermark: e.watermark,
                savepoint: e.savepoint,
            };
            c.event(&mut env, e.subtask, 0, entry).expect("event");
            steps.push(json!({
                "call": "event",
                "subtask": e.subtask,
                "attempt": 0,
                "checkpoint": e.checkpoint,
                "committables": e.committables.iter().map(|b| hex(b)).collect::<Vec<_>>(),
                "watermark": e.watermark,
                "savepoint": e.savepoint,
            }));
        }
        let out = c.checkpoint_complete(&mut env, checkpoint).expect("commit");
        assert_eq!(out.committed, vec![checkpoint]);
        assert!(checkpoint != END);
        steps.push(json!({
            "call": "checkpoint-complete",
            "checkpoint": checkpoint,
            "committed": out.committed,
            "tags-created": out.tags_created,
        }));
    }
    assert_eq!(
        c.pending_savepoints(),
        Vec::<u64>::new(),
        "the savepoint was tagged"
    );
    let table: serde_json::Map<String, Value> = env
        .storage
        .map
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(hex(v))))
        .collect();
    json!({
        "about": "The golden Paimon job of every host: guest/tests/paimon_golden.rs writes it \
                  (UPDATE_GOLDEN=1); each host runs `steps` on the component with a stopped \
                  clock (`clock-ms` at every reading) and an in-memory storage holding \
                  `schema` only, after set-table-format paimon, and compares its storage with \
                  `table` (every key, values in hex).",
        "format": "paimon",
        "config": {
            "parallelism": cfg.parallelism,
            "commit-user": cfg.commit_user,
            "savepoint-auto-tag": cfg.savepoint_auto_tag,
        },
        "clock-ms": CLOCK_MS,
        "schema": {"key": SCHEMA_KEY, "value": hex(&schema)},
        "steps": steps,
        "table": table,
    })
}

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/paimon/golden/two-checkpoints.json")
}

#[test]
fn the_golden_paimon_job() {
    let doc = golden();
    let path = golden_path();
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = serde_json::to_string_pretty(&doc).unwrap() + "\n";
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    let stored: Value = serde_json::from_str(&text).expect("the golden file is JSON");
    // Compared key by key first, so that a failure names the key that differs.
    let (want, got) = (&stored["table"], &doc["table"]);
    for (k, v) in got.as_object().unwrap() {
        assert_eq!(
            want.get(k),
            Some(v),
            "table key {k}: the core writes another value"
        );
    }
    for k in want.as_object().unwrap().keys() {
        assert!(
            got.get(k).is_some(),
            "table key {k}: the core no longer writes it"
        );
    }
    assert_eq!(
        stored,
        doc,
        "{} is not what the core writes (UPDATE_GOLDEN=1)",
        path.display()
    );
}

/// The golden table is a Paimon table the crate reads back: two snapshots, the tag.
#[test]
fn the_golden_table_reads_back() {
    let doc = golden();
    let mut st = MemStorage::default();
    for (k, v) in doc["table"].as_object().unwrap() {
        let v = v.as_str().unwrap();
        let bytes = (0..v.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&v[i..i + 2], 16).unwrap())
            .collect();
        st.map.insert(k.clone(), bytes);
    }
    let snaps = sink_coordinator::table::list_snapshots(&mut st).unwrap();
    let ids: Vec<u64> = snaps.iter().map(|s| s.identifier).collect();
    assert_eq!(ids, vec![1, 2]);
    assert!(snaps.iter().all(|s| s.commit_user == "golden"));
    let tags = sink_coordinator::table::list_tags(&mut st).unwrap();
    assert_eq!(tags.len(), 1);
    assert_eq!(tags[0].name, "savepoint-2");
}
