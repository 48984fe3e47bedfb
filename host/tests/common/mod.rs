//! Set-ups shared by the host's integration tests.

// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use sink_coordinator::{Config, Entry, MemStorage};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::{ComponentCoordinator, HostResult, Runtime};

/// An entry of `committables` at `checkpoint`, watermark 7.
pub fn entry(checkpoint: u64, committables: Vec<Vec<u8>>) -> Entry {
    Entry {
        checkpoint,
        committables: committables.into(),
        watermark: Some(7),
        savepoint: false,
    }
}

/// A coordinator of commit user `user` (parallelism 1) on a fresh memory
/// table, and that table.
pub fn coordinator(
    runtime: &Runtime,
    user: &str,
) -> HostResult<(ComponentCoordinator, Shared<MemStorage>)> {
    let storage = Shared::new(MemStorage::default());
    let env = HostEnv::new(storage.clone(), ManualClock::new(0, 1));
    let c = ComponentCoordinator::new(runtime, env, &Config::new(1, user), None)?;
    Ok((c, storage))
}
