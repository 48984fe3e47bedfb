//! A seeded, deterministic simulation of streaming jobs driving the commit
//! coordinator, with fault injection, checked against SEMANTICS v2.1 after
//! every call and at the end. Any violation fails (there is no list of known
//! gaps: SEMANTICS v2.1 closed the ones v2 had, section 12). The simulated
//! host keeps the v2.1 host contract and nothing more: profiles
//! ([`Profile`]) stress parts of it (`--profile flip147|late`).
//!
//! One seed = one table (`FaultyStorage` over memory or a local directory)
//! and a `ManualClock`, shared by one job or two (a second commit user on the
//! same table, its steps interleaved with the first's). A job has `P` writer
//! helpers (SEMANTICS 11) and one current coordinator instance, natively or
//! in the component (the calls go through [`crate::driver::CoordinatorApi`]
//! and [`backend::WriterApi`]); a component instance has a native twin fed
//! the same calls, whose table must stay byte-identical. All choices come
//! from one splitmix64 stream ([`rng`]); only `BTreeMap`/`Vec` are iterated;
//! nothing reads the wall clock, so a seed replays exactly. Every
//! coordinator call is recorded as a TRACE-FORMAT step ([`record`]).
//!
//! Files: `world.rs` (what the jobs share, the scheduler, the final table
//! checks), `job.rs` (a job's state and actions), `writers.rs` (the writer
//! model), `checkpoints.rs` (checkpoints, failovers, the stale instance),
//! `calls.rs` (coordinator calls, crashes, error handling), `checks.rs` (the
//! invariants), `ledger.rs` (the oracles), `rawtable.rs` (the independent
//! reader of the stored bytes), [`backend`] (engines, probed storage).
//!
//! # What a job does
//! - **Checkpoints** (streaming): triggered (`checkpoint(n)` first, as Flink
//!   snapshots operator coordinators before injecting barriers), taken by
//!   every live writer (`report` + its state bytes), then completed or
//!   aborted. A completion finishes the writers whose final checkpoint it is
//!   and is notified to the coordinator, or not (Flink may skip
//!   notifications; a later completion covers it). Even the job's last one
//!   (at or after every writer's final checkpoint) may be skipped, if a
//!   later checkpoint's completion is delivered instead, or a global
//!   failover from it follows (SEMANTICS 4).
//! - **Committed-up-to**: every outcome's `committed-up-to` (and, at times,
//!   the answer of the `committed-up-to` query) is forwarded by the host to
//!   each writer still running (`committed(u)`), the only call that makes a
//!   writer drop entries. Notifications are lost (per writer), delayed past
//!   later calls and checkpoints, reordered (a newer one first, the older
//!   one then stale), and survive a failover into the writer's next attempt.
//! - **Savepoints**: asynchronous ones (flagged entries, never followed by
//!   their own completion: a later checkpoint commits and tags them, and
//!   they are no restore point), and stop-with-savepoint (synchronous: every
//!   event is delivered, it completes, the job ends), with or without
//!   draining (end of input first).
//! - **Writers** read a bounded or unbounded input; each report covers the
//!   records read since the last one, split into committables named
//!   uniquely (`a-s3-c17-a2-k0`: job, subtask, checkpoint or `end`, attempt,
//!   index). Input ends at different times per writer (END entry); an ended
//!   writer reports empty entries and **finishes as soon as its final
//!   checkpoint** (the first it takes part in after its END) **completes**
//!   (FLIP-147; at a later completion if the task's notification is lost),
//!   whether or not the coordinator has committed its entries; a finished
//!   task has no state. Its reports, even its END, may still be
//!   in flight then, and arrive after the commit that covered them.
//! - **Modes**: streaming (`final_commit: on-checkpoint`), streaming with
//!   `final_commit: on-end-input`, batch (`checkpointing: false`).
//! - **Faults** (per level): region failover of a writer (`subtask_reset(s,
//!   r)`, then the writer restored from its state at `r` sends `restored`),
//!   global failover (a new instance from the last completed checkpoint's
//!   state bytes, writers restored from their states; finished writers named
//!   in `finished_subtasks` when SEMANTICS 6.2 allows it, else restored from
//!   their final state), storage faults (`FaultyStorage`: failures and
//!   ambiguous writes; the host repeats the call, fails over, or moves on),
//!   **crashes in the middle of a call** (the storage fails every call after
//!   the call's k-th write, as if the process died there; the instance is
//!   discarded: a global failover), guest **traps in the middle of a call**
//!   (component only: a small fuel budget runs out wherever it runs out), and
//!   a **stale instance**: after a global failover the old instance may keep
//!   running for a while, receiving the old attempt's in-flight events,
//!   queued aborts and a late completion. A recovery that reports
//!   `restart-required` is followed by another global failover.
//!
//! # Model constraints (what the host guarantees, and why)
//! Kept because Flink (or the host contract of SEMANTICS) guarantees them:
//! 1. At most one checkpoint or savepoint is in flight: the coordinator-commit
//!    path of Paimon requires `max-concurrent-checkpoints = 1`.
//! 2. Writers report every checkpoint they take part in, empty or not
//!    (SEMANTICS 1: the coordinator sees alignment through them).
//! 3. One writer's events reach the coordinator in the order sent (SEMANTICS
//!    1); nothing else is promised: different writers' events and the
//!    checkpoint callbacks interleave freely, and an event may arrive after
//!    the completion of its checkpoint, of any later one, and of the job's
//!    last one (SEMANTICS 10.1, 5.3: an END event after the completion of its
//!    writer's final checkpoint makes the final commit in its own call).
//!    Only a stop-with-savepoint delivers every event before its completion
//!    (constraint 9).
//! 4. Once every writer has sent its END entry, the completion of a
//!    checkpoint at or after every writer's final checkpoint reaches the
//!    coordinator (repeated after a storage error), or the host fails over
//!    from such a checkpoint (SEMANTICS 4): a skipped last completion is
//!    followed by a later checkpoint whose completion is delivered, or by a
//!    global failover. The job ends once every event was delivered.
//! 5. Checkpoint ids increase over the job's life, across failovers (Flink
//!    never reuses one). This is what makes a stale committed-up-to true.
//! 6. A committed-up-to reaches only the writers of its own job, and only
//!    from the job's current instance (a real host does not listen to an
//!    instance it replaced).
//! 7. Aborts reach every writer before its next snapshot (so no stale
//!    savepoint flag is persisted). The coordinator's `checkpoint-aborted`
//!    may come later, after further calls and checkpoints (a host may queue
//!    callbacks), but before the job ends, and survives a global failover
//!    (the new instance gets it); after a storage error it is repeated or
//!    re-delivered to the next instance, never dropped: it is the only call
//!    that deletes an aborted savepoint's tag (SEMANTICS 5.4). An abort the
//!    coordinator accepted after it took the state of checkpoint `r` is
//!    delivered again, right after `start`, to an instance restored from
//!    `r`: that state may carry the savepoint's flag on an ended writer's
//!    entry (v2 state bytes hold them), and nothing else tells the new
//!    instance. (In Flink both callbacks run in order in the coordinator's
//!    thread, so the abort comes before the next checkpoint; the model lets
//!    it come later and makes the host pay for it.)
//! 8. While the coordinator is restoring, the host holds back ordinary
//!    events, and END events of writers whose restore event it has not
//!    delivered yet (they are fatal `illegal-state`, SEMANTICS 6.2). END
//!    events of restored writers are delivered.
//! 9. Async savepoints are never followed by their own completion; a
//!    stop-with-savepoint completes synchronously, once every event was
//!    delivered (a drained savepoint whose flagged reports arrive after its
//!    completion gets no tag: SEMANTICS 5.4's known limit), and the job ends.
//! 10. A region failover aborts the pending checkpoint and restores the
//!     writer from the last *completed* checkpoint (from scratch without
//!     one); in-flight events of the failed attempt are dropped.
//! 11. A global failover restores the coordinator and every writer from the
//!     last completed checkpoint `r`. A writer is named in
//!     `finished_subtasks` only if it had finished before `r` was triggered
//!     and every event it sent had reached the coordinator before its
//!     `checkpoint(r)` (SEMANTICS 6.2); a writer that finished but had an
//!     event in flight then is restored from the state of its final
//!     checkpoint, which the host kept (it holds everything the writer had
//!     not seen committed). Flink may then run a named writer's operator
//!     again with empty state: the instance gets an empty restore event or
//!     a `subtask-reset` for it, in `restoring` or `running`, which it must
//!     ignore (SEMANTICS 6.2).
//! 12. After a storage error the host repeats the call (SEMANTICS 5.2), or
//!     — at fault levels low and up, in the main phase — fails over, or, for
//!     an event, a completion or a reset while some writer has not ended,
//!     moves on without repeating it (the input stays accepted; a later call
//!     retries what failed). A call the job's end depends on (constraint 4,
//!     the batch job's last END, close) is repeated or failed over.
//! 13. A crash preempts only a storage call of a kind that has no storage
//!     fault queued, and a mid-call trap is armed only while no fault is
//!     queued at all (no fault is injected while a trap waits for its call),
//!     so that the `storage_fault` recorded in their place fails exactly the
//!     storage call they preempted: the replay stays exact.
//! 14. A stale instance gets per-writer prefixes of the old attempt's
//!     in-flight messages, the aborts queued for it (first), and at most a
//!     completion of the successor's restore point `r` (Flink HA: a
//!     checkpoint completes through the HA store, and the new leader restores
//!     from the latest one). It never gets a call that could run the final
//!     commit (one that runs the commit rule while, after it, every slot
//!     holds an END entry: in on-checkpoint mode an event or a reset can
//!     make it too, SEMANTICS 5.3): that commit also commits checkpoints
//!     that never completed, which the successor's writers replay under new
//!     ids — SEMANTICS promises two instances of one commit user only never
//!     to commit an identifier twice (5.2); Flink's HA stops the old
//!     JobMaster's coordinators when it loses leadership, before its
//!     successor runs the job. A stale instance that fails (its view of the
//!     table is old) is discarded; that is no violation.
//!
//! Dropped with v2 (they only hid v1 gaps): END events and the reports of
//! ended writers arriving before the completion of the checkpoint the
//! writer took after them (they may now arrive after the commit that covered
//! them); writers notified of a completion only after the coordinator and
//! after their own events (writers now drop entries on `committed(u)` only);
//! a writer finishing only once it is notified after the coordinator; storage
//! errors of completions repeated before writers were notified; and no
//! failover while a final commit may be running (final commits are now cut
//! short by escalated storage errors, crashes and traps between their writes).
//! The `--relax` switches that explored outside those constraints are gone
//! with them.
//!
//! # Checks
//! After every call (`checks.rs`): the table is read by listing
//! `snapshot/` (a gap, or an id past a gap, is a violation) and decoding the
//! stored bytes with `rawtable.rs`, cross-checked against the core's reader;
//! each snapshot's bookkeeping chains to the one before (per-user marks,
//! strictly increasing identifiers per commit user); each new snapshot is
//! of the job whose call wrote it, commits a checkpoint its instance was told
//! completed and every writer covers, and holds exactly the committables and
//! watermark SEMANTICS 3 and 5.3 compute from what the instance was told
//! (the END snapshot: entries above `completed`, then END entries); no
//! committable is committed twice, committed after a rollback discarded it,
//! or committed without ever being reported; no input record is committed
//! twice; tags exist only for non-aborted savepoints of their own job,
//! pointing at the snapshot of their identifier, with the clock's time, and
//! a call never touches another commit user's tags; the final commit
//! happens exactly when SEMANTICS 5.3 says (on-checkpoint: after any call
//! that runs the commit rule once every END entry has `taken <= completed`,
//! never before; the simulator keeps each END entry's `taken`, section 3)
//! and writes exactly one END snapshot; committed-up-to never goes down within an
//! instance and is true (every entry the instance was told of up to it is in
//! the table); state bytes round-trip through the codec, hold the expected
//! END entries (with their `taken`) and, for ended writers, only entries as reported and every
//! one the table lacks; a call whose storage import returned an error makes
//! no further storage call and returns `storage` (SEMANTICS 8); a component
//! call and its native twin agree on the outcome, the storage calls and the
//! table; no call of a schedule within the model fails fatally.
//!
//! At the end, every check runs (all problems are reported): every
//! committable of a completed checkpoint, and all of a finished job, is in
//! the table; a job whose writers all ended has exactly one END snapshot and
//! each writer's input records exactly once; no savepoint tag is lost (a
//! savepoint taken and not aborted whose snapshot exists — for the drained
//! stop-with-savepoint whose completion made the final commit, the END
//! snapshot — has its tag), and no other tag exists (a tag on the END
//! snapshot only for a savepoint `s` with `taken <= s <= completed` at the
//! final commit, SEMANTICS 5.4); stored
//! snapshots never changed; the engine's own table reader agrees with the
//! independent one; replaying the recorded trace makes every call return
//! what it returned in the run (success or the same error kind) and leaves
//! the same table.

pub mod backend;
pub(crate) mod calls;
pub mod campaign;
pub(crate) mod checkpoints;
pub(crate) mod checks;
pub(crate) mod job;
pub(crate) mod ledger;
pub mod paimon;
pub(crate) mod rawtable;
pub mod record;
pub mod rng;
pub mod wipe;
pub(crate) mod world;
pub(crate) mod writers;

use std::fmt;

pub use backend::{Engine, TableLocation, WriterApi};

/// How many faults are injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultLevel {
    /// No faults: the job runs as the host contract promises, nothing fails.
    None,
    /// Occasional storage faults and failovers; a storage error may also be
    /// answered by a failover instead of a repeat.
    Low,
    /// The default: faults of every kind at rates that still let most
    /// checkpoints complete.
    Medium,
    /// Faults on most calls: long runs of failures, frequent failovers,
    /// crashes and traps.
    High,
}

impl FaultLevel {
    /// Every level, from none to high.
    pub const ALL: [FaultLevel; 4] = [
        FaultLevel::None,
        FaultLevel::Low,
        FaultLevel::Medium,
        FaultLevel::High,
    ];

    /// The level named `s` (`none`, `low`, `medium`, `high`), as
    /// `--faults` takes it.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == s)
    }

    /// The name [`FaultLevel::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            FaultLevel::None => "none",
            FaultLevel::Low => "low",
            FaultLevel::Medium => "medium",
            FaultLevel::High => "high",
        }
    }
}

/// Which host behaviours a run stresses (`sinkcoord simulate --profile`).
/// Every profile stays within the host contract of SEMANTICS v2.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// The default mix.
    Default,
    /// FLIP-147-heavy: most writers' inputs end early in the main phase, so
    /// most writers finish (their final checkpoint completes) while the job
    /// still runs; a drawn scenario is never batch; global failovers name
    /// finished writers, and Flink's replays of finished subtasks (an empty
    /// restore event, a `subtask-reset`) are frequent.
    Flip147,
    /// Late delivery: writers' events are often late against completions
    /// (delivering is rare next to snapshots and completions), also END
    /// events against the completion of the job's last checkpoint.
    Late,
}

impl Profile {
    /// The profile named `s` (`default`, `flip147`, `late`), as
    /// `--profile` takes it.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "default" => Some(Profile::Default),
            "flip147" => Some(Profile::Flip147),
            "late" => Some(Profile::Late),
            _ => None,
        }
    }

    /// The name [`Profile::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Flip147 => "flip147",
            Profile::Late => "late",
        }
    }
}

/// How the job runs and when its final commit happens.
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
    /// Streaming, streaming with the final commit on end of input, or batch.
    pub mode: JobMode,
    /// How a streaming job ends (always [`Ending::AllEnd`] in batch mode).
    pub ending: Ending,
    /// Config `force_create_snapshot`: a completion with nothing to commit
    /// still writes a snapshot.
    pub force_create_snapshot: bool,
    /// Config `savepoint_auto_tag`: savepoints are tagged.
    pub savepoint_auto_tag: bool,
    /// Config `tag_time_retained_ms`: tags carry an expiry.
    pub tag_time_retained_ms: Option<u64>,
    /// Config `recovery: continue` (else `restart`): a recovery that finds
    /// the table moved on continues instead of asking for a restart.
    pub recovery_continue: bool,
}

impl Scenario {
    /// A scenario drawn from `rng`: mostly streaming jobs, each config flag
    /// on in a minority of seeds.
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

    /// One line for reports, e.g. `streaming, stop-with-savepoint
    /// [savepoint-auto-tag]`.
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

/// One run's parameters.
#[derive(Clone)]
pub struct SimOptions {
    /// The seed every choice of the run is drawn from.
    pub seed: u64,
    /// The job's parallelism (writer helpers).
    pub writers: u32,
    /// How many checkpoints the main phase triggers before the job ends.
    pub checkpoints: u64,
    /// How many faults are injected.
    pub faults: FaultLevel,
    /// Where the table lives.
    pub table: TableLocation,
    /// `None`: drawn from the seed.
    pub scenario: Option<Scenario>,
    /// Replay the recorded trace at the end and compare tables.
    pub check_replay: bool,
    /// Inject guest traps in the middle of calls (component only).
    pub traps: bool,
    /// Inject crashes in the middle of calls.
    pub crashes: bool,
    /// Let global failovers leave the old instance running for a while.
    pub zombies: bool,
    /// A second job (commit user) on the same table; `None`: drawn from the seed.
    pub second_job: Option<bool>,
    /// Which host behaviours the run stresses.
    pub profile: Profile,
    /// The table's format: the native log, or an Apache Paimon table whose
    /// committables are real Parquet files ([`paimon`]; no guest traps there).
    pub table_format: sink_coordinator::TableFormatKind,
}

impl SimOptions {
    /// The defaults for `seed`: 4 writers, 20 checkpoints, medium faults,
    /// an in-memory table, every fault kind on, the replay check on.
    pub fn new(seed: u64) -> Self {
        SimOptions {
            seed,
            writers: 4,
            checkpoints: 20,
            faults: FaultLevel::Medium,
            table: TableLocation::Memory,
            scenario: None,
            check_replay: true,
            traps: true,
            crashes: true,
            zombies: true,
            second_job: None,
            profile: Profile::Default,
            table_format: sink_coordinator::TableFormatKind::Native,
        }
    }

    /// Small jobs whose size is drawn from the seed (1..=5 writers,
    /// 2..=16 checkpoints): most of the test net.
    pub fn small(seed: u64, faults: FaultLevel) -> Self {
        Self::drawn(seed, 0x5123, (1, 5), (2, 16), faults)
    }

    /// The same run on a table in `format`.
    pub fn on(self, format: sink_coordinator::TableFormatKind) -> Self {
        SimOptions {
            table_format: format,
            ..self
        }
    }

    /// Larger jobs (6..=12 writers, 20..=60 checkpoints).
    pub fn large(seed: u64, faults: FaultLevel) -> Self {
        Self::drawn(seed, 0x1A76E, (6, 12), (20, 60), faults)
    }

    /// A job whose writers and checkpoints are drawn from the seed (stream
    /// `label`) in the ranges given (both ends included).
    fn drawn(
        seed: u64,
        label: u64,
        writers: (u64, u64),
        checkpoints: (u64, u64),
        faults: FaultLevel,
    ) -> Self {
        let mut r = rng::Rng::derive(seed, label);
        SimOptions {
            writers: r.range(writers.0, writers.1) as u32,
            checkpoints: r.range(checkpoints.0, checkpoints.1),
            faults,
            ..SimOptions::new(seed)
        }
    }
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Snapshots in the table at the end.
    pub snapshots: u64,
    /// Tags in the table at the end.
    pub tags: u64,
    /// Tags seen created by a call.
    pub tags_created: u64,
    /// Checkpoints completed.
    pub completed: u64,
    /// Checkpoints aborted (by the job, or declined).
    pub aborted: u64,
    /// Checkpoints the coordinator declined while restoring.
    pub declined: u64,
    /// Savepoints taken (asynchronous or stop-with-savepoint).
    pub savepoints: u64,
    /// Completions whose notification the coordinator never got (Flink
    /// may skip them; a later completion covers them).
    pub skipped_rounds: u64,
    /// Writers that finished (their final checkpoint completed).
    pub writers_finished: u64,
    /// Writer events delivered to a coordinator.
    pub events_delivered: u64,
    /// Region failovers (`subtask_reset` and a restored writer).
    pub region_failovers: u64,
    /// Global failovers (a new instance from the last completed checkpoint).
    pub global_failovers: u64,
    /// Recoveries that answered `restart-required`.
    pub restarts_required: u64,
    /// Storage faults queued.
    pub storage_faults: u64,
    /// Calls that returned a `storage` error.
    pub storage_errors: u64,
    /// Storage errors answered by a global failover instead of a repeat.
    pub escalations: u64,
    /// Guest traps injected (fuel running out in the middle of a call).
    pub traps: u64,
    /// Committables the writers produced.
    pub committables_produced: u64,
    /// Committables found committed exactly once, in the right snapshot.
    pub committables_verified: u64,
    /// Committables a rollback discarded (never to be committed).
    pub committables_discarded: u64,
    /// Coordinator and writer states decoded and checked.
    pub states_checked: u64,
    /// Recorded traces replayed and found to agree with the run.
    pub replays_checked: u64,
    /// Events delivered after the coordinator was told their checkpoint completed.
    pub late_events: u64,
    /// Savepoint tags deleted by aborts.
    pub tags_deleted: u64,
    /// Aborts delivered to the coordinator after later calls.
    pub late_aborts: u64,
    /// Global failovers whose restore named finished writers.
    pub restores_with_finished: u64,
    /// Finished writers a global failover could not name (an event was in
    /// flight at the checkpoint), restored from their final state.
    pub finished_not_named: u64,
    /// Traps that hit after a write of the call (in the middle of a commit).
    pub traps_after_write: u64,
    /// Simulated process crashes in the middle of a call (after its k-th
    /// write), and how many of them after at least one write.
    pub crashes: u64,
    /// Crashes that hit after at least one write of the call.
    pub crashes_after_write: u64,
    /// Storage errors the host did not repeat (a later call retried).
    pub dropped_errors: u64,
    /// Committed-up-to notifications the host sent to writers.
    pub notifications_sent: u64,
    /// ... of them lost on the way.
    pub notifications_lost: u64,
    /// ... of them delivered (possibly late).
    pub notifications_delivered: u64,
    /// ... of them delivered after a newer one (stale on arrival).
    pub notifications_reordered: u64,
    /// `committed-up-to` queries asked.
    pub queries: u64,
    /// END events delivered while the coordinator was restoring.
    pub end_while_restoring: u64,
    /// Stale instances left running, the calls they got, how many failed,
    /// and how many were stopped before a call that could run a final commit.
    pub zombies: u64,
    /// Calls the stale instances got.
    pub zombie_calls: u64,
    /// Stale instances discarded after a failed call.
    pub zombie_failed: u64,
    /// Stale instances stopped before a call that could run a final commit.
    pub zombie_stopped_before_final: u64,
    /// Aborts delivered again to an instance restored from a state taken
    /// before them.
    pub aborts_redelivered: u64,
    /// Seeds with a second job on the same table.
    pub second_jobs: u64,
    /// Calls after which the component's table was compared with its twin's.
    pub twin_checks: u64,
    /// Completions of the job's last checkpoint (at or after every writer's
    /// final checkpoint) the host did not deliver: a later one was
    /// delivered, or a global failover from one followed (SEMANTICS 4).
    pub last_skipped: u64,
    /// ... of them followed by a global failover instead.
    pub last_failovers: u64,
    /// Flink's replays of a finished subtask after a global failover: empty
    /// restore events (ignored by the core, SEMANTICS 6.2).
    pub finished_restores: u64,
    /// ... and `subtask-reset`s of a finished subtask (ignored too).
    pub finished_resets: u64,
    /// END events delivered after the coordinator was told of the completion
    /// of their writer's final checkpoint.
    pub late_ends: u64,
    /// Savepoint tags found pointing at the END snapshot (drained, SEMANTICS 5.4).
    pub end_tags: u64,
}

impl Stats {
    /// Adds `o`'s counters to these (a campaign's totals).
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
            restores_with_finished,
            finished_not_named,
            traps_after_write,
            crashes,
            crashes_after_write,
            dropped_errors,
            notifications_sent,
            notifications_lost,
            notifications_delivered,
            notifications_reordered,
            queries,
            end_while_restoring,
            zombies,
            zombie_calls,
            zombie_failed,
            zombie_stopped_before_final,
            aborts_redelivered,
            second_jobs,
            twin_checks,
            last_skipped,
            last_failovers,
            finished_restores,
            finished_resets,
            late_ends,
            end_tags
        );
    }
}

/// A broken invariant: the seed and the step to reproduce it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The seed of the run.
    pub seed: u64,
    /// The simulation step (action) at which it was found.
    pub step: u64,
    /// How many trace steps were recorded when it was found.
    pub trace_step: usize,
    /// What broke, naming the invariant (SEMANTICS section) and the values.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {}, step {} (trace step {}): {}",
            self.seed, self.step, self.trace_step, self.message
        )
    }
}

/// The result of one seed.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The seed of the run.
    pub seed: u64,
    /// `native` or `component` ([`Engine::name`]).
    pub engine: &'static str,
    /// The first job's parallelism.
    pub writers: u32,
    /// The checkpoints the main phase was asked for.
    pub checkpoints: u64,
    /// The first job's scenario.
    pub scenario: Scenario,
    /// Jobs (commit users) on the table.
    pub jobs: usize,
    /// Simulation steps (actions) taken.
    pub steps: u64,
    /// The run's counters.
    pub stats: Stats,
    /// `Ok` when every invariant held; else the first violation.
    pub verdict: Result<(), Violation>,
    /// The first error the table's storage itself returned (a full disk, an
    /// object store refusing), not a fault the simulator injected: then the
    /// run says nothing about the coordinator, whatever `verdict` says.
    pub storage_failure: Option<String>,
    /// The recorded trace (TRACE-FORMAT JSON).
    pub trace: String,
    /// On a Paimon table: what its readers must find, as JSON (the records of
    /// the latest snapshot and of each tag, per `job:subtask` as `[lo, hi)`
    /// ranges; `tests/paimon/read_sim_table.py` checks them).
    pub paimon_rows: Option<String>,
}

impl Outcome {
    /// Every invariant held, on a storage that did not fail.
    pub fn verified(&self) -> bool {
        self.verdict.is_ok() && self.storage_failure.is_none()
    }

    /// An invariant broke while the storage worked: a coordinator bug.
    pub fn violation(&self) -> Option<&Violation> {
        match (&self.verdict, &self.storage_failure) {
            (Err(v), None) => Some(v),
            _ => None,
        }
    }
}

/// Runs one seed. `Err` only if the run could not be set up (e.g. the
/// table directory cannot be created).
pub fn run(
    opts: &SimOptions,
    engine: &Engine,
    progress: Option<&dyn campaign::Progress>,
) -> Result<Outcome, String> {
    let mut sim = world::Sim::new(opts, engine.clone(), progress)?;
    let verdict = sim.run();
    Ok(Outcome {
        seed: opts.seed,
        engine: engine.name(),
        writers: sim.jobs[0].p(),
        checkpoints: opts.checkpoints,
        scenario: sim.jobs[0].scenario.clone(),
        jobs: sim.jobs.len(),
        steps: sim.world.step,
        stats: sim.world.stats.clone(),
        verdict,
        storage_failure: sim.world.tables.storage_failure(),
        trace: sim.trace_text(),
        paimon_rows: sim
            .world
            .paimon
            .as_ref()
            .map(|p| paimon::expected_rows(p, &sim.world.log, &sim.world.tags).to_string()),
    })
}
