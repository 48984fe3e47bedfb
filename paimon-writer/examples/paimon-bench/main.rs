//! Paimon commit benchmark, the Rust side (issue 22, item 6): builds a table's history
//! through the core and measures the core's commits on it, on the Paimon format and on
//! the native one. tests/paimon/bench.py runs it, measures pypaimon's commits on copies of
//! the same tables and prints the combined table (tests/paimon/bench.sh runs both).
//!
//! Usage (each prints one JSON line):
//! - `paimon-bench history --format paimon|native --snapshots N --out DIR`: N snapshots
//!   of the `history` user, committed through the core in memory, then written under DIR
//!   (in memory first: the history is the input, not what is measured, and 10,000
//!   commits to a directory would take most of the run's budget);
//! - `paimon-bench measure --format F --table DIR --commits K [--fsync] [--user U]`: a
//!   coordinator of user U (default `bench`) starts on DIR and commits checkpoints 1..=K;
//!   `--fsync` makes every write durable as the host's local directory storage does (file
//!   and directory fsync);
//! - `paimon-bench measure --format F --memory N --commits K`: the same on a history of N
//!   in memory (the core's own work, no I/O).

mod measure;

use measure::{build_history, counted, measure, parse_format, run_json, BENCH_USER};
use serde_json::json;
use sink_coordinator::{MemStorage, Storage, StorageError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A table in a local directory, each write atomic as the host's local storage makes it:
/// the value goes to a temporary file that is then linked (create-once) or renamed
/// (overwrite) into place. With `fsync`, the file and then its directory are synced as
/// the host does; without, the writes are as durable as pypaimon's (which never syncs).
struct DirStorage {
    root: PathBuf,
    fsync: bool,
}

static TMP: AtomicU64 = AtomicU64::new(0);

fn io(e: std::io::Error) -> StorageError {
    StorageError::Io(e.to_string())
}

impl DirStorage {
    /// Writes `value` to a fresh temporary file beside `key`'s path; returns both paths.
    fn stage(&self, key: &str, value: &[u8]) -> Result<(PathBuf, PathBuf), StorageError> {
        let p = self.root.join(key);
        let dir = p.parent().expect("a key has a parent directory");
        std::fs::create_dir_all(dir).map_err(io)?;
        let tmp = dir.join(format!(
            ".bench-{}-{}.tmp",
            std::process::id(),
            TMP.fetch_add(1, Ordering::Relaxed)
        ));
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(value).map_err(io)?;
        if self.fsync {
            f.sync_all().map_err(io)?;
        }
        Ok((tmp, p))
    }

    fn sync_dir(&self, p: &Path) -> Result<(), StorageError> {
        if self.fsync {
            let dir = p.parent().expect("a key has a parent directory");
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io)?;
        }
        Ok(())
    }
}

impl Storage for DirStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        match std::fs::read(self.root.join(key)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(e)),
        }
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        let (tmp, p) = self.stage(key, value)?;
        // link(2) fails if the name exists: the atomic create-once.
        let linked = std::fs::hard_link(&tmp, &p);
        std::fs::remove_file(&tmp).map_err(io)?;
        match linked {
            Ok(()) => self.sync_dir(&p).map(|()| true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io(e)),
        }
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        let (tmp, p) = self.stage(key, value)?;
        std::fs::rename(&tmp, &p).map_err(io)?;
        self.sync_dir(&p)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        match std::fs::remove_file(self.root.join(key)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        }
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let (dir, start) = match prefix.rfind('/') {
            Some(i) => (&prefix[..i + 1], &prefix[i + 1..]),
            None => ("", prefix),
        };
        let rd = match std::fs::read_dir(self.root.join(dir)) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(e)),
        };
        let mut keys = Vec::new();
        for e in rd {
            let name = e.map_err(io)?.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(start) && !name.starts_with('.') {
                keys.push(format!("{dir}{name}"));
            }
        }
        keys.sort();
        Ok(keys)
    }
}

/// Writes every record of `st` under `out` as a file (no fsync: a copy of the input).
fn dump(st: &MemStorage, out: &Path) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    for (key, value) in &st.map {
        let p = out.join(key);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("a directory");
        std::fs::write(&p, value).expect("a history file written");
        files += 1;
        bytes += value.len() as u64;
    }
    (files, bytes)
}

fn usage() -> ! {
    eprintln!(
        "usage: paimon-bench history --format paimon|native --snapshots N --out DIR\n       \
         paimon-bench measure --format paimon|native (--table DIR [--fsync] | --memory N) --commits K \
         [--user U]"
    );
    std::process::exit(2);
}

/// `--name value` pairs and bare `--flag`s.
fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).map(String::as_str)
}

fn num(args: &[String], name: &str) -> Option<u64> {
    arg(args, name).map(|v| v.parse().unwrap_or_else(|_| usage()))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fmt_name = arg(&args, "--format").unwrap_or_else(|| usage());
    let kind = parse_format(fmt_name).unwrap_or_else(|| usage());
    match args.first().map(String::as_str) {
        Some("history") => {
            let n = num(&args, "--snapshots").unwrap_or_else(|| usage());
            let out = PathBuf::from(arg(&args, "--out").unwrap_or_else(|| usage()));
            let t = std::time::Instant::now();
            let mut st = counted(MemStorage::default());
            build_history(&mut st, kind, n);
            let built_ms = t.elapsed().as_millis() as u64;
            let (files, bytes) = dump(&st.storage.inner, &out);
            println!(
                "{}",
                json!({ "format": fmt_name, "snapshots": n, "files": files, "bytes": bytes,
                        "build_ms": built_ms, "total_ms": t.elapsed().as_millis() as u64 })
            );
        }
        Some("measure") => {
            let commits = num(&args, "--commits").unwrap_or_else(|| usage());
            let user = arg(&args, "--user").unwrap_or(BENCH_USER);
            let line = if let Some(n) = num(&args, "--memory") {
                let mut st = counted(MemStorage::default());
                build_history(&mut st, kind, n);
                run_json(
                    &measure(&mut st, kind, user, commits),
                    fmt_name,
                    "memory",
                    n,
                )
            } else {
                let root = PathBuf::from(arg(&args, "--table").unwrap_or_else(|| usage()));
                let fsync = args.iter().any(|a| a == "--fsync");
                let history = num(&args, "--history").unwrap_or(0);
                let mut st = counted(DirStorage { root, fsync });
                let storage = if fsync { "dir-fsync" } else { "dir" };
                run_json(
                    &measure(&mut st, kind, user, commits),
                    fmt_name,
                    storage,
                    history,
                )
            };
            println!("{line}");
        }
        _ => usage(),
    }
}
