//! A writer-helper call as a value (SEMANTICS 11), and what it returns: the
//! writer's counterpart of [`crate::Call`]. A caller that chooses calls at
//! run time (the script recorder and player, the trace replay) builds a
//! [`WriterCall`] and hands it to one `apply`: [`Writer::apply`] on the core,
//! [`crate::WriterApi::apply`] on whatever runs it. As for the coordinator,
//! `apply` dispatches to the typed methods.

use alloc::vec::Vec;

use crate::error::Result;
use crate::types::Entry;
use crate::writer::Writer;

/// One call of the WIT `writer` resource (its arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriterCall<'a> {
    /// `report`: what the writer produced for `checkpoint`.
    Report {
        /// The checkpoint (strictly increasing).
        checkpoint: u64,
        /// Its committables.
        committables: Vec<Vec<u8>>,
        /// Its watermark, if any.
        watermark: Option<i64>,
        /// Whether the checkpoint is a savepoint.
        savepoint: bool,
    },
    /// `end-input`: the input ended.
    EndInput {
        /// The last committables.
        committables: Vec<Vec<u8>>,
        /// The last watermark, if any.
        watermark: Option<i64>,
    },
    /// `committed`: the coordinator's committed-up-to, forwarded.
    Committed(u64),
    /// `checkpoint-aborted`.
    CheckpointAborted(u64),
    /// `state`: take the writer's state bytes.
    State,
    /// `restore`: the state bytes taken at `checkpoint`.
    Restore {
        /// The state bytes.
        state: &'a [u8],
        /// The checkpoint they were taken at.
        checkpoint: u64,
    },
}

impl WriterCall<'_> {
    /// The WIT name of the call (`report`, `end-input`, ..., `restore`).
    pub fn name(&self) -> &'static str {
        match self {
            WriterCall::Report { .. } => "report",
            WriterCall::EndInput { .. } => "end-input",
            WriterCall::Committed(_) => "committed",
            WriterCall::CheckpointAborted(_) => "checkpoint-aborted",
            WriterCall::State => "state",
            WriterCall::Restore { .. } => "restore",
        }
    }
}

/// What a successful writer call returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriterReply {
    /// `report`, `end-input`: the entry to send to the coordinator.
    Entry(Entry),
    /// `restore`: the entries to send in the `restored` event.
    Entries(Vec<Entry>),
    /// `state`: the state bytes.
    State(Vec<u8>),
    /// `committed`, `checkpoint-aborted`.
    Done,
}

impl Writer {
    /// Makes `call` (see the module docs).
    pub fn apply(&mut self, call: WriterCall<'_>) -> Result<WriterReply> {
        Ok(match call {
            WriterCall::Report {
                checkpoint,
                committables,
                watermark,
                savepoint,
            } => WriterReply::Entry(self.report(checkpoint, committables, watermark, savepoint)?),
            WriterCall::EndInput {
                committables,
                watermark,
            } => WriterReply::Entry(self.end_input(committables, watermark)?),
            WriterCall::Committed(u) => {
                self.committed(u)?;
                WriterReply::Done
            }
            WriterCall::CheckpointAborted(c) => {
                self.checkpoint_aborted(c)?;
                WriterReply::Done
            }
            WriterCall::State => WriterReply::State(self.state()),
            WriterCall::Restore { state, checkpoint } => {
                WriterReply::Entries(self.restore(state, checkpoint)?)
            }
        })
    }
}
