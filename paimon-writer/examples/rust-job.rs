//! A Rust job on a Paimon table, data files included: the job of
//! `guest/tests/paimon_job/scenario.rs` (two writers, streaming checkpoints, a savepoint,
//! storage faults, a global failover, END) through the core's Coordinator, with every
//! data file written in Rust by [`DataFileWriter`] (Parquet) under the table directory.
//! pypaimon and Paimon's Java reader then read it (tests/paimon/test_paimon.py,
//! `test_rust_job_parquet`).
//!
//! Usage: `rust-job TABLE_DIR`. Creates `schema/schema-0` (id BIGINT, name STRING,
//! `file.format` parquet) unless it exists, runs the job, and prints one JSON line:
//! `{"committed": [...], "tags": [...], "rows": {"<subtask>:<checkpoint>": [ids]}}`
//! (END is 9223372036854775807).

#[path = "../../guest/tests/paimon_job/scenario.rs"]
#[allow(dead_code)]
mod scenario;

use scenario::{job_env, DirStorage};
use serde_json::json;
use sink_coordinator::Storage;
use sink_coordinator_paimon::{decode_schema, encode_schema, CreateTable, Datum};
use sink_coordinator_paimon_writer::DataFileWriter;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Writes a data file under the table directory (the writers' side of a job: a job's
/// writers write files, the coordinator only commits them).
fn write_file(root: &Path, key: &str, bytes: &[u8]) {
    let p = root.join(key);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("the data file's directory");
    }
    std::fs::write(&p, bytes).expect("the data file written");
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: rust-job TABLE_DIR");
        std::process::exit(2);
    };
    let root = PathBuf::from(dir);
    let mut st = job_env(DirStorage { root: root.clone() });
    let t = CreateTable {
        columns: &[("id", "BIGINT"), ("name", "STRING")],
        partition_keys: &[],
        options: &[("file.format", "parquet")],
    };
    st.storage
        .inner
        .put_if_absent("schema/schema-0", &encode_schema(&t, 0).expect("a schema"))
        .expect("schema/schema-0 written");
    let schema = st
        .storage
        .inner
        .get("schema/schema-0")
        .ok()
        .flatten()
        .and_then(|b| decode_schema(&b).ok())
        .expect("a readable schema/schema-0");
    let mut rows: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut next_id = 0i64;
    let mut made: BTreeMap<(u32, u64), Vec<u8>> = BTreeMap::new();
    let mut file = |s: u32, c: u64| {
        // One file per (subtask, checkpoint), reported again as it was when the job
        // replays an entry: 3 + subtask rows with fresh ids.
        if let Some(committable) = made.get(&(s, c)) {
            return committable.clone();
        }
        let name = format!("data-s{s}-c{c}-0.parquet");
        let mut w = DataFileWriter::new(&schema, &name, Vec::new(), 0, 1_700_000_000_000)
            .expect("a data file writer");
        let ids: Vec<i64> = (0..3 + i64::from(s)).map(|i| next_id + i).collect();
        next_id += ids.len() as i64;
        for id in &ids {
            w.write_row(&[Datum::Long(*id), Datum::Str(format!("s{s}c{c}"))])
                .expect("a row of the table");
        }
        let f = w.finish().expect("a Parquet file");
        write_file(&root, &f.key, &f.bytes);
        rows.insert(format!("{s}:{c}"), ids);
        made.insert((s, c), f.committable());
        f.committable()
    };
    let report = scenario::run(&mut st, &mut file);
    println!(
        "{}",
        json!({ "committed": report.committed, "tags": report.tags, "rows": rows })
    );
}
