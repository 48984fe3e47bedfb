//! What the jobs of one seed share: the table (and the component's native
//! twin), the clock, the random stream, the recorded trace, the log as read
//! independently from the stored bytes, and the scheduler that interleaves
//! the jobs' steps.

use sink_coordinator::Snapshot;

use crate::faults::{CallKind, Fault, FaultMode};
use crate::trace::{Op, DEFAULT_INSTANCE};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::Shared;
use sink_coordinator_host::error::HostResult;

use super::backend::{dump, with_table, Engine, Tables};
use super::job::{Job, Phase, Res};
use super::paimon::PaimonSide;
use super::rawtable::{self, RawSnapshot, RawTag};
use super::record::Recorder;
use super::rng::Rng;
use super::{Scenario, SimOptions, Stats, Violation};

pub(crate) const CLOCK_START_MS: u64 = 1_000_000;

pub(crate) struct World<'a> {
    pub opts: &'a SimOptions,
    pub engine: Engine,
    pub rng: Rng,
    pub tables: Tables,
    pub clock: Shared<ManualClock>,
    pub now: u64,
    pub rec: Recorder,
    /// The table's log as decoded by [`rawtable`], in id order.
    pub log: Vec<RawSnapshot>,
    /// Every tag as last read.
    pub tags: Vec<RawTag>,
    pub stats: Stats,
    pub step: u64,
    /// On a Paimon table: the committable map and what each name covers.
    pub paimon: Option<PaimonSide>,
}

impl<'a> World<'a> {
    pub fn fail(&self, message: impl Into<String>) -> Violation {
        Violation {
            seed: self.opts.seed,
            step: self.step,
            trace_step: self.rec.len(),
            message: message.into(),
        }
    }

    pub fn host<T>(&self, what: &str, r: HostResult<T>) -> Res<T> {
        r.map_err(|e| self.fail(format!("{what} failed: {e}")))
    }

    pub fn tick(&mut self) {
        self.now += self.rng.range(1, 500);
        self.clock.lock().set_next(self.now);
        self.rec.push(DEFAULT_INSTANCE, Op::Clock { ms: self.now });
    }

    pub fn inject_storage_fault(&mut self) {
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
        self.tables.push_fault(call, fault);
        self.rec
            .push(DEFAULT_INSTANCE, Op::StorageFault { call, fault });
        self.stats.storage_faults += 1;
    }

    /// Snapshots that appeared since the last look, read by listing the
    /// table and decoding the stored bytes independently; each is checked
    /// against the log before it and against the core's own reader.
    pub fn new_snapshots(&mut self) -> Res<Vec<RawSnapshot>> {
        let storage = self.tables.real.inner.clone();
        let known = self.log.len();
        let paimon = self.paimon.as_ref();
        let read = with_table(&storage, |st| -> Result<Vec<RawSnapshot>, String> {
            if let Some(p) = paimon {
                let ids = PaimonSide::list_snapshot_ids(st)?;
                if ids.len() < known {
                    return Err(format!(
                        "the table lists {} snapshots, {known} were seen before",
                        ids.len()
                    ));
                }
                return ids[known..]
                    .iter()
                    .map(|&id| p.read_snapshot(st, id))
                    .collect();
            }
            let ids = rawtable::list_snapshot_ids(st)?;
            if ids.len() < known {
                return Err(format!(
                    "the table lists {} snapshots, {known} were seen before",
                    ids.len()
                ));
            }
            let mut out = Vec::new();
            for &id in &ids[known..] {
                let snap = rawtable::read_snapshot(st, id)?;
                let core = sink_coordinator::table::snapshot_by_id(st, id)
                    .map_err(|e| format!("the core cannot read snapshot {id}: {e}"))?;
                if core.as_ref() != Some(&snap.public()) {
                    return Err(format!(
                        "the core reads snapshot {id} as {core:?}, the stored bytes say {:?}",
                        snap.public()
                    ));
                }
                out.push(snap);
            }
            Ok(out)
        });
        let new = read.map_err(|e| self.fail(e))?;
        for snap in &new {
            rawtable::check_chain(self.log.last(), snap).map_err(|e| self.fail(e))?;
            self.log.push(snap.clone());
        }
        Ok(new)
    }

    pub fn read_tags(&self) -> Res<Vec<RawTag>> {
        let storage = self.tables.real.inner.clone();
        let paimon = self.paimon.is_some();
        with_table(&storage, |st| {
            if paimon {
                PaimonSide::read_tags(st)
            } else {
                rawtable::read_tags(st)
            }
        })
        .map_err(|e| self.fail(e))
    }

    /// The component's twin: its table must equal the real one, byte for byte.
    pub fn compare_twin(&mut self) -> Res<()> {
        let Some(twin) = &self.tables.twin else {
            return Ok(());
        };
        let ours = dump(&self.tables.real.inner);
        let theirs = dump(&twin.inner);
        match (ours, theirs) {
            (Ok(a), Ok(b)) if a == b => {
                self.stats.twin_checks += 1;
                Ok(())
            }
            (Ok(a), Ok(b)) => {
                let first = a
                    .iter()
                    .zip(&b)
                    .find(|(x, y)| x != y)
                    .map(|(x, y)| format!("{:?} vs {:?}", x.0, y.0))
                    .unwrap_or_else(|| format!("{} keys vs {}", a.len(), b.len()));
                Err(self.fail(format!(
                    "the component's table differs from the native core's (same calls): {first}"
                )))
            }
            (Err(e), _) | (_, Err(e)) => Err(self.fail(format!("cannot read the tables: {e}"))),
        }
    }

    /// End of the run: every stored snapshot is still the bytes first seen,
    /// and the engine's own reader (the component's `table` interface, or
    /// the native functions) agrees with the independent one.
    pub fn table_checks(&mut self, problems: &mut Vec<String>) {
        let storage = self.tables.real.inner.clone();
        let log = self.log.clone();
        let paimon = self.paimon.as_ref();
        let reread = with_table(&storage, |st| -> Result<(), String> {
            let ids = match paimon {
                Some(_) => PaimonSide::list_snapshot_ids(st)?,
                None => rawtable::list_snapshot_ids(st)?,
            };
            if ids.len() != log.len() {
                return Err(format!(
                    "the table lists {} snapshots at the end, {} were seen",
                    ids.len(),
                    log.len()
                ));
            }
            for seen in &log {
                let now = match paimon {
                    Some(p) => p.read_snapshot(st, seen.id)?,
                    None => rawtable::read_snapshot(st, seen.id)?,
                };
                if now.bytes != seen.bytes {
                    return Err(format!("snapshot {} changed after it was written", seen.id));
                }
            }
            Ok(())
        });
        if let Err(e) = reread {
            problems.push(e);
        }
        let tags = match self.read_tags() {
            Ok(t) => t,
            Err(v) => {
                problems.push(v.message);
                return;
            }
        };
        let snapshots: Vec<Snapshot> = self.log.iter().map(RawSnapshot::public).collect();
        let public_tags: Vec<_> = tags.iter().map(RawTag::public).collect();
        let read = self
            .engine
            .read_table(&storage)
            .map(|(s, t)| match &self.paimon {
                // In committable names, as the log holds them (a file no writer
                // reported stays as it is, and differs).
                Some(p) => {
                    let map = p.map.lock();
                    let s = s
                        .into_iter()
                        .map(|s| map.snapshot_from_table(s.clone()).unwrap_or(s))
                        .collect();
                    (s, t)
                }
                None => (s, t),
            });
        match read {
            Ok((s, t)) if s == snapshots && t == public_tags => {}
            Ok((s, t)) => problems.push(format!(
                "the {} table reader returns {} snapshots and {} tags, the stored bytes hold {} and {}{}",
                self.engine.name(),
                s.len(),
                t.len(),
                snapshots.len(),
                public_tags.len(),
                if s.len() == snapshots.len() { " (contents differ)" } else { "" }
            )),
            Err(e) => problems.push(format!("the {} table reader fails: {e}", self.engine.name())),
        }
        // The latest-snapshot hint is only a hint, but never ahead of the log.
        let hint_key = match self.paimon {
            Some(_) => sink_coordinator_paimon::snapshot::LATEST_KEY,
            None => sink_coordinator::table::LATEST_HINT,
        };
        let hint = with_table(&storage, |st| st.get(hint_key));
        if let Ok(Some(bytes)) = hint {
            let n = std::str::from_utf8(&bytes)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok());
            if n.is_none_or(|n| n > self.log.len() as u64) {
                problems.push(format!(
                    "the latest-snapshot hint says {:?}, the log has {} snapshots",
                    String::from_utf8_lossy(&bytes),
                    self.log.len()
                ));
            }
        }
    }
}

/// One seed: the world and its jobs (one, or two commit users on one table).
pub(crate) struct Sim<'a> {
    pub world: World<'a>,
    pub jobs: Vec<Job>,
    progress: Option<&'a dyn super::campaign::Progress>,
}

impl<'a> Sim<'a> {
    pub fn new(
        opts: &'a SimOptions,
        engine: Engine,
        progress: Option<&'a dyn super::campaign::Progress>,
    ) -> Result<Self, String> {
        let mut rng = Rng::new(opts.seed);
        let mut scenario = opts
            .scenario
            .clone()
            .unwrap_or_else(|| Scenario::random(&mut rng));
        if opts.scenario.is_none()
            && opts.profile == super::Profile::Flip147
            && scenario.mode == super::JobMode::Batch
        {
            // FLIP-147 is about checkpoints after tasks finish: streaming.
            scenario.mode = super::JobMode::Streaming;
        }
        let second = opts.second_job.unwrap_or_else(|| rng.chance(250));
        let tables = Tables::open(&opts.table, engine.is_component())?;
        let paimon = match opts.table_format {
            sink_coordinator::TableFormatKind::Native => None,
            sink_coordinator::TableFormatKind::Paimon => Some(PaimonSide::open(&tables)?),
        };
        let clock = Shared::new(ManualClock::new(CLOCK_START_MS, 0));
        let p = opts.writers.max(1);
        let mut first_cfg = sink_coordinator::Config::new(p, format!("sim-{}", opts.seed));
        first_cfg.checkpointing = scenario.mode != super::JobMode::Batch;
        let mut world = World {
            opts,
            engine,
            rng,
            tables,
            clock,
            now: CLOCK_START_MS,
            rec: Recorder::new(first_cfg, CLOCK_START_MS),
            log: Vec::new(),
            tags: Vec::new(),
            stats: Stats::default(),
            step: 0,
            paimon,
        };
        let mut jobs = vec![Job::new(
            &mut world,
            false,
            p,
            opts.checkpoints.max(1),
            scenario,
        )];
        world.rec.trace.config = jobs[0].cfg.clone();
        if second {
            let scenario_b = Scenario::random(&mut world.rng);
            let p_b = world.rng.range(1, 3) as u32;
            let cps = world.rng.range(2, opts.checkpoints.clamp(2, 12));
            jobs.push(Job::new(&mut world, true, p_b, cps, scenario_b));
            world.stats.second_jobs += 1;
        }
        Ok(Sim {
            world,
            jobs,
            progress,
        })
    }

    pub fn run(&mut self) -> Res<()> {
        let result = self.run_inner();
        self.world.stats.snapshots = self.world.log.len() as u64;
        self.world.stats.tags = self.world.tags.len() as u64;
        result
    }

    fn run_inner(&mut self) -> Res<()> {
        let w = &mut self.world;
        self.jobs[0].begin(w)?;
        // The second job starts a little later, in the middle of the first.
        let mut b_starts_at = w.rng.range(0, 40);
        // A livelock bound, not a schedule: every checkpoint takes a few
        // hundred steps of coordination plus a few per writer (each writer's
        // event, END and acknowledgement is a step), so the bound grows with
        // P too (a flat cap stopped P = 1,024 jobs that were still
        // progressing).
        let cap = 5_000
            + self
                .jobs
                .iter()
                .map(|j| {
                    (j.checkpoints + 10) * (600 * u64::from(j.p().min(16)) + 200 * u64::from(j.p()))
                })
                .sum::<u64>();
        loop {
            w.step += 1;
            if let Some(pb) = self.progress {
                pb.set_position(self.jobs[0].triggered.min(self.jobs[0].checkpoints));
            }
            if w.step > cap {
                let phases: Vec<String> =
                    self.jobs.iter().map(|j| format!("{:?}", j.phase)).collect();
                return Err(w.fail(format!("no progress after {cap} steps (phases {phases:?})")));
            }
            if self.jobs.len() > 1 && !self.jobs[1].started {
                if b_starts_at == 0 {
                    self.jobs[1].begin(w)?;
                } else {
                    b_starts_at -= 1;
                }
            }
            for job in self.jobs.iter_mut().filter(|j| j.started) {
                job.advance_phase(w)?;
            }
            if self
                .jobs
                .iter()
                .all(|j| j.phase == Phase::Done && j.started)
            {
                break;
            }
            // While a trap waits for its call, no storage fault is queued: it
            // fires once the queues drained (constraint 13).
            let armed = self.jobs.iter().any(|j| j.trap_armed);
            let mut choices = Vec::new();
            for (i, job) in self.jobs.iter().enumerate() {
                if job.started {
                    choices.extend(
                        job.enabled(w)
                            .into_iter()
                            .filter(|(a, _)| !(armed && *a == super::job::Action::StorageFault))
                            .map(|(a, wt)| (i, a, wt)),
                    );
                }
            }
            let weights: Vec<u32> = choices.iter().map(|c| c.2).collect();
            let Some(pick) = w.rng.weighted(&weights) else {
                if self.jobs.iter().any(|j| !j.started) {
                    continue;
                }
                return Err(w.fail("nothing can happen"));
            };
            let (i, action, _) = choices[pick];
            self.jobs[i].act(w, action)?;
        }
        self.final_checks()
    }

    /// Every final check runs, whatever the others found; all problems are
    /// reported together.
    fn final_checks(&mut self) -> Res<()> {
        let w = &mut self.world;
        let mut problems = Vec::new();
        for job in self.jobs.iter_mut() {
            if let Err(v) = job.observe(w, super::job::Target::Main) {
                problems.push(v.message);
            }
            job.final_checks(w, &mut problems);
        }
        w.table_checks(&mut problems);
        if w.opts.check_replay {
            match replay_check(w) {
                Ok(()) => w.stats.replays_checked += 1,
                Err(e) => problems.push(e),
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            let n = problems.len();
            let mut v = w.fail(problems.join("\n    also: "));
            if n > 1 {
                v.message = format!("{n} final checks failed: {}", v.message);
            }
            Err(v)
        }
    }

    pub fn trace_text(&self) -> String {
        super::record::render_trace(&self.world.rec.trace)
    }
}

/// Replays the recorded trace (through the same engine as the run): every
/// call returns what it returned in the run, and the table is the same.
fn replay_check(w: &World<'_>) -> Result<(), String> {
    let format = w.opts.table_format;
    let replay = |trace| {
        crate::replay::replay_with_states_in(trace, &w.engine, format).map(|(result, _)| result)
    };
    let result = match replay(&w.rec.trace) {
        Ok(r) => r,
        Err(e) => {
            // Say where the replay parted from the run, if it did before.
            let mut prefix = w.rec.trace.clone();
            if let crate::replay::ReplayError::Malformed(m) = &e {
                prefix.steps.truncate(m.step.unwrap_or(0));
            }
            let before = replay(&prefix)
                .ok()
                .and_then(|r| first_divergence(w, &r).err());
            return Err(format!(
                "the recorded trace does not replay: {e}{}",
                before.map(|d| format!(" ({d})")).unwrap_or_default()
            ));
        }
    };
    first_divergence(w, &result)?;
    let replayed = crate::render::render_table(&result.snapshots, &result.tags);
    let snapshots: Vec<Snapshot> = w.log.iter().map(RawSnapshot::public).collect();
    let tags: Vec<_> = w.tags.iter().map(RawTag::public).collect();
    let ours = crate::render::render_table(&snapshots, &tags);
    if replayed != ours {
        return Err(format!(
            "replaying the recorded trace gives another table:\n--- simulated\n{ours}--- replayed\n{replayed}"
        ));
    }
    Ok(())
}

/// The first call whose result class differs between the run and a replay.
fn first_divergence(w: &World<'_>, result: &crate::replay::ReplayResult) -> Result<(), String> {
    for (i, (step, seen)) in result.steps.iter().zip(&w.rec.seen).enumerate() {
        let Some(seen) = seen else { continue };
        let replayed = step.error.as_ref().map_or("", |e| e.kind.name());
        if replayed != *seen {
            return Err(format!(
                "replaying the recorded trace, step {i} ({}) returns {:?}, the run saw {:?}",
                w.rec.trace.steps[i].op.name(),
                if replayed.is_empty() { "ok" } else { replayed },
                if seen.is_empty() { "ok" } else { seen }
            ));
        }
    }
    Ok(())
}
