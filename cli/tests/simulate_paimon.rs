//! `sinkcoord simulate --table-format paimon`: the simulated job on an Apache Paimon
//! table in a directory (real Parquet data files), what its readers must find
//! (`--paimon-expect`), the table read back by `inspect`, and a second run wiping the
//! Paimon table it left (which the wipe check must recognise as the simulator's own).

use std::path::Path;

mod common;
use common::{sinkcoord_output as sinkcoord, text, Scratch};

fn paimon_run(table: &Path, expect: &Path) -> std::process::Output {
    sinkcoord(&[
        "simulate",
        "--quiet",
        "--table-format",
        "paimon",
        "--writers",
        "3",
        "--checkpoints",
        "12",
        "--seed",
        "8",
        "--faults",
        "high",
        "--table",
        table.to_str().unwrap(),
        "--paimon-expect",
        expect.to_str().unwrap(),
    ])
}

#[test]
fn a_simulated_paimon_table_with_its_expectation() {
    let scratch = Scratch::new("simulate_paimon", "run");
    let table = scratch.0.join("db.db").join("events");
    let expect = scratch.0.join("expect.json");
    for round in 0..2 {
        // The second round wipes the first's table: every file in it is the
        // simulator's (schema, snapshots, hints, manifests, tags, data files).
        let out = paimon_run(&table, &expect);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(stdout.contains("format paimon"), "{stdout}");
        assert!(
            stdout.contains("verdict: verified, 0 violations"),
            "{stdout}"
        );
    }
    let want: serde_json::Value = serde_json::from_slice(&std::fs::read(&expect).unwrap()).unwrap();
    let latest = want["latest_snapshot"].as_u64().unwrap();
    assert!(latest > 0, "{want}");
    // Every committed range is a real Parquet file's records.
    let files = std::fs::read_dir(table.join("bucket-0")).unwrap().count();
    let ranges: usize = want["rows"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_array().unwrap().len())
        .sum();
    assert!(
        files >= ranges && ranges > 0,
        "{files} files, {ranges} ranges"
    );
    let parquet = std::fs::read_dir(table.join("bucket-0"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .next()
        .unwrap();
    assert_eq!(&parquet[..4], b"PAR1");
    // `inspect` reads the Paimon table (the core's detecting reader).
    let out = sinkcoord(&["inspect", table.to_str().unwrap()]);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}{}", text(&out.stderr));
    assert!(shown.contains(&format!("{latest} snapshot(s)")), "{shown}");
}

#[test]
fn paimon_expect_needs_the_paimon_format() {
    let out = sinkcoord(&["simulate", "--memory", "--paimon-expect", "x.json"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--paimon-expect needs --table-format paimon"),
        "{err}"
    );
}
