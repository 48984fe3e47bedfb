//! The bound on instances alive at once in a process
//! (`RuntimeOptions::max_live_instances`, issue 26): one past it is refused
//! with an error naming the bound, before the kernel's limit on memory
//! mappings refuses it with "Cannot allocate memory" (about 32,000 live
//! instances at the default `vm.max_map_count`); dropping an instance makes
//! room again. Its own test binary: the count is the process's, and other
//! tests' instances would move it.

use sink_coordinator_host::engine::{
    live_instances, DEFAULT_MAX_LIVE_INSTANCES, EMBEDDED_WASM, MAX_LIVE_INSTANCES_RANGE,
};
use sink_coordinator_host::{ComponentCoordinator, Runtime, RuntimeOptions};

mod common;

fn coordinator(runtime: &Runtime, user: &str) -> anyhow::Result<ComponentCoordinator> {
    Ok(common::coordinator(runtime, user)?.0)
}

#[test]
fn one_instance_past_the_bound_is_refused_naming_it() {
    assert_eq!(
        RuntimeOptions::default().max_live_instances,
        DEFAULT_MAX_LIVE_INSTANCES
    );
    // Two runtimes share the process's count: the bound is per process.
    let options = RuntimeOptions {
        instance_pool: Some(2),
        max_live_instances: 5,
        ..RuntimeOptions::default()
    };
    let first = Runtime::new(EMBEDDED_WASM, options.clone()).unwrap();
    let second = Runtime::new(EMBEDDED_WASM, options).unwrap();
    assert_eq!(live_instances(), 0);
    let mut alive: Vec<_> = (0..3)
        .map(|i| coordinator(&first, &format!("a-{i}")).unwrap())
        .collect();
    alive.extend((0..2).map(|i| coordinator(&second, &format!("b-{i}")).unwrap()));
    assert_eq!(live_instances(), 5);
    for runtime in [&first, &second] {
        let err = format!("{:#}", coordinator(runtime, "one-more").err().unwrap());
        assert!(
            err.contains("5 are alive in this process") && err.contains("max_live_instances 5"),
            "{err}"
        );
    }
    // A refused instance is not counted; a dropped one makes room.
    assert_eq!(live_instances(), 5);
    alive.pop();
    let mut again = coordinator(&second, "room").unwrap();
    again.start().unwrap();
    assert_eq!(live_instances(), 5);
    drop(alive);
    drop(again);
    assert_eq!(live_instances(), 0);
}

#[test]
fn the_bound_is_checked_against_its_range() {
    let mut options = RuntimeOptions::default();
    options.max_live_instances = 0;
    let err = options.validate().unwrap_err();
    assert!(
        err.contains("max_live_instances 0 is out of range"),
        "{err}"
    );
    options.max_live_instances = *MAX_LIVE_INSTANCES_RANGE.end();
    options.validate().unwrap();
}
