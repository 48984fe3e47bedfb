//! The instance pool (`RuntimeOptions::instance_pool`): more instances
//! alive at once than the pool holds still work (the extra ones are
//! allocated outside it), a slot comes back when its instance goes, and the
//! memory limit holds inside the pool: a guest growing past it traps with
//! the limit in the message while the runtime stays usable.

use sink_coordinator::{MemStorage, Outcome};
use sink_coordinator_host::engine::{EMBEDDED_WASM, INSTANCE_POOL_RANGE};
use sink_coordinator_host::env::Shared;
use sink_coordinator_host::{ComponentCoordinator, HostErrorKind, Runtime, RuntimeOptions};

mod common;
use common::entry;

fn coordinator(runtime: &Runtime, user: &str) -> (ComponentCoordinator, Shared<MemStorage>) {
    common::coordinator(runtime, user).unwrap()
}

/// One checkpoint through `c`: an event and its completion commit it.
fn commit(c: &mut ComponentCoordinator, n: u64, payload: Vec<u8>) -> Outcome {
    c.event(0, 0, entry(n, vec![payload])).unwrap();
    c.checkpoint_complete(n).unwrap()
}

#[test]
fn more_instances_than_the_pool_holds_all_work() {
    let options = RuntimeOptions {
        instance_pool: Some(2),
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::new(EMBEDDED_WASM, options).unwrap();
    assert_eq!(runtime.instance_pool(), Some(2));
    // Five alive at once: two in the pool, three past it.
    let mut all: Vec<_> = (0..5)
        .map(|i| coordinator(&runtime, &format!("job-{i}")))
        .collect();
    for (c, _) in &mut all {
        c.start().unwrap();
        assert_eq!(commit(c, 1, b"data".to_vec()).committed, vec![1]);
    }
    for (_, storage) in &all {
        assert!(storage
            .lock()
            .map
            .contains_key("snapshot/00000000000000000001"));
    }
    // Slots come back: many instances one after another, none held.
    drop(all);
    for i in 0..20 {
        let (mut c, _) = coordinator(&runtime, &format!("again-{i}"));
        c.start().unwrap();
        assert_eq!(commit(&mut c, 1, b"x".to_vec()).committed, vec![1]);
    }
}

#[test]
fn without_a_pool_instances_still_work() {
    let options = RuntimeOptions {
        instance_pool: None,
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::new(EMBEDDED_WASM, options).unwrap();
    assert_eq!(runtime.instance_pool(), None);
    let (mut c, _) = coordinator(&runtime, "job");
    c.start().unwrap();
    assert_eq!(commit(&mut c, 1, b"data".to_vec()).committed, vec![1]);
}

#[test]
fn the_memory_limit_holds_in_the_pool() {
    let limit = 8usize << 20;
    let options = RuntimeOptions {
        max_memory_bytes: Some(limit),
        instance_pool: Some(2),
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::new(EMBEDDED_WASM, options).unwrap();
    for round in 0..3 {
        // A 16 MiB committable cannot even be lowered into 8 MiB.
        let (mut c, _) = coordinator(&runtime, "big");
        c.start().unwrap();
        let err = c
            .event(0, 0, entry(1, vec![vec![7u8; 16 << 20]]))
            .and_then(|_| c.checkpoint_complete(1))
            .unwrap_err();
        assert_eq!(err.kind, HostErrorKind::Trap, "round {round}: {err}");
        assert!(
            err.message
                .contains(&format!("out of memory (limit {limit} bytes)")),
            "round {round}: {err}"
        );
        // The runtime stays usable, and the trapped instance's slot was
        // reset: a small commit in a new instance works.
        let (mut small, _) = coordinator(&runtime, "small");
        small.start().unwrap();
        assert_eq!(commit(&mut small, 1, vec![1u8; 1 << 20]).committed, vec![1]);
    }
}

#[test]
fn the_pool_size_is_validated() {
    let mut options = RuntimeOptions::default();
    assert_eq!(options.validate(), Ok(()));
    options.instance_pool = Some(INSTANCE_POOL_RANGE.end() + 1);
    let err = options.validate().unwrap_err();
    assert!(err.contains("instance_pool"), "{err}");
    options.instance_pool = None;
    assert_eq!(options.validate(), Ok(()));
}

/// A slot that keeps its memory resident (`pool_keep_resident_bytes`)
/// hands the next instance a memory that reads as new: the instance that
/// reuses the slot commits exactly what a fresh one commits.
#[test]
fn kept_memory_reads_as_new_in_the_next_instance() {
    let options = RuntimeOptions {
        instance_pool: Some(1),
        pool_keep_resident_bytes: 16 << 20,
        ..RuntimeOptions::default()
    };
    assert_eq!(options.validate(), Ok(()));
    let runtime = Runtime::new(EMBEDDED_WASM, options).unwrap();
    let mut states = Vec::new();
    for round in 0..3u8 {
        // Each instance dirties a few MiB of its memory, then goes.
        let (mut c, _storage) = coordinator(&runtime, "kept");
        c.start().unwrap();
        assert_eq!(commit(&mut c, 1, vec![round; 4 << 20]).committed, vec![1]);
        c.event(0, 0, entry(2, vec![b"two".to_vec()])).unwrap();
        states.push(c.checkpoint(2).unwrap());
    }
    assert!(states.windows(2).all(|w| w[0] == w[1]), "{states:?}");
}

#[test]
fn the_kept_resident_bytes_are_validated() {
    let mut options = RuntimeOptions::default();
    options.pool_keep_resident_bytes = (4 << 30) + 1;
    let err = options.validate().unwrap_err();
    assert!(err.contains("pool_keep_resident_bytes"), "{err}");
}
