//! Replaying a trace (TRACE-FORMAT) through a [`Driver`].
//!
//! The table is a fresh [`MemStorage`] behind a [`FaultyStorage`]; it and the
//! trace clock belong to the host and survive failovers. What each step did
//! to the table (`committed`, `tags_created`, `tags_deleted`) is measured by
//! diffing the table's `snapshot/` and `tag/` keys around the step, with
//! faults suspended for those reads, so a write that landed although storage
//! reported an error shows in the step where it landed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use sink_coordinator::table::{SNAPSHOT_PREFIX, TAG_PREFIX};
use sink_coordinator::{Lifecycle, Outcome, RestorePoint, Snapshot, Storage, Tag};

use crate::clock::ManualClock;
use crate::driver::{ComponentDriver, CoordinatorApi, Driver, FailedInstance, NativeDriver};
use crate::engine::Runtime;
use crate::env::Shared;
use crate::error::{HostError, HostResult};
use crate::storage::{FaultyStorage, MemStorage};
use crate::trace::{Malformed, Op, Trace};

/// What one step reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepResult {
    /// The named instance's state after the step.
    pub state: Lifecycle,
    /// Identifiers of the snapshots the table gained, in id order.
    pub committed: Vec<u64>,
    /// Tag names the table gained / lost, in byte order.
    pub tags_created: Vec<String>,
    pub tags_deleted: Vec<String>,
    pub restart_required: bool,
    /// The state's length, on a successful `checkpoint` step.
    pub state_bytes: Option<usize>,
    pub error: Option<HostError>,
}

impl StepResult {
    pub fn new(state: Lifecycle) -> Self {
        StepResult {
            state,
            committed: Vec::new(),
            tags_created: Vec::new(),
            tags_deleted: Vec::new(),
            restart_required: false,
            state_bytes: None,
            error: None,
        }
    }
}

/// The result document of a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayResult {
    pub steps: Vec<StepResult>,
    /// The table's log at the end, by id.
    pub snapshots: Vec<Snapshot>,
    /// The table's tags at the end, by name.
    pub tags: Vec<Tag>,
}

impl ReplayResult {
    /// The canonical text (see [`crate::render`]).
    pub fn render(&self) -> String {
        crate::render::render(self)
    }
}

/// Why a replay produced no result.
#[derive(Debug)]
pub enum ReplayError {
    /// The trace breaks a rule of TRACE-FORMAT (exit code 2).
    Malformed(Malformed),
    /// The host itself failed: the component could not be loaded, or the
    /// table could not be read back (exit code 1).
    Host(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Malformed(m) => m.fmt(f),
            ReplayError::Host(m) => write!(f, "replay failed: {m}"),
        }
    }
}

impl std::error::Error for ReplayError {}

impl From<Malformed> for ReplayError {
    fn from(m: Malformed) -> Self {
        ReplayError::Malformed(m)
    }
}

/// How to run the coordinator.
#[derive(Clone, Copy)]
pub enum Mode<'r> {
    /// The Rust core, without wasm.
    Native,
    /// The component, on this runtime.
    Component(&'r Runtime),
}

/// Parses, validates and replays a trace document.
pub fn replay_str(text: &str, mode: Mode<'_>) -> Result<ReplayResult, ReplayError> {
    let trace = crate::trace::parse(text)?;
    replay(&trace, mode)
}

/// Replays a validated trace on a fresh in-memory table.
pub fn replay(trace: &Trace, mode: Mode<'_>) -> Result<ReplayResult, ReplayError> {
    let storage = Shared::new(FaultyStorage::new(MemStorage::default()));
    let clock = Shared::new(ManualClock::new(trace.clock_start_ms, trace.clock_step_ms));
    let mut driver: Box<dyn Driver> = match mode {
        Mode::Native => Box::new(NativeDriver::new(storage.as_storage(), clock.as_clock())),
        Mode::Component(runtime) => Box::new(
            ComponentDriver::new(runtime, storage.as_storage(), clock.as_clock())
                .map_err(|e| ReplayError::Host(format!("cannot instantiate the component: {e}")))?,
        ),
    };
    Replayer {
        storage,
        clock,
        driver: driver.as_mut(),
        instances: BTreeMap::new(),
        kept: BTreeMap::new(),
    }
    .run(trace)
}

/// The table's keys of interest at one moment.
struct TableKeys {
    snapshots: BTreeSet<String>,
    tags: BTreeSet<String>,
}

struct Replayer<'d> {
    storage: Shared<FaultyStorage<MemStorage>>,
    clock: Shared<ManualClock>,
    driver: &'d mut dyn Driver,
    instances: BTreeMap<String, Box<dyn CoordinatorApi>>,
    /// State bytes kept by successful `checkpoint` steps, per (instance name, checkpoint).
    kept: BTreeMap<(String, u64), Vec<u8>>,
}

impl Replayer<'_> {
    fn run(mut self, trace: &Trace) -> Result<ReplayResult, ReplayError> {
        let mut steps = Vec::with_capacity(trace.steps.len());
        for (index, step) in trace.steps.iter().enumerate() {
            let before = self.table_keys()?;
            let (outcome, state_bytes) = self.apply(index, &step.instance, &step.op)?;
            let after = self.table_keys()?;
            let state = match self.instances.get_mut(&step.instance) {
                Some(instance) => instance.state(),
                // parse() guarantees every step names an instance that exists.
                None => {
                    return Err(ReplayError::Host(format!(
                        "step {index}: no instance {:?}",
                        step.instance
                    )))
                }
            };
            let mut result = StepResult::new(state);
            result.committed = self.new_identifiers(&before, &after)?;
            result.tags_created = after
                .tags
                .difference(&before.tags)
                .map(|k| tag_name(k))
                .collect();
            result.tags_deleted = before
                .tags
                .difference(&after.tags)
                .map(|k| tag_name(k))
                .collect();
            result.state_bytes = state_bytes;
            match outcome {
                Ok(Some(outcome)) => result.restart_required = outcome.restart_required,
                Ok(None) => {}
                Err(e) => result.error = Some(e),
            }
            steps.push(result);
        }
        let snapshots = self
            .suspended(|d| d.list_snapshots())
            .map_err(|e| table_error("list the snapshots", e))?;
        let tags = self
            .suspended(|d| d.list_tags())
            .map_err(|e| table_error("list the tags", e))?;
        Ok(ReplayResult {
            steps,
            snapshots,
            tags,
        })
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
        let some = |r: HostResult<Outcome>| r.map(Some);
        Ok(match op {
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
            Op::Event {
                subtask,
                attempt,
                entry,
            } => (
                some(
                    self.instance(name)?
                        .event(*subtask, *attempt, entry.clone()),
                ),
                None,
            ),
            Op::Checkpoint { checkpoint } => match self.instance(name)?.checkpoint(*checkpoint) {
                Ok(bytes) => {
                    let len = bytes.len();
                    self.kept.insert((name.to_string(), *checkpoint), bytes);
                    (Ok(None), Some(len))
                }
                // A declined checkpoint keeps nothing.
                Err(e) => (Err(e), None),
            },
            Op::Complete { checkpoint } => (
                some(self.instance(name)?.checkpoint_complete(*checkpoint)),
                None,
            ),
            Op::Abort { checkpoint } => (
                some(self.instance(name)?.checkpoint_aborted(*checkpoint)),
                None,
            ),
            Op::ResetSubtask {
                subtask,
                checkpoint,
            } => (
                some(self.instance(name)?.subtask_reset(*subtask, *checkpoint)),
                None,
            ),
            Op::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => (
                some(self.instance(name)?.restored(
                    *subtask,
                    *attempt,
                    *checkpoint,
                    entries.clone(),
                )),
                None,
            ),
            Op::Close => (some(self.instance(name)?.close()), None),
            Op::Clock { ms } => {
                self.clock.lock().set_next(*ms);
                (Ok(None), None)
            }
            Op::StorageFault { call, fault } => {
                self.storage.lock().push_fault(*call, *fault);
                (Ok(None), None)
            }
        })
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
        let snapshots = storage.list(SNAPSHOT_PREFIX);
        let tags = storage.list(TAG_PREFIX);
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
            let id = key
                .strip_prefix(SNAPSHOT_PREFIX)
                .and_then(|digits| digits.parse::<u64>().ok())
                .ok_or_else(|| {
                    ReplayError::Host(format!("the table holds an unexpected key {key:?}"))
                })?;
            ids.push(id);
        }
        // Keys are zero-padded, but sort numerically rather than rely on it.
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

fn tag_name(key: &str) -> String {
    key.strip_prefix(TAG_PREFIX).unwrap_or(key).to_string()
}

fn table_error(what: &str, e: HostError) -> ReplayError {
    ReplayError::Host(format!("cannot {what} of the table: {e}"))
}
