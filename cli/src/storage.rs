//! `sinkcoord storage`: the storage calls of the `storage` import on a table
//! given by URL (a directory, `file://`, `s3://`, `gs://`, `az://`), for
//! operators looking at a table's raw keys and for the storage conformance
//! suite's process cases (`race`, `fill`: the helper protocol of
//! `sink_coordinator_testkit::storage_conformance`).

use std::io::{BufRead, Write};

use clap::{Args, Subcommand};
use sink_coordinator::Storage;
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
