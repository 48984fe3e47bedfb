//! How a replay creates coordinators and writers over its table and clock,
//! and reads that table back through the same implementation: the
//! [`Driver`] trait, the native core's [`NativeDriver`], and the stand-ins
//! for an instance or writer whose creation trapped. The test kit adds the
//! component's driver.

use sink_coordinator::table::TableFormatKind;
use sink_coordinator::{
    events_one_by_one, ApplyResult, Call, Clock, Config, CoordinatorApi, HostEnv, HostError,
    HostResult, Lifecycle, Limits, NativeCoordinator, Outcome, Reply, RestorePoint, Shared,
    Snapshot, Storage, Tag, Writer, WriterApi,
};

use crate::paimon::TableMapping;

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
    /// The format of the table its coordinators write: the replayer reads the
    /// table's keys and counts storage faults by it (native unless the driver
    /// says otherwise).
    fn table_format(&self) -> TableFormatKind {
        TableFormatKind::Native
    }
}

/// An instance whose creation trapped: it stays `failed` (SEMANTICS 2: calls
/// fail with `illegal-state`, `close` succeeds and changes nothing). It never
/// ran the commit rule: its committed-up-to is none.
pub struct FailedInstance;

impl FailedInstance {
    fn refusal(&self) -> HostError {
        HostError::core(
            sink_coordinator::ErrorKind::IllegalState,
            "the instance failed: its component trapped while it was created",
        )
    }
}

impl CoordinatorApi for FailedInstance {
    fn state(&mut self) -> Lifecycle {
        Lifecycle::Failed
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        None
    }
    fn apply(&mut self, call: Call) -> ApplyResult {
        match call {
            // `close` is accepted in every state and leaves `failed` as is.
            Call::Close => Ok(Reply::Outcome(Outcome {
                state: Lifecycle::Failed,
                committed: Vec::new(),
                tags_created: Vec::new(),
                tags_deleted: Vec::new(),
                restart_required: false,
                committed_up_to: None,
            })),
            Call::Events(events) => events_one_by_one(self, events),
            _ => Err(self.refusal().into()),
        }
    }
}

/// Runs the native core against a shared storage and clock.
pub struct NativeDriver {
    storage: Shared<dyn Storage + Send>,
    clock: Shared<dyn Clock + Send>,
    /// Applied to every coordinator it creates (`set-limits`), as a
    /// component runtime applies its options' limits.
    limits: Limits,
    /// The format of the coordinators' table (`set-table-format`) and, on
    /// a Paimon table, the map between the trace's committables and the
    /// table's synthetic files ([`crate::paimon`]).
    mapping: TableMapping,
}

impl NativeDriver {
    /// A driver whose coordinators keep the default [`Limits`] and write the
    /// native table format.
    pub fn new(storage: Shared<dyn Storage + Send>, clock: Shared<dyn Clock + Send>) -> Self {
        NativeDriver {
            storage,
            clock,
            limits: Limits::default(),
            mapping: TableMapping::native(),
        }
    }

    /// The same driver with coordinators limited by `limits` (the native
    /// twin of a component runtime's `RuntimeOptions::limits`).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same driver with coordinators writing the table in `format` (what
    /// `sinkcoord replay --table-format` chooses). For
    /// [`TableFormatKind::Paimon`] it makes the (empty) table a Paimon table
    /// now, before any instance starts ([`crate::paimon::prepare_table`]: one
    /// put-if-absent of `schema/schema-0`), and replays the trace's opaque
    /// committables as synthetic data files, mapped back wherever a result
    /// shows them ([`crate::paimon`]), so that a result document of a trace
    /// can be held against the native format's. The core must be built with
    /// its `paimon` feature; without it every coordinator created fails with
    /// `invalid-config`. Fails if the schema cannot be put.
    pub fn with_table_format(mut self, format: TableFormatKind) -> HostResult<Self> {
        self.mapping = TableMapping::new(&mut self.storage, format)?;
        Ok(self)
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
        let limits = self.limits;
        self.mapping.create(
            restore,
            |restore| NativeCoordinator::with_limits(config, restore, env, limits),
            NativeCoordinator::set_table_format,
        )
    }
    fn create_writer(&mut self, subtask: u32) -> HostResult<Box<dyn WriterApi>> {
        Ok(Box::new(Writer::new(subtask)))
    }
    fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>> {
        let s = sink_coordinator::table::snapshot_by_id(&mut self.storage, id)?;
        self.mapping.snapshot(s)
    }
    fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>> {
        let snapshots = sink_coordinator::table::list_snapshots(&mut self.storage)?;
        self.mapping.snapshots(snapshots)
    }
    fn list_tags(&mut self) -> HostResult<Vec<Tag>> {
        Ok(sink_coordinator::table::list_tags(&mut self.storage)?)
    }
    fn table_format(&self) -> TableFormatKind {
        self.mapping.format()
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
    fn apply(
        &mut self,
        _: sink_coordinator::WriterCall<'_>,
    ) -> HostResult<sink_coordinator::WriterReply> {
        self.refuse()
    }
}
