//! One transition: the model's world (coordinator + storage), the calls it
//! makes and the bookkeeping shared by the moves.

use std::sync::Arc;

use sink_coordinator::table;
use sink_coordinator::{
    Coordinator, Error, ErrorKind, FinalCommitMode, Lifecycle, Outcome, Reply, END,
};

use crate::env::{FaultEnv, FaultMode, ReadOnly};
use crate::model::*;
use crate::moves::bit;
use crate::properties::has_end;
use crate::scope::*;
use crate::state::*;
use crate::trace_steps::TStep;

// --- one transition -------------------------------------------------------------

pub(crate) struct World {
    pub(crate) coord: Coordinator,
    pub(crate) env: FaultEnv,
}

pub(crate) enum Res {
    Outcome(Outcome),
    Bytes(Vec<u8>),
}

pub(crate) fn exec(c: &mut Coordinator, env: &mut FaultEnv, call: &Call) -> Result<Res, Error> {
    env.start_call();
    match c.apply(env, call.to_core()) {
        Ok(Reply::Outcome(o)) => Ok(Res::Outcome(o)),
        Ok(Reply::State(b)) => Ok(Res::Bytes(b)),
        Err(e) => Err(e.error().clone()),
    }
}

pub fn read_table(env: &FaultEnv) -> Vec<Snap> {
    table::list_snapshots(&mut ReadOnly(env.map()))
        .expect("the model's table decodes")
        .into_iter()
        .map(|s| Snap {
            commit_user: s.commit_user,
            identifier: s.identifier,
            committables: s.committables,
        })
        .collect()
}

/// Reads the snapshots appended to `env`'s table since `table` was read.
pub(crate) fn refresh_table(table: &mut Arc<Vec<Snap>>, env: &FaultEnv) {
    let snapshots = env
        .map()
        .range::<str, _>((
            std::ops::Bound::Included(table::SNAPSHOT_PREFIX),
            std::ops::Bound::Unbounded,
        ))
        .take_while(|(k, _)| k.starts_with(table::SNAPSHOT_PREFIX))
        .count();
    if snapshots != table.len() {
        // Snapshots are only ever appended (ids are dense): read the new ones.
        let table = Arc::make_mut(table);
        let mut ro = ReadOnly(env.map());
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
}

pub(crate) struct Step<'m> {
    pub(crate) m: &'m SinkModel,
    pub(crate) st: St,
    pub(crate) world: Option<World>,
    /// The next call repeats one that returned `storage`.
    pub(crate) repeating: bool,
}

impl Step<'_> {
    pub(crate) fn finish(mut self) -> St {
        if let Some(w) = self.world.take() {
            let debug = format!("{:?}", w.coord);
            Arc::make_mut(&mut self.st.coord).debug = debug;
            refresh_table(&mut self.st.table, &w.env);
            self.st.env = Arc::new(w.env);
            self.st.coordinator = Arc::new(w.coord);
        }
        self.st
    }

    /// The current instance and storage, copied out of the state on first use.
    pub(crate) fn world(&mut self) -> &mut World {
        if self.world.is_none() {
            self.world = Some(World {
                coord: (*self.st.coordinator).clone(),
                env: (*self.st.env).clone(),
            });
        }
        self.world.as_mut().expect("just built")
    }

    pub(crate) fn env_mut(&mut self) -> &mut FaultEnv {
        match &mut self.world {
            Some(w) => &mut w.env,
            None => Arc::make_mut(&mut self.st.env),
        }
    }

    pub(crate) fn ck(&self, n: u64) -> &Ck {
        &self.st.ckpts[(n - 1) as usize]
    }

    pub(crate) fn ck_mut(&mut self, n: u64) -> &mut Ck {
        Arc::make_mut(&mut self.st.ckpts[(n - 1) as usize])
    }

    pub(crate) fn csum(&mut self) -> &mut CoordSum {
        Arc::make_mut(&mut self.st.coord)
    }

    pub(crate) fn trace(&mut self, v: TStep) {
        self.st.trace.push(v);
    }

    pub(crate) fn fatal(&mut self, m: String) {
        if self.st.fatal.is_none() {
            self.st.fatal = Some(m);
        }
    }

    pub(crate) fn failed(&self) -> Result<(), String> {
        match &self.st.fatal {
            Some(f) => Err(f.clone()),
            None => Ok(()),
        }
    }

    pub(crate) fn prof(&self) -> &Profile {
        &self.m.scope.profiles[self.st.profile]
    }

    /// One coordinator call: summary, repeats after `storage`, notifications.
    pub(crate) fn call(&mut self, call: Call) -> Result<Res, Error> {
        let was_restoring = self.st.coord.life == Lifecycle::Restoring.name();
        let end_before = has_end(&self.st);
        let res = {
            let w = self.world();
            exec(&mut w.coord, &mut w.env, &call)
        };
        let (fired, life, up_to, final_done) = {
            let w = self.world.as_ref().expect("built");
            (
                w.env.fired_now(),
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
                // A finished subtask stays restored (6.2: its reset is ignored).
                if was_restoring && !self.st.named.contains(subtask) {
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
        {
            let w = self.world.as_ref().expect("built");
            refresh_table(&mut self.st.table, &w.env);
        }
        if !end_before && has_end(&self.st) {
            self.decide_drained(&call);
        } else if let Some(u) = up_to.filter(|&u| u != END && !has_end(&self.st)) {
            for ck in &self.st.ckpts {
                if ck.stop && ck.id <= u {
                    self.st.excused |= bit(ck.id);
                }
            }
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

    pub(crate) fn apply(&mut self, act: Act) {
        match act {
            Act::Quiesce(_) => {
                let r = self.quiesce();
                self.st.done = Some(r);
            }
            Act::Retry => self.retry(),
            Act::Trigger(mask, kind) => {
                self.st.left.checkpoints -= 1;
                for s in 0..self.m.p() {
                    if mask & (1 << s) != 0 {
                        self.finish_writer(s);
                    }
                }
                self.trigger(kind);
            }
            Act::AbortCheckpoint => {
                self.st.left.aborts -= 1;
                self.abort_in_progress()
            }
            Act::Ghost(s, reset) => self.ghost(s as usize, reset),
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

    pub(crate) fn finish_writer(&mut self, s: usize) {
        let w = &mut self.st.writers[s];
        debug_assert!(w.final_ck.is_some());
        w.finished = true;
        w.note = None;
        self.st.cov |= cov::FINISHED;
    }

    /// The current instance just wrote the END snapshot (its final commit):
    /// the drained stop-with-savepoints it then had pending are owed a tag
    /// on it (5.4: a flag in, `s <= completed`; on-checkpoint mode only).
    fn decide_drained(&mut self, call: &Call) {
        if self.m.scope.final_commit != FinalCommitMode::OnCheckpoint {
            return;
        }
        let mut completed = self.st.notified.max(self.st.restore_base);
        if let Call::Complete(n) = call {
            completed = completed.max(Some(*n)); // also a completion that failed on storage
        }
        for ck in &self.st.ckpts {
            if ck.stop
                && ck.status == CkStatus::Completed
                && self.st.flags & bit(ck.id) != 0
                && self.st.excused & bit(ck.id) == 0
                && completed.is_some_and(|c| ck.id <= c)
            {
                self.st.drained_owed |= bit(ck.id);
            }
        }
    }

    pub(crate) fn retry(&mut self) {
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
    pub(crate) fn settle(&mut self) -> Result<(), String> {
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
}
