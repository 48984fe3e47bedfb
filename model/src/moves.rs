//! The host's moves (SEMANTICS v2 host contract, see `model`), one method
//! each, applied to a `Step`.

use std::sync::Arc;

use sink_coordinator::{Coordinator, ErrorKind, Lifecycle, RestorePoint, Writer, END};

use crate::model::*;
use crate::scope::*;
use crate::state::*;
use crate::step::*;
use crate::trace_steps::TStep;

impl Step<'_> {
    pub(crate) fn trigger(&mut self) {
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

    pub(crate) fn abort_in_progress(&mut self) {
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

    pub(crate) fn barrier(&mut self, s: usize) {
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
                    && c.writers[s].is_some()
            })
            .map(|c| c.id)
            .max()
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

    /// Drives the job to its end without new faults (the pending one may
    /// still fire; the host repeats failed calls), then checks exactly-once.
    pub(crate) fn quiesce(&mut self) -> Result<(), String> {
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
