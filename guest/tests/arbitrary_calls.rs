//! Property: no sequence of calls, however wrong, makes the core panic (a
//! panic in the component is a guest trap, which SEMANTICS treats as a bug),
//! and the lifecycle rules of SEMANTICS 2 hold after every call.

mod common;

use common::Mix;
use proptest::prelude::*;
use sink_coordinator::{
    Config, Coordinator, Entry, ErrorKind, FinalCommitMode, Lifecycle, MemEnv, RestorePoint, END,
};

fn checkpoint() -> impl Strategy<Value = u64> {
    prop_oneof![8 => 0u64..6, 1 => Just(END), 1 => Just(u64::MAX)]
}

fn mix() -> Mix {
    Mix {
        checkpoint: checkpoint().boxed(),
        event: 6,
        savepoint: 0.5,
        restored: 2,
        complete: 3,
        close: 1,
        committable,
    }
}

fn committable(i: u8, _checkpoint: u64) -> Vec<u8> {
    vec![i]
}

fn entry(c: u64, n: u8, w: Option<i64>, sp: bool) -> Entry {
    common::entry(committable, c, n, w, sp)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..ProptestConfig::default() })]
    #[test]
    fn arbitrary_calls_never_panic(
        p in 1u32..4,
        batch in any::<bool>(),
        force in any::<bool>(),
        tags in any::<bool>(),
        restore in proptest::option::of((0u64..4, proptest::collection::vec(any::<u8>(), 0..12), proptest::collection::vec(0u32..4, 0..3))),
        calls in proptest::collection::vec(common::call(&mix()), 0..40),
    ) {
        let mut env = MemEnv::default();
        let mut config = Config::new(p, "job");
        config.checkpointing = !batch;
        config.final_commit = if batch { FinalCommitMode::OnEndInput } else { FinalCommitMode::OnCheckpoint };
        config.force_create_snapshot = force;
        config.savepoint_auto_tag = tags;
        // Either garbage state bytes, or the state of a real instance.
        let restore = restore.map(|(r, garbage, finished)| {
            let state = if garbage.len() % 2 == 0 {
                garbage
            } else {
                let mut donor = Coordinator::new(Config::new(p, "job"), None);
                donor.start(&mut env).unwrap();
                let _ = donor.event(&mut env, 0, 0, entry(END, 1, Some(3), false));
                donor.checkpoint(&mut env, r).unwrap()
            };
            RestorePoint { checkpoint: r, state, finished_subtasks: finished }
        });
        let mut c = Coordinator::new(config, restore);
        let _ = c.start(&mut env);
        let mut up_to = c.committed_up_to();
        for call in calls {
            let before = c.state();
            let result = c.apply(&mut env, call).map(|r| r.outcome().cloned());
            let after = c.state();
            // Committed-up-to never goes down and every outcome reports it (SEMANTICS 5.5).
            prop_assert!(c.committed_up_to() >= up_to, "{:?} < {:?}", c.committed_up_to(), up_to);
            up_to = c.committed_up_to();
            if let Ok(Some(outcome)) = &result {
                prop_assert_eq!(outcome.committed_up_to, up_to);
            }
            let result = result.map(|_| ());
            // Terminal states never change.
            if matches!(before, Lifecycle::Closed | Lifecycle::Failed) {
                prop_assert_eq!(before, after);
            }
            match result.as_ref().map_err(|e| e.error()) {
                Err(e) if e.kind.is_fatal() && !matches!(before, Lifecycle::Closed) => prop_assert_eq!(after, Lifecycle::Failed),
                Err(e) if e.kind == ErrorKind::Declined => prop_assert_eq!(before, after),
                _ => {}
            }
        }
        // The log stays well formed: this user's identifiers strictly increase.
        let ids: Vec<u64> = sink_coordinator::table::list_snapshots(&mut env.storage)
            .unwrap()
            .iter()
            .map(|s| s.identifier)
            .collect();
        prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "{:?}", ids);
    }
}
