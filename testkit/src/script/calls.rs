//! The script line of each component call, written by the recorder and
//! compared by the playback: one place spells every call's arguments.

use serde_json::{json, Value};
use sink_coordinator::{Call as CoordinatorCall, Config, Entry, RestorePoint, WriterCall};

use super::wire::{
    bytes_arg, committables_arg, config_arg, entry_arg, option_arg, restore_arg, u64_arg,
    watermark_arg,
};

/// One component call: its WIT name, the resource handle it is made on
/// (`None` for the `table` interface) and its arguments.
pub struct Call {
    pub name: &'static str,
    pub handle: Option<u32>,
    pub args: Vec<Value>,
}

impl Call {
    /// A call on the resource `handle`.
    pub fn on(handle: u32, name: &'static str, args: Vec<Value>) -> Self {
        Call {
            name,
            handle: Some(handle),
            args,
        }
    }

    /// A call of the `table` interface.
    pub fn table(name: &'static str, args: Vec<Value>) -> Self {
        Call {
            name,
            handle: None,
            args,
        }
    }

    /// The script line: `{"call": NAME, "h": HANDLE, "args": [...]}`.
    pub fn line(&self) -> Value {
        match self.handle {
            Some(h) => json!({ "call": self.name, "h": h, "args": self.args }),
            None => json!({ "call": self.name, "args": self.args }),
        }
    }
}

/// The coordinator constructor (a new component instance).
pub fn coordinator(h: u32, config: &Config, restore: Option<&RestorePoint>) -> Call {
    Call::on(
        h,
        "coordinator",
        vec![config_arg(config), restore_arg(restore)],
    )
}

/// The writer constructor (a new component instance).
pub fn writer(h: u32, subtask: u32) -> Call {
    Call::on(h, "writer", vec![json!(subtask)])
}

/// The script line of a coordinator call on `h`. `None` for `events` (the
/// recorder writes a batch as its events, one `event` line each: scripts
/// have no batch call) and for a call scripts cannot spell yet.
pub fn of(h: u32, call: &CoordinatorCall) -> Option<Call> {
    Some(match call {
        CoordinatorCall::Start => Call::on(h, "start", vec![]),
        CoordinatorCall::Event {
            subtask,
            attempt,
            entry,
        } => event(h, *subtask, *attempt, entry),
        CoordinatorCall::Events(_) => return None,
        CoordinatorCall::Restored {
            subtask,
            attempt,
            checkpoint,
            entries,
        } => restored(h, *subtask, *attempt, *checkpoint, entries),
        CoordinatorCall::SubtaskReset {
            subtask,
            checkpoint,
        } => subtask_reset(h, *subtask, *checkpoint),
        CoordinatorCall::Close => Call::on(h, "close", vec![]),
        // Every call whose only argument is a checkpoint id (`checkpoint`,
        // `checkpoint-complete`, `checkpoint-aborted`, ...) by its WIT name:
        // one catch-all, so that such a call added to the WIT and the core
        // needs no arm here. Any other new call has no script line (`None`:
        // the recorder and the playback refuse it by its name).
        other => with_checkpoint(h, other.name(), other.checkpoint_arg()?),
    })
}

pub fn event(h: u32, subtask: u32, attempt: u32, entry: &Entry) -> Call {
    Call::on(
        h,
        "event",
        vec![json!(subtask), json!(attempt), entry_arg(entry)],
    )
}

pub fn restored(h: u32, subtask: u32, attempt: u32, checkpoint: u64, entries: &[Entry]) -> Call {
    let entries = Value::Array(entries.iter().map(entry_arg).collect());
    Call::on(
        h,
        "restored",
        vec![json!(subtask), json!(attempt), u64_arg(checkpoint), entries],
    )
}

pub fn subtask_reset(h: u32, subtask: u32, checkpoint: Option<u64>) -> Call {
    Call::on(
        h,
        "subtask-reset",
        vec![json!(subtask), option_arg(checkpoint, u64_arg)],
    )
}

/// A call whose only argument is a checkpoint id (`checkpoint`,
/// `checkpoint-complete`, `checkpoint-aborted`, the writer's `committed`).
pub fn with_checkpoint(h: u32, name: &'static str, checkpoint: u64) -> Call {
    Call::on(h, name, vec![u64_arg(checkpoint)])
}

/// The script line of a writer call on `h`.
pub fn of_writer(h: u32, call: &WriterCall<'_>) -> Call {
    let args = match call {
        WriterCall::Report {
            checkpoint,
            committables,
            watermark,
            savepoint,
        } => vec![
            u64_arg(*checkpoint),
            committables_arg(committables),
            watermark_arg(*watermark),
            json!(savepoint),
        ],
        WriterCall::EndInput {
            committables,
            watermark,
        } => vec![committables_arg(committables), watermark_arg(*watermark)],
        WriterCall::Committed(c) | WriterCall::CheckpointAborted(c) => vec![u64_arg(*c)],
        WriterCall::State => vec![],
        WriterCall::Restore { state, checkpoint } => {
            vec![bytes_arg(state), u64_arg(*checkpoint)]
        }
    };
    Call::on(h, call.name(), args)
}
