//! Typed handles on the component's exports, speaking the core's Rust types:
//! [`ComponentCoordinator`] (resource `coordinator`), [`ComponentWriter`]
//! (resource `writer`) and [`ComponentTable`] (interface `table`).
//!
//! Each handle owns one Store. A guest trap (a bug, or the fuel / memory
//! limit) is reported as [`HostErrorKind::Trap`](crate::error::HostErrorKind)
//! and the Store is dropped: wasmtime never lets a Store that trapped enter
//! the component again, and SEMANTICS 8 says the instance is discarded. A
//! discarded coordinator reports `failed` and answers like any failed
//! instance (`illegal-state`, `close` succeeds) without entering the guest;
//! its committed-up-to is the last value the host received before the trap.

#![warn(missing_docs)]

use sink_coordinator::{
    Config, Entry, ErrorKind, FinalCommitMode, Lifecycle, Limits, Outcome, RecoveryMode,
    RestorePoint, Snapshot, Tag,
};
use wasmtime::component::ResourceAny;
use wasmtime::Store;

use crate::engine::{wit, Bindings, Runtime, StoreData};
use crate::env::HostEnv;
use crate::error::{HostError, HostResult};

/// `events` and `events-packed`: batches of writer events.
mod api;
mod batch;
/// `set-table-format` (0.2.5).
mod format;
/// [`ComponentTable`]: the `table` interface, read in bounded pages.
mod table;

pub use batch::PackedEventRef;
pub use table::{ComponentTable, TAG_PAGE};

// ---------------------------------------------------------------------------
// One Store and its instance
// ---------------------------------------------------------------------------

/// A Store with its instantiated component, until a trap discards both.
struct Instance {
    runtime: Runtime,
    live: Option<(Store<StoreData>, Bindings)>,
    /// The Store's environment, recovered after a trap (tables reuse it).
    discarded_env: Option<HostEnv>,
    fuel_per_call: Option<u64>,
    /// The trap that discarded the Store.
    trap: Option<String>,
}

impl Instance {
    fn new(runtime: &Runtime, env: HostEnv) -> HostResult<Self> {
        let (store, bindings) = runtime.instantiate(env).map_err(|e| {
            HostError::trap(trap_message(
                "instantiation",
                &e,
                runtime.options().call_deadline,
            ))
        })?;
        Ok(Instance {
            runtime: runtime.clone(),
            live: Some((store, bindings)),
            discarded_env: None,
            fuel_per_call: runtime.options().fuel_per_call,
            trap: None,
        })
    }

    fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// The Store's environment (the live Store's, or the one recovered
    /// after a trap): for host-side reads of the same storage.
    fn env_mut(&mut self) -> Option<&mut HostEnv> {
        match self.live.as_mut() {
            Some((store, _)) => Some(&mut store.data_mut().env),
            None => self.discarded_env.as_mut(),
        }
    }

    /// Calls into the guest with a fresh fuel budget. A guest-level error
    /// becomes a core error; a trap discards the Store.
    fn call<R>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Store<StoreData>, &Bindings) -> wasmtime::Result<Result<R, wit::Error>>,
    ) -> HostResult<R> {
        let Some((store, bindings)) = self.live.as_mut() else {
            return Err(self.discarded(what));
        };
        let result = self
            .runtime
            .refuel(store, self.fuel_per_call)
            .and_then(|()| f(store, bindings));
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(from_wit_error(e)),
            Err(e) => {
                let message = trap_message(what, &e, self.runtime.options().call_deadline);
                if let Some((store, _)) = self.live.take() {
                    self.discarded_env = Some(store.into_data().env);
                }
                self.trap = Some(message.clone());
                Err(HostError::trap(message))
            }
        }
    }

    /// Like `call`, for guest functions that cannot return an error.
    fn call_infallible<R>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Store<StoreData>, &Bindings) -> wasmtime::Result<R>,
    ) -> HostResult<R> {
        self.call(what, |store, bindings| f(store, bindings).map(Ok))
    }

    /// Discards the Store as a trap would (the batch fallback's fatal
    /// error that the guest never saw); later calls report `reason`.
    fn discard(&mut self, reason: &str) {
        if let Some((store, _)) = self.live.take() {
            self.discarded_env = Some(store.into_data().env);
        }
        self.trap = Some(reason.to_string());
    }

    /// The error of a call on a discarded Store (`illegal-state`, as for any
    /// failed instance; nothing enters the guest).
    fn discarded(&self, what: &str) -> HostError {
        HostError::core(
            ErrorKind::IllegalState,
            format!(
                "{what}: the instance was discarded after a guest trap ({})",
                self.trap.as_deref().unwrap_or("unknown trap")
            ),
        )
    }
}

fn trap_message(what: &str, e: &wasmtime::Error, deadline: Option<std::time::Duration>) -> String {
    match e.downcast_ref::<wasmtime::Trap>() {
        // The epoch deadline is the only interrupt this host arms.
        Some(wasmtime::Trap::Interrupt) => format!(
            "guest trapped in {what}: the call exceeded its deadline of {} ms",
            deadline.map_or(0, |d| d.as_millis())
        ),
        // `{e:#}` is `{trap}` plus the wasm backtrace when one was captured
        // (`RuntimeOptions::wasm_backtrace`, `sinkcoord --verbose`).
        Some(_) => format!("guest trapped in {what}: {e:#}"),
        None => format!("guest failed in {what}: {e:#}"),
    }
}

// ---------------------------------------------------------------------------
// Coordinator
// ---------------------------------------------------------------------------

/// One coordinator instance running in the component, in its own Store.
pub struct ComponentCoordinator {
    instance: Instance,
    handle: ResourceAny,
    /// The committed-up-to of the last outcome or query (SEMANTICS 5.5):
    /// what the host knows once a trap discarded the Store.
    known_up_to: Option<u64>,
    /// The lowered events of the last `event` or `events` call, kept so that
    /// the next call copies its committables into their buffers instead of
    /// allocating (and later freeing) one vector per committable: the core
    /// holds each entry's committables packed (`Committables`), the WIT
    /// takes them as `list<list<u8>>`.
    scratch: Vec<wit::WriterEvent>,
    /// `events-packed` through wasmtime's derived lowering instead of the
    /// hand-written one (see `component/batch.rs`).
    derived_lowering: bool,
    /// The last batch's `events-block` bytes, kept for their buffer.
    block: Vec<u8>,
    /// Batches through `events-packed` even when the component has
    /// `events-block` (see `component/batch.rs`).
    avoid_block: bool,
}

impl ComponentCoordinator {
    /// Instantiates the component over `env` and constructs a coordinator
    /// (state `created`) with the runtime's size limits
    /// ([`RuntimeOptions::limits`](crate::RuntimeOptions), from which the
    /// runtime's wasmtime limits derive). Fails only with a trap, or with
    /// `invalid-config` for limits out of range.
    pub fn new(
        runtime: &Runtime,
        env: HostEnv,
        config: &Config,
        restore: Option<&RestorePoint>,
    ) -> HostResult<Self> {
        let mut instance = Instance::new(runtime, env)?;
        let config = to_wit_config(config);
        let restore = restore.map(to_wit_restore);
        let handle = instance.call_infallible("the coordinator constructor", |store, b| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_constructor(store, &config, restore.as_ref())
        })?;
        let mut coordinator = ComponentCoordinator {
            instance,
            handle,
            known_up_to: None,
            scratch: Vec::new(),
            derived_lowering: runtime.options().derived_lowering
                || !cfg!(feature = "hand-lowering"),
            block: Vec::new(),
            avoid_block: true,
        };
        let limits = runtime.options().limits;
        if limits != Limits::default() {
            coordinator.set_limits(&limits)?;
        }
        let format = runtime.options().table_format;
        if format != sink_coordinator::TableFormatKind::Native {
            coordinator.set_table_format(format)?;
        }
        Ok(coordinator)
    }

    /// Sets the size limits (WIT `set-limits`): only while `created`.
    pub fn set_limits(&mut self, limits: &Limits) -> HostResult<()> {
        let handle = self.handle;
        let limits = wit::Limits {
            max_committable_bytes: limits.max_committable_bytes,
            max_event_bytes: limits.max_event_bytes,
            max_snapshot_bytes: limits.max_snapshot_bytes,
        };
        self.instance.call("set-limits", |store, b| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_set_limits(store, handle, limits)
        })
    }

    /// Fuel granted to each later call (only when the runtime meters fuel,
    /// see [`Self::meters_fuel`]).
    pub fn set_fuel_per_call(&mut self, fuel: u64) {
        self.instance.fuel_per_call = Some(fuel);
    }

    /// Whether the runtime meters fuel (`RuntimeOptions::fuel_per_call`),
    /// so that [`Self::set_fuel_per_call`] takes effect.
    pub fn meters_fuel(&self) -> bool {
        self.instance.runtime.options().fuel_per_call.is_some()
    }

    /// True once a trap discarded this instance's Store.
    pub fn is_discarded(&self) -> bool {
        !self.instance.is_live()
    }

    /// The lifecycle state; `failed` once discarded (a trap here discards too).
    pub fn state(&mut self) -> Lifecycle {
        if !self.instance.is_live() {
            return Lifecycle::Failed;
        }
        let handle = self.handle;
        self.instance
            .call_infallible("state", |store, b| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_state(store, handle)
            })
            .map_or(Lifecycle::Failed, from_wit_lifecycle)
    }

    fn outcome_call(
        &mut self,
        what: &str,
        f: impl FnOnce(
            &mut Store<StoreData>,
            &Bindings,
            ResourceAny,
        ) -> wasmtime::Result<Result<wit::Outcome, wit::Error>>,
    ) -> HostResult<Outcome> {
        let handle = self.handle;
        let outcome = self
            .instance
            .call(what, |store, b| f(store, b, handle))
            .map(from_wit_outcome)?;
        self.known_up_to = outcome.committed_up_to;
        Ok(outcome)
    }

    /// Committed-up-to (SEMANTICS 5.5), answered in every state. Once a trap
    /// discarded the Store (also when this query traps), the value of the
    /// last outcome or query the host received: the guest's value can only
    /// have grown since, so the last known one is still true (a stale
    /// committed-up-to only keeps writer entries longer).
    pub fn committed_up_to(&mut self) -> Option<u64> {
        if !self.instance.is_live() {
            return self.known_up_to;
        }
        let handle = self.handle;
        if let Ok(u) = self
            .instance
            .call_infallible("committed-up-to", |store, b| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_committed_up_to(store, handle)
            })
        {
            self.known_up_to = u;
        }
        self.known_up_to
    }

    /// `start` (see `Coordinator::start`).
    pub fn start(&mut self) -> HostResult<Outcome> {
        self.outcome_call("start", |s, b, h| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_start(s, h)
        })
    }

    /// `event`: a writer's committable event.
    pub fn event(&mut self, subtask: u32, attempt: u32, entry: Entry) -> HostResult<Outcome> {
        let mut scratch = std::mem::take(&mut self.scratch);
        lower_events(&mut scratch, std::iter::once((subtask, attempt, &entry)));
        let fallback;
        let lowered = match scratch.first() {
            Some(event) => &event.entry,
            None => {
                // Not reached: `lower_events` lowered the one event.
                fallback = to_wit_entry(entry);
                &fallback
            }
        };
        let result = self.outcome_call("event", |s, b, h| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_event(s, h, subtask, attempt, lowered)
        });
        self.scratch = scratch;
        result
    }

    /// `restored`: a writer's replay after restoring from `checkpoint`.
    pub fn restored(
        &mut self,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    ) -> HostResult<Outcome> {
        let entries: Vec<wit::Entry> = entries.into_iter().map(to_wit_entry).collect();
        self.outcome_call("restored", |s, b, h| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_restored(s, h, subtask, attempt, checkpoint, &entries)
        })
    }

    /// `subtask-reset`: region failover of one writer.
    pub fn subtask_reset(&mut self, subtask: u32, checkpoint: Option<u64>) -> HostResult<Outcome> {
        self.outcome_call("subtask-reset", |s, b, h| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_subtask_reset(s, h, subtask, checkpoint)
        })
    }

    /// `checkpoint`: the coordinator's state bytes.
    pub fn checkpoint(&mut self, checkpoint: u64) -> HostResult<Vec<u8>> {
        let handle = self.handle;
        self.instance.call("checkpoint", |s, b| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_checkpoint(s, handle, checkpoint)
        })
    }

    /// `checkpoint-complete`: runs the commit rule.
    pub fn checkpoint_complete(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        self.outcome_call("checkpoint-complete", |s, b, h| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_checkpoint_complete(s, h, checkpoint)
        })
    }

    /// `checkpoint-aborted`.
    pub fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        self.outcome_call("checkpoint-aborted", |s, b, h| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_checkpoint_aborted(s, h, checkpoint)
        })
    }

    /// What a failed instance reports: nothing committed, the last
    /// committed-up-to this handle saw.
    fn failed_outcome(&self) -> Outcome {
        Outcome {
            state: Lifecycle::Failed,
            committed: Vec::new(),
            tags_created: Vec::new(),
            tags_deleted: Vec::new(),
            restart_required: false,
            committed_up_to: self.known_up_to,
        }
    }

    /// Closes the instance. On a discarded instance this succeeds and
    /// reports `failed`, like `close` on any failed instance.
    pub fn close(&mut self) -> HostResult<Outcome> {
        if !self.instance.is_live() {
            return Ok(self.failed_outcome());
        }
        self.outcome_call("close", |s, b, h| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_close(s, h)
        })
    }
}

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------

/// The writer-side helper (SEMANTICS 11) running in the component. It uses
/// neither storage nor time, so its Store gets a detached environment.
pub struct ComponentWriter {
    instance: Instance,
    handle: ResourceAny,
}

impl ComponentWriter {
    /// A writer for subtask `subtask`, in its own Store.
    pub fn new(runtime: &Runtime, subtask: u32) -> HostResult<Self> {
        let mut instance = Instance::new(runtime, HostEnv::detached())?;
        let handle = instance.call_infallible("the writer constructor", |store, b| {
            b.sink_coordinator_writer()
                .writer()
                .call_constructor(store, subtask)
        })?;
        Ok(ComponentWriter { instance, handle })
    }

    /// True once a trap discarded this writer's Store.
    pub fn is_discarded(&self) -> bool {
        !self.instance.is_live()
    }

    /// Buffers the entry for `checkpoint` and returns the event to send.
    pub fn report(
        &mut self,
        checkpoint: u64,
        committables: &[Vec<u8>],
        watermark: Option<i64>,
        savepoint: bool,
    ) -> HostResult<Entry> {
        let h = self.handle;
        self.instance
            .call("writer report", |s, b| {
                b.sink_coordinator_writer().writer().call_report(
                    s,
                    h,
                    checkpoint,
                    committables,
                    watermark,
                    savepoint,
                )
            })
            .map(from_wit_entry)
    }

    /// The END entry to send.
    pub fn end_input(
        &mut self,
        committables: &[Vec<u8>],
        watermark: Option<i64>,
    ) -> HostResult<Entry> {
        let h = self.handle;
        self.instance
            .call("writer end-input", |s, b| {
                b.sink_coordinator_writer()
                    .writer()
                    .call_end_input(s, h, committables, watermark)
            })
            .map(from_wit_entry)
    }

    /// The coordinator's committed-up-to, forwarded (SEMANTICS 11): drops
    /// the buffered ordinary entries `<= u` (and the END entry at END).
    pub fn committed(&mut self, u: u64) -> HostResult<()> {
        let h = self.handle;
        self.instance.call("writer committed", |s, b| {
            b.sink_coordinator_writer().writer().call_committed(s, h, u)
        })
    }

    /// Clears the savepoint flag of entry `checkpoint`.
    pub fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<()> {
        let h = self.handle;
        self.instance.call("writer checkpoint-aborted", |s, b| {
            b.sink_coordinator_writer()
                .writer()
                .call_checkpoint_aborted(s, h, checkpoint)
        })
    }

    /// The writer's buffer as versioned bytes.
    pub fn state(&mut self) -> HostResult<Vec<u8>> {
        let h = self.handle;
        self.instance.call_infallible("writer state", |s, b| {
            b.sink_coordinator_writer().writer().call_state(s, h)
        })
    }

    /// Restores from `state` taken at `checkpoint`; returns the entries of
    /// the single `restored` event to send.
    pub fn restore(&mut self, state: &[u8], checkpoint: u64) -> HostResult<Vec<Entry>> {
        let h = self.handle;
        self.instance
            .call("writer restore", |s, b| {
                b.sink_coordinator_writer()
                    .writer()
                    .call_restore(s, h, state, checkpoint)
            })
            .map(|entries| entries.into_iter().map(from_wit_entry).collect())
    }
}

// ---------------------------------------------------------------------------
// Conversions between the WIT types and the core's types
// ---------------------------------------------------------------------------

fn to_wit_config(c: &Config) -> wit::Config {
    wit::Config {
        parallelism: c.parallelism,
        commit_user: c.commit_user.clone(),
        checkpointing: c.checkpointing,
        final_commit: match c.final_commit {
            FinalCommitMode::OnCheckpoint => wit::FinalCommitMode::OnCheckpoint,
            FinalCommitMode::OnEndInput => wit::FinalCommitMode::OnEndInput,
        },
        force_create_snapshot: c.force_create_snapshot,
        savepoint_auto_tag: c.savepoint_auto_tag,
        tag_time_retained_ms: c.tag_time_retained_ms,
        recovery: match c.recovery {
            RecoveryMode::Restart => wit::RecoveryMode::Restart,
            RecoveryMode::Continue => wit::RecoveryMode::Continue,
        },
    }
}

fn to_wit_restore(r: &RestorePoint) -> wit::RestorePoint {
    wit::RestorePoint {
        checkpoint: r.checkpoint,
        state: r.state.clone(),
        finished_subtasks: r.finished_subtasks.clone(),
    }
}

/// Lowers `events` into `out` (see `ComponentCoordinator::scratch`),
/// reusing its vectors: after the first call with entries of the same
/// shape, nothing is allocated.
fn lower_events<'a>(
    out: &mut Vec<wit::WriterEvent>,
    events: impl ExactSizeIterator<Item = (u32, u32, &'a Entry)>,
) {
    out.truncate(events.len());
    for (i, (subtask, attempt, e)) in events.enumerate() {
        if i == out.len() {
            out.push(wit::WriterEvent {
                subtask,
                attempt,
                entry: wit::Entry {
                    checkpoint: e.checkpoint,
                    committables: Vec::new(),
                    watermark: None,
                    savepoint: false,
                },
            });
        }
        let w = &mut out[i];
        w.subtask = subtask;
        w.attempt = attempt;
        w.entry.checkpoint = e.checkpoint;
        w.entry.watermark = e.watermark;
        w.entry.savepoint = e.savepoint;
        e.committables.copy_into(&mut w.entry.committables);
    }
}

fn to_wit_entry(e: Entry) -> wit::Entry {
    wit::Entry {
        checkpoint: e.checkpoint,
        committables: e.committables.to_vecs(),
        watermark: e.watermark,
        savepoint: e.savepoint,
    }
}

fn from_wit_entry(e: wit::Entry) -> Entry {
    Entry {
        checkpoint: e.checkpoint,
        committables: e.committables.into(),
        watermark: e.watermark,
        savepoint: e.savepoint,
    }
}

fn from_wit_lifecycle(l: wit::Lifecycle) -> Lifecycle {
    match l {
        wit::Lifecycle::Created => Lifecycle::Created,
        wit::Lifecycle::Restoring => Lifecycle::Restoring,
        wit::Lifecycle::Running => Lifecycle::Running,
        wit::Lifecycle::Closed => Lifecycle::Closed,
        wit::Lifecycle::Failed => Lifecycle::Failed,
    }
}

fn from_wit_outcome(o: wit::Outcome) -> Outcome {
    Outcome {
        state: from_wit_lifecycle(o.state),
        committed: o.committed,
        tags_created: o.tags_created,
        tags_deleted: o.tags_deleted,
        restart_required: o.restart_required,
        committed_up_to: o.committed_up_to,
    }
}

/// The compact outcome of a batch as the core's `Outcome` (empty lists
/// allocate nothing).
fn from_wit_batch_outcome(o: wit::BatchOutcome) -> Outcome {
    let (committed, tags_created, tags_deleted, restart_required) = match o.effects {
        Some(e) => (
            e.committed,
            e.tags_created,
            e.tags_deleted,
            e.restart_required,
        ),
        None => (Vec::new(), Vec::new(), Vec::new(), false),
    };
    Outcome {
        state: from_wit_lifecycle(o.state),
        committed,
        tags_created,
        tags_deleted,
        restart_required,
        committed_up_to: o.committed_up_to,
    }
}

fn from_wit_error(e: wit::Error) -> HostError {
    let kind = match e.kind {
        wit::ErrorKind::Declined => ErrorKind::Declined,
        wit::ErrorKind::Storage => ErrorKind::Storage,
        wit::ErrorKind::IllegalState => ErrorKind::IllegalState,
        wit::ErrorKind::InvalidEvent => ErrorKind::InvalidEvent,
        wit::ErrorKind::InvalidConfig => ErrorKind::InvalidConfig,
        wit::ErrorKind::CorruptState => ErrorKind::CorruptState,
    };
    HostError::core(kind, e.message)
}

fn from_wit_snapshot(s: wit::Snapshot) -> Snapshot {
    Snapshot {
        id: s.id,
        commit_user: s.commit_user,
        identifier: s.identifier,
        watermark: s.watermark,
        time_ms: s.time_ms,
        committables: s.committables,
    }
}

fn from_wit_tag(t: wit::Tag) -> Tag {
    Tag {
        name: t.name,
        snapshot_id: t.snapshot_id,
        identifier: t.identifier,
        create_time_ms: t.create_time_ms,
        expire_time_ms: t.expire_time_ms,
    }
}
