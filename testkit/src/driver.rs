//! One interface over the two ways of running the coordinator: the native
//! Rust core and the WebAssembly component. [`Engine`] is the one choice
//! between them that replay, the simulator, the call-script recorder and the
//! benchmarks make; each is written once against [`Driver`],
//! [`CoordinatorApi`] and [`WriterApi`].

use sink_coordinator::batch::Merged;
use sink_coordinator::{
    Clock, Config, Coordinator, Entry, Lifecycle, Limits, Outcome, RestorePoint, Snapshot, Storage,
    Tag, Writer, WriterEvent,
};

use sink_coordinator_host::component::{ComponentCoordinator, ComponentTable, ComponentWriter};
use sink_coordinator_host::engine::Runtime;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::error::{BatchFailure, BatchResult, HostError, HostResult};

/// Which implementation runs the coordinator and the writer helpers.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // a handful per run: boxing the runtime buys nothing
pub enum Engine {
    /// The Rust core linked into this process, with these size limits (the
    /// native twin of a runtime's [`RuntimeOptions::limits`](sink_coordinator_host::engine::RuntimeOptions)).
    Native(Limits),
    /// The component on this runtime (cheap to clone: reference counted);
    /// its options carry the size limits.
    Component(Runtime),
}

impl Engine {
    /// The native core with the default [`Limits`].
    pub const NATIVE: Engine = Engine::Native(Limits::DEFAULT);

    /// `native` or `component`, as runs, reports and messages name it.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Native(_) => "native",
            Engine::Component(_) => "component",
        }
    }

    /// Whether coordinators run in the component (traps can be injected).
    pub fn is_component(&self) -> bool {
        matches!(self, Engine::Component(_))
    }

    /// A [`Driver`] of this engine over a table and a clock.
    pub fn driver(
        &self,
        storage: Shared<dyn Storage + Send>,
        clock: Shared<dyn Clock + Send>,
    ) -> HostResult<Box<dyn Driver>> {
        Ok(match self {
            Engine::Native(limits) => {
                Box::new(NativeDriver::new(storage, clock).with_limits(*limits))
            }
            Engine::Component(runtime) => Box::new(ComponentDriver::new(runtime, storage, clock)?),
        })
    }
}

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

impl WriterApi for ComponentWriter {
    fn report(
        &mut self,
        checkpoint: u64,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        savepoint: bool,
    ) -> HostResult<Entry> {
        ComponentWriter::report(self, checkpoint, &committables, watermark, savepoint)
    }
    fn end_input(
        &mut self,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
    ) -> HostResult<Entry> {
        ComponentWriter::end_input(self, &committables, watermark)
    }
    fn committed(&mut self, u: u64) -> HostResult<()> {
        ComponentWriter::committed(self, u)
    }
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<()> {
        ComponentWriter::checkpoint_aborted(self, checkpoint)
    }
    fn state(&mut self) -> HostResult<Vec<u8>> {
        ComponentWriter::state(self)
    }
    fn restore(&mut self, state: &[u8], checkpoint: u64) -> HostResult<Vec<Entry>> {
        ComponentWriter::restore(self, state, checkpoint)
    }
}

/// Creates coordinator instances over one table and clock, and reads that
/// table through the same implementation (native or component).
pub trait Driver {
    /// A short name for messages: `native` or `component`.
    fn name(&self) -> &'static str;
    /// A new instance in `created` state. Fails only if the component traps
    /// in its constructor.
    fn create(
        &mut self,
        config: Config,
        restore: Option<RestorePoint>,
    ) -> HostResult<Box<dyn CoordinatorApi>>;
    /// A fresh writer helper for `subtask`.
    fn create_writer(&mut self, subtask: u32) -> HostResult<Box<dyn WriterApi>>;
    /// The table's snapshot `id`, if it exists (what a reader of the table
    /// sees).
    fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>>;
    /// Every snapshot of the table, by id.
    fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>>;
    /// Every tag of the table, by name.
    fn list_tags(&mut self) -> HostResult<Vec<Tag>>;
}

// ---------------------------------------------------------------------------
// Native
// ---------------------------------------------------------------------------

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
        Ok(sink_coordinator::batch::events(
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

impl CoordinatorApi for ComponentCoordinator {
    fn state(&mut self) -> Lifecycle {
        ComponentCoordinator::state(self)
    }
    fn start(&mut self) -> HostResult<Outcome> {
        ComponentCoordinator::start(self)
    }
    fn event(&mut self, subtask: u32, attempt: u32, entry: Entry) -> HostResult<Outcome> {
        ComponentCoordinator::event(self, subtask, attempt, entry)
    }
    fn events(&mut self, events: Vec<WriterEvent>) -> BatchResult {
        ComponentCoordinator::events(self, events)
    }
    fn restored(
        &mut self,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    ) -> HostResult<Outcome> {
        ComponentCoordinator::restored(self, subtask, attempt, checkpoint, entries)
    }
    fn subtask_reset(&mut self, subtask: u32, checkpoint: Option<u64>) -> HostResult<Outcome> {
        ComponentCoordinator::subtask_reset(self, subtask, checkpoint)
    }
    fn checkpoint(&mut self, checkpoint: u64) -> HostResult<Vec<u8>> {
        ComponentCoordinator::checkpoint(self, checkpoint)
    }
    fn checkpoint_complete(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        ComponentCoordinator::checkpoint_complete(self, checkpoint)
    }
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        ComponentCoordinator::checkpoint_aborted(self, checkpoint)
    }
    fn close(&mut self) -> HostResult<Outcome> {
        ComponentCoordinator::close(self)
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        ComponentCoordinator::committed_up_to(self)
    }
}

/// An instance whose creation trapped: it stays `failed` (SEMANTICS 2: calls
/// fail with `illegal-state`, `close` succeeds and changes nothing). It never
/// ran the commit rule: its committed-up-to is none.
pub struct FailedInstance;

impl FailedInstance {
    fn refuse<T>(&self) -> HostResult<T> {
        Err(HostError::core(
            sink_coordinator::ErrorKind::IllegalState,
            "the instance failed: its component trapped while it was created",
        ))
    }
}

impl CoordinatorApi for FailedInstance {
    fn state(&mut self) -> Lifecycle {
        Lifecycle::Failed
    }
    fn start(&mut self) -> HostResult<Outcome> {
        self.refuse()
    }
    fn event(&mut self, _: u32, _: u32, _: Entry) -> HostResult<Outcome> {
        self.refuse()
    }
    fn restored(&mut self, _: u32, _: u32, _: u64, _: Vec<Entry>) -> HostResult<Outcome> {
        self.refuse()
    }
    fn subtask_reset(&mut self, _: u32, _: Option<u64>) -> HostResult<Outcome> {
        self.refuse()
    }
    fn checkpoint(&mut self, _: u64) -> HostResult<Vec<u8>> {
        self.refuse()
    }
    fn checkpoint_complete(&mut self, _: u64) -> HostResult<Outcome> {
        self.refuse()
    }
    fn checkpoint_aborted(&mut self, _: u64) -> HostResult<Outcome> {
        self.refuse()
    }
    fn close(&mut self) -> HostResult<Outcome> {
        Ok(Outcome {
            state: Lifecycle::Failed,
            committed: Vec::new(),
            tags_created: Vec::new(),
            tags_deleted: Vec::new(),
            restart_required: false,
            committed_up_to: None,
        })
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        None
    }
}

/// Runs the native core against a shared storage and clock.
pub struct NativeDriver {
    storage: Shared<dyn Storage + Send>,
    clock: Shared<dyn Clock + Send>,
    /// Applied to every coordinator it creates (`set-limits`), as a
    /// component runtime applies its options' limits.
    limits: Limits,
}

impl NativeDriver {
    /// A driver whose coordinators keep the default [`Limits`].
    pub fn new(storage: Shared<dyn Storage + Send>, clock: Shared<dyn Clock + Send>) -> Self {
        NativeDriver {
            storage,
            clock,
            limits: Limits::default(),
        }
    }

    /// The same driver with coordinators limited by `limits` (the native
    /// twin of [`RuntimeOptions::limits`](sink_coordinator_host::engine::RuntimeOptions)).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

impl Driver for NativeDriver {
    fn name(&self) -> &'static str {
        "native"
    }
    fn create(
        &mut self,
        config: Config,
        restore: Option<RestorePoint>,
    ) -> HostResult<Box<dyn CoordinatorApi>> {
        let env = HostEnv::new(self.storage.clone(), self.clock.clone());
        Ok(Box::new(NativeCoordinator::with_limits(
            config,
            restore,
            env,
            self.limits,
        )?))
    }
    fn create_writer(&mut self, subtask: u32) -> HostResult<Box<dyn WriterApi>> {
        Ok(Box::new(Writer::new(subtask)))
    }
    fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>> {
        Ok(sink_coordinator::table::snapshot_by_id(
            &mut self.storage,
            id,
        )?)
    }
    fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>> {
        Ok(sink_coordinator::table::list_snapshots(&mut self.storage)?)
    }
    fn list_tags(&mut self) -> HostResult<Vec<Tag>> {
        Ok(sink_coordinator::table::list_tags(&mut self.storage)?)
    }
}

/// Runs the component (one Store per instance) against a shared storage
/// and clock; reads the table through the component's `table` interface.
pub struct ComponentDriver {
    runtime: Runtime,
    storage: Shared<dyn Storage + Send>,
    clock: Shared<dyn Clock + Send>,
    table: ComponentTable,
}

impl ComponentDriver {
    /// A driver over `storage` and `clock`; fails only if the component
    /// traps while its `table` resource is created.
    pub fn new(
        runtime: &Runtime,
        storage: Shared<dyn Storage + Send>,
        clock: Shared<dyn Clock + Send>,
    ) -> HostResult<Self> {
        let table = ComponentTable::new(runtime, storage.clone())?;
        Ok(ComponentDriver {
            runtime: runtime.clone(),
            storage,
            clock,
            table,
        })
    }
}

impl Driver for ComponentDriver {
    fn name(&self) -> &'static str {
        "component"
    }
    fn create(
        &mut self,
        config: Config,
        restore: Option<RestorePoint>,
    ) -> HostResult<Box<dyn CoordinatorApi>> {
        let env = HostEnv::new(self.storage.clone(), self.clock.clone());
        Ok(Box::new(ComponentCoordinator::new(
            &self.runtime,
            env,
            &config,
            restore.as_ref(),
        )?))
    }
    fn create_writer(&mut self, subtask: u32) -> HostResult<Box<dyn WriterApi>> {
        Ok(Box::new(ComponentWriter::new(&self.runtime, subtask)?))
    }
    fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>> {
        self.table.snapshot_by_id(id)
    }
    fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>> {
        self.table.list_snapshots()
    }
    fn list_tags(&mut self) -> HostResult<Vec<Tag>> {
        self.table.list_tags()
    }
}

/// A writer whose creation trapped (the component's writer constructor):
/// every call fails with `illegal-state`, like [`FailedInstance`].
pub struct FailedWriter;

impl FailedWriter {
    fn refuse<T>(&self) -> HostResult<T> {
        Err(HostError::core(
            sink_coordinator::ErrorKind::IllegalState,
            "the writer failed: its component trapped while it was created",
        ))
    }
}

impl WriterApi for FailedWriter {
    fn report(&mut self, _: u64, _: Vec<Vec<u8>>, _: Option<i64>, _: bool) -> HostResult<Entry> {
        self.refuse()
    }
    fn end_input(&mut self, _: Vec<Vec<u8>>, _: Option<i64>) -> HostResult<Entry> {
        self.refuse()
    }
    fn committed(&mut self, _: u64) -> HostResult<()> {
        self.refuse()
    }
    fn checkpoint_aborted(&mut self, _: u64) -> HostResult<()> {
        self.refuse()
    }
    fn state(&mut self) -> HostResult<Vec<u8>> {
        self.refuse()
    }
    fn restore(&mut self, _: &[u8], _: u64) -> HostResult<Vec<Entry>> {
        self.refuse()
    }
}
