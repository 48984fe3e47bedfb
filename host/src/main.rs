//! `sinkcoord`: the command-line host of the sink coordinator component.
//!
//! Exit codes: 0 success (a replay whose steps returned errors still
//! succeeds), 1 the host failed (unreadable file, component failure), 2 the
//! input is malformed or the command line is wrong. Nothing panics on any
//! input; every failure is a message on stderr.
//!
//! Each subcommand is one variant of [`Command`] and one `fn` below; a new
//! subcommand adds both.
//!
//! Every numeric option is checked against its documented range while the
//! command line is parsed (README, "Limits"): out of range is a usage error
//! (exit 2) before anything runs. Echoed input in error messages is cut to a
//! few hundred bytes.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use sink_coordinator::{table, Snapshot, Storage, Tag};
use sink_coordinator_host::engine::{
    Runtime, RuntimeOptions, DEFAULT_FUEL_PER_CALL, DEFAULT_MAX_HOSTCALL_BYTES,
    DEFAULT_MAX_MEMORY_BYTES, EMBEDDED_WASM, EMBEDDED_WASM_PATH, FUEL_RANGE, MAX_HOSTCALL_RANGE,
    MAX_MEMORY_RANGE,
};
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
    /// Print the embedded component's path and size.
    Wasm,
    /// Print the snapshots and tags of a table kept in a local directory.
    Inspect(InspectArgs),
    /// Simulate a streaming job (writers, checkpoints, savepoints, failovers,
    /// storage faults, traps) driving the coordinator; check invariants after
    /// every step. The table directory is wiped at the start.
    Simulate(sink_coordinator_host::sim::cli::SimulateArgs),
}

/// The component's resource limits (README, "Limits"). Sizes take an
/// optional binary suffix: K, KiB, M, MiB, G, GiB.
#[derive(Args, Debug, Clone)]
struct LimitArgs {
    /// Fuel (about one unit per wasm instruction) for each call into the
    /// component; running out traps. Range 1000000..=1000000000000000.
    #[arg(long, value_name = "UNITS", value_parser = parse_fuel,
          default_value_t = DEFAULT_FUEL_PER_CALL)]
    fuel: u64,
    /// Upper bound of the component's linear memory; growing past it traps
    /// with "out of memory". Range 4MiB..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_memory,
          default_value_t = DEFAULT_MAX_MEMORY_BYTES)]
    max_memory: u64,
    /// Bytes the component may pass to the host in one call (a snapshot's
    /// value, a listing); more traps. Range 1MiB..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_hostcall,
          default_value_t = DEFAULT_MAX_HOSTCALL_BYTES)]
    max_hostcall_bytes: u64,
}

fn parse_fuel(s: &str) -> Result<u64, String> {
    parse_in_range(s, &FUEL_RANGE, false)
}

fn parse_memory(s: &str) -> Result<u64, String> {
    parse_in_range(s, &MAX_MEMORY_RANGE, true)
}

fn parse_hostcall(s: &str) -> Result<u64, String> {
    parse_in_range(s, &MAX_HOSTCALL_RANGE, true)
}

/// An integer (with a binary size suffix where `sized`) in `range`.
fn parse_in_range(
    s: &str,
    range: &std::ops::RangeInclusive<u64>,
    sized: bool,
) -> Result<u64, String> {
    let shown = clip(s, 40);
    let (digits, unit) = if sized {
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let unit = match &s[split..] {
            "" => 1u64,
            "K" | "KiB" => 1 << 10,
            "M" | "MiB" => 1 << 20,
            "G" | "GiB" => 1 << 30,
            other => {
                return Err(format!(
                    "unknown size suffix {:?} in {shown:?} (use K, KiB, M, MiB, G or GiB)",
                    clip(other, 20)
                ))
            }
        };
        (&s[..split], unit)
    } else {
        (s, 1)
    };
    let range_text = if sized {
        format!(
            "{}..={}",
            size_text(*range.start()),
            size_text(*range.end())
        )
    } else {
        format!("{}..={}", range.start(), range.end())
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{shown:?} is not a non-negative integer (range {range_text})"
        ));
    }
    let value = digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(unit))
        .filter(|v| range.contains(v))
        .ok_or_else(|| format!("{shown} is out of range {range_text}"))?;
    Ok(value)
}

/// `4194304` as `4MiB`, for range messages.
fn size_text(v: u64) -> String {
    for (unit, name) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if v >= unit && v.is_multiple_of(unit) {
            return format!("{}{name}", v / unit);
        }
    }
    v.to_string()
}

impl LimitArgs {
    fn apply(&self, options: &mut RuntimeOptions) {
        options.fuel_per_call = Some(self.fuel);
        options.max_memory_bytes = usize::try_from(self.max_memory).ok();
        options.max_hostcall_bytes = usize::try_from(self.max_hostcall_bytes).unwrap_or(usize::MAX);
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
    /// The trace file (JSON).
    trace: PathBuf,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// The table's root directory.
    dir: PathBuf,
    /// Print JSON (the `snapshots` and `tags` of a replay result, plus
    /// `problems` when there are any) instead of text.
    #[arg(long)]
    json: bool,
    /// Decode the table with the Rust core natively instead of the component.
    #[arg(long)]
    native: bool,
    #[command(flatten)]
    limits: LimitArgs,
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
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
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
    let mut head = HEAD;
    while !message.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = message.len() - TAIL;
    while !message.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{} ... ({} bytes omitted) ... {}",
        &message[..head],
        tail - head,
        &message[tail..]
    )
}

/// The component runtime; `SINKCOORD_CACHE_DIR` names an (optional,
/// trusted) directory of precompiled components. `limits` are the
/// command's limit options (defaults where the command has none).
fn runtime(cli: &Cli, limits: Option<&LimitArgs>) -> Result<Runtime, Failure> {
    let mut options = RuntimeOptions {
        cache_dir: std::env::var_os("SINKCOORD_CACHE_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from),
        wasm_backtrace: cli.verbose,
        ..RuntimeOptions::default()
    };
    if let Some(limits) = limits {
        limits.apply(&mut options);
    }
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
        runtime = self::runtime(cli, Some(&args.limits))?;
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

/// Lists a table's snapshots and tags. A damaged table is listed as far as
/// it can be read: a gap in the snapshot ids, a snapshot or tag that does
/// not decode, a symbolic link or a stray file under `snapshot/` is a
/// problem named on its own line; the rest is still listed, and the command
/// then exits 1 (the listing on stdout, a summary on stderr).
fn cmd_inspect(cli: &Cli, args: &InspectArgs) -> Result<String, Failure> {
    let mut storage = LocalDirStorage::open_existing(&args.dir)
        .map_err(|e| Failure::host(format!("cannot open the table {}: {e}", args.dir.display())))?;
    if !storage.removed_temp_files().is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "sinkcoord: removed {} temporary file(s) left by dead writers",
            storage.removed_temp_files().len()
        );
    }
    let mut problems: Vec<String> = Vec::new();

    // The snapshot ids present, from the file names.
    let (keys, listing_problems) = storage
        .list_tolerant(table::SNAPSHOT_PREFIX)
        .map_err(|e| Failure::host(format!("cannot list snapshots: {e}")))?;
    problems.extend(listing_problems);
    let mut ids = Vec::new();
    for key in &keys {
        match snapshot_id_of(key) {
            Some(id) => ids.push((id, key.clone())),
            None => problems.push(format!(
                "{}: not a snapshot file name (expected {}<20 digits>)",
                render::json_str(&clip(key, 200)),
                table::SNAPSHOT_PREFIX
            )),
        }
    }
    ids.sort();
    let mut expected = 1u64;
    for (id, _) in &ids {
        if *id > expected {
            problems.push(if *id - expected == 1 {
                format!("snapshot {expected} is missing (a gap in the snapshot ids)")
            } else {
                format!(
                    "snapshots {expected}..={} are missing (a gap in the snapshot ids)",
                    id - 1
                )
            });
        }
        expected = id.saturating_add(1);
    }

    let tag_keys = match storage.list_tolerant(table::TAG_PREFIX) {
        Ok((keys, listing_problems)) => {
            problems.extend(listing_problems);
            keys
        }
        Err(e) => return Err(Failure::host(format!("cannot list tags: {e}"))),
    };
    // Each tag's bytes, decoded one at a time below.
    let mut tag_values = Vec::new();
    for key in &tag_keys {
        match storage.get(key) {
            Ok(Some(bytes)) => tag_values.push((key.clone(), bytes)),
            Ok(None) => {}
            Err(e) => problems.push(format!("{}: {e}", render::json_str(&clip(key, 200)))),
        }
    }

    let mut snapshots: Vec<Snapshot> = Vec::new();
    let mut tags: Vec<Tag> = Vec::new();
    let mut note = |key: &str, e: &dyn std::fmt::Display| {
        problems.push(format!(
            "{}: {}",
            render::json_str(&clip(key, 200)),
            clip(&e.to_string(), 400)
        ))
    };
    if args.native {
        for (id, key) in &ids {
            match table::snapshot_by_id(&mut storage, *id) {
                Ok(Some(s)) => snapshots.push(s),
                Ok(None) => note(key, &"vanished while the table was read"),
                Err(e) => note(key, &e),
            }
        }
        for (key, bytes) in tag_values {
            let mut one = sink_coordinator::MemStorage::default();
            one.map.insert(key.clone(), bytes);
            match table::list_tags(&mut one) {
                Ok(found) => tags.extend(found),
                Err(e) => note(&key, &e),
            }
        }
    } else {
        let runtime = runtime(cli, Some(&args.limits))?;
        let mut reader =
            ComponentTable::new(&runtime, storage).map_err(|e| Failure::host(e.to_string()))?;
        for (id, key) in &ids {
            match reader.snapshot_by_id(*id) {
                Ok(Some(s)) => snapshots.push(s),
                Ok(None) => note(key, &"vanished while the table was read"),
                Err(e) => note(key, &e),
            }
        }
        for (key, bytes) in tag_values {
            let mut one = sink_coordinator::MemStorage::default();
            one.map.insert(key.clone(), bytes);
            let listed = ComponentTable::new(&runtime, one).and_then(|mut t| t.list_tags());
            match listed {
                Ok(found) => tags.extend(found),
                Err(e) => note(&key, &e),
            }
        }
    }
    tags.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));

    let out = if args.json {
        let doc = render::render_table(&snapshots, &tags);
        if problems.is_empty() {
            doc
        } else {
            let body = doc.trim_end().trim_end_matches('}').trim_end();
            let items: Vec<String> = problems
                .iter()
                .map(|p| format!("    {}", render::json_str(p)))
                .collect();
            format!(
                "{body},\n  \"problems\": [\n{}\n  ]\n}}\n",
                items.join(",\n")
            )
        }
    } else {
        inspect_text(&args.dir, &snapshots, &tags, &problems)
    };
    if problems.is_empty() {
        return Ok(out);
    }
    print(&out)?;
    Err(Failure::host(format!(
        "the table {} has {} problem(s), listed on stdout",
        args.dir.display(),
        problems.len()
    )))
}

/// `snapshot/00000000000000000042` -> 42 (the 20-digit names the core writes).
fn snapshot_id_of(key: &str) -> Option<u64> {
    let digits = key.strip_prefix(table::SNAPSHOT_PREFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let id = digits.parse::<u64>().ok()?;
    (table::snapshot_key(id) == key && id > 0).then_some(id)
}

fn inspect_text(
    dir: &std::path::Path,
    snapshots: &[Snapshot],
    tags: &[Tag],
    problems: &[String],
) -> String {
    let mut out = format!("table {}\n{} snapshot(s)\n", dir.display(), snapshots.len());
    for s in snapshots {
        out.push_str(&format!(
            "  snapshot {}: commit user {}, identifier {}, watermark {}, time {} ms, {} committable(s)\n",
            s.id,
            render::json_str(&clip(&s.commit_user, 200)),
            render::checkpoint(s.identifier),
            s.watermark.map_or_else(|| "none".into(), |w| w.to_string()),
            s.time_ms,
            s.committables.len(),
        ));
    }
    out.push_str(&format!("{} tag(s)\n", tags.len()));
    for t in tags {
        out.push_str(&format!(
            "  tag {}: snapshot {} (identifier {}), created {} ms, expires {}\n",
            render::json_str(&clip(&t.name, 200)),
            t.snapshot_id,
            render::checkpoint(t.identifier),
            t.create_time_ms,
            t.expire_time_ms
                .map_or_else(|| "never".into(), |e| format!("{e} ms")),
        ));
    }
    if !problems.is_empty() {
        out.push_str(&format!("{} problem(s)\n", problems.len()));
        for p in problems {
            out.push_str(&format!("  {p}\n"));
        }
    }
    out
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
        Some(runtime(cli, None)?)
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
