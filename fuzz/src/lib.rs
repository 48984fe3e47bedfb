//! The bodies of the fuzz targets (issue 11), shared by the libFuzzer entry
//! points (`fuzz_targets/*.rs`, `cargo fuzz run --features libfuzzer`) and
//! the regression test that runs every committed corpus file once
//! (`tests/corpus.rs`, stable Rust).
//!
//! Each target must not panic on any input; a panic is a finding. Targets:
//!
//! - [`state_decode`]: the coordinator's state bytes (`state_codec::decode`),
//!   and the same bytes as a restore point of a starting coordinator;
//! - [`writer_restore`]: the writer helper's state bytes (`Writer::restore`),
//!   with a restore → state → restore fixed-point check;
//! - [`table_decode`]: table records (`table::decode_snapshot`, and tags
//!   through `table::list_tags` on a `MemStorage`);
//! - [`table_walk`]: whole hostile tables (snapshots whose ids, marks and
//!   previous-of-user links are arbitrary, a hint, tags) under a coordinator
//!   that reads, commits, tags savepoints and walks back: a damaged table is
//!   `corrupt-state`, never a panic or a loop;
//! - [`trace_parse`]: the trace crate's parser (`trace/src/format/`), whose
//!   error messages must stay short whatever the input;
//! - [`calls`]: arbitrary call sequences against the native core, with
//!   failovers and injected storage faults, checking exactly-once: every
//!   committable is in the table at most once, and each commit user's
//!   identifiers strictly increase.

use std::collections::{BTreeMap, BTreeSet};

use arbitrary::Unstructured;
use sink_coordinator::{
    state_codec, table, Config, Coordinator, Entry, Env, FinalCommitMode, MemEnv, MemStorage,
    OwnedEnv, RecoveryMode, RestorePoint, StepClock, Storage, StorageError, Writer, END,
    MAX_CHECKPOINT,
};

// The trace format and the fault injector come from the pure trace crate,
// which stands on the core alone: no wasmtime in any fuzz build.
use sink_coordinator_trace::faults::{CallKind, Fault, FaultMode, FaultyStorage};
use sink_coordinator_trace::format as trace;

// ---------------------------------------------------------------------------
// Decoders
// ---------------------------------------------------------------------------

pub fn state_decode(data: &[u8]) {
    let _ = state_codec::decode(data);
    // The same bytes restoring a coordinator: `start` validates them.
    if let [p, r, state @ ..] = data {
        let restore = RestorePoint {
            checkpoint: u64::from(*r % 8),
            state: state.to_vec(),
            finished_subtasks: vec![u32::from(*p % 3)],
        };
        let mut c = Coordinator::new(Config::new(1 + u32::from(*p % 4), "job"), Some(restore));
        let mut env = MemEnv::default();
        let _ = c.start(&mut env);
        let _ = c.checkpoint(&mut env, 9);
        let _ = c.checkpoint_complete(&mut env, 9);
    }
}

pub fn writer_restore(data: &[u8]) {
    let Some((head, bytes)) = data.split_first_chunk::<9>() else {
        return;
    };
    let subtask = u32::from(head[0]);
    let raw = u64::from_le_bytes(head[1..9].try_into().unwrap());
    // Mostly small checkpoints, sometimes anything.
    let r = if raw >> 63 == 1 { raw } else { raw % 16 };
    let mut w = Writer::new(subtask);
    if let Ok(entries) = w.restore(bytes, r) {
        let mut again = Writer::new(subtask);
        let replayed = again.restore(&w.state(), r);
        assert_eq!(
            replayed.as_ref().ok(),
            Some(&entries),
            "restore -> state -> restore is not a fixed point: {replayed:?}"
        );
        let _ = w.committed(r);
        let _ = w.report(
            r.saturating_add(1).min(MAX_CHECKPOINT),
            vec![b"x".to_vec()],
            None,
            false,
        );
        let _ = w.end_input(vec![], None);
    }
}

pub fn table_decode(data: &[u8]) {
    let Some((selector, bytes)) = data.split_first() else {
        return;
    };
    if selector % 2 == 0 {
        let _ = table::decode_snapshot(&table::snapshot_key(1), bytes);
    } else {
        let mut st = MemStorage::default();
        st.map.insert(table::tag_key("t"), bytes.to_vec());
        let _ = table::list_tags(&mut st);
        // A whole table of fuzzed records: readers must not panic either.
        st.map.insert(table::snapshot_key(1), bytes.to_vec());
        let _ = table::list_snapshots(&mut st);
        let _ = table::latest_snapshot(&mut st);
    }
}

/// A table of up to 8 snapshots read from `data`: each chooses its key's id,
/// the id, user and identifier it claims, its previous-of-user link and its
/// users' marks among small numbers, so that self-links, cycles, forward
/// links, missing and foreign targets and ids out of place all come up.
fn hostile_table(u: &mut Unstructured<'_>) -> arbitrary::Result<MemStorage> {
    let users = ["job", "other"];
    let small = |u: &mut Unstructured<'_>| -> arbitrary::Result<u64> {
        Ok(u64::from(u.int_in_range(0u8..=9)?))
    };
    let mark = |u: &mut Unstructured<'_>| -> arbitrary::Result<table::UserMark> {
        Ok(table::UserMark {
            identifier: small(u)?,
            snapshot_id: small(u)?,
        })
    };
    let mut st = MemStorage::default();
    for _ in 0..u.int_in_range(0u8..=8)? {
        let key_id = small(u)?;
        let user = users[usize::from(u.int_in_range(0u8..=1)?)];
        let mut marks = BTreeMap::new();
        for other in users {
            if u.arbitrary()? {
                marks.insert(other.to_string(), mark(u)?);
            }
        }
        let record = table::StoredSnapshot {
            snapshot: sink_coordinator::Snapshot {
                id: if u.arbitrary()? { key_id } else { small(u)? },
                commit_user: user.to_string(),
                identifier: small(u)?,
                watermark: None,
                time_ms: 0,
                committables: vec![(0, format!("k{key_id}").into_bytes())],
            },
            previous_of_user: if u.arbitrary()? { Some(mark(u)?) } else { None },
            users: marks,
        };
        st.map
            .insert(table::snapshot_key(key_id), table::encode_snapshot(&record));
    }
    if u.arbitrary()? {
        st.map.insert(
            table::LATEST_HINT.into(),
            small(u)?.to_string().into_bytes(),
        );
    }
    Ok(st)
}

pub fn table_walk(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(storage) = hostile_table(&mut u) else {
        return;
    };
    let mut st = Budgeted::new(storage.clone());
    let _ = st.op(|env| table::list_snapshots(env.storage));
    let _ = st.op(|env| table::latest_snapshot(env.storage));
    let mut log = table::TableLog::default();
    for identifier in 0..10 {
        let _ = st.op(|env| log.find_user_snapshot(env.storage, "job", identifier));
    }
    // A coordinator that commits a savepoint on the table: it reads it,
    // writes through the filter and walks back to tag the savepoint.
    let mut config = Config::new(1, "job");
    config.savepoint_auto_tag = true;
    let mut c = Coordinator::new(config, None);
    let mut env = Budgeted::new(storage);
    let _ = env.op(|env| c.start(env));
    for cp in [3, 7, 11] {
        let _ = env.op(|env| c.event(env, 0, 0, entry(0, cp, 1, None, true)));
        let _ = env.op(|env| c.checkpoint_complete(env, cp));
    }
}

/// The table of [`table_walk`], with a budget of storage calls per
/// operation: a walk reads each record at most once, so an operation that
/// makes more calls than a few per key is looping, and fails here at once
/// instead of hanging the test (no clock involved).
struct Budgeted {
    budget: Budget,
    clock: StepClock,
}

/// The storage half of [`Budgeted`]: the table and the calls left.
struct Budget {
    storage: MemStorage,
    left: usize,
}

impl Budgeted {
    fn new(storage: MemStorage) -> Self {
        Budgeted {
            budget: Budget { storage, left: 0 },
            clock: StepClock::default(),
        }
    }

    /// Runs `f` with a fresh budget: four calls per key, and 32 more.
    fn op<R>(&mut self, f: impl FnOnce(&mut Env<'_>) -> R) -> R {
        self.budget.left = 4 * self.budget.storage.map.len() + 32;
        f(&mut Env::new(&mut self.budget, &mut self.clock))
    }
}

impl Budget {
    fn spend(&mut self, call: &str, key: &str) {
        assert!(
            self.left > 0,
            "one operation made more storage calls than 4 per key of the table: a loop \
             ({call} {key:?}; the table has {} keys)",
            self.storage.map.len()
        );
        self.left -= 1;
    }
}

impl Storage for Budget {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.spend("get", key);
        self.storage.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.spend("put-if-absent", key);
        self.storage.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.spend("put", key);
        self.storage.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.spend("delete", key);
        self.storage.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.spend("list", prefix);
        self.storage.list(prefix)
    }
}

pub fn trace_parse(data: &[u8]) {
    if let Err(e) = trace::parse_slice(data) {
        let message = e.to_string();
        assert!(
            message.len() < 2_000,
            "a trace error message of {} bytes",
            message.len()
        );
        assert!(!message.contains('\n'), "a multi-line message: {message}");
    }
}

// ---------------------------------------------------------------------------
// Call sequences
// ---------------------------------------------------------------------------

/// The storage of the call-sequence target: a map with injected faults.
type FuzzEnv = OwnedEnv<FaultyStorage<MemStorage>, StepClock>;

fn checkpoint(u: &mut Unstructured<'_>) -> arbitrary::Result<u64> {
    Ok(match u.int_in_range(0u8..=19)? {
        0 => END,
        1 => u64::MAX,
        2 => MAX_CHECKPOINT,
        n => u64::from(n % 7),
    })
}

/// The committables of subtask `s` at checkpoint `c`: the same every time
/// the entry is (re)sent, so a second commit of it shows as a duplicate.
fn entry(s: u32, c: u64, n: u8, watermark: Option<i64>, savepoint: bool) -> Entry {
    Entry {
        checkpoint: c,
        committables: (0..n)
            .map(|i| format!("s{s}-c{c}-i{i}").into_bytes())
            .collect(),
        watermark,
        savepoint,
    }
}

/// Exactly-once over the whole table: no committable twice, and each
/// user's identifiers strictly increasing in snapshot order.
fn check_table(storage: &mut MemStorage) {
    let snapshots = match table::list_snapshots(storage) {
        Ok(s) => s,
        Err(e) => panic!("the coordinator wrote a table it cannot read: {e:?}"),
    };
    let mut seen: BTreeMap<(String, u32, Vec<u8>), u64> = BTreeMap::new();
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    for s in &snapshots {
        if let Some(prev) = last.insert(s.commit_user.clone(), s.identifier) {
            assert!(
                s.identifier > prev,
                "user {:?}: identifier {} after {prev} (snapshot {})",
                s.commit_user,
                s.identifier,
                s.id
            );
        }
        for (subtask, c) in &s.committables {
            let key = (s.commit_user.clone(), *subtask, c.clone());
            if let Some(first) = seen.insert(key, s.id) {
                panic!(
                    "committable {:?} of subtask {subtask} committed twice (snapshots {first} and {})",
                    String::from_utf8_lossy(c),
                    s.id
                );
            }
        }
    }
}

/// `SINKCOORD_FUZZ_TRACE=1` prints the calls of the `calls` target (to
/// turn a finding into a readable regression test).
fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SINKCOORD_FUZZ_TRACE").is_some())
}

macro_rules! say {
    ($($arg:tt)*) => {
        if tracing() {
            eprintln!($($arg)*);
        }
    };
}

pub fn calls(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let _ = run_calls(&mut u);
}

fn run_calls(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let p = u.int_in_range(1u32..=3)?;
    let batch = u.arbitrary::<bool>()?;
    let mut config = Config::new(p, "job");
    config.checkpointing = !batch;
    config.final_commit = if batch {
        FinalCommitMode::OnEndInput
    } else {
        FinalCommitMode::OnCheckpoint
    };
    config.force_create_snapshot = u.arbitrary()?;
    config.savepoint_auto_tag = u.arbitrary()?;
    config.recovery = if u.arbitrary()? {
        RecoveryMode::Continue
    } else {
        RecoveryMode::Restart
    };
    let mut env = FuzzEnv {
        storage: FaultyStorage::new(MemStorage::default()),
        clock: StepClock {
            next: 1000,
            step: 1,
        },
    };
    // State bytes taken at each checkpoint: the restore points of failovers.
    let mut states: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut finished: BTreeSet<u32> = BTreeSet::new();
    say!("{config:?}");
    let mut c = Coordinator::new(config.clone(), None);
    say!("start -> {:?}", c.start(&mut env));
    let mut up_to = c.committed_up_to();
    let steps = u.int_in_range(0u8..=60)?;
    for _ in 0..steps {
        let s = u.int_in_range(0..=p)?; // p itself is out of range
        match u.int_in_range(0u8..=10)? {
            0..=2 => {
                let cp = checkpoint(u)?;
                let n = u.int_in_range(0u8..=2)?;
                let w = if u.arbitrary()? {
                    Some(i64::from(u.int_in_range(-2i8..=3)?))
                } else {
                    None
                };
                let sp = u.arbitrary()?;
                if cp == END {
                    finished.insert(s);
                }
                let e = entry(s, cp, n, w, sp);
                say!("event({s}, {e:?})");
                say!("  -> {:?}", c.event(&mut env, s, 0, e));
            }
            3 => {
                let r = u.int_in_range(0u64..=6)?;
                let k = u.int_in_range(0u8..=3)?;
                let mut es = Vec::new();
                for _ in 0..k {
                    let cp = checkpoint(u)?;
                    let n = u.int_in_range(0u8..=2)?;
                    es.push(entry(s, cp, n, None, n == 1));
                }
                say!("restored({s}, {r}, {es:?})");
                say!("  -> {:?}", c.restored(&mut env, s, 1, r, es));
            }
            4 => {
                let r = if u.arbitrary()? {
                    Some(u.int_in_range(0u64..=6)?)
                } else {
                    None
                };
                say!(
                    "subtask_reset({s}, {r:?}) -> {:?}",
                    c.subtask_reset(&mut env, s, r)
                );
            }
            5 => {
                let cp = checkpoint(u)?;
                let taken = c.checkpoint(&mut env, cp);
                say!("checkpoint({cp}) -> {:?}", taken.as_ref().map(|s| s.len()));
                if let Ok(state) = taken {
                    states.insert(cp, state);
                }
            }
            6 | 7 => {
                let cp = checkpoint(u)?;
                say!("checkpoint_complete({cp})");
                say!("  -> {:?}", c.checkpoint_complete(&mut env, cp));
            }
            8 => {
                let cp = checkpoint(u)?;
                say!(
                    "checkpoint_aborted({cp}) -> {:?}",
                    c.checkpoint_aborted(&mut env, cp)
                );
            }
            9 => {
                // A storage fault on a later call.
                let call = CallKind::ALL[usize::from(u.int_in_range(0u8..=3)?)];
                let mode = if u.arbitrary()? {
                    FaultMode::Ambiguous
                } else {
                    FaultMode::Fail
                };
                let skip = u64::from(u.int_in_range(0u8..=4)?);
                let count = u64::from(u.int_in_range(1u8..=3)?);
                say!("storage_fault({call:?}, skip {skip}, count {count}, {mode:?})");
                env.storage.push_fault(call, Fault { skip, count, mode });
            }
            _ => {
                // A failover: a new instance from a taken state (or from
                // nothing), on the same table. Or a close.
                if u.arbitrary()? {
                    say!("close -> {:?}", c.close(&mut env));
                    continue;
                }
                let restore = if states.is_empty() || u.arbitrary()? {
                    None
                } else {
                    let i = u.choose_index(states.len())?;
                    let (cp, state) = states.iter().nth(i).unwrap();
                    Some(RestorePoint {
                        checkpoint: *cp,
                        state: state.clone(),
                        finished_subtasks: finished.iter().copied().collect(),
                    })
                };
                say!("close -> {:?}", c.close(&mut env));
                say!(
                    "failover: new instance, restore {:?}",
                    restore.as_ref().map(|r| r.checkpoint)
                );
                c = Coordinator::new(config.clone(), restore);
                say!("start -> {:?}", c.start(&mut env));
                up_to = c.committed_up_to();
            }
        }
        // Committed-up-to never goes down within an instance (SEMANTICS 5.5).
        assert!(
            c.committed_up_to() >= up_to,
            "committed-up-to went down: {:?} -> {:?}",
            up_to,
            c.committed_up_to()
        );
        up_to = c.committed_up_to();
    }
    env.storage.set_suspended(true);
    check_table(&mut env.storage.inner_mut().clone());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "a loop")]
    fn an_operation_past_its_budget_of_storage_calls_fails_at_once() {
        let mut st = Budgeted::new(MemStorage::default());
        // A walk that never ends reads forever: the budget (32 calls on an
        // empty table) stops it.
        st.op(|env| loop {
            let _ = env.storage.get("snapshot/1");
        });
    }

    #[test]
    fn the_budget_is_renewed_per_operation() {
        let mut st = Budgeted::new(MemStorage::default());
        for _ in 0..3 {
            st.op(|env| {
                for _ in 0..32 {
                    env.storage.get("snapshot/1").unwrap();
                }
            });
        }
    }
}
