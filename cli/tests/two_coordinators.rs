//! Two coordinators, one table (issue 12, item 4), as two processes
//! (`sinkcoord storage commit`), on a local directory and on S3 (moto):
//!
//! - the same commit user (a split brain after a failover): both commit
//!   checkpoints 1..=N at the same time; no identifier is committed twice,
//!   and the user's identifiers increase along the log. The one that learns
//!   the other is ahead may stop with the core's fatal "already committed"
//!   (the detection SEMANTICS asks for); at most one stops, so the other
//!   commits through N (a CI run caught the stop that an earlier version of
//!   this test counted as a failure);
//! - two commit users: every checkpoint of each is committed exactly once,
//!   the snapshot ids are dense, and no snapshot is lost.
//!
//! Also prints each process's storage calls and wall time per commit (the
//! figures of the note).

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};

use sink_coordinator::table;
use sink_coordinator_host::storage::{open_url_with, AnyStorage};
use sink_coordinator_testkit::moto::Moto;

const CHECKPOINTS: u64 = 40;

fn spawn(env: &[(String, String)], url: &str, user: &str, tag: &str) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sinkcoord"));
    cmd.args(["storage", "commit", url, "--user", user, "--tag", tag])
        .args(["--checkpoints", &CHECKPOINTS.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("sinkcoord runs")
}

/// Runs two committers at once; returns their summary lines.
fn race(env: &[(String, String)], url: &str, a: (&str, &str), b: (&str, &str)) -> Vec<String> {
    let children = [spawn(env, url, a.0, a.1), spawn(env, url, b.0, b.1)];
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("the committer ends");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            stdout.trim().to_string()
        })
        .collect()
}

/// The snapshots, checked for dense ids.
fn snapshots(table: &mut AnyStorage) -> Vec<sink_coordinator::Snapshot> {
    let all = table::list_snapshots(table).expect("the table reads back");
    for (i, s) in all.iter().enumerate() {
        assert_eq!(s.id, i as u64 + 1, "snapshot ids are dense");
    }
    all
}

fn same_user(env: &[(String, String)], url: &str, table: &mut AnyStorage) {
    let lines = race(env, url, ("job", "A"), ("job", "B"));
    eprintln!("same commit user on {url}: {lines:?}");
    let stopped = lines.iter().filter(|l| l.contains("stopped at")).count();
    assert!(stopped <= 1, "both coordinators stopped: {lines:?}");
    for line in lines.iter().filter(|l| l.contains("stopped at")) {
        assert!(line.contains("already committed"), "{line}");
    }
    let all = snapshots(table);
    let mut last = 0;
    for s in &all {
        assert_eq!(s.commit_user, "job");
        assert!(
            s.identifier > last,
            "identifier {} committed again (or out of order) in snapshot {} after {last}",
            s.identifier,
            s.id
        );
        last = s.identifier;
    }
    // The last checkpoint of both is committed (by one of them).
    assert_eq!(last, CHECKPOINTS, "{all:?}");
}

fn two_users(env: &[(String, String)], url: &str, table: &mut AnyStorage) {
    let lines = race(env, url, ("job-a", "A"), ("job-b", "B"));
    eprintln!("two commit users on {url}: {lines:?}");
    let all = snapshots(table);
    let mut per_user: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for s in &all {
        per_user
            .entry(&s.commit_user)
            .or_default()
            .push(s.identifier);
        let tag = if s.commit_user == "job-a" { "A" } else { "B" };
        let want = vec![(0, format!("{tag}-{}", s.identifier).into_bytes())];
        assert_eq!(s.committables, want, "snapshot {}", s.id);
    }
    let every: Vec<u64> = (1..=CHECKPOINTS).collect();
    assert_eq!(per_user.get("job-a"), Some(&every), "job-a");
    assert_eq!(per_user.get("job-b"), Some(&every), "job-b");
    assert_eq!(all.len() as u64, 2 * CHECKPOINTS);
}

#[test]
fn two_coordinators_on_a_local_dir() {
    let base = std::env::temp_dir().join(format!("sinkcoord-two-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for (name, check) in [
        (
            "same",
            same_user as fn(&[(String, String)], &str, &mut AnyStorage),
        ),
        ("two", two_users),
    ] {
        let url = format!("file://{}", base.join(name).display());
        let mut table = open_url_with(&url, true, &[]).unwrap();
        check(&[], &url, &mut table);
    }
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn two_coordinators_on_s3() {
    let moto = Moto::start().unwrap_or_else(|e| panic!("{e}"));
    for check in [
        same_user as fn(&[(String, String)], &str, &mut AnyStorage),
        two_users,
    ] {
        let url = moto.fresh_url("two");
        let mut table = moto.open(&url).unwrap();
        check(&moto.env(), &url, &mut table);
    }
}
