//! The explored input (profiles of writers' segments) and scope of the model.

use sink_coordinator::{Config, FinalCommitMode};

use crate::env::FaultMode;
use crate::model::COMMIT_USER;

/// One input: per writer, the number of segments before its end of input
/// and whether its END entry carries data.
#[derive(Clone, Debug)]
pub struct Profile {
    pub ends: Vec<u32>,
    pub tails: Vec<bool>,
}

/// How much of the host's freedom to explore.
#[derive(Clone, Debug)]
pub struct Scope {
    pub name: String,
    pub parallelism: u32,
    /// Checkpoints the host may trigger (ids 1, 2, ...; the drive to the end
    /// takes further ones).
    pub checkpoints: u32,
    pub global_failovers: u32,
    pub region_failovers: u32,
    pub storage_faults: u32,
    /// `skip` values of the injected fault (0: the next write).
    pub fault_skips: Vec<u64>,
    pub fault_modes: Vec<FaultMode>,
    /// Aborts of the pending checkpoint the host may make (with any, a
    /// checkpoint may also be triggered while restoring: declined, aborted).
    pub aborts: u32,
    /// Savepoints the host may trigger (`savepoint-auto-tag` is on with any).
    pub savepoints: u32,
    /// A savepoint may be a drained stop-with-savepoint (every writer has
    /// ended; no checkpoint follows it in its epoch).
    pub stop_with_savepoint: bool,
    /// Replays for finished subtasks after a global failover (an empty
    /// restore event or a `subtask-reset`, 6.2: ignored by the core).
    pub ghosts: u32,
    /// Global failover from an older completed checkpoint after the final commit.
    pub older_restore: bool,
    pub profiles: Vec<Profile>,
    pub final_commit: FinalCommitMode,
}

impl Scope {
    pub fn config(&self) -> Config {
        let mut c = Config::new(self.parallelism, COMMIT_USER);
        c.final_commit = self.final_commit;
        c.savepoint_auto_tag = self.savepoints > 0;
        c
    }
}

pub fn segment(s: u32, j: u32) -> Vec<Vec<u8>> {
    vec![format!("w{s}.{j}").into_bytes()]
}

pub fn tail(p: &Profile, s: u32) -> Vec<Vec<u8>> {
    if p.tails[s as usize] {
        vec![format!("w{s}.end").into_bytes()]
    } else {
        Vec::new()
    }
}

/// Every committable of a profile's whole input.
pub fn all_records(p: &Profile) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for s in 0..p.ends.len() as u32 {
        for j in 0..p.ends[s as usize] {
            out.extend(segment(s, j));
        }
        out.extend(tail(p, s));
    }
    out.sort();
    out
}
