//! Size limits (issue 11): a large committable commits identically on the
//! native core and through the component with the default limits, and above
//! a configured limit both paths refuse the event with the same
//! `invalid-event`. Plus a timing probe for large commits (ignored: run with
//! `SINKCOORD_COMMIT_MIB=N cargo test --release -p sink-coordinator-host
//! --test limits -- --ignored --nocapture`).

use std::time::Instant;

use sink_coordinator::{Config, Entry, MemStorage};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::{ComponentCoordinator, Runtime};

const MIB: usize = 1 << 20;

fn entry(checkpoint: u64, committables: Vec<Vec<u8>>) -> Entry {
    Entry {
        checkpoint,
        committables,
        watermark: Some(7),
        savepoint: false,
    }
}

/// A committable of `len` bytes that is not all one value (so nothing can
/// shortcut it), the same on every call.
fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
#[ignore = "timing probe: needs several GiB of memory and minutes at 1 GiB"]
fn large_commit_timing() {
    let mib: usize = std::env::var("SINKCOORD_COMMIT_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let runtime = Runtime::embedded().unwrap();
    let storage = Shared::new(MemStorage::default());
    let env = HostEnv::new(storage.clone(), ManualClock::new(0, 0));
    let mut c = ComponentCoordinator::new(&runtime, env, &Config::new(1, "job"), None).unwrap();
    c.start().unwrap();
    let t = Instant::now();
    c.event(0, 0, entry(1, vec![payload(mib * MIB)])).unwrap();
    let event = t.elapsed();
    let t = Instant::now();
    let outcome = c.checkpoint_complete(1).unwrap();
    let commit = t.elapsed();
    assert_eq!(outcome.committed, vec![1]);
    let stored = storage
        .lock()
        .map
        .get("snapshot/00000000000000000001")
        .map_or(0, Vec::len);
    println!(
        "{mib} MiB committable through the component: event {:.2} s, commit {:.2} s, snapshot {stored} bytes",
        event.as_secs_f64(),
        commit.as_secs_f64()
    );
}
