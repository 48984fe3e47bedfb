//! The host's possible moves against the native core, as a stateright model.
//!
//! Host contract (SEMANTICS v2, what a host does):
//! - writers report every checkpoint they take part in (an entry, empty or
//!   not) at its barrier and keep their `state()`; the coordinator's own
//!   `checkpoint(n)` is taken first (the checkpoint is triggered), one
//!   checkpoint at a time; a checkpoint completes once every writer that had
//!   not finished at its trigger took part; `checkpoint-complete` reaches the
//!   coordinator in order, late, or never (skipped, SEMANTICS 4);
//! - one writer's events reach the coordinator in order (outbox), at any
//!   time, also after the completion of their checkpoint (10.1) — except that
//!   an END event is not overtaken by the completion of a checkpoint the
//!   writer took part in after its END (6.2: "Flink delivers a subtask's
//!   events in order, before its checkpoint acknowledgement"; `--late-end`
//!   lifts it); while the coordinator is restoring, the host delivers only
//!   restore events and END events of restored writers (it holds ordinary
//!   events back);
//! - a writer finishes (FLIP-147) only once its final checkpoint (one it took
//!   part in after its END) completed, the coordinator received that
//!   completion or a later one, and its events were all delivered; a global
//!   failover from checkpoint `r` names exactly the writers that had finished
//!   before `r` was triggered (so every event they sent reached the
//!   coordinator before its checkpoint `r`, SEMANTICS 6.2);
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
//! Not modelled: watermarks, savepoints and tags, failed reads, P > 2.
//!
//! The input: writer `s` reads `ends[s]` segments, one committable each
//! (`w<s>.<j>`), then its end of input with the tail `w<s>.end` (or an empty
//! tail). Data is a function of the input position, so a replay after a
//! restore re-produces the same committables under new checkpoint ids.

use std::sync::Arc;

use serde_json::{json, Value};
use sink_coordinator::table;
use sink_coordinator::{
    Config, Coordinator, Error, ErrorKind, FinalCommitMode, Lifecycle, Outcome, RestorePoint,
    Writer, END,
};
use stateright::{Model, Property};

use crate::env::{FaultEnv, FaultMode, ReadOnly};
use crate::state::*;

pub const COMMIT_USER: &str = "job";

/// One input: per writer, the number of segments before its end of input
/// and whether its END entry carries data.
#[derive(Clone, Debug)]
pub struct Profile {
    pub ends: Vec<u32>,
    pub tails: Vec<bool>,
}

/// How much of the host's freedom to explore.
#[derive(Clone, Debug)]
pub struct Scope {
    pub name: String,
    pub parallelism: u32,
    /// Checkpoints the host may trigger (ids 1, 2, ...; the drive to the end
    /// takes further ones).
    pub checkpoints: u32,
    pub global_failovers: u32,
    pub region_failovers: u32,
    pub storage_faults: u32,
    /// `skip` values of the injected fault (0: the next write).
    pub fault_skips: Vec<u64>,
    pub fault_modes: Vec<FaultMode>,
    /// The host may abort the pending checkpoint (and a checkpoint declined
    /// while restoring is aborted).
    pub aborts: bool,
    /// Global failover from an older completed checkpoint after the final commit.
    pub older_restore: bool,
    pub profiles: Vec<Profile>,
    pub final_commit: FinalCommitMode,
    /// Let a writer's END event reach the coordinator after the completion
    /// of a checkpoint the writer took part in after its END (SEMANTICS 10.1
    /// read literally). Off: the host contract of 6.2 ("Flink delivers a
    /// subtask's events in order, before its checkpoint acknowledgement")
    /// for END events, which the on-checkpoint final commit needs (5.3).
    pub late_end_events: bool,
}

impl Scope {
    pub fn config(&self) -> Config {
        let mut c = Config::new(self.parallelism, COMMIT_USER);
        c.final_commit = self.final_commit;
        c
    }

    pub fn trace_config(&self) -> Value {
        let mut v = json!({"parallelism": self.parallelism, "commit_user": COMMIT_USER});
        if self.final_commit == FinalCommitMode::OnEndInput {
            v["final_commit"] = json!("on-end-input");
        }
        v
    }
}

pub fn segment(s: u32, j: u32) -> Vec<Vec<u8>> {
    vec![format!("w{s}.{j}").into_bytes()]
}

pub fn tail(p: &Profile, s: u32) -> Vec<Vec<u8>> {
    if p.tails[s as usize] {
        vec![format!("w{s}.end").into_bytes()]
    } else {
        Vec::new()
    }
}

/// Every committable of a profile's whole input.
pub fn all_records(p: &Profile) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for s in 0..p.ends.len() as u32 {
        for j in 0..p.ends[s as usize] {
            out.extend(segment(s, j));
        }
        out.extend(tail(p, s));
    }
    out.sort();
    out
}

fn ck_json(c: u64) -> Value {
    if c == END {
        json!("end")
    } else {
        json!(c)
    }
}

fn opt_ck_json(c: Option<u64>) -> Value {
    c.map_or(Value::Null, ck_json)
}

fn strings(cs: &[Vec<u8>]) -> Value {
    Value::Array(
        cs.iter()
            .map(|c| Value::String(String::from_utf8_lossy(c).into_owned()))
            .collect(),
    )
}

fn entries_json(es: &[Ent]) -> Value {
    Value::Array(
        es.iter()
            .map(|e| json!({"checkpoint": ck_json(e.checkpoint), "committables": strings(&e.committables)}))
            .collect(),
    )
}

/// The storage fault injected into a move: the `skip`+1-th put-class call
/// of the move fails (`fail`) or lands and fails (`ambiguous`). A move with
/// a fault that does not fire is not a move (an armed fault only matters
/// once it fires, so arming it is folded into the move where it fires).
pub type Fault = Option<(FaultMode, u64)>;

/// One TRACE-FORMAT step (rendered to JSON only when a trace is written).
#[derive(Clone, Debug)]
pub enum TStep {
    Start,
    Checkpoint(u64),
    Abort(u64),
    Complete(u64),
    Write(u32, u64, Vec<Vec<u8>>),
    WriterSnapshot(u32, u64),
    EndInput(u32, Vec<Vec<u8>>),
    Send(u32),
    WriterCommitted(u32, u64),
    WriterAbort(u32, u64),
    Reset(u32, Option<u64>),
    WriterRestore(u32, Option<u64>, u32),
    Failover(Option<u64>, Vec<u32>),
    Fault(FaultMode, u64),
    Event(u32, u32, Ent),
    Restored(u32, u32, u64, Vec<Ent>),
}

impl TStep {
    /// The step's fields, `op` first, in the order TRACE-FORMAT lists them.
    pub fn fields(&self) -> Vec<(&'static str, Value)> {
        let op = |name: &str| ("op", json!(name));
        match self {
            TStep::Start => vec![op("start")],
            TStep::Checkpoint(n) => vec![op("checkpoint"), ("checkpoint", ck_json(*n))],
            TStep::Abort(n) => vec![op("abort"), ("checkpoint", ck_json(*n))],
            TStep::Complete(n) => vec![op("complete"), ("checkpoint", ck_json(*n))],
            TStep::Write(s, n, data) => vec![
                op("write"),
                ("subtask", json!(s)),
                ("checkpoint", json!(n)),
                ("committables", strings(data)),
                ("send", json!(false)),
            ],
            TStep::WriterSnapshot(s, n) => vec![
                op("writer_snapshot"),
                ("subtask", json!(s)),
                ("checkpoint", json!(n)),
            ],
            TStep::EndInput(s, data) => vec![
                op("end_input"),
                ("subtask", json!(s)),
                ("committables", strings(data)),
                ("send", json!(false)),
            ],
            TStep::Send(s) => vec![op("send"), ("subtask", json!(s)), ("count", json!(1))],
            TStep::WriterCommitted(s, u) => vec![
                op("writer_committed"),
                ("subtask", json!(s)),
                ("checkpoint", ck_json(*u)),
            ],
            TStep::WriterAbort(s, n) => vec![
                op("writer_abort"),
                ("subtask", json!(s)),
                ("checkpoint", json!(n)),
            ],
            TStep::Reset(s, r) => vec![
                op("reset_subtask"),
                ("subtask", json!(s)),
                ("checkpoint", opt_ck_json(*r)),
            ],
            TStep::WriterRestore(s, r, attempt) => vec![
                op("writer_restore"),
                ("subtask", json!(s)),
                ("checkpoint", opt_ck_json(*r)),
                ("attempt", json!(attempt)),
                ("send", json!(false)),
            ],
            TStep::Failover(r, finished) => vec![
                op("failover"),
                ("checkpoint", opt_ck_json(*r)),
                ("finished_subtasks", json!(finished)),
            ],
            TStep::Fault(mode, skip) => vec![
                op("storage_fault"),
                ("call", json!("put")),
                ("mode", json!(mode.name())),
                ("skip", json!(skip)),
            ],
            TStep::Event(s, attempt, e) => vec![
                op("event"),
                ("subtask", json!(s)),
                ("attempt", json!(attempt)),
                ("checkpoint", ck_json(e.checkpoint)),
                ("committables", strings(&e.committables)),
            ],
            TStep::Restored(s, attempt, r, entries) => vec![
                op("restored"),
                ("subtask", json!(s)),
                ("attempt", json!(attempt)),
                ("checkpoint", json!(r)),
                ("entries", entries_json(entries)),
            ],
        }
    }

    /// One JSON object on one line, fields in `fields()` order.
    pub fn line(&self) -> String {
        let parts: Vec<String> = self
            .fields()
            .into_iter()
            .map(|(k, v)| format!("{}: {}", json!(k), v))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Act {
    /// Drive the job to its end (no new faults) and check exactly-once. Terminal.
    Quiesce(Fault),
    /// Repeat the call that returned `storage`.
    Retry,
    /// Trigger the next checkpoint: the coordinator's `checkpoint(n)`. The
    /// writers in the mask finish (FLIP-147) just before: finishing changes
    /// nothing else a later move can see (its events are all delivered).
    Trigger(u8),
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
    config: Config,
}

impl SinkModel {
    pub fn new(scope: Scope) -> Self {
        let config = scope.config();
        SinkModel { scope, config }
    }

    fn profile(&self, st: &St) -> &Profile {
        &self.scope.profiles[st.profile]
    }

    fn p(&self) -> usize {
        self.scope.parallelism as usize
    }

    /// The trace document of a state's history (TRACE-FORMAT v2), one step a line.
    pub fn trace_document(&self, st: &St) -> String {
        let steps: Vec<String> = st
            .trace
            .to_vec()
            .iter()
            .map(|s| format!("    {}", s.line()))
            .collect();
        format!(
            "{{\n  \"config\": {},\n  \"clock_start_ms\": 0,\n  \"clock_step_ms\": 0,\n  \"steps\": [\n{}\n  ]\n}}\n",
            self.scope.trace_config(),
            steps.join(",\n")
        )
    }
}

// --- properties --------------------------------------------------------------

fn user_snaps(st: &St) -> impl Iterator<Item = &Snap> {
    st.table.iter().filter(|s| s.commit_user == COMMIT_USER)
}

pub fn has_end(st: &St) -> bool {
    user_snaps(st).any(|s| s.identifier == END)
}

pub fn duplicate(st: &St) -> Option<String> {
    let mut all: Vec<&Vec<u8>> = st
        .table
        .iter()
        .flat_map(|s| s.committables.iter().map(|(_, c)| c))
        .collect();
    all.sort();
    all.windows(2)
        .find(|w| w[0] == w[1])
        .map(|w| String::from_utf8_lossy(w[0]).into_owned())
}

pub fn increasing(st: &St) -> bool {
    let ids: Vec<u64> = user_snaps(st).map(|s| s.identifier).collect();
    ids.windows(2).all(|w| w[0] < w[1])
}

/// A safety property failed: the state is terminal.
pub fn violated(st: &St) -> bool {
    st.fatal.is_some()
        || matches!(st.done, Some(Err(_)))
        || duplicate(st).is_some()
        || !increasing(st)
}

pub const P_NO_FATAL: &str = "no fatal error under the host contract";
pub const P_ONCE: &str = "no committable twice, ever";
pub const P_INCREASING: &str = "identifiers of the commit user strictly increase";
pub const P_EXACTLY_ONCE: &str =
    "driven to its end: every committable exactly once, END snapshot, committed-up-to END";
pub const P_FINAL: &str = "the job reaches its final commit";

pub const S_FINAL: &str = "a final commit";
pub const S_GLOBAL: &str = "exactly-once after a global failover";
pub const S_NAMED: &str = "exactly-once after a failover that named a finished writer";
pub const S_REGION: &str = "exactly-once after a region failover";
pub const S_FAIL: &str = "exactly-once after a failed write";
pub const S_AMBIGUOUS: &str = "exactly-once after an ambiguous write";
pub const S_RESTART: &str = "restart-required reported";
pub const S_END_RESTORING: &str = "an END event while restoring";
pub const S_FINISHED: &str = "a writer finished";

fn done_ok(st: &St) -> bool {
    matches!(st.done, Some(Ok(())))
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
                    },
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
            && (running || (restoring && self.scope.aborts))
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
                let left =
                    (0..st.writers.len()).any(|s| !st.writers[s].finished && m & (1 << s) == 0);
                if left {
                    out.push(Act::Trigger(m));
                }
            }
        }
        if self.scope.aborts && st.in_progress.is_some() {
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
                if self.scope.late_end_events || !end_in_flight(st, c) {
                    with_faults(out, &|f| Act::Complete(c.id, f));
                }
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
            step.env_mut().armed = Some((skip, mode));
            step.trace(TStep::Fault(mode, skip));
        }
        step.apply(act);
        let st = step.finish();
        if act.fault().is_some() && st.env.armed.is_some() {
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
        ]
    }
}

/// FLIP-147: writer `s` may finish once its final checkpoint (one it took
/// part in after its END) completed and the coordinator was told (the host
/// notifies the coordinator of a job's last checkpoint before the job ends),
/// and its events were all delivered (6.2: they precede its acknowledgement).
fn may_finish(st: &St, s: usize) -> bool {
    let w = &st.writers[s];
    !w.finished
        && w.outbox.is_empty()
        && w.final_ck
            .is_some_and(|f| st.notified.is_some_and(|n| n >= f))
}

fn owes_barrier(st: &St, s: usize) -> bool {
    st.in_progress.is_some_and(|n| {
        let ck = &st.ckpts[(n - 1) as usize];
        !ck.finished_at_trigger[s] && ck.writers[s].is_none()
    })
}

/// A writer that took part in `c` after its END still has an END event in
/// flight: `c`'s completion may not overtake it (host contract, 6.2).
fn end_in_flight(st: &St, c: &Ck) -> bool {
    c.writers.iter().enumerate().any(|(s, w)| {
        w.as_ref().is_some_and(|w| w.ended_src)
            && st.writers[s].outbox.iter().any(|m| match m {
                Msg::Event(e) => e.is_end(),
                Msg::Restored { entries, .. } => entries.iter().any(Ent::is_end),
            })
    })
}

fn deliverable(st: &St, s: usize) -> bool {
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

// --- one transition -------------------------------------------------------------

struct World {
    coord: Coordinator,
    env: FaultEnv,
}

enum Res {
    Outcome(Outcome),
    Bytes(Vec<u8>),
}

fn exec(c: &mut Coordinator, env: &mut FaultEnv, call: &Call) -> Result<Res, Error> {
    env.fired_now = None;
    let out = match call {
        Call::Start => c.start(env),
        Call::Event {
            subtask,
            attempt,
            entry,
        } => c.event(env, *subtask, *attempt, entry.entry()),
        Call::Restored {
            subtask,
            attempt,
            checkpoint,
            entries,
        } => c.restored(
            env,
            *subtask,
            *attempt,
            *checkpoint,
            entries.iter().map(Ent::entry).collect(),
        ),
        Call::Reset {
            subtask,
            checkpoint,
        } => c.subtask_reset(env, *subtask, *checkpoint),
        Call::Checkpoint(n) => return c.checkpoint(env, *n).map(Res::Bytes),
        Call::Complete(n) => c.checkpoint_complete(env, *n),
        Call::Abort(n) => c.checkpoint_aborted(env, *n),
    };
    out.map(Res::Outcome)
}

pub fn read_table(env: &FaultEnv) -> Vec<Snap> {
    table::list_snapshots(&mut ReadOnly(&env.mem.map))
        .expect("the model's table decodes")
        .into_iter()
        .map(|s| Snap {
            commit_user: s.commit_user,
            identifier: s.identifier,
            committables: s.committables,
        })
        .collect()
}

struct Step<'m> {
    m: &'m SinkModel,
    st: St,
    world: Option<World>,
    /// The next call repeats one that returned `storage`.
    repeating: bool,
}

impl Step<'_> {
    fn finish(mut self) -> St {
        if let Some(w) = self.world.take() {
            let debug = format!("{:?}", w.coord);
            Arc::make_mut(&mut self.st.coord).debug = debug;
            let snapshots = w
                .env
                .mem
                .map
                .range::<str, _>((
                    std::ops::Bound::Included(table::SNAPSHOT_PREFIX),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(k, _)| k.starts_with(table::SNAPSHOT_PREFIX))
                .count();
            if snapshots != self.st.table.len() {
                // Snapshots are only ever appended (ids are dense): read the new ones.
                let table = Arc::make_mut(&mut self.st.table);
                let mut ro = ReadOnly(&w.env.mem.map);
                for id in table.len() as u64 + 1..=snapshots as u64 {
                    let s = table::snapshot_by_id(&mut ro, id)
                        .expect("the model's table decodes")
                        .expect("snapshot ids are dense");
                    table.push(Snap {
                        commit_user: s.commit_user,
                        identifier: s.identifier,
                        committables: s.committables,
                    });
                }
            }
            self.st.env = Arc::new(w.env);
            self.st.coordinator = Arc::new(w.coord);
        }
        self.st
    }

    /// The current instance and storage, copied out of the state on first use.
    fn world(&mut self) -> &mut World {
        if self.world.is_none() {
            self.world = Some(World {
                coord: (*self.st.coordinator).clone(),
                env: (*self.st.env).clone(),
            });
        }
        self.world.as_mut().expect("just built")
    }

    fn env_mut(&mut self) -> &mut FaultEnv {
        match &mut self.world {
            Some(w) => &mut w.env,
            None => Arc::make_mut(&mut self.st.env),
        }
    }

    fn ck(&self, n: u64) -> &Ck {
        &self.st.ckpts[(n - 1) as usize]
    }

    fn ck_mut(&mut self, n: u64) -> &mut Ck {
        Arc::make_mut(&mut self.st.ckpts[(n - 1) as usize])
    }

    fn csum(&mut self) -> &mut CoordSum {
        Arc::make_mut(&mut self.st.coord)
    }

    fn trace(&mut self, v: TStep) {
        self.st.trace.push(v);
    }

    fn fatal(&mut self, m: String) {
        if self.st.fatal.is_none() {
            self.st.fatal = Some(m);
        }
    }

    fn failed(&self) -> Result<(), String> {
        match &self.st.fatal {
            Some(f) => Err(f.clone()),
            None => Ok(()),
        }
    }

    fn prof(&self) -> &Profile {
        &self.m.scope.profiles[self.st.profile]
    }

    /// One coordinator call: summary, repeats after `storage`, notifications.
    fn call(&mut self, call: Call) -> Result<Res, Error> {
        let was_restoring = self.st.coord.life == Lifecycle::Restoring.name();
        let res = {
            let w = self.world();
            exec(&mut w.coord, &mut w.env, &call)
        };
        let (fired, life, up_to, final_done) = {
            let w = self.world.as_ref().expect("built");
            (
                w.env.fired_now,
                w.coord.state(),
                w.coord.committed_up_to(),
                w.coord.final_committed(),
            )
        };
        let accepted = match &res {
            Ok(_) => true,
            Err(e) => e.kind == ErrorKind::Storage,
        };
        let repeat = std::mem::take(&mut self.repeating);
        match &call {
            // A repeated call (after `storage`) is the same input again.
            _ if repeat => {}
            Call::Event { subtask, entry, .. } => {
                let s = *subtask as usize;
                self.csum().slots[s].push(SlotIn::Event(entry.clone()));
                if was_restoring && entry.is_end() {
                    self.st.cov |= cov::END_WHILE_RESTORING;
                }
            }
            Call::Restored {
                subtask,
                checkpoint,
                entries,
                ..
            } => {
                let s = *subtask as usize;
                self.csum().slots[s].push(SlotIn::Restored(*checkpoint, entries.clone()));
                if was_restoring && accepted {
                    self.csum().restored[s] = true;
                }
            }
            Call::Reset {
                subtask,
                checkpoint,
            } => {
                let s = *subtask as usize;
                self.csum().slots[s].push(SlotIn::Reset(*checkpoint));
                if was_restoring {
                    self.csum().restored[s] = false;
                }
            }
            _ => {}
        }
        if self.st.coord.life != life.name()
            || self.st.coord.up_to != up_to
            || self.st.coord.final_done != final_done
        {
            let c = self.csum();
            c.life = life.name();
            c.up_to = up_to;
            c.final_done = final_done;
            if final_done && life == Lifecycle::Running {
                // After the final commit a running instance ignores every
                // input and its state bytes hold no entry (SEMANTICS 5.3):
                // what its slots held no longer matters.
                c.slots.iter_mut().for_each(Vec::clear);
                c.restored.iter_mut().for_each(|r| *r = false);
            }
        }
        match fired {
            Some(FaultMode::Fail) => self.st.cov |= cov::FAULT_FAIL,
            Some(FaultMode::Ambiguous) => self.st.cov |= cov::FAULT_AMBIGUOUS,
            None => {}
        }
        if let (Call::Complete(n), Ok(_)) = (&call, &res) {
            self.st.notified = self.st.notified.max(Some(*n));
        }
        match &res {
            Ok(Res::Outcome(o)) => {
                if o.restart_required {
                    self.st.cov |= cov::RESTART_REQUIRED;
                }
                if o.committed_up_to != up_to {
                    self.fatal(format!(
                        "{call:?}: the outcome says committed-up-to {:?}, the query {:?}",
                        o.committed_up_to, up_to
                    ));
                }
            }
            Ok(Res::Bytes(_)) => {}
            Err(e) => match e.kind {
                ErrorKind::Storage if fired.is_some() => self.st.retry = Some(call.clone()),
                ErrorKind::Declined if matches!(call, Call::Checkpoint(_)) => {}
                _ => self.fatal(format!("{call:?} -> {e}")),
            },
        }
        // The host forwards committed-up-to to every writer (the latest value).
        if let Some(u) = up_to {
            for w in self.st.writers.iter_mut().filter(|w| !w.finished) {
                if w.seen_u.is_none_or(|h| u > h) && w.note.is_none_or(|x| u > x) {
                    w.note = Some(u);
                }
            }
        }
        res
    }

    fn apply(&mut self, act: Act) {
        match act {
            Act::Quiesce(_) => {
                let r = self.quiesce();
                self.st.done = Some(r);
            }
            Act::Retry => self.retry(),
            Act::Trigger(mask) => {
                self.st.left.checkpoints -= 1;
                for s in 0..self.m.p() {
                    if mask & (1 << s) != 0 {
                        self.finish_writer(s);
                    }
                }
                self.trigger();
            }
            Act::AbortCheckpoint => self.abort_in_progress(),
            Act::Barrier(s, forward) => {
                if forward {
                    self.forward(s as usize);
                }
                self.barrier(s as usize)
            }
            Act::EndInput(s) => self.end_input(s as usize),
            Act::Deliver(s, _) => self.deliver(s as usize),
            Act::Complete(n, _) => self.complete(n),
            Act::RegionFailover(s, _) => self.region(s as usize),
            Act::GlobalFailover(r, _) => self.global(r),
        }
    }

    fn finish_writer(&mut self, s: usize) {
        let w = &mut self.st.writers[s];
        debug_assert!(w.final_ck.is_some() && w.outbox.is_empty());
        w.finished = true;
        w.note = None;
        self.st.cov |= cov::FINISHED;
    }

    fn retry(&mut self) {
        let Some(call) = self.st.retry.take() else {
            return;
        };
        match &call {
            Call::Start => {
                // Repeated by creating the instance again (TRACE-FORMAT has no
                // second `start` on a live instance).
                self.new_instance();
                return;
            }
            Call::Event {
                subtask,
                attempt,
                entry,
            } => self.trace(TStep::Event(*subtask, *attempt, entry.clone())),
            Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => self.trace(TStep::Restored(
                *subtask,
                *attempt,
                *checkpoint,
                entries.clone(),
            )),
            Call::Reset {
                subtask,
                checkpoint,
            } => self.trace(TStep::Reset(*subtask, *checkpoint)),
            Call::Complete(n) => self.trace(TStep::Complete(*n)),
            Call::Abort(n) => self.trace(TStep::Abort(*n)),
            Call::Checkpoint(_) => {
                self.fatal(format!("model bug: retrying {call:?}"));
                return;
            }
        }
        self.repeating = true;
        let _ = self.call(call);
    }

    /// Repeats pending storage-failed calls (the host contract).
    fn settle(&mut self) -> Result<(), String> {
        let mut guard = 0;
        while self.st.retry.is_some() {
            guard += 1;
            if guard > 4 {
                return Err("storage keeps failing".into());
            }
            self.retry();
            self.failed()?;
        }
        self.failed()
    }

    fn trigger(&mut self) {
        let n = self.st.ckpts.len() as u64 + 1;
        self.trace(TStep::Checkpoint(n));
        let finished_at_trigger: Vec<bool> = self.st.writers.iter().map(|w| w.finished).collect();
        let p = self.m.p();
        let mut ck = Ck {
            id: n,
            epoch: self.st.epoch,
            coord: None,
            writers: vec![None; p],
            finished_at_trigger,
            status: CkStatus::InProgress,
            notify: false,
        };
        match self.call(Call::Checkpoint(n)) {
            Ok(Res::Bytes(b)) => {
                ck.coord = Some(b);
                self.st.ckpts.push(Arc::new(ck));
                self.st.in_progress = Some(n);
            }
            Ok(Res::Outcome(_)) => unreachable!("checkpoint returns bytes"),
            Err(e) if e.kind == ErrorKind::Declined => {
                ck.status = CkStatus::Aborted;
                self.st.ckpts.push(Arc::new(ck));
                self.trace(TStep::Abort(n));
                let _ = self.call(Call::Abort(n));
            }
            Err(_) => {}
        }
    }

    fn abort_in_progress(&mut self) {
        let Some(n) = self.st.in_progress.take() else {
            return;
        };
        self.ck_mut(n).status = CkStatus::Aborted;
        self.trace(TStep::Abort(n));
        let _ = self.call(Call::Abort(n));
        for s in 0..self.m.p() {
            if self.ck(n).writers[s].is_some() {
                let w = &mut self.st.writers[s];
                let r = w.writer.checkpoint_aborted(n);
                w.wstate = w.writer.state();
                if let Err(e) = r {
                    self.fatal(format!("writer {s}: checkpoint_aborted({n}): {e}"));
                }
                self.trace(TStep::WriterAbort(s as u32, n));
            }
        }
    }

    fn barrier(&mut self, s: usize) {
        let n = self.st.in_progress.expect("a pending checkpoint");
        let end = self.prof().ends[s];
        let w = &mut self.st.writers[s];
        let data = if w.ended_src {
            Vec::new()
        } else if w.pos < end {
            let d = segment(s as u32, w.pos);
            w.pos += 1;
            d
        } else {
            Vec::new() // the source is idle before its end of input
        };
        match w.writer.report(n, data.clone(), None, false) {
            Ok(e) => w.outbox.push_back(Msg::Event(Ent::of(&e))),
            Err(e) => {
                let m = format!("writer {s}: report({n}): {e}");
                self.fatal(m);
                return;
            }
        }
        w.wstate = w.writer.state();
        let snap = WSnap {
            bytes: w.wstate.clone(),
            pos: w.pos,
            ended_src: w.ended_src,
        };
        self.trace(TStep::Write(s as u32, n, data));
        self.trace(TStep::WriterSnapshot(s as u32, n));
        self.ck_mut(n).writers[s] = Some(snap);
        let ck = self.ck(n);
        let complete =
            (0..self.m.p()).all(|t| ck.finished_at_trigger[t] || ck.writers[t].is_some());
        if complete {
            let ck = self.ck_mut(n);
            ck.status = CkStatus::Completed;
            ck.notify = true;
            let ended: Vec<bool> = ck
                .writers
                .iter()
                .map(|w| w.as_ref().is_some_and(|w| w.ended_src))
                .collect();
            self.st.in_progress = None;
            for (t, e) in ended.into_iter().enumerate() {
                if e {
                    let w = &mut self.st.writers[t];
                    w.final_ck = w.final_ck.or(Some(n));
                }
            }
        }
    }

    fn end_input(&mut self, s: usize) {
        let data = if self.st.writers[s].ended_src {
            Vec::new() // the tail was consumed before the restored checkpoint
        } else {
            tail(self.prof(), s as u32)
        };
        let w = &mut self.st.writers[s];
        match w.writer.end_input(data.clone(), None) {
            Ok(e) => w.outbox.push_back(Msg::Event(Ent::of(&e))),
            Err(e) => {
                let m = format!("writer {s}: end_input: {e}");
                self.fatal(m);
                return;
            }
        }
        w.wstate = w.writer.state();
        w.ended = true;
        w.ended_src = true;
        self.trace(TStep::EndInput(s as u32, data));
    }

    fn deliver(&mut self, s: usize) {
        let w = &mut self.st.writers[s];
        let msg = w.outbox.pop_front().expect("deliverable");
        let attempt = w.attempt;
        let subtask = s as u32;
        self.trace(TStep::Send(subtask));
        let call = match msg {
            Msg::Event(entry) => Call::Event {
                subtask,
                attempt,
                entry,
            },
            Msg::Restored {
                checkpoint,
                entries,
            } => Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            },
        };
        let _ = self.call(call);
    }

    /// `checkpoint-complete(n)`: Flink notifies in order and may skip
    /// notifications, so the ones of earlier checkpoints still pending are
    /// skipped for good.
    fn complete(&mut self, n: u64) {
        for m in 1..=n {
            if self.ck(m).notify {
                self.ck_mut(m).notify = false;
            }
        }
        self.trace(TStep::Complete(n));
        let _ = self.call(Call::Complete(n));
    }

    fn forward(&mut self, s: usize) {
        let w = &mut self.st.writers[s];
        let Some(u) = w.note.take() else {
            return;
        };
        let r = w.writer.committed(u);
        w.wstate = w.writer.state();
        if let Err(e) = r {
            let m = format!("writer {s}: committed({u}): {e}");
            self.fatal(m);
            return;
        }
        w.seen_u = w.seen_u.max(Some(u));
        self.trace(TStep::WriterCommitted(s as u32, u));
    }

    /// The checkpoints a failover of the current timeline may restore: the
    /// current instance's restore point and the checkpoints completed since.
    fn region_point(&self, s: usize) -> Option<u64> {
        self.st
            .ckpts
            .iter()
            .filter(|c| {
                c.status == CkStatus::Completed
                    && (c.epoch == self.st.epoch || Some(c.id) == self.st.restore_base)
                    && c.writers[s].is_some()
            })
            .map(|c| c.id)
            .max()
    }

    fn region(&mut self, s: usize) {
        self.st.left.region -= 1;
        self.st.cov |= cov::REGION;
        // A task failure aborts the pending checkpoint.
        self.abort_in_progress();
        if self.st.fatal.is_some() {
            return;
        }
        let r = self.region_point(s);
        self.trace(TStep::Reset(s as u32, r));
        let _ = self.call(Call::Reset {
            subtask: s as u32,
            checkpoint: r,
        });
        if self.st.fatal.is_some() {
            return;
        }
        self.restore_writer(s, r);
    }

    /// A fresh writer `s`, restored from its state at `r` (or from scratch).
    fn restore_writer(&mut self, s: usize, r: Option<u64>) {
        let snap = r.map(|r| {
            self.ck(r).writers[s]
                .clone()
                .expect("a writer that had not finished took part in a completed checkpoint")
        });
        let w = &mut self.st.writers[s];
        w.attempt += 1;
        w.outbox.clear();
        w.writer = Writer::new(s as u32);
        w.ended = false;
        w.finished = false;
        w.final_ck = None;
        w.seen_u = None;
        let attempt = w.attempt;
        match (r, snap) {
            (Some(r), Some(snap)) => {
                match w.writer.restore(&snap.bytes, r) {
                    Ok(entries) => w.outbox.push_back(Msg::Restored {
                        checkpoint: r,
                        entries: entries.iter().map(Ent::of).collect(),
                    }),
                    Err(e) => {
                        let m = format!("writer {s}: restore from {r}: {e}");
                        self.fatal(m);
                        return;
                    }
                }
                w.pos = snap.pos;
                w.ended_src = snap.ended_src;
            }
            _ => {
                w.pos = 0;
                w.ended_src = false;
            }
        }
        w.wstate = w.writer.state();
        self.trace(TStep::WriterRestore(s as u32, r, attempt));
    }

    /// Discards the instance and creates a new one from `restore_base`/`named`, then `start`.
    fn new_instance(&mut self) {
        let env = match self.world.take() {
            Some(w) => w.env,
            None => (*self.st.env).clone(),
        };
        let restore = self.st.restore_base.map(|r| RestorePoint {
            checkpoint: r,
            state: self
                .ck(r)
                .coord
                .clone()
                .expect("a completed checkpoint has coordinator state"),
            finished_subtasks: self.st.named.clone(),
        });
        self.st.notified = None;
        let p = self.m.p();
        let mut restored = vec![false; p];
        for &s in &self.st.named {
            restored[s as usize] = true;
        }
        self.st.coord = Arc::new(CoordSum {
            life: Lifecycle::Created.name(),
            up_to: None,
            final_done: false,
            debug: String::new(),
            slots: vec![Vec::new(); p],
            restored,
        });
        self.world = Some(World {
            coord: Coordinator::new(self.m.config.clone(), restore),
            env,
        });
        self.trace(TStep::Failover(self.st.restore_base, self.st.named.clone()));
        let _ = self.call(Call::Start);
    }

    fn global(&mut self, r: Option<u64>) {
        self.st.left.global -= 1;
        self.st.epoch += 1;
        self.st.cov |= cov::GLOBAL;
        if let Some(n) = self.st.in_progress.take() {
            self.ck_mut(n).status = CkStatus::Aborted;
        }
        for c in &mut self.st.ckpts {
            if c.notify {
                Arc::make_mut(c).notify = false;
            }
        }
        self.st.retry = None;
        let named: Vec<u32> = match r {
            Some(r) => {
                let ck = self.ck(r);
                (0..self.m.p() as u32)
                    .filter(|&s| ck.finished_at_trigger[s as usize])
                    .collect()
            }
            None => Vec::new(),
        };
        if !named.is_empty() {
            self.st.cov |= cov::NAMED_FINISHED;
        }
        self.st.restore_base = r;
        self.st.named = named.clone();
        for (s, w) in self.st.writers.iter_mut().enumerate() {
            w.note = None;
            w.finished = named.contains(&(s as u32));
        }
        self.new_instance();
        if self.st.fatal.is_some() {
            return;
        }
        for s in 0..self.m.p() {
            if !named.contains(&(s as u32)) {
                self.restore_writer(s, r);
            }
        }
    }

    /// Delivers every deliverable event (restore events first while restoring).
    fn drain(&mut self) -> Result<(), String> {
        loop {
            let mut progressed = false;
            for s in 0..self.m.p() {
                while deliverable(&self.st, s) {
                    self.deliver(s);
                    self.settle()?;
                    progressed = true;
                }
            }
            if !progressed {
                return Ok(());
            }
        }
    }

    fn forward_all(&mut self) {
        for s in 0..self.m.p() {
            if !self.st.writers[s].finished {
                self.forward(s);
            }
        }
    }

    /// Drives the job to its end without new faults (the pending one may
    /// still fire; the host repeats failed calls), then checks exactly-once.
    fn quiesce(&mut self) -> Result<(), String> {
        self.settle()?;
        // The pending checkpoint: its remaining writers reach the barrier.
        if self.st.in_progress.is_some() {
            self.forward_all();
            for s in 0..self.m.p() {
                if owes_barrier(&self.st, s) {
                    self.barrier(s);
                }
            }
        }
        self.failed()?;
        self.drain()?;
        if self.st.coord.life != Lifecycle::Running.name() {
            return Err(format!(
                "the coordinator is {} after every event was delivered",
                self.st.coord.life
            ));
        }
        self.forward_all();
        self.failed()?;
        let rounds = self.prof().ends.iter().max().copied().unwrap_or(0) + 4;
        for _ in 0..rounds {
            for s in 0..self.m.p() {
                let w = &self.st.writers[s];
                if !w.finished && !w.ended_src && w.pos == self.prof().ends[s] {
                    self.end_input(s);
                }
            }
            self.failed()?;
            self.drain()?;
            // FLIP-147: a writer finishes as soon as it may; once they all
            // have, the job is over (no checkpoint follows).
            // The host tells the coordinator of the latest completed
            // checkpoint (a writer's final one) before the writers finish.
            let latest = self
                .st
                .ckpts
                .iter()
                .filter(|c| c.notify)
                .map(|c| c.id)
                .max();
            if let Some(n) = latest {
                self.complete(n);
                self.settle()?;
            }
            for s in 0..self.m.p() {
                if may_finish(&self.st, s) {
                    self.finish_writer(s);
                }
            }
            if self.st.writers.iter().all(|w| w.finished) {
                break;
            }
            self.trigger();
            self.failed()?;
            let Some(n) = self.st.in_progress else {
                return Err("the coordinator declined a checkpoint while running".into());
            };
            self.forward_all();
            for s in 0..self.m.p() {
                if owes_barrier(&self.st, s) {
                    self.barrier(s);
                }
            }
            self.failed()?;
            self.drain()?;
            self.complete(n);
            self.settle()?;
            self.forward_all();
            self.failed()?;
        }
        if !self.st.writers.iter().all(|w| w.finished) {
            return Err("the writers did not all finish".into());
        }
        let (life, fin, up_to) = {
            let w = self.world();
            (
                w.coord.state(),
                w.coord.final_committed(),
                w.coord.committed_up_to(),
            )
        };
        let mut problems = Vec::new();
        if life != Lifecycle::Running {
            problems.push(format!("the coordinator is {}", life.name()));
        }
        if !fin {
            problems.push("the final commit has not happened".to_string());
        }
        if up_to != Some(END) {
            problems.push(format!("committed-up-to is {up_to:?}, not END"));
        }
        let env = &self.world.as_ref().expect("built").env;
        let snaps = read_table(env);
        let user: Vec<&Snap> = snaps
            .iter()
            .filter(|s| s.commit_user == COMMIT_USER)
            .collect();
        if user.last().map(|s| s.identifier) != Some(END) {
            problems.push("the table's last snapshot of the commit user is not END".into());
        }
        let mut got: Vec<Vec<u8>> = user
            .iter()
            .flat_map(|s| s.committables.iter().map(|(_, c)| c.clone()))
            .collect();
        got.sort();
        let want = all_records(self.prof());
        let show = |v: &[Vec<u8>]| {
            v.iter()
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
                .join(",")
        };
        if got != want {
            let missing: Vec<Vec<u8>> = want.iter().filter(|c| !got.contains(c)).cloned().collect();
            let mut twice: Vec<Vec<u8>> = got
                .windows(2)
                .filter(|w| w[0] == w[1])
                .map(|w| w[0].clone())
                .collect();
            twice.dedup();
            problems.push(format!(
                "table committables [{}], want [{}] (missing [{}], twice [{}])",
                show(&got),
                show(&want),
                show(&missing),
                show(&twice)
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}
