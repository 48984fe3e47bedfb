//! `sinkcoord simulate`: the command line of the simulator
//! (`sink_coordinator_testkit::sim`) and its progress bar.

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::{Args, CommandFactory, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use sink_coordinator_host::engine::DEFAULT_FUEL_PER_CALL;
use sink_coordinator_testkit::sim::campaign::{self, CampaignOptions, Progress, ProgressUnit};
use sink_coordinator_testkit::sim::{Ending, FaultLevel, JobMode, Profile};

use crate::{print, runtime_with, Cli, Failure, FormatArg};

// Documented ranges, checked at parse time (exit 2): a simulated writer
// costs memory for its model and outbox, so the bound keeps one run within a
// few hundred MB instead of growing until the machine swaps; checkpoints and
// seeds bound the run time to something a person would start on purpose.
const MAX_WRITERS: i64 = 4096;
const MAX_CHECKPOINTS: u64 = 100_000;
const MAX_SEEDS: u64 = 100_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Level {
    None,
    Low,
    Medium,
    High,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// the default mix of host moves
    Default,
    /// FLIP-147-heavy: most writers finish early; finished subtasks replayed
    Flip147,
    /// late delivery: events often late against completions
    Late,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// checkpointing, final commit on the checkpoint after the last end of input
    Streaming,
    /// checkpointing, final commit when the last end of input arrives
    OnEndInput,
    /// checkpointing false
    Batch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EndingArg {
    /// every input ends; the job runs until all writers finished
    AllEnd,
    /// stop-with-savepoint
    Stop,
    /// stop-with-savepoint --drain
    StopDrain,
}

/// Simulate a streaming job driving the coordinator, with faults, checking invariants.
#[derive(Args, Debug, Clone)]
pub struct SimulateArgs {
    /// Parallelism of the sink (writer subtasks), 1 ..= 4096.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=MAX_WRITERS))]
    pub writers: u32,
    /// Checkpoints to trigger before the job ends, 1 ..= 100000.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=MAX_CHECKPOINTS))]
    pub checkpoints: u64,
    /// The (first) seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run this many seeds: seed, seed+1, ..., 1 ..= 100000000.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    pub seeds: u64,
    /// How many failovers, storage faults and traps to inject.
    #[arg(long, value_enum, default_value_t = Level::Medium)]
    pub faults: Level,
    /// The table (wiped at the start of every seed): a directory, or a table
    /// URL (`file:///path`, `memory://`, `s3://bucket/prefix`, `gs://...`,
    /// `az://...`; object stores configured from AWS_*, GOOGLE_*, AZURE_*).
    #[arg(long, default_value = "demo-table")]
    pub table: String,
    /// Keep the table in memory instead of a directory.
    #[arg(long, conflicts_with = "table")]
    pub memory: bool,
    /// Run the native Rust core instead of the component.
    #[arg(long)]
    pub native: bool,
    /// Write the call trace (TRACE-FORMAT) here: of the first failing seed, or of the last seed.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Job mode (default: drawn from the seed).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// How a streaming job ends (default: drawn from the seed).
    #[arg(long, value_enum)]
    pub ending: Option<EndingArg>,
    /// Which host behaviours to stress (every profile keeps the host
    /// contract of SEMANTICS v2.1).
    #[arg(long, value_enum, default_value_t = ProfileArg::Default)]
    pub profile: ProfileArg,
    /// One job only (no second commit user on the table).
    #[arg(long)]
    pub single_job: bool,
    /// No stale instance after global failovers.
    #[arg(long)]
    pub no_stale: bool,
    /// Skip replaying the recorded trace at the end of each seed.
    #[arg(long)]
    pub no_replay_check: bool,
    /// The table format: `paimon` writes an Apache Paimon table, each committable a
    /// real Parquet data file of the records it covers, so that Paimon's readers can
    /// read what the run left (docs/paimon.md, "The simulator on Paimon").
    #[arg(long, value_enum, default_value = "native")]
    pub table_format: FormatArg,
    /// With `--table-format paimon`: write what the table's readers must find (the
    /// records of the latest snapshot and of each tag) to FILE, as JSON
    /// (tests/paimon/read_sim_table.py checks a table against it).
    #[arg(long, value_name = "FILE")]
    pub paimon_expect: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl SimulateArgs {
    /// The checks that span several options (clap checks each on its own):
    /// the seeds `seed ..= seed + seeds - 1` must all be `u64`s, else the
    /// range would wrap around, run nothing and still read "verified".
    pub fn check(&self) -> Result<(), clap::Error> {
        if self.paimon_expect.is_some() && self.table_format != FormatArg::Paimon {
            return Err(crate::Cli::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "--paimon-expect needs --table-format paimon (a native table has no Paimon readers)",
            ));
        }
        if self
            .seed
            .checked_add(self.seeds.saturating_sub(1))
            .is_none()
        {
            let last = u128::from(self.seed) + u128::from(self.seeds) - 1;
            let fit = u128::from(u64::MAX) - u128::from(self.seed) + 1;
            return Err(crate::Cli::command().error(
                clap::error::ErrorKind::ValueValidation,
                format!(
                    "--seed {} --seeds {} is out of range: the last seed would be {last}, past \
                     the largest seed {} (at most {fit} seed(s) start at {})",
                    self.seed,
                    self.seeds,
                    u64::MAX,
                    self.seed
                ),
            ));
        }
        Ok(())
    }

    /// The campaign these options describe.
    fn campaign(&self) -> CampaignOptions {
        CampaignOptions {
            writers: self.writers,
            checkpoints: self.checkpoints,
            seed: self.seed,
            seeds: self.seeds,
            faults: match self.faults {
                Level::None => FaultLevel::None,
                Level::Low => FaultLevel::Low,
                Level::Medium => FaultLevel::Medium,
                Level::High => FaultLevel::High,
            },
            table: self.table.clone(),
            memory: self.memory,
            native: self.native,
            record: self.record.clone(),
            mode: self.mode.map(|m| match m {
                ModeArg::Streaming => JobMode::Streaming,
                ModeArg::OnEndInput => JobMode::StreamingOnEndInput,
                ModeArg::Batch => JobMode::Batch,
            }),
            ending: self.ending.map(|e| match e {
                EndingArg::AllEnd => Ending::AllEnd,
                EndingArg::Stop => Ending::Stop,
                EndingArg::StopDrain => Ending::StopDrain,
            }),
            single_job: self.single_job,
            no_stale: self.no_stale,
            no_replay_check: self.no_replay_check,
            profile: match self.profile {
                ProfileArg::Default => Profile::Default,
                ProfileArg::Flip147 => Profile::Flip147,
                ProfileArg::Late => Profile::Late,
            },
            table_format: self.table_format.kind(),
            paimon_expect: self.paimon_expect.clone(),
        }
    }
}

/// The terminal progress bar, created when the campaign starts one
/// (indicatif draws on stderr, and nothing when stderr is not a terminal).
#[derive(Default)]
struct Bar(OnceLock<ProgressBar>);

impl Progress for Bar {
    fn start(&self, total: u64, unit: ProgressUnit) {
        let unit = match unit {
            ProgressUnit::Seeds => "seeds {msg}",
            ProgressUnit::Checkpoints => "checkpoints",
        };
        let pb = ProgressBar::new(total);
        pb.set_style(
            ProgressStyle::with_template(&format!(
                "{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {unit}"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let _ = self.0.set(pb);
    }
    fn set_position(&self, position: u64) {
        if let Some(pb) = self.0.get() {
            pb.set_position(position);
        }
    }
    fn inc(&self) {
        if let Some(pb) = self.0.get() {
            pb.inc(1);
        }
    }
    fn message(&self, text: &str) {
        if let Some(pb) = self.0.get() {
            pb.set_message(text.to_string());
        }
    }
    fn finish(&self) {
        if let Some(pb) = self.0.get() {
            pb.finish_and_clear();
        }
    }
}

/// Exit 0 when every seed verified; 1 with the summary on stdout and the
/// first violation on stderr otherwise; 3 (the summary on stdout, the
/// error on stderr) when the table's storage itself failed.
pub fn cmd_simulate(cli: &Cli, args: &SimulateArgs) -> Result<String, Failure> {
    // Before anything is compiled or wiped.
    crate::wipe::check_before_wipe(&args.table, args.memory)?;
    let runtime = if args.native {
        None
    } else {
        // Its guest traps are injected through small fuel budgets: the
        // runtime meters fuel (off by default).
        Some(runtime_with(cli, None, Some(DEFAULT_FUEL_PER_CALL))?)
    };
    let bar = Bar::default();
    let progress = (!args.quiet).then_some(&bar as &dyn Progress);
    let report = campaign::simulate(&args.campaign(), runtime, progress).map_err(Failure::host)?;
    if report.verified {
        return Ok(report.text);
    }
    print(&report.text)?;
    if let Some(failure) = report.storage_failure {
        return Err(Failure::storage(format!(
            "{failure} (the table's storage failed, not an injected fault; no verdict on the coordinator)"
        )));
    }
    Err(Failure::host(format!(
        "invariant violated: {}",
        report.violation.unwrap_or_default()
    )))
}
