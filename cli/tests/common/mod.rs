//! Scratch files, tables and `sinkcoord` runs shared by the CLI's
//! integration tests.

// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

pub mod job;

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use sink_coordinator_testkit::moto::Moto;

/// Runs `sinkcoord` with `args`.
pub fn sinkcoord_output<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .args(args)
        .output()
        .expect("run sinkcoord")
}

/// Runs `cmd`: its exit status, stdout and stderr (as text).
pub fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let out = cmd.output().expect("run the command");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `sinkcoord <args> <path>`: its exit status, stdout and stderr.
pub fn sinkcoord_on(args: &[&str], path: &Path) -> (Option<i32>, String, String) {
    run(Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .args(args)
        .arg(path))
}

/// Runs `sinkcoord` with `args` against the moto server (through its
/// `AWS_*` environment): its exit status, stdout and stderr.
pub fn sinkcoord_on_s3(moto: &Moto, args: &[&str]) -> (Option<i32>, String, String) {
    run(Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .args(args)
        .envs(moto.env()))
}

/// A path as the `&str` argument of a command line.
pub fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A JSON document that `sinkcoord` printed (the text in the panic message
/// if it is not one).
pub fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The string field `key` of each object in the JSON array `list`.
pub fn strs<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    fields(list, key, Value::as_str)
}

/// The integer field `key` of each object in the JSON array `list`.
pub fn u64s(list: &Value, key: &str) -> Vec<u64> {
    fields(list, key, Value::as_u64)
}

fn fields<'a, T>(list: &'a Value, key: &str, read: fn(&'a Value) -> Option<T>) -> Vec<T> {
    let items = list
        .as_array()
        .unwrap_or_else(|| panic!("{list} is not an array"));
    let field = |o: &'a Value| read(&o[key]).unwrap_or_else(|| panic!("{o}: no {key:?}"));
    items.iter().map(field).collect()
}

/// Asserts that `text` (a command's output) contains `needle`, and shows
/// both when it does not.
#[track_caller]
pub fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} is not in:\n{text}");
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Makes `dir` a table with `n` snapshots of commit user "job" (one
/// committable `c<cp>` each, snapshot `cp` at `cp` ms), written by the
/// native core.
pub fn table_with_snapshots(dir: &Path, n: u64) {
    let mut job = job::Job::new(dir, "job", None);
    for cp in 1..=n {
        job.commit(cp, false, cp);
    }
}

/// A file in a per-process scratch directory (`sinkcoord-<test>-<pid>` under
/// the system's temp dir), removed on drop; the directory goes with its last
/// file (tests run in parallel threads and share it, so only an empty
/// directory is removed).
pub struct TempFile(PathBuf);

impl Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Writes `bytes` to `name` in the scratch directory of the test `test`.
pub fn temp_file(test: &str, name: &str, bytes: &[u8]) -> TempFile {
    let dir = std::env::temp_dir().join(format!("sinkcoord-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write scratch file");
    TempFile(path)
}

/// A fresh scratch directory `sinkcoord-<test>-<name>-<pid>` under the
/// system's temp dir, emptied first and removed on drop (one per test, so
/// tests in parallel threads never share it).
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(test: &str, name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("sinkcoord-{test}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// A fresh scratch directory holding `table/` and `outside/` (files a
    /// table must never reach).
    pub fn with_table(test: &str, name: &str) -> Self {
        let s = Scratch::new(test, name);
        std::fs::create_dir_all(s.table()).unwrap();
        std::fs::create_dir_all(s.outside()).unwrap();
        s
    }
    pub fn table(&self) -> PathBuf {
        self.0.join("table")
    }
    pub fn outside(&self) -> PathBuf {
        self.0.join("outside")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
