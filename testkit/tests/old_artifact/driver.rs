//! A [`Driver`] over the 0.1.0 component (`dist/sink-coordinator-0.1.0.wasm`),
//! bound to its own WIT (`dist/sink-coordinator-0.1.0.wit`) with wasmtime's
//! `bindgen!`: the 0.2.x host refuses it, so this test carries its own
//! bindings. 0.1.0 has no `committed-up-to` (outcomes report none) and its
//! writer's `checkpoint-complete` is what 0.2.0 calls `committed`.

use sink_coordinator::{
    events_one_by_one, ApplyResult, Call, Clock, Config, Entry, ErrorKind, FinalCommitMode,
    Lifecycle, Outcome, RecoveryMode, Reply, RestorePoint, Snapshot, Storage, Tag, WriterCall,
    WriterReply,
};
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::error::{HostError, HostResult};
use sink_coordinator_testkit::driver::{CoordinatorApi, Driver, WriterApi};
use wasmtime::component::{Component, HasSelf, Linker, ResourceAny};
use wasmtime::{Engine, Store};

mod bindings {
    wasmtime::component::bindgen!({ path: "../dist/sink-coordinator-0.1.0.wit", world: "sink-coordinator" });
}
use bindings::exports::sink::coordinator::types as wit;
use bindings::sink::coordinator::{clock as wit_clock, storage as wit_storage};
use bindings::SinkCoordinator;

/// The storage and clock of one Store.
pub struct Data(HostEnv);

fn storage_error(e: sink_coordinator::StorageError) -> wit_storage::StorageError {
    if e.is_invalid_key() {
        wit_storage::StorageError::InvalidKey(e.detail())
    } else {
        wit_storage::StorageError::Io(e.detail())
    }
}

impl wit_storage::Host for Data {
    fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, wit_storage::StorageError> {
        self.0.storage.get(&key).map_err(storage_error)
    }
    fn put_if_absent(
        &mut self,
        key: String,
        value: Vec<u8>,
    ) -> Result<bool, wit_storage::StorageError> {
        self.0
            .storage
            .put_if_absent(&key, &value)
            .map_err(storage_error)
    }
    fn put(&mut self, key: String, value: Vec<u8>) -> Result<(), wit_storage::StorageError> {
        self.0.storage.put(&key, &value).map_err(storage_error)
    }
    fn delete(&mut self, key: String) -> Result<(), wit_storage::StorageError> {
        self.0.storage.delete(&key).map_err(storage_error)
    }
    fn list(&mut self, prefix: String) -> Result<Vec<String>, wit_storage::StorageError> {
        self.0.storage.list(&prefix).map_err(storage_error)
    }
}

impl wit_clock::Host for Data {
    fn now_ms(&mut self) -> u64 {
        self.0.clock.now_ms()
    }
}

/// The compiled 0.1.0 component and its linker.
#[derive(Clone)]
pub struct V01 {
    engine: Engine,
    component: Component,
    linker: Linker<Data>,
}

impl V01 {
    pub fn load(wasm: &[u8]) -> wasmtime::Result<Self> {
        let engine = Engine::default();
        let component = Component::new(&engine, wasm)?;
        let mut linker = Linker::new(&engine);
        SinkCoordinator::add_to_linker::<Data, HasSelf<Data>>(&mut linker, |d| d)?;
        Ok(V01 {
            engine,
            component,
            linker,
        })
    }

    fn instantiate(&self, env: HostEnv) -> HostResult<(Store<Data>, SinkCoordinator)> {
        let mut store = Store::new(&self.engine, Data(env));
        let bindings = SinkCoordinator::instantiate(&mut store, &self.component, &self.linker)
            .map_err(|e| HostError::trap(format!("{e:#}")))?;
        Ok((store, bindings))
    }
}

type Live = (Store<Data>, SinkCoordinator, ResourceAny);

/// Runs `f` on a live instance; a trap discards it.
fn call<R, T>(
    live: &mut Option<Live>,
    f: impl FnOnce(
        &mut Store<Data>,
        &SinkCoordinator,
        ResourceAny,
    ) -> wasmtime::Result<Result<R, wit::Error>>,
    map: impl FnOnce(R) -> T,
) -> HostResult<T> {
    let Some((store, b, h)) = live.as_mut() else {
        return Err(HostError::trap("the instance was discarded after a trap"));
    };
    match f(store, b, *h) {
        Ok(Ok(v)) => Ok(map(v)),
        Ok(Err(e)) => Err(HostError::core(kind(e.kind), e.message)),
        Err(trap) => {
            *live = None;
            Err(HostError::trap(format!("{trap:#}")))
        }
    }
}

fn kind(k: wit::ErrorKind) -> ErrorKind {
    match k {
        wit::ErrorKind::Declined => ErrorKind::Declined,
        wit::ErrorKind::Storage => ErrorKind::Storage,
        wit::ErrorKind::IllegalState => ErrorKind::IllegalState,
        wit::ErrorKind::InvalidEvent => ErrorKind::InvalidEvent,
        wit::ErrorKind::InvalidConfig => ErrorKind::InvalidConfig,
        wit::ErrorKind::CorruptState => ErrorKind::CorruptState,
    }
}

fn lifecycle(l: wit::Lifecycle) -> Lifecycle {
    match l {
        wit::Lifecycle::Created => Lifecycle::Created,
        wit::Lifecycle::Restoring => Lifecycle::Restoring,
        wit::Lifecycle::Running => Lifecycle::Running,
        wit::Lifecycle::Closed => Lifecycle::Closed,
        wit::Lifecycle::Failed => Lifecycle::Failed,
    }
}

fn outcome(o: wit::Outcome) -> Outcome {
    Outcome {
        state: lifecycle(o.state),
        committed: o.committed,
        tags_created: o.tags_created,
        tags_deleted: o.tags_deleted,
        restart_required: o.restart_required,
        committed_up_to: None, // not in 0.1.0
    }
}

fn to_entry(e: Entry) -> wit::Entry {
    wit::Entry {
        checkpoint: e.checkpoint,
        committables: e.committables.to_vecs(),
        watermark: e.watermark,
        savepoint: e.savepoint,
    }
}

fn from_entry(e: wit::Entry) -> Entry {
    Entry {
        checkpoint: e.checkpoint,
        committables: e.committables.into(),
        watermark: e.watermark,
        savepoint: e.savepoint,
    }
}

fn snapshot(s: wit::Snapshot) -> Snapshot {
    Snapshot {
        id: s.id,
        commit_user: s.commit_user,
        identifier: s.identifier,
        watermark: s.watermark,
        time_ms: s.time_ms,
        committables: s.committables,
    }
}

fn tag(t: wit::Tag) -> Tag {
    Tag {
        name: t.name,
        snapshot_id: t.snapshot_id,
        identifier: t.identifier,
        create_time_ms: t.create_time_ms,
        expire_time_ms: t.expire_time_ms,
    }
}

/// One 0.1.0 coordinator (its own Store).
pub struct Coordinator01(Option<Live>);

/// The 0.1.0 calls, one WIT function each.
impl Coordinator01 {
    fn start(&mut self) -> HostResult<Outcome> {
        call(
            &mut self.0,
            |s, b, h| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_start(s, h)
            },
            outcome,
        )
    }
    fn event(&mut self, subtask: u32, attempt: u32, entry: Entry) -> HostResult<Outcome> {
        let e = to_entry(entry);
        call(
            &mut self.0,
            |s, b, h| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_event(s, h, subtask, attempt, &e)
            },
            outcome,
        )
    }
    fn restored(
        &mut self,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    ) -> HostResult<Outcome> {
        let es: Vec<wit::Entry> = entries.into_iter().map(to_entry).collect();
        call(
            &mut self.0,
            |s, b, h| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_restored(s, h, subtask, attempt, checkpoint, &es)
            },
            outcome,
        )
    }
    fn subtask_reset(&mut self, subtask: u32, checkpoint: Option<u64>) -> HostResult<Outcome> {
        call(
            &mut self.0,
            |s, b, h| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_subtask_reset(s, h, subtask, checkpoint)
            },
            outcome,
        )
    }
    fn checkpoint(&mut self, checkpoint: u64) -> HostResult<Vec<u8>> {
        call(
            &mut self.0,
            |s, b, h| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_checkpoint(s, h, checkpoint)
            },
            |v| v,
        )
    }
    fn checkpoint_complete(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        call(
            &mut self.0,
            |s, b, h| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_checkpoint_complete(s, h, checkpoint)
            },
            outcome,
        )
    }
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        call(
            &mut self.0,
            |s, b, h| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_checkpoint_aborted(s, h, checkpoint)
            },
            outcome,
        )
    }
    fn close(&mut self) -> HostResult<Outcome> {
        call(
            &mut self.0,
            |s, b, h| {
                b.sink_coordinator_coordinator()
                    .coordinator()
                    .call_close(s, h)
            },
            outcome,
        )
    }
}

impl CoordinatorApi for Coordinator01 {
    fn state(&mut self) -> Lifecycle {
        match self.0.as_mut() {
            None => Lifecycle::Failed,
            Some((s, b, h)) => match b
                .sink_coordinator_coordinator()
                .coordinator()
                .call_state(s, *h)
            {
                Ok(l) => lifecycle(l),
                Err(_) => {
                    self.0 = None;
                    Lifecycle::Failed
                }
            },
        }
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        None // not in 0.1.0
    }
    fn apply(&mut self, call: Call) -> ApplyResult {
        let outcome = match call {
            Call::Start => self.start(),
            Call::Event {
                subtask,
                attempt,
                entry,
            } => self.event(subtask, attempt, entry),
            // 0.1.0 has no batch call.
            Call::Events(events) => return events_one_by_one(self, events),
            Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => self.restored(subtask, attempt, checkpoint, entries),
            Call::SubtaskReset {
                subtask,
                checkpoint,
            } => self.subtask_reset(subtask, checkpoint),
            Call::Checkpoint(n) => return Ok(Reply::State(self.checkpoint(n)?)),
            Call::CheckpointComplete(n) => self.checkpoint_complete(n),
            Call::CheckpointAborted(n) => self.checkpoint_aborted(n),
            Call::Close => self.close(),
            // A call added after 0.1.0: the old component has none (one
            // catch-all, so that a new call needs no arm here; unreachable
            // while every call has its arm above).
            #[allow(unreachable_patterns)]
            other => Err(HostError::trap(format!(
                "the 0.1.0 component has no `{}`",
                other.name()
            ))),
        };
        Ok(Reply::Outcome(outcome?))
    }
}

/// One 0.1.0 writer helper (its own Store).
pub struct Writer01(Option<Live>);

impl WriterApi for Writer01 {
    fn apply(&mut self, writer_call: WriterCall<'_>) -> HostResult<WriterReply> {
        let live = &mut self.0;
        fn writer(
            b: &SinkCoordinator,
        ) -> bindings::exports::sink::coordinator::writer::GuestWriter<'_> {
            b.sink_coordinator_writer().writer()
        }
        match writer_call {
            WriterCall::Report {
                checkpoint,
                committables,
                watermark,
                savepoint,
            } => call(
                live,
                |s, b, h| {
                    let (c, w, sp) = (checkpoint, watermark, savepoint);
                    writer(b).call_report(s, h, c, &committables, w, sp)
                },
                |e| WriterReply::Entry(from_entry(e)),
            ),
            WriterCall::EndInput {
                committables,
                watermark,
            } => call(
                live,
                |s, b, h| writer(b).call_end_input(s, h, &committables, watermark),
                |e| WriterReply::Entry(from_entry(e)),
            ),
            // 0.1.0's `checkpoint-complete`: drops buffered ordinary entries up to `u`.
            WriterCall::Committed(u) => call(
                live,
                |s, b, h| writer(b).call_checkpoint_complete(s, h, u),
                |()| WriterReply::Done,
            ),
            WriterCall::CheckpointAborted(c) => call(
                live,
                |s, b, h| writer(b).call_checkpoint_aborted(s, h, c),
                |()| WriterReply::Done,
            ),
            WriterCall::State => call(
                live,
                |s, b, h| writer(b).call_state(s, h).map(Ok),
                WriterReply::State,
            ),
            WriterCall::Restore { state, checkpoint } => call(
                live,
                |s, b, h| writer(b).call_restore(s, h, state, checkpoint),
                |v| WriterReply::Entries(v.into_iter().map(from_entry).collect()),
            ),
        }
    }
}

fn config(c: &Config) -> wit::Config {
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

/// Creates 0.1.0 coordinators and writers over the replayer's table and
/// clock; reads the table through the 0.1.0 `table` interface.
pub struct Driver01 {
    v01: V01,
    storage: Shared<dyn Storage + Send>,
    clock: Shared<dyn Clock + Send>,
}

impl Driver01 {
    pub fn new(
        v01: V01,
        storage: Shared<dyn Storage + Send>,
        clock: Shared<dyn Clock + Send>,
    ) -> Self {
        Driver01 {
            v01,
            storage,
            clock,
        }
    }

    fn table<R>(
        &self,
        f: impl FnOnce(&mut Store<Data>, &SinkCoordinator) -> wasmtime::Result<Result<R, wit::Error>>,
    ) -> HostResult<R> {
        let (mut store, b) = self
            .v01
            .instantiate(HostEnv::new(self.storage.clone(), self.clock.clone()))?;
        match f(&mut store, &b) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(HostError::core(kind(e.kind), e.message)),
            Err(trap) => Err(HostError::trap(format!("{trap:#}"))),
        }
    }
}

impl Driver for Driver01 {
    fn name(&self) -> &'static str {
        "component-0.1.0"
    }
    fn create(
        &mut self,
        c: Config,
        restore: Option<RestorePoint>,
    ) -> HostResult<Box<dyn CoordinatorApi>> {
        let (mut store, b) = self
            .v01
            .instantiate(HostEnv::new(self.storage.clone(), self.clock.clone()))?;
        let restore = restore.map(|r| wit::RestorePoint {
            checkpoint: r.checkpoint,
            state: r.state,
            finished_subtasks: r.finished_subtasks,
        });
        let h = b
            .sink_coordinator_coordinator()
            .coordinator()
            .call_constructor(&mut store, &config(&c), restore.as_ref())
            .map_err(|e| HostError::trap(format!("{e:#}")))?;
        Ok(Box::new(Coordinator01(Some((store, b, h)))))
    }
    fn create_writer(&mut self, subtask: u32) -> HostResult<Box<dyn WriterApi>> {
        let (mut store, b) = self.v01.instantiate(HostEnv::detached())?;
        let h = b
            .sink_coordinator_writer()
            .writer()
            .call_constructor(&mut store, subtask)
            .map_err(|e| HostError::trap(format!("{e:#}")))?;
        Ok(Box::new(Writer01(Some((store, b, h)))))
    }
    fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>> {
        self.table(|s, b| b.sink_coordinator_table().call_snapshot_by_id(s, id))
            .map(|o| o.map(snapshot))
    }
    fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>> {
        self.table(|s, b| b.sink_coordinator_table().call_list_snapshots(s))
            .map(|v| v.into_iter().map(snapshot).collect())
    }
    fn list_tags(&mut self) -> HostResult<Vec<Tag>> {
        self.table(|s, b| b.sink_coordinator_table().call_list_tags(s))
            .map(|v| v.into_iter().map(tag).collect())
    }
}
