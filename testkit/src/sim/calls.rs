//! Coordinator calls: recording, the component's native twin, mid-call
//! crashes and traps, and what the host does after an error (repeat the
//! call, fail over, or move on), then the checks every outcome passes.

use sink_coordinator::{Call, Entry, ErrorKind, FinalCommitMode, Lifecycle, Outcome, Reply};

use crate::driver::CoordinatorApi;
use crate::faults::{Fault, FaultMode};
use crate::trace::Op;
use sink_coordinator_host::error::{HostErrorKind, HostResult};

use super::job::{Job, Msg, Payload, Res, SpFate, Target, WStatus};
use super::ledger::Mirror;
use super::world::World;

/// What the coordinator does with a call's input, as the mirror keeps it.
pub(crate) fn apply_to_mirror(m: &mut Mirror, call: &Call) {
    match call {
        Call::Event { subtask, entry, .. } => m.event(*subtask, entry),
        Call::Restored {
            subtask,
            checkpoint,
            entries,
            ..
        } => m.restored(*subtask, *checkpoint, entries),
        Call::SubtaskReset {
            subtask,
            checkpoint,
        } => m.reset(*subtask, *checkpoint),
        Call::CheckpointComplete(n) => m.complete(*n),
        Call::CheckpointAborted(n) => m.abort(*n),
        // `events` is a batch of `event`s; the simulator sends them one by one.
        Call::Events(events) => {
            for e in events {
                m.event(e.subtask, &e.entry);
            }
        }
        // `start`, `checkpoint`, `close`: no input the mirror keeps. One
        // catch-all, so that a call added to the WIT and the core needs no
        // arm here; a call the simulator starts making that delivers input
        // gets its arm then (the mirror checks would tell).
        _ => {}
    }
}

/// A call built from what a writer's outbox delivers.
pub(crate) fn from_msg(s: u32, msg: Msg) -> Call {
    match msg.payload {
        Payload::Event(entry) => Call::Event {
            subtask: s,
            attempt: msg.attempt,
            entry,
        },
        Payload::Restored {
            checkpoint,
            entries,
        } => Call::Restored {
            subtask: s,
            attempt: msg.attempt,
            checkpoint,
            entries,
        },
    }
}

pub(crate) enum Answer {
    Outcome,
    Bytes(Vec<u8>),
    Declined,
    /// The call failed and the host failed over (trap, crash, or an
    /// escalated storage error): the caller's context is gone.
    FailedOver,
    /// The call failed on storage and the host moved on without repeating
    /// it (a later call retries what failed).
    Dropped,
    /// The stale instance failed and is gone.
    Gone,
}

type Result2 = (HostResult<Option<Outcome>>, Option<Vec<u8>>);

fn invoke(api: &mut dyn CoordinatorApi, call: &Call) -> Result2 {
    match api.apply(call.clone()) {
        Ok(Reply::Outcome(o)) => (Ok(Some(o)), None),
        Ok(Reply::State(b)) => (Ok(None), Some(b)),
        Err(e) => (Err(e.error().clone()), None),
    }
}

fn is_storage(kind: HostErrorKind) -> bool {
    kind == HostErrorKind::Core(ErrorKind::Storage)
}

/// Same result class and outcome (the twin against the component).
fn same(a: &Result2, b: &Result2) -> bool {
    match (&a.0, &b.0) {
        (Ok(x), Ok(y)) => x == y && a.1 == b.1,
        (Err(x), Err(y)) => x.kind == y.kind,
        _ => false,
    }
}

fn describe(r: &Result2) -> String {
    match &r.0 {
        Ok(Some(o)) => format!("{o:?}"),
        Ok(None) => format!("{} state bytes", r.1.as_ref().map_or(0, Vec::len)),
        Err(e) => format!("error {e}"),
    }
}

impl Job {
    pub fn call(&mut self, w: &mut World<'_>, call: Call) -> Res<Answer> {
        self.call_on(w, Target::Main, call)
    }

    /// Makes one coordinator call, checks the table afterwards, and handles
    /// errors as the host would.
    pub fn call_on(&mut self, w: &mut World<'_>, t: Target, call: Call) -> Res<Answer> {
        let mut repeats = 0;
        let mut applied = false;
        let entries: Vec<Entry> = call.entries().cloned().collect();
        self.ledger.mark_reported(&entries);
        loop {
            let armable = t == Target::Main
                && self.faults_on()
                && !matches!(call, Call::Close | Call::Checkpoint(_));
            let crash = if armable { self.crash_armed } else { None };
            // A call costs ~2^12 (an event) to ~2^17 (a commit) units of fuel;
            // a commit's writes start around 2^14 (measured): the budget runs
            // out anywhere from the first instruction to the middle of a
            // multi-snapshot commit (most often there), or not at all.
            let commits = matches!(call, Call::CheckpointComplete(_) | Call::Restored { .. })
                || call.delivers_end();
            // A trap may preempt any storage call: only while no fault is
            // queued can a recorded `storage_fault` stand for it exactly.
            let trappable = armable && self.trap_armed && w.tables.no_faults_queued();
            let fuel = (trappable && commits).then(|| {
                if w.rng.chance(600) {
                    w.rng.range(12_000, 24_000)
                } else {
                    let e = w.rng.range(12, 17);
                    (1u64 << e) + w.rng.below(1u64 << e)
                }
            });
            if trappable && fuel.is_none() {
                self.trap_calls_left = self.trap_calls_left.saturating_sub(1);
                if self.trap_calls_left == 0 {
                    self.trap_armed = false;
                }
            }
            let Some(inst) = self.inst_mut(t) else {
                return Err(w.fail("simulator bug: no coordinator"));
            };
            // Every call the simulator makes here is a trace step (`start` and
            // batches take other paths); one TRACE-FORMAT cannot express
            // would leave the recorded trace short of it.
            match Op::of_call(&call) {
                Some(op) => w.rec.push(&inst.name, op),
                None => {
                    return Err(w.fail(format!(
                        "simulator bug: `{}` has no TRACE-FORMAT step to record",
                        call.name()
                    )))
                }
            }
            w.tables.real.probe.lock().begin(crash, None);
            let fueled = fuel.is_some_and(|f| inst.coord.set_fuel(f));
            let result = invoke(inst.coord.api(), &call);
            if fueled {
                inst.coord.restore_fuel();
            }
            let probe = w.tables.real.probe.lock().clone();
            let trapped = matches!(&result.0, Err(e) if e.kind == HostErrorKind::Trap);
            // SEMANTICS 8: after an import returned an error nothing else
            // happens, and the call returns `storage`.
            if probe.calls_after_error > 0 {
                return Err(w.fail(format!(
                    "job {}: {} went on with {} storage call(s) after an import returned an error (SEMANTICS 8: nothing after it happened)",
                    self.label,
                    call.name(),
                    probe.calls_after_error
                )));
            }
            if probe.errors > 0 && !trapped && !matches!(&result.0, Err(e) if is_storage(e.kind)) {
                return Err(w.fail(format!(
                    "job {}: {} returned {} although an import returned an error (SEMANTICS 8: storage)",
                    self.label,
                    call.name(),
                    describe(&result)
                )));
            }
            let mut preempted = probe.crashed;
            if let (Some(twin), Some(tables)) = (inst.coord.twin(), w.tables.twin.as_ref()) {
                let tprobe = tables.probe.clone();
                tprobe.lock().begin(crash, trapped.then_some(probe.calls));
                let theirs = invoke(twin, &call);
                let tp = tprobe.lock().clone();
                if tp.log != probe.log {
                    return Err(w.fail(format!(
                        "{}: the component made other storage calls than the native core: {:?} vs {:?}",
                        call.name(),
                        probe.log,
                        tp.log
                    )));
                }
                if trapped {
                    preempted = tp.crashed;
                } else if !same(&result, &theirs) {
                    return Err(w.fail(format!(
                        "{}: the component returned {}, the native core {}",
                        call.name(),
                        describe(&result),
                        describe(&theirs)
                    )));
                }
            }
            if fuel.is_some() {
                self.trap_armed = false;
            }
            if trapped || probe.crashed.is_some() {
                if trapped && fuel.is_none() {
                    return Err(w.fail(format!(
                        "unexpected trap: {}",
                        result.0.err().map(|e| e.to_string()).unwrap_or_default()
                    )));
                }
                // The instance is gone at that point: the recorded trace
                // fails the storage call the crash preempted.
                if let Some((kind, skip)) = preempted {
                    w.rec.insert_before_last(Op::StorageFault {
                        call: kind,
                        fault: Fault {
                            skip,
                            count: 1,
                            mode: FaultMode::Fail,
                        },
                    });
                }
                if trapped {
                    w.stats.traps += 1;
                    if probe.writes > 0 {
                        w.stats.traps_after_write += 1;
                    }
                } else {
                    self.crash_armed = None;
                    w.stats.crashes += 1;
                    if probe.writes > 0 {
                        w.stats.crashes_after_write += 1;
                    }
                }
                if !applied {
                    self.apply_input(t, &call);
                }
                if let Call::CheckpointAborted(n) = call {
                    // The new instance gets the abort (constraint 7).
                    self.late_aborts.push_back(n);
                }
                self.observe(w, t)?;
                w.compare_twin()?;
                self.global_failover(w, "the coordinator process died", false)?;
                return Ok(Answer::FailedOver);
            }
            if probe.writes > 0 {
                w.compare_twin()?;
                if crash.is_some() {
                    // An arm that does not fire within a few writing calls expires.
                    self.crash_calls_left = self.crash_calls_left.saturating_sub(1);
                    if self.crash_calls_left == 0 {
                        self.crash_armed = None;
                    }
                }
            }
            w.rec.saw(Some(match &result.0 {
                Ok(_) => "",
                Err(e) => e.kind.name(),
            }));
            let (result, bytes) = result;
            match result {
                Err(e) if is_storage(e.kind) => {
                    w.stats.storage_errors += 1;
                    if !applied {
                        self.apply_input(t, &call);
                        applied = true;
                    }
                    if probe.writes > 0 {
                        self.observe(w, t)?;
                    }
                    if t == Target::Zombie {
                        return Ok(Answer::Dropped);
                    }
                    if let Some(a) = self.after_storage_error(w, &call)? {
                        return Ok(a);
                    }
                    repeats += 1;
                    if repeats > 100 {
                        return Err(w.fail(format!("storage errors do not stop: {e}")));
                    }
                }
                Err(e) if e.kind == HostErrorKind::Core(ErrorKind::Declined) => {
                    let restoring = self.inst_mut(t).is_some_and(|i| i.mirror.is_restoring());
                    if !matches!(call, Call::Checkpoint(_)) || !restoring {
                        return Err(w.fail(format!("unexpected decline: {e}")));
                    }
                    return Ok(Answer::Declined);
                }
                Err(e) if t == Target::Zombie => {
                    // A stale instance may be refused (its view of the table
                    // is old): the host discards it.
                    let _ = e;
                    w.stats.zombie_failed += 1;
                    self.zombie = None;
                    return Ok(Answer::Gone);
                }
                Err(e) => {
                    return Err(w.fail(format!(
                        "job {}: coordinator call {} failed: {e}",
                        self.label,
                        call.name()
                    )));
                }
                Ok(outcome) => {
                    if !applied {
                        self.apply_input(t, &call);
                    }
                    // Only writes change the table (every call is observed
                    // right after it, so nothing else can have appeared).
                    if probe.writes > 0 {
                        self.observe(w, t)?;
                    }
                    if let Some(b) = bytes {
                        self.check_state_bytes(w, &b)?;
                        return Ok(Answer::Bytes(b));
                    }
                    let outcome = outcome.ok_or_else(|| w.fail("simulator bug: no outcome"))?;
                    self.after_ok(w, t, &call, &outcome)?;
                    if outcome.restart_required && t == Target::Main {
                        w.stats.restarts_required += 1;
                        self.global_failover(w, "restart required by the recovery", false)?;
                        return Ok(Answer::FailedOver);
                    }
                    return Ok(Answer::Outcome);
                }
            }
        }
    }

    /// After a storage error of the current instance: fail over, move on,
    /// or (`None`) repeat the call.
    fn after_storage_error(&mut self, w: &mut World<'_>, call: &Call) -> Res<Option<Answer>> {
        let escalatable = self.faults_on() && !matches!(call, Call::Close);
        if escalatable && w.rng.chance(self.rates.escalate) {
            w.stats.escalations += 1;
            if let Call::CheckpointAborted(n) = call {
                // The new instance gets the abort (constraint 7).
                self.late_aborts.push_back(*n);
            }
            self.global_failover(w, "storage error", true)?;
            return Ok(Some(Answer::FailedOver));
        }
        let droppable = self.faults_on()
            && self.streaming()
            && matches!(
                call,
                Call::Event { .. } | Call::CheckpointComplete(_) | Call::SubtaskReset { .. }
            )
            && !self.restoring()
            && self.writers.iter().any(|x| x.status == WStatus::Running);
        if droppable && w.rng.chance(self.rates.drop) {
            w.stats.dropped_errors += 1;
            return Ok(Some(Answer::Dropped));
        }
        Ok(None)
    }

    /// `start` on the current instance (and its twin).
    pub fn start_call(&mut self, w: &mut World<'_>) -> Res<HostResult<Outcome>> {
        let Some(inst) = self.inst.as_mut() else {
            return Err(w.fail("simulator bug: no coordinator"));
        };
        w.tables.real.probe.lock().begin(None, None);
        let result = inst.coord.api().start();
        if let (Some(twin), Some(tables)) = (inst.coord.twin(), w.tables.twin.as_ref()) {
            tables.probe.lock().begin(None, None);
            let theirs = twin.start();
            if !same(
                &(result.clone().map(Some), None),
                &(theirs.clone().map(Some), None),
            ) {
                return Err(w.fail(format!(
                    "start: the component returned {result:?}, the native core {theirs:?}"
                )));
            }
        }
        w.rec.saw(Some(match &result {
            Ok(_) => "",
            Err(e) => e.kind.name(),
        }));
        let probe = w.tables.real.probe.lock().clone();
        if probe.calls_after_error > 0 || (probe.errors > 0 && result.is_ok()) {
            return Err(w.fail(format!(
                "job {}: start went on after an import returned an error, or succeeded (SEMANTICS 8): {result:?}",
                self.label
            )));
        }
        if w.tables.real.probe.lock().writes > 0 {
            w.compare_twin()?;
        }
        Ok(result)
    }

    /// The coordinator accepted the call's input (it returned, or failed on storage).
    fn apply_input(&mut self, t: Target, call: &Call) {
        if let Call::CheckpointAborted(n) = call {
            if self.savepoints.contains_key(n) {
                self.savepoints.insert(*n, SpFate::Aborted);
            }
            // Once each: an abort delivered again after a global failover
            // is not appended again (the list grew exponentially when an
            // instance failed over again and again from one checkpoint).
            if t == Target::Main && !self.aborts_delivered.contains(n) {
                self.aborts_delivered.push(*n);
            }
        }
        if let Some(inst) = self.inst_mut(t) {
            apply_to_mirror(&mut inst.mirror, call);
        }
    }

    fn after_ok(
        &mut self,
        w: &mut World<'_>,
        t: Target,
        call: &Call,
        outcome: &Outcome,
    ) -> Res<()> {
        if let Call::CheckpointAborted(n) = call {
            if let Some(inst) = self.inst_mut(t) {
                inst.aborts_ok.insert(*n);
            }
            self.check_tags(w)?;
        }
        if matches!(call, Call::Close) {
            if outcome.state != Lifecycle::Closed {
                return Err(w.fail(format!(
                    "close left the coordinator {}",
                    outcome.state.name()
                )));
            }
            return Ok(());
        }
        let on_checkpoint =
            self.cfg.checkpointing && self.cfg.final_commit == FinalCommitMode::OnCheckpoint;
        let Some(inst) = self.inst_mut(t) else {
            return Ok(());
        };
        // A finished subtask's restore event or reset changes nothing (6.2).
        let ignored = match call {
            Call::Restored { subtask, .. } | Call::SubtaskReset { subtask, .. } => {
                inst.mirror.finished.contains(subtask)
            }
            _ => false,
        };
        if inst.mirror.is_restoring() {
            if inst.mirror.all_restored() && outcome.state == Lifecycle::Running && !ignored {
                let before = inst.mirror.clone();
                inst.mirror.finish_recovery();
                self.after_recovery(w, t, &before)?;
            }
        } else {
            // SEMANTICS 5.3: on-checkpoint, any run of the commit rule once
            // every END entry is captured by a completed checkpoint (`taken
            // <= completed`); else the last END entry, or a completion.
            let due = if on_checkpoint {
                !ignored
                    && !matches!(
                        call,
                        Call::CheckpointAborted(_) | Call::Checkpoint(_) | Call::Close
                    )
                    && inst.mirror.final_due()
            } else {
                matches!(call, Call::CheckpointComplete(_)) || call.delivers_end()
            };
            self.after_final_point(w, t, due)?;
        }
        self.after_outcome(w, t, outcome)?;
        if t == Target::Main {
            self.check_state(w, outcome.state, call.name())?;
        }
        Ok(())
    }

    /// Committed-up-to of an outcome: checked, and forwarded to the writers
    /// if it comes from the current instance.
    pub fn after_outcome(&mut self, w: &mut World<'_>, t: Target, outcome: &Outcome) -> Res<()> {
        let before = self.inst_mut(t).and_then(|i| i.mirror.up_to);
        let u = outcome.committed_up_to;
        self.check_up_to(w, t, u)?;
        // The host forwards each new value (and, on its own schedule, the
        // answer of a query: `query_up_to`).
        if let (Target::Main, Some(u)) = (t, u) {
            if Some(u) != before {
                self.forward_up_to(w, u);
            }
        }
        Ok(())
    }

    /// The host asks the current instance for its committed-up-to.
    pub fn query_up_to(&mut self, w: &mut World<'_>) -> Res<()> {
        let Some(inst) = self.inst.as_mut() else {
            return Ok(());
        };
        let u = inst.coord.api().committed_up_to();
        if let Some(twin) = inst.coord.twin() {
            let theirs = twin.committed_up_to();
            if theirs != u {
                return Err(w.fail(format!(
                    "committed-up-to: the component says {u:?}, the native core {theirs:?}"
                )));
            }
        }
        w.stats.queries += 1;
        self.check_up_to(w, Target::Main, u)?;
        if let Some(u) = u {
            self.forward_up_to(w, u);
        }
        Ok(())
    }

    /// The recovery of the instance (`before`: its mirror while restoring)
    /// completed: with target END and the END snapshot already in the table,
    /// it decides the drained tags from its own `taken` values too (the
    /// core's reading, tests/regressions/README.md).
    pub fn after_recovery(&mut self, w: &mut World<'_>, t: Target, before: &Mirror) -> Res<()> {
        if t == Target::Main && before.all_ended() && self.end_snapshots > 0 {
            self.note_end_tag_window(before);
        }
        self.after_final_point(w, t, true)
    }

    /// After a successful call that runs a final commit if every slot holds
    /// an END entry (`due`): the END snapshot must be there (SEMANTICS 5.3:
    /// always written).
    pub fn after_final_point(&mut self, w: &mut World<'_>, t: Target, due: bool) -> Res<()> {
        let end_snapshots = self.end_snapshots;
        let Some(inst) = self.inst_mut(t) else {
            return Ok(());
        };
        let m = &mut inst.mirror;
        if !due || m.final_done || !m.all_ended() {
            return Ok(());
        }
        m.final_done = true;
        if t == Target::Main {
            self.final_done_job = true;
        }
        if end_snapshots != 1 {
            return Err(w.fail(format!(
                "job {}: the final commit happened, the table has {end_snapshots} END snapshots",
                self.label
            )));
        }
        Ok(())
    }

    pub fn check_state(&mut self, w: &World<'_>, state: Lifecycle, what: &str) -> Res<()> {
        let expected = if self.restoring() {
            Lifecycle::Restoring
        } else {
            Lifecycle::Running
        };
        if state != expected && state != Lifecycle::Closed {
            return Err(w.fail(format!(
                "job {}: after {what} the coordinator is {}, expected {}",
                self.label,
                state.name(),
                expected.name()
            )));
        }
        Ok(())
    }
}
