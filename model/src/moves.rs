//! The host's moves (SEMANTICS v2.1 host contract, see `model`), one method
//! each, applied to a `Step`.

use std::sync::Arc;

use sink_coordinator::{table, Coordinator, ErrorKind, Lifecycle, RestorePoint, Writer, END};

use crate::env::ReadOnly;

use crate::model::*;
use crate::scope::*;
use crate::state::*;
use crate::step::*;
use crate::trace_steps::TStep;

impl Step<'_> {
    pub(crate) fn trigger(&mut self, kind: Kind) {
        let n = self.st.ckpts.len() as u64 + 1;
        self.trace(TStep::Checkpoint(n));
        let finished_at_trigger: Vec<bool> = self.st.writers.iter().map(|w| w.finished).collect();
        let clean: Vec<bool> = self
            .st
            .writers
            .iter()
            .map(|w| w.finished && w.outbox.is_empty())
            .collect();
        let p = self.m.p();
        let carry: Vec<Option<u64>> = (0..p)
            .map(|s| {
                if finished_at_trigger[s] && !clean[s] {
                    self.st.cov |= cov::FINISHED_IN_FLIGHT;
                    self.region_point(s)
                } else {
                    None
                }
            })
            .collect();
        let mut ck = Ck {
            id: n,
            epoch: self.st.epoch,
            coord: None,
            writers: vec![None; p],
            finished_at_trigger,
            clean,
            carry,
            savepoint: kind != Kind::Checkpoint,
            stop: kind == Kind::Stop,
            status: CkStatus::InProgress,
            notify: false,
        };
        match self.call(Call::Checkpoint(n)) {
            Ok(Res::Bytes(b)) => {
                ck.coord = Some(b);
                if kind != Kind::Checkpoint {
                    self.st.left.savepoints -= 1;
                }
                self.st.stopping |= kind == Kind::Stop;
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

    pub(crate) fn abort_in_progress(&mut self) {
        let Some(n) = self.st.in_progress.take() else {
            return;
        };
        self.ck_mut(n).status = CkStatus::Aborted;
        if self.ck(n).stop {
            self.st.stopping = false; // a failed stop-with-savepoint: the job goes on
        }
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

    pub(crate) fn barrier(&mut self, s: usize) {
        let n = self.st.in_progress.expect("a pending checkpoint");
        let sp = self.ck(n).savepoint;
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
        match w.writer.report(n, data.clone(), None, sp) {
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
        self.trace(TStep::Write(s as u32, n, data, sp));
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

    pub(crate) fn end_input(&mut self, s: usize) {
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

    pub(crate) fn deliver(&mut self, s: usize) {
        let w = &mut self.st.writers[s];
        let msg = w.outbox.pop_front().expect("deliverable");
        let attempt = w.attempt;
        let entries: &[Ent] = match &msg {
            Msg::Event(e) => std::slice::from_ref(e),
            Msg::Restored { entries, .. } => entries,
        };
        for e in entries.iter().filter(|e| e.savepoint) {
            self.st.flags |= bit(e.checkpoint);
        }
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
    pub(crate) fn complete(&mut self, n: u64) {
        for m in 1..=n {
            if self.ck(m).notify {
                self.ck_mut(m).notify = false;
            }
        }
        self.trace(TStep::Complete(n));
        let _ = self.call(Call::Complete(n));
    }

    pub(crate) fn forward(&mut self, s: usize) {
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
    pub(crate) fn region_point(&self, s: usize) -> Option<u64> {
        self.st
            .ckpts
            .iter()
            .filter(|c| {
                c.status == CkStatus::Completed
                    && (c.epoch == self.st.epoch || Some(c.id) == self.st.restore_base)
                    && (c.writers[s].is_some() || c.carry[s].is_some())
            })
            .map(|c| c.id)
            .max()
    }

    /// Writer `s`'s state for a restore from `r`: the one it took at `r`,
    /// or, if it had finished by then with events in flight (not named), the
    /// one of its last checkpoint.
    pub(crate) fn writer_state(&self, r: u64, s: usize) -> Option<WSnap> {
        let ck = self.ck(r);
        match (&ck.writers[s], ck.carry[s]) {
            (Some(w), _) => Some(w.clone()),
            (None, Some(c)) => self.ck(c).writers[s].clone(),
            (None, None) => None,
        }
    }

    /// A named finished subtask's replay after the failover (ignored by the core).
    pub(crate) fn ghost(&mut self, s: usize, reset: bool) {
        self.st.left.ghosts -= 1;
        self.st.cov |= cov::GHOST;
        let r = self
            .st
            .restore_base
            .expect("named subtasks come with a restore point");
        let subtask = s as u32;
        if reset {
            self.trace(TStep::Reset(subtask, Some(r)));
            let _ = self.call(Call::Reset {
                subtask,
                checkpoint: Some(r),
            });
        } else {
            let attempt = self.st.writers[s].attempt + 1;
            self.trace(TStep::Restored(subtask, attempt, r, Vec::new()));
            let _ = self.call(Call::Restored {
                subtask,
                attempt,
                checkpoint: r,
                entries: Vec::new(),
            });
        }
    }

    pub(crate) fn region(&mut self, s: usize) {
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
    pub(crate) fn restore_writer(&mut self, s: usize, r: Option<u64>) {
        let snap = r.map(|r| {
            self.writer_state(r, s)
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
    pub(crate) fn new_instance(&mut self) {
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

    pub(crate) fn global(&mut self, r: Option<u64>) {
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
        self.st.stopping = false;
        let named: Vec<u32> = match r {
            Some(r) => {
                let ck = self.ck(r);
                (0..self.m.p() as u32)
                    .filter(|&s| ck.clean[s as usize])
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
    pub(crate) fn drain(&mut self) -> Result<(), String> {
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

    pub(crate) fn forward_all(&mut self) {
        for s in 0..self.m.p() {
            if !self.st.writers[s].finished {
                self.forward(s);
            }
        }
    }

    /// Forwards every message in flight, then each writer that owes the
    /// pending checkpoint its barrier takes it.
    fn reach_barriers(&mut self) {
        self.forward_all();
        for s in 0..self.m.p() {
            if owes_barrier(&self.st, s) {
                self.barrier(s);
            }
        }
    }

    /// Drives the job to its end without new faults (the pending one may
    /// still fire; the host repeats failed calls), then checks exactly-once.
    pub(crate) fn quiesce(&mut self) -> Result<(), String> {
        self.settle()?;
        // The pending checkpoint: its remaining writers reach the barrier.
        if self.st.in_progress.is_some() {
            self.reach_barriers();
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
            self.trigger(Kind::Checkpoint);
            self.failed()?;
            let Some(n) = self.st.in_progress else {
                return Err("the coordinator declined a checkpoint while running".into());
            };
            self.reach_barriers();
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
        let mut tag_problems = Vec::new();
        self.check_tags(&user, &mut tag_problems);
        if !tag_problems.is_empty() {
            self.st.tags = Some(tag_problems.join("; "));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// No lost savepoint tag: every completed savepoint whose snapshot exists
    /// has its tag (for a drained stop-with-savepoint owed one, on the END
    /// snapshot); no aborted savepoint has one.
    fn check_tags(&mut self, user: &[&Snap], problems: &mut Vec<String>) {
        if self.m.scope.savepoints == 0 {
            return;
        }
        let env = &self.world.as_ref().expect("built").env;
        let tags = table::list_tags(&mut ReadOnly(env.map())).expect("the model's tags decode");
        let mut tagged = false;
        let mut drained = false;
        for ck in self.st.ckpts.iter().filter(|c| c.savepoint) {
            let name = format!("savepoint-{}", ck.id);
            let tag = tags.iter().find(|t| t.name == name).map(|t| t.identifier);
            let want = match ck.status {
                CkStatus::Aborted => {
                    if let Some(i) = tag {
                        problems.push(format!(
                            "tag {name} (identifier {i}) of an aborted savepoint"
                        ));
                    }
                    continue;
                }
                CkStatus::InProgress => continue,
                CkStatus::Completed if user.iter().any(|s| s.identifier == ck.id) => ck.id,
                CkStatus::Completed
                    if self.st.drained_owed & !self.st.excused & bit(ck.id) != 0 =>
                {
                    END
                }
                CkStatus::Completed => continue,
            };
            let show = |i: u64| {
                if i == END {
                    "END".to_string()
                } else {
                    i.to_string()
                }
            };
            match tag {
                Some(i) if i == want => {
                    tagged = true;
                    drained |= i == END;
                }
                Some(i) => problems.push(format!(
                    "tag {name} points at identifier {}, want {}",
                    show(i),
                    show(want)
                )),
                None => problems.push(format!(
                    "lost savepoint tag: {name} missing (its snapshot, identifier {}, exists)",
                    show(want)
                )),
            }
        }
        if tagged {
            self.st.cov |= cov::SAVEPOINT_TAG;
        }
        if drained {
            self.st.cov |= cov::DRAINED_TAG;
        }
    }
}

/// The bit of checkpoint `c` in a mask (ids above 63 are not tracked).
pub(crate) fn bit(c: u64) -> u64 {
    if c < 64 {
        1 << c
    } else {
        0
    }
}
