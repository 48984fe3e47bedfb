//! The simulated streaming job: writers, the checkpoint coordinator of the
//! engine (triggers, completions, aborts, notifications), failovers and
//! faults, driving one coordinator instance at a time. See the module doc of
//! [`crate::sim`] for the model and its constraints.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use sink_coordinator::state_codec;
use sink_coordinator::{
    Config, Entry, FinalCommitMode, Lifecycle, Outcome, RecoveryMode, RestorePoint, Snapshot, Tag,
    END,
};

use crate::clock::ManualClock;
use crate::env::Shared;
use crate::error::{HostErrorKind, HostResult};
use crate::storage::{CallKind, Fault, FaultMode};
use crate::trace::Op;

use super::backend::{open_table, with_table, Engine, SharedStorage, SimCoordinator, WriterApi};
use super::ledger::{Fate, Item, Ledger, MEnd, Mirror, Records};
use super::record::Recorder;
use super::rng::{mix, Rng};
use super::{Ending, FaultLevel, JobMode, Scenario, SimOptions, Stats, Violation};

pub(crate) type Res<T> = Result<T, Violation>;

const CLOCK_START_MS: u64 = 1_000_000;

/// Per fault level: action weights of the fault actions, and how often a
/// storage error makes the host fail over instead of repeating the call.
#[derive(Clone, Copy, Debug)]
struct Rates {
    region: u32,
    global: u32,
    storage: u32,
    trap: u32,
    /// Per mille of storage errors escalated to a global failover.
    escalate: u32,
}

impl Rates {
    /// Weights relative to the other actions (which weigh 10x their listed
    /// weight): a checkpoint takes about `3P + 5` steps, so fault weights are
    /// scaled by `8 / (3P + 5)` to keep the faults per checkpoint the same
    /// whatever the parallelism.
    fn of(level: FaultLevel, parallelism: u32) -> Self {
        let base = match level {
            FaultLevel::None => Rates {
                region: 0,
                global: 0,
                storage: 0,
                trap: 0,
                escalate: 0,
            },
            FaultLevel::Low => Rates {
                region: 6,
                global: 3,
                storage: 12,
                trap: 3,
                escalate: 100,
            },
            FaultLevel::Medium => Rates {
                region: 16,
                global: 8,
                storage: 35,
                trap: 6,
                escalate: 200,
            },
            FaultLevel::High => Rates {
                region: 40,
                global: 20,
                storage: 90,
                trap: 15,
                escalate: 300,
            },
        };
        let steps = 3 * u64::from(parallelism.min(1000)) + 5;
        let scale = |w: u32| {
            if w == 0 {
                0
            } else {
                ((u64::from(w) * 80 / steps) as u32).max(1)
            }
        };
        Rates {
            region: scale(base.region),
            global: scale(base.global),
            storage: scale(base.storage),
            trap: scale(base.trap),
            escalate: base.escalate,
        }
    }
}

/// A message from a writer to the coordinator, in flight.
#[derive(Clone, Debug)]
enum Payload {
    Event(Entry),
    Restored {
        checkpoint: u64,
        entries: Vec<Entry>,
    },
}

#[derive(Clone, Debug)]
struct Msg {
    seq: u64,
    attempt: u32,
    payload: Payload,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WStatus {
    Running,
    /// Input ended (END sent), still taking part in checkpoints.
    Ended,
    /// Done: takes part in nothing any more.
    Finished,
}

/// A writer's checkpointed state at one checkpoint, as the job keeps it.
#[derive(Clone, Debug)]
struct WSnap {
    bytes: Vec<u8>,
    /// Names of the END entry in the helper's buffer.
    end_names: BTreeSet<String>,
    /// Source position: records before it were reported.
    pos: u64,
    ended: bool,
}

struct W {
    attempt: u32,
    helper: Option<Box<dyn WriterApi>>,
    status: WStatus,
    /// Streaming: input ends once this many checkpoints were triggered.
    end_at: u64,
    /// Length of the writer's (bounded) input, fixed when it first ends.
    input_len: Option<u64>,
    pos: u64,
    outbox: VecDeque<Msg>,
    report_seq: BTreeMap<u64, u64>,
    end_seq: Option<u64>,
    notify: Option<u64>,
    /// Finishing needs a notification of a checkpoint `>=` this.
    end_first_cp: Option<u64>,
    buf_end: BTreeSet<String>,
    /// First checkpoint with a watermark.
    wm_start: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Checkpoint,
    AsyncSavepoint,
}

struct Pending {
    id: u64,
    kind: Kind,
    coord_state: Vec<u8>,
    trigger_seq: u64,
    participants: BTreeSet<u32>,
    snaps: BTreeMap<u32, WSnap>,
    finished_before: BTreeSet<u32>,
}

#[derive(Clone)]
struct Completed {
    id: u64,
    coord_state: Vec<u8>,
    writers: BTreeMap<u32, WSnap>,
    finished_before: BTreeSet<u32>,
}

#[derive(Clone, Debug)]
enum Call {
    Event {
        s: u32,
        attempt: u32,
        entry: Entry,
    },
    Restored {
        s: u32,
        attempt: u32,
        r: u64,
        entries: Vec<Entry>,
    },
    Reset {
        s: u32,
        r: Option<u64>,
    },
    Checkpoint(u64),
    Complete(u64),
    Abort(u64),
    Close,
}

impl Call {
    fn op(&self) -> Op {
        match self.clone() {
            Call::Event { s, attempt, entry } => Op::Event {
                subtask: s,
                attempt,
                entry,
            },
            Call::Restored {
                s,
                attempt,
                r,
                entries,
            } => Op::Restored {
                subtask: s,
                attempt,
                checkpoint: r,
                entries,
            },
            Call::Reset { s, r } => Op::ResetSubtask {
                subtask: s,
                checkpoint: r,
            },
            Call::Checkpoint(c) => Op::Checkpoint { checkpoint: c },
            Call::Complete(c) => Op::Complete { checkpoint: c },
            Call::Abort(c) => Op::Abort { checkpoint: c },
            Call::Close => Op::Close,
        }
    }

    fn delivers_end(&self) -> bool {
        match self {
            Call::Event { entry, .. } => entry.checkpoint == END,
            Call::Restored { entries, .. } => entries.iter().any(|e| e.checkpoint == END),
            _ => false,
        }
    }
}

enum Answer {
    #[allow(dead_code)]
    Outcome(Outcome),
    Bytes(Vec<u8>),
    Declined,
    /// The call failed and the host failed over (trap, or an escalated
    /// storage error): the caller's context is gone.
    FailedOver,
}

/// What became of a savepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SpFate {
    /// Taken (async: silently complete, never notified; sync: completed).
    Taken,
    /// `checkpoint-aborted` was called for it.
    Aborted,
    /// Pending when a global failover discarded the coordinator: nobody
    /// tells the new instance, so its tag is not predicted either way.
    Abandoned,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Main,
    /// Bounded job: every writer ends, checkpoints go on until all finished.
    Drain,
    /// Stop-with-savepoint once nothing is pending.
    Stopping,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Trigger,
    Snapshot,
    Complete,
    Abort,
    Deliver,
    Notify,
    EndInput,
    Tick,
    Region,
    Global,
    StorageFault,
    Trap,
    Stop,
    LateAbort,
}

pub(crate) struct Sim<'a> {
    opts: &'a SimOptions,
    engine: Engine,
    rng: Rng,
    pub(crate) cfg: Config,
    pub(crate) scenario: Scenario,
    rates: Rates,
    storage: SharedStorage,
    clock: Shared<ManualClock>,
    now: u64,
    coord: Option<SimCoordinator>,
    pub(crate) rec: Recorder,
    writers: Vec<W>,
    seq: u64,
    next_cp: u64,
    triggered: u64,
    pending: Option<Pending>,
    last_completed: Option<Completed>,
    completed_max: Option<u64>,
    /// Savepoint id -> fate.
    savepoints: BTreeMap<u64, SpFate>,
    phase: Phase,
    starve_next: bool,
    /// Aborts the coordinator has not been told of yet.
    late_aborts: VecDeque<u64>,
    /// Bumped by every global failover: callers detect that their context is gone.
    epoch: u64,
    ledger: Ledger,
    records: Records,
    mirror: Mirror,
    final_done_job: bool,
    seen: Vec<Snapshot>,
    end_snapshots: usize,
    tags: Vec<Tag>,
    aborted_done: BTreeSet<u64>,
    /// A call that may have run the final commit (or its tagging) failed on
    /// storage and has not been repeated successfully yet.
    final_owed: bool,
    /// A final commit happened that wrote no END snapshot.
    final_without_end: bool,
    /// Checkpoints whose entries a region restore replayed.
    region_restored_checkpoints: BTreeSet<u64>,
    /// Highest completion the current coordinator instance was told of.
    coord_completed: Option<u64>,
    pub(crate) step: u64,
    pub(crate) stats: Stats,
    progress: Option<&'a indicatif::ProgressBar>,
}

fn wm_end(seed: u64, s: u32) -> Option<i64> {
    let h = mix(&[seed, u64::from(s), 0xE4D]);
    if h.is_multiple_of(5) {
        None
    } else {
        Some(1_000_000_000 + (h % 100_000) as i64)
    }
}

impl<'a> Sim<'a> {
    pub(crate) fn new(
        opts: &'a SimOptions,
        engine: Engine,
        progress: Option<&'a indicatif::ProgressBar>,
    ) -> Result<Self, String> {
        let mut rng = Rng::new(opts.seed);
        let scenario = opts
            .scenario
            .clone()
            .unwrap_or_else(|| Scenario::random(&mut rng));
        let p = opts.writers.max(1);
        let mut cfg = Config::new(p, format!("sim-{}", opts.seed));
        match scenario.mode {
            JobMode::Streaming => {}
            JobMode::StreamingOnEndInput => cfg.final_commit = FinalCommitMode::OnEndInput,
            JobMode::Batch => cfg.checkpointing = false,
        }
        cfg.force_create_snapshot = scenario.force_create_snapshot;
        cfg.savepoint_auto_tag = scenario.savepoint_auto_tag;
        cfg.tag_time_retained_ms = scenario.tag_time_retained_ms;
        cfg.recovery = if scenario.recovery_continue {
            RecoveryMode::Continue
        } else {
            RecoveryMode::Restart
        };
        let storage = open_table(&opts.table)?;
        let clock = Shared::new(ManualClock::new(CLOCK_START_MS, 0));
        let m = opts.checkpoints;
        let mut writers = Vec::new();
        for _ in 0..p {
            let end_at = match scenario.ending {
                Ending::AllEnd => rng.range(0, m),
                Ending::Stop | Ending::StopDrain => {
                    if rng.chance(300) {
                        rng.range(0, m)
                    } else {
                        u64::MAX
                    }
                }
            };
            let wm_start = rng.range(0, 3);
            writers.push(W {
                attempt: 0,
                helper: None,
                status: WStatus::Running,
                end_at,
                input_len: None,
                pos: 0,
                outbox: VecDeque::new(),
                report_seq: BTreeMap::new(),
                end_seq: None,
                notify: None,
                end_first_cp: None,
                buf_end: BTreeSet::new(),
                wm_start,
            });
        }
        let mut rates = Rates::of(opts.faults, p);
        if !engine.is_component() || !opts.traps {
            rates.trap = 0;
        }
        Ok(Sim {
            opts,
            engine,
            rng,
            rec: Recorder::new(cfg.clone(), CLOCK_START_MS),
            mirror: Mirror::new(p),
            cfg,
            scenario,
            rates,
            storage,
            clock,
            now: CLOCK_START_MS,
            coord: None,
            writers,
            seq: 0,
            next_cp: 1,
            triggered: 0,
            pending: None,
            last_completed: None,
            completed_max: None,
            savepoints: BTreeMap::new(),
            phase: Phase::Main,
            starve_next: false,
            late_aborts: VecDeque::new(),
            epoch: 0,
            ledger: Ledger::default(),
            records: Records::default(),
            final_done_job: false,
            final_owed: false,
            seen: Vec::new(),
            end_snapshots: 0,
            tags: Vec::new(),
            aborted_done: BTreeSet::new(),
            final_without_end: false,
            coord_completed: None,
            region_restored_checkpoints: BTreeSet::new(),
            step: 0,
            stats: Stats::default(),
            progress,
        })
    }

    fn p(&self) -> u32 {
        self.cfg.parallelism
    }

    fn streaming(&self) -> bool {
        self.cfg.checkpointing
    }

    fn fail(&self, message: impl Into<String>) -> Violation {
        Violation {
            seed: self.opts.seed,
            step: self.step,
            trace_step: self.rec.len(),
            message: message.into(),
            known: None,
        }
    }

    fn known(&self, mut v: Violation, issue: &'static str) -> Violation {
        v.known = Some(issue);
        v
    }

    fn host<T>(&self, what: &str, r: HostResult<T>) -> Res<T> {
        r.map_err(|e| self.fail(format!("{what} failed: {e}")))
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn wm(&self, s: u32, c: u64) -> Option<i64> {
        if c < self.writers[s as usize].wm_start {
            None
        } else {
            Some(c as i64 * 1000 + (mix(&[self.opts.seed, u64::from(s), c]) % 700) as i64)
        }
    }

    // ------------------------------------------------------------------
    // The run
    // ------------------------------------------------------------------

    pub(crate) fn run(&mut self) -> Res<()> {
        let result = self.run_inner();
        self.stats.snapshots = self.seen.len() as u64;
        self.stats.tags = self.tags.len() as u64;
        result
    }

    fn run_inner(&mut self) -> Res<()> {
        for s in 0..self.p() {
            let helper = self.engine.writer(s);
            self.writers[s as usize].helper = Some(self.host("creating a writer", helper)?);
        }
        self.start_instance(None)?;
        let cap = 5_000 + 600 * (self.opts.checkpoints + 10) * u64::from(self.p().min(16));
        while self.phase != Phase::Done {
            self.step += 1;
            if let Some(pb) = self.progress {
                pb.set_position(self.triggered.min(self.opts.checkpoints));
            }
            if self.step > cap {
                return Err(self.fail(format!(
                    "no progress after {cap} steps (phase {:?})",
                    self.phase
                )));
            }
            self.advance_phase()?;
            if self.phase == Phase::Done {
                break;
            }
            let actions = self.enabled();
            let weights: Vec<u32> = actions.iter().map(|(_, w)| *w).collect();
            let Some(i) = self.rng.weighted(&weights) else {
                return Err(self.fail(format!("nothing can happen (phase {:?})", self.phase)));
            };
            let action = actions[i].0;
            self.act(action)?;
        }
        self.final_checks()
    }

    fn faults_on(&self) -> bool {
        self.phase == Phase::Main
    }

    fn alive(&self, s: u32) -> bool {
        self.writers[s as usize].status != WStatus::Finished
    }

    fn deliverable(&self, s: u32) -> bool {
        let w = &self.writers[s as usize];
        let Some(front) = w.outbox.front() else {
            return false;
        };
        if self.mirror.is_restoring() {
            matches!(front.payload, Payload::Restored { .. })
        } else {
            true
        }
    }

    fn notifiable(&self, s: u32) -> bool {
        let w = &self.writers[s as usize];
        let Some(c) = w.notify else { return false };
        match (w.report_seq.get(&c), w.outbox.front()) {
            (Some(rs), Some(front)) => front.seq > *rs,
            _ => true,
        }
    }

    fn can_end(&self, s: u32) -> bool {
        let w = &self.writers[s as usize];
        if w.status != WStatus::Running {
            return false;
        }
        match self.scenario.ending {
            _ if !self.streaming() => true,
            _ if self.phase == Phase::Drain => true,
            Ending::StopDrain if self.phase == Phase::Stopping => true,
            _ => w.input_len.is_some() || self.triggered >= w.end_at,
        }
    }

    fn enabled(&self) -> Vec<(Action, u32)> {
        let mut out = Vec::new();
        let p = self.p();
        let running_coord = !self.mirror.is_restoring();
        if self.streaming() {
            match &self.pending {
                None => {
                    let may_trigger = match self.phase {
                        Phase::Main => self.triggered < self.opts.checkpoints,
                        Phase::Drain => true,
                        _ => false,
                    };
                    if may_trigger {
                        // Checkpoints a restoring coordinator declines are rarely tried.
                        out.push((Action::Trigger, if running_coord { 80 } else { 8 }));
                    }
                    if self.phase == Phase::Stopping
                        && running_coord
                        && (self.scenario.ending != Ending::StopDrain
                            || (0..p).all(|s| !self.can_end(s)))
                    {
                        out.push((Action::Stop, 200));
                    }
                }
                Some(pd) => {
                    let missing = pd.participants.iter().any(|s| !pd.snaps.contains_key(s));
                    if missing {
                        out.push((Action::Snapshot, 200));
                    } else {
                        out.push((Action::Complete, 120));
                    }
                    out.push((Action::Abort, if self.phase == Phase::Main { 8 } else { 2 }));
                }
            }
        }
        if (0..p).any(|s| self.deliverable(s)) {
            out.push((Action::Deliver, 250));
        }
        if (0..p).any(|s| self.notifiable(s)) {
            out.push((Action::Notify, 80));
        }
        if (0..p).any(|s| self.can_end(s)) {
            let forced = self.phase != Phase::Main;
            out.push((Action::EndInput, if forced { 200 } else { 40 }));
        }
        out.push((Action::Tick, 15));
        if !self.late_aborts.is_empty() {
            out.push((Action::LateAbort, 40));
        }
        for (_, w) in out.iter_mut() {
            *w *= 10;
        }
        if self.faults_on() {
            let r = self.rates;
            let region_ok = (0..p).any(|s| self.alive(s));
            if r.region > 0 && region_ok {
                out.push((Action::Region, r.region));
            }
            if r.global > 0 {
                out.push((Action::Global, r.global));
            }
            if r.storage > 0 {
                out.push((Action::StorageFault, r.storage));
            }
            if r.trap > 0 && !self.starve_next {
                out.push((Action::Trap, r.trap));
            }
        }
        out
    }

    /// Moves between phases; closes the job when it is over.
    fn advance_phase(&mut self) -> Res<()> {
        let p = self.p();
        let quiet = (0..p).all(|s| self.writers[s as usize].outbox.is_empty())
            && self.late_aborts.is_empty();
        match self.phase {
            Phase::Main => {
                if !self.streaming() {
                    let all_done =
                        (0..p).all(|s| self.writers[s as usize].status == WStatus::Finished);
                    if all_done && quiet && !self.mirror.is_restoring() {
                        if !self.final_done_job {
                            return Err(self.fail("every writer of the batch job finished, but no final commit happened"));
                        }
                        self.close()?;
                    }
                } else if self.triggered >= self.opts.checkpoints && self.pending.is_none() {
                    // No fault after the main phase, not even an armed trap.
                    self.starve_next = false;
                    self.phase = match self.scenario.ending {
                        Ending::AllEnd => Phase::Drain,
                        Ending::Stop | Ending::StopDrain => Phase::Stopping,
                    };
                }
            }
            Phase::Drain => {
                let all_done = (0..p).all(|s| self.writers[s as usize].status == WStatus::Finished);
                if all_done && quiet && self.pending.is_none() && !self.mirror.is_restoring() {
                    if !self.final_done_job {
                        return Err(
                            self.fail("every writer finished, but no final commit happened")
                        );
                    }
                    self.close()?;
                }
            }
            Phase::Stopping | Phase::Done => {}
        }
        Ok(())
    }

    fn act(&mut self, action: Action) -> Res<()> {
        let p = self.p();
        match action {
            Action::Trigger => self.trigger(),
            Action::Snapshot => {
                let Some(pd) = &self.pending else {
                    return Ok(());
                };
                let todo: Vec<u32> = pd
                    .participants
                    .iter()
                    .copied()
                    .filter(|s| !pd.snaps.contains_key(s))
                    .collect();
                let s = *self.rng.pick(&todo).unwrap_or(&0);
                self.snapshot(s)
            }
            Action::Complete => {
                if self.rng.chance(40) {
                    self.abort_pending()
                } else {
                    self.complete_pending()
                }
            }
            Action::Abort => self.abort_pending(),
            Action::Deliver => {
                let ready: Vec<u32> = (0..p).filter(|s| self.deliverable(*s)).collect();
                let s = *self.rng.pick(&ready).unwrap_or(&0);
                self.deliver(s).map(|_| ())
            }
            Action::Notify => {
                let ready: Vec<u32> = (0..p).filter(|s| self.notifiable(*s)).collect();
                let s = *self.rng.pick(&ready).unwrap_or(&0);
                self.notify(s)
            }
            Action::EndInput => {
                let ready: Vec<u32> = (0..p).filter(|s| self.can_end(*s)).collect();
                let s = *self.rng.pick(&ready).unwrap_or(&0);
                self.end_input(s)
            }
            Action::Tick => {
                self.now += self.rng.range(1, 500);
                self.clock.lock().set_next(self.now);
                self.rec.push(Op::Clock { ms: self.now });
                Ok(())
            }
            Action::Region => {
                let alive: Vec<u32> = (0..p).filter(|s| self.alive(*s)).collect();
                let s = *self.rng.pick(&alive).unwrap_or(&0);
                self.region_failover(s)
            }
            Action::Global => self.global_failover("injected failure"),
            Action::StorageFault => {
                self.inject_storage_fault();
                Ok(())
            }
            Action::Trap => {
                self.starve_next = true;
                Ok(())
            }
            Action::Stop => self.stop_with_savepoint(),
            Action::LateAbort => self.deliver_late_abort(),
        }
    }

    fn inject_storage_fault(&mut self) {
        let call = match self.rng.weighted(&[60, 15, 15, 10]) {
            Some(0) => CallKind::Put,
            Some(1) => CallKind::Get,
            Some(2) => CallKind::List,
            _ => CallKind::Delete,
        };
        let mode = if self.rng.chance(500) {
            FaultMode::Fail
        } else {
            FaultMode::Ambiguous
        };
        let fault = Fault {
            skip: self.rng.range(0, 4),
            count: if self.rng.chance(100) { 2 } else { 1 },
            mode,
        };
        self.storage.lock().push_fault(call, fault);
        self.rec.push(Op::StorageFault { call, fault });
        self.stats.storage_faults += 1;
    }

    // ------------------------------------------------------------------
    // Coordinator calls
    // ------------------------------------------------------------------

    /// Creates and starts an instance (fresh, or restored from `restore`),
    /// recording `start` / `failover`; repeats on storage errors.
    fn start_instance(&mut self, restore: Option<Completed>) -> Res<()> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            if attempts > 100 {
                return Err(self.fail("start keeps failing on storage"));
            }
            let point = restore.as_ref().map(|c| RestorePoint {
                checkpoint: c.id,
                state: c.coord_state.clone(),
                finished_subtasks: c.finished_before.iter().copied().collect(),
            });
            if self.rec.is_empty() {
                self.rec.push(Op::Start {
                    config: self.cfg.clone(),
                });
            } else {
                self.rec.push(Op::Failover {
                    checkpoint: restore.as_ref().map(|c| c.id),
                    finished_subtasks: restore
                        .as_ref()
                        .map(|c| c.finished_before.iter().copied().collect())
                        .unwrap_or_default(),
                    config: self.cfg.clone(),
                    state: None,
                });
            }
            self.coord = None;
            self.coord_completed = restore.as_ref().map(|c| c.id);
            let created = self
                .engine
                .coordinator(&self.storage, &self.clock, &self.cfg, point);
            let mut coord = self.host("creating a coordinator", created)?;
            self.mirror = match &restore {
                None => Mirror::new(self.p()),
                Some(c) => {
                    let decoded = state_codec::decode(&c.coord_state).map_err(|e| {
                        self.fail(format!(
                            "the state bytes of checkpoint {} do not decode: {e}",
                            c.id
                        ))
                    })?;
                    let ends: BTreeMap<u32, MEnd> = decoded
                        .end_entries
                        .iter()
                        .map(|(s, e)| (*s, MEnd::from_state(e)))
                        .collect();
                    Mirror::restoring(self.p(), c.id, ends, &c.finished_before)
                }
            };
            let result = coord.start();
            self.coord = Some(coord);
            self.observe()?;
            match result {
                Ok(outcome) => {
                    self.mirror.final_done = self.end_snapshots > 0;
                    if self.mirror.all_restored() {
                        self.mirror.finish_recovery();
                        self.after_final_point(true)?;
                    }
                    self.check_state(outcome.state, "start")?;
                    if outcome.restart_required {
                        self.stats.restarts_required += 1;
                        return self.global_failover("restart required by the recovery");
                    }
                    return Ok(());
                }
                Err(e) if e.kind == HostErrorKind::Core(sink_coordinator::ErrorKind::Storage) => {
                    self.stats.storage_errors += 1;
                    continue;
                }
                Err(e) => return Err(self.fail(format!("start failed: {e}"))),
            }
        }
    }

    fn check_state(&mut self, state: Lifecycle, what: &str) -> Res<()> {
        let expected = if self.mirror.is_restoring() {
            Lifecycle::Restoring
        } else {
            Lifecycle::Running
        };
        if state != expected && state != Lifecycle::Closed {
            return Err(self.fail(format!(
                "after {what} the coordinator is {}, expected {}",
                state.name(),
                expected.name()
            )));
        }
        Ok(())
    }

    fn escalatable(&self, call: &Call) -> bool {
        // Aborts are always repeated: a failover would leave the tag of an
        // aborted savepoint behind (nobody else deletes it). So is a call
        // that may be running the final commit: it commits checkpoints that
        // did not complete, and a failover to an older checkpoint would
        // make the writers produce their data again.
        let final_may_run = (self.mirror.all_ended() && !self.mirror.final_done) || self.final_owed;
        self.faults_on() && !final_may_run && !matches!(call, Call::Abort(_) | Call::Close)
    }

    /// Makes one coordinator call (repeating it after storage errors) and
    /// checks the table afterwards.
    fn call(&mut self, call: Call) -> Res<Answer> {
        let mut repeats = 0;
        let mut applied = false;
        loop {
            let starve = self.starve_next && !matches!(call, Call::Close);
            let coord = self
                .coord
                .as_mut()
                .ok_or_else(|| Violation::internal("no coordinator"))?;
            let starved = starve && coord.starve();
            if starved {
                self.starve_next = false;
            } else {
                self.rec.push(call.op());
            }
            let api = coord.api();
            let mut bytes = None;
            let result: HostResult<Option<Outcome>> = match &call {
                Call::Event { s, attempt, entry } => {
                    api.event(*s, *attempt, entry.clone()).map(Some)
                }
                Call::Restored {
                    s,
                    attempt,
                    r,
                    entries,
                } => api.restored(*s, *attempt, *r, entries.clone()).map(Some),
                Call::Reset { s, r } => api.subtask_reset(*s, *r).map(Some),
                Call::Checkpoint(n) => api.checkpoint(*n).map(|b| {
                    bytes = Some(b);
                    None
                }),
                Call::Complete(n) => api.checkpoint_complete(*n).map(Some),
                Call::Abort(n) => api.checkpoint_aborted(*n).map(Some),
                Call::Close => api.close().map(Some),
            };
            match result {
                Err(e) if e.kind == HostErrorKind::Trap => {
                    if !starved {
                        return Err(self.fail(format!("unexpected trap: {e}")));
                    }
                    self.stats.traps += 1;
                    self.global_failover("guest trap")?;
                    return Ok(Answer::FailedOver);
                }
                Err(e) if e.kind == HostErrorKind::Core(sink_coordinator::ErrorKind::Declined) => {
                    if !matches!(call, Call::Checkpoint(_)) || !self.mirror.is_restoring() {
                        return Err(self.fail(format!("unexpected decline: {e}")));
                    }
                    return Ok(Answer::Declined);
                }
                Err(e) if e.kind == HostErrorKind::Core(sink_coordinator::ErrorKind::Storage) => {
                    self.stats.storage_errors += 1;
                    if !applied {
                        self.apply_input(&call);
                        applied = true;
                    }
                    // Decided before observing the table: a final commit whose END
                    // snapshot landed may still owe its tags (only a repeat creates them).
                    let escalatable = self.escalatable(&call);
                    if self.mirror.all_ended() {
                        self.final_owed = true;
                    }
                    self.observe()?;
                    if escalatable && self.rng.chance(self.rates.escalate) {
                        self.stats.escalations += 1;
                        self.global_failover("storage error")?;
                        return Ok(Answer::FailedOver);
                    }
                    repeats += 1;
                    if repeats > 100 {
                        return Err(self.fail(format!("storage errors do not stop: {e}")));
                    }
                    continue;
                }
                Err(e) => {
                    return Err(self.fail(format!(
                        "coordinator call {:?} failed: {e}",
                        call.op().name()
                    )));
                }
                Ok(outcome) => {
                    self.final_owed = false;
                    if !applied {
                        self.apply_input(&call);
                    }
                    self.observe()?;
                    if let Some(b) = bytes {
                        self.check_state_bytes(&b)?;
                        return Ok(Answer::Bytes(b));
                    }
                    let outcome = outcome.ok_or_else(|| Violation::internal("no outcome"))?;
                    self.after_ok(&call, &outcome)?;
                    if outcome.restart_required {
                        self.stats.restarts_required += 1;
                        self.global_failover("restart required by the recovery")?;
                        return Ok(Answer::FailedOver);
                    }
                    return Ok(Answer::Outcome(outcome));
                }
            }
        }
    }

    /// The coordinator accepted the call's input (it returned, or failed on storage).
    fn apply_input(&mut self, call: &Call) {
        match call {
            Call::Event { s, entry, .. } => self.mirror.event(*s, entry),
            Call::Restored { s, r, entries, .. } => {
                self.mirror.restored(*s, *r, entries);
            }
            Call::Reset { s, r } => self.mirror.reset(*s, *r),
            Call::Abort(n) => {
                if self.savepoints.contains_key(n) {
                    self.savepoints.insert(*n, SpFate::Aborted);
                }
            }
            Call::Checkpoint(_) | Call::Complete(_) | Call::Close => {}
        }
    }

    fn after_ok(&mut self, call: &Call, outcome: &Outcome) -> Res<()> {
        if let Call::Complete(n) = call {
            self.coord_completed = self.coord_completed.max(Some(*n));
        }
        if let Call::Abort(n) = call {
            self.aborted_done.insert(*n);
            self.check_tags()?;
        }
        if matches!(call, Call::Close) {
            if outcome.state != Lifecycle::Closed {
                return Err(self.fail(format!(
                    "close left the coordinator {}",
                    outcome.state.name()
                )));
            }
            return Ok(());
        }
        if self.mirror.is_restoring() {
            if matches!(call, Call::Restored { .. }) && self.mirror.all_restored() {
                self.mirror.finish_recovery();
                self.after_final_point(true)?;
            }
        } else {
            let end_trigger = call.delivers_end()
                && (self.cfg.final_commit == FinalCommitMode::OnEndInput
                    || !self.cfg.checkpointing);
            let due = matches!(call, Call::Complete(_)) || end_trigger;
            self.after_final_point(due)?;
        }
        self.check_state(outcome.state, call.op().name())
    }

    /// After a successful call that runs a final commit if every slot holds
    /// an END entry (`due`): checks the END snapshot is there iff expected.
    fn after_final_point(&mut self, due: bool) -> Res<()> {
        if !due || self.mirror.final_done || !self.mirror.all_ended() {
            return Ok(());
        }
        self.mirror.final_done = true;
        self.final_done_job = true;
        let (names, _) = self.mirror.expected_end();
        let expected = !names.is_empty() || self.cfg.force_create_snapshot;
        if !expected {
            self.final_without_end = true;
        }
        if expected != (self.end_snapshots == 1) {
            return Err(self.fail(format!(
                "the final commit happened: expected {} END snapshot, the table has {}",
                usize::from(expected),
                self.end_snapshots
            )));
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // Table observation and per-step invariants
    // ------------------------------------------------------------------

    fn observe(&mut self) -> Res<()> {
        loop {
            let id = self.seen.len() as u64 + 1;
            let read = with_table(&self.storage, |st| {
                sink_coordinator::table::snapshot_by_id(st, id)
            });
            let Some(snap) =
                read.map_err(|e| self.fail(format!("cannot read snapshot {id}: {e}")))?
            else {
                break;
            };
            self.check_snapshot(&snap)?;
            self.seen.push(snap);
        }
        self.check_tags()
    }

    fn check_snapshot(&mut self, snap: &Snapshot) -> Res<()> {
        let id = snap.id;
        if snap.commit_user != self.cfg.commit_user {
            return Err(self.fail(format!(
                "snapshot {id} has commit user {:?}",
                snap.commit_user
            )));
        }
        if let Some(prev) = self.seen.last() {
            if snap.identifier <= prev.identifier {
                return Err(self.fail(format!(
                    "identifiers do not increase: snapshot {id} has {} after {}",
                    sink_coordinator::checkpoint_name(snap.identifier),
                    sink_coordinator::checkpoint_name(prev.identifier)
                )));
            }
        }
        if snap.time_ms != self.now {
            return Err(self.fail(format!(
                "snapshot {id} has time {} ms, the clock says {}",
                snap.time_ms, self.now
            )));
        }
        let (expected, wm) = if snap.identifier == END {
            self.end_snapshots += 1;
            if self.end_snapshots > 1 {
                return Err(self.fail(format!("a second END snapshot: {id}")));
            }
            self.mirror.expected_end()
        } else {
            self.mirror.expected_ordinary(snap.identifier)
        };
        let actual: Vec<(u32, String)> = snap
            .committables
            .iter()
            .map(|(s, b)| (*s, String::from_utf8_lossy(b).into_owned()))
            .collect();
        if actual != expected {
            return Err(self.fail(format!(
                "snapshot {id} (identifier {}) holds {:?}, expected {:?}",
                sink_coordinator::checkpoint_name(snap.identifier),
                actual,
                expected
            )));
        }
        if snap.watermark != wm {
            return Err(self.fail(format!(
                "snapshot {id} (identifier {}) has watermark {:?}, SEMANTICS 3 gives {:?}",
                sink_coordinator::checkpoint_name(snap.identifier),
                snap.watermark,
                wm
            )));
        }
        for (s, name) in &actual {
            let Some(item) = self.ledger.items.get(name).cloned() else {
                return Err(self.fail(format!(
                    "snapshot {id} holds {name:?}, which no writer produced"
                )));
            };
            if item.subtask != *s || item.checkpoint != snap.identifier {
                return Err(self.fail(format!(
                    "snapshot {id} holds {name:?} under subtask {s} / identifier {}, produced by subtask {} for {}",
                    sink_coordinator::checkpoint_name(snap.identifier),
                    item.subtask,
                    sink_coordinator::checkpoint_name(item.checkpoint)
                )));
            }
            match item.fate {
                Fate::Pending => {}
                Fate::Committed(other) => {
                    return Err(self.fail(format!(
                        "{name:?} is committed twice: snapshots {other} and {id}"
                    )))
                }
                Fate::Discarded(step) => {
                    return Err(self.fail(format!(
                        "snapshot {id} holds {name:?}, which a rollback discarded at step {step}"
                    )))
                }
            }
            if let Err(record) = self.records.add(*s, item.lo, item.hi) {
                let v = self.fail(format!(
                    "snapshot {id} commits record {record} of writer {s} again ({name:?}, post-final: {}); committed so far: {}",
                    item.post_final,
                    self.records.describe(*s)
                ));
                if item.post_final && self.final_without_end && self.stats.global_failovers > 0 {
                    return Err(self.known(v, super::known::FINAL_COMMIT_WITHOUT_END_SNAPSHOT));
                }
                return Err(v);
            }
            if let Some(it) = self.ledger.items.get_mut(name) {
                it.fate = Fate::Committed(id);
            }
            self.stats.committables_verified += 1;
        }
        if snap.identifier == END {
            self.mirror.final_done = true;
            self.final_done_job = true;
        }
        Ok(())
    }

    fn check_tags(&mut self) -> Res<()> {
        let tags = with_table(&self.storage, |st| sink_coordinator::table::list_tags(st))
            .map_err(|e| self.fail(format!("cannot list tags: {e}")))?;
        for t in &tags {
            if !self.tags.iter().any(|old| old.name == t.name) {
                self.stats.tags_created += 1;
                if t.create_time_ms != self.now {
                    return Err(self.fail(format!(
                        "tag {} created at {} ms, the clock says {}",
                        t.name, t.create_time_ms, self.now
                    )));
                }
                let expire = self.cfg.tag_time_retained_ms.map(|r| t.create_time_ms + r);
                if t.expire_time_ms != expire {
                    return Err(self.fail(format!(
                        "tag {} expires at {:?}, expected {:?}",
                        t.name, t.expire_time_ms, expire
                    )));
                }
            }
            if !self.cfg.savepoint_auto_tag {
                return Err(self.fail(format!(
                    "tag {} exists although savepoint-auto-tag is off",
                    t.name
                )));
            }
            let s = t
                .name
                .strip_prefix("savepoint-")
                .and_then(|x| x.parse::<u64>().ok());
            let Some(s) = s else {
                return Err(self.fail(format!("unexpected tag {}", t.name)));
            };
            if !self.savepoints.contains_key(&s) {
                return Err(self.fail(format!(
                    "tag {} names checkpoint {s}, which is no savepoint",
                    t.name
                )));
            }
            if self.aborted_done.contains(&s) {
                return Err(self.fail(format!(
                    "tag {} exists although savepoint {s} was aborted",
                    t.name
                )));
            }
            let snap = self.seen.iter().find(|x| x.identifier == s);
            match snap {
                Some(x) if x.id == t.snapshot_id && t.identifier == s => {}
                _ => {
                    return Err(self.fail(format!(
                        "tag {} points at snapshot {} (identifier {}), but the snapshot of identifier {s} is {:?}",
                        t.name,
                        t.snapshot_id,
                        t.identifier,
                        snap.map(|x| x.id)
                    )))
                }
            }
        }
        self.stats.tags_deleted += self
            .tags
            .iter()
            .filter(|old| !tags.iter().any(|t| t.name == old.name))
            .count() as u64;
        self.tags = tags;
        Ok(())
    }

    /// Coordinator state bytes: round-trip, commit user, parallelism, END entries.
    fn check_state_bytes(&mut self, bytes: &[u8]) -> Res<()> {
        let state = state_codec::decode(bytes)
            .map_err(|e| self.fail(format!("state bytes do not decode: {e}")))?;
        let again = state_codec::encode(
            &state.commit_user,
            state.parallelism,
            state.end_entries.iter().map(|(s, e)| (*s, e)),
        );
        if again != bytes {
            return Err(self.fail("state bytes do not round-trip (decode, encode)"));
        }
        if state.commit_user != self.cfg.commit_user || state.parallelism != self.p() {
            return Err(self.fail(format!(
                "state bytes hold commit user {:?}, parallelism {}",
                state.commit_user, state.parallelism
            )));
        }
        let actual: Vec<(u32, MEnd)> = state
            .end_entries
            .iter()
            .map(|(s, e)| (*s, MEnd::from_state(e)))
            .collect();
        let expected = self.mirror.expected_state_ends();
        if actual != expected {
            return Err(self.fail(format!(
                "state bytes hold END entries {actual:?}, expected {expected:?}"
            )));
        }
        self.stats.states_checked += 1;
        Ok(())
    }

    // ------------------------------------------------------------------
    // Writers
    // ------------------------------------------------------------------

    fn new_item(&mut self, s: u32, c: u64, k: u32, lo: u64, hi: u64) -> Vec<u8> {
        let attempt = self.writers[s as usize].attempt;
        let name = Ledger::name(s, c, attempt, k);
        let post_final = self.final_done_job;
        self.ledger.items.insert(
            name.clone(),
            Item {
                subtask: s,
                checkpoint: c,
                attempt,
                k,
                lo,
                hi,
                fate: Fate::Pending,
                post_final,
                region_restored: false,
            },
        );
        self.stats.committables_produced += 1;
        name.into_bytes()
    }

    /// Splits records `[lo, hi)` into 1 or 2 committables (none if empty).
    fn produce(&mut self, s: u32, c: u64, lo: u64, hi: u64) -> Vec<Vec<u8>> {
        if lo >= hi {
            return Vec::new();
        }
        let parts = if hi - lo >= 2 && self.rng.chance(400) {
            2
        } else {
            1
        };
        if parts == 1 {
            vec![self.new_item(s, c, 0, lo, hi)]
        } else {
            let mid = self.rng.range(lo + 1, hi - 1);
            vec![
                self.new_item(s, c, 0, lo, mid),
                self.new_item(s, c, 1, mid, hi),
            ]
        }
    }

    fn send(&mut self, s: u32, payload: Payload) -> u64 {
        let seq = self.next_seq();
        let w = &mut self.writers[s as usize];
        w.outbox.push_back(Msg {
            seq,
            attempt: w.attempt,
            payload,
        });
        seq
    }

    fn helper(&mut self, s: u32) -> Res<&mut Box<dyn WriterApi>> {
        let (seed, step, trace_step) = (self.opts.seed, self.step, self.rec.len());
        self.writers[s as usize]
            .helper
            .as_mut()
            .ok_or_else(|| Violation {
                seed,
                step,
                trace_step,
                message: format!("writer {s} has no helper"),
                known: None,
            })
    }

    fn snapshot(&mut self, s: u32) -> Res<()> {
        let Some(pd) = &self.pending else {
            return Ok(());
        };
        let (n, kind) = (pd.id, pd.kind);
        let savepoint = kind == Kind::AsyncSavepoint && self.cfg.savepoint_auto_tag;
        let w = &self.writers[s as usize];
        let (lo, hi) = if w.status == WStatus::Running {
            let take = self.rng.weighted(&[30, 35, 25, 10]).unwrap_or(0) as u64;
            let hi = match w.input_len {
                Some(len) => (w.pos + take).min(len),
                None => w.pos + take,
            };
            (w.pos, hi)
        } else {
            (w.pos, w.pos)
        };
        let committables = self.produce(s, n, lo, hi);
        let wm = self.wm(s, n);
        let report = self.helper(s)?.report(n, committables, wm, savepoint);
        let entry = self.host("writer report", report)?;
        let state = self.helper(s)?.state();
        let bytes = self.host("writer state", state)?;
        let seq = self.send(s, Payload::Event(entry));
        let w = &mut self.writers[s as usize];
        w.pos = hi;
        w.report_seq.insert(n, seq);
        let snap = WSnap {
            bytes,
            end_names: w.buf_end.clone(),
            pos: w.pos,
            ended: w.status == WStatus::Ended,
        };
        if let Some(pd) = &mut self.pending {
            pd.snaps.insert(s, snap);
        }
        Ok(())
    }

    fn end_input(&mut self, s: u32) -> Res<()> {
        let batch = !self.streaming();
        let w = &self.writers[s as usize];
        let pos = w.pos;
        let len = match w.input_len {
            Some(len) => len,
            None => {
                pos + if batch {
                    self.rng.range(1, 6)
                } else {
                    self.rng.range(0, 3)
                }
            }
        };
        self.writers[s as usize].input_len = Some(len);
        let committables = self.produce(s, END, pos, len);
        let names: Vec<String> = committables
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        let wm = wm_end(self.opts.seed, s);
        let ended = self.helper(s)?.end_input(committables, wm);
        let entry = self.host("writer end-input", ended)?;
        let seq = self.send(s, Payload::Event(entry));
        let first_cp = match &self.pending {
            Some(pd) if pd.participants.contains(&s) && !pd.snaps.contains_key(&s) => pd.id,
            _ => self.next_cp,
        };
        let w = &mut self.writers[s as usize];
        w.pos = len;
        w.buf_end.extend(names);
        w.status = WStatus::Ended;
        w.end_seq = Some(seq);
        w.end_first_cp = Some(first_cp);
        Ok(())
    }

    /// Delivers the front message of writer `s`; false if the host failed over.
    fn deliver(&mut self, s: u32) -> Res<bool> {
        let Some(msg) = self.writers[s as usize].outbox.pop_front() else {
            return Ok(true);
        };
        if let Payload::Event(e) = &msg.payload {
            if e.checkpoint != END && self.coord_completed.is_some_and(|c| e.checkpoint <= c) {
                self.stats.late_events += 1;
            }
        }
        let call = match msg.payload {
            Payload::Event(entry) => Call::Event {
                s,
                attempt: msg.attempt,
                entry,
            },
            Payload::Restored {
                checkpoint,
                entries,
            } => Call::Restored {
                s,
                attempt: msg.attempt,
                r: checkpoint,
                entries,
            },
        };
        self.stats.events_delivered += 1;
        if matches!(self.call(call)?, Answer::FailedOver) {
            return Ok(false);
        }
        if !self.streaming() {
            let w = &mut self.writers[s as usize];
            if w.status == WStatus::Ended && w.outbox.is_empty() {
                w.status = WStatus::Finished;
                w.helper = None;
            }
        }
        Ok(true)
    }

    /// Delivers messages of writer `s` while `keep(seq)` holds for the front one.
    fn flush_writer(&mut self, s: u32, keep: impl Fn(u64) -> bool) -> Res<bool> {
        let epoch = self.epoch;
        while let Some(front) = self.writers[s as usize].outbox.front() {
            if !keep(front.seq) || !self.deliverable(s) {
                break;
            }
            if !self.deliver(s)? || self.epoch != epoch {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn notify(&mut self, s: u32) -> Res<()> {
        let Some(c) = self.writers[s as usize].notify.take() else {
            return Ok(());
        };
        let r = self.helper(s)?.checkpoint_complete(c);
        self.host("writer checkpoint-complete", r)?;
        self.stats.writer_notifications += 1;
        let w = &mut self.writers[s as usize];
        if w.status == WStatus::Ended && w.end_first_cp.is_some_and(|f| f <= c) {
            w.status = WStatus::Finished;
            w.helper = None;
            self.stats.writers_finished += 1;
            // A task that finishes before taking part in the pending
            // checkpoint declines it (Flink: task closing): aborted.
            if self
                .pending
                .as_ref()
                .is_some_and(|pd| pd.participants.contains(&s) && !pd.snaps.contains_key(&s))
            {
                self.abort_pending()?;
            }
        }
        Ok(())
    }

    /// Restarts writer `s` (new attempt) from its state at `r`, or from
    /// scratch; discards what the rollback drops.
    fn restart_writer(&mut self, s: u32, r: Option<&Completed>, region: bool) -> Res<()> {
        let snap = r.and_then(|c| c.writers.get(&s).cloned());
        if r.is_some() && snap.is_none() {
            return Err(self.fail(format!(
                "writer {s} has no state in checkpoint {}",
                r.map_or(0, |c| c.id)
            )));
        }
        let kept_end = snap
            .as_ref()
            .map(|x| x.end_names.clone())
            .unwrap_or_default();
        self.stats.committables_discarded +=
            self.ledger
                .discard(s, r.map(|c| c.id), &kept_end, self.step) as u64;
        let helper = self.engine.writer(s);
        let mut helper = self.host("creating a writer", helper)?;
        let w = &mut self.writers[s as usize];
        w.attempt += 1;
        w.outbox.clear();
        w.report_seq.clear();
        w.notify = None;
        w.end_seq = None;
        w.end_first_cp = None;
        let restored = match (&snap, r) {
            (Some(snap), Some(c)) => {
                let entries = helper.restore(&snap.bytes, c.id);
                Some((c.id, self.host("writer restore", entries)?))
            }
            _ => None,
        };
        let w = &mut self.writers[s as usize];
        w.helper = Some(helper);
        w.pos = snap.as_ref().map_or(0, |x| x.pos);
        w.buf_end = kept_end;
        w.status = WStatus::Running;
        if let Some((checkpoint, entries)) = restored {
            if region {
                for e in entries.iter().filter(|e| e.checkpoint != END) {
                    self.region_restored_checkpoints.insert(e.checkpoint);
                    for b in &e.committables {
                        if let Some(item) = self
                            .ledger
                            .items
                            .get_mut(String::from_utf8_lossy(b).as_ref())
                        {
                            item.region_restored = true;
                        }
                    }
                }
            }
            self.send(
                s,
                Payload::Restored {
                    checkpoint,
                    entries,
                },
            );
        }
        if snap.as_ref().is_some_and(|x| x.ended) {
            // The source is at its end again at once: END is re-sent (the
            // restored END entry, with nothing new appended).
            self.end_input(s)?;
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // Checkpoints
    // ------------------------------------------------------------------

    fn trigger(&mut self) -> Res<()> {
        let n = self.next_cp;
        self.next_cp += 1;
        if self.phase == Phase::Main {
            self.triggered += 1;
        }
        let kind = if self.rng.chance(120) {
            Kind::AsyncSavepoint
        } else {
            Kind::Checkpoint
        };
        let trigger_seq = self.seq + 1;
        let coord_state = match self.call(Call::Checkpoint(n))? {
            Answer::Bytes(b) => b,
            Answer::Declined => {
                if self.phase == Phase::Main {
                    self.triggered -= 1;
                }
                self.stats.declined += 1;
                self.stats.aborted += 1;
                self.call(Call::Abort(n))?;
                return Ok(());
            }
            _ => return Ok(()),
        };
        if kind == Kind::AsyncSavepoint {
            self.savepoints.insert(n, SpFate::Taken);
            self.stats.savepoints += 1;
        }
        let p = self.p();
        let participants = (0..p).filter(|s| self.alive(*s)).collect();
        let finished_before = (0..p).filter(|s| !self.alive(*s)).collect();
        self.pending = Some(Pending {
            id: n,
            kind,
            coord_state,
            trigger_seq,
            participants,
            snaps: BTreeMap::new(),
            finished_before,
        });
        Ok(())
    }

    fn abort_pending(&mut self) -> Res<()> {
        let Some(pd) = self.pending.take() else {
            return Ok(());
        };
        self.stats.aborted += 1;
        for &s in &pd.participants {
            if let Some(h) = self.writers[s as usize].helper.as_mut() {
                let r = h.checkpoint_aborted(pd.id);
                self.host("writer checkpoint-aborted", r)?;
            }
        }
        if self.rng.chance(300) {
            // The coordinator's callback comes later (a host may queue it);
            // the writers have cleared their savepoint flags already.
            if self.savepoints.contains_key(&pd.id) {
                self.savepoints.insert(pd.id, SpFate::Aborted);
            }
            self.late_aborts.push_back(pd.id);
            return Ok(());
        }
        self.call(Call::Abort(pd.id))?;
        Ok(())
    }

    fn deliver_late_abort(&mut self) -> Res<()> {
        if let Some(n) = self.late_aborts.pop_front() {
            self.stats.late_aborts += 1;
            self.call(Call::Abort(n))?;
        }
        Ok(())
    }

    fn complete_pending(&mut self) -> Res<()> {
        let Some(pd) = self.pending.take() else {
            return Ok(());
        };
        if pd.kind == Kind::AsyncSavepoint {
            // Savepoints are not committed by the engine: no notification,
            // and no restore point for failovers.
            return Ok(());
        }
        let epoch = self.epoch;
        // Events sent before this checkpoint was triggered arrive before it
        // completes; so do the reports of writers whose input had ended.
        for s in 0..self.p() {
            let bound = pd.trigger_seq;
            if !self.flush_writer(s, |seq| seq < bound)? || self.epoch != epoch {
                return Ok(());
            }
            let w = &self.writers[s as usize];
            let model = self.opts.model;
            let limit = match (w.end_seq, w.report_seq.get(&pd.id)) {
                (Some(e), Some(&rs)) if e < rs => {
                    if model.late_end_events {
                        None
                    } else if model.late_events_after_end {
                        Some(e)
                    } else {
                        Some(rs)
                    }
                }
                _ => None,
            };
            if let Some(limit) = limit {
                if !self.flush_writer(s, |seq| seq <= limit)? || self.epoch != epoch {
                    return Ok(());
                }
            }
        }
        let id = pd.id;
        self.last_completed = Some(Completed {
            id,
            coord_state: pd.coord_state,
            writers: pd.snaps,
            finished_before: pd.finished_before,
        });
        self.completed_max = self.completed_max.max(Some(id));
        self.stats.completed += 1;
        if self.rng.chance(80) {
            self.stats.skipped_rounds += 1;
            return Ok(());
        }
        let coordinator_skips = self.opts.model.coordinator_skips_alone && self.rng.chance(200);
        if !coordinator_skips
            && (matches!(self.call(Call::Complete(id))?, Answer::FailedOver) || self.epoch != epoch)
        {
            return Ok(());
        }
        for &s in &pd.participants {
            let w = &mut self.writers[s as usize];
            if w.status != WStatus::Finished && !self.rng.chance(100) {
                w.notify = w.notify.max(Some(id));
            }
        }
        Ok(())
    }

    fn stop_with_savepoint(&mut self) -> Res<()> {
        while !self.late_aborts.is_empty() {
            self.deliver_late_abort()?;
        }
        let n = self.next_cp;
        self.next_cp += 1;
        let coord_state = match self.call(Call::Checkpoint(n))? {
            Answer::Bytes(b) => b,
            _ => return Err(self.fail("the stop-with-savepoint checkpoint was not taken")),
        };
        self.savepoints.insert(n, SpFate::Taken);
        self.stats.savepoints += 1;
        let p = self.p();
        let participants: BTreeSet<u32> = (0..p).filter(|s| self.alive(*s)).collect();
        let finished_before = (0..p).filter(|s| !self.alive(*s)).collect();
        self.pending = Some(Pending {
            id: n,
            kind: Kind::Checkpoint,
            coord_state,
            trigger_seq: self.seq + 1,
            participants: participants.clone(),
            snaps: BTreeMap::new(),
            finished_before,
        });
        for &s in &participants {
            // A synchronous savepoint is a savepoint: flagged for the tag.
            self.snapshot_sync(s, n)?;
        }
        for s in 0..p {
            if !self.flush_writer(s, |_| true)? {
                return Err(self.fail("failed over during stop-with-savepoint"));
            }
        }
        let pd = self
            .pending
            .take()
            .ok_or_else(|| Violation::internal("no pending savepoint"))?;
        self.last_completed = Some(Completed {
            id: n,
            coord_state: pd.coord_state,
            writers: pd.snaps,
            finished_before: pd.finished_before,
        });
        self.completed_max = self.completed_max.max(Some(n));
        self.stats.completed += 1;
        if matches!(self.call(Call::Complete(n))?, Answer::FailedOver) {
            return Err(self.fail("failed over during stop-with-savepoint"));
        }
        self.close()
    }

    fn snapshot_sync(&mut self, s: u32, n: u64) -> Res<()> {
        if let Some(pd) = &mut self.pending {
            pd.kind = Kind::AsyncSavepoint; // flag the reports
        }
        self.snapshot(s)?;
        if let Some(pd) = &mut self.pending {
            pd.kind = Kind::Checkpoint;
        }
        let _ = n;
        Ok(())
    }

    fn close(&mut self) -> Res<()> {
        self.call(Call::Close)?;
        self.phase = Phase::Done;
        Ok(())
    }

    // ------------------------------------------------------------------
    // Failovers
    // ------------------------------------------------------------------

    fn region_failover(&mut self, s: u32) -> Res<()> {
        if !self.alive(s) {
            return Ok(());
        }
        self.stats.region_failovers += 1;
        let epoch = self.epoch;
        if self.pending.is_some() {
            self.abort_pending()?;
            if self.epoch != epoch {
                return Ok(());
            }
        }
        let r = self.last_completed.clone();
        let answer = self.call(Call::Reset {
            s,
            r: r.as_ref().map(|c| c.id),
        })?;
        if matches!(answer, Answer::FailedOver) || self.epoch != epoch {
            return Ok(());
        }
        self.restart_writer(s, r.as_ref(), true)
    }

    pub(crate) fn global_failover(&mut self, _why: &str) -> Res<()> {
        self.stats.global_failovers += 1;
        self.epoch += 1;
        if let Some(pd) = self.pending.take() {
            self.stats.aborted += 1;
            if pd.kind == Kind::AsyncSavepoint {
                self.savepoints.insert(pd.id, SpFate::Abandoned);
            }
        }
        self.starve_next = false;
        self.coord = None;
        let r = self.last_completed.clone();
        let finished = r
            .as_ref()
            .map(|c| c.finished_before.clone())
            .unwrap_or_default();
        if !finished.is_empty() {
            self.stats.restores_with_finished += 1;
        }
        for s in 0..self.p() {
            if finished.contains(&s) {
                continue;
            }
            self.restart_writer(s, r.as_ref(), false)?;
        }
        self.start_instance(r)
    }

    // ------------------------------------------------------------------
    // End of the run
    // ------------------------------------------------------------------

    fn final_checks(&mut self) -> Res<()> {
        self.observe()?;
        // Nothing required is missing.
        let mut lost = Vec::new();
        for (name, item) in &self.ledger.items {
            if item.fate != Fate::Pending || item.post_final {
                continue;
            }
            let required = if item.checkpoint == END {
                self.final_done_job
            } else {
                self.final_done_job || self.completed_max.is_some_and(|c| item.checkpoint <= c)
            };
            if required {
                lost.push(name.clone());
            }
        }
        if !lost.is_empty() {
            let n = lost.len();
            let all_region_restored = lost.iter().all(|name| {
                self.ledger
                    .items
                    .get(name)
                    .is_some_and(|i| i.region_restored)
            });
            lost.truncate(8);
            let v = self.fail(format!(
                "{n} committable(s) of completed checkpoints were never committed: {lost:?}"
            ));
            if all_region_restored && self.stats.global_failovers > 0 {
                return Err(self.known(v, super::known::WRITER_DROPS_RESTORED_ENTRIES));
            }
            return Err(v);
        }
        let all_end = self.scenario.ending != Ending::Stop || !self.streaming();
        if all_end {
            if !self.final_done_job {
                return Err(self.fail("the job ended without its final commit"));
            }
            for s in 0..self.p() {
                let len = self.writers[s as usize].input_len.unwrap_or(0);
                if !self.records.is_exactly(s, len) {
                    return Err(self.fail(format!(
                        "writer {s} read records [0,{len}), the table holds {}",
                        self.records.describe(s)
                    )));
                }
            }
        } else if !self.final_done_job && self.end_snapshots > 0 {
            return Err(self.fail("an END snapshot exists without a final commit"));
        }
        // Tags: exactly the savepoints that were not aborted and have a snapshot.
        if self.cfg.savepoint_auto_tag {
            for (&s, &fate) in &self.savepoints {
                let has_snapshot = self.seen.iter().any(|x| x.identifier == s);
                let has_tag = self.tags.iter().any(|t| t.name == format!("savepoint-{s}"));
                let expected = match fate {
                    SpFate::Taken => has_snapshot,
                    SpFate::Aborted => false,
                    SpFate::Abandoned => has_tag,
                };
                if has_tag != expected {
                    let v = self.fail(format!(
                        "savepoint {s} ({fate:?}, snapshot: {has_snapshot}) has tag: {has_tag}"
                    ));
                    // The flag travelled in a region restore: the writers dropped it
                    // from their state, so a later global failover cannot replay it.
                    if !has_tag
                        && self.region_restored_checkpoints.contains(&s)
                        && self.stats.global_failovers > 0
                    {
                        return Err(self.known(v, super::known::WRITER_DROPS_RESTORED_ENTRIES));
                    }
                    return Err(v);
                }
            }
        }
        // The table as the engine reads it equals what was observed.
        let read = self.engine.read_table(&self.storage);
        let (snapshots, tags) = self.host("reading the table", read)?;
        if snapshots != self.seen || tags != self.tags {
            return Err(self.fail(format!(
                "the {} table reader disagrees with the native one",
                self.engine.name()
            )));
        }
        self.stats.snapshots = self.seen.len() as u64;
        self.stats.tags = self.tags.len() as u64;
        if self.opts.check_replay {
            // Through the same engine as the run (the component's calls, or the native core).
            let mode = match &self.engine {
                Engine::Native => crate::replay::Mode::Native,
                Engine::Component(runtime) => crate::replay::Mode::Component(runtime),
            };
            let result = crate::replay::replay(&self.rec.trace, mode)
                .map_err(|e| self.fail(format!("the recorded trace does not replay: {e}")))?;
            let replayed = crate::render::render_table(&result.snapshots, &result.tags);
            let ours = crate::render::render_table(&self.seen, &self.tags);
            if replayed != ours {
                return Err(self.fail(format!(
                    "replaying the recorded trace gives another table:\n--- simulated\n{ours}--- replayed\n{replayed}"
                )));
            }
            self.stats.replays_checked += 1;
        }
        Ok(())
    }

    pub(crate) fn trace_text(&self) -> String {
        super::record::render_trace(&self.rec.trace)
    }
}
