//! A [`Trace`] back to a TRACE-FORMAT document (the simulator's recorded
//! traces): the same serde types as reading, in the canonical layout.

use sink_coordinator::Config;

use super::doc::{self, ConfigDoc, EntryDoc, StepDoc, TraceDoc};
use super::layout::to_canonical;
use super::value::{Checkpoint, CheckpointNumber, Hex, Obj, OrNull, Watermark, U32, U64};
use super::{Op, Trace, DEFAULT_INSTANCE};

/// The trace as a JSON document, one step per line; `start` and
/// `failover` carry a `config` only where it differs from the trace's.
pub fn to_json(trace: &Trace) -> String {
    let document = TraceDoc {
        config: Obj(ConfigDoc::full(&trace.config)),
        clock_start_ms: trace.clock_start_ms,
        clock_step_ms: trace.clock_step_ms,
        steps: trace
            .steps
            .iter()
            .map(|s| {
                let instance = (s.instance != DEFAULT_INSTANCE).then(|| s.instance.clone());
                step(&s.op, instance, &trace.config)
            })
            .collect(),
    };
    to_canonical(&document, true)
}

fn step(op: &Op, instance: Option<String>, base: &Config) -> StepDoc {
    use serde::de::IgnoredAny as Tag;
    let over = |c: &Config| (c != base).then(|| Obj(ConfigDoc::full(c)));
    let nullable = |c: &Option<u64>| OrNull(c.map(CheckpointNumber));
    match op {
        Op::Start { config } => StepDoc::Start(doc::StartDoc {
            _op: Tag,
            instance,
            config: over(config),
        }),
        Op::Event {
            subtask,
            attempt,
            entry,
        } => {
            let e = EntryDoc::from_entry(entry);
            StepDoc::Event(doc::EventDoc {
                _op: Tag,
                instance,
                subtask: U32(*subtask),
                attempt: U32(*attempt),
                checkpoint: e.checkpoint,
                committables: e.committables,
                watermark: e.watermark,
                savepoint: e.savepoint,
            })
        }
        Op::Checkpoint { checkpoint } | Op::Complete { checkpoint } | Op::Abort { checkpoint } => {
            let d = doc::CheckpointDoc {
                _op: Tag,
                instance,
                checkpoint: Checkpoint(*checkpoint),
            };
            match op {
                Op::Checkpoint { .. } => StepDoc::Checkpoint(d),
                Op::Complete { .. } => StepDoc::Complete(d),
                _ => StepDoc::Abort(d),
            }
        }
        Op::ResetSubtask {
            subtask,
            checkpoint,
        } => StepDoc::ResetSubtask(doc::ResetSubtaskDoc {
            _op: Tag,
            instance,
            subtask: U32(*subtask),
            checkpoint: nullable(checkpoint),
        }),
        Op::Restored {
            subtask,
            attempt,
            checkpoint,
            entries,
        } => StepDoc::Restored(doc::RestoredDoc {
            _op: Tag,
            instance,
            subtask: U32(*subtask),
            attempt: U32(*attempt),
            checkpoint: CheckpointNumber(*checkpoint),
            entries: entries
                .iter()
                .map(|e| Obj(EntryDoc::from_entry(e)))
                .collect(),
        }),
        Op::Failover {
            checkpoint,
            finished_subtasks,
            config,
            state,
        } => StepDoc::Failover(doc::FailoverDoc {
            _op: Tag,
            instance,
            checkpoint: nullable(checkpoint),
            // Ignored with a null checkpoint: not written then.
            finished_subtasks: match checkpoint {
                Some(_) => finished_subtasks.iter().copied().map(U32).collect(),
                None => Vec::new(),
            },
            config: over(config),
            state_hex: state.clone().map(Hex),
        }),
        Op::Close => StepDoc::Close(doc::CloseDoc { _op: Tag, instance }),
        Op::Clock { ms } => StepDoc::Clock(doc::ClockDoc {
            _op: Tag,
            instance,
            ms: U64(*ms),
        }),
        Op::StorageFault { call, fault } => StepDoc::StorageFault(doc::StorageFaultDoc {
            _op: Tag,
            instance,
            call: (*call).into(),
            mode: fault.mode.into(),
            skip: U64(fault.skip),
            count: U64(fault.count),
        }),
        Op::Write {
            subtask,
            entry,
            send,
        } => {
            let e = EntryDoc::from_entry(entry);
            StepDoc::Write(doc::WriteDoc {
                _op: Tag,
                instance,
                subtask: U32(*subtask),
                checkpoint: CheckpointNumber(entry.checkpoint),
                committables: e.committables,
                watermark: e.watermark,
                savepoint: e.savepoint,
                send: *send,
            })
        }
        Op::EndInput {
            subtask,
            committables,
            watermark,
            send,
        } => StepDoc::EndInput(doc::EndInputDoc {
            _op: Tag,
            instance,
            subtask: U32(*subtask),
            committables: doc::texts(committables),
            watermark: OrNull(watermark.map(Watermark)),
            send: *send,
        }),
        Op::Send { subtask, count } => StepDoc::Send(doc::SendDoc {
            _op: Tag,
            instance,
            subtask: U32(*subtask),
            count: count.map(U64),
        }),
        Op::WriterCommitted {
            subtask,
            checkpoint,
        } => StepDoc::WriterCommitted(doc::WriterCommittedDoc {
            _op: Tag,
            instance,
            subtask: subtask.map(U32),
            checkpoint: checkpoint.map(Checkpoint),
        }),
        Op::WriterAbort {
            subtask,
            checkpoint,
        }
        | Op::WriterSnapshot {
            subtask,
            checkpoint,
        } => {
            let d = doc::WriterCheckpointDoc {
                _op: Tag,
                instance,
                subtask: subtask.map(U32),
                checkpoint: CheckpointNumber(*checkpoint),
            };
            match op {
                Op::WriterAbort { .. } => StepDoc::WriterAbort(d),
                _ => StepDoc::WriterSnapshot(d),
            }
        }
        Op::WriterRestore {
            subtask,
            checkpoint,
            attempt,
            send,
        } => StepDoc::WriterRestore(doc::WriterRestoreDoc {
            _op: Tag,
            instance,
            subtask: U32(*subtask),
            checkpoint: nullable(checkpoint),
            attempt: Some(U32(*attempt)),
            send: *send,
        }),
    }
}
