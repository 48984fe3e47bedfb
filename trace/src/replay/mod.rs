//! Replaying a trace (TRACE-FORMAT) through a [`Driver`].
//!
//! The table is a fresh [`MemStorage`] (or any empty table: [`replay_on`])
//! behind a [`FaultyStorage`]; it and the
//! trace clock belong to the host and survive failovers. What each step did
//! to the table (`committed`, `tags_created`, `tags_deleted`) is measured by
//! diffing the table's `snapshot/` and `tag/` keys around the step, with
//! faults suspended for those reads, so a write that landed although storage
//! reported an error shows in the step where it landed.
//!
//! Every step also reports the named instance's committed-up-to (SEMANTICS
//! 5.5) after the step: the replayer asks the instance
//! ([`CoordinatorApi::committed_up_to`]) once the step is done, so steps that
//! call nothing, steps that failed and failed or closed instances all report
//! what the instance holds. An instance whose component trapped reports the
//! last value the host received from it before the trap (its outcomes and
//! these per-step queries), an instance whose creation trapped none.
//!
//! The table's format is the driver's ([`Driver::table_format`]). On an Apache
//! Paimon table the replayer diffs Paimon's snapshot and tag keys, and its fault
//! queues count only the calls with a native twin
//! ([`FaultScope::PaimonCommitPoints`]); the driver maps the trace's committables
//! to synthetic data files and back ([`crate::paimon`]), so the result is in the
//! trace's terms and identical to the native format's.
//!
//! Writer steps (TRACE-FORMAT "Writer steps") drive writer helpers
//! (SEMANTICS 11) created through the same [`Driver`]: the component's
//! `writer` resource, or the native `Writer`. Writers are keyed by
//! (instance name, subtask); they, their outboxes and the writer state bytes
//! kept by `writer_snapshot` belong to the replayer and survive coordinator
//! `failover` and `start`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use sink_coordinator::table::TableFormatKind;
use sink_coordinator::{
    Call, Clock, CoordinatorApi, Entry, HostError, HostResult, MemStorage, Outcome, Reply,
    RestorePoint, Shared, StepClock, Storage, WriterApi,
};

use crate::driver::{Driver, FailedInstance, FailedWriter, NativeDriver};
use crate::faults::{FaultScope, FaultyStorage};
use crate::format::{Malformed, Op, Trace};

mod layout;
mod types;
pub use types::{CheckpointState, ReplayError, ReplayResult, StepResult};

/// The table a replay runs on: any empty table (the in-memory map by
/// default), boxed so that one replayer serves every backend.
pub type Table = Box<dyn Storage + Send>;

/// Builds the driver of a replay over the replayer's table and trace clock.
pub type MakeDriver<'a> = dyn FnOnce(
        Shared<dyn Storage + Send>,
        Shared<dyn Clock + Send>,
    ) -> Result<Box<dyn Driver>, ReplayError>
    + 'a;

/// Parses, validates and replays a trace document through the native core
/// (default limits).
pub fn replay_native_str(text: &str) -> Result<ReplayResult, ReplayError> {
    let trace = crate::format::parse(text)?;
    replay_native(&trace)
}

/// Replays a validated trace through the native core (default limits) on a
/// fresh in-memory table.
pub fn replay_native(trace: &Trace) -> Result<ReplayResult, ReplayError> {
    replay_with_driver(trace, Box::new(native_driver)).map(|(result, _)| result)
}

/// The native core's driver over a replayer's table and clock.
pub fn native_driver(
    storage: Shared<dyn Storage + Send>,
    clock: Shared<dyn Clock + Send>,
) -> Result<Box<dyn Driver>, ReplayError> {
    Ok(Box::new(NativeDriver::new(storage, clock)))
}

/// [`replay_native`] on a table in `format` (default limits): with
/// [`TableFormatKind::Paimon`], the trace's committables are replayed as
/// synthetic data files of a Paimon table and the result is given in the
/// trace's terms ([`crate::paimon`]; the core needs its `paimon` feature).
pub fn replay_native_in(
    trace: &Trace,
    format: TableFormatKind,
) -> Result<ReplayResult, ReplayError> {
    replay_with_driver(trace, native_driver_in(format)).map(|(result, _)| result)
}

/// Builds the native core's driver on a table in `format`
/// ([`NativeDriver::with_table_format`]), for [`replay_with_driver`] and
/// [`replay_on`].
pub fn native_driver_in(format: TableFormatKind) -> Box<MakeDriver<'static>> {
    Box::new(move |storage, clock| {
        let driver = NativeDriver::new(storage, clock)
            .with_table_format(format)
            .map_err(|e| ReplayError::Host(format!("cannot prepare the table: {e}")))?;
        Ok(Box::new(driver) as Box<dyn Driver>)
    })
}

/// Replays `trace` on a fresh in-memory table through the driver `make`
/// builds over the replayer's table and trace clock; also returns the state
/// bytes of every successful coordinator `checkpoint` step, in step order.
pub fn replay_with_driver(
    trace: &Trace,
    make: Box<MakeDriver<'_>>,
) -> Result<(ReplayResult, Vec<CheckpointState>), ReplayError> {
    replay_on(trace, Box::new(MemStorage::default()), make)
}

/// [`replay_with_driver`] on `table`, which must be empty (e.g. an object
/// store opened by URL): a conforming backend gives the in-memory result.
pub fn replay_on(
    trace: &Trace,
    table: Table,
    make: Box<MakeDriver<'_>>,
) -> Result<(ReplayResult, Vec<CheckpointState>), ReplayError> {
    let storage = Shared::new(FaultyStorage::new(table));
    let clock = Shared::new(StepClock::new(trace.clock_start_ms, trace.clock_step_ms));
    let mut driver = make(storage.as_storage(), clock.as_clock())?;
    let format = driver.table_format();
    storage.lock().set_scope(FaultScope::of(format));
    Replayer {
        storage,
        clock,
        format,
        driver: driver.as_mut(),
        instances: BTreeMap::new(),
        kept: BTreeMap::new(),
        writers: BTreeMap::new(),
        writer_kept: BTreeMap::new(),
        states: Vec::new(),
    }
    .run(trace)
}

/// The table's keys of interest at one moment.
struct TableKeys {
    snapshots: BTreeSet<String>,
    tags: BTreeSet<String>,
}

struct Replayer<'d> {
    storage: Shared<FaultyStorage<Table>>,
    clock: Shared<StepClock>,
    /// The table's format: where its snapshots and tags are (`layout`).
    format: TableFormatKind,
    driver: &'d mut dyn Driver,
    instances: BTreeMap<String, Box<dyn CoordinatorApi>>,
    /// State bytes kept by successful `checkpoint` steps, per (instance name, checkpoint).
    kept: BTreeMap<(String, u64), Vec<u8>>,
    /// Writer helpers, per (instance name, subtask).
    writers: BTreeMap<(String, u32), WriterSlot>,
    /// Writer state bytes kept by `writer_snapshot`, per (instance name, subtask, checkpoint).
    writer_kept: BTreeMap<(String, u32, u64), Vec<u8>>,
    /// The state bytes of every successful `checkpoint` step so far.
    states: Vec<CheckpointState>,
}

/// One writer of the replayer: the helper, its attempt, and the events it
/// produced and has not delivered yet, oldest first.
struct WriterSlot {
    api: Box<dyn WriterApi>,
    attempt: u32,
    outbox: VecDeque<Outgoing>,
}

/// An event waiting in a writer's outbox.
enum Outgoing {
    Event(Entry),
    Restored {
        checkpoint: u64,
        entries: Vec<Entry>,
    },
}

/// What a step reports besides the table difference and the state.
#[derive(Default)]
struct Applied {
    restart_required: bool,
    error: Option<HostError>,
    state_bytes: Option<usize>,
}

impl Applied {
    fn error(e: HostError) -> Self {
        Applied {
            error: Some(e),
            ..Applied::default()
        }
    }

    /// A coordinator step's outcome.
    fn from_call(outcome: HostResult<Option<Outcome>>, state_bytes: Option<usize>) -> Self {
        let mut applied = Applied {
            state_bytes,
            ..Applied::default()
        };
        match outcome {
            Ok(Some(outcome)) => applied.restart_required = outcome.restart_required,
            Ok(None) => {}
            Err(e) => applied.error = Some(e),
        }
        applied
    }
}

impl Replayer<'_> {
    fn run(mut self, trace: &Trace) -> Result<(ReplayResult, Vec<CheckpointState>), ReplayError> {
        let mut steps = Vec::with_capacity(trace.steps.len());
        for (index, step) in trace.steps.iter().enumerate() {
            let before = self.table_keys()?;
            let applied = if step.op.is_writer_op() {
                self.apply_writer(index, &step.instance, &step.op)?
            } else {
                let (outcome, state_bytes) = self.apply(index, &step.instance, &step.op)?;
                Applied::from_call(outcome, state_bytes)
            };
            let after = self.table_keys()?;
            let (state, committed_up_to) = match self.instances.get_mut(&step.instance) {
                Some(instance) => (instance.state(), instance.committed_up_to()),
                // parse() guarantees every step names an instance that exists.
                None => {
                    return Err(ReplayError::Host(format!(
                        "step {index}: no instance {:?}",
                        step.instance
                    )))
                }
            };
            let mut result = StepResult::new(state);
            result.committed_up_to = committed_up_to;
            result.committed = self.new_identifiers(&before, &after)?;
            result.tags_created = after
                .tags
                .difference(&before.tags)
                .filter_map(|k| layout::tag_name(self.format, k))
                .collect();
            result.tags_deleted = before
                .tags
                .difference(&after.tags)
                .filter_map(|k| layout::tag_name(self.format, k))
                .collect();
            result.state_bytes = applied.state_bytes;
            result.restart_required = applied.restart_required;
            result.error = applied.error;
            steps.push(result);
        }
        let snapshots = self
            .suspended(|d| d.list_snapshots())
            .map_err(|e| table_error("list the snapshots", e))?;
        let tags = self
            .suspended(|d| d.list_tags())
            .map_err(|e| table_error("list the tags", e))?;
        Ok((
            ReplayResult {
                steps,
                snapshots,
                tags,
            },
            self.states,
        ))
    }

    /// Runs one step. Returns the call's outcome (`None` for calls without
    /// one) and, for a successful checkpoint, the state's length.
    #[allow(clippy::type_complexity)]
    fn apply(
        &mut self,
        index: usize,
        name: &str,
        op: &Op,
    ) -> Result<(HostResult<Option<Outcome>>, Option<usize>), ReplayError> {
        Ok(match op {
            Op::Event { .. }
            | Op::Checkpoint { .. }
            | Op::Complete { .. }
            | Op::Abort { .. }
            | Op::ResetSubtask { .. }
            | Op::Restored { .. }
            | Op::Close => {
                let call = op.call().ok_or_else(|| {
                    ReplayError::Host(format!("step {index}: {} is not a call", op.name()))
                })?;
                return self.call(index, name, call);
            }
            Op::Start { config } => {
                // Discarding the old instance drops its Store: nothing of it runs again.
                self.instances.remove(name);
                (self.create_and_start(name, config.clone(), None), None)
            }
            Op::Failover {
                checkpoint,
                finished_subtasks,
                config,
                state,
            } => {
                let restore = match checkpoint {
                    None => None,
                    Some(c) => {
                        let bytes = match state {
                            Some(bytes) => bytes.clone(),
                            None => self.kept.get(&(name.to_string(), *c)).cloned().ok_or_else(|| Malformed {
                                step: Some(index),
                                op: Some(op.name().into()),
                                field: Some("checkpoint".into()),
                                message: format!(
                                    "no state bytes were kept for checkpoint {c} of instance {name:?} \
                                     (no successful \"checkpoint\" step for it) and there is no \"state_hex\""
                                ),
                            })?,
                        };
                        Some(RestorePoint {
                            checkpoint: *c,
                            state: bytes,
                            finished_subtasks: finished_subtasks.clone(),
                        })
                    }
                };
                self.instances.remove(name);
                (self.create_and_start(name, config.clone(), restore), None)
            }
            Op::Clock { ms } => {
                self.clock.lock().set_next(*ms);
                (Ok(None), None)
            }
            Op::StorageFault { call, fault } => {
                self.storage.lock().push_fault(*call, *fault);
                (Ok(None), None)
            }
            Op::Write { .. }
            | Op::EndInput { .. }
            | Op::Send { .. }
            | Op::WriterCommitted { .. }
            | Op::WriterAbort { .. }
            | Op::WriterSnapshot { .. }
            | Op::WriterRestore { .. } => {
                return Err(ReplayError::Host(format!(
                    "step {index}: the writer step {:?} belongs to apply_writer",
                    op.name()
                )))
            }
        })
    }

    /// Runs one writer step (TRACE-FORMAT "Writer steps").
    fn apply_writer(&mut self, index: usize, name: &str, op: &Op) -> Result<Applied, ReplayError> {
        Ok(match op {
            Op::Write {
                subtask,
                entry,
                send,
            } => {
                let slot = match self.writer(name, *subtask) {
                    Ok(slot) => slot,
                    Err(e) => return Ok(Applied::error(e)),
                };
                let produced = slot.api.report(
                    entry.checkpoint,
                    entry.committables.to_vecs(),
                    entry.watermark,
                    entry.savepoint,
                );
                self.produced(name, *subtask, produced, *send)?
            }
            Op::EndInput {
                subtask,
                committables,
                watermark,
                send,
            } => {
                let slot = match self.writer(name, *subtask) {
                    Ok(slot) => slot,
                    Err(e) => return Ok(Applied::error(e)),
                };
                let produced = slot.api.end_input(committables.clone(), *watermark);
                self.produced(name, *subtask, produced, *send)?
            }
            Op::Send { subtask, count } => {
                if let Err(e) = self.writer(name, *subtask) {
                    return Ok(Applied::error(e));
                }
                self.deliver(name, *subtask, *count)?
            }
            Op::WriterCommitted {
                subtask,
                checkpoint,
            } => {
                // By default the named coordinator's committed-up-to; while
                // it is none the step does nothing.
                let u = match checkpoint {
                    Some(u) => Some(*u),
                    None => self.instance(name)?.committed_up_to(),
                };
                match u {
                    Some(u) => self.each_writer(name, *subtask, |_, w| w.committed(u)),
                    None => Applied::default(),
                }
            }
            Op::WriterAbort {
                subtask,
                checkpoint,
            } => self.each_writer(name, *subtask, |_, w| w.checkpoint_aborted(*checkpoint)),
            Op::WriterSnapshot {
                subtask,
                checkpoint,
            } => {
                let mut taken = Vec::new();
                let applied = self.each_writer(name, *subtask, |s, w| {
                    taken.push((s, w.state()?));
                    Ok(())
                });
                for (s, bytes) in taken {
                    self.writer_kept
                        .insert((name.to_string(), s, *checkpoint), bytes);
                }
                applied
            }
            Op::WriterRestore {
                subtask,
                checkpoint,
                attempt,
                send,
            } => {
                // parse() checked that bytes were kept; only a writer whose
                // state() trapped can have kept none.
                let bytes = match checkpoint {
                    None => None,
                    Some(c) => Some(
                        self.writer_kept
                            .get(&(name.to_string(), *subtask, *c))
                            .cloned()
                            .ok_or_else(|| Malformed {
                                step: Some(index),
                                op: Some(op.name().into()),
                                field: Some("checkpoint".into()),
                                message: format!(
                                    "no writer state bytes were kept for checkpoint {c} of writer {subtask} of instance {name:?}"
                                ),
                            })?,
                    ),
                };
                // The old writer and its outbox are discarded; the fresh one
                // (even a failed one) has the step's attempt.
                let key = (name.to_string(), *subtask);
                self.writers.remove(&key);
                let created = self.writer(name, *subtask).map(|_| ());
                if let Some(slot) = self.writers.get_mut(&key) {
                    slot.attempt = *attempt;
                }
                if let Err(e) = created {
                    return Ok(Applied::error(e));
                }
                match (checkpoint, bytes) {
                    (Some(c), Some(bytes)) => {
                        let slot = self.writer(name, *subtask).map_err(|e| {
                            ReplayError::Host(format!("writer {subtask} vanished: {e}"))
                        })?;
                        match slot.api.restore(&bytes, *c) {
                            Err(e) => Applied::error(e),
                            Ok(entries) => {
                                slot.outbox.push_back(Outgoing::Restored {
                                    checkpoint: *c,
                                    entries,
                                });
                                if *send {
                                    self.deliver(name, *subtask, None)?
                                } else {
                                    Applied::default()
                                }
                            }
                        }
                    }
                    // From scratch: nothing to send.
                    _ => Applied::default(),
                }
            }
            other => {
                return Err(ReplayError::Host(format!(
                    "step {index}: {:?} is not a writer step",
                    other.name()
                )))
            }
        })
    }

    /// The writer `(name, subtask)`, created (attempt 0, empty outbox) if it
    /// does not exist. A creation that fails leaves a [`FailedWriter`] and
    /// returns the error.
    fn writer(&mut self, name: &str, subtask: u32) -> HostResult<&mut WriterSlot> {
        let key = (name.to_string(), subtask);
        let mut failure = None;
        if !self.writers.contains_key(&key) {
            let api: Box<dyn WriterApi> = match self.driver.create_writer(subtask) {
                Ok(api) => api,
                Err(e) => {
                    failure = Some(e);
                    Box::new(FailedWriter)
                }
            };
            self.writers.insert(
                key.clone(),
                WriterSlot {
                    api,
                    attempt: 0,
                    outbox: VecDeque::new(),
                },
            );
        }
        match failure {
            Some(e) => Err(e),
            None => self
                .writers
                .get_mut(&key)
                .ok_or_else(|| HostError::trap("the writer was not kept")),
        }
    }

    /// A `write` or `end_input` call's result: the entry joins the outbox,
    /// which is delivered with `send`; a writer error is the step's error.
    fn produced(
        &mut self,
        name: &str,
        subtask: u32,
        produced: HostResult<Entry>,
        send: bool,
    ) -> Result<Applied, ReplayError> {
        let entry = match produced {
            Ok(entry) => entry,
            Err(e) => return Ok(Applied::error(e)),
        };
        if let Some(slot) = self.writers.get_mut(&(name.to_string(), subtask)) {
            slot.outbox.push_back(Outgoing::Event(entry));
        }
        if send {
            self.deliver(name, subtask, None)
        } else {
            Ok(Applied::default())
        }
    }

    /// Delivers the oldest `count` (default: all) events of a writer's
    /// outbox, one coordinator call each. `restart_required` is true if any
    /// call said so; the first error stops the delivery (the event whose
    /// call failed was delivered; the later ones stay in the outbox).
    fn deliver(
        &mut self,
        name: &str,
        subtask: u32,
        count: Option<u64>,
    ) -> Result<Applied, ReplayError> {
        let key = (name.to_string(), subtask);
        let mut applied = Applied::default();
        let mut sent: u64 = 0;
        while count.is_none_or(|n| sent < n) {
            let Some(slot) = self.writers.get_mut(&key) else {
                break;
            };
            let Some(item) = slot.outbox.pop_front() else {
                break;
            };
            let attempt = slot.attempt;
            let instance = self.instance(name)?;
            let result = match item {
                Outgoing::Event(entry) => instance.event(subtask, attempt, entry),
                Outgoing::Restored {
                    checkpoint,
                    entries,
                } => instance.restored(subtask, attempt, checkpoint, entries),
            };
            sent += 1;
            match result {
                Ok(outcome) => applied.restart_required |= outcome.restart_required,
                Err(e) => {
                    applied.error = Some(e);
                    break;
                }
            }
        }
        Ok(applied)
    }

    /// Runs `call` on the writer `subtask`, or on every writer of the
    /// instance in subtask order; the first error stops and is the step's.
    fn each_writer(
        &mut self,
        name: &str,
        subtask: Option<u32>,
        mut call: impl FnMut(u32, &mut dyn WriterApi) -> HostResult<()>,
    ) -> Applied {
        let subtasks: Vec<u32> = match subtask {
            Some(s) => vec![s],
            None => self
                .writers
                .keys()
                .filter(|(n, _)| n == name)
                .map(|(_, s)| *s)
                .collect(),
        };
        for s in subtasks {
            let Some(slot) = self.writers.get_mut(&(name.to_string(), s)) else {
                // parse() guarantees the writer exists.
                continue;
            };
            if let Err(e) = call(s, slot.api.as_mut()) {
                return Applied::error(e);
            }
        }
        Applied::default()
    }

    fn create_and_start(
        &mut self,
        name: &str,
        config: sink_coordinator::Config,
        restore: Option<RestorePoint>,
    ) -> HostResult<Option<Outcome>> {
        match self.driver.create(config, restore) {
            Ok(mut instance) => {
                let outcome = instance.start();
                self.instances.insert(name.to_string(), instance);
                outcome.map(Some)
            }
            Err(e) => {
                self.instances
                    .insert(name.to_string(), Box::new(FailedInstance));
                Err(e)
            }
        }
    }

    /// Runs a step that is a coordinator call (the result as [`Self::apply`]'s).
    #[allow(clippy::type_complexity)]
    fn call(
        &mut self,
        index: usize,
        name: &str,
        call: Call,
    ) -> Result<(HostResult<Option<Outcome>>, Option<usize>), ReplayError> {
        let checkpoint = match call {
            Call::Checkpoint(n) => n,
            _ => 0,
        };
        Ok(match self.instance(name)?.apply(call) {
            Ok(Reply::Outcome(o)) => (Ok(Some(o)), None),
            Ok(Reply::State(bytes)) => {
                let len = bytes.len();
                self.states.push(CheckpointState {
                    step: index,
                    instance: name.to_string(),
                    checkpoint,
                    state: bytes.clone(),
                });
                self.kept.insert((name.to_string(), checkpoint), bytes);
                (Ok(None), Some(len))
            }
            // A declined checkpoint keeps nothing.
            Err(e) => (Err(e.error().clone()), None),
        })
    }

    fn instance(&mut self, name: &str) -> Result<&mut Box<dyn CoordinatorApi>, ReplayError> {
        self.instances.get_mut(name).ok_or_else(|| {
            ReplayError::Host(format!(
                "no instance {name:?} (the trace was not validated)"
            ))
        })
    }

    /// Runs a table read of the replayer itself, with storage faults off.
    fn suspended<T>(
        &mut self,
        read: impl FnOnce(&mut dyn Driver) -> HostResult<T>,
    ) -> HostResult<T> {
        self.storage.lock().set_suspended(true);
        let result = read(&mut *self.driver);
        self.storage.lock().set_suspended(false);
        result
    }

    fn table_keys(&mut self) -> Result<TableKeys, ReplayError> {
        let mut storage = self.storage.lock();
        storage.set_suspended(true);
        let snapshots = storage.list(layout::SNAPSHOT_DIR);
        let tags = storage.list(layout::TAG_DIR);
        storage.set_suspended(false);
        let list_error = |e: sink_coordinator::StorageError| {
            ReplayError::Host(format!("cannot list the table: {e}"))
        };
        Ok(TableKeys {
            snapshots: snapshots.map_err(list_error)?.into_iter().collect(),
            tags: tags.map_err(list_error)?.into_iter().collect(),
        })
    }

    /// The identifiers of the snapshots in `after` but not in `before`, in id
    /// order, decoded through the driver's own table reader.
    fn new_identifiers(
        &mut self,
        before: &TableKeys,
        after: &TableKeys,
    ) -> Result<Vec<u64>, ReplayError> {
        let mut ids = Vec::new();
        for key in after.snapshots.difference(&before.snapshots) {
            if let Some(id) = layout::snapshot_id(self.format, key)? {
                ids.push(id);
            }
        }
        // Native keys are zero-padded, Paimon's are not: sort numerically.
        ids.sort_unstable();
        let mut identifiers = Vec::with_capacity(ids.len());
        for id in ids {
            match self.suspended(|d| d.snapshot_by_id(id)) {
                Ok(Some(snapshot)) => identifiers.push(snapshot.identifier),
                Ok(None) => {
                    return Err(ReplayError::Host(format!(
                        "snapshot {id} was listed but cannot be read"
                    )))
                }
                Err(e) => return Err(table_error(&format!("read snapshot {id}"), e)),
            }
        }
        Ok(identifiers)
    }
}

fn table_error(what: &str, e: HostError) -> ReplayError {
    ReplayError::Host(format!("cannot {what} of the table: {e}"))
}
