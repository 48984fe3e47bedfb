//! The explored input (profiles of writers' segments) and scope of the model.

use serde_json::{json, Value};
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
    /// The host may abort the pending checkpoint (and a checkpoint declined
    /// while restoring is aborted).
    pub aborts: bool,
    /// Global failover from an older completed checkpoint after the final commit.
    pub older_restore: bool,
    pub profiles: Vec<Profile>,
    pub final_commit: FinalCommitMode,
    /// Let a writer's END event reach the coordinator after the completion
    /// of a checkpoint the writer took part in after its END (SEMANTICS 10.1
    /// read literally). Off: the host contract of 6.2 ("Flink delivers a
    /// subtask's events in order, before its checkpoint acknowledgement")
    /// for END events, which the on-checkpoint final commit needs (5.3).
    pub late_end_events: bool,
}

impl Scope {
    pub fn config(&self) -> Config {
        let mut c = Config::new(self.parallelism, COMMIT_USER);
        c.final_commit = self.final_commit;
        c
    }

    pub fn trace_config(&self) -> Value {
        let mut v = json!({"parallelism": self.parallelism, "commit_user": COMMIT_USER});
        if self.final_commit == FinalCommitMode::OnEndInput {
            v["final_commit"] = json!("on-end-input");
        }
        v
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
