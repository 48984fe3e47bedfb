//! One simulated job: its writers, the engine's checkpoint coordinator
//! (triggers, completions, aborts), its coordinator instance (and a stale
//! one after a global failover), and what it must find in the table. The
//! job's steps are split by concern: [`super::writers`] (the writer model),
//! [`super::checkpoints`] (checkpoints, savepoints, failovers, the stale
//! instance), [`super::calls`] (coordinator calls and their faults) and
//! [`super::checks`] (what the table, the state bytes and committed-up-to
//! must be). This file: the job's state, its fault rates and its scheduler.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use sink_coordinator::{Config, Entry, FinalCommitMode, RecoveryMode, END};

use crate::trace::Op;

use super::backend::{SimCoordinator, WriterApi};
use super::ledger::{Ledger, Mirror, Records};
use super::rawtable::RawTag;
use super::world::World;
use super::{Ending, FaultLevel, JobMode, Profile, Scenario, Violation};

pub(crate) type Res<T> = Result<T, Violation>;

/// Per fault level: weights of the fault actions, and how storage errors
/// and global failovers are handled.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rates {
    pub region: u32,
    pub global: u32,
    pub storage: u32,
    /// A guest trap in the middle of a call (component only).
    pub trap: u32,
    /// A simulated crash after the k-th write of a call.
    pub crash: u32,
    /// Per mille of storage errors escalated to a global failover.
    pub escalate: u32,
    /// Per mille of (other) storage errors the host does not repeat.
    pub drop: u32,
    /// Per mille of global failovers that leave the old instance running.
    pub zombie: u32,
}

impl Rates {
    /// Weights relative to the other actions (which weigh 10x their listed
    /// weight): a checkpoint takes about `3P + 5` steps, so fault weights are
    /// scaled by `8 / (3P + 5)` to keep the faults per checkpoint the same
    /// whatever the parallelism.
    pub fn of(level: FaultLevel, parallelism: u32) -> Self {
        let base = match level {
            FaultLevel::None => Rates {
                region: 0,
                global: 0,
                storage: 0,
                trap: 0,
                crash: 0,
                escalate: 0,
                drop: 0,
                zombie: 0,
            },
            FaultLevel::Low => Rates {
                region: 6,
                global: 3,
                storage: 12,
                trap: 2,
                crash: 3,
                escalate: 100,
                drop: 150,
                zombie: 200,
            },
            FaultLevel::Medium => Rates {
                region: 16,
                global: 8,
                storage: 35,
                trap: 3,
                crash: 6,
                escalate: 200,
                drop: 250,
                zombie: 300,
            },
            FaultLevel::High => Rates {
                region: 40,
                global: 20,
                storage: 90,
                trap: 6,
                crash: 15,
                escalate: 300,
                drop: 300,
                zombie: 400,
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
            crash: scale(base.crash),
            ..base
        }
    }
}

/// A message from a writer to the coordinator, in flight.
#[derive(Clone, Debug)]
pub(crate) enum Payload {
    Event(Entry),
    Restored {
        checkpoint: u64,
        entries: Vec<Entry>,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct Msg {
    pub seq: u64,
    pub attempt: u32,
    pub payload: Payload,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WStatus {
    Running,
    /// Input ended (END sent), still taking part in checkpoints.
    Ended,
    /// Done (FLIP-147: its final checkpoint completed): no state any more.
    Finished,
}

/// A writer's checkpointed state at one checkpoint, as the job keeps it.
#[derive(Clone, Debug)]
pub(crate) struct WSnap {
    pub bytes: Vec<u8>,
    /// Names of the END entry in the helper's buffer.
    pub end_names: BTreeSet<String>,
    /// Source position: records before it were reported.
    pub pos: u64,
    pub ended: bool,
}

pub(crate) struct W {
    pub attempt: u32,
    pub helper: Option<Box<dyn WriterApi>>,
    pub status: WStatus,
    /// Streaming: input ends once this many checkpoints were triggered.
    pub end_at: u64,
    /// Length of the writer's (bounded) input, fixed when it first ends.
    pub input_len: Option<u64>,
    pub pos: u64,
    pub outbox: VecDeque<Msg>,
    /// The final checkpoint: the first one it takes part in after its END.
    pub final_cp: Option<u64>,
    pub buf_end: BTreeSet<String>,
    /// First checkpoint with a watermark.
    pub wm_start: u64,
    /// `committed(u)` notifications forwarded by the host, in flight.
    pub inbox: VecDeque<u64>,
    /// Its state at its final checkpoint, kept by the host once it finished:
    /// restored from if a global failover cannot name it finished.
    pub final_snap: Option<WSnap>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Checkpoint,
    AsyncSavepoint,
}

pub(crate) struct Pending {
    pub id: u64,
    pub kind: Kind,
    pub coord_state: Vec<u8>,
    /// The trace instance that took the coordinator's state.
    pub taken_by: String,
    pub participants: BTreeSet<u32>,
    pub snaps: BTreeMap<u32, WSnap>,
    /// Finished writers all of whose events had reached the coordinator
    /// when it took its state (SEMANTICS 6.2).
    pub finished_before: BTreeSet<u32>,
    /// Aborts the coordinator had accepted when it took its state.
    pub aborts_seen: usize,
}

#[derive(Clone)]
pub(crate) struct Completed {
    pub id: u64,
    pub coord_state: Vec<u8>,
    pub taken_by: String,
    pub writers: BTreeMap<u32, WSnap>,
    pub finished_before: BTreeSet<u32>,
    pub aborts_seen: usize,
}

/// What became of a savepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpFate {
    /// Taken (async: silently complete, never notified; sync: completed).
    Taken,
    /// `checkpoint-aborted` was called for it.
    Aborted,
    /// Pending when a global failover discarded the coordinator: nobody
    /// tells the new instance, so its tag is not predicted either way.
    Abandoned,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Main,
    /// Bounded job: every writer ends, checkpoints go on until all finished.
    Drain,
    /// Stop-with-savepoint once nothing is pending.
    Stopping,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Trigger,
    Snapshot,
    Complete,
    Abort,
    Deliver,
    Notify,
    Query,
    EndInput,
    Tick,
    Region,
    Global,
    StorageFault,
    Trap,
    Crash,
    Stop,
    LateAbort,
    Zombie,
    /// A finished subtask's operator run again (SEMANTICS 6.2).
    FinishedReplay,
}

/// A coordinator instance and what it has been told.
pub(crate) struct Inst {
    pub coord: SimCoordinator,
    /// Its name in the recorded trace.
    pub name: String,
    pub mirror: Mirror,
    /// Aborts that returned success on it (the tag is deleted then).
    pub aborts_ok: BTreeSet<u64>,
}

/// The instance a global failover left running (a stale coordinator) and
/// the calls that still reach it.
pub(crate) struct Zombie {
    pub inst: Inst,
    /// Per writer, the old attempt's messages that were in flight to it.
    pub queues: Vec<VecDeque<Msg>>,
    /// Aborts the host had queued for it (delivered first).
    pub aborts: VecDeque<u64>,
    /// Completions of checkpoints `<=` the successor's restore point.
    pub completes: VecDeque<u64>,
    pub life: u32,
}

/// Which instance a call goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Main,
    Zombie,
}

pub(crate) struct Job {
    /// `a` or `b`: prefixes committable names.
    pub label: &'static str,
    /// The trace instance name of the first instance.
    pub base_name: &'static str,
    pub cfg: Config,
    pub scenario: Scenario,
    pub rates: Rates,
    pub checkpoints: u64,
    pub inst: Option<Inst>,
    pub zombie: Option<Zombie>,
    pub writers: Vec<W>,
    pub seq: u64,
    pub next_cp: u64,
    pub triggered: u64,
    pub pending: Option<Pending>,
    pub last_completed: Option<Completed>,
    pub completed_max: Option<u64>,
    /// Savepoint id -> fate.
    pub savepoints: BTreeMap<u64, SpFate>,
    pub phase: Phase,
    /// Aborts the coordinator has not been told of yet.
    pub late_aborts: VecDeque<u64>,
    /// Aborts the job's instances accepted, in order: those accepted after a
    /// restore point's state was taken are delivered again to an instance
    /// restored from it (constraint 7).
    pub aborts_delivered: Vec<u64>,
    /// Bumped by every global failover: callers detect that their context is gone.
    pub epoch: u64,
    pub ledger: Ledger,
    pub records: Records,
    pub final_done_job: bool,
    /// END snapshots of this commit user in the table.
    pub end_snapshots: usize,
    /// This job's tags as last seen.
    pub tags: Vec<RawTag>,
    /// A small fuel budget for one of the next few calls that may commit
    /// (a mid-call trap), component only.
    pub trap_armed: bool,
    pub trap_calls_left: u32,
    /// The next call that makes more writes crashes after this many (for
    /// the next few calls).
    pub crash_armed: Option<u64>,
    pub crash_calls_left: u32,
    /// The trace name of the current instance, and how many fresh names
    /// were made.
    pub name: String,
    pub generation: u32,
    /// The job's first instance has been started.
    pub started: bool,
    pub profile: Profile,
    /// The last completion was skipped: a later one, or a global failover
    /// from one, is owed (SEMANTICS 4).
    pub owed_last: bool,
    /// Replays of finished subtasks the current instance may still get.
    pub replays_left: u32,
    /// Per deciding instance (`Job::note_end_tag_window`): the highest END
    /// `taken` and `completed`, between which a savepoint may be on END.
    pub end_tag_windows: Vec<(u64, u64)>,
    /// The stop-with-savepoint, and whether its completion made the final
    /// commit (then, drained, it must be tagged on the END snapshot).
    pub stop_savepoint: Option<(u64, bool)>,
}

pub(crate) fn wm_end(seed: u64, label: &str, s: u32) -> Option<i64> {
    let h = super::rng::mix(&[seed, u64::from(s), 0xE4D, label.len() as u64]);
    if h.is_multiple_of(5) {
        None
    } else {
        Some(1_000_000_000 + (h % 100_000) as i64)
    }
}

impl Job {
    /// A job drawn from the world's stream. The second job (`b`) uses
    /// checkpoint ids from 1,000,001 so that the two jobs' savepoint tags
    /// never share a name.
    pub fn new(
        w: &mut World<'_>,
        second: bool,
        parallelism: u32,
        checkpoints: u64,
        scenario: Scenario,
    ) -> Self {
        let (label, base_name) = if second { ("b", "b") } else { ("a", "main") };
        let p = parallelism.max(1);
        let user = if second {
            format!("sim-{}-b", w.opts.seed)
        } else {
            format!("sim-{}", w.opts.seed)
        };
        let mut cfg = Config::new(p, user);
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
        let m = checkpoints;
        let profile = w.opts.profile;
        let mut writers = Vec::new();
        for _ in 0..p {
            let early = profile == Profile::Flip147 && w.rng.chance(850);
            let end_at = match scenario.ending {
                // Most inputs end in the first third of the main phase.
                _ if early => w.rng.range(0, m / 3),
                Ending::AllEnd => w.rng.range(0, m),
                Ending::Stop | Ending::StopDrain => {
                    if w.rng.chance(300) {
                        w.rng.range(0, m)
                    } else {
                        u64::MAX
                    }
                }
            };
            let wm_start = w.rng.range(0, 3);
            writers.push(W {
                attempt: 0,
                helper: None,
                status: WStatus::Running,
                end_at,
                input_len: None,
                pos: 0,
                outbox: VecDeque::new(),
                final_cp: None,
                buf_end: BTreeSet::new(),
                wm_start,
                inbox: VecDeque::new(),
                final_snap: None,
            });
        }
        let mut rates = Rates::of(w.opts.faults, p);
        if !w.engine.is_component() || !w.opts.traps || w.paimon.is_some() {
            rates.trap = 0;
        }
        if !w.opts.crashes {
            rates.crash = 0;
        }
        if !w.opts.zombies {
            rates.zombie = 0;
        }
        Job {
            label,
            base_name,
            cfg,
            scenario,
            rates,
            checkpoints,
            inst: None,
            zombie: None,
            writers,
            seq: 0,
            next_cp: if second { 1_000_001 } else { 1 },
            triggered: 0,
            pending: None,
            last_completed: None,
            completed_max: None,
            savepoints: BTreeMap::new(),
            phase: Phase::Main,
            late_aborts: VecDeque::new(),
            aborts_delivered: Vec::new(),
            epoch: 0,
            ledger: Ledger::default(),
            records: Records::default(),
            final_done_job: false,
            end_snapshots: 0,
            tags: Vec::new(),
            trap_armed: false,
            trap_calls_left: 0,
            crash_armed: None,
            crash_calls_left: 0,
            name: base_name.to_string(),
            generation: 0,
            started: false,
            profile,
            owed_last: false,
            replays_left: 0,
            end_tag_windows: Vec::new(),
            stop_savepoint: None,
        }
    }

    pub fn p(&self) -> u32 {
        self.cfg.parallelism
    }

    pub fn streaming(&self) -> bool {
        self.cfg.checkpointing
    }

    pub fn faults_on(&self) -> bool {
        self.phase == Phase::Main
    }

    pub fn alive(&self, s: u32) -> bool {
        self.writers[s as usize].status != WStatus::Finished
    }

    pub fn mirror(&self) -> Option<&Mirror> {
        self.inst.as_ref().map(|i| &i.mirror)
    }

    pub fn restoring(&self) -> bool {
        self.mirror().is_some_and(Mirror::is_restoring)
    }

    pub fn inst_mut(&mut self, t: Target) -> Option<&mut Inst> {
        match t {
            Target::Main => self.inst.as_mut(),
            Target::Zombie => self.zombie.as_mut().map(|z| &mut z.inst),
        }
    }

    pub fn wm(&self, seed: u64, s: u32, c: u64) -> Option<i64> {
        if c < self.writers[s as usize].wm_start {
            None
        } else {
            let c = c % 1_000_000;
            Some(c as i64 * 1000 + (super::rng::mix(&[seed, u64::from(s), c]) % 700) as i64)
        }
    }

    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Writer `s`'s front message can be delivered now: always while the
    /// coordinator runs; while it restores, only its restore event and END
    /// events of writers whose restore event it has (SEMANTICS 6.2).
    pub fn deliverable(&self, s: u32) -> bool {
        let w = &self.writers[s as usize];
        let Some(front) = w.outbox.front() else {
            return false;
        };
        let Some(m) = self.mirror() else {
            return false;
        };
        if !m.is_restoring() {
            return true;
        }
        match &front.payload {
            Payload::Restored { .. } => true,
            Payload::Event(e) => e.checkpoint == END && m.is_restored(s),
        }
    }

    pub fn can_end(&self, s: u32) -> bool {
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

    /// The actions this job can take now, with their weights.
    pub fn enabled(&self, w: &World<'_>) -> Vec<(Action, u32)> {
        let mut out = Vec::new();
        if self.phase == Phase::Done {
            return out;
        }
        let p = self.p();
        let running_coord = !self.restoring();
        if self.streaming() {
            match &self.pending {
                None => {
                    let may_trigger = match self.phase {
                        Phase::Main => self.triggered < self.checkpoints,
                        // Also once every writer finished, while the last
                        // completion is owed (SEMANTICS 4).
                        Phase::Drain => (0..p).any(|s| self.alive(s)) || self.owed_last,
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
                        // Every participant's snapshot is one action while an
                        // abort stays one: scale the snapshot weight with P so
                        // that a checkpoint is aborted about as often at
                        // P = 4,096 as at P = 16 (a flat weight aborted nearly
                        // every checkpoint of a large job: a livelock).
                        let scale = u32::try_from(pd.participants.len() / 16)
                            .unwrap_or(u32::MAX)
                            .max(1);
                        out.push((Action::Snapshot, 200u32.saturating_mul(scale)));
                    } else {
                        let weight = if self.profile == Profile::Late {
                            300
                        } else {
                            120
                        };
                        out.push((Action::Complete, weight));
                    }
                    out.push((Action::Abort, if self.phase == Phase::Main { 8 } else { 2 }));
                }
            }
        }
        if (0..p).any(|s| self.deliverable(s)) {
            // Late delivery: events wait through snapshots and completions
            // (not restore events: nothing completes while restoring).
            let late = self.profile == Profile::Late && running_coord;
            let weight = if late { 35 } else { 250 };
            out.push((Action::Deliver, weight));
        }
        if self.replays_left > 0 && self.mirror().is_some_and(|m| !m.finished.is_empty()) {
            out.push((Action::FinishedReplay, 20));
        }
        if self.writers.iter().any(|x| !x.inbox.is_empty()) {
            out.push((Action::Notify, 60));
        }
        if self.inst.is_some() {
            out.push((Action::Query, 4));
        }
        if (0..p).any(|s| self.can_end(s)) {
            let forced = self.phase != Phase::Main;
            out.push((Action::EndInput, if forced { 200 } else { 40 }));
        }
        out.push((Action::Tick, 15));
        if !self.late_aborts.is_empty() {
            out.push((Action::LateAbort, 40));
        }
        if self.zombie.is_some() {
            out.push((Action::Zombie, 60));
        }
        for (_, weight) in out.iter_mut() {
            *weight *= 10;
        }
        if self.faults_on() {
            let r = self.rates;
            if r.region > 0 && (0..p).any(|s| self.alive(s)) {
                out.push((Action::Region, r.region));
            }
            if r.global > 0 {
                out.push((Action::Global, r.global));
            }
            if r.storage > 0 {
                out.push((Action::StorageFault, r.storage));
            }
            if r.trap > 0 && !self.trap_armed {
                out.push((Action::Trap, r.trap));
            }
            if r.crash > 0 && self.crash_armed.is_none() {
                out.push((Action::Crash, r.crash));
            }
        }
        let _ = w;
        out
    }

    /// Moves between phases; closes the job when it is over.
    pub fn advance_phase(&mut self, w: &mut World<'_>) -> Res<()> {
        let p = self.p();
        let quiet = (0..p).all(|s| self.writers[s as usize].outbox.is_empty())
            && self.late_aborts.is_empty();
        let all_done = (0..p).all(|s| self.writers[s as usize].status == WStatus::Finished);
        match self.phase {
            Phase::Main => {
                if !self.streaming() {
                    if all_done && quiet && !self.restoring() {
                        if !self.final_done_job {
                            return Err(w.fail(format!(
                                "job {}: every writer of the batch job finished, but no final commit happened",
                                self.label
                            )));
                        }
                        self.close(w)?;
                    }
                } else if self.triggered >= self.checkpoints && self.pending.is_none() {
                    // No fault after the main phase, not even an armed one.
                    self.trap_armed = false;
                    self.crash_armed = None;
                    self.phase = match self.scenario.ending {
                        Ending::AllEnd => Phase::Drain,
                        Ending::Stop | Ending::StopDrain => Phase::Stopping,
                    };
                }
            }
            Phase::Drain => {
                if all_done
                    && quiet
                    && self.pending.is_none()
                    && !self.restoring()
                    && !self.owed_last
                {
                    if !self.final_done_job {
                        return Err(w.fail(format!(
                            "job {}: every writer finished, but no final commit happened",
                            self.label
                        )));
                    }
                    self.close(w)?;
                }
            }
            Phase::Stopping | Phase::Done => {}
        }
        Ok(())
    }

    pub fn act(&mut self, w: &mut World<'_>, action: Action) -> Res<()> {
        let p = self.p();
        match action {
            Action::Trigger => self.trigger(w),
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
                let s = *w.rng.pick(&todo).unwrap_or(&0);
                self.snapshot(w, s)
            }
            Action::Complete => {
                if w.rng.chance(40) {
                    self.abort_pending(w)
                } else {
                    self.complete_pending(w)
                }
            }
            Action::Abort => self.abort_pending(w),
            Action::Deliver => {
                let ready: Vec<u32> = (0..p).filter(|s| self.deliverable(*s)).collect();
                let s = *w.rng.pick(&ready).unwrap_or(&0);
                self.deliver(w, s).map(|_| ())
            }
            Action::Notify => {
                let ready: Vec<u32> = (0..p)
                    .filter(|s| !self.writers[*s as usize].inbox.is_empty())
                    .collect();
                let s = *w.rng.pick(&ready).unwrap_or(&0);
                self.notify(w, s)
            }
            Action::Query => self.query_up_to(w),
            Action::EndInput => {
                let ready: Vec<u32> = (0..p).filter(|s| self.can_end(*s)).collect();
                let s = *w.rng.pick(&ready).unwrap_or(&0);
                self.end_input(w, s)
            }
            Action::Tick => {
                w.tick();
                Ok(())
            }
            Action::Region => {
                let alive: Vec<u32> = (0..p).filter(|s| self.alive(*s)).collect();
                let s = *w.rng.pick(&alive).unwrap_or(&0);
                self.region_failover(w, s)
            }
            Action::Global => self.global_failover(w, "injected failure", true),
            Action::StorageFault => {
                w.inject_storage_fault();
                Ok(())
            }
            Action::Trap => {
                self.trap_armed = true;
                self.trap_calls_left = 6;
                Ok(())
            }
            Action::Crash => {
                self.crash_armed = Some(w.rng.weighted(&[15, 35, 25, 15, 10]).unwrap_or(0) as u64);
                self.crash_calls_left = 3;
                Ok(())
            }
            Action::Stop => self.stop_with_savepoint(w),
            Action::LateAbort => self.deliver_late_abort(w),
            Action::Zombie => self.zombie_step(w),
            Action::FinishedReplay => self.finished_replay(w),
        }
    }

    /// The recorded `start` / `failover` of a new instance named `name`.
    pub fn creation_op(&self, restore: Option<&Completed>, name: &str) -> Op {
        if !self.started {
            return Op::Start {
                config: self.cfg.clone(),
            };
        }
        Op::Failover {
            checkpoint: restore.map(|c| c.id),
            finished_subtasks: restore
                .map(|c| c.finished_before.iter().copied().collect())
                .unwrap_or_default(),
            config: self.cfg.clone(),
            // Kept bytes belong to the instance name that took them.
            state: restore
                .filter(|c| c.taken_by != name)
                .map(|c| c.coord_state.clone()),
        }
    }

    /// The name of the next instance: the current one, or a fresh one while
    /// the previous instance still runs as a stale coordinator.
    pub fn next_name(&mut self, fresh: bool) -> String {
        if fresh {
            self.generation += 1;
            self.name = format!("{}.{}", self.base_name, self.generation);
        }
        self.name.clone()
    }
}
