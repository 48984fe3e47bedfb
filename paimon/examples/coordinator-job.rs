//! Test driver: the core's Coordinator (not this crate directly) runs the job of
//! `guest/tests/paimon_job/scenario.rs` on a Paimon table in a local directory; pypaimon
//! then reads it (tests/paimon/test_paimon.py, `test_core_coordinator_job`).
//!
//! Reads one JSON request on stdin: `{"table": dir, "files": {"<subtask>:<checkpoint>":
//! {"file_name", "file_size", "row_count"}}}` (the data files, written by the caller under
//! `bucket-0/`; END is 9223372036854775807). Creates `schema/schema-0` (id BIGINT, name
//! STRING) unless it exists, runs the job, and prints `{"committed", "tags",
//! "calls_per_commit"}`.

#[path = "../../guest/tests/paimon_job/scenario.rs"]
mod scenario;

use scenario::{job_env, DirStorage};
use serde_json::{json, Value};
use sink_coordinator::Storage;
use sink_coordinator_paimon::committable::{self, DataFile};
use sink_coordinator_paimon::{encode_schema, CreateTable};
use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let r: Value = serde_json::from_str(&input).expect("a JSON request");
    let root = std::path::PathBuf::from(r["table"].as_str().expect("table"));
    let mut st = job_env(DirStorage { root });
    let t = CreateTable {
        columns: &[("id", "BIGINT"), ("name", "STRING")],
        partition_keys: &[],
        options: &[("file.format", "parquet")],
    };
    st.storage
        .inner
        .put_if_absent("schema/schema-0", &encode_schema(&t, 0).unwrap())
        .unwrap();
    let files = r["files"].clone();
    let mut file = |s: u32, c: u64| {
        let f = &files[format!("{s}:{c}")];
        assert!(f.is_object(), "no file for subtask {s}, checkpoint {c}");
        committable::encode(&DataFile {
            file_name: f["file_name"].as_str().unwrap().to_string(),
            file_size: f["file_size"].as_u64().unwrap(),
            row_count: f["row_count"].as_u64().unwrap(),
            schema_id: 0,
            min_sequence_number: 0,
            max_sequence_number: f["row_count"].as_i64().unwrap() - 1,
            creation_time_millis: 1_700_000_000_000,
            partition: Vec::new(),
            value_stats: Vec::new(),
        })
    };
    let report = scenario::run(&mut st, &mut file);
    println!(
        "{}",
        json!({ "committed": report.committed, "tags": report.tags,
                "calls_per_commit": report.calls_per_commit })
    );
}
