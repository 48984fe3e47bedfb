//! `sinkcoord storage`: the storage calls of the `storage` import on a table
//! given by URL (a directory, `file://`, `s3://`, `gs://`, `az://`), for
//! operators looking at a table's raw keys and for the storage conformance
//! suite's process cases (`race`, `fill`: the helper protocol of
//! `sink_coordinator_testkit::storage_conformance`).

use std::io::{BufRead, Write};

use clap::{Args, Subcommand};
use sink_coordinator::{Config, Coordinator, Entry, OwnedEnv, Storage, StorageError};
use sink_coordinator_host::clock::SystemClock;
use sink_coordinator_host::storage::{open_url_with, AnyStorage};
use sink_coordinator_testkit::render;
use sink_coordinator_testkit::storage_conformance::fill_value;

use crate::{clip, Failure};

#[derive(Args, Debug)]
pub struct StorageArgs {
    #[command(subcommand)]
    op: Op,
}

#[derive(Subcommand, Debug)]
enum Op {
    /// Print the keys starting with PREFIX, in byte order.
    List {
        /// The table URL (or directory).
        table: String,
        #[arg(default_value = "")]
        prefix: String,
    },
    /// Print a key's value (raw bytes); exit 1 if it is absent.
    Get {
        /// The table URL (or directory).
        table: String,
        key: String,
    },
    /// Create KEY with VALUE if it does not exist; print `created` or `existed`.
    PutIfAbsent {
        /// The table URL (or directory).
        table: String,
        key: String,
        value: String,
    },
    /// Delete KEY (a missing key is fine).
    Delete {
        /// The table URL (or directory).
        table: String,
        key: String,
    },
    /// Conformance helper: print `ready`, wait for a line on stdin, then
    /// put-if-absent PREFIX/0 .. PREFIX/(KEYS-1) with VALUE, printing
    /// `created KEY` or `existed KEY` for each.
    #[command(hide = true)]
    Race {
        table: String,
        #[arg(long)]
        prefix: String,
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        keys: u64,
        #[arg(long)]
        value: String,
    },
    /// Conformance helper: put-if-absent PREFIX/0 .. PREFIX/(COUNT-1), each
    /// a SIZE-byte value derived from its key, printing `ok KEY` after each.
    #[command(hide = true)]
    Fill {
        table: String,
        #[arg(long)]
        prefix: String,
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        count: u64,
        #[arg(long, value_parser = clap::value_parser!(u64).range(0..=(64 << 20)))]
        size: u64,
    },
    /// Load helper: one coordinator (native core, parallelism 1, system
    /// clock) of commit user USER commits checkpoints 1..=N, one committable
    /// `TAG-<n>` each; prints the snapshots it wrote, its storage calls and
    /// the wall time. Two of these on one table are two coordinators racing.
    #[command(hide = true)]
    Commit {
        table: String,
        #[arg(long)]
        user: String,
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        checkpoints: u64,
        #[arg(long)]
        tag: String,
    },
}

/// Counts the storage calls of a coordinator.
struct Counting<S> {
    inner: S,
    calls: u64,
}

impl<S: Storage> Storage for Counting<S> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.calls += 1;
        self.inner.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.calls += 1;
        self.inner.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.calls += 1;
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.calls += 1;
        self.inner.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.calls += 1;
        self.inner.list(prefix)
    }
}

/// `storage commit`: see [`Op::Commit`].
fn commit(table: &str, user: &str, checkpoints: u64, tag: &str) -> Result<String, Failure> {
    let counting = Counting {
        inner: open(table, true)?,
        calls: 0,
    };
    let mut env = OwnedEnv::new(counting, SystemClock);
    let started = std::time::Instant::now();
    let mut c = Coordinator::new(Config::new(1, user), None);
    c.start(&mut env).map_err(failed)?;
    let mut written = 0u64;
    let mut errors = 0u64;
    let mut stopped = String::new();
    for cp in 1..=checkpoints {
        let entry = Entry {
            checkpoint: cp,
            committables: vec![format!("{tag}-{cp}").into_bytes()].into(),
            watermark: None,
            savepoint: false,
        };
        // Two coordinators of one commit user (a split brain): once this one
        // learns that the other committed past its next checkpoint, the core
        // refuses the event (fatal `invalid-event`, "already committed") —
        // the detection SEMANTICS asks for, not a failure of the race.
        if let Err(e) = c.event(&mut env, 0, 0, entry) {
            stopped = format!(", stopped at checkpoint {cp}: {e}");
            break;
        }
        c.checkpoint(&mut env, cp).map_err(failed)?;
        // A storage error leaves the checkpoint to the next completion
        // (SEMANTICS 8); count it and go on.
        match c.checkpoint_complete(&mut env, cp) {
            Ok(outcome) => written += outcome.committed.len() as u64,
            Err(_) => errors += 1,
        }
    }
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(format!(
        "committed {written} snapshot(s), {errors} error(s), {} storage call(s), {ms:.1} ms{stopped}\n",
        env.storage.calls
    ))
}

fn open(table: &str, create: bool) -> Result<AnyStorage, Failure> {
    open_url_with(table, create, &[]).map_err(|e| Failure::host(e.to_string()))
}

fn failed(e: impl std::fmt::Display) -> Failure {
    Failure::host(e.to_string())
}

/// Prints one line at once (the helper protocol is read line by line).
fn say(line: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::host(format!("cannot write to stdout: {e}")))
}

pub fn cmd_storage(args: &StorageArgs) -> Result<String, Failure> {
    match &args.op {
        Op::Commit {
            table,
            user,
            checkpoints,
            tag,
        } => commit(table, user, *checkpoints, tag),
        Op::List { table, prefix } => {
            let keys = open(table, false)?.list(prefix).map_err(failed)?;
            Ok(keys
                .iter()
                .map(|k| format!("{}\n", render::json_str(k)))
                .collect())
        }
        Op::Get { table, key } => match open(table, false)?.get(key).map_err(failed)? {
            Some(value) => {
                let mut out = std::io::stdout().lock();
                out.write_all(&value)
                    .and_then(|()| out.flush())
                    .map_err(|e| Failure::host(format!("cannot write to stdout: {e}")))?;
                Ok(String::new())
            }
            None => Err(Failure::host(format!("{}: no such key", clip(key, 200)))),
        },
        Op::PutIfAbsent { table, key, value } => {
            let created = open(table, true)?
                .put_if_absent(key, value.as_bytes())
                .map_err(failed)?;
            Ok(if created { "created\n" } else { "existed\n" }.into())
        }
        Op::Delete { table, key } => {
            open(table, false)?.delete(key).map_err(failed)?;
            Ok(String::new())
        }
        Op::Race {
            table,
            prefix,
            keys,
            value,
        } => {
            let mut st = open(table, true)?;
            // One call before the start: an object store's client has its
            // connection (and credentials) ready, so both racers start even.
            st.list(&format!("{prefix}/")).map_err(failed)?;
            say("ready")?;
            let mut go = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut go)
                .map_err(|e| Failure::host(format!("cannot read stdin: {e}")))?;
            for i in 0..*keys {
                let key = format!("{prefix}/{i}");
                let created = st.put_if_absent(&key, value.as_bytes()).map_err(failed)?;
                say(&format!(
                    "{} {key}",
                    if created { "created" } else { "existed" }
                ))?;
            }
            Ok(String::new())
        }
        Op::Fill {
            table,
            prefix,
            count,
            size,
        } => {
            let mut st = open(table, true)?;
            let size = usize::try_from(*size).map_err(failed)?;
            for i in 0..*count {
                let key = format!("{prefix}/{i}");
                st.put_if_absent(&key, &fill_value(&key, size))
                    .map_err(failed)?;
                say(&format!("ok {key}"))?;
            }
            Ok(String::new())
        }
    }
}
