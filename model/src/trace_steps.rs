//! Counterexamples as TRACE-FORMAT v2 steps: the model keeps a compact
//! [`TStep`] per move, and [`TStep::op`] turns it into the trace crate's
//! [`Op`] only when a trace is written (`sink_coordinator_trace::format`
//! writes the document; no second writer of the format here).

use sink_coordinator::{Config, Entry};
use sink_coordinator_trace::faults::{CallKind, Fault};
use sink_coordinator_trace::format::Op;

use crate::env::FaultMode;
use crate::state::*;

/// One TRACE-FORMAT step of a model run.
#[derive(Clone, Debug)]
pub enum TStep {
    Start,
    Checkpoint(u64),
    Abort(u64),
    Complete(u64),
    /// `write`: subtask, checkpoint, committables, savepoint flag.
    Write(u32, u64, Vec<Vec<u8>>, bool),
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

fn entry(e: &Ent) -> Entry {
    Entry {
        checkpoint: e.checkpoint,
        committables: e.committables.clone().into(),
        watermark: None,
        savepoint: e.savepoint,
    }
}

impl TStep {
    /// The step as the trace crate's operation; `config` is the model's
    /// (every instance runs it).
    pub fn op(&self, config: &Config) -> Op {
        match self {
            TStep::Start => Op::Start {
                config: config.clone(),
            },
            TStep::Checkpoint(n) => Op::Checkpoint { checkpoint: *n },
            TStep::Abort(n) => Op::Abort { checkpoint: *n },
            TStep::Complete(n) => Op::Complete { checkpoint: *n },
            TStep::Write(s, n, data, sp) => Op::Write {
                subtask: *s,
                entry: Entry {
                    checkpoint: *n,
                    committables: data.clone().into(),
                    watermark: None,
                    savepoint: *sp,
                },
                send: false,
            },
            TStep::WriterSnapshot(s, n) => Op::WriterSnapshot {
                subtask: Some(*s),
                checkpoint: *n,
            },
            TStep::EndInput(s, data) => Op::EndInput {
                subtask: *s,
                committables: data.clone(),
                watermark: None,
                send: false,
            },
            TStep::Send(s) => Op::Send {
                subtask: *s,
                count: Some(1),
            },
            TStep::WriterCommitted(s, u) => Op::WriterCommitted {
                subtask: Some(*s),
                checkpoint: Some(*u),
            },
            TStep::WriterAbort(s, n) => Op::WriterAbort {
                subtask: Some(*s),
                checkpoint: *n,
            },
            TStep::Reset(s, r) => Op::ResetSubtask {
                subtask: *s,
                checkpoint: *r,
            },
            TStep::WriterRestore(s, r, attempt) => Op::WriterRestore {
                subtask: *s,
                checkpoint: *r,
                attempt: *attempt,
                send: false,
            },
            TStep::Failover(r, finished) => Op::Failover {
                checkpoint: *r,
                // TRACE-FORMAT: ignored (and written empty) without a checkpoint.
                finished_subtasks: if r.is_some() {
                    finished.clone()
                } else {
                    Vec::new()
                },
                config: config.clone(),
                state: None,
            },
            TStep::Fault(mode, skip) => Op::StorageFault {
                call: CallKind::Put,
                fault: Fault {
                    skip: *skip,
                    count: 1,
                    mode: *mode,
                },
            },
            TStep::Event(s, attempt, e) => Op::Event {
                subtask: *s,
                attempt: *attempt,
                entry: entry(e),
            },
            TStep::Restored(s, attempt, r, entries) => Op::Restored {
                subtask: *s,
                attempt: *attempt,
                checkpoint: *r,
                entries: entries.iter().map(entry).collect(),
            },
        }
    }
}
