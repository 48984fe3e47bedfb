//! The engine side of the job: checkpoints and savepoints (trigger, writer
//! snapshots, completion, abort), stop-with-savepoint, region and global
//! failovers, and the stale instance a global failover may leave running.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use sink_coordinator::{Lifecycle, RestorePoint};

use super::calls::Answer;
use super::job::{
    Completed, Inst, Job, Kind, Pending, Phase, Res, SpFate, Target, WStatus, Zombie,
};
use super::ledger::{Mirror, PSlot};
use super::world::World;
use sink_coordinator::Call;

impl Job {
    pub fn trigger(&mut self, w: &mut World<'_>) -> Res<()> {
        let n = self.next_cp;
        self.next_cp += 1;
        if self.phase == Phase::Main {
            self.triggered += 1;
        }
        let kind = if w.rng.chance(120) {
            Kind::AsyncSavepoint
        } else {
            Kind::Checkpoint
        };
        let aborts_seen = self.aborts_delivered.len();
        // Decided before the coordinator's state is taken (SEMANTICS 6.2):
        // finished, and every event it sent has reached the coordinator.
        let p = self.p();
        let finished_before = self.finished_and_drained();
        let coord_state = match self.call(w, Call::Checkpoint(n))? {
            Answer::Bytes(b) => b,
            Answer::Declined => {
                if self.phase == Phase::Main {
                    self.triggered -= 1;
                }
                w.stats.declined += 1;
                w.stats.aborted += 1;
                self.call(w, Call::CheckpointAborted(n))?;
                return Ok(());
            }
            _ => return Ok(()),
        };
        if kind == Kind::AsyncSavepoint {
            self.savepoints.insert(n, SpFate::Taken);
            w.stats.savepoints += 1;
        }
        let participants = (0..p).filter(|s| self.alive(*s)).collect();
        self.pending = Some(Pending {
            id: n,
            kind,
            coord_state,
            taken_by: self.name.clone(),
            participants,
            snaps: BTreeMap::new(),
            finished_before,
            aborts_seen,
        });
        Ok(())
    }

    pub fn abort_pending(&mut self, w: &mut World<'_>) -> Res<()> {
        let Some(pd) = self.pending.take() else {
            return Ok(());
        };
        w.stats.aborted += 1;
        for &s in &pd.participants {
            if let Some(h) = self.writers[s as usize].helper.as_mut() {
                let r = h.checkpoint_aborted(pd.id);
                w.host("writer checkpoint-aborted", r)?;
            }
        }
        if w.rng.chance(300) {
            // The coordinator's callback comes later (a host may queue it);
            // the writers have cleared their savepoint flags already.
            if self.savepoints.contains_key(&pd.id) {
                self.savepoints.insert(pd.id, SpFate::Aborted);
            }
            self.late_aborts.push_back(pd.id);
            return Ok(());
        }
        self.call(w, Call::CheckpointAborted(pd.id))?;
        Ok(())
    }

    pub fn deliver_late_abort(&mut self, w: &mut World<'_>) -> Res<()> {
        if let Some(n) = self.late_aborts.pop_front() {
            w.stats.late_aborts += 1;
            self.call(w, Call::CheckpointAborted(n))?;
        }
        Ok(())
    }

    /// The pending checkpoint completes: writers whose final checkpoint it
    /// is finish, and the coordinator is notified (or not). Events still in
    /// flight stay there: they may arrive after this completion (SEMANTICS
    /// 1, 10 item 1), also after the job's last one.
    pub fn complete_pending(&mut self, w: &mut World<'_>) -> Res<()> {
        let Some(pd) = self.pending.take() else {
            return Ok(());
        };
        if pd.kind == Kind::AsyncSavepoint {
            // Savepoints are not committed by the engine: no notification,
            // and no restore point for failovers.
            return Ok(());
        }
        let epoch = self.epoch;
        let id = pd.id;
        let p = self.p();
        let finishing: Vec<u32> = pd
            .participants
            .iter()
            .copied()
            .filter(|s| {
                let wr = &self.writers[*s as usize];
                wr.status == WStatus::Ended && wr.final_cp.is_some_and(|f| f <= id)
            })
            .collect();
        // The job's last checkpoint: at or after every writer's final
        // checkpoint (every writer finishes with it, or has finished).
        let last = (0..p).all(|s| !self.alive(s) || finishing.contains(&s));
        self.last_completed = Some(Completed {
            id,
            coord_state: pd.coord_state,
            taken_by: pd.taken_by,
            writers: pd.snaps.clone(),
            finished_before: pd.finished_before,
            aborts_seen: pd.aborts_seen,
        });
        self.completed_max = self.completed_max.max(Some(id));
        w.stats.completed += 1;
        let writers_first = w.rng.chance(500);
        if writers_first {
            self.finish_writers(w, &finishing, &pd.snaps, last);
        }
        // Flink may skip a notification (a later completion covers it); the
        // last one only if a later one, or a global failover from one,
        // follows (SEMANTICS 4).
        let skip_last = match self.profile {
            super::Profile::Default => 150,
            _ => 300,
        };
        let skip = w.rng.chance(if last { skip_last } else { 80 });
        if skip {
            w.stats.skipped_rounds += 1;
            if last {
                w.stats.last_skipped += 1;
                self.owed_last = true;
            }
        } else {
            if last {
                self.owed_last = false;
            }
            let answer = self.call(w, Call::CheckpointComplete(id))?;
            if matches!(answer, Answer::FailedOver) || self.epoch != epoch {
                return Ok(());
            }
        }
        if !writers_first {
            self.finish_writers(w, &finishing, &pd.snaps, last);
        }
        if skip && last && w.rng.chance(400) {
            // The host fails over instead of delivering it: a new instance
            // from this checkpoint makes the final commit (SEMANTICS 4, 6.2).
            w.stats.last_failovers += 1;
            self.global_failover(w, "the host failed over before the last completion", true)?;
        }
        Ok(())
    }

    /// The writers finished, every event they sent reached the coordinator
    /// (what a checkpoint's state names finished, SEMANTICS 6.2).
    fn finished_and_drained(&self) -> BTreeSet<u32> {
        (0..self.p())
            .filter(|s| {
                let wr = &self.writers[*s as usize];
                wr.status == WStatus::Finished && wr.outbox.is_empty()
            })
            .collect()
    }

    fn finish_writers(
        &mut self,
        w: &mut World<'_>,
        finishing: &[u32],
        snaps: &BTreeMap<u32, super::job::WSnap>,
        last: bool,
    ) {
        for &s in finishing {
            if self.writers[s as usize].status != WStatus::Ended {
                continue;
            }
            // The task's notification may be lost: it finishes at a later one.
            if !last && w.rng.chance(100) {
                continue;
            }
            self.finish(w, s, snaps.get(&s).cloned());
        }
    }

    pub fn stop_with_savepoint(&mut self, w: &mut World<'_>) -> Res<()> {
        while !self.late_aborts.is_empty() {
            self.deliver_late_abort(w)?;
        }
        let n = self.next_cp;
        self.next_cp += 1;
        let p = self.p();
        let aborts_seen = self.aborts_delivered.len();
        let finished_before = self.finished_and_drained();
        let coord_state = match self.call(w, Call::Checkpoint(n))? {
            Answer::Bytes(b) => b,
            _ => return Err(w.fail("the stop-with-savepoint checkpoint was not taken")),
        };
        self.savepoints.insert(n, SpFate::Taken);
        w.stats.savepoints += 1;
        let participants: BTreeSet<u32> = (0..p).filter(|s| self.alive(*s)).collect();
        self.pending = Some(Pending {
            id: n,
            // A synchronous savepoint is a savepoint: flagged for the tag.
            kind: Kind::AsyncSavepoint,
            coord_state,
            taken_by: self.name.clone(),
            participants: participants.clone(),
            snaps: BTreeMap::new(),
            finished_before,
            aborts_seen,
        });
        for &s in &participants {
            self.snapshot(w, s)?;
        }
        for s in 0..p {
            if !self.flush_writer(w, s, |_| true)? {
                return Err(w.fail("failed over during stop-with-savepoint"));
            }
        }
        let pd = self
            .pending
            .take()
            .ok_or_else(|| w.fail("simulator bug: no pending savepoint"))?;
        self.last_completed = Some(Completed {
            id: n,
            coord_state: pd.coord_state,
            taken_by: pd.taken_by,
            writers: pd.snaps,
            finished_before: pd.finished_before,
            aborts_seen: pd.aborts_seen,
        });
        self.completed_max = self.completed_max.max(Some(n));
        w.stats.completed += 1;
        // A synchronous savepoint's completion is always delivered; it is
        // at or after every writer's final checkpoint.
        self.owed_last = false;
        let final_before = self.final_done_job;
        if matches!(
            self.call(w, Call::CheckpointComplete(n))?,
            Answer::FailedOver
        ) {
            return Err(w.fail("failed over during stop-with-savepoint"));
        }
        // Drained, it must be tagged on the END snapshot if its completion
        // made the final commit and some writer reported it (flagged).
        let flagged = !participants.is_empty();
        self.stop_savepoint = Some((n, flagged && !final_before && self.final_done_job));
        self.close(w)
    }

    pub fn close(&mut self, w: &mut World<'_>) -> Res<()> {
        // A stale instance still running is gone with its process.
        self.zombie = None;
        self.call(w, Call::Close)?;
        self.phase = Phase::Done;
        Ok(())
    }

    // ------------------------------------------------------------------
    // Failovers
    // ------------------------------------------------------------------

    pub fn region_failover(&mut self, w: &mut World<'_>, s: u32) -> Res<()> {
        if !self.alive(s) {
            return Ok(());
        }
        w.stats.region_failovers += 1;
        let epoch = self.epoch;
        if self.pending.is_some() {
            self.abort_pending(w)?;
            if self.epoch != epoch {
                return Ok(());
            }
        }
        let r = self.last_completed.clone();
        let answer = self.call(
            w,
            Call::SubtaskReset {
                subtask: s,
                checkpoint: r.as_ref().map(|c| c.id),
            },
        )?;
        if matches!(answer, Answer::FailedOver) || self.epoch != epoch {
            return Ok(());
        }
        let snap = r.as_ref().and_then(|c| c.writers.get(&s).cloned());
        if r.is_some() && snap.is_none() {
            return Err(w.fail(format!(
                "job {}: writer {s} has no state in checkpoint {}",
                self.label,
                r.map_or(0, |c| c.id)
            )));
        }
        self.restart_writer(w, s, snap, r.map(|c| c.id))
    }

    /// A global failover: a new instance from the last completed checkpoint,
    /// every writer not named finished restored. The old instance may keep
    /// running for a while (`may_leave_stale`: it did not trap or crash).
    pub fn global_failover(
        &mut self,
        w: &mut World<'_>,
        why: &str,
        may_leave_stale: bool,
    ) -> Res<()> {
        let _ = why;
        w.stats.global_failovers += 1;
        self.epoch += 1;
        // The new instance restores from the latest completed checkpoint: at
        // or after every final checkpoint if the last completion was owed.
        self.owed_last = false;
        if let Some(pd) = self.pending.take() {
            w.stats.aborted += 1;
            if pd.kind == Kind::AsyncSavepoint {
                self.savepoints.insert(pd.id, SpFate::Abandoned);
            }
        }
        let old = self.inst.take();
        let r = self.last_completed.clone();
        let stale = may_leave_stale
            && self.zombie.is_none()
            && self.rates.zombie > 0
            && w.rng.chance(self.rates.zombie)
            && old.as_ref().is_some_and(|i| !i.mirror.is_restoring());
        if stale {
            if let Some(mut inst) = old {
                if inst.coord.state() == Lifecycle::Running {
                    let life = w.rng.range(2, 25) as u32;
                    self.zombie = Some(Zombie {
                        inst,
                        queues: self.zombie_queues(w),
                        aborts: self.late_aborts.clone(),
                        completes: VecDeque::new(),
                        life,
                    });
                    if let (Some(z), Some(c)) = (self.zombie.as_mut(), r.as_ref()) {
                        if w.rng.chance(500) {
                            z.completes.push_back(c.id);
                        }
                    }
                    w.stats.zombies += 1;
                }
            }
        }
        // Aborts the restored state does not know of are delivered again,
        // right after `start`: its entries of ended writers may carry their
        // savepoint flags (constraint 7).
        let again: Vec<u64> = match &r {
            Some(c) => self.aborts_delivered[c.aborts_seen.min(self.aborts_delivered.len())..]
                .iter()
                .copied()
                .collect::<BTreeSet<u64>>()
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        // (A queued copy of one of them is delivered now, with them.)
        self.late_aborts.retain(|n| !again.contains(n));
        let finished = r
            .as_ref()
            .map(|c| c.finished_before.clone())
            .unwrap_or_default();
        if !finished.is_empty() {
            w.stats.restores_with_finished += 1;
        }
        for s in 0..self.p() {
            if finished.contains(&s) {
                continue;
            }
            let wr = &self.writers[s as usize];
            let snap = match &r {
                Some(c) => match c.writers.get(&s) {
                    Some(snap) => Some(snap.clone()),
                    None if wr.status == WStatus::Finished => {
                        // Finished before `r`, but an event of it was still in
                        // flight when the coordinator took its state: it cannot
                        // be named finished; restored from its final state.
                        w.stats.finished_not_named += 1;
                        match wr.final_snap.clone() {
                            Some(snap) => {
                                // From now on it is the writer's state at `r`.
                                if let Some(last) = self.last_completed.as_mut() {
                                    last.writers.insert(s, snap.clone());
                                }
                                Some(snap)
                            }
                            None => {
                                return Err(w.fail(format!(
                                    "job {}: writer {s} finished without a final state",
                                    self.label
                                )))
                            }
                        }
                    }
                    None => {
                        return Err(w.fail(format!(
                            "job {}: writer {s} has no state in checkpoint {}",
                            self.label, c.id
                        )))
                    }
                },
                None => None,
            };
            self.restart_writer(w, s, snap, r.as_ref().map(|c| c.id))?;
        }
        let name = self.next_name(self.zombie.is_some() && stale);
        let epoch = self.epoch;
        self.start_instance(w, r, name)?;
        for n in again {
            if self.epoch != epoch {
                // Failed over again: that failover delivers them.
                break;
            }
            w.stats.aborts_redelivered += 1;
            self.call(w, Call::CheckpointAborted(n))?;
        }
        Ok(())
    }

    /// The per-writer prefixes of the old attempt's in-flight messages that
    /// still reach the stale instance.
    fn zombie_queues(&self, w: &mut World<'_>) -> Vec<VecDeque<super::job::Msg>> {
        self.writers
            .iter()
            .map(|wr| {
                let n = w.rng.range(0, wr.outbox.len() as u64) as usize;
                wr.outbox.iter().take(n).cloned().collect()
            })
            .collect()
    }

    /// One call to the stale instance, or its end. It never gets a call that
    /// could run the final commit (model constraint 14).
    pub fn zombie_step(&mut self, w: &mut World<'_>) -> Res<()> {
        let Some(z) = self.zombie.as_mut() else {
            return Ok(());
        };
        z.life = z.life.saturating_sub(1);
        let mut options: Vec<Option<usize>> = Vec::new();
        if z.aborts.is_empty() {
            for (s, q) in z.queues.iter().enumerate() {
                if !q.is_empty() {
                    options.push(Some(s));
                }
            }
            if !z.completes.is_empty() {
                options.push(None);
            }
        }
        if z.life == 0 || (options.is_empty() && z.aborts.is_empty()) {
            self.zombie = None;
            return Ok(());
        }
        let call = if let Some(n) = z.aborts.pop_front() {
            Call::CheckpointAborted(n)
        } else {
            match *w.rng.pick(&options).unwrap_or(&None) {
                Some(s) => match z.queues[s].pop_front() {
                    Some(msg) => super::calls::from_msg(s as u32, msg),
                    None => return Ok(()),
                },
                None => match z.completes.pop_front() {
                    Some(c) => Call::CheckpointComplete(c),
                    None => return Ok(()),
                },
            }
        };
        // Any call that runs the commit rule while (after it) every slot
        // holds an END entry may run the final commit (SEMANTICS 5.3: in
        // on-checkpoint mode an event or a reset too, once every END entry
        // is captured by a completed checkpoint).
        let mut after = z.inst.mirror.clone();
        super::calls::apply_to_mirror(&mut after, &call);
        let final_may_run = !after.final_done
            && after.all_ended()
            && !matches!(
                call,
                Call::CheckpointAborted(_) | Call::Checkpoint(_) | Call::Close
            );
        if final_may_run {
            self.zombie = None;
            w.stats.zombie_stopped_before_final += 1;
            return Ok(());
        }
        w.stats.zombie_calls += 1;
        self.call_on(w, Target::Zombie, call)?;
        Ok(())
    }

    /// Flink runs a finished subtask's operator again after a global
    /// failover, with empty state: it sends an empty restore event, or the
    /// host resets it. The instance must ignore both (SEMANTICS 6.2).
    pub fn finished_replay(&mut self, w: &mut World<'_>) -> Res<()> {
        let Some(m) = self.mirror() else {
            return Ok(());
        };
        let finished: Vec<u32> = m.finished.iter().copied().collect();
        let (Some(&s), Some(r)) = (w.rng.pick(&finished), m.restored_from) else {
            return Ok(());
        };
        self.replays_left = self.replays_left.saturating_sub(1);
        let call = if w.rng.chance(500) {
            w.stats.finished_restores += 1;
            Call::Restored {
                subtask: s,
                attempt: self.writers[s as usize].attempt + 1,
                checkpoint: r,
                entries: Vec::new(),
            }
        } else {
            w.stats.finished_resets += 1;
            Call::SubtaskReset {
                subtask: s,
                checkpoint: Some(r),
            }
        };
        self.call(w, call)?;
        Ok(())
    }

    // ------------------------------------------------------------------
    // Instances
    // ------------------------------------------------------------------

    /// Creates and starts an instance (fresh, or restored from `restore`),
    /// recording `start` / `failover`; repeats on storage errors.
    pub fn start_instance(
        &mut self,
        w: &mut World<'_>,
        restore: Option<Completed>,
        name: String,
    ) -> Res<()> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            if attempts > 100 {
                return Err(w.fail("start keeps failing on storage"));
            }
            let point = restore.as_ref().map(|c| RestorePoint {
                checkpoint: c.id,
                state: c.coord_state.clone(),
                finished_subtasks: c.finished_before.iter().copied().collect(),
            });
            let op = self.creation_op(restore.as_ref(), &name);
            w.rec.push(&name, op);
            self.started = true;
            self.inst = None;
            let mirror = match &restore {
                None => Mirror::new(self.p()),
                Some(c) => {
                    let persisted = self.persisted(w, &c.coord_state, c.id)?;
                    Mirror::restoring(self.p(), c.id, persisted, &c.finished_before)
                }
            };
            let created =
                w.engine
                    .coordinator(&w.tables, &w.clock, &self.cfg, point, w.paimon.as_ref());
            let coord = w.host("creating a coordinator", created)?;
            self.inst = Some(Inst {
                coord,
                name: name.clone(),
                mirror,
                aborts_ok: BTreeSet::new(),
            });
            // Flink may run a finished subtask again (`finished_replay`).
            self.replays_left = match self.profile {
                super::Profile::Flip147 => w.rng.range(0, 4) as u32,
                _ => w.rng.range(0, 1) as u32,
            };
            let result = self.start_call(w)?;
            self.observe(w, Target::Main)?;
            match result {
                Ok(outcome) => {
                    let inst = self.inst.as_mut().ok_or_else(|| w.fail("no instance"))?;
                    if self.end_snapshots > 0 {
                        inst.mirror.final_done = true;
                    }
                    if inst.mirror.all_restored() {
                        let before = inst.mirror.clone();
                        inst.mirror.finish_recovery();
                        self.after_recovery(w, Target::Main, &before)?;
                    }
                    self.after_outcome(w, Target::Main, &outcome)?;
                    self.check_state(w, outcome.state, "start")?;
                    if outcome.restart_required {
                        w.stats.restarts_required += 1;
                        return self.global_failover(w, "restart required by the recovery", false);
                    }
                    return Ok(());
                }
                Err(e)
                    if e.kind
                        == sink_coordinator_host::error::HostErrorKind::Core(
                            sink_coordinator::ErrorKind::Storage,
                        ) =>
                {
                    w.stats.storage_errors += 1;
                    continue;
                }
                Err(e) => return Err(w.fail(format!("job {}: start failed: {e}", self.label))),
            }
        }
    }

    /// What the state bytes hold per slot (END entries, and ordinary entries
    /// of ended writers), as the mirror of a restored instance starts.
    fn persisted(&self, w: &World<'_>, bytes: &[u8], r: u64) -> Res<BTreeMap<u32, PSlot>> {
        let view = super::checks::decode_state(bytes).map_err(|e| {
            w.fail(format!(
                "job {}: the state bytes of checkpoint {r} do not decode: {e}",
                self.label
            ))
        })?;
        let mut out: BTreeMap<u32, PSlot> = BTreeMap::new();
        for (s, e) in view.ends {
            out.entry(s).or_default().end = Some(e);
        }
        for (s, c, e) in view.entries {
            out.entry(s).or_default().entries.insert(c, e);
        }
        Ok(out)
    }
}
