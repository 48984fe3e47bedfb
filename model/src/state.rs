//! The model state: everything the host knows (writers, their outboxes and
//! pending `committed(u)` notifications, kept checkpoint bytes, budgets),
//! the table, the native coordinator instance itself, and a canonical
//! summary of it.
//!
//! The `Coordinator` holds maps and is not `Hash`, so the fingerprint
//! (`Hash`) hashes a summary instead: per slot the inputs the instance
//! received since its creation (events, restore events, resets, in order),
//! plus everything the public API shows (lifecycle, committed-up-to, final
//! commit, `Debug`: completed and committed-through). Together with the
//! table and the restore point this determines the instance (the core is
//! deterministic, SEMANTICS 9); two schedules that deliver the same inputs
//! to the same slots in a different interleaving meet in one state. Large
//! parts sit behind `Arc`s: a move copies only what it changes.

use std::collections::VecDeque;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use sink_coordinator::{Coordinator, Entry, Writer, END};

use crate::env::FaultEnv;

/// An entry as the model produces them: no watermark.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ent {
    pub checkpoint: u64,
    pub committables: Vec<Vec<u8>>,
    pub savepoint: bool,
}

impl Ent {
    pub fn of(e: &Entry) -> Ent {
        debug_assert!(e.watermark.is_none());
        Ent {
            checkpoint: e.checkpoint,
            committables: e.committables.to_vecs(),
            savepoint: e.savepoint,
        }
    }
    pub fn entry(&self) -> Entry {
        Entry {
            checkpoint: self.checkpoint,
            committables: self.committables.as_slice().into(),
            watermark: None,
            savepoint: self.savepoint,
        }
    }
    pub fn is_end(&self) -> bool {
        self.checkpoint == END
    }
}

/// What a writer's outbox holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    Event(Ent),
    Restored { checkpoint: u64, entries: Vec<Ent> },
}

/// One call on the coordinator instance (kept for a host's repeat after `storage`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    Start,
    Event {
        subtask: u32,
        attempt: u32,
        entry: Ent,
    },
    Restored {
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Ent>,
    },
    Reset {
        subtask: u32,
        checkpoint: Option<u64>,
    },
    Checkpoint(u64),
    Complete(u64),
    Abort(u64),
}

impl Call {
    /// The core's call: the model keeps its own hashable, compact form in
    /// its states (entries without watermarks, as [`Ent`]) and converts at
    /// the coordinator.
    pub fn to_core(&self) -> sink_coordinator::Call {
        use sink_coordinator::Call as Core;
        match self {
            Call::Start => Core::Start,
            Call::Event {
                subtask,
                attempt,
                entry,
            } => Core::Event {
                subtask: *subtask,
                attempt: *attempt,
                entry: entry.entry(),
            },
            Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => Core::Restored {
                subtask: *subtask,
                attempt: *attempt,
                checkpoint: *checkpoint,
                entries: entries.iter().map(Ent::entry).collect(),
            },
            Call::Reset {
                subtask,
                checkpoint,
            } => Core::SubtaskReset {
                subtask: *subtask,
                checkpoint: *checkpoint,
            },
            Call::Checkpoint(n) => Core::Checkpoint(*n),
            Call::Complete(n) => Core::CheckpointComplete(*n),
            Call::Abort(n) => Core::CheckpointAborted(*n),
        }
    }
}

/// A persistent list (O(1) clone and push), for the trace.
pub struct List<T>(Option<Arc<Node<T>>>);

struct Node<T> {
    item: T,
    prev: List<T>,
    len: usize,
}

impl<T> Clone for List<T> {
    fn clone(&self) -> Self {
        List(self.0.clone())
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List(None)
    }
}

impl<T> fmt::Debug for List<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{} items]", self.len())
    }
}

impl<T> List<T> {
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |n| n.len)
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl<T: Clone> List<T> {
    pub fn push(&mut self, item: T) {
        let len = self.len() + 1;
        let prev = List(self.0.take());
        self.0 = Some(Arc::new(Node { item, prev, len }));
    }
    pub fn to_vec(&self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len());
        let mut cur = &self.0;
        while let Some(n) = cur {
            out.push(n.item.clone());
            cur = &n.prev.0;
        }
        out.reverse();
        out
    }
}

/// A writer's state bytes kept at one checkpoint, with what the model knows
/// about its input at that point.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WSnap {
    pub bytes: Vec<u8>,
    /// Input segments consumed (reported) up to this checkpoint.
    pub pos: u32,
    /// The input had ended (END produced) before this checkpoint.
    pub ended_src: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CkStatus {
    InProgress,
    Completed,
    Aborted,
}

/// One checkpoint the host triggered.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ck {
    pub id: u64,
    /// Global failovers before it was triggered.
    pub epoch: u32,
    /// The coordinator's state bytes (none: declined).
    pub coord: Option<Vec<u8>>,
    pub writers: Vec<Option<WSnap>>,
    /// Writers that had finished before it was triggered: they take no part.
    pub finished_at_trigger: Vec<bool>,
    /// Finished writers whose events had all reached the coordinator before
    /// its `checkpoint(n)`: a global failover from it names them (6.2).
    pub clean: Vec<bool>,
    /// Finished writers with events still in flight at `checkpoint(n)`: a
    /// global failover from it does not name them and restores them from
    /// their state at this earlier checkpoint (their last one).
    pub carry: Vec<Option<u64>>,
    /// A savepoint (writers report it flagged).
    pub savepoint: bool,
    /// A drained stop-with-savepoint (every writer had ended before it).
    pub stop: bool,
    pub status: CkStatus,
    /// Completed, and its `checkpoint-complete` not yet delivered to the coordinator.
    pub notify: bool,
}

/// One writer (subtask) as the host sees it.
#[derive(Clone, Debug)]
pub struct W {
    pub writer: Writer,
    /// `writer.state()`, refreshed after every change (the fingerprint).
    pub wstate: Vec<u8>,
    /// Informational (SEMANTICS 2): not part of the fingerprint.
    pub attempt: u32,
    pub outbox: VecDeque<Msg>,
    /// Input segments consumed.
    pub pos: u32,
    /// `end-input` ran in this attempt.
    pub ended: bool,
    /// The input has ended (in this attempt or before the state it restored).
    pub ended_src: bool,
    /// FLIP-147: finished (no state any more, takes part in no checkpoint;
    /// events it sent before may still be in flight).
    pub finished: bool,
    /// The first checkpoint this attempt took part in after its input ended
    /// that completed: its final checkpoint (FLIP-147); it may finish then.
    pub final_ck: Option<u64>,
    /// committed-up-to the host has yet to forward (latest value).
    pub note: Option<u64>,
    /// Highest committed-up-to forwarded to this attempt.
    pub seen_u: Option<u64>,
}

impl Hash for W {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // The helper's buffer and last checkpoint; its remembered u is seen_u.
        self.wstate.hash(h);
        self.outbox.hash(h);
        self.pos.hash(h);
        self.ended.hash(h);
        self.ended_src.hash(h);
        self.finished.hash(h);
        self.final_ck.hash(h);
        self.note.hash(h);
        self.seen_u.hash(h);
    }
}

/// An input a coordinator slot received.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SlotIn {
    Event(Ent),
    Restored(u64, Vec<Ent>),
    Reset(Option<u64>),
}

/// Canonical summary of the current coordinator instance.
#[derive(Clone, Debug, Default, Hash)]
pub struct CoordSum {
    pub life: &'static str,
    pub up_to: Option<u64>,
    pub final_done: bool,
    /// The coordinator's `Debug` (completed, committed-through, ...).
    pub debug: String,
    pub slots: Vec<Vec<SlotIn>>,
    /// While restoring: the slot is restored (restore event in, or finished).
    pub restored: Vec<bool>,
}

/// A snapshot of the table, as the model reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snap {
    pub commit_user: String,
    pub identifier: u64,
    pub committables: Vec<(u32, Vec<u8>)>,
}

/// Coverage flags (monotone), for the `sometimes` properties.
pub mod cov {
    pub const GLOBAL: u32 = 1;
    pub const NAMED_FINISHED: u32 = 2;
    pub const REGION: u32 = 4;
    pub const FAULT_FAIL: u32 = 8;
    pub const FAULT_AMBIGUOUS: u32 = 16;
    pub const RESTART_REQUIRED: u32 = 32;
    pub const END_WHILE_RESTORING: u32 = 64;
    pub const FINISHED: u32 = 128;
    pub const SAVEPOINT_TAG: u32 = 256;
    pub const DRAINED_TAG: u32 = 512;
    pub const GHOST: u32 = 1024;
    pub const FINISHED_IN_FLIGHT: u32 = 2048;
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Budget {
    pub checkpoints: u32,
    pub global: u32,
    pub region: u32,
    pub faults: u32,
    pub aborts: u32,
    pub savepoints: u32,
    pub ghosts: u32,
}

#[derive(Clone, Debug)]
pub struct St {
    /// Index of the input profile (init state).
    pub profile: usize,
    pub env: Arc<FaultEnv>,
    /// The current instance (not hashed: `coord` summarizes it).
    pub coordinator: Arc<Coordinator>,
    pub coord: Arc<CoordSum>,
    pub writers: Vec<W>,
    pub ckpts: Vec<Arc<Ck>>,
    pub in_progress: Option<u64>,
    /// Highest `checkpoint-complete` the current instance received.
    pub notified: Option<u64>,
    pub epoch: u32,
    /// The checkpoint the current instance restored from, and the writers named finished.
    pub restore_base: Option<u64>,
    pub named: Vec<u32>,
    pub left: Budget,
    /// A stop-with-savepoint was triggered in this epoch (and not aborted):
    /// the host triggers no further checkpoint (the job is stopping).
    pub stopping: bool,
    /// Bit `c`: a flagged entry for checkpoint `c` reached a coordinator.
    pub flags: u64,
    /// Bit `s`: drained stop-with-savepoint `s` was pending (flag in,
    /// `s <= completed`) when its instance wrote the END snapshot: it is
    /// owed a tag on the END snapshot (5.4).
    pub drained_owed: u64,
    /// Bit `s`: drained stop-with-savepoint `s` is not owed its tag by the
    /// page as written (a gap the model found, tests/regressions/README.md,
    /// `drained-savepoint-dropped-by-ordinary-commit`): before the END
    /// snapshot, a commit rule ran with a target `>= s` (committed-up-to
    /// reached `s` while a slot lacked its END entry, after a region reset)
    /// and dropped `s`, which has no snapshot of its own (5.4).
    pub excused: u64,
    /// The result of the tag check at the end (terminal), if it failed.
    pub tags: Option<String>,
    /// A call that returned `storage`: the host repeats it next.
    pub retry: Option<Call>,
    /// A fatal error (or a host-side failure) in a schedule that follows the contract.
    pub fatal: Option<String>,
    /// The result of driving the job to its end (terminal).
    pub done: Option<Result<(), String>>,
    pub cov: u32,
    /// The table (derived from `env`; snapshots are never removed, so the
    /// latest table holds every commit ever made).
    pub table: Arc<Vec<Snap>>,
    /// The host's moves so far, as TRACE-FORMAT steps.
    pub trace: List<crate::trace_steps::TStep>,
}

impl Hash for St {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.profile.hash(h);
        self.env.hash(h);
        self.coord.hash(h);
        self.writers.hash(h);
        // Kept checkpoints, reduced to what a later move can still use: the
        // bytes of a restore point only while a failover may use them.
        for c in &self.ckpts {
            c.id.hash(h);
            c.status.hash(h);
            c.notify.hash(h);
            c.savepoint.hash(h);
            c.stop.hash(h);
            let base = Some(c.id) == self.restore_base;
            let current = c.epoch == self.epoch;
            current.hash(h);
            let pending = self.in_progress == Some(c.id);
            if self.left.global > 0 || base || pending {
                c.finished_at_trigger.hash(h);
                c.clean.hash(h);
                c.carry.hash(h);
            }
            if self.left.global > 0 || base {
                c.coord.hash(h);
            }
            if self.left.global > 0 || pending || ((current || base) && self.left.region > 0) {
                c.writers.hash(h);
            }
        }
        self.in_progress.hash(h);
        self.notified.hash(h);
        self.restore_base.hash(h);
        self.named.hash(h);
        self.left.hash(h);
        self.stopping.hash(h);
        self.flags.hash(h);
        self.drained_owed.hash(h);
        self.excused.hash(h);
        self.tags.hash(h);
        self.retry.hash(h);
        self.fatal.hash(h);
        self.done.hash(h);
        // Not hashed: `cov` (history flags for the `sometimes` properties;
        // a state reached with fewer flags stands for the others), `epoch`
        // (only "same epoch" matters, hashed per checkpoint), the trace.
    }
}

impl St {
    pub fn fingerprint(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

impl PartialEq for St {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint() == other.fingerprint()
    }
}
