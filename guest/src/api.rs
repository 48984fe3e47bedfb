//! The coordinator's calls as a host sees them, whatever runs the core:
//! the error a call returns to a host (the core's classes of SEMANTICS 8
//! plus `trap`, which only a host running the component can observe), the
//! [`CoordinatorApi`] and [`WriterApi`] traits that the native core
//! ([`NativeCoordinator`], [`Writer`]) and the component's handles (the
//! embedding crate) both implement, so that replay, the simulator and an
//! embedder choose between them in one place.

use std::fmt;

use crate::batch::Merged;
use crate::shared::HostEnv;
use crate::{
    Config, Coordinator, Entry, Error, ErrorKind, Lifecycle, Limits, Outcome, RestorePoint,
    StorageError, Writer, WriterEvent,
};

/// What went wrong in one coordinator, writer or table call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostErrorKind {
    /// An error the coordinator itself returned.
    Core(ErrorKind),
    /// The guest trapped (a bug, or a host-imposed fuel, memory or deadline
    /// limit). Fatal: the instance's Store is discarded.
    Trap,
}

impl HostErrorKind {
    /// The kebab-case name of TRACE-FORMAT (`declined`, ..., `trap`).
    pub fn name(self) -> &'static str {
        match self {
            HostErrorKind::Core(kind) => kind.name(),
            HostErrorKind::Trap => "trap",
        }
    }

    /// Fatal errors leave the instance `failed`.
    pub fn is_fatal(self) -> bool {
        match self {
            HostErrorKind::Core(kind) => kind.is_fatal(),
            HostErrorKind::Trap => true,
        }
    }
}

/// An error of a call made through the host (native or component).
///
/// On the native path a `storage` error keeps the storage failure it came
/// from as its [`source`](std::error::Error::source); through the component
/// only its text crosses (in the message), so equality ignores the source.
#[derive(Clone, Debug)]
pub struct HostError {
    /// The class: one of the core's, or `trap`.
    pub kind: HostErrorKind,
    /// What happened, in one line.
    pub message: String,
    source: Option<StorageError>,
}

impl HostError {
    /// An error of class `kind`.
    pub fn new(kind: HostErrorKind, message: impl Into<String>) -> Self {
        HostError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A guest trap.
    pub fn trap(message: impl Into<String>) -> Self {
        Self::new(HostErrorKind::Trap, message)
    }

    /// An error of one of the core's classes.
    pub fn core(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::new(HostErrorKind::Core(kind), message)
    }
}

impl From<Error> for HostError {
    fn from(e: Error) -> Self {
        HostError {
            kind: HostErrorKind::Core(e.kind),
            source: e.storage_source().cloned(),
            message: e.message,
        }
    }
}

impl PartialEq for HostError {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for HostError {}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// The result of a call made through the host.
pub type HostResult<T> = Result<T, HostError>;

/// A batch of writer events (`events`) stopped at an error: the events
/// before the failing one stay applied, the later ones were not looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchFailure {
    /// How many events were applied: the failing event's index. After a
    /// `declined` or `storage` error the instance stays usable and the host
    /// resends the events from this index (a `storage` error accepted the
    /// failing event's input; repeating it is safe). After a trap, 0: the
    /// instance is discarded and nothing is resent to it.
    pub applied: usize,
    /// What the applied events did, merged (committed snapshots, tags,
    /// restart-required), with the state and committed-up-to after the
    /// failing event.
    pub outcome: Outcome,
    /// The failing event's error.
    pub error: HostError,
}

impl From<Box<crate::BatchError>> for Box<BatchFailure> {
    fn from(e: Box<crate::BatchError>) -> Self {
        let e = *e;
        Box::new(BatchFailure {
            applied: e.applied,
            outcome: e.outcome,
            error: e.error.into(),
        })
    }
}

impl fmt::Display for BatchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {} of the batch: {}", self.applied, self.error)
    }
}

impl std::error::Error for BatchFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The result of a batch of writer events (the failure boxed: it is rare,
/// and large).
pub type BatchResult = Result<Outcome, Box<BatchFailure>>;

// ---------------------------------------------------------------------------
// The calls, whatever runs them
// ---------------------------------------------------------------------------

/// The calls of one coordinator instance (SEMANTICS), whatever runs it.
pub trait CoordinatorApi {
    /// The lifecycle state; `Failed` after a trap.
    fn state(&mut self) -> Lifecycle;
    /// `start`: a fresh instance starts, a restored one begins recovery
    /// (it waits for the writers' `restored` events).
    fn start(&mut self) -> HostResult<Outcome>;
    /// A writer's committable event for `entry.checkpoint` (or END).
    fn event(&mut self, subtask: u32, attempt: u32, entry: Entry) -> HostResult<Outcome>;
    /// Many writer events in one call (WIT `events`, 0.2.1): applied in
    /// order as [`Self::event`] would, stopping at the first error, with one
    /// merged outcome. By default a loop over `event` (the native core and
    /// the component override it with their own batch).
    fn events(&mut self, events: Vec<WriterEvent>) -> BatchResult {
        let mut merged = Merged::new(self.state(), self.committed_up_to());
        for (i, e) in events.into_iter().enumerate() {
            match self.event(e.subtask, e.attempt, e.entry) {
                Ok(o) => merged.add(o),
                Err(error) => {
                    let (state, up_to) = (self.state(), self.committed_up_to());
                    return Err(Box::new(BatchFailure {
                        applied: i,
                        outcome: merged.after(state, up_to),
                        error,
                    }));
                }
            }
        }
        Ok(merged.finish())
    }
    /// A writer restored from `checkpoint` replays the entries its state
    /// holds (SEMANTICS 6).
    fn restored(
        &mut self,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    ) -> HostResult<Outcome>;
    /// Region failover: `subtask` restarts from `checkpoint` (`None`: from
    /// scratch); what it reported after that point is discarded.
    fn subtask_reset(&mut self, subtask: u32, checkpoint: Option<u64>) -> HostResult<Outcome>;
    /// Takes the coordinator's state for `checkpoint`: the bytes a later
    /// instance is restored from.
    fn checkpoint(&mut self, checkpoint: u64) -> HostResult<Vec<u8>>;
    /// `checkpoint` completed: commits what it covers (SEMANTICS 5).
    fn checkpoint_complete(&mut self, checkpoint: u64) -> HostResult<Outcome>;
    /// `checkpoint` was aborted: its savepoint tag, if any, is deleted.
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<Outcome>;
    /// Ends the instance; no call but the query is accepted afterwards.
    fn close(&mut self) -> HostResult<Outcome>;
    /// Committed-up-to (SEMANTICS 5.5), answered in every state. For an
    /// instance whose component trapped: the last value the host received
    /// (an outcome or an earlier answer); for one that never got created,
    /// `None`.
    fn committed_up_to(&mut self) -> Option<u64>;
}

/// The writer-side helper (SEMANTICS 11), whatever runs it.
pub trait WriterApi {
    /// Buffers what the writer produced for `checkpoint` and returns the
    /// entry to send to the coordinator.
    fn report(
        &mut self,
        checkpoint: u64,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        savepoint: bool,
    ) -> HostResult<Entry>;
    /// The input ended: buffers and returns the writer's END entry.
    fn end_input(
        &mut self,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
    ) -> HostResult<Entry>;
    /// The coordinator's committed-up-to `u`, forwarded: drops buffered
    /// ordinary entries `<= u` (and the END entry at END).
    fn committed(&mut self, u: u64) -> HostResult<()>;
    /// `checkpoint` was aborted: clears the savepoint flag of its entry, so
    /// that no stale flag is persisted.
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<()>;
    /// The writer's state bytes: every buffered entry not yet seen
    /// committed, taken with each checkpoint.
    fn state(&mut self) -> HostResult<Vec<u8>>;
    /// Restores the state taken at `checkpoint`; returns the entries to
    /// send in the `restored` event.
    fn restore(&mut self, state: &[u8], checkpoint: u64) -> HostResult<Vec<Entry>>;
}

impl WriterApi for Writer {
    fn report(
        &mut self,
        checkpoint: u64,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        savepoint: bool,
    ) -> HostResult<Entry> {
        Ok(Writer::report(
            self,
            checkpoint,
            committables,
            watermark,
            savepoint,
        )?)
    }
    fn end_input(
        &mut self,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
    ) -> HostResult<Entry> {
        Ok(Writer::end_input(self, committables, watermark)?)
    }
    fn committed(&mut self, u: u64) -> HostResult<()> {
        Ok(Writer::committed(self, u)?)
    }
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<()> {
        Ok(Writer::checkpoint_aborted(self, checkpoint)?)
    }
    fn state(&mut self) -> HostResult<Vec<u8>> {
        Ok(Writer::state(self))
    }
    fn restore(&mut self, state: &[u8], checkpoint: u64) -> HostResult<Vec<Entry>> {
        Ok(Writer::restore(self, state, checkpoint)?)
    }
}

/// The native core with the storage and clock it runs against.
pub struct NativeCoordinator {
    inner: Coordinator,
    env: HostEnv,
}

impl NativeCoordinator {
    /// [`Self::new`] with size limits other than the defaults (WIT
    /// `set-limits`, applied while the instance is `created`).
    pub fn with_limits(
        config: Config,
        restore: Option<RestorePoint>,
        env: HostEnv,
        limits: Limits,
    ) -> HostResult<Self> {
        let mut coordinator = Self::new(config, restore, env);
        if limits != Limits::default() {
            coordinator.inner.set_limits(limits)?;
        }
        Ok(coordinator)
    }

    /// A new instance in `created` state, restored from `restore` when
    /// `start` is called.
    pub fn new(config: Config, restore: Option<RestorePoint>, env: HostEnv) -> Self {
        NativeCoordinator {
            inner: Coordinator::new(config, restore),
            env,
        }
    }
}

impl CoordinatorApi for NativeCoordinator {
    fn state(&mut self) -> Lifecycle {
        self.inner.state()
    }
    fn start(&mut self) -> HostResult<Outcome> {
        Ok(self.inner.start(&mut self.env)?)
    }
    fn event(&mut self, subtask: u32, attempt: u32, entry: Entry) -> HostResult<Outcome> {
        Ok(self.inner.event(&mut self.env, subtask, attempt, entry)?)
    }
    fn events(&mut self, events: Vec<WriterEvent>) -> BatchResult {
        Ok(crate::batch::events(
            &mut self.inner,
            &mut self.env,
            events,
        )?)
    }
    fn restored(
        &mut self,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    ) -> HostResult<Outcome> {
        Ok(self
            .inner
            .restored(&mut self.env, subtask, attempt, checkpoint, entries)?)
    }
    fn subtask_reset(&mut self, subtask: u32, checkpoint: Option<u64>) -> HostResult<Outcome> {
        Ok(self
            .inner
            .subtask_reset(&mut self.env, subtask, checkpoint)?)
    }
    fn checkpoint(&mut self, checkpoint: u64) -> HostResult<Vec<u8>> {
        Ok(self.inner.checkpoint(&mut self.env, checkpoint)?)
    }
    fn checkpoint_complete(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        Ok(self.inner.checkpoint_complete(&mut self.env, checkpoint)?)
    }
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        Ok(self.inner.checkpoint_aborted(&mut self.env, checkpoint)?)
    }
    fn close(&mut self) -> HostResult<Outcome> {
        Ok(self.inner.close(&mut self.env)?)
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        self.inner.committed_up_to()
    }
}
