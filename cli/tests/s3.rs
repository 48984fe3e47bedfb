//! `sinkcoord` with the table on S3 (moto on loopback, started here, reached
//! through the usual AWS_* variables): `simulate --table s3://...` verifies,
//! `inspect s3://...` lists what it committed (text and JSON), and
//! `storage list|get|put-if-absent|delete` work on the same table.

use std::process::Command;

use sink_coordinator_testkit::moto::Moto;

mod common;
use common::{json, sinkcoord_on_s3 as sinkcoord, u64s};

#[test]
fn simulate_then_inspect_a_table_on_s3() {
    let moto = Moto::start().unwrap_or_else(|e| panic!("{e}"));
    let url = moto.fresh_url("cli-sim");
    let (code, stdout, stderr) = sinkcoord(
        &moto,
        &[
            "simulate",
            "--table",
            &url,
            "--writers",
            "3",
            "--checkpoints",
            "10",
            "--seed",
            "7",
            "--faults",
            "medium",
            "--quiet",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("verdict: verified"), "{stdout}");
    assert!(stdout.contains(&url), "{stdout}");

    let (code, stdout, stderr) = sinkcoord(&moto, &["inspect", &url]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.starts_with(&format!("table {url}\n")), "{stdout}");
    let count: u64 = stdout
        .lines()
        .nth(1)
        .and_then(|l| l.strip_suffix(" snapshot(s)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a snapshot count: {stdout}"));
    assert!(count > 0, "{stdout}");

    let (code, stdout, stderr) = sinkcoord(&moto, &["inspect", "--json", &url]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let doc = json(&stdout);
    assert_eq!(
        doc["snapshots"].as_array().map(Vec::len),
        Some(count as usize),
        "{stdout}"
    );

    // The raw keys: every snapshot is listed, in byte order.
    let (code, stdout, _) = sinkcoord(&moto, &["storage", "list", &url, "snapshot/"]);
    assert_eq!(code, Some(0));
    assert_eq!(stdout.lines().count() as u64, count, "{stdout}");
}

#[test]
fn storage_calls_on_s3() {
    let moto = Moto::start().unwrap_or_else(|e| panic!("{e}"));
    let url = moto.fresh_url("cli-storage");
    let run = |args: &[&str]| sinkcoord(&moto, args);
    assert_eq!(
        run(&["storage", "put-if-absent", &url, "tag/a", "one"]).1,
        "created\n"
    );
    assert_eq!(
        run(&["storage", "put-if-absent", &url, "tag/a", "two"]).1,
        "existed\n"
    );
    assert_eq!(run(&["storage", "get", &url, "tag/a"]).1, "one");
    assert_eq!(run(&["storage", "list", &url]).1, "\"tag/a\"\n");
    assert_eq!(run(&["storage", "delete", &url, "tag/a"]).0, Some(0));
    assert_eq!(run(&["storage", "delete", &url, "tag/a"]).0, Some(0));
    let (code, _, stderr) = run(&["storage", "get", &url, "tag/a"]);
    assert_eq!(code, Some(1), "{stderr}");
    let (code, _, stderr) = run(&["storage", "put-if-absent", &url, "../x", "v"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("invalid storage key"), "{stderr}");
    // An unreachable endpoint is an error with its cause, not a hang.
    let (code, _, stderr) = common::run(
        Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
            .args(["storage", "list", &url])
            .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "x")
            .env("AWS_SECRET_ACCESS_KEY", "y"),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot list"), "{stderr}");
}

/// `expire` on S3 (issue 25): a simulated job's native table keeps its newest
/// snapshots and reads from the earliest; on a Paimon table, the orphan grace
/// period comes from the objects' last-modified times.
#[test]
fn expire_a_table_on_s3() {
    let moto = Moto::start().unwrap_or_else(|e| panic!("{e}"));
    let url = moto.fresh_url("cli-expire");
    let run = |args: &[&str]| sinkcoord(&moto, args);
    let (code, out, err) = run(&[
        "simulate",
        "--table",
        &url,
        "--writers",
        "2",
        "--checkpoints",
        "12",
        "--seed",
        "3",
        "--faults",
        "none",
        "--quiet",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let ids = |out: &str| u64s(&json(out)["snapshots"], "id");
    let (_, out, _) = run(&["inspect", &url, "--json"]);
    let before = ids(&out);
    assert!(before.len() > 3, "{out}");
    let (code, out, err) = run(&["expire", &url, "--retain-last", "3", "--min-age-ms", "0"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("snapshots: expired 1..="), "{out}");
    let (code, out, err) = run(&["inspect", &url, "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let after = ids(&out);
    assert!(
        after.len() < before.len() && after.last() == before.last(),
        "{before:?} {after:?}"
    );

    let paimon = moto.fresh_url("cli-orphans");
    let (code, out, err) = run(&["table", "create", &paimon, "--schema", "value BIGINT"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = run(&[
        "storage",
        "put-if-absent",
        &paimon,
        "bucket-0/data-lost-0.parquet",
        "x",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    // Just written: within a day's grace.
    let (code, out, err) = run(&["expire", &paimon, "--orphans", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let doc = json(&out);
    assert_eq!(doc["orphans"], serde_json::json!([]), "{out}");
    // Two days later it is an orphan, and is deleted.
    let later = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 2 * 86_400_000)
        .to_string();
    let (code, out, err) = run(&[
        "expire",
        &paimon,
        "--delete-orphans",
        "--now-ms",
        &later,
        "--json",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let doc = json(&out);
    assert_eq!(
        doc["orphans"][0]["key"], "bucket-0/data-lost-0.parquet",
        "{out}"
    );
    assert_eq!(doc["orphans"][0]["deleted"], true, "{out}");
    let (_, out, _) = run(&["storage", "list", &paimon, "bucket-0/"]);
    assert_eq!(out.trim(), "", "{out}");
}
