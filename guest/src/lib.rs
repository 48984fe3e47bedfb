//! Exactly-once commit coordinator for streaming sinks: a deterministic core
//! with storage and time behind two small traits.
//!
//! The coordinator is a deterministic state machine: every call takes the
//! effects it may use (`env::Storage` and `env::Clock`, lent as an `env::Env`) as
//! an argument, calls them synchronously, and returns an outcome; nothing
//! runs in the background. The same code runs natively
//! (tests, `replay --native`) and inside the WebAssembly component, where the
//! `bindings` module implements the effects with the WIT imports.
//!
//! Modules, one per concern:
//! - [`call`]: a coordinator call as a value, and `Coordinator::apply`;
//! - [`batch`]: many writer events in one call, one merged outcome;
//! - [`committables`]: an entry's committables as one packed buffer;
//! - [`slots`]: per-writer bookkeeping and the incremental commit frontier;
//! - [`commit`]: the commit rule (ordinary, final and recovery commits);
//! - [`savepoint`]: savepoint auto-tags;
//! - [`limits`]: the declared size limits checked when input arrives;
//! - [`state_codec`]: the coordinator's versioned state bytes;
//! - [`table`]: the table's snapshot log and tags over `Storage`;
//! - [`writer`]: the writer-side helper;
//! - [`coordinator`]: the lifecycle and the calls of SEMANTICS.

#![warn(missing_docs)]

extern crate alloc;

/// The golden state files `tests/golden/<dir>/<name>.bin` of the tests, as
/// byte slices (one `include_bytes!` each, the path spelled once).
#[cfg(test)]
macro_rules! golden_states {
    ($dir:literal: $($name:literal),* $(,)?) => {
        [$(include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"), "/../tests/golden/", $dir, "/", $name, ".bin"
        )).as_slice()),*]
    };
}

/// The calls as a host sees them: errors with `trap`, the native-or-component traits.
pub mod api;
/// Batches of writer events.
pub mod batch;
/// The events block of `events-block` (a whole batch as one byte string).
pub mod block;
/// A coordinator call as a value.
pub mod call;
/// The commit rule.
pub mod commit;
/// An entry's committables as one buffer.
pub mod committables;
/// The coordinator: lifecycle and calls.
pub mod coordinator;
/// The effects: storage and clock.
pub mod env;
/// Errors and their classes.
pub mod error;
/// Declared size limits.
pub mod limits;
/// The committables block of `events-packed` (WIT 0.2.2).
pub mod packed;
/// Savepoint auto-tags.
pub mod savepoint;
/// Shared handles on a storage or clock, and the boxed storage + clock pair.
pub mod shared;
/// Per-writer bookkeeping.
pub mod slots;
/// The coordinator's state bytes.
pub mod state_codec;
/// The table's snapshot log and tags.
pub mod table;
/// Plain values of the protocol.
pub mod types;
/// Versioned postcard encoding of persisted records.
pub mod wire;
/// The writer-side helper.
pub mod writer;
/// A writer-helper call as a value.
pub mod writer_call;

#[cfg(target_arch = "wasm32")]
mod bindings;
#[cfg(any(target_arch = "wasm32", test))]
mod heap;

pub use api::{
    events_one_by_one, ApplyResult, BatchFailure, BatchResult, CoordinatorApi, HostCallError,
    HostError, HostErrorKind, HostResult, NativeCoordinator, WriterApi,
};
pub use batch::{BatchError, WriterEvent};
pub use call::{Call, CallError, Reply};
pub use committables::Committables;
pub use coordinator::Coordinator;
pub use env::{AsEnv, Clock, Env, MemEnv, MemStorage, OwnedEnv, StepClock, Storage, StorageError};
pub use error::{Error, ErrorKind, ErrorReason, Result};
pub use limits::Limits;
pub use shared::{HostEnv, Shared};
pub use table::TableFormatKind;
pub use types::*;
pub use writer::Writer;
pub use writer_call::{WriterCall, WriterReply};
