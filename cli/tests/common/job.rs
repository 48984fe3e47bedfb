//! A commit user's coordinator on a table directory with a clock the test
//! sets, and running `sinkcoord` (the issue-25 tests).

use std::path::Path;
use std::process::Command;

use sink_coordinator::{Config, Coordinator, Entry, HostEnv, Shared, StepClock, END};
use sink_coordinator_host::storage::LocalDirStorage;

/// A commit user's coordinator (native core, parallelism 1) on a table
/// directory, whose clock reads `now` (set by the test between steps).
pub struct Job {
    coordinator: Coordinator,
    env: HostEnv,
    /// The clock `env` reads: stopped (step 0), set by each commit.
    clock: Shared<StepClock>,
    /// The last checkpoint completed.
    last: u64,
}

impl Job {
    /// Auto-tags savepoints; tags expire `retained_ms` after creation.
    pub fn new(dir: &Path, user: &str, retained_ms: Option<u64>) -> Job {
        let mut config = Config::new(1, user);
        config.savepoint_auto_tag = true;
        config.tag_time_retained_ms = retained_ms;
        let clock = Shared::new(StepClock::new(0, 0));
        let mut env = HostEnv::new(LocalDirStorage::open(dir).unwrap(), clock.clone());
        let mut coordinator = Coordinator::new(config, None);
        coordinator.start(&mut env).unwrap();
        Job {
            coordinator,
            env,
            clock,
            last: 0,
        }
    }

    /// Commits checkpoint `cp` at time `now`; END is the final commit, made
    /// by the checkpoint after the last one.
    pub fn commit(&mut self, cp: u64, savepoint: bool, now: u64) {
        self.clock.lock().set_next(now);
        let entry = Entry {
            checkpoint: cp,
            committables: vec![format!("c{cp}").into_bytes()].into(),
            watermark: None,
            savepoint,
        };
        self.coordinator.event(&mut self.env, 0, 0, entry).unwrap();
        let done = if cp == END { self.last + 1 } else { cp };
        self.last = done;
        self.coordinator.checkpoint(&mut self.env, done).unwrap();
        let out = self
            .coordinator
            .checkpoint_complete(&mut self.env, done)
            .unwrap();
        assert_eq!(out.committed, [cp], "checkpoint {cp}");
    }

    /// `checkpoint-aborted(cp)`.
    pub fn abort(&mut self, cp: u64) {
        self.coordinator
            .checkpoint_aborted(&mut self.env, cp)
            .unwrap();
    }
}

/// Runs `sinkcoord` with `args`: its exit status, stdout and stderr.
pub fn sinkcoord(args: &[&str]) -> (Option<i32>, String, String) {
    super::run(Command::new(env!("CARGO_BIN_EXE_sinkcoord")).args(args))
}
