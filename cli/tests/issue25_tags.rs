//! Issue 25, `sinkcoord tags expire`: the tags whose expire time has
//! passed are deleted (or, with --dry-run, listed), nothing else is; a
//! coordinator on the table goes on committing, tagging and aborting; bad
//! input and a Flink table's root are refused with exit statuses of their
//! own; a table URL works like a directory.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use sink_coordinator::{Storage, END};
use sink_coordinator_testkit::moto::Moto;

mod common;
use common::job::{sinkcoord, Job};
use common::{assert_has, path, sinkcoord_on_s3, Scratch};

/// `sinkcoord tags expire DIR ARGS` (ARGS split at spaces).
fn tags_expire(dir: &Path, args: &str) -> (Option<i32>, String, String) {
    let mut all = vec!["tags", "expire", path(dir)];
    all.extend(args.split_whitespace());
    sinkcoord(&all)
}

/// Every file of the table and its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for sub in ["snapshot", "tag", "hint"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let name = format!("{sub}/{}", e.file_name().to_string_lossy());
            out.insert(name, std::fs::read(e.path()).unwrap());
        }
    }
    out
}

fn tag_names(dir: &Path) -> Vec<String> {
    files(dir)
        .keys()
        .filter_map(|k| k.strip_prefix("tag/").map(String::from))
        .collect()
}

/// A job whose tags expire 1000 ms after creation: savepoints 1, 2 and 12
/// tagged at 1000, 2000 and 12000 (expiring at 2000, 3000, 13000); a
/// second job without retention tags savepoint 5 at 5000 (never expires).
fn tagged_table(dir: &Path) -> Job {
    let mut job = Job::new(dir, "job", Some(1000));
    let mut forever = Job::new(dir, "forever", None);
    job.commit(1, true, 1000);
    job.commit(2, true, 2000);
    forever.commit(5, true, 5000);
    job.commit(12, true, 12000);
    job
}

#[test]
fn dry_run_lists_and_deletes_nothing() {
    let s = Scratch::new("issue25-tags", "dry");
    tagged_table(&s.0);
    let before = files(&s.0);
    let (code, out, err) = tags_expire(&s.0, "--now-ms 3001 --dry-run");
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(files(&s.0), before, "{out}");
    assert_has(&out, "2 tag(s) expired before 3001 ms");
    assert_has(&out, "dry run: nothing deleted");
    assert_has(&out, "  would delete tag \"savepoint-1\": snapshot 1 (identifier 1), created 1000 ms, expired 2000 ms");
    assert_has(&out, "  would delete tag \"savepoint-2\"");
    assert_has(
        &out,
        "2 tag(s) kept: 1 not expired yet, 1 without an expire time",
    );
    let (_, out, _) = tags_expire(&s.0, "--now-ms 3001 --dry-run --json");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["dry_run"], Value::Bool(true));
    assert_eq!(doc["expired"][0]["outcome"], "dry-run", "{out}");
    assert_eq!(files(&s.0), before);
}

#[test]
fn expire_deletes_only_tags_past_their_expire_time() {
    let s = Scratch::new("issue25-tags", "expire");
    tagged_table(&s.0);
    let before = files(&s.0);
    // Exactly at an expire time the tag is kept: it expires once it is past.
    let (code, out, err) = tags_expire(&s.0, "--now-ms 3000");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "table {}: 1 tag(s) expired before 3000 ms (1970-01-01T00:00:03Z), 1 deleted\n",
            path(&s.0)
        )),
        "{out}"
    );
    assert_has(&out, "  deleted tag \"savepoint-1\": snapshot 1 (identifier 1), created 1000 ms, expired 2000 ms (1970-01-01T00:00:02Z)\n");
    assert_eq!(
        tag_names(&s.0),
        ["savepoint-12", "savepoint-2", "savepoint-5"]
    );

    let (code, out, _) = tags_expire(&s.0, "--now-ms 99999 --json");
    assert_eq!(code, Some(0), "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        doc,
        serde_json::json!({
            "now_ms": 99999,
            "dry_run": false,
            "expired": [
                {"name": "savepoint-2", "snapshot_id": 2, "identifier": 2, "create_time_ms": 2000, "expire_time_ms": 3000, "outcome": "deleted"},
                {"name": "savepoint-12", "snapshot_id": 4, "identifier": 12, "create_time_ms": 12000, "expire_time_ms": 13000, "outcome": "deleted"}
            ],
            "kept": [
                {"name": "savepoint-5", "snapshot_id": 3, "identifier": 5, "create_time_ms": 5000, "expire_time_ms": null}
            ],
            "problems": []
        })
    );
    assert_eq!(tag_names(&s.0), ["savepoint-5"]);
    // Snapshots and the hint are untouched, byte for byte.
    let after = files(&s.0);
    let untagged = |m: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        m.iter()
            .filter(|(k, _)| !k.starts_with("tag/"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(untagged(&after), untagged(&before));
    // Nothing left to expire; the default time is the system clock.
    let (code, out, _) = tags_expire(&s.0, "");
    assert_eq!(code, Some(0));
    assert_has(&out, ": 0 tag(s) expired before ");
    assert_eq!(tag_names(&s.0), ["savepoint-5"]);
}

/// The coordinator whose tags were expired goes on: it commits, tags a new
/// savepoint, and aborts a savepoint whose tag is gone (the abort deletes
/// that tag by name: a missing tag is fine).
#[test]
fn a_coordinator_goes_on_after_its_tags_expired() {
    let s = Scratch::new("issue25-tags", "running");
    let mut job = tagged_table(&s.0);
    let (code, out, err) = tags_expire(&s.0, "--now-ms 20000");
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(tag_names(&s.0), ["savepoint-5"]);
    job.commit(13, true, 21000);
    assert_eq!(tag_names(&s.0), ["savepoint-13", "savepoint-5"]);
    job.abort(12);
    job.abort(13);
    assert_eq!(tag_names(&s.0), ["savepoint-5"]);
    job.commit(14, false, 22000);
    job.commit(END, false, 23000);
    let (code, out, _) = sinkcoord(&["inspect", path(&s.0)]);
    assert_eq!(code, Some(0), "{out}");
    assert_has(
        &out,
        "commit user \"job\": last identifier END in snapshot 7",
    );
}

#[test]
fn bad_input_is_refused_with_its_exit_status() {
    let s = Scratch::new("issue25-tags", "bad");
    tagged_table(&s.0);
    let before = files(&s.0);
    // Usage errors: exit 2, before anything is read.
    for args in [
        &["tags", "expire", path(&s.0), "--now-ms", "yesterday"][..],
        &["tags", "expire", path(&s.0), "--now-ms", "-1"],
        &[
            "tags",
            "expire",
            path(&s.0),
            "--now-ms",
            "18446744073709551616",
        ],
        &["tags", "expire"],
        &["tags", "expire", path(&s.0), "--fuel", "1000000"],
        &["tags"],
        &["tags", "prune", path(&s.0)],
    ] {
        let (code, out, err) = sinkcoord(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    assert_eq!(files(&s.0), before);
    // A table that does not exist, or a URL that is not one: exit 1.
    let (code, _, err) = sinkcoord(&["tags", "expire", path(&s.0.join("missing"))]);
    assert_eq!(code, Some(1), "{err}");
    assert_has(&err, "cannot open the table");
    let (code, _, err) = sinkcoord(&["tags", "expire", "ftp://host/table"]);
    assert_eq!(code, Some(1), "{err}");
    assert_has(&err, "unknown scheme");

    // A tag that does not decode is kept and named; the others are still
    // expired; exit 1.
    std::fs::write(s.0.join("tag/savepoint-7"), b"\x01garbage").unwrap();
    let (code, out, err) = tags_expire(&s.0, "--now-ms 99999");
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("\"tag/savepoint-7\": ")
            && out.contains("kept: its expire time cannot be read"),
        "{out}"
    );
    assert_has(&err, "1 problem(s)");
    assert_eq!(tag_names(&s.0), ["savepoint-5", "savepoint-7"]);
    let (code, out, _) = tags_expire(&s.0, "--json");
    assert_eq!(code, Some(1));
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["problems"].as_array().unwrap().len(), 1, "{out}");
}

/// A Flink connector table: its root is refused (nothing deleted) with the
/// directory to give instead; `log/` expires like any table.
#[test]
fn a_flink_tables_tags_expire_through_its_log() {
    let s = Scratch::new("issue25-tags", "flink");
    let log = s.0.join("log");
    std::fs::create_dir_all(s.0.join("data")).unwrap();
    std::fs::write(s.0.join("data/part-0"), b"rows").unwrap();
    tagged_table(&log);
    let before = files(&log);
    let (code, out, err) = tags_expire(&s.0, "--now-ms 99999");
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("Flink connector") && err.contains(path(&log)),
        "{err}"
    );
    assert_has(&err, "nothing was deleted");
    assert_eq!(files(&log), before);
    let (code, out, err) = sinkcoord(&["tags", "expire", path(&log), "--now-ms", "99999"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_has(&out, "3 deleted");
    assert_eq!(tag_names(&log), ["savepoint-5"]);
    assert_eq!(std::fs::read(s.0.join("data/part-0")).unwrap(), b"rows");
}

/// `file://` is the same table as its directory.
#[test]
fn a_file_url_works_like_its_directory() {
    let s = Scratch::new("issue25-tags", "file-url");
    tagged_table(&s.0);
    let url = format!("file://{}", path(&s.0));
    let (code, out, err) = sinkcoord(&["tags", "expire", &url, "--now-ms", "2001"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_has(&out, "1 deleted");
    assert_eq!(
        tag_names(&s.0),
        ["savepoint-12", "savepoint-2", "savepoint-5"]
    );
}

/// On S3 (moto on loopback): the same expiry through the object store.
#[test]
fn tags_expire_on_s3() {
    let moto = Moto::start().unwrap_or_else(|e| panic!("{e}"));
    let url = moto.fresh_url("cli-tags");
    let run = |args: &[&str]| sinkcoord_on_s3(&moto, args);
    // The table is made locally, then copied key by key.
    let s = Scratch::new("issue25-tags", "s3");
    tagged_table(&s.0);
    let mut store = moto.open(&url).unwrap();
    for (key, value) in files(&s.0) {
        assert!(store.put_if_absent(&key, &value).unwrap(), "{key}");
    }
    let listed = |store: &mut sink_coordinator_host::storage::AnyStorage, prefix: &str| {
        store.list(prefix).unwrap()
    };
    let snapshots = listed(&mut store, "snapshot/");
    assert_eq!(snapshots.len(), 4);
    let (code, out, err) = run(&["tags", "expire", &url, "--now-ms", "3001", "--dry-run"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_has(&out, "  would delete tag \"savepoint-2\"");
    assert_eq!(listed(&mut store, "tag/").len(), 4);
    let (code, out, err) = run(&["tags", "expire", &url, "--now-ms", "3001"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_has(&out, "2 deleted");
    assert_eq!(
        listed(&mut store, "tag/"),
        ["tag/savepoint-12", "tag/savepoint-5"]
    );
    assert_eq!(listed(&mut store, "snapshot/"), snapshots);
    let (code, out, _) = run(&["inspect", &url]);
    assert_eq!(code, Some(0), "{out}");
    assert_has(&out, "2 tag(s)");
}

/// `tags expire` run again and again while a coordinator commits a
/// savepoint at every checkpoint (its tags expire 5 ms after creation) and
/// aborts every third one after its commit (the abort deletes that tag by
/// name, racing the expiry): every call of the coordinator succeeds, every
/// checkpoint has its snapshot, and the table is healthy at the end.
#[test]
fn expiry_races_a_committing_and_aborting_coordinator() {
    let s = Scratch::new("issue25-tags", "race");
    let mut job = Job::new(&s.0, "job", Some(5));
    job.commit(1, true, 10);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let table = path(&s.0).to_string();
    let expirer = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut runs = 0u32;
            let mut deleted = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || runs < 3 {
                let (code, out, err) =
                    sinkcoord(&["tags", "expire", &table, "--now-ms", "18446744073709551615"]);
                assert_eq!(code, Some(0), "{out}{err}");
                deleted += out.matches("\n  deleted tag ").count();
                runs += 1;
            }
            (runs, deleted)
        })
    };
    const CHECKPOINTS: u64 = 200;
    for cp in 2..=CHECKPOINTS {
        job.commit(cp, true, 10 * cp);
        if cp % 3 == 0 {
            job.abort(cp);
        }
    }
    job.commit(END, false, 10 * CHECKPOINTS + 10);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (runs, deleted) = expirer.join().unwrap();
    assert!(runs >= 3 && deleted > 0, "{runs} runs, {deleted} deleted");
    let (code, out, err) = tags_expire(&s.0, "--now-ms 18446744073709551615");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(tag_names(&s.0).is_empty(), "{:?}", tag_names(&s.0));
    let (code, out, err) = sinkcoord(&["inspect", "--json", path(&s.0)]);
    assert_eq!(code, Some(0), "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let identifiers: Vec<Value> = doc["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["identifier"].clone())
        .collect();
    let mut want: Vec<Value> = (1..=CHECKPOINTS).map(Value::from).collect();
    want.push(Value::from("end"));
    assert_eq!(identifiers, want);
}
