//! Component bindings: the WIT exports call the core, and the core's
//! effects are served by the WIT imports. Only compiled for wasm32.

use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

use crate::env::{AsEnv, Clock, Env, Storage, StorageError};

wit_bindgen::generate!({ path: "../wit", world: "sink-coordinator" });

use exports::sink::coordinator::coordinator as wc;
use exports::sink::coordinator::table as wtab;
use exports::sink::coordinator::types as wt;
use exports::sink::coordinator::writer as ww;
use sink::coordinator::{clock, storage};

/// The `storage` imports.
struct StorageImports;

/// The `clock` import.
struct ClockImports;

/// The core's environment, served by the imports.
struct Imports {
    storage: StorageImports,
    clock: ClockImports,
}

fn imports() -> Imports {
    Imports {
        storage: StorageImports,
        clock: ClockImports,
    }
}

impl AsEnv for Imports {
    fn as_env(&mut self) -> Env<'_> {
        Env::new(&mut self.storage, &mut self.clock)
    }
}

fn storage_error(e: storage::StorageError) -> StorageError {
    match e {
        storage::StorageError::Io(m) => StorageError::Io(m),
        storage::StorageError::InvalidKey(m) => StorageError::InvalidKey(m),
    }
}

impl Storage for StorageImports {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        storage::get(key).map_err(storage_error)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        storage::put_if_absent(key, value).map_err(storage_error)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        storage::put(key, value).map_err(storage_error)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        storage::delete(key).map_err(storage_error)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        storage::list(prefix).map_err(storage_error)
    }
}

impl Clock for ClockImports {
    fn now_ms(&mut self) -> u64 {
        clock::now_ms()
    }
}

// --- conversions -----------------------------------------------------------------

fn error(e: crate::Error) -> wt::Error {
    use crate::ErrorKind as K;
    let kind = match e.kind {
        K::Declined => wt::ErrorKind::Declined,
        K::Storage => wt::ErrorKind::Storage,
        K::IllegalState => wt::ErrorKind::IllegalState,
        K::InvalidEvent => wt::ErrorKind::InvalidEvent,
        K::InvalidConfig => wt::ErrorKind::InvalidConfig,
        K::CorruptState => wt::ErrorKind::CorruptState,
    };
    wt::Error {
        kind,
        message: e.message(),
    }
}

fn lifecycle(l: crate::Lifecycle) -> wt::Lifecycle {
    match l {
        crate::Lifecycle::Created => wt::Lifecycle::Created,
        crate::Lifecycle::Restoring => wt::Lifecycle::Restoring,
        crate::Lifecycle::Running => wt::Lifecycle::Running,
        crate::Lifecycle::Closed => wt::Lifecycle::Closed,
        crate::Lifecycle::Failed => wt::Lifecycle::Failed,
    }
}

fn outcome(r: crate::Result<crate::Outcome>) -> Result<wt::Outcome, wt::Error> {
    r.map(|o| wt::Outcome {
        state: lifecycle(o.state),
        committed: o.committed,
        tags_created: o.tags_created,
        tags_deleted: o.tags_deleted,
        restart_required: o.restart_required,
        committed_up_to: o.committed_up_to,
    })
    .map_err(error)
}

/// The compact form of a merged outcome: no lists unless something was
/// committed or tagged (see `batch-outcome` in the WIT).
fn batch_outcome(o: crate::Outcome) -> wt::BatchOutcome {
    let effects = (!o.committed.is_empty()
        || !o.tags_created.is_empty()
        || !o.tags_deleted.is_empty()
        || o.restart_required)
        .then(|| wt::BatchEffects {
            committed: o.committed,
            tags_created: o.tags_created,
            tags_deleted: o.tags_deleted,
            restart_required: o.restart_required,
        });
    wt::BatchOutcome {
        state: lifecycle(o.state),
        committed_up_to: o.committed_up_to,
        effects,
    }
}

fn batch_result(
    r: Result<crate::Outcome, alloc::boxed::Box<crate::BatchError>>,
) -> Result<wt::BatchOutcome, wt::BatchError> {
    r.map(batch_outcome).map_err(|e| {
        let e = *e;
        wt::BatchError {
            // A list's length fits in u32 on wasm32.
            applied: e.applied as u32,
            outcome: batch_outcome(e.outcome),
            error: error(e.error),
        }
    })
}

fn entry_in(e: wt::Entry) -> crate::Entry {
    crate::Entry {
        checkpoint: e.checkpoint,
        // One packed copy of the lowered lists (see `committables`).
        committables: crate::Committables::from(e.committables),
        watermark: e.watermark,
        savepoint: e.savepoint,
    }
}

fn entry_out(e: crate::Entry) -> wt::Entry {
    wt::Entry {
        checkpoint: e.checkpoint,
        committables: e.committables.to_vecs(),
        watermark: e.watermark,
        savepoint: e.savepoint,
    }
}

fn config_in(c: wt::Config) -> crate::Config {
    crate::Config {
        parallelism: c.parallelism,
        commit_user: c.commit_user,
        checkpointing: c.checkpointing,
        final_commit: match c.final_commit {
            wt::FinalCommitMode::OnCheckpoint => crate::FinalCommitMode::OnCheckpoint,
            wt::FinalCommitMode::OnEndInput => crate::FinalCommitMode::OnEndInput,
        },
        force_create_snapshot: c.force_create_snapshot,
        savepoint_auto_tag: c.savepoint_auto_tag,
        tag_time_retained_ms: c.tag_time_retained_ms,
        recovery: match c.recovery {
            wt::RecoveryMode::Restart => crate::RecoveryMode::Restart,
            wt::RecoveryMode::Continue => crate::RecoveryMode::Continue,
        },
    }
}

fn snapshot_out(s: crate::Snapshot) -> wt::Snapshot {
    wt::Snapshot {
        id: s.id,
        commit_user: s.commit_user,
        identifier: s.identifier,
        watermark: s.watermark,
        time_ms: s.time_ms,
        committables: s.committables,
    }
}

fn tag_out(t: crate::Tag) -> wt::Tag {
    wt::Tag {
        name: t.name,
        snapshot_id: t.snapshot_id,
        identifier: t.identifier,
        create_time_ms: t.create_time_ms,
        expire_time_ms: t.expire_time_ms,
    }
}

// --- exports -----------------------------------------------------------------------

struct Component;

struct CoordinatorResource(RefCell<crate::Coordinator>);

impl wc::Guest for Component {
    type Coordinator = CoordinatorResource;
}

impl wc::GuestCoordinator for CoordinatorResource {
    fn new(config: wt::Config, restore: Option<wt::RestorePoint>) -> Self {
        let restore = restore.map(|r| crate::RestorePoint {
            checkpoint: r.checkpoint,
            state: r.state,
            finished_subtasks: r.finished_subtasks,
        });
        CoordinatorResource(RefCell::new(crate::Coordinator::new(
            config_in(config),
            restore,
        )))
    }
    fn set_limits(&self, limits: wt::Limits) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .set_limits(crate::Limits {
                max_committable_bytes: limits.max_committable_bytes,
                max_event_bytes: limits.max_event_bytes,
                max_snapshot_bytes: limits.max_snapshot_bytes,
            })
            .map_err(error)
    }
    fn set_table_format(&self, format: wt::TableFormat) -> Result<(), wt::Error> {
        let kind = match format {
            wt::TableFormat::Native => crate::table::TableFormatKind::Native,
            wt::TableFormat::Paimon => crate::table::TableFormatKind::Paimon,
        };
        self.0.borrow_mut().set_table_format(kind).map_err(error)
    }
    fn start(&self) -> Result<wt::Outcome, wt::Error> {
        outcome(self.0.borrow_mut().start(&mut imports()))
    }
    fn event(
        &self,
        subtask: u32,
        attempt: u32,
        entry: wt::Entry,
    ) -> Result<wt::Outcome, wt::Error> {
        outcome(
            self.0
                .borrow_mut()
                .event(&mut imports(), subtask, attempt, entry_in(entry)),
        )
    }
    fn events(&self, events: Vec<wt::WriterEvent>) -> Result<wt::BatchOutcome, wt::BatchError> {
        let events = events.into_iter().map(|e| crate::WriterEvent {
            subtask: e.subtask,
            attempt: e.attempt,
            entry: entry_in(e.entry),
        });
        batch_result(crate::batch::events(
            &mut self.0.borrow_mut(),
            &mut imports(),
            events,
        ))
    }
    fn events_packed(
        &self,
        events: Vec<wt::PackedEvent>,
    ) -> Result<wt::BatchOutcome, wt::BatchError> {
        let events = events.into_iter().map(|e| crate::batch::PackedEvent {
            subtask: e.subtask,
            attempt: e.attempt,
            checkpoint: e.checkpoint,
            committables: e.committables,
            watermark: e.watermark,
            savepoint: e.savepoint,
        });
        batch_result(crate::batch::events_packed(
            &mut self.0.borrow_mut(),
            &mut imports(),
            events,
        ))
    }
    fn events_block(&self, events: Vec<u8>) -> Result<wt::BatchOutcome, wt::BatchError> {
        batch_result(crate::batch::events_block(
            &mut self.0.borrow_mut(),
            &mut imports(),
            &events,
        ))
    }
    fn restored(
        &self,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<wt::Entry>,
    ) -> Result<wt::Outcome, wt::Error> {
        let entries = entries.into_iter().map(entry_in).collect();
        outcome(
            self.0
                .borrow_mut()
                .restored(&mut imports(), subtask, attempt, checkpoint, entries),
        )
    }
    fn subtask_reset(
        &self,
        subtask: u32,
        checkpoint: Option<u64>,
    ) -> Result<wt::Outcome, wt::Error> {
        outcome(
            self.0
                .borrow_mut()
                .subtask_reset(&mut imports(), subtask, checkpoint),
        )
    }
    fn checkpoint(&self, checkpoint: u64) -> Result<Vec<u8>, wt::Error> {
        self.0
            .borrow_mut()
            .checkpoint(&mut imports(), checkpoint)
            .map_err(error)
    }
    fn checkpoint_complete(&self, checkpoint: u64) -> Result<wt::Outcome, wt::Error> {
        outcome(
            self.0
                .borrow_mut()
                .checkpoint_complete(&mut imports(), checkpoint),
        )
    }
    fn checkpoint_aborted(&self, checkpoint: u64) -> Result<wt::Outcome, wt::Error> {
        outcome(
            self.0
                .borrow_mut()
                .checkpoint_aborted(&mut imports(), checkpoint),
        )
    }
    fn close(&self) -> Result<wt::Outcome, wt::Error> {
        outcome(self.0.borrow_mut().close(&mut imports()))
    }
    fn state(&self) -> wt::Lifecycle {
        lifecycle(self.0.borrow().state())
    }
    fn committed_up_to(&self) -> Option<u64> {
        self.0.borrow().committed_up_to()
    }
}

struct WriterResource(RefCell<crate::Writer>);

impl ww::Guest for Component {
    type Writer = WriterResource;
}

impl ww::GuestWriter for WriterResource {
    fn new(subtask: u32) -> Self {
        WriterResource(RefCell::new(crate::Writer::new(subtask)))
    }
    fn report(
        &self,
        checkpoint: u64,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        savepoint: bool,
    ) -> Result<wt::Entry, wt::Error> {
        self.0
            .borrow_mut()
            .report(checkpoint, committables, watermark, savepoint)
            .map(entry_out)
            .map_err(error)
    }
    fn end_input(
        &self,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
    ) -> Result<wt::Entry, wt::Error> {
        self.0
            .borrow_mut()
            .end_input(committables, watermark)
            .map(entry_out)
            .map_err(error)
    }
    fn committed(&self, checkpoint: u64) -> Result<(), wt::Error> {
        self.0.borrow_mut().committed(checkpoint).map_err(error)
    }
    fn checkpoint_aborted(&self, checkpoint: u64) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .checkpoint_aborted(checkpoint)
            .map_err(error)
    }
    fn state(&self) -> Vec<u8> {
        self.0.borrow().state()
    }
    fn restore(&self, state: Vec<u8>, checkpoint: u64) -> Result<Vec<wt::Entry>, wt::Error> {
        self.0
            .borrow_mut()
            .restore(&state, checkpoint)
            .map(|v| v.into_iter().map(entry_out).collect())
            .map_err(error)
    }
}

impl wtab::Guest for Component {
    fn latest_snapshot() -> Result<Option<wt::Snapshot>, wt::Error> {
        crate::table::latest_snapshot(&mut StorageImports)
            .map(|s| s.map(snapshot_out))
            .map_err(error)
    }
    fn snapshot_by_id(id: u64) -> Result<Option<wt::Snapshot>, wt::Error> {
        crate::table::snapshot_by_id(&mut StorageImports, id)
            .map(|s| s.map(snapshot_out))
            .map_err(error)
    }
    fn list_snapshots() -> Result<Vec<wt::Snapshot>, wt::Error> {
        crate::table::list_snapshots(&mut StorageImports)
            .map(|v| v.into_iter().map(snapshot_out).collect())
            .map_err(error)
    }
    fn list_tags() -> Result<Vec<wt::Tag>, wt::Error> {
        crate::table::list_tags(&mut StorageImports)
            .map(|v| v.into_iter().map(tag_out).collect())
            .map_err(error)
    }
}

export!(Component);
