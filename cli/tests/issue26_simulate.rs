//! Issue 26, `sinkcoord simulate`: a seed range that would wrap around is a
//! usage error; the table is wiped only if everything in it, at any depth,
//! is a file the coordinator writes; a failure of the table's storage
//! itself (a full disk, an unreachable object store) is named as such, with
//! exit status 3, not as "invariant violated".

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{sinkcoord_output as sinkcoord, text, Scratch};

/// A short native run on `table` (a few checkpoints, one writer).
fn short_run(table: &Path) -> Output {
    sinkcoord(&[
        "simulate",
        "--native",
        "--quiet",
        "--writers",
        "1",
        "--checkpoints",
        "3",
        "--table",
        table.to_str().unwrap(),
    ])
}

#[test]
fn a_seed_range_past_u64_max_is_a_usage_error() {
    // Before: the range wrapped around, ran nothing and printed
    // "verdict: verified (2 seeds), 0 violations" with exit 0.
    for (seed, seeds) in [
        ("18446744073709551615", "2"),
        ("18446744073709551600", "100"),
        ("18446744073709551615", "100000000"),
    ] {
        let out = sinkcoord(&["simulate", "--memory", "--seed", seed, "--seeds", seeds]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{seed} {seeds}: {err}");
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
        assert!(
            err.contains("out of range") && err.contains(seed),
            "{seed}: {err}"
        );
        assert!(!err.contains("verified"), "{err}");
    }
    // The last seeds there are still run.
    let out = sinkcoord(&[
        "simulate",
        "--memory",
        "--native",
        "--quiet",
        "--writers",
        "1",
        "--checkpoints",
        "2",
        "--seed",
        "18446744073709551614",
        "--seeds",
        "2",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("seeds 18446744073709551614..=18446744073709551615")
            && stdout.contains("verified (2 seeds)"),
        "{stdout}"
    );
    // ... and they did run (`seed + seeds` wrapped to 0 here too, so the
    // loop ran no seed).
    assert!(!stdout.contains("checks: 0 events delivered"), "{stdout}");
}

#[test]
fn the_wipe_check_looks_at_every_file_and_keeps_foreign_ones() {
    let s = Scratch::new("issue26-sim", "wipe");
    let table = s.0.join("table");
    // A table written by the simulator is wiped and written again.
    for _ in 0..2 {
        let out = short_run(&table);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    assert!(table.join("snapshot").is_dir());

    let outside = s.0.join("outside");
    std::fs::write(&outside, b"keep me").unwrap();
    // Each of these was deleted with the table before (only the names at
    // the top were looked at); now each is refused by its path.
    type Plant = fn(&Path, &Path);
    let cases: &[(&str, Plant)] = &[
        ("snapshot/notes.txt", |t, _| {
            std::fs::write(t.join("snapshot/notes.txt"), b"x").unwrap()
        }),
        ("snapshot/00000000000000000000", |t, _| {
            std::fs::write(t.join("snapshot/00000000000000000000"), b"x").unwrap()
        }),
        ("hint/notes", |t, _| {
            std::fs::create_dir_all(t.join("hint")).unwrap();
            std::fs::write(t.join("hint/notes"), b"x").unwrap()
        }),
        ("tag/release-1", |t, _| {
            std::fs::create_dir_all(t.join("tag")).unwrap();
            std::fs::write(t.join("tag/release-1"), b"x").unwrap()
        }),
        ("snapshot/backup", |t, _| {
            std::fs::create_dir_all(t.join("snapshot/backup")).unwrap();
            std::fs::write(t.join("snapshot/backup/00000000000000000001"), b"x").unwrap()
        }),
        ("snapshot/00000000000000000009", |t, o| {
            symlink(o, t.join("snapshot/00000000000000000009")).unwrap()
        }),
        ("snapshot/00000000000000000001", |t, _| {
            let key = t.join("snapshot/00000000000000000001");
            let _ = std::fs::remove_file(&key);
            std::fs::create_dir_all(&key).unwrap();
            std::fs::write(key.join("data.parquet"), b"x").unwrap()
        }),
        ("data", |t, _| {
            std::fs::create_dir_all(t.join("data")).unwrap()
        }),
    ];
    for (path, plant) in cases {
        let _ = std::fs::remove_dir_all(&table);
        let out = short_run(&table);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        plant(&table, &outside);
        let files_before = count_files(&table);
        let out = short_run(&table);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{path}: {err}");
        assert!(
            err.contains("refusing to wipe") && err.contains(path),
            "{path}: {err}"
        );
        assert_eq!(
            count_files(&table),
            files_before,
            "{path}: something was deleted"
        );
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
}

fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let kind = entry.file_type().unwrap();
        n += 1;
        if kind.is_dir() {
            n += count_files(&entry.path());
        }
    }
    n
}

#[test]
fn a_full_disk_is_a_storage_failure_not_a_violation() {
    let s = Scratch::new("issue26-sim", "efbig");
    let table = s.0.join("table");
    // Files past 1 KiB cannot be written (EFBIG, the signal ignored): the
    // first large snapshot fails on the real storage, as on a full disk.
    // Before: "invariant violated: ... storage errors do not stop", exit 1.
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 1 && trap '' XFSZ && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_sinkcoord"))
        .args([
            "simulate",
            "--native",
            "--quiet",
            "--writers",
            "64",
            "--checkpoints",
            "5",
            "--seeds",
            "3",
            "--table",
            table.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{stdout}{err}");
    assert!(
        err.contains("storage failure") && err.contains("File too large"),
        "{err}"
    );
    assert!(!err.contains("invariant violated"), "{err}");
    assert!(
        stdout.contains("storage failure: seed 1") && !stdout.contains("violated an invariant"),
        "{stdout}"
    );
}

#[test]
fn an_unreachable_object_store_is_a_storage_failure() {
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .args([
            "simulate",
            "--quiet",
            "--table",
            "s3://sinkcoord-test/unreachable",
        ])
        // Port 9 (discard) refuses connections on loopback.
        .env("AWS_ENDPOINT", "http://127.0.0.1:9")
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("storage failure") && err.contains("s3://"),
        "{err}"
    );
}

#[test]
fn the_help_documents_the_exit_status() {
    let out = sinkcoord(&["simulate", "--help"]);
    let help = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        help.contains("Exit status") && help.contains("3 the table's storage"),
        "{help}"
    );
}
