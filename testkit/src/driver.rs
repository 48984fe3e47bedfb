//! The two ways of running the coordinator: the native Rust core and the
//! WebAssembly component. [`Engine`] is the one choice between them that
//! replay, the simulator, the call-script recorder and the benchmarks make;
//! each is written once against the trace crate's [`Driver`] and the core's
//! [`CoordinatorApi`] and [`WriterApi`] (re-exported here). The native
//! driver is the trace crate's; this module adds the component's.

pub use sink_coordinator::{CoordinatorApi, NativeCoordinator, WriterApi};
pub use sink_coordinator_trace::driver::{Driver, FailedInstance, FailedWriter, NativeDriver};

use sink_coordinator::{
    Clock, Config, HostEnv, Limits, RestorePoint, Shared, Snapshot, Storage, TableFormatKind, Tag,
};
use sink_coordinator_trace::paimon::TableMapping;

use sink_coordinator_host::component::{ComponentCoordinator, ComponentTable, ComponentWriter};
use sink_coordinator_host::engine::Runtime;
use sink_coordinator_host::error::HostResult;

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
        self.driver_in(storage, clock, TableFormatKind::Native)
    }

    /// [`Self::driver`] on a table in `format` (on Paimon: the table gets its
    /// schema now, and a trace's committables travel as synthetic data files;
    /// see [`NativeDriver::with_table_format`]).
    pub fn driver_in(
        &self,
        storage: Shared<dyn Storage + Send>,
        clock: Shared<dyn Clock + Send>,
        format: TableFormatKind,
    ) -> HostResult<Box<dyn Driver>> {
        Ok(match self {
            Engine::Native(limits) => Box::new(
                NativeDriver::new(storage, clock)
                    .with_limits(*limits)
                    .with_table_format(format)?,
            ),
            Engine::Component(runtime) => {
                Box::new(ComponentDriver::new(runtime, storage, clock)?.with_table_format(format)?)
            }
        })
    }
}

/// Runs the component (one Store per instance) against a shared storage
/// and clock; reads the table through the component's `table` interface.
pub struct ComponentDriver {
    runtime: Runtime,
    storage: Shared<dyn Storage + Send>,
    clock: Shared<dyn Clock + Send>,
    table: ComponentTable,
    /// The table format and, on a Paimon table, the trace's committables
    /// and their synthetic files.
    mapping: TableMapping,
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
            mapping: TableMapping::native(),
        })
    }

    /// The same driver with coordinators writing the table in `format`
    /// (`set-table-format` on each instance), as
    /// [`NativeDriver::with_table_format`]: on Paimon the table gets its
    /// schema now and the trace's committables travel as synthetic data files,
    /// mapped back wherever a result shows them.
    pub fn with_table_format(mut self, format: TableFormatKind) -> HostResult<Self> {
        self.mapping = TableMapping::new(&mut self.storage, format)?;
        Ok(self)
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
        let runtime = &self.runtime;
        self.mapping.create(
            restore,
            |restore| ComponentCoordinator::new(runtime, env, &config, restore.as_ref()),
            ComponentCoordinator::set_table_format,
        )
    }
    fn create_writer(&mut self, subtask: u32) -> HostResult<Box<dyn WriterApi>> {
        Ok(Box::new(ComponentWriter::new(&self.runtime, subtask)?))
    }
    fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>> {
        let s = self.table.snapshot_by_id(id)?;
        self.mapping.snapshot(s)
    }
    fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>> {
        let snapshots = self.table.list_snapshots()?;
        self.mapping.snapshots(snapshots)
    }
    fn list_tags(&mut self) -> HostResult<Vec<Tag>> {
        self.table.list_tags()
    }
    fn table_format(&self) -> TableFormatKind {
        self.mapping.format()
    }
}
