//! A simulation campaign: one seed or many (in parallel when the tables are
//! in memory), their summed statistics and the summary text that
//! `sinkcoord simulate` prints. The command line itself (clap) and the
//! progress bar live in the `sinkcoord` crate; here progress is reported
//! through [`Progress`].

use std::path::PathBuf;
use std::time::Instant;

use sink_coordinator_host::engine::Runtime;

use super::{
    Ending, Engine, FaultLevel, JobMode, Outcome, Profile, Scenario, SimOptions, Stats,
    TableLocation,
};

/// What to simulate (the options of `sinkcoord simulate`).
#[derive(Clone, Debug)]
pub struct CampaignOptions {
    /// Parallelism of the sink (writer subtasks).
    pub writers: u32,
    /// Checkpoints to trigger before the job ends.
    pub checkpoints: u64,
    /// The (first) seed.
    pub seed: u64,
    /// Run this many seeds: seed, seed+1, ...
    pub seeds: u64,
    /// How many failovers, storage faults and traps to inject.
    pub faults: FaultLevel,
    /// The table: a directory, or a table URL such as `s3://bucket/prefix`
    /// (wiped at the start of every seed), unless `memory`.
    pub table: String,
    /// Keep the table in memory instead of a directory.
    pub memory: bool,
    /// Run the native Rust core instead of the component.
    pub native: bool,
    /// Write the call trace (TRACE-FORMAT) here: of the first failing seed, or of the last seed.
    pub record: Option<PathBuf>,
    /// Job mode (default: drawn from the seed).
    pub mode: Option<JobMode>,
    /// How a streaming job ends (default: drawn from the seed).
    pub ending: Option<Ending>,
    /// One job only (no second commit user on the table).
    pub single_job: bool,
    /// No stale instance after global failovers.
    pub no_stale: bool,
    /// Skip replaying the recorded trace at the end of each seed.
    pub no_replay_check: bool,
    /// Which host behaviours to stress.
    pub profile: Profile,
    /// The table's format (`--table-format`).
    pub table_format: sink_coordinator::TableFormatKind,
    /// On Paimon: write what the table's readers must find (of the first failing
    /// seed, or of the last) here (`--paimon-expect`).
    pub paimon_expect: Option<PathBuf>,
}

/// What a progress display is told while a campaign runs. Shared by the
/// threads that run seeds in parallel, hence `Sync`.
pub trait Progress: Sync {
    /// A run of `total` units begins.
    fn start(&self, total: u64, unit: ProgressUnit);
    /// `position` units are done (one seed's checkpoints).
    fn set_position(&self, position: u64);
    /// One more unit is done (a seed of many).
    fn inc(&self);
    /// A short status beside the bar (`"2 failed"`).
    fn message(&self, text: &str);
    /// The campaign ended; the display goes away.
    fn finish(&self);
}

/// What a [`Progress`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressUnit {
    /// Seeds of a multi-seed campaign.
    Seeds,
    /// Checkpoints triggered by the first job of a single, long seed.
    Checkpoints,
}

/// What the command prints, and whether every seed verified.
pub struct Report {
    /// The report for stdout: per-seed lines or the single run's summary,
    /// and the counters.
    pub text: String,
    /// Every seed verified (the exit status).
    pub verified: bool,
    /// One line naming the first violation (for stderr).
    pub violation: Option<String>,
    /// The table's storage itself failed (a full disk, an object store
    /// refusing; not an injected fault): the seed and the error, for stderr.
    /// The campaign stopped at that seed, and it is no verdict on the
    /// coordinator.
    pub storage_failure: Option<String>,
}

/// Where the table lives (an unparsable `--table` is the campaign's error).
fn location(args: &CampaignOptions) -> Result<TableLocation, String> {
    if args.memory {
        return Ok(TableLocation::Memory);
    }
    TableLocation::parse(&args.table).map_err(|e| format!("--table: {e}"))
}

fn options(args: &CampaignOptions, seed: u64) -> SimOptions {
    let mut opts = SimOptions::new(seed);
    opts.writers = args.writers.max(1);
    opts.checkpoints = args.checkpoints.max(1);
    opts.faults = args.faults;
    // Checked by `run` before the first seed.
    opts.table = location(args).unwrap_or(TableLocation::Memory);
    opts.check_replay = !args.no_replay_check;
    if args.single_job {
        opts.second_job = Some(false);
    }
    opts.zombies = !args.no_stale;
    opts.profile = args.profile;
    opts.table_format = args.table_format;
    if args.mode.is_some() || args.ending.is_some() {
        // Draw the rest of the scenario from the seed, then apply the overrides.
        let mut rng = super::rng::Rng::derive(seed, 0x5CE);
        let mut scenario = Scenario::random(&mut rng);
        if let Some(m) = args.mode {
            scenario.mode = m;
        }
        if let Some(e) = args.ending {
            scenario.ending = e;
        }
        if scenario.mode == JobMode::Batch {
            scenario.ending = Ending::AllEnd;
        }
        opts.scenario = Some(scenario);
    }
    opts
}

fn stats_lines(s: &Stats, out: &mut String) {
    out.push_str(&format!(
        "  checkpoints: {} completed, {} aborted ({} declined while restoring), {} savepoints, {} notification rounds skipped\n",
        s.completed, s.aborted, s.declined, s.savepoints, s.skipped_rounds
    ));
    out.push_str(&format!(
        "  table: {} snapshots, {} tags ({} created, {} deleted by aborts)\n",
        s.snapshots, s.tags, s.tags_created, s.tags_deleted
    ));
    out.push_str(&format!(
        "  failovers: {} region, {} global ({} after restart-required, {} after a storage error, {} naming finished writers, {} finished writers restored from their final state)\n",
        s.region_failovers, s.global_failovers, s.restarts_required, s.escalations, s.restores_with_finished, s.finished_not_named
    ));
    out.push_str(&format!(
        "  faults injected: {} storage faults ({} storage errors: repeated, failed over, or {} left to a later call), {} crashes in a call ({} after a write), {} guest traps ({} after a write)\n",
        s.storage_faults, s.storage_errors, s.dropped_errors, s.crashes, s.crashes_after_write, s.traps, s.traps_after_write
    ));
    out.push_str(&format!(
        "  stale instances: {} ({} calls, {} failed, {} stopped before a final commit); second jobs on the table: {}\n",
        s.zombies, s.zombie_calls, s.zombie_failed, s.zombie_stopped_before_final, s.second_jobs
    ));
    out.push_str(&format!(
        "  committed-up-to: {} forwarded, {} lost, {} delivered ({} out of order), {} queries; {} writers finished; {} END events while restoring\n",
        s.notifications_sent, s.notifications_lost, s.notifications_delivered, s.notifications_reordered, s.queries, s.writers_finished, s.end_while_restoring
    ));
    out.push_str(&format!(
        "  host moves: {} last completions skipped ({} followed by a global failover instead), {} END events after their final checkpoint's completion, {} empty restore events and {} resets of finished subtasks, {} tags on the END snapshot\n",
        s.last_skipped, s.last_failovers, s.late_ends, s.finished_restores, s.finished_resets, s.end_tags
    ));
    out.push_str(&format!(
        "  committables: {} produced, {} verified (committed exactly once, in the right snapshot), {} discarded by rollbacks\n",
        s.committables_produced, s.committables_verified, s.committables_discarded
    ));
    out.push_str(&format!(
        "  checks: {} events delivered ({} after their checkpoint's completion), {} state bytes checked, {} tables compared with the native twin, {} recorded traces replayed to the same table\n",
        s.events_delivered, s.late_events, s.states_checked, s.twin_checks, s.replays_checked
    ));
}

/// Runs the campaign, reporting to `progress` (none: quiet). `Err` when a
/// run cannot start (component, directory).
pub fn simulate(
    args: &CampaignOptions,
    runtime: Option<Runtime>,
    progress: Option<&dyn Progress>,
) -> Result<Report, String> {
    let engine = match runtime {
        Some(r) if !args.native => Engine::Component(r),
        _ => Engine::NATIVE,
    };
    let seeds = args.seeds.max(1);
    // The last seed must be a u64 too: `seed + seeds` wrapped around, ran
    // nothing and read "verified" (issue 26; the CLI refuses such a range
    // while parsing, this is the library's own check).
    let last_seed = args.seed.checked_add(seeds - 1).ok_or_else(|| {
        format!(
            "--seed {} --seeds {seeds}: the last seed would be past {}",
            args.seed,
            u64::MAX
        )
    })?;
    let table = location(args)?;
    let started = Instant::now();
    let mut out = String::new();
    let where_ = if args.memory {
        "in memory".to_string()
    } else {
        format!("{table} (wiped at the start of each seed)")
    };
    out.push_str(&format!(
        "simulate: {} writers, {} checkpoints, faults {}, profile {}, {}, seed{} {}, table {where_}{}\n",
        args.writers.max(1),
        args.checkpoints.max(1),
        args.faults.name(),
        args.profile.name(),
        engine.name(),
        if seeds > 1 { "s" } else { "" },
        if seeds > 1 {
            format!("{}..={last_seed}", args.seed)
        } else {
            args.seed.to_string()
        },
        match args.table_format {
            sink_coordinator::TableFormatKind::Native => "",
            sink_coordinator::TableFormatKind::Paimon => ", format paimon",
        },
    ));
    // A bar over seeds, or over the checkpoints of one long seed; short
    // single runs show none.
    let bar = if seeds > 1 {
        progress.inspect(|p| p.start(seeds, ProgressUnit::Seeds))
    } else if args.checkpoints.saturating_mul(u64::from(args.writers)) >= 100 {
        progress.inspect(|p| p.start(args.checkpoints.max(1), ProgressUnit::Checkpoints))
    } else {
        None
    };
    let mut total = Stats::default();
    let mut failures: Vec<Outcome> = Vec::new();
    let mut last: Option<Outcome> = None;
    if seeds == 1 || !args.memory {
        // One table directory: one seed at a time.
        for seed in args.seed..=last_seed {
            let opts = options(args, seed);
            let per_run_bar = if seeds == 1 { bar } else { None };
            let outcome = super::run(&opts, &engine, per_run_bar)?;
            total.add(&outcome.stats);
            if outcome.storage_failure.is_some() {
                // The next seeds would write to the same failing storage.
                failures.push(outcome.clone());
                last = Some(outcome);
                break;
            }
            if !outcome.verified() {
                failures.push(outcome.clone());
                if let Some(pb) = bar {
                    pb.message(&format!("{} failed", failures.len()));
                }
            }
            if let Some(pb) = bar {
                if seeds > 1 {
                    pb.inc();
                }
            }
            last = Some(outcome);
        }
    } else {
        // In-memory tables: seeds run on every core; each seed is still
        // deterministic, and results are put back in seed order.
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(seeds as usize)
            .max(1);
        // The next seed to run; `None` once `last_seed` was taken.
        let next = std::sync::Mutex::new(Some(args.seed));
        let results = std::sync::Mutex::new(Vec::<Result<Outcome, String>>::new());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let seed = {
                        let mut n = next.lock().unwrap_or_else(|p| p.into_inner());
                        match *n {
                            Some(seed) if seed <= last_seed => {
                                *n = seed.checked_add(1);
                                seed
                            }
                            _ => return,
                        }
                    };
                    let opts = options(args, seed);
                    let outcome = super::run(&opts, &engine, None).map(|mut o| {
                        if o.verified() && seed != last_seed {
                            o.trace = String::new(); // keep memory flat on long soaks
                        }
                        o
                    });
                    if let Some(pb) = bar {
                        pb.inc();
                    }
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(outcome);
                });
            }
        });
        let mut results: Vec<Outcome> = results
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_iter()
            .collect::<Result<_, _>>()?;
        results.sort_by_key(|o| o.seed);
        for outcome in results {
            total.add(&outcome.stats);
            if !outcome.verified() {
                failures.push(outcome.clone());
            }
            last = Some(outcome);
        }
    }
    if let Some(pb) = bar {
        pb.finish();
    }
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(one) = last.as_ref().filter(|_| seeds == 1) {
        out.push_str(&format!("scenario: {}\n", one.scenario.describe()));
        out.push_str(&format!(
            "  {} simulation steps, {} trace steps recorded\n",
            one.steps,
            one.trace.matches("\"op\"").count()
        ));
    }
    stats_lines(&total, &mut out);
    if let Some(path) = &args.record {
        let chosen = failures.first().or(last.as_ref());
        if let Some(o) = chosen {
            std::fs::write(path, &o.trace)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            out.push_str(&format!(
                "trace of seed {} written to {}\n",
                o.seed,
                path.display()
            ));
        }
    }
    if let Some(path) = &args.paimon_expect {
        let chosen = failures.first().or(last.as_ref());
        if let Some(rows) = chosen.and_then(|o| o.paimon_rows.as_ref()) {
            std::fs::write(path, rows)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            out.push_str(&format!(
                "what the Paimon table's readers must find written to {}\n",
                path.display()
            ));
        }
    }
    out.push_str(&format!("time: {elapsed:.2} s\n"));
    for f in failures.iter().take(20) {
        if let Some(v) = f.violation() {
            out.push_str(&format!("violation: {v} [{}]\n", f.scenario.describe()));
        }
    }
    let storage_failure = failures.iter().find_map(|o| {
        o.storage_failure
            .as_ref()
            .map(|e| format!("seed {}: {e}", o.seed))
    });
    let violations = failures.iter().filter(|o| o.violation().is_some()).count();
    let verified = failures.is_empty();
    let plural = if seeds > 1 {
        format!(" ({seeds} seeds)")
    } else {
        String::new()
    };
    if let Some(failure) = &storage_failure {
        out.push_str(&format!(
            "storage failure: {failure} (the table's storage failed, not an injected fault)\n"
        ));
        out.push_str(&format!(
            "verdict: stopped: the table's storage failed, no verdict on the coordinator \
             ({violations} violation(s) before it)\n"
        ));
    } else if verified {
        out.push_str(&format!("verdict: verified{plural}, 0 violations\n"));
    } else {
        out.push_str(&format!(
            "verdict: {violations} of {seeds} seed(s) violated an invariant\n"
        ));
    }
    let violation = failures.iter().find_map(|o| o.violation().cloned());
    Ok(Report {
        verified,
        violation: violation.map(|v| v.to_string()),
        storage_failure,
        text: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(profile: Profile, seed: u64, seeds: u64) -> CampaignOptions {
        CampaignOptions {
            writers: 4,
            checkpoints: 12,
            seed,
            seeds,
            faults: FaultLevel::High,
            table: String::new(),
            memory: true,
            native: true,
            record: None,
            mode: None,
            ending: None,
            single_job: false,
            no_stale: false,
            no_replay_check: false,
            profile,
            table_format: sink_coordinator::TableFormatKind::Native,
            paimon_expect: None,
        }
    }

    /// A range past `u64::MAX` is refused; one ending at it runs every seed
    /// (`seed + seeds` used to wrap around and run none).
    #[test]
    fn the_seed_range_does_not_wrap_around() {
        let err = simulate(&args(Profile::Default, u64::MAX, 2), None, None).err();
        assert!(err.is_some_and(|e| e.contains("past")));
        let mut two = args(Profile::Default, u64::MAX - 1, 2);
        two.checkpoints = 2;
        let report = simulate(&two, None, None).expect("runs");
        assert!(report.verified, "{}", report.text);
        assert!(
            !report.text.contains("checks: 0 events delivered"),
            "{}",
            report.text
        );
    }

    #[test]
    fn profiles_parse_by_name() {
        for p in [Profile::Default, Profile::Flip147, Profile::Late] {
            assert_eq!(Profile::parse(p.name()), Some(p));
        }
        assert_eq!(Profile::parse("flip-147"), None);
    }

    /// Fixed seeds of each profile verify, and the summary names the
    /// profile and the host moves.
    #[test]
    fn every_profile_verifies() {
        for (profile, seed) in [
            (Profile::Default, 7_000),
            (Profile::Flip147, 7_100),
            (Profile::Late, 7_200),
        ] {
            let report = simulate(&args(profile, seed, 40), None, None).expect("runs");
            assert!(
                report.verified,
                "{}: {:?}\n{}",
                profile.name(),
                report.violation,
                report.text
            );
            assert!(report.text.contains(&format!("profile {}", profile.name())));
            assert!(report.text.contains("host moves:"));
        }
    }

    /// The profiles do what they claim: FLIP-147-heavy finishes writers in
    /// the main phase and replays finished subtasks; late delivery delivers
    /// many events after their checkpoint's completion.
    #[test]
    fn profiles_stress_what_they_claim() {
        let totals = |profile: Profile| {
            let mut total = Stats::default();
            for seed in 9_000..9_060 {
                let mut opts = options(&args(profile, seed, 1), seed);
                opts.check_replay = false;
                let o = crate::sim::run(&opts, &Engine::NATIVE, None).expect("runs");
                assert!(
                    o.verified(),
                    "{} seed {seed}: {:?}",
                    profile.name(),
                    o.verdict
                );
                total.add(&o.stats);
            }
            total
        };
        let default = totals(Profile::Default);
        let flip = totals(Profile::Flip147);
        let late = totals(Profile::Late);
        assert!(flip.restores_with_finished > default.restores_with_finished);
        assert!(flip.finished_restores + flip.finished_resets > 0);
        let share = |s: &Stats| s.late_events * 1000 / s.events_delivered.max(1);
        assert!(
            share(&late) > 2 * share(&default),
            "late events per mille: late {}, default {}",
            share(&late),
            share(&default)
        );
    }
}
