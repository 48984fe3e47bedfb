//! A seeded, deterministic simulation of a streaming job driving the commit
//! coordinator, with fault injection and invariants checked after every step.
//!
//! One seed = one job: `P` writer helpers (SEMANTICS 11) and one coordinator
//! instance at a time, natively or in the component (same code: the calls go
//! through [`crate::driver::CoordinatorApi`] and [`backend::WriterApi`]), over
//! one table (`FaultyStorage` over memory or a local directory) and a
//! `ManualClock`. All choices come from one splitmix64 stream ([`rng`]);
//! only `BTreeMap`/`Vec` are iterated; nothing reads the wall clock, so a
//! seed replays exactly. Every coordinator call is recorded as a
//! TRACE-FORMAT step ([`record`]).
//!
//! # What the job does
//! - **Checkpoints** (streaming): triggered (`checkpoint(n)` first, as Flink
//!   snapshots operator coordinators before injecting barriers), taken by
//!   every live writer (`report` + its state bytes), then completed or
//!   aborted. A completion is notified to the coordinator and then to each
//!   writer; a whole notification round may be skipped (a later completion
//!   covers it), and so may a single writer's notification.
//! - **Savepoints**: asynchronous ones (flagged entries, never followed by
//!   their own completion: a later checkpoint commits and tags them, and
//!   they are no restore point), and stop-with-savepoint (synchronous: every
//!   event is delivered, it completes, the job ends), with or without
//!   draining (end of input first).
//! - **Writers** read a bounded or unbounded input; each report covers the
//!   records read since the last one, split into committables named
//!   uniquely (`s3-c17-a2-k0`: subtask, checkpoint or `end`, attempt, index).
//!   Input ends at different times per writer (END entry), after which the
//!   writer reports empty entries until it is notified of a checkpoint taken
//!   after its end, and finishes.
//! - **Modes**: streaming (`final_commit: on-checkpoint`), streaming with
//!   `final_commit: on-end-input`, batch (`checkpointing: false`).
//! - **Faults** (per level): region failover of a writer before or after its
//!   end of input (`subtask_reset(s, r)`, then the writer restored from its
//!   state at `r` sends `restored`), global failover (a new coordinator from
//!   the last completed checkpoint's state bytes, writers restored from their
//!   states, finished writers named in `finished_subtasks`), storage faults
//!   (`FaultyStorage`: failures and ambiguous writes; the host repeats a call
//!   that returned `storage`, or sometimes fails over instead), and guest
//!   traps (component only: the next call runs out of fuel at its first
//!   instruction; the instance is discarded and recreated from the last
//!   completed checkpoint, i.e. a global failover). A recovery that reports
//!   `restart-required` is followed by another global failover.
//!
//! # Model constraints (what Flink allows, and what the host guarantees)
//! 1. At most one checkpoint or savepoint is in flight (the coordinator-commit
//!    path requires `max-concurrent-checkpoints = 1`).
//! 2. Writers report every checkpoint they take part in, empty or not.
//! 3. One writer's events reach the coordinator in order; different writers'
//!    events and the checkpoint callbacks interleave freely. An event may
//!    arrive after the completion of its checkpoint, but events sent before
//!    checkpoint `c'` was triggered arrive before `c'` completes.
//! 4. The END event, and the reports of a writer whose input has ended,
//!    arrive before the completion of the checkpoint that writer took after
//!    them (see [`Model`] for what happens without this).
//! 5. A writer is notified of `checkpoint-complete(c)` only after its own
//!    events up to `c` were delivered, and only if the coordinator was
//!    notified of `c` too (notification rounds are skipped as a whole).
//! 6. Aborts reach every writer before its next snapshot (so no stale
//!    savepoint flag is persisted). The coordinator's `checkpoint-aborted`
//!    may come later, after further calls and checkpoints (a host may queue
//!    callbacks), but before the job ends, and survives a global failover
//!    (the new instance gets it); a storage error on it is always repeated
//!    (a failover would lose it and leave the aborted savepoint's tag).
//! 7. A writer that finishes before taking part in the pending checkpoint
//!    declines it (the checkpoint is aborted).
//! 8. While the coordinator is restoring, the host holds back writer events
//!    other than `restored` (they would be fatal `illegal-state`).
//! 9. Async savepoints are never followed by their own completion; a
//!    stop-with-savepoint completes synchronously and the job ends.
//! 10. A region failover aborts the pending checkpoint and restores the
//!     writer from the last *completed* checkpoint (from scratch without
//!     one); in-flight events of the failed attempt are dropped.
//! 11. A global failover restores the coordinator and all writers that were
//!     not finished at the last completed checkpoint from that checkpoint.
//! 12. The host repeats a call that returned `storage` (SEMANTICS 5.2). At
//!     fault level low and up it sometimes fails over instead (as an engine
//!     does when a coordinator callback throws), except for
//!     `checkpoint-aborted` (constraint 6) and for a call that may be running
//!     the final commit: that commit also commits checkpoints that never
//!     completed, and a failover to an older checkpoint would make the
//!     writers produce that input again (a duplicate no instance can detect).
//!
//! [`Model`] relaxes constraints 4 and 5 to explore what happens outside
//! them: a late report of an ended writer for a checkpoint its END entry
//! already covered is fatal `invalid-event` (SEMANTICS 3 rule 2), a late END
//! can miss the last completion (no final commit before the job ends), and a
//! coordinator that misses a completion its writers saw loses their entries
//! on a later global failover.
//!
//! # Known issues
//! Violations that match a known gap of SEMANTICS are
//! labelled with its id ([`known`]); each has a minimal regression trace in
//! `tests/regressions/`.
//!
//! # Invariants (after every step, and at the end)
//! See [`job`]: every committable appears in at most one snapshot, under its
//! writer and checkpoint, and never after a rollback discarded it; no input
//! record is committed twice; at the end every committable of a completed
//! checkpoint (and, once the final commit happened, every one) is committed
//! and a bounded job's table holds every record exactly once; snapshot ids
//! are dense and identifiers strictly increase; each snapshot's committables
//! and watermark equal SEMANTICS 3 recomputed from what the coordinator was
//! told (min over all `P` writers' entries, ended writers neutral, missing →
//! none); the END snapshot exists at most once, and once the final commit is
//! due exactly when an END entry has committables or `force-create-snapshot`
//! is on; a tag exists only for a non-aborted savepoint whose snapshot was
//! committed (and at the end for every such savepoint), pointing at it, with
//! the clock's time; the coordinator's state bytes round-trip through
//! `state_codec` and hold exactly the expected END entries; replaying the
//! recorded trace reproduces the same table (rendered snapshots and tags).

pub mod backend;
pub mod cli;
pub mod job;
pub mod known;
pub mod ledger;
pub mod record;
pub mod rng;

use std::fmt;

pub use backend::{Engine, TableLocation, WriterApi};

/// How many faults are injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultLevel {
    None,
    Low,
    Medium,
    High,
}

impl FaultLevel {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(FaultLevel::None),
            "low" => Some(FaultLevel::Low),
            "medium" => Some(FaultLevel::Medium),
            "high" => Some(FaultLevel::High),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FaultLevel::None => "none",
            FaultLevel::Low => "low",
            FaultLevel::Medium => "medium",
            FaultLevel::High => "high",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobMode {
    /// `checkpointing: true`, `final_commit: on-checkpoint`.
    Streaming,
    /// `checkpointing: true`, `final_commit: on-end-input`.
    StreamingOnEndInput,
    /// `checkpointing: false`.
    Batch,
}

/// How a streaming job ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Every writer's input ends; the job runs until all writers finished.
    AllEnd,
    /// stop-with-savepoint (inputs that have not ended stay open).
    Stop,
    /// stop-with-savepoint --drain (every input ends first).
    StopDrain,
}

/// The job's shape and configuration, drawn from the seed unless given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub mode: JobMode,
    pub ending: Ending,
    pub force_create_snapshot: bool,
    pub savepoint_auto_tag: bool,
    pub tag_time_retained_ms: Option<u64>,
    pub recovery_continue: bool,
}

impl Scenario {
    pub fn random(rng: &mut rng::Rng) -> Self {
        let mode = match rng.weighted(&[60, 20, 20]) {
            Some(0) => JobMode::Streaming,
            Some(1) => JobMode::StreamingOnEndInput,
            _ => JobMode::Batch,
        };
        let ending = match rng.weighted(&[50, 25, 25]) {
            Some(0) => Ending::AllEnd,
            Some(1) => Ending::Stop,
            _ => Ending::StopDrain,
        };
        let ending = if mode == JobMode::Batch {
            Ending::AllEnd
        } else {
            ending
        };
        Scenario {
            mode,
            ending,
            force_create_snapshot: rng.chance(250),
            savepoint_auto_tag: rng.chance(800),
            tag_time_retained_ms: if rng.chance(300) {
                Some(rng.range(1, 100_000))
            } else {
                None
            },
            recovery_continue: rng.chance(200),
        }
    }

    pub fn describe(&self) -> String {
        let mode = match self.mode {
            JobMode::Streaming => "streaming",
            JobMode::StreamingOnEndInput => "streaming, final commit on end input",
            JobMode::Batch => "batch",
        };
        let ending = match (self.mode, self.ending) {
            (JobMode::Batch, _) => "",
            (_, Ending::AllEnd) => ", all inputs end",
            (_, Ending::Stop) => ", stop-with-savepoint",
            (_, Ending::StopDrain) => ", stop-with-savepoint --drain",
        };
        let mut flags = Vec::new();
        if self.force_create_snapshot {
            flags.push("force-create-snapshot");
        }
        if self.savepoint_auto_tag {
            flags.push("savepoint-auto-tag");
        }
        if self.recovery_continue {
            flags.push("recovery continue");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        format!("{mode}{ending}{flags}")
    }
}

/// Relaxations of the model constraints, to explore what the coordinator
/// does outside them (all off by default; see the report of the simulator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Model {
    /// END events (and what the writer sends after them) may still be in
    /// flight when the checkpoint the writer took after its end of input
    /// completes (constraint 4).
    pub late_end_events: bool,
    /// Reports of a writer whose END was delivered may arrive after the
    /// completion of their checkpoint (constraint 4).
    pub late_events_after_end: bool,
    /// The coordinator's notification may be skipped while writers are
    /// notified (constraint 5).
    pub coordinator_skips_alone: bool,
}

/// One run's parameters.
#[derive(Clone)]
pub struct SimOptions {
    pub seed: u64,
    pub writers: u32,
    pub checkpoints: u64,
    pub faults: FaultLevel,
    pub table: TableLocation,
    /// `None`: drawn from the seed.
    pub scenario: Option<Scenario>,
    pub model: Model,
    /// Replay the recorded trace natively at the end and compare tables.
    pub check_replay: bool,
    /// Inject guest traps (component only).
    pub traps: bool,
}

impl SimOptions {
    pub fn new(seed: u64) -> Self {
        SimOptions {
            seed,
            writers: 4,
            checkpoints: 20,
            faults: FaultLevel::Medium,
            table: TableLocation::Memory,
            scenario: None,
            model: Model::default(),
            check_replay: true,
            traps: true,
        }
    }

    /// Small jobs whose size is drawn from the seed (1..=5 writers,
    /// 2..=16 checkpoints): most of the test net.
    pub fn small(seed: u64, faults: FaultLevel) -> Self {
        let mut r = rng::Rng::derive(seed, 0x5123);
        SimOptions {
            writers: r.range(1, 5) as u32,
            checkpoints: r.range(2, 16),
            faults,
            ..SimOptions::new(seed)
        }
    }

    /// Larger jobs (6..=12 writers, 20..=60 checkpoints).
    pub fn large(seed: u64, faults: FaultLevel) -> Self {
        let mut r = rng::Rng::derive(seed, 0x1A76E);
        SimOptions {
            writers: r.range(6, 12) as u32,
            checkpoints: r.range(20, 60),
            faults,
            ..SimOptions::new(seed)
        }
    }
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub snapshots: u64,
    pub tags: u64,
    pub tags_created: u64,
    pub completed: u64,
    pub aborted: u64,
    pub declined: u64,
    pub savepoints: u64,
    pub skipped_rounds: u64,
    pub writer_notifications: u64,
    pub writers_finished: u64,
    pub events_delivered: u64,
    pub region_failovers: u64,
    pub global_failovers: u64,
    pub restarts_required: u64,
    pub storage_faults: u64,
    pub storage_errors: u64,
    pub escalations: u64,
    pub traps: u64,
    pub committables_produced: u64,
    pub committables_verified: u64,
    pub committables_discarded: u64,
    pub states_checked: u64,
    pub replays_checked: u64,
    /// Events delivered after the coordinator was told their checkpoint completed.
    pub late_events: u64,
    pub tags_deleted: u64,
    /// Aborts delivered to the coordinator after later calls.
    pub late_aborts: u64,
    /// Global failovers whose restore named finished writers.
    pub restores_with_finished: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        macro_rules! sum {
            ($($f:ident),*) => { $( self.$f += o.$f; )* };
        }
        sum!(
            snapshots,
            tags,
            tags_created,
            completed,
            aborted,
            declined,
            savepoints,
            skipped_rounds,
            writer_notifications,
            writers_finished,
            events_delivered,
            region_failovers,
            global_failovers,
            restarts_required,
            storage_faults,
            storage_errors,
            escalations,
            traps,
            committables_produced,
            committables_verified,
            committables_discarded,
            states_checked,
            replays_checked,
            late_events,
            tags_deleted,
            late_aborts,
            restores_with_finished
        );
    }
}

/// A broken invariant: the seed and the step to reproduce it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub seed: u64,
    /// The simulation step (action) at which it was found.
    pub step: u64,
    /// How many trace steps were recorded when it was found.
    pub trace_step: usize,
    pub message: String,
    /// A known gap of SEMANTICS this matches (see [`known`]).
    pub known: Option<&'static str>,
}

impl Violation {
    fn internal(message: &str) -> Self {
        Violation {
            seed: 0,
            step: 0,
            trace_step: 0,
            message: format!("simulator bug: {message}"),
            known: None,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {}, step {} (trace step {}): {}",
            self.seed, self.step, self.trace_step, self.message
        )?;
        if let Some(k) = self.known {
            write!(f, " [known issue {k}]")?;
        }
        Ok(())
    }
}

/// The result of one seed.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub seed: u64,
    pub engine: &'static str,
    pub writers: u32,
    pub checkpoints: u64,
    pub scenario: Scenario,
    pub steps: u64,
    pub stats: Stats,
    pub verdict: Result<(), Violation>,
    /// The recorded trace (TRACE-FORMAT JSON).
    pub trace: String,
}

impl Outcome {
    pub fn verified(&self) -> bool {
        self.verdict.is_ok()
    }
}

/// Runs one seed. `Err` only if the run could not be set up (e.g. the
/// table directory cannot be created).
pub fn run(
    opts: &SimOptions,
    engine: &Engine,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<Outcome, String> {
    let mut sim = job::Sim::new(opts, engine.clone(), progress)?;
    let verdict = sim.run();
    Ok(Outcome {
        seed: opts.seed,
        engine: engine.name(),
        writers: sim.cfg.parallelism,
        checkpoints: opts.checkpoints,
        scenario: sim.scenario.clone(),
        steps: sim.step,
        stats: sim.stats.clone(),
        verdict,
        trace: sim.trace_text(),
    })
}
