//! The host's possible moves against the native core, as a stateright model.
//!
//! Host contract (SEMANTICS v2.1, what a host does):
//! - writers report every checkpoint they take part in (an entry, empty or
//!   not; flagged for a savepoint) at its barrier and keep their `state()`;
//!   the coordinator's own `checkpoint(n)` is taken first (the checkpoint is
//!   triggered), one checkpoint at a time; a checkpoint completes once every
//!   writer that had not finished at its trigger took part;
//!   `checkpoint-complete` reaches the coordinator in order, late, or never
//!   (skipped, SEMANTICS 4) — except the last one: the drive to the end
//!   delivers the completion of the latest completed checkpoint, which is at
//!   or after every writer's final checkpoint, unless a global failover from
//!   such a checkpoint (the latest completed one) came first;
//! - each writer's events travel in one FIFO channel (its outbox) that the
//!   host drains at any point: in order for one writer (section 1), late
//!   against completions and against other writers (10 item 1), also after
//!   the writer finished; while the coordinator is restoring, the host
//!   delivers only restore events and END events of restored writers (it
//!   holds ordinary events back);
//! - a writer finishes (FLIP-147) once its final checkpoint (one it took
//!   part in after its END) completed, whether or not the coordinator was
//!   told and its events arrived; a global failover from checkpoint `r` names
//!   the writers that had finished before `r` was triggered and whose events
//!   had all reached the coordinator before its `checkpoint(r)` (6.2); a
//!   finished writer with events in flight then is not named: it is restored
//!   from its last state, like a writer that had not finished;
//! - after a global failover, a named finished subtask may get an empty
//!   restore event or a `subtask-reset` (Flink replays a finished operator
//!   with empty state; the core ignores them, 6.2);
//! - savepoints: a triggered checkpoint may be a savepoint (writers flag
//!   their reports), or a drained stop-with-savepoint (every writer that has
//!   not finished has ended its input; the host triggers no checkpoint after
//!   it in its epoch, unless it is aborted); aborting the pending checkpoint
//!   tells the coordinator and the writers that took part;
//! - `committed(u)` is forwarded to writers (the latest value; possibly late,
//!   or lost: a lost one is one the host never delivers);
//! - region failover of a writer: the pending checkpoint is aborted, then
//!   `subtask-reset(s, r)` with `r` its latest completed checkpoint, and a
//!   fresh writer restored from its state at `r` sends `restored`;
//! - global failover: from the latest completed checkpoint (Flink), or from
//!   an older completed one once the table holds this commit user's END
//!   snapshot (a finished job restarted from an old checkpoint, SEMANTICS 5.3);
//!   with no completed checkpoint, from scratch; writers restored from their
//!   state at `r`; in-flight events, completions and notifications are lost;
//! - a call that returned `storage` is repeated before any other coordinator
//!   call (or the instance is discarded by a global failover); a `start` whose
//!   recovery commit failed is repeated by creating the instance again
//!   (TRACE-FORMAT has no second `start` on a live instance);
//! - `restart-required` is not acted on (the budgeted global failover may
//!   follow at any point anyway; ignoring it is `recovery = continue`).
//!
//! Not modelled: watermarks, failed reads, aborts that reach the coordinator
//! after a later checkpoint's completion, writers that miss an abort.
//!
//! The input: writer `s` reads `ends[s]` segments, one committable each
//! (`w<s>.<j>`), then its end of input with the tail `w<s>.end` (or an empty
//! tail). Data is a function of the input position, so a replay after a
//! restore re-produces the same committables under new checkpoint ids.

use std::sync::Arc;

use sink_coordinator::{Config, Coordinator, Lifecycle, Writer};
use stateright::{Model, Property};

use crate::env::{FaultEnv, FaultMode};
use crate::properties::*;
use crate::scope::*;
use crate::state::*;
use crate::step::*;
use crate::trace_steps::TStep;
use sink_coordinator_trace::format::{self as trace_format, Trace, DEFAULT_INSTANCE};

pub const COMMIT_USER: &str = "job";

/// The storage fault injected into a move: the `skip`+1-th put-class call
/// of the move fails (`fail`) or lands and fails (`ambiguous`). A move with
/// a fault that does not fire is not a move (an armed fault only matters
/// once it fires, so arming it is folded into the move where it fires).
pub type Fault = Option<(FaultMode, u64)>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Act {
    /// Drive the job to its end (no new faults) and check exactly-once. Terminal.
    Quiesce(Fault),
    /// Repeat the call that returned `storage`.
    Retry,
    /// Trigger the next checkpoint: the coordinator's `checkpoint(n)`. The
    /// writers in the mask finish (FLIP-147) just before: finishing changes
    /// nothing a later move can see before the next trigger but that it no
    /// longer fails over by region (a subset of the moves of the unfinished
    /// writer) and gets no `committed(u)`.
    Trigger(u8, Kind),
    /// A finished subtask named at the global failover gets an empty restore
    /// event (`false`) or a `subtask-reset` (`true`).
    Ghost(u32, bool),
    /// Abort the pending checkpoint.
    AbortCheckpoint,
    /// Writer `s` reaches the pending checkpoint's barrier: `report` +
    /// `state()`; with `true`, the pending `committed(u)` reached it first
    /// (forwarding changes nothing else a later move can see, so it is
    /// decided here: late = at a later barrier, lost = never).
    Barrier(u32, bool),
    /// Writer `s` reaches its end of input.
    EndInput(u32),
    /// The oldest event of writer `s` reaches the coordinator.
    Deliver(u32, Fault),
    /// `checkpoint-complete(n)` reaches the coordinator (in order: the
    /// pending notifications of earlier checkpoints are skipped).
    Complete(u64, Fault),
    RegionFailover(u32, Fault),
    GlobalFailover(Option<u64>, Fault),
}

/// What a triggered checkpoint is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Checkpoint,
    Savepoint,
    /// A drained stop-with-savepoint.
    Stop,
}

impl Act {
    fn fault(self) -> Fault {
        match self {
            Act::Quiesce(f)
            | Act::Deliver(_, f)
            | Act::Complete(_, f)
            | Act::RegionFailover(_, f)
            | Act::GlobalFailover(_, f) => f,
            _ => None,
        }
    }
}

pub struct SinkModel {
    pub scope: Scope,
    pub(crate) config: Config,
}

impl SinkModel {
    pub fn new(scope: Scope) -> Self {
        let config = scope.config();
        SinkModel { scope, config }
    }

    fn profile(&self, st: &St) -> &Profile {
        &self.scope.profiles[st.profile]
    }

    pub(crate) fn p(&self) -> usize {
        self.scope.parallelism as usize
    }

    /// The trace of a state's history (TRACE-FORMAT v2).
    pub fn trace(&self, st: &St) -> Trace {
        Trace {
            config: self.config.clone(),
            clock_start_ms: 0,
            clock_step_ms: 0,
            steps: st
                .trace
                .to_vec()
                .iter()
                .map(|s| trace_format::Step {
                    instance: DEFAULT_INSTANCE.to_string(),
                    op: s.op(&self.config),
                })
                .collect(),
        }
    }

    /// The trace document of a state's history, one step a line.
    pub fn trace_document(&self, st: &St) -> String {
        sink_coordinator_trace::format::to_json(&self.trace(st))
    }
}

// --- the model ----------------------------------------------------------------

impl Model for SinkModel {
    type State = St;
    type Action = Act;

    fn init_states(&self) -> Vec<St> {
        let p = self.p();
        (0..self.scope.profiles.len())
            .map(|profile| {
                let mut env = FaultEnv::default();
                let mut coord = Coordinator::new(self.config.clone(), None);
                let out = coord.start(&mut env).expect("a fresh start succeeds");
                let mut trace = List::default();
                trace.push(TStep::Start);
                let coord_sum = CoordSum {
                    life: out.state.name(),
                    up_to: out.committed_up_to,
                    final_done: coord.final_committed(),
                    debug: format!("{coord:?}"),
                    slots: vec![Vec::new(); p],
                    restored: vec![false; p],
                };
                St {
                    profile,
                    env: Arc::new(env),
                    coordinator: Arc::new(coord),
                    coord: Arc::new(coord_sum),
                    writers: (0..p as u32)
                        .map(|s| W {
                            wstate: Writer::new(s).state(),
                            writer: Writer::new(s),
                            attempt: 0,
                            outbox: Default::default(),
                            pos: 0,
                            ended: false,
                            ended_src: false,
                            finished: false,
                            final_ck: None,
                            note: None,
                            seen_u: None,
                        })
                        .collect(),
                    ckpts: Vec::new(),
                    in_progress: None,
                    notified: None,
                    epoch: 0,
                    restore_base: None,
                    named: Vec::new(),
                    left: Budget {
                        checkpoints: self.scope.checkpoints,
                        global: self.scope.global_failovers,
                        region: self.scope.region_failovers,
                        faults: self.scope.storage_faults,
                        aborts: self.scope.aborts,
                        savepoints: self.scope.savepoints,
                        ghosts: self.scope.ghosts,
                    },
                    stopping: false,
                    flags: 0,
                    drained_owed: 0,
                    excused: 0,
                    tags: None,
                    retry: None,
                    fatal: None,
                    done: None,
                    cov: 0,
                    table: Arc::new(Vec::new()),
                    trace,
                }
            })
            .collect()
    }

    fn actions(&self, st: &St, out: &mut Vec<Act>) {
        if st.done.is_some() || violated(st) {
            return;
        }
        let faults: Vec<Fault> = if st.left.faults > 0 {
            let mut v = vec![None];
            for &mode in &self.scope.fault_modes {
                for &skip in &self.scope.fault_skips {
                    v.push(Some((mode, skip)));
                }
            }
            v
        } else {
            vec![None]
        };
        let with_faults = |out: &mut Vec<Act>, mk: &dyn Fn(Fault) -> Act| {
            for &f in &faults {
                out.push(mk(f));
            }
        };
        // The drive to the end is made of moves the model has (deliver,
        // barrier with forwarding, trigger with finishing, complete), plus
        // checkpoints beyond the budget: it only adds something once the
        // budget is spent (or no checkpoint can be taken any more).
        if st.left.checkpoints == 0 || st.writers.iter().all(|w| w.finished) {
            with_faults(out, &|f| Act::Quiesce(f));
        }
        let mut global = Vec::new();
        if st.left.global > 0 {
            let completed: Vec<u64> = st
                .ckpts
                .iter()
                .filter(|c| c.status == CkStatus::Completed)
                .map(|c| c.id)
                .collect();
            match completed.iter().max() {
                None => with_faults(&mut global, &|f| Act::GlobalFailover(None, f)),
                Some(&latest) => {
                    with_faults(&mut global, &|f| Act::GlobalFailover(Some(latest), f));
                    if self.scope.older_restore && has_end(st) {
                        for &c in completed.iter().filter(|&&c| c != latest) {
                            with_faults(&mut global, &|f| Act::GlobalFailover(Some(c), f));
                        }
                    }
                }
            }
        }
        if st.retry.is_some() {
            out.push(Act::Retry);
            out.extend(global);
            return;
        }
        let running = st.coord.life == Lifecycle::Running.name();
        let restoring = st.coord.life == Lifecycle::Restoring.name();
        let prof = self.profile(st);
        if st.left.checkpoints > 0
            && st.in_progress.is_none()
            && !st.stopping
            && (running || (restoring && self.scope.aborts > 0))
        {
            let can: Vec<usize> = (0..st.writers.len())
                .filter(|&s| may_finish(st, s))
                .collect();
            for mask in 0u32..(1 << can.len()) {
                let mut m = 0u8;
                for (i, &s) in can.iter().enumerate() {
                    if mask & (1 << i) != 0 {
                        m |= 1 << s;
                    }
                }
                let open = |s: usize| !st.writers[s].finished && m & (1 << s) == 0;
                if !(0..st.writers.len()).any(open) {
                    continue;
                }
                out.push(Act::Trigger(m, Kind::Checkpoint));
                if st.left.savepoints > 0 && running {
                    out.push(Act::Trigger(m, Kind::Savepoint));
                    let drained = (0..st.writers.len())
                        .filter(|&s| open(s))
                        .all(|s| st.writers[s].ended_src);
                    if self.scope.stop_with_savepoint && drained {
                        out.push(Act::Trigger(m, Kind::Stop));
                    }
                }
            }
        }
        if st.left.aborts > 0 && st.in_progress.is_some() {
            out.push(Act::AbortCheckpoint);
        }
        for (s, w) in st.writers.iter().enumerate() {
            if owes_barrier(st, s) {
                out.push(Act::Barrier(s as u32, false));
                if w.note.is_some() {
                    out.push(Act::Barrier(s as u32, true));
                }
            }
            if !w.finished && !w.ended && w.pos == prof.ends[s] {
                out.push(Act::EndInput(s as u32));
            }
            if deliverable(st, s) {
                with_faults(out, &|f| Act::Deliver(s as u32, f));
            }
        }
        if running {
            for c in st.ckpts.iter().filter(|c| c.notify) {
                with_faults(out, &|f| Act::Complete(c.id, f));
            }
        }
        // Flink replays a finished subtask when it redeploys the job: while
        // the new instance restores, or, if every subtask was named (the
        // instance ran its recovery inside `start`), before any other input.
        let fresh = running && st.coord.slots.iter().all(Vec::is_empty);
        if st.left.ghosts > 0 && (restoring || fresh) {
            for &s in &st.named {
                out.push(Act::Ghost(s, false));
                out.push(Act::Ghost(s, true));
            }
        }
        if st.left.region > 0 && (running || restoring) {
            for (s, w) in st.writers.iter().enumerate() {
                if !w.finished {
                    with_faults(out, &|f| Act::RegionFailover(s as u32, f));
                }
            }
        }
        out.extend(global);
    }

    fn next_state(&self, st: &St, act: Act) -> Option<St> {
        let mut step = Step {
            m: self,
            st: st.clone(),
            world: None,
            repeating: false,
        };
        if let Some((mode, skip)) = act.fault() {
            step.st.left.faults -= 1;
            step.env_mut().arm(skip, mode);
            step.trace(TStep::Fault(mode, skip));
        }
        step.apply(act);
        let st = step.finish();
        if act.fault().is_some() && st.env.is_armed() {
            return None; // the fault did not fire: the same as the move without it
        }
        Some(st)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(P_NO_FATAL, |_, st: &St| st.fatal.is_none()),
            Property::always(P_ONCE, |_, st: &St| duplicate(st).is_none()),
            Property::always(P_INCREASING, |_, st: &St| increasing(st)),
            Property::always(P_EXACTLY_ONCE, |_, st: &St| {
                !matches!(st.done, Some(Err(_)))
            }),
            Property::always(P_TAGS, |_, st: &St| st.tags.is_none()),
            Property::eventually(P_FINAL, |_, st: &St| has_end(st) || violated(st)),
            Property::sometimes(S_FINAL, |_, st: &St| has_end(st)),
            Property::sometimes(S_GLOBAL, |_, st: &St| {
                done_ok(st) && st.cov & cov::GLOBAL != 0
            }),
            Property::sometimes(S_NAMED, |_, st: &St| {
                done_ok(st) && st.cov & cov::NAMED_FINISHED != 0
            }),
            Property::sometimes(S_REGION, |_, st: &St| {
                done_ok(st) && st.cov & cov::REGION != 0
            }),
            Property::sometimes(S_FAIL, |_, st: &St| {
                done_ok(st) && st.cov & cov::FAULT_FAIL != 0
            }),
            Property::sometimes(S_AMBIGUOUS, |_, st: &St| {
                done_ok(st) && st.cov & cov::FAULT_AMBIGUOUS != 0
            }),
            Property::sometimes(S_RESTART, |_, st: &St| st.cov & cov::RESTART_REQUIRED != 0),
            Property::sometimes(S_END_RESTORING, |_, st: &St| {
                st.cov & cov::END_WHILE_RESTORING != 0
            }),
            Property::sometimes(S_FINISHED, |_, st: &St| st.cov & cov::FINISHED != 0),
            Property::sometimes(S_TAG, |_, st: &St| {
                done_ok(st) && st.cov & cov::SAVEPOINT_TAG != 0
            }),
            Property::sometimes(S_DRAINED_TAG, |_, st: &St| {
                done_ok(st) && st.cov & cov::DRAINED_TAG != 0
            }),
            Property::sometimes(S_GHOST, |_, st: &St| {
                done_ok(st) && st.cov & cov::GHOST != 0
            }),
            Property::sometimes(S_FINISHED_IN_FLIGHT, |_, st: &St| {
                done_ok(st) && st.cov & cov::FINISHED_IN_FLIGHT != 0
            }),
        ]
    }
}

/// FLIP-147: writer `s` may finish once its final checkpoint (one it took
/// part in after its END) completed; its events may still be in flight, and
/// the coordinator may not have been told yet (SEMANTICS 4, 6.2).
pub(crate) fn may_finish(st: &St, s: usize) -> bool {
    let w = &st.writers[s];
    !w.finished && w.final_ck.is_some()
}

pub(crate) fn owes_barrier(st: &St, s: usize) -> bool {
    st.in_progress.is_some_and(|n| {
        let ck = &st.ckpts[(n - 1) as usize];
        !ck.finished_at_trigger[s] && ck.writers[s].is_none()
    })
}

pub(crate) fn deliverable(st: &St, s: usize) -> bool {
    let Some(head) = st.writers[s].outbox.front() else {
        return false;
    };
    match st.coord.life {
        l if l == Lifecycle::Running.name() => true,
        l if l == Lifecycle::Restoring.name() => match head {
            Msg::Restored { .. } => true,
            Msg::Event(e) => e.is_end() && st.coord.restored[s],
        },
        _ => false,
    }
}
