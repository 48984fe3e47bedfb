//! The trace document as written: serde types of TRACE-FORMAT's fields,
//! read with `deny_unknown_fields` and written by the same derives.
//!
//! A step is written with serde's internally tagged `op`
//! ([`StepDoc`]). It is read per op instead ([`OpName`], then the op's own
//! struct, see `parse.rs`): serde reads an internally tagged enum through a
//! private buffer that `serde_path_to_error` cannot see into, and a
//! message must name the field inside the step.

use crate::faults::{CallKind, FaultMode};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use sink_coordinator::{Config, Entry, FinalCommitMode, RecoveryMode};

use super::value::{present, Checkpoint, CheckpointNumber, Hex, Obj, OrNull, Watermark, U32, U64};

/// The top level; the steps are read one by one afterwards.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a trace (an object)")]
pub(crate) struct TraceHead<'a> {
    pub config: Obj<ConfigDoc>,
    #[serde(default)]
    pub clock_start_ms: U64,
    #[serde(default)]
    pub clock_step_ms: U64,
    #[serde(borrow)]
    pub steps: Vec<&'a serde_json::value::RawValue>,
}

/// The top level as written.
#[derive(Serialize)]
pub(crate) struct TraceDoc {
    pub config: Obj<ConfigDoc>,
    pub clock_start_ms: u64,
    pub clock_step_ms: u64,
    pub steps: Vec<StepDoc>,
}

/// A struct of the document whose fields are all optional: `Option<T>` for
/// each `field: T`, absent when not written (an explicit `null` is a value of
/// `T`, see [`present`]) and not written when `None`.
macro_rules! optional_fields {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($field:ident: $ty:ty,)* }) => {
        $(#[$m])*
        $vis struct $name {
            $(
                #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
        }
    };
}

optional_fields! {
    /// `config`, or a step's override of it: every field optional here.
    #[derive(Clone, Debug, Default, Deserialize, Serialize)]
    #[serde(deny_unknown_fields, expecting = "a configuration (an object)")]
    pub(crate) struct ConfigDoc {
        parallelism: U32,
        commit_user: String,
        checkpointing: bool,
        final_commit: FinalCommitDoc,
        force_create_snapshot: bool,
        savepoint_auto_tag: bool,
        tag_time_retained_ms: OrNull<U64>,
        recovery: RecoveryDoc,
    }
}

impl ConfigDoc {
    /// This document's fields over `config`.
    pub fn apply(&self, mut config: Config) -> Config {
        if let Some(p) = self.parallelism {
            config.parallelism = p.0;
        }
        if let Some(u) = &self.commit_user {
            config.commit_user = u.clone();
        }
        if let Some(c) = self.checkpointing {
            config.checkpointing = c;
        }
        if let Some(f) = self.final_commit {
            config.final_commit = f.into();
        }
        if let Some(f) = self.force_create_snapshot {
            config.force_create_snapshot = f;
        }
        if let Some(s) = self.savepoint_auto_tag {
            config.savepoint_auto_tag = s;
        }
        if let Some(t) = self.tag_time_retained_ms {
            config.tag_time_retained_ms = t.0.map(|v| v.0);
        }
        if let Some(r) = self.recovery {
            config.recovery = r.into();
        }
        config
    }

    /// Every field of `c`.
    pub fn full(c: &Config) -> Self {
        ConfigDoc {
            parallelism: Some(U32(c.parallelism)),
            commit_user: Some(c.commit_user.clone()),
            checkpointing: Some(c.checkpointing),
            final_commit: Some(c.final_commit.into()),
            force_create_snapshot: Some(c.force_create_snapshot),
            savepoint_auto_tag: Some(c.savepoint_auto_tag),
            tag_time_retained_ms: Some(OrNull(c.tag_time_retained_ms.map(U64))),
            recovery: Some(c.recovery.into()),
        }
    }
}

/// Generates a string enum of the document mirroring a type of the core or
/// the host, converted both ways.
macro_rules! names {
    ($(#[$m:meta])* $doc:ident <=> $ty:ty { $($v:ident = $name:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
        pub(crate) enum $doc {
            $(#[serde(rename = $name)] $v),*
        }
        impl From<$doc> for $ty {
            fn from(d: $doc) -> Self {
                match d { $($doc::$v => <$ty>::$v),* }
            }
        }
        impl From<$ty> for $doc {
            fn from(t: $ty) -> Self {
                match t { $(<$ty>::$v => $doc::$v),* }
            }
        }
    };
}

names!(
    /// `final_commit`.
    FinalCommitDoc <=> FinalCommitMode { OnCheckpoint = "on-checkpoint", OnEndInput = "on-end-input" }
);
names!(
    /// `recovery`.
    RecoveryDoc <=> RecoveryMode { Restart = "restart", Continue = "continue" }
);
names!(
    /// A `storage_fault`'s `call`.
    CallDoc <=> CallKind { Put = "put", Get = "get", List = "list", Delete = "delete" }
);
names!(
    /// A `storage_fault`'s `mode`.
    ModeDoc <=> FaultMode { Fail = "fail", Ambiguous = "ambiguous" }
);

/// The `op` of a step, read first to choose the op's struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OpName {
    Start,
    Event,
    Checkpoint,
    Complete,
    Abort,
    ResetSubtask,
    Restored,
    Failover,
    Close,
    Clock,
    StorageFault,
    Write,
    EndInput,
    Send,
    WriterCommitted,
    WriterAbort,
    WriterSnapshot,
    WriterRestore,
}

/// One step as written (`op` first, then `instance` when not the default).
#[derive(Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum StepDoc {
    Start(StartDoc),
    Event(EventDoc),
    Checkpoint(CheckpointDoc),
    Complete(CheckpointDoc),
    Abort(CheckpointDoc),
    ResetSubtask(ResetSubtaskDoc),
    Restored(RestoredDoc),
    Failover(FailoverDoc),
    Close(CloseDoc),
    Clock(ClockDoc),
    StorageFault(StorageFaultDoc),
    Write(WriteDoc),
    EndInput(EndInputDoc),
    Send(SendDoc),
    WriterCommitted(WriterCommittedDoc),
    WriterAbort(WriterCheckpointDoc),
    WriterSnapshot(WriterCheckpointDoc),
    WriterRestore(WriterRestoreDoc),
}

/// Every op's struct starts with these two: the `op` (checked when read,
/// written by [`StepDoc`]'s tag) and the optional `instance`.
macro_rules! step_struct {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct $name {
            #[serde(rename = "op", skip_serializing)]
            pub _op: IgnoredAny,
            #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
            pub instance: Option<String>,
            $($(#[$fm])* pub $field: $ty),*
        }
    };
}

fn yes() -> bool {
    true
}

fn one() -> U64 {
    U64(1)
}

step_struct!(StartDoc {
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    config: Option<Obj<ConfigDoc>>,
});
step_struct!(EventDoc {
    subtask: U32,
    #[serde(default)]
    attempt: U32,
    checkpoint: Checkpoint,
    #[serde(default)]
    committables: Vec<String>,
    #[serde(default)]
    watermark: OrNull<Watermark>,
    #[serde(default)]
    savepoint: bool,
});
step_struct!(
    /// `checkpoint`, `complete` and `abort`.
    CheckpointDoc { checkpoint: Checkpoint }
);
step_struct!(ResetSubtaskDoc {
    subtask: U32,
    checkpoint: OrNull<CheckpointNumber>,
});
step_struct!(RestoredDoc {
    subtask: U32,
    #[serde(default)]
    attempt: U32,
    checkpoint: CheckpointNumber,
    entries: Vec<Obj<EntryDoc>>,
});
step_struct!(FailoverDoc {
    checkpoint: OrNull<CheckpointNumber>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    finished_subtasks: Vec<U32>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    config: Option<Obj<ConfigDoc>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    state_hex: Option<Hex>,
});
step_struct!(CloseDoc {});
step_struct!(ClockDoc { ms: U64 });
step_struct!(StorageFaultDoc {
    call: CallDoc,
    mode: ModeDoc,
    #[serde(default)]
    skip: U64,
    #[serde(default = "one")]
    count: U64,
});
step_struct!(WriteDoc {
    subtask: U32,
    checkpoint: CheckpointNumber,
    #[serde(default)]
    committables: Vec<String>,
    #[serde(default)]
    watermark: OrNull<Watermark>,
    #[serde(default)]
    savepoint: bool,
    #[serde(default = "yes")]
    send: bool,
});
step_struct!(EndInputDoc {
    subtask: U32,
    #[serde(default)]
    committables: Vec<String>,
    #[serde(default)]
    watermark: OrNull<Watermark>,
    #[serde(default = "yes")]
    send: bool,
});
step_struct!(SendDoc {
    subtask: U32,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    count: Option<U64>,
});
step_struct!(WriterCommittedDoc {
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    subtask: Option<U32>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    checkpoint: Option<Checkpoint>,
});
step_struct!(
    /// `writer_abort` and `writer_snapshot`.
    WriterCheckpointDoc {
        #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
        subtask: Option<U32>,
        checkpoint: CheckpointNumber,
    }
);
step_struct!(WriterRestoreDoc {
    subtask: U32,
    checkpoint: OrNull<CheckpointNumber>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    attempt: Option<U32>,
    #[serde(default = "yes")]
    send: bool,
});

/// An entry of `restored`.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, expecting = "an entry (an object)")]
pub(crate) struct EntryDoc {
    pub checkpoint: Checkpoint,
    #[serde(default)]
    pub committables: Vec<String>,
    #[serde(default)]
    pub watermark: OrNull<Watermark>,
    #[serde(default)]
    pub savepoint: bool,
}

impl EntryDoc {
    pub fn into_entry(self) -> Entry {
        entry(
            self.checkpoint.0,
            self.committables,
            self.watermark,
            self.savepoint,
        )
    }

    pub fn from_entry(e: &Entry) -> Self {
        EntryDoc {
            checkpoint: Checkpoint(e.checkpoint),
            committables: texts(&e.committables),
            watermark: OrNull(e.watermark.map(Watermark)),
            savepoint: e.savepoint,
        }
    }
}

/// Committables as read: each string's UTF-8 bytes.
/// The entry an `event`, a `write` or an entry of `restored` writes.
pub(crate) fn entry(
    checkpoint: u64,
    committables: Vec<String>,
    watermark: OrNull<Watermark>,
    savepoint: bool,
) -> Entry {
    Entry {
        checkpoint,
        committables: bytes(committables).into(),
        watermark: watermark.0.map(|w| w.0),
        savepoint,
    }
}

pub(crate) fn bytes(texts: Vec<String>) -> Vec<Vec<u8>> {
    texts.into_iter().map(String::into_bytes).collect()
}

/// Committables as written: bytes that are not UTF-8 are written lossily
/// (a trace cannot hold them).
pub(crate) fn texts<B: AsRef<[u8]>>(bytes: impl IntoIterator<Item = B>) -> Vec<String> {
    bytes
        .into_iter()
        .map(|b| String::from_utf8_lossy(b.as_ref()).into_owned())
        .collect()
}
