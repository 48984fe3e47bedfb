//! Property: the commit rule's early exit (`commit_rule_idle`) never skips
//! due work. Two coordinators get the same random calls, one with the early
//! exit and one that runs the full rule every time; storage fails at the same
//! (random) storage calls for both. Every result, committed-up-to, pending
//! savepoint, state bytes and every storage call (operation, key, value) must
//! be identical: an early exit that skipped a commit, a tag, a hint write or
//! a move of committed-up-to would show up as a difference.

use std::collections::BTreeSet;

mod common;

use common::Mix;
use proptest::prelude::*;
use sink_coordinator::{
    Call, Config, Coordinator, Entry, FinalCommitMode, MemEnv, MemStorage, OwnedEnv, Reply,
    RestorePoint, StepClock, Storage, StorageError, END,
};

fn checkpoint() -> impl Strategy<Value = u64> {
    prop_oneof![12 => 0u64..7, 1 => Just(END)]
}

fn mix() -> Mix {
    Mix {
        checkpoint: checkpoint().boxed(),
        event: 10,
        savepoint: 0.2,
        restored: 1,
        complete: 4,
        // The shortcut is about a running instance: no close.
        close: 0,
        committable,
    }
}

fn committable(i: u8, checkpoint: u64) -> Vec<u8> {
    vec![i, checkpoint as u8]
}

fn entry(c: u64, n: u8, w: Option<i64>, sp: bool) -> Entry {
    common::entry(committable, c, n, w, sp)
}

fn event(subtask: u32, entry: Entry) -> Call {
    Call::Event {
        subtask,
        attempt: 0,
        entry,
    }
}

/// Memory storage that records every storage call and fails the ones whose
/// index is in `fail` (counted per instance, so both coordinators see the
/// same failures as long as they make the same calls).
#[derive(Default)]
struct Recording {
    store: MemStorage,
    fail: BTreeSet<usize>,
    calls: Vec<String>,
}

impl Recording {
    fn note(&mut self, what: String) -> Result<(), StorageError> {
        let failing = self.fail.contains(&self.calls.len());
        self.calls.push(what);
        if failing {
            return Err(StorageError::backend("injected", std::fmt::Error));
        }
        Ok(())
    }
}

impl Storage for Recording {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.note(format!("get {key}"))?;
        self.store.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.note(format!("create {key} {value:?}"))?;
        self.store.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.note(format!("put {key} {value:?}"))?;
        self.store.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.note(format!("delete {key}"))?;
        self.store.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.note(format!("list {prefix}"))?;
        self.store.list(prefix)
    }
}

/// The recording storage beside a stopped clock.
type Recorded = OwnedEnv<Recording>;

fn recorded(fail: BTreeSet<usize>) -> Recorded {
    OwnedEnv::new(
        Recording {
            fail,
            ..Recording::default()
        },
        StepClock::default(),
    )
}

fn apply(c: &mut Coordinator, env: &mut Recorded, call: &Call) -> String {
    let result = c.apply(env, call.clone()).map(|r| match r {
        Reply::Outcome(o) => format!("{o:?}"),
        Reply::State(b) => format!("{b:?}"),
    });
    format!(
        "{result:?} up-to {:?} pending {:?} final {}",
        c.committed_up_to(),
        c.pending_savepoints(),
        c.final_committed()
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, rng_seed: proptest::test_runner::RngSeed::Fixed(23), ..ProptestConfig::default() })]
    #[test]
    fn early_exit_changes_nothing(
        p in 1u32..4,
        batch in proptest::bool::weighted(0.2),
        force in any::<bool>(),
        tags in any::<bool>(),
        restore in proptest::option::of((0u64..4, proptest::collection::vec(0u32..4, 0..3))),
        fail in proptest::collection::btree_set(0usize..120, 0..6),
        calls in proptest::collection::vec(common::call(&mix()), 0..60),
    ) {
        let mut config = Config::new(p, "job");
        config.checkpointing = !batch;
        config.final_commit = if batch { FinalCommitMode::OnEndInput } else { FinalCommitMode::OnCheckpoint };
        config.force_create_snapshot = force;
        config.savepoint_auto_tag = tags;
        let restore = restore.map(|(r, finished)| {
            let mut env = MemEnv::default();
            let mut donor = Coordinator::new(Config::new(p, "job"), None);
            donor.start(&mut env).unwrap();
            let _ = donor.event(&mut env, 0, 0, entry(END, 1, Some(3), false));
            let state = donor.checkpoint(&mut env, r).unwrap();
            RestorePoint { checkpoint: r, state, finished_subtasks: finished }
        });
        let mut fast = Coordinator::new(config.clone(), restore.clone());
        let mut full = Coordinator::new(config, restore);
        full.set_commit_rule_shortcut(false);
        let mut fast_env = recorded(fail.clone());
        let mut full_env = recorded(fail);
        let a = fast.start(&mut fast_env).map(|o| format!("{o:?}"));
        let b = full.start(&mut full_env).map(|o| format!("{o:?}"));
        prop_assert_eq!(a, b);
        for call in &calls {
            let a = apply(&mut fast, &mut fast_env, call);
            let b = apply(&mut full, &mut full_env, call);
            prop_assert_eq!(&a, &b, "after {:?}", call);
            prop_assert_eq!(&fast_env.storage.calls, &full_env.storage.calls, "after {:?}", call);
        }
        prop_assert_eq!(&fast_env.storage.store.map, &full_env.storage.store.map);
    }
}

/// An ended writer's late report for a checkpoint that is already committed
/// carries no savepoint flag (SEMANTICS v2.1, 3 rule 2: every writer that had
/// not ended reported the checkpoint with the same flag before it could
/// commit): with and without the early exit, no tag.
#[test]
fn late_savepoint_flag_of_an_ended_writer_is_ignored() {
    let mut config = Config::new(2, "job");
    config.savepoint_auto_tag = true;
    let calls = [
        event(1, entry(1, 1, Some(1), false)),
        event(0, entry(END, 1, None, false)),
        Call::CheckpointComplete(1),
        event(0, entry(1, 0, None, true)),
    ];
    let mut fast = Coordinator::new(config.clone(), None);
    let mut full = Coordinator::new(config, None);
    full.set_commit_rule_shortcut(false);
    let (mut fast_env, mut full_env) = (recorded(BTreeSet::new()), recorded(BTreeSet::new()));
    fast.start(&mut fast_env).unwrap();
    full.start(&mut full_env).unwrap();
    for call in &calls {
        assert_eq!(
            apply(&mut fast, &mut fast_env, call),
            apply(&mut full, &mut full_env, call)
        );
    }
    assert!(
        !fast_env.storage.store.map.contains_key("tag/savepoint-1"),
        "{:?}",
        fast_env.storage.store.map.keys()
    );
    assert_eq!(fast_env.storage.calls, full_env.storage.calls);
}
