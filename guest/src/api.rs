//! The coordinator's calls as a host sees them, whatever runs the core:
//! the error a call returns to a host (the core's classes of SEMANTICS 8
//! plus `trap`, which only a host running the component can observe), the
//! [`CoordinatorApi`] and [`WriterApi`] traits that the native core
//! ([`NativeCoordinator`], [`Writer`]) and the component's handles (the
//! embedding crate) both implement, so that replay, the simulator and an
//! embedder choose between them in one place.

use std::fmt;

use crate::batch::Merged;
use crate::call::{Call, CallError, Reply};
use crate::shared::HostEnv;
use crate::writer_call::{WriterCall, WriterReply};
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
            message: e.message(),
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

/// Why a call made through the host failed: one error, or a batch of
/// writer events stopped at one of its events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostCallError {
    /// The call's error.
    Call(HostError),
    /// `events`: the failing event, how many were applied, their outcome.
    Batch(Box<BatchFailure>),
}

impl HostCallError {
    /// The error (a batch's: its failing event's).
    pub fn error(&self) -> &HostError {
        match self {
            HostCallError::Call(e) => e,
            HostCallError::Batch(b) => &b.error,
        }
    }
}

impl From<HostError> for HostCallError {
    fn from(e: HostError) -> Self {
        HostCallError::Call(e)
    }
}

impl From<CallError> for HostCallError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Call(e) => HostCallError::Call(e.into()),
            CallError::Batch(b) => HostCallError::Batch(b.into()),
        }
    }
}

impl fmt::Display for HostCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostCallError::Call(e) => write!(f, "{e}"),
            HostCallError::Batch(b) => write!(f, "{b}"),
        }
    }
}

impl std::error::Error for HostCallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.error())
    }
}

/// The result of [`CoordinatorApi::apply`].
pub type ApplyResult = Result<Reply, HostCallError>;

/// A reply that must be an outcome. Only a host whose `apply` answers a
/// call with the wrong kind of reply (a bug in that host) gets the error.
fn want_outcome(call: &'static str, r: ApplyResult) -> HostResult<Outcome> {
    match r {
        Ok(Reply::Outcome(o)) => Ok(o),
        Ok(Reply::State(_)) => Err(HostError::trap(format!(
            "the host answered `{call}` with state bytes instead of an outcome"
        ))),
        Err(HostCallError::Call(e)) => Err(e),
        Err(HostCallError::Batch(b)) => Err(b.error),
    }
}

/// The calls of one coordinator instance (SEMANTICS), whatever runs it.
///
/// An implementation provides [`Self::apply`] (one arm per [`Call`]) and
/// the two queries; the typed methods are provided on top of `apply`, so a
/// caller holding a [`Call`] value and one calling `start()` reach the same
/// code.
pub trait CoordinatorApi {
    /// The lifecycle state; `Failed` after a trap.
    fn state(&mut self) -> Lifecycle;
    /// Committed-up-to (SEMANTICS 5.5), answered in every state. For an
    /// instance whose component trapped: the last value the host received
    /// (an outcome or an earlier answer); for one that never got created,
    /// `None`.
    fn committed_up_to(&mut self) -> Option<u64>;
    /// Makes `call`: [`Reply::State`] for `checkpoint`, an outcome for
    /// every other call; a batch's failure as [`HostCallError::Batch`].
    fn apply(&mut self, call: Call) -> ApplyResult;

    /// `start`: a fresh instance starts, a restored one begins recovery
    /// (it waits for the writers' `restored` events).
    fn start(&mut self) -> HostResult<Outcome> {
        want_outcome("start", self.apply(Call::Start))
    }
    /// A writer's committable event for `entry.checkpoint` (or END).
    fn event(&mut self, subtask: u32, attempt: u32, entry: Entry) -> HostResult<Outcome> {
        let call = Call::Event {
            subtask,
            attempt,
            entry,
        };
        want_outcome("event", self.apply(call))
    }
    /// Many writer events in one call (WIT `events`, 0.2.1): applied in
    /// order as [`Self::event`] would, stopping at the first error, with one
    /// merged outcome.
    fn events(&mut self, events: Vec<WriterEvent>) -> BatchResult {
        match self.apply(Call::Events(events)) {
            Ok(Reply::Outcome(o)) => Ok(o),
            Err(HostCallError::Batch(b)) => Err(b),
            other => {
                // Not a batch's answer (a host bug): nothing is known to
                // have been applied.
                let error = match other {
                    Err(HostCallError::Call(e)) => e,
                    _ => HostError::trap("the host answered `events` with state bytes"),
                };
                let (state, up_to) = (self.state(), self.committed_up_to());
                Err(Box::new(BatchFailure {
                    applied: 0,
                    outcome: Merged::new(state, up_to).finish(),
                    error,
                }))
            }
        }
    }
    /// A writer restored from `checkpoint` replays the entries its state
    /// holds (SEMANTICS 6).
    fn restored(
        &mut self,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    ) -> HostResult<Outcome> {
        let call = Call::Restored {
            subtask,
            attempt,
            checkpoint,
            entries,
        };
        want_outcome("restored", self.apply(call))
    }
    /// Region failover: `subtask` restarts from `checkpoint` (`None`: from
    /// scratch); what it reported after that point is discarded.
    fn subtask_reset(&mut self, subtask: u32, checkpoint: Option<u64>) -> HostResult<Outcome> {
        let call = Call::SubtaskReset {
            subtask,
            checkpoint,
        };
        want_outcome("subtask-reset", self.apply(call))
    }
    /// Takes the coordinator's state for `checkpoint`: the bytes a later
    /// instance is restored from.
    fn checkpoint(&mut self, checkpoint: u64) -> HostResult<Vec<u8>> {
        match self.apply(Call::Checkpoint(checkpoint)) {
            Ok(Reply::State(b)) => Ok(b),
            Ok(Reply::Outcome(_)) => Err(HostError::trap(
                "the host answered `checkpoint` with an outcome instead of state bytes",
            )),
            Err(e) => Err(e.error().clone()),
        }
    }
    /// `checkpoint` completed: commits what it covers (SEMANTICS 5).
    fn checkpoint_complete(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        let call = Call::CheckpointComplete(checkpoint);
        want_outcome("checkpoint-complete", self.apply(call))
    }
    /// `checkpoint` was aborted: its savepoint tag, if any, is deleted.
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        let call = Call::CheckpointAborted(checkpoint);
        want_outcome("checkpoint-aborted", self.apply(call))
    }
    /// Ends the instance; no call but the query is accepted afterwards.
    fn close(&mut self) -> HostResult<Outcome> {
        want_outcome("close", self.apply(Call::Close))
    }
}

/// `events` for a host without a batch call of its own (a recorder, a
/// playback, an old component): the events one `event` call each, stopping
/// at the first error, merged as the batch call merges them.
pub fn events_one_by_one<A: CoordinatorApi + ?Sized>(
    api: &mut A,
    events: Vec<WriterEvent>,
) -> ApplyResult {
    let mut merged = Merged::new(api.state(), api.committed_up_to());
    for (i, e) in events.into_iter().enumerate() {
        match api.event(e.subtask, e.attempt, e.entry) {
            Ok(o) => merged.add(o),
            Err(error) => {
                let (state, up_to) = (api.state(), api.committed_up_to());
                return Err(HostCallError::Batch(Box::new(BatchFailure {
                    applied: i,
                    outcome: merged.after(state, up_to),
                    error,
                })));
            }
        }
    }
    Ok(Reply::Outcome(merged.finish()))
}

/// A writer reply of the kind `pick` takes. Only a host whose `apply`
/// answers a call with the wrong kind of reply (a bug in that host) gets the
/// error.
fn want<T>(
    call: &'static str,
    r: HostResult<WriterReply>,
    pick: fn(WriterReply) -> Option<T>,
) -> HostResult<T> {
    pick(r?).ok_or_else(|| {
        HostError::trap(format!(
            "the host answered the writer's `{call}` with the wrong kind of reply"
        ))
    })
}

fn entry_of(r: WriterReply) -> Option<Entry> {
    match r {
        WriterReply::Entry(e) => Some(e),
        _ => None,
    }
}

/// The writer-side helper (SEMANTICS 11), whatever runs it.
///
/// An implementation provides [`Self::apply`] (one arm per [`WriterCall`]);
/// the typed methods are provided on top of it, as for [`CoordinatorApi`].
pub trait WriterApi {
    /// Makes `call`: the reply of its kind ([`WriterReply`]).
    fn apply(&mut self, call: WriterCall<'_>) -> HostResult<WriterReply>;

    /// Buffers what the writer produced for `checkpoint` and returns the
    /// entry to send to the coordinator.
    fn report(
        &mut self,
        checkpoint: u64,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        savepoint: bool,
    ) -> HostResult<Entry> {
        let call = WriterCall::Report {
            checkpoint,
            committables,
            watermark,
            savepoint,
        };
        want("report", self.apply(call), entry_of)
    }
    /// The input ended: buffers and returns the writer's END entry.
    fn end_input(
        &mut self,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
    ) -> HostResult<Entry> {
        let call = WriterCall::EndInput {
            committables,
            watermark,
        };
        want("end-input", self.apply(call), entry_of)
    }
    /// The coordinator's committed-up-to `u`, forwarded: drops buffered
    /// ordinary entries `<= u` (and the END entry at END).
    fn committed(&mut self, u: u64) -> HostResult<()> {
        let done = |r| matches!(r, WriterReply::Done).then_some(());
        want("committed", self.apply(WriterCall::Committed(u)), done)
    }
    /// `checkpoint` was aborted: clears the savepoint flag of its entry, so
    /// that no stale flag is persisted.
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<()> {
        let done = |r| matches!(r, WriterReply::Done).then_some(());
        let r = self.apply(WriterCall::CheckpointAborted(checkpoint));
        want("checkpoint-aborted", r, done)
    }
    /// The writer's state bytes: every buffered entry not yet seen
    /// committed, taken with each checkpoint.
    fn state(&mut self) -> HostResult<Vec<u8>> {
        let bytes = |r| match r {
            WriterReply::State(b) => Some(b),
            _ => None,
        };
        want("state", self.apply(WriterCall::State), bytes)
    }
    /// Restores the state taken at `checkpoint`; returns the entries to
    /// send in the `restored` event.
    fn restore(&mut self, state: &[u8], checkpoint: u64) -> HostResult<Vec<Entry>> {
        let entries = |r| match r {
            WriterReply::Entries(e) => Some(e),
            _ => None,
        };
        let r = self.apply(WriterCall::Restore { state, checkpoint });
        want("restore", r, entries)
    }
}

impl WriterApi for Writer {
    fn apply(&mut self, call: WriterCall<'_>) -> HostResult<WriterReply> {
        Ok(Writer::apply(self, call)?)
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

    /// Chooses the table format (host configuration, as
    /// [`Coordinator::set_table_format`]: only while `created`; `invalid-config`
    /// for a format this build lacks, e.g. Paimon without the `paimon` feature).
    pub fn set_table_format(&mut self, kind: crate::table::TableFormatKind) -> HostResult<()> {
        Ok(self.inner.set_table_format(kind)?)
    }
}

impl CoordinatorApi for NativeCoordinator {
    fn state(&mut self) -> Lifecycle {
        self.inner.state()
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        self.inner.committed_up_to()
    }
    fn apply(&mut self, call: Call) -> ApplyResult {
        Ok(self.inner.apply(&mut self.env, call)?)
    }
}
