//! The writer model: each writer reads a bounded or unbounded input, reports
//! the records read since its last report at every checkpoint through the
//! writer helper (SEMANTICS 11), ends its input (END entry), and finishes
//! once its final checkpoint completes (FLIP-147), losing its state. Its
//! messages reach the coordinator in order, possibly late; the host forwards
//! committed-up-to to it (`committed(u)`), possibly late, reordered or not
//! at all — the only thing that makes the helper drop entries.

use std::collections::BTreeSet;

use sink_coordinator::END;

use super::backend::WriterApi;
use super::calls::Answer;
use super::job::{Job, Kind, Msg, Payload, Res, WSnap, WStatus};
use super::ledger::{names, Fate, Item, Ledger};
use super::world::World;

impl Job {
    /// Creates the writers' helpers and starts the first instance.
    pub fn begin(&mut self, w: &mut World<'_>) -> Res<()> {
        for s in 0..self.p() {
            let helper = w.engine.writer(s);
            self.writers[s as usize].helper = Some(w.host("creating a writer", helper)?);
        }
        let name = self.next_name(false);
        self.start_instance(w, None, name)?;
        self.started = true;
        Ok(())
    }

    fn new_item(&mut self, w: &mut World<'_>, s: u32, c: u64, k: u32, lo: u64, hi: u64) -> Vec<u8> {
        let attempt = self.writers[s as usize].attempt;
        let name = Ledger::name(self.label, s, c, attempt, k);
        if let Some(p) = &w.paimon {
            p.register(&name, self.label, s, lo, hi);
        }
        self.ledger.items.insert(
            name.clone(),
            Item {
                subtask: s,
                checkpoint: c,
                lo,
                hi,
                fate: Fate::Pending,
                post_final: self.final_done_job,
                reported: false,
            },
        );
        w.stats.committables_produced += 1;
        name.into_bytes()
    }

    /// Splits records `[lo, hi)` into 1 or 2 committables (none if empty).
    fn produce(&mut self, w: &mut World<'_>, s: u32, c: u64, lo: u64, hi: u64) -> Vec<Vec<u8>> {
        if lo >= hi {
            return Vec::new();
        }
        if hi - lo >= 2 && w.rng.chance(400) {
            let mid = w.rng.range(lo + 1, hi - 1);
            vec![
                self.new_item(w, s, c, 0, lo, mid),
                self.new_item(w, s, c, 1, mid, hi),
            ]
        } else {
            vec![self.new_item(w, s, c, 0, lo, hi)]
        }
    }

    pub fn send(&mut self, s: u32, payload: Payload) -> u64 {
        let seq = self.next_seq();
        let wr = &mut self.writers[s as usize];
        wr.outbox.push_back(Msg {
            seq,
            attempt: wr.attempt,
            payload,
        });
        seq
    }

    fn helper<'j>(&'j mut self, w: &World<'_>, s: u32) -> Res<&'j mut Box<dyn WriterApi>> {
        match self.writers[s as usize].helper.as_mut() {
            Some(h) => Ok(h),
            None => Err(w.fail(format!("job {}: writer {s} has no helper", self.label))),
        }
    }

    /// Writer `s` takes part in the pending checkpoint: reports what it read
    /// since its last report and takes its state.
    pub fn snapshot(&mut self, w: &mut World<'_>, s: u32) -> Res<()> {
        let Some(pd) = &self.pending else {
            return Ok(());
        };
        let (n, kind) = (pd.id, pd.kind);
        let savepoint = kind == Kind::AsyncSavepoint && self.cfg.savepoint_auto_tag;
        let wr = &self.writers[s as usize];
        let (lo, hi) = if wr.status == WStatus::Running {
            let take = w.rng.weighted(&[30, 35, 25, 10]).unwrap_or(0) as u64;
            let hi = match wr.input_len {
                Some(len) => (wr.pos + take).min(len),
                None => wr.pos + take,
            };
            (wr.pos, hi)
        } else {
            (wr.pos, wr.pos)
        };
        let committables = self.produce(w, s, n, lo, hi);
        let wm = self.wm(w.opts.seed, s, n);
        let report = self.helper(w, s)?.report(n, committables, wm, savepoint);
        let entry = w.host("writer report", report)?;
        let state = self.helper(w, s)?.state();
        let bytes = w.host("writer state", state)?;
        self.send(s, Payload::Event(entry));
        let wr = &mut self.writers[s as usize];
        wr.pos = hi;
        if wr.status == WStatus::Ended && wr.final_cp.is_none() {
            wr.final_cp = Some(n);
        }
        let snap = WSnap {
            bytes,
            end_names: wr.buf_end.clone(),
            pos: wr.pos,
            ended: wr.status == WStatus::Ended,
        };
        if let Some(pd) = &mut self.pending {
            pd.snaps.insert(s, snap);
        }
        Ok(())
    }

    /// Writer `s`'s input ends: its END entry (with what it read since its
    /// last report) is sent.
    pub fn end_input(&mut self, w: &mut World<'_>, s: u32) -> Res<()> {
        let batch = !self.streaming();
        let wr = &self.writers[s as usize];
        let pos = wr.pos;
        let len = match wr.input_len {
            Some(len) => len,
            None => {
                pos + if batch {
                    w.rng.range(1, 6)
                } else {
                    w.rng.range(0, 3)
                }
            }
        };
        self.writers[s as usize].input_len = Some(len);
        let committables = self.produce(w, s, END, pos, len);
        let new_names: Vec<String> = names(&committables);
        let wm = super::job::wm_end(w.opts.seed, self.label, s);
        let ended = self.helper(w, s)?.end_input(committables, wm);
        let entry = w.host("writer end-input", ended)?;
        self.send(s, Payload::Event(entry));
        let wr = &mut self.writers[s as usize];
        wr.pos = len;
        wr.buf_end.extend(new_names);
        wr.status = WStatus::Ended;
        wr.final_cp = None;
        Ok(())
    }

    /// Delivers the front message of writer `s`; false if the host failed over.
    pub fn deliver(&mut self, w: &mut World<'_>, s: u32) -> Res<bool> {
        let Some(m) = self.mirror() else {
            return Ok(true);
        };
        let (late_ok, restoring) = (m.completed, m.is_restoring());
        let Some(msg) = self.writers[s as usize].outbox.pop_front() else {
            return Ok(true);
        };
        if let Payload::Event(e) = &msg.payload {
            if e.checkpoint != END && late_ok.is_some_and(|c| e.checkpoint <= c) {
                w.stats.late_events += 1;
            }
            if e.checkpoint == END && restoring {
                w.stats.end_while_restoring += 1;
            }
            let final_cp = self.writers[s as usize].final_cp;
            if e.checkpoint == END && final_cp.is_some_and(|f| late_ok.is_some_and(|c| f <= c)) {
                w.stats.late_ends += 1;
            }
        }
        let call = super::calls::from_msg(s, msg);
        w.stats.events_delivered += 1;
        if matches!(self.call(w, call)?, Answer::FailedOver) {
            return Ok(false);
        }
        if !self.streaming() {
            let wr = &mut self.writers[s as usize];
            if wr.status == WStatus::Ended && wr.outbox.is_empty() {
                wr.status = WStatus::Finished;
                wr.helper = None;
                wr.inbox.clear();
                w.stats.writers_finished += 1;
            }
        }
        Ok(true)
    }

    /// Delivers messages of writer `s` while `keep(seq)` holds for the front one.
    pub fn flush_writer(
        &mut self,
        w: &mut World<'_>,
        s: u32,
        keep: impl Fn(u64) -> bool,
    ) -> Res<bool> {
        let epoch = self.epoch;
        while let Some(front) = self.writers[s as usize].outbox.front() {
            if !keep(front.seq) || !self.deliverable(s) {
                break;
            }
            if !self.deliver(w, s)? || self.epoch != epoch {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The host forwards a committed-up-to to the writers that still run
    /// (each notification may be lost).
    pub fn forward_up_to(&mut self, w: &mut World<'_>, u: u64) {
        for wr in self.writers.iter_mut() {
            if wr.helper.is_none() {
                continue;
            }
            if w.rng.chance(150) {
                w.stats.notifications_lost += 1;
                continue;
            }
            if wr.inbox.back() == Some(&u) {
                continue;
            }
            wr.inbox.push_back(u);
            w.stats.notifications_sent += 1;
            if wr.inbox.len() > 6 {
                wr.inbox.pop_front();
                w.stats.notifications_lost += 1;
            }
        }
    }

    /// Delivers one of writer `s`'s notifications: usually the oldest, at
    /// times a later one first (the older then arrives stale).
    pub fn notify(&mut self, w: &mut World<'_>, s: u32) -> Res<()> {
        let n = self.writers[s as usize].inbox.len();
        if n == 0 {
            return Ok(());
        }
        let i = if n > 1 && w.rng.chance(250) {
            w.stats.notifications_reordered += 1;
            w.rng.range(1, n as u64 - 1) as usize
        } else {
            0
        };
        let Some(u) = self.writers[s as usize].inbox.remove(i) else {
            return Ok(());
        };
        if let Some(h) = self.writers[s as usize].helper.as_mut() {
            let r = h.committed(u);
            w.host("writer committed", r)?;
            w.stats.notifications_delivered += 1;
        }
        Ok(())
    }

    /// Writer `s` finishes (FLIP-147): its final checkpoint `snap` completed.
    /// The task and its state are gone; the host keeps the state of that
    /// checkpoint, to restore from if it cannot name the writer finished.
    pub fn finish(&mut self, w: &mut World<'_>, s: u32, snap: Option<WSnap>) {
        let wr = &mut self.writers[s as usize];
        wr.status = WStatus::Finished;
        wr.helper = None;
        wr.inbox.clear();
        wr.final_snap = snap;
        w.stats.writers_finished += 1;
    }

    /// Restarts writer `s` (new attempt) from `snap` taken at or before `r`
    /// (the restore point), or from scratch; discards what the rollback
    /// drops. A region restart sends its restore event to the running
    /// coordinator, a global one to the new instance.
    pub fn restart_writer(
        &mut self,
        w: &mut World<'_>,
        s: u32,
        snap: Option<WSnap>,
        r: Option<u64>,
    ) -> Res<()> {
        let kept_end: BTreeSet<String> = snap
            .as_ref()
            .map(|x| x.end_names.clone())
            .unwrap_or_default();
        w.stats.committables_discarded += self.ledger.discard(s, r, &kept_end, w.step) as u64;
        let helper = w.engine.writer(s);
        let mut helper = w.host("creating a writer", helper)?;
        let restored = match (&snap, r) {
            (Some(snap), Some(r)) => {
                let entries = helper.restore(&snap.bytes, r);
                Some((r, w.host("writer restore", entries)?))
            }
            _ => None,
        };
        let keep_inbox = w.rng.chance(500);
        let wr = &mut self.writers[s as usize];
        wr.attempt += 1;
        wr.outbox.clear();
        wr.final_cp = None;
        wr.final_snap = None;
        if !keep_inbox {
            // Notifications in flight to the old attempt are lost; the ones
            // kept arrive at the new attempt, stale (SEMANTICS 5.5: still true).
            wr.inbox.clear();
        }
        wr.helper = Some(helper);
        wr.pos = snap.as_ref().map_or(0, |x| x.pos);
        wr.buf_end = kept_end;
        wr.status = WStatus::Running;
        if let Some((checkpoint, entries)) = restored {
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
            self.end_input(w, s)?;
        }
        Ok(())
    }
}
