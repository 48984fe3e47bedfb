//! `sinkcoord`: the command-line host of the sink coordinator component.
//!
//! Exit codes: 0 success (a replay whose steps returned errors still
//! succeeds), 1 the host failed (unreadable file, component failure, an
//! invariant violated in `simulate`), 2 the input is malformed or the
//! command line is wrong, 3 the table's storage failed in `simulate` (a
//! full disk, an object store refusing: no verdict on the coordinator).
//! Nothing panics on any input; every failure is a message on stderr.
//!
//! Each subcommand is one variant of [`Command`] and one `cmd_*` function
//! (`replay` and `wasm` here, `inspect`, `simulate`, `script`, `storage` and
//! `tags` in their modules); a new subcommand adds both. The library work lives in the embedding crate
//! (`sink-coordinator-host`) and the test kit (`sink-coordinator-testkit`);
//! this crate holds the command line and the progress bar only.
//!
//! Every numeric option is checked against its documented range while the
//! command line is parsed (README, "Limits"): out of range is a usage error
//! (exit 2) before anything runs. Echoed input in error messages is cut to a
//! few hundred bytes.

mod expire;
mod expire_paimon;
mod expire_report;
mod inspect;
mod inspect_paimon;
mod layout;
mod limits;
mod order;
mod picture;
mod report;
mod script;
mod simulate;
mod storage;
mod table;
mod tags;
mod wipe;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use sha2::{Digest, Sha256};
use sink_coordinator_host::artifact::{EMBEDDED_WASM, EMBEDDED_WASM_NAME};
use sink_coordinator_host::engine::{Runtime, RuntimeOptions};
use sink_coordinator_testkit::replay::{self, Engine, ReplayError};

use inspect::InspectArgs;
use limits::{LimitArgs, RuntimeLimitArgs};
use simulate::SimulateArgs;
use sink_coordinator::Limits;

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
    /// Include the wasm backtrace in trap messages (otherwise one line).
    #[arg(long, short, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay a trace (TRACE-FORMAT) on a fresh in-memory table; print the result document.
    Replay(ReplayArgs),
    /// Print the embedded component's name, size and sha256, or write it to a
    /// file (for other runtimes).
    Wasm(WasmArgs),
    /// Print the snapshots and tags of a table (a directory or a table URL:
    /// file://, s3://, gs://, az://), a summary per commit user, or
    /// (--timeline) its commits and tags in order.
    #[command(
        after_help = "Exit status: 0 a healthy table; 1 the table cannot be read, or it \
        has problems (each on its own line of the listing, which is still printed); 2 a usage \
        error."
    )]
    Inspect(InspectArgs),
    /// Operate on a table's tags: `expire` deletes those past their expire time.
    Tags(tags::TagsArgs),
    /// Expire a table's old snapshots and expired tags, and list or delete the
    /// orphan data files of a Paimon table (docs/retention.md).
    Expire(expire::ExpireArgs),
    /// Create a table: `create --format paimon --schema COLUMNS` writes an Apache Paimon
    /// append table's schema (docs/paimon.md).
    Table(table::TableArgs),
    /// Simulate a streaming job (writers, checkpoints, savepoints, failovers,
    /// storage faults, traps) driving the coordinator; check invariants after
    /// every step. The table directory is wiped at the start.
    #[command(
        after_help = "Exit status: 0 every seed verified; 1 an invariant was violated \
        (the first violation on stderr), or the run could not start (also: the table holds \
        a file the coordinator does not write, so it is not wiped); 2 a usage error (an \
        option out of range, a seed range past 18446744073709551615); 3 the table's storage \
        itself failed (a full disk, an object store refusing or unreachable; not an injected \
        fault): the campaign stops there and says nothing about the coordinator."
    )]
    Simulate(SimulateArgs),
    /// Write a trace's resolved call script (JSON lines) for a host that only
    /// marshals calls, or render the result document from its raw results.
    Script(script::ScriptArgs),
    /// The storage calls on a table given by URL: list, get, put-if-absent, delete.
    Storage(storage::StorageArgs),
}

#[derive(Args, Debug)]
struct WasmArgs {
    /// Write the component (the embedded one, or `--component FILE`) to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// `--table-format`: the coordinator's table format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FormatArg {
    /// This project's snapshot log.
    Native,
    /// An Apache Paimon append table.
    Paimon,
}

impl FormatArg {
    pub(crate) fn kind(self) -> sink_coordinator::TableFormatKind {
        match self {
            FormatArg::Native => sink_coordinator::TableFormatKind::Native,
            FormatArg::Paimon => sink_coordinator::TableFormatKind::Paimon,
        }
    }
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// Run the Rust core natively instead of the component.
    #[arg(long)]
    native: bool,
    #[command(flatten)]
    limits: LimitArgs,
    /// Also write the state bytes of every successful `checkpoint` step to FILE, one
    /// JSON line each: {"step": I, "instance": NAME, "checkpoint": C, "state_hex": HEX}.
    #[arg(long, value_name = "FILE")]
    states: Option<PathBuf>,
    /// The table format to replay on: `paimon` commits Apache Paimon snapshots, each of
    /// the trace's committables a synthetic data file (docs/paimon.md); the result is
    /// printed in the trace's terms, as on the native log.
    #[arg(long, value_enum, default_value = "native")]
    table_format: FormatArg,
    /// The trace file (JSON).
    trace: PathBuf,
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
    /// The table's storage failed (exit [`EXIT_STORAGE`]).
    fn storage(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_STORAGE,
            message: format!("storage failure: {}", message.into()),
        }
    }
}

/// The exit status of a command whose table storage failed (a full disk,
/// an unreachable or refusing object store): not the coordinator's fault,
/// and not the input's.
const EXIT_STORAGE: u8 = 3;

fn main() -> ExitCode {
    // Options that only make sense together (a seed range that must not
    // wrap around) are checked here, still before anything runs, and are
    // usage errors like any other.
    let parsed = Cli::try_parse().and_then(|cli| match &cli.command {
        Command::Simulate(args) => args.check().map(|()| cli),
        _ => Ok(cli),
    });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print to stdout and exit 0; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let result = match &cli.command {
        Command::Replay(args) => cmd_replay(&cli, args),
        Command::Wasm(args) => cmd_wasm(&cli, args),
        Command::Inspect(args) => inspect::cmd_inspect(&cli, args),
        Command::Simulate(args) => simulate::cmd_simulate(&cli, args),
        Command::Script(args) => script::cmd_script(args),
        Command::Storage(args) => storage::cmd_storage(args),
        Command::Tags(args) => tags::cmd_tags(args),
        Command::Expire(args) => expire::cmd_expire(args),
        Command::Table(args) => table::cmd_table(args),
    };
    match result.and_then(|text| print(&text)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let _ = writeln!(
                std::io::stderr(),
                "sinkcoord: {}",
                clip_message(&failure.message)
            );
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

/// At most `max` bytes of `s` (on a char boundary), marked when cut.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let end = s.floor_char_boundary(max);
    format!("{}... ({} bytes)", &s[..end], s.len())
}

/// The last line of defence against echoing a huge input: a message longer
/// than a few hundred bytes keeps its head and tail.
fn clip_message(message: &str) -> String {
    const HEAD: usize = 600;
    const TAIL: usize = 200;
    if message.len() <= HEAD + TAIL + 100 {
        return message.to_string();
    }
    let head = message.floor_char_boundary(HEAD);
    let tail = message.ceil_char_boundary(message.len() - TAIL);
    format!(
        "{} ... ({} bytes omitted) ... {}",
        &message[..head],
        tail - head,
        &message[tail..]
    )
}

/// Where precompiled components are cached: `SINKCOORD_CACHE_DIR` (empty:
/// no cache), else `$XDG_CACHE_HOME/sinkcoord` or `~/.cache/sinkcoord`
/// (the user's own directories, trusted like the binary). Loading the
/// machine code takes about 1 ms; compiling the component about 200 ms,
/// which every command paid before the cache was the default.
fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SINKCOORD_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|d| !d.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("sinkcoord"))
}

/// The component runtime, with the precompiled cache ([`cache_dir`]).
/// `limits` are the command's limit options (defaults where the command
/// has none).
fn runtime(cli: &Cli, limits: Option<&LimitArgs>) -> Result<Runtime, Failure> {
    runtime_with(cli, limits, None)
}

/// The runtime of a command that only reads a table through the component
/// (`inspect`): the runtime limits given, derived from the default size
/// limits (a table reader sets none).
fn reading_runtime(cli: &Cli, limits: &RuntimeLimitArgs) -> Result<Runtime, Failure> {
    load_runtime(
        cli,
        limits.options(Limits::default(), base_options(cli, None)),
    )
}

/// The options every command starts from: the cache, the backtrace
/// setting, and `fuel` per call (the simulator's trap injection needs
/// metering).
fn base_options(cli: &Cli, fuel: Option<u64>) -> RuntimeOptions {
    RuntimeOptions {
        cache_dir: cache_dir(),
        wasm_backtrace: cli.verbose,
        fuel_per_call: fuel,
        ..RuntimeOptions::default()
    }
}

/// As [`runtime`], metering `fuel` per call unless the limit options say
/// otherwise (the simulator's trap injection needs metering).
fn runtime_with(
    cli: &Cli,
    limits: Option<&LimitArgs>,
    fuel: Option<u64>,
) -> Result<Runtime, Failure> {
    let mut options = base_options(cli, fuel);
    if let Some(limits) = limits {
        options = limits.options(options);
    }
    load_runtime(cli, options)
}

/// The embedded component, or `--component FILE`, with `options`.
fn load_runtime(cli: &Cli, options: RuntimeOptions) -> Result<Runtime, Failure> {
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
    let trace = sink_coordinator_testkit::trace::parse_slice(&bytes)
        .map_err(|m| Failure::malformed(format!("{}: {m}", args.trace.display())))?;
    let engine = if args.native {
        // The native core checks the same size limits as the component (the
        // wasmtime limits do not apply to it).
        Engine::Native(args.limits.limits())
    } else {
        Engine::Component(self::runtime(cli, Some(&args.limits))?)
    };
    match replay::replay_with_states_in(&trace, &engine, args.table_format.kind()) {
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

fn cmd_wasm(cli: &Cli, args: &WasmArgs) -> Result<String, Failure> {
    let (name, bytes) = match &cli.component {
        Some(path) => (
            path.display().to_string(),
            std::fs::read(path)
                .map_err(|e| Failure::host(format!("cannot read {}: {e}", path.display())))?,
        ),
        None => (
            format!("{EMBEDDED_WASM_NAME} (embedded)"),
            EMBEDDED_WASM.to_vec(),
        ),
    };
    let sha256: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let summary = format!("{} bytes, sha256 {sha256}", bytes.len());
    match &args.out {
        Some(out) => {
            std::fs::write(out, &bytes)
                .map_err(|e| Failure::host(format!("cannot write {}: {e}", out.display())))?;
            Ok(format!("{name} written to {}: {summary}\n", out.display()))
        }
        None => Ok(format!("{name}\n{summary}\n")),
    }
}
