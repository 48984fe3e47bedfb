//! The rules SEMANTICS v2 added or changed (section 12), pinned on the native
//! core with a storage that fails one chosen put: committed-up-to (5.5),
//! the END snapshot of the final commit (5.3), coordinator state v2 (7),
//! late reports of ended writers (3 rule 2) and END events while restoring
//! (6.2). The conformance traces cover the same rules end to end.

use sink_coordinator::{
    table, Config, Coordinator, Entry, ErrorKind, FinalCommitMode, Lifecycle, MemEnv, OwnedEnv,
    RestorePoint, Storage, StorageError, END,
};

/// Memory storage whose `n`-th put-class call (1-based) fails; `ambiguous`
/// applies the write before reporting the error.
#[derive(Default)]
struct FaultyStore {
    env: MemEnv,
    puts: usize,
    fail_put: Option<usize>,
    ambiguous: bool,
}

/// The faulty storage beside a clock that stays at 0.
type Faulty = OwnedEnv<FaultyStore>;

impl FaultyStore {
    fn fail_next_put(&mut self, k: usize, ambiguous: bool) {
        self.fail_put = Some(self.puts + k);
        self.ambiguous = ambiguous;
    }
    fn fault(&mut self) -> bool {
        self.puts += 1;
        self.fail_put == Some(self.puts)
    }
}

impl Storage for FaultyStore {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.env.storage.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        if self.fault() {
            if self.ambiguous {
                self.env.storage.put_if_absent(key, value)?;
            }
            return Err(StorageError::Io("injected".into()));
        }
        self.env.storage.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        if self.fault() {
            return Err(StorageError::Io("injected".into()));
        }
        self.env.storage.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.env.storage.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.env.storage.list(prefix)
    }
}

fn e(c: u64, data: &[&str]) -> Entry {
    Entry {
        checkpoint: c,
        committables: data.iter().map(|d| d.as_bytes().to_vec()).collect(),
        watermark: None,
        savepoint: false,
    }
}

fn sp(c: u64, data: &[&str]) -> Entry {
    Entry {
        savepoint: true,
        ..e(c, data)
    }
}

fn log(env: &mut Faulty) -> Vec<(u64, Vec<String>)> {
    table::list_snapshots(&mut env.storage.env.storage)
        .unwrap()
        .into_iter()
        .map(|s| {
            let data = s
                .committables
                .iter()
                .map(|(_, b)| String::from_utf8(b.clone()).unwrap())
                .collect();
            (s.identifier, data)
        })
        .collect()
}

/// A configuration of `parallelism` writers that tags savepoints.
fn tagging(parallelism: u32) -> Config {
    let mut config = Config::new(parallelism, "job");
    config.savepoint_auto_tag = true;
    config
}

fn started(config: Config) -> (Coordinator, Faulty) {
    let mut env = Faulty::default();
    let mut c = Coordinator::new(config, None);
    c.start(&mut env).unwrap();
    (c, env)
}

#[test]
fn up_to_after_a_failure_in_the_middle_of_a_commit() {
    let (mut c, mut env) = started(Config::new(1, "job"));
    assert_eq!(c.committed_up_to(), None);
    c.event(&mut env, 0, 0, e(1, &["a"])).unwrap();
    c.event(&mut env, 0, 0, e(2, &[])).unwrap();
    c.event(&mut env, 0, 0, e(3, &["b"])).unwrap();
    c.event(&mut env, 0, 0, e(5, &["c"])).unwrap();
    // Creates: cp1, cp3 (fails), cp5.
    env.storage.fail_next_put(2, false);
    let err = c.checkpoint_complete(&mut env, 5).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Storage);
    // Passed 1 and 2 (empty): not 4, which had no entries to pass.
    assert_eq!(c.committed_up_to(), Some(2));
    let out = c.checkpoint_complete(&mut env, 5).unwrap();
    assert_eq!(out.committed_up_to, Some(5));
    assert_eq!(log(&mut env).len(), 3);
}

#[test]
fn an_owed_savepoint_tag_holds_up_to_back_until_the_repeat() {
    let (mut c, mut env) = started(tagging(1));
    c.event(&mut env, 0, 0, e(1, &["a"])).unwrap();
    c.event(&mut env, 0, 0, sp(2, &["b"])).unwrap();
    c.event(&mut env, 0, 0, e(3, &["c"])).unwrap();
    // Creates 1, 2, 3 land; the tag put (4th) fails.
    env.storage.fail_next_put(4, false);
    assert!(c.checkpoint_complete(&mut env, 3).is_err());
    assert_eq!(log(&mut env).len(), 3);
    assert_eq!(c.committed_up_to(), Some(1));
    let out = c.checkpoint_complete(&mut env, 3).unwrap();
    assert_eq!(out.tags_created, vec!["savepoint-2".to_string()]);
    assert_eq!(out.committed_up_to, Some(3));
}

#[test]
fn an_ended_writers_late_empty_report_is_a_no_op_whose_flag_is_ignored() {
    let (mut c, mut env) = started(tagging(2));
    c.event(&mut env, 0, 0, e(END, &["e0"])).unwrap();
    c.event(&mut env, 1, 0, e(1, &["a"])).unwrap();
    c.event(&mut env, 1, 0, e(2, &["b"])).unwrap();
    assert_eq!(
        c.checkpoint_complete(&mut env, 2).unwrap().committed,
        vec![1, 2]
    );
    // Subtask 0's empty report for 1, flagged as a savepoint, arrives late:
    // its flag is ignored (SEMANTICS v2.1, 3 rule 2).
    let out = c.event(&mut env, 0, 0, sp(1, &[])).unwrap();
    assert_eq!(out.state, Lifecycle::Running);
    assert!(out.tags_created.is_empty());
    // With committables it would be committed twice: fatal.
    let err = c.event(&mut env, 0, 0, e(2, &["x"])).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidEvent);
}

#[test]
fn the_final_commit_puts_uncompleted_checkpoints_into_the_end_snapshot() {
    // On end input: in on-checkpoint mode every END entry's `taken`, and so
    // every checkpoint its writer reported before it, is completed first.
    let mut config = Config::new(2, "job");
    config.final_commit = FinalCommitMode::OnEndInput;
    let (mut c, mut env) = started(config);
    c.event(&mut env, 0, 0, e(1, &["a1"])).unwrap();
    c.event(&mut env, 1, 0, e(1, &["b1"])).unwrap();
    c.event(&mut env, 0, 0, e(2, &["a2"])).unwrap();
    c.event(&mut env, 1, 0, e(2, &["b2"])).unwrap();
    c.checkpoint_complete(&mut env, 1).unwrap();
    c.event(&mut env, 0, 0, e(END, &["a-end"])).unwrap();
    // Only checkpoint 1 completed before the final commit: 2 goes into END.
    c.event(&mut env, 1, 0, e(END, &[])).unwrap();
    assert_eq!(c.committed_up_to(), Some(END));
    assert_eq!(
        log(&mut env),
        vec![
            (1, vec!["a1".into(), "b1".into()]),
            (END, vec!["a2".into(), "a-end".into(), "b2".into()]),
        ]
    );
}

#[test]
fn an_empty_final_commit_still_writes_the_end_snapshot() {
    let (mut c, mut env) = started(Config::new(1, "job"));
    c.event(&mut env, 0, 0, e(END, &[])).unwrap();
    c.checkpoint_complete(&mut env, 1).unwrap();
    assert_eq!(log(&mut env), vec![(END, vec![])]);
    assert_eq!(c.committed_up_to(), Some(END));
}

#[test]
fn an_ended_writers_entries_survive_in_the_coordinator_state() {
    let (mut c, mut env) = started(Config::new(2, "job"));
    c.event(&mut env, 0, 0, e(1, &["a1"])).unwrap();
    c.event(&mut env, 0, 0, e(END, &["a-end"])).unwrap();
    c.checkpoint_complete(&mut env, 1).unwrap(); // subtask 1's event for 1 is late
    let state = c.checkpoint(&mut env, 2).unwrap();
    // Subtask 0 finished (its final checkpoint completed): it has no state left.
    let restore = RestorePoint {
        checkpoint: 2,
        state,
        finished_subtasks: vec![0],
    };
    let mut c = Coordinator::new(Config::new(2, "job"), Some(restore));
    assert_eq!(c.start(&mut env).unwrap().state, Lifecycle::Restoring);
    assert_eq!(c.committed_up_to(), None);
    let out = c
        .restored(&mut env, 1, 1, 2, vec![e(1, &["b1"]), e(2, &[])])
        .unwrap();
    assert!(out.restart_required);
    assert_eq!(out.committed_up_to, Some(2));
    assert_eq!(log(&mut env), vec![(1, vec!["a1".into(), "b1".into()])]);
}

#[test]
fn an_end_event_of_a_restored_writer_is_accepted_while_others_restore() {
    let (mut c, mut env) = started(Config::new(2, "job"));
    let state = c.checkpoint(&mut env, 3).unwrap();
    let restore = RestorePoint {
        checkpoint: 3,
        state,
        finished_subtasks: vec![],
    };
    let mut c = Coordinator::new(Config::new(2, "job"), Some(restore));
    c.start(&mut env).unwrap();
    // Not restored yet: illegal.
    let mut probe = c.clone();
    assert_eq!(
        probe
            .event(&mut env, 0, 0, e(END, &["x"]))
            .unwrap_err()
            .kind,
        ErrorKind::IllegalState
    );
    c.restored(&mut env, 0, 1, 3, vec![]).unwrap();
    assert_eq!(
        c.event(&mut env, 0, 1, e(END, &["a-end"])).unwrap().state,
        Lifecycle::Restoring
    );
    c.restored(&mut env, 1, 1, 3, vec![]).unwrap();
    c.event(&mut env, 1, 1, e(END, &["b-end"])).unwrap();
    c.checkpoint_complete(&mut env, 4).unwrap();
    assert_eq!(
        log(&mut env),
        vec![(END, vec!["a-end".into(), "b-end".into()])]
    );
}

#[test]
fn an_end_snapshot_that_landed_despite_an_error_counts_as_the_final_commit() {
    let (mut c, mut env) = started(Config::new(1, "job"));
    c.event(&mut env, 0, 0, e(1, &["a"])).unwrap();
    c.event(&mut env, 0, 0, e(END, &["e"])).unwrap();
    env.storage.fail_next_put(2, true); // cp1 lands, the END create lands but errs
    assert!(c.checkpoint_complete(&mut env, 2).is_err());
    // A region failover: the restarted writer reports again. The next read
    // finds the END snapshot: everything is ignored, nothing is fatal.
    let out = c.subtask_reset(&mut env, 0, Some(1)).unwrap();
    assert_eq!(out.committed, vec![END]);
    assert_eq!(out.committed_up_to, Some(END));
    c.event(&mut env, 0, 1, e(2, &["again"])).unwrap();
    assert_eq!(c.state(), Lifecycle::Running);
    assert_eq!(log(&mut env).len(), 2);
}

#[test]
fn an_aborted_savepoint_flag_never_reaches_the_state_bytes() {
    let (mut c, mut env) = started(tagging(2));
    c.event(&mut env, 0, 0, sp(3, &["a"])).unwrap();
    c.event(&mut env, 0, 0, e(END, &[])).unwrap();
    c.checkpoint_aborted(&mut env, 3).unwrap();
    // A resend of the flagged event is still a resend; a late flag is ignored.
    c.event(&mut env, 0, 0, sp(3, &["a"])).unwrap();
    let state = sink_coordinator::state_codec::decode(&c.checkpoint(&mut env, 4).unwrap()).unwrap();
    let held = &state.slots[0].1.entries;
    assert_eq!(held.len(), 1);
    assert!(!held[0].1.savepoint);
}
