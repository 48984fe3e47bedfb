//! Scenario tests of the native core against an in-memory table. The
//! conformance traces under `tests/conformance` cover the catalogue; these
//! pin the mechanics that traces cannot see (call counts, landed writes).

use sink_coordinator::error::StorageOp;
use sink_coordinator::{
    table, Config, Coordinator, Entry, ErrorKind, ErrorReason, Lifecycle, MemEnv, OwnedEnv,
    RestorePoint, StepClock, Storage, StorageError, END,
};

fn e(c: u64, data: &[&str], wm: Option<i64>) -> Entry {
    Entry {
        checkpoint: c,
        committables: data.iter().map(|d| d.as_bytes().to_vec()).collect(),
        watermark: wm,
        savepoint: false,
    }
}

fn identifiers(env: &mut MemEnv) -> Vec<u64> {
    table::list_snapshots(&mut env.storage)
        .unwrap()
        .iter()
        .map(|s| s.identifier)
        .collect()
}

fn started(p: u32) -> (Coordinator, MemEnv) {
    let mut env = MemEnv::default();
    let mut c = Coordinator::new(Config::new(p, "job"), None);
    c.start(&mut env).unwrap();
    (c, env)
}

#[test]
fn end_input_across_checkpoints_a7() {
    let (mut c, mut env) = started(2);
    c.event(&mut env, 0, 0, e(1, &["v1"], None)).unwrap();
    c.event(&mut env, 1, 0, e(1, &["v2"], None)).unwrap();
    assert_eq!(
        c.checkpoint_complete(&mut env, 1).unwrap().committed,
        vec![1]
    );
    c.event(&mut env, 0, 0, e(END, &["v3"], None)).unwrap();
    c.event(&mut env, 1, 0, e(2, &["v4"], None)).unwrap();
    assert_eq!(
        c.checkpoint_complete(&mut env, 2).unwrap().committed,
        vec![2]
    );
    // The last END entry alone does not commit in streaming mode.
    assert!(c
        .event(&mut env, 1, 0, e(END, &["v5"], None))
        .unwrap()
        .committed
        .is_empty());
    assert_eq!(
        c.checkpoint_complete(&mut env, 3).unwrap().committed,
        vec![END]
    );
    assert_eq!(identifiers(&mut env), vec![1, 2, END]);
    let end = table::latest_snapshot(&mut env.storage).unwrap().unwrap();
    assert_eq!(
        end.committables,
        vec![(0, b"v3".to_vec()), (1, b"v5".to_vec())]
    );
}

/// Fails the next `n` put-class calls; `land` applies them first (ambiguous).
struct FaultyStore {
    env: MemEnv,
    fail_gets: u32,
    fail_puts: u32,
    land: bool,
    puts: u32,
    gets: u32,
}

/// The faulty storage beside a clock that stays at 0.
type Faulty = OwnedEnv<FaultyStore>;

/// Memory storage that fails nothing until told to; `land` as above.
fn faulty(land: bool) -> Faulty {
    let store = FaultyStore {
        env: MemEnv::default(),
        fail_gets: 0,
        fail_puts: 0,
        land,
        puts: 0,
        gets: 0,
    };
    Faulty::new(store, StepClock::default())
}

impl Storage for FaultyStore {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.gets += 1;
        if self.fail_gets > 0 {
            self.fail_gets -= 1;
            return Err(StorageError::Io("injected".into()));
        }
        self.env.storage.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.puts += 1;
        if self.fail_puts > 0 {
            self.fail_puts -= 1;
            if self.land {
                self.env.storage.put_if_absent(key, value)?;
            }
            return Err(StorageError::Io("injected".into()));
        }
        self.env.storage.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.puts += 1;
        self.env.storage.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.env.storage.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.env.storage.list(prefix)
    }
}

#[test]
fn ambiguous_write_is_recognised_on_retry() {
    let mut f = faulty(true);
    let mut c = Coordinator::new(Config::new(1, "job"), None);
    c.start(&mut f).unwrap();
    c.event(&mut f, 0, 0, e(1, &["v1"], None)).unwrap();
    f.storage.fail_puts = 1;
    let err = c.checkpoint_complete(&mut f, 1).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Storage);
    assert!(
        matches!(
            err.reason(),
            ErrorReason::Storage {
                op: StorageOp::Committing {
                    checkpoint: 1,
                    snapshot: 1
                },
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(c.state(), Lifecycle::Running);
    // Repeating the call finds the landed write and does not commit twice.
    let out = c.checkpoint_complete(&mut f, 1).unwrap();
    assert_eq!(out.committed, vec![1]);
    assert_eq!(identifiers(&mut f.storage.env), vec![1]);
}

#[test]
fn commit_storage_calls_do_not_grow_with_history() {
    let mut f = faulty(false);
    let mut c = Coordinator::new(Config::new(4, "job"), None);
    c.start(&mut f).unwrap();
    let mut per_commit = Vec::new();
    for cp in 1..=200u64 {
        for s in 0..4 {
            c.event(&mut f, s, 0, e(cp, &["x"], Some(cp as i64)))
                .unwrap();
        }
        let (p0, g0) = (f.storage.puts, f.storage.gets);
        c.checkpoint_complete(&mut f, cp).unwrap();
        per_commit.push((f.storage.puts - p0, f.storage.gets - g0));
    }
    // One create and one hint put per commit, no reads, at snapshot 1 and at 200.
    assert!(
        per_commit.iter().all(|&calls| calls == (2, 0)),
        "{per_commit:?}"
    );
}

#[test]
fn recovery_commits_and_requires_restart() {
    let (mut c, mut env) = started(1);
    c.event(&mut env, 0, 0, e(1, &["v1"], None)).unwrap();
    let state = c.checkpoint(&mut env, 1).unwrap();
    c.close(&mut env).unwrap();
    let rp = RestorePoint {
        checkpoint: 1,
        state,
        finished_subtasks: vec![],
    };
    let mut c2 = Coordinator::new(Config::new(1, "ignored-user"), Some(rp.clone()));
    assert_eq!(c2.start(&mut env).unwrap().state, Lifecycle::Restoring);
    assert_eq!(
        c2.checkpoint(&mut env, 2).unwrap_err().kind,
        ErrorKind::Declined
    );
    let out = c2
        .restored(&mut env, 0, 1, 1, vec![e(1, &["v1"], None)])
        .unwrap();
    assert_eq!(out.committed, vec![1]);
    assert!(out.restart_required);
    assert_eq!(out.state, Lifecycle::Running);
    // The commit user comes from the state.
    assert_eq!(
        table::latest_snapshot(&mut env.storage)
            .unwrap()
            .unwrap()
            .commit_user,
        "job"
    );
    // The next incarnation finds it filtered: no restart.
    let mut c3 = Coordinator::new(Config::new(1, "job"), Some(rp));
    c3.start(&mut env).unwrap();
    let out = c3
        .restored(&mut env, 0, 2, 1, vec![e(1, &["v1"], None)])
        .unwrap();
    assert!(out.committed.is_empty() && !out.restart_required);
}

#[test]
fn all_finished_recovers_inside_start() {
    let (mut c, mut env) = started(2);
    c.event(&mut env, 0, 0, e(END, &["a"], Some(7))).unwrap();
    c.event(&mut env, 1, 0, e(END, &["b"], Some(3))).unwrap();
    let state = c.checkpoint(&mut env, 5).unwrap();
    let rp = RestorePoint {
        checkpoint: 5,
        state,
        finished_subtasks: vec![0, 1],
    };
    let mut c2 = Coordinator::new(Config::new(2, "job"), Some(rp));
    let out = c2.start(&mut env).unwrap();
    assert_eq!(out.committed, vec![END]);
    assert_eq!(out.state, Lifecycle::Running);
    assert_eq!(
        table::latest_snapshot(&mut env.storage)
            .unwrap()
            .unwrap()
            .watermark,
        Some(3)
    );
    assert!(c2.final_committed());
}

#[test]
fn fatal_errors_fail_the_instance_and_close_is_quiet() {
    let (mut c, mut env) = started(1);
    let err = c.event(&mut env, 1, 0, e(1, &[], None)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidEvent);
    assert_eq!(
        err.reason(),
        &ErrorReason::SubtaskOutsideParallelism {
            call: "event",
            subtask: 1,
            parallelism: 1
        }
    );
    assert_eq!(c.state(), Lifecycle::Failed);
    assert_eq!(
        c.checkpoint_complete(&mut env, 1).unwrap_err().kind,
        ErrorKind::IllegalState
    );
    assert_eq!(c.close(&mut env).unwrap().state, Lifecycle::Failed);
}

#[test]
fn start_reads_nothing_and_the_first_read_can_be_retried() {
    let mut f = Faulty::new(
        FaultyStore {
            env: MemEnv::default(),
            fail_gets: 1,
            fail_puts: 0,
            land: false,
            puts: 0,
            gets: 0,
        },
        StepClock::default(),
    );
    // A table where this commit user already made its final commit.
    let (mut old, _) = started(1);
    old.event(&mut f.storage.env, 0, 0, e(END, &["v"], None))
        .unwrap();
    old.checkpoint_complete(&mut f.storage.env, 1).unwrap();
    let mut c = Coordinator::new(Config::new(1, "job"), None);
    assert_eq!(c.start(&mut f).unwrap().state, Lifecycle::Running);
    assert_eq!((f.storage.gets, f.storage.puts), (0, 0));
    // The first read fails: nothing changed, the call can be repeated.
    let err = c.event(&mut f, 0, 0, e(1, &["late"], None)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Storage);
    assert_eq!(c.state(), Lifecycle::Running);
    assert!(!c.final_committed());
    // The repeat reads the table, finds the END snapshot, and ignores the event.
    assert!(c
        .event(&mut f, 0, 0, e(1, &["late"], None))
        .unwrap()
        .committed
        .is_empty());
    assert!(c.final_committed());
}
