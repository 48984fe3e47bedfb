//! `sinkcoord`: the command-line host of the sink coordinator component.
//!
//! Exit codes: 0 success (a replay whose steps returned errors still
//! succeeds), 1 the host failed (unreadable file, component failure), 2 the
//! input is malformed or the command line is wrong. Nothing panics on any
//! input; every failure is a message on stderr.
//!
//! Each subcommand is one variant of [`Command`] and one `fn` below; a new
//! subcommand adds both.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use sink_coordinator_host::engine::{Runtime, RuntimeOptions, EMBEDDED_WASM, EMBEDDED_WASM_PATH};
use sink_coordinator_host::replay::{self, Mode, ReplayError};
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_host::{component::ComponentTable, render};

#[derive(Parser, Debug)]
#[command(
    name = "sinkcoord",
    version,
    about = "Host for the exactly-once sink coordinator component"
)]
struct Cli {
    /// Run this component file instead of the embedded one.
    #[arg(long, global = true, value_name = "FILE")]
    component: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay a trace (TRACE-FORMAT) on a fresh in-memory table; print the result document.
    Replay(ReplayArgs),
    /// Print the embedded component's path and size.
    Wasm,
    /// Print the snapshots and tags of a table kept in a local directory.
    Inspect(InspectArgs),
    /// Simulate a streaming job (writers, checkpoints, savepoints, failovers,
    /// storage faults, traps) driving the coordinator; check invariants after
    /// every step. The table directory is wiped at the start.
    Simulate(sink_coordinator_host::sim::cli::SimulateArgs),
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// Run the Rust core natively instead of the component.
    #[arg(long)]
    native: bool,
    /// Also write the state bytes of every successful `checkpoint` step to FILE, one
    /// JSON line each: {"step": I, "instance": NAME, "checkpoint": C, "state_hex": HEX}.
    #[arg(long, value_name = "FILE")]
    states: Option<PathBuf>,
    /// The trace file (JSON).
    trace: PathBuf,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// The table's root directory.
    dir: PathBuf,
    /// Print JSON (the `snapshots` and `tags` of a replay result) instead of text.
    #[arg(long)]
    json: bool,
}

/// A failure of a subcommand: what to print and how to exit.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn host(message: impl Into<String>) -> Self {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
    fn malformed(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print to stdout and exit 0; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let result = match &cli.command {
        Command::Replay(args) => cmd_replay(&cli, args),
        Command::Wasm => cmd_wasm(&cli),
        Command::Inspect(args) => cmd_inspect(&cli, args),
        Command::Simulate(args) => cmd_simulate(&cli, args),
    };
    match result.and_then(|text| print(&text)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "sinkcoord: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// Writes the whole output at once (after everything succeeded, so a
/// failure never leaves half a document on stdout).
fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::host(format!("cannot write to stdout: {e}")))
}

/// The component runtime; `SINKCOORD_CACHE_DIR` names an (optional,
/// trusted) directory of precompiled components.
fn runtime(cli: &Cli) -> Result<Runtime, Failure> {
    let options = RuntimeOptions {
        cache_dir: std::env::var_os("SINKCOORD_CACHE_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from),
        ..RuntimeOptions::default()
    };
    match &cli.component {
        Some(path) => Runtime::from_file(path, options).map_err(|e| {
            Failure::host(format!(
                "cannot load the component {}: {e:#}",
                path.display()
            ))
        }),
        None => Runtime::new(EMBEDDED_WASM, options)
            .map_err(|e| Failure::host(format!("cannot load the embedded component: {e:#}"))),
    }
}

fn cmd_replay(cli: &Cli, args: &ReplayArgs) -> Result<String, Failure> {
    let bytes = std::fs::read(&args.trace)
        .map_err(|e| Failure::host(format!("cannot read {}: {e}", args.trace.display())))?;
    // Validate before loading the component: a malformed trace costs no compile.
    let trace = sink_coordinator_host::trace::parse_slice(&bytes)
        .map_err(|m| Failure::malformed(format!("{}: {m}", args.trace.display())))?;
    let runtime;
    let mode = if args.native {
        Mode::Native
    } else {
        runtime = self::runtime(cli)?;
        Mode::Component(&runtime)
    };
    match replay::replay_with_states(&trace, mode) {
        Ok((result, states)) => {
            if let Some(path) = &args.states {
                let lines: String = states.iter().map(|s| s.render_line()).collect();
                std::fs::write(path, lines)
                    .map_err(|e| Failure::host(format!("cannot write {}: {e}", path.display())))?;
            }
            Ok(result.render())
        }
        Err(ReplayError::Malformed(m)) => {
            Err(Failure::malformed(format!("{}: {m}", args.trace.display())))
        }
        Err(e @ ReplayError::Host(_)) => Err(Failure::host(e.to_string())),
    }
}

fn cmd_wasm(cli: &Cli) -> Result<String, Failure> {
    match &cli.component {
        Some(path) => {
            let len = std::fs::metadata(path)
                .map_err(|e| Failure::host(format!("cannot read {}: {e}", path.display())))?
                .len();
            Ok(format!("{}\n{len} bytes\n", path.display()))
        }
        None => Ok(format!(
            "{EMBEDDED_WASM_PATH}\n{} bytes\n",
            EMBEDDED_WASM.len()
        )),
    }
}

fn cmd_inspect(cli: &Cli, args: &InspectArgs) -> Result<String, Failure> {
    let storage = LocalDirStorage::open_existing(&args.dir)
        .map_err(|e| Failure::host(format!("cannot open the table {}: {e}", args.dir.display())))?;
    let runtime = runtime(cli)?;
    let mut table =
        ComponentTable::new(&runtime, storage).map_err(|e| Failure::host(e.to_string()))?;
    let snapshots = table
        .list_snapshots()
        .map_err(|e| Failure::host(format!("cannot list snapshots: {e}")))?;
    let tags = table
        .list_tags()
        .map_err(|e| Failure::host(format!("cannot list tags: {e}")))?;
    if args.json {
        return Ok(render::render_table(&snapshots, &tags));
    }
    let mut out = format!(
        "table {}\n{} snapshot(s)\n",
        args.dir.display(),
        snapshots.len()
    );
    for s in &snapshots {
        out.push_str(&format!(
            "  snapshot {}: commit user {}, identifier {}, watermark {}, time {} ms, {} committable(s)\n",
            s.id,
            render::json_str(&s.commit_user),
            render::checkpoint(s.identifier),
            s.watermark.map_or_else(|| "none".into(), |w| w.to_string()),
            s.time_ms,
            s.committables.len(),
        ));
    }
    out.push_str(&format!("{} tag(s)\n", tags.len()));
    for t in &tags {
        out.push_str(&format!(
            "  tag {}: snapshot {} (identifier {}), created {} ms, expires {}\n",
            render::json_str(&t.name),
            t.snapshot_id,
            render::checkpoint(t.identifier),
            t.create_time_ms,
            t.expire_time_ms
                .map_or_else(|| "never".into(), |e| format!("{e} ms")),
        ));
    }
    Ok(out)
}

/// Exit 0 when every seed verified; 1 with the summary on stdout and the
/// first violation on stderr otherwise.
fn cmd_simulate(
    cli: &Cli,
    args: &sink_coordinator_host::sim::cli::SimulateArgs,
) -> Result<String, Failure> {
    let runtime = if args.native {
        None
    } else {
        Some(runtime(cli)?)
    };
    let report = sink_coordinator_host::sim::cli::simulate(args, runtime).map_err(Failure::host)?;
    if report.verified {
        return Ok(report.text);
    }
    print(&report.text)?;
    Err(Failure::host(format!(
        "invariant violated: {}",
        report.violation.unwrap_or_default()
    )))
}
