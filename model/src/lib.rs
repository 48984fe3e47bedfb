//! Exhaustive model checking of the sink coordinator's native core
//! (stateright): every schedule of host moves within a small scope —
//! writers reporting, ending, finishing (also with events in flight), being
//! reset and restored; per-writer FIFO event channels drained at any point;
//! checkpoints and savepoints (also a drained stop-with-savepoint) taken,
//! completed late or never (but the last one), aborted; `committed(u)`
//! forwarded late or never; one region and one global failover, after which
//! a finished subtask may get an empty restore event or a reset; one storage
//! fault (failed or ambiguous write) — against SEMANTICS v2.1's guarantees:
//! - always: no fatal error under the host contract; no committable twice in
//!   the table; the commit user's identifiers strictly increase;
//! - at the end (the host drives the job to its end, FLIP-147: every writer
//!   ends and finishes): every committable of the input exactly once, the
//!   END snapshot written, committed-up-to END; no lost savepoint tag (a
//!   completed savepoint whose snapshot exists has its tag; a drained
//!   stop-with-savepoint pending at the final commit, on the END snapshot)
//!   and none of an aborted savepoint;
//! - eventually: the final commit.
//!
//! Modules: `model` (the host contract, the moves and the stateright `Model`),
//! `moves` (each move's effect), `step` (one transition's world and calls),
//! `properties`, `scope` (the explored input), `state` (the state and its
//! fingerprint), `trace_steps` (counterexamples as trace steps), `env`
//! (in-memory storage with one armed fault). A counterexample is written as
//! a TRACE-FORMAT v2 trace (writer steps) that `sinkcoord replay` reproduces.

pub mod env;
pub mod model;
mod moves;
pub mod properties;
pub mod scope;
pub mod state;
mod step;
pub mod trace_steps;

use std::fmt::Write as _;
use std::path::{Path as FsPath, PathBuf};
use std::time::{Duration, Instant};

use sink_coordinator::FinalCommitMode;
use stateright::{Checker, Expectation, HasDiscoveries, Model};

pub use crate::env::FaultMode;
pub use crate::model::{Act, SinkModel};
pub use crate::scope::{Profile, Scope};
use crate::state::St;

/// Where counterexample traces go by default: `target/model-findings` of the workspace.
pub const FINDINGS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/model-findings");

impl Scope {
    /// P = 2, three checkpoints, one global and one region failover, one
    /// storage fault (failed or ambiguous, on the first write of a move),
    /// one savepoint (a drained stop-with-savepoint once every writer has
    /// ended), one abort, one replay for a finished subtask; writer 0 ends
    /// after one segment with data in its END entry, writer 1 after one
    /// segment with an empty END entry.
    pub fn all() -> Scope {
        Scope {
            name: "all".into(),
            parallelism: 2,
            checkpoints: 3,
            global_failovers: 1,
            region_failovers: 1,
            storage_faults: 1,
            fault_skips: vec![0],
            fault_modes: vec![FaultMode::Fail, FaultMode::Ambiguous],
            aborts: 1,
            savepoints: 1,
            stop_with_savepoint: true,
            ghosts: 1,
            older_restore: false,
            profiles: vec![Profile {
                ends: vec![1, 1],
                tails: vec![true, false],
            }],
            final_commit: FinalCommitMode::OnCheckpoint,
        }
    }

    /// A named scope, or a suite (`full`: `make model-check`; `large`:
    /// `make model-check MODEL_SCOPE=large`; `extra`: the other scopes of
    /// the v2 suite; `reduced`: `cargo test` in release; `tiny`: `cargo
    /// test` unoptimized).
    pub fn suite(name: &str) -> Option<Vec<Scope>> {
        let all = Scope::all;
        let named = |name: &str, s: Scope| Scope {
            name: name.into(),
            ..s
        };
        let one = |name: &str| -> Option<Scope> {
            Some(match name {
                "all" => all(),
                // Every failure kind, two checkpoints.
                "all-2ck" => named(
                    name,
                    Scope {
                        checkpoints: 2,
                        ..all()
                    },
                ),
                // Global failover and a storage fault, three checkpoints.
                "global-fault" => named(
                    name,
                    Scope {
                        region_failovers: 0,
                        ..all()
                    },
                ),
                // Region failover and a storage fault.
                "region-fault" => named(
                    name,
                    Scope {
                        global_failovers: 0,
                        ghosts: 0,
                        ..all()
                    },
                ),
                // Global and region failover.
                "global-region" => named(
                    name,
                    Scope {
                        storage_faults: 0,
                        ..all()
                    },
                ),
                // Longer input for writer 1 (two segments, idle barriers),
                // both END entries empty: the END snapshot is the only mark.
                "empty-ends" => named(
                    name,
                    Scope {
                        region_failovers: 0,
                        profiles: vec![Profile {
                            ends: vec![1, 2],
                            tails: vec![false, false],
                        }],
                        ..all()
                    },
                ),
                // The fault on the second or third write of a move (the END
                // snapshot after an ordinary one, a tag or the hint after a
                // create).
                "later-writes" => named(
                    name,
                    Scope {
                        region_failovers: 0,
                        fault_skips: vec![1, 2],
                        ..all()
                    },
                ),
                // A restart from an older checkpoint after the final commit.
                "aborts-older" => named(
                    name,
                    Scope {
                        region_failovers: 0,
                        older_restore: true,
                        ..all()
                    },
                ),
                // final-commit = on-end-input.
                "on-end-input" => named(
                    name,
                    Scope {
                        region_failovers: 0,
                        final_commit: FinalCommitMode::OnEndInput,
                        ..all()
                    },
                ),
                // Three writers (writers 1 and 2 end at once, writer 2 with
                // data), three checkpoints; no region failover, failed writes.
                "p3" => named(
                    name,
                    Scope {
                        parallelism: 3,
                        region_failovers: 0,
                        fault_modes: vec![FaultMode::Fail],
                        profiles: vec![Profile {
                            ends: vec![1, 0, 0],
                            tails: vec![true, false, true],
                        }],
                        ..all()
                    },
                ),
                // Four checkpoints, every failure kind.
                "all-4ck" => named(
                    name,
                    Scope {
                        checkpoints: 4,
                        ..all()
                    },
                ),
                "tiny" => named(
                    name,
                    Scope {
                        checkpoints: 2,
                        region_failovers: 0,
                        ..all()
                    },
                ),
                _ => return None,
            })
        };
        let suite: &[&str] = match name {
            "full" => &["all"],
            // The other dimensions of the v2 suite, each with the savepoint
            // moves of `all`.
            "extra" => &["empty-ends", "later-writes", "aborts-older", "on-end-input"],
            "large" => &["p3"],
            "reduced" => &["all-2ck"],
            other => return one(other).map(|s| vec![s]),
        };
        suite.iter().map(|n| one(n)).collect()
    }

    /// The `sometimes` properties this scope can reach.
    pub fn expected_examples(&self) -> Vec<&'static str> {
        let mut v = vec![properties::S_FINAL, properties::S_FINISHED];
        if self.global_failovers > 0 {
            v.extend([
                properties::S_GLOBAL,
                properties::S_RESTART,
                properties::S_END_RESTORING,
            ]);
        }
        let early_end = self.profiles.iter().any(|p| p.ends.contains(&0));
        if (self.checkpoints >= 3 || early_end) && self.global_failovers > 0 {
            // END at the second checkpoint, finish, a third one names it.
            v.push(properties::S_NAMED);
        }
        if self.region_failovers > 0 {
            v.push(properties::S_REGION);
        }
        if self.savepoints > 0 {
            v.push(properties::S_TAG);
            if self.stop_with_savepoint && self.final_commit == FinalCommitMode::OnCheckpoint {
                v.push(properties::S_DRAINED_TAG);
            }
        }
        if self.ghosts > 0 && v.contains(&properties::S_NAMED) {
            v.push(properties::S_GHOST);
        }
        if self.storage_faults > 0 {
            if self.fault_modes.contains(&FaultMode::Fail) {
                v.push(properties::S_FAIL);
            }
            if self.fault_modes.contains(&FaultMode::Ambiguous) {
                v.push(properties::S_AMBIGUOUS);
            }
        }
        v
    }
}

/// A property's counterexample (or a missing example).
#[derive(Debug)]
pub struct Finding {
    pub property: &'static str,
    pub actions: Vec<Act>,
    pub detail: String,
    /// The trace file written for it, if any.
    pub trace: Option<PathBuf>,
}

#[derive(Debug)]
pub struct Report {
    pub scope: String,
    pub unique_states: usize,
    pub generated: usize,
    pub max_depth: usize,
    pub elapsed: Duration,
    pub counterexamples: Vec<Finding>,
    pub examples_found: Vec<&'static str>,
    pub examples_missing: Vec<&'static str>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.counterexamples.is_empty() && self.examples_missing.is_empty()
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "scope {}: {} states explored ({} generated), max depth {}, {:.1} s",
            self.scope,
            self.unique_states,
            self.generated,
            self.max_depth,
            self.elapsed.as_secs_f64()
        );
        for f in &self.counterexamples {
            let _ = writeln!(s, "COUNTEREXAMPLE: {}", f.property);
            let _ = writeln!(s, "  {}", f.detail);
            let _ = writeln!(s, "  actions: {:?}", f.actions);
            if let Some(t) = &f.trace {
                let _ = writeln!(s, "  trace: {}", t.display());
            }
        }
        for e in &self.examples_missing {
            let _ = writeln!(s, "NOT REACHED (model too weak?): {e}");
        }
        let _ = writeln!(
            s,
            "examples reached: {}",
            if self.examples_found.is_empty() {
                "none".to_string()
            } else {
                self.examples_found.join("; ")
            }
        );
        let _ = writeln!(
            s,
            "{}",
            if self.ok() {
                "OK: no counterexample"
            } else {
                "FAILED"
            }
        );
        s
    }
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

fn detail(st: &St) -> String {
    let mut parts = Vec::new();
    if let Some(f) = &st.fatal {
        parts.push(format!("fatal: {f}"));
    }
    if let Some(Err(e)) = &st.done {
        parts.push(format!("at the end: {e}"));
    }
    if let Some(e) = &st.tags {
        parts.push(format!("at the end: {e}"));
    }
    if let Some(d) = properties::duplicate(st) {
        parts.push(format!("committed twice: {d}"));
    }
    if !properties::increasing(st) {
        parts.push("identifiers do not increase".into());
    }
    if parts.is_empty() {
        parts.push("terminal state without the final commit".into());
    }
    parts.join("; ")
}

/// Explores `scope` to exhaustion with `threads` threads (or until the
/// first counterexample, with `first`). Counterexample traces go to
/// `findings` (if given).
pub fn check(
    scope: Scope,
    threads: usize,
    findings: Option<&FsPath>,
    first: bool,
    progress: bool,
) -> Report {
    let expected = scope.expected_examples();
    let name = scope.name.clone();
    let model = SinkModel::new(scope);
    let properties = model.properties();
    let started = Instant::now();
    let mut builder = model.checker().threads(threads.max(1));
    if first {
        builder = builder.finish_when(HasDiscoveries::AnyFailures);
    }
    let checker = builder.spawn_dfs();
    if progress {
        let mut last = Instant::now();
        while !checker.is_done() {
            std::thread::sleep(Duration::from_millis(200));
            if last.elapsed() >= Duration::from_secs(30) {
                last = Instant::now();
                eprintln!(
                    "  ... {} states, {} generated, {:.0} s",
                    checker.unique_state_count(),
                    checker.state_count(),
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }
    let checker = checker.join();
    let elapsed = started.elapsed();
    let discoveries = checker.discoveries();
    let model = checker.model();
    let mut counterexamples = Vec::new();
    let mut examples_found = Vec::new();
    let mut examples_missing = Vec::new();
    for p in &properties {
        let found = discoveries.get(p.name);
        match p.expectation {
            Expectation::Sometimes => {
                if found.is_some() {
                    examples_found.push(p.name);
                } else if expected.contains(&p.name) {
                    examples_missing.push(p.name);
                }
            }
            Expectation::Always | Expectation::Eventually => {
                let Some(path) = found else { continue };
                let last = path.last_state().clone();
                let actions = path.clone().into_actions();
                let mut trace = None;
                if let Some(dir) = findings {
                    let _ = std::fs::create_dir_all(dir);
                    let base = dir.join(format!("{}-{}", name, slug(p.name)));
                    let file = base.with_extension("trace.json");
                    let text = model.trace_document(&last);
                    if std::fs::write(&file, text).is_ok() {
                        trace = Some(file);
                    }
                    let notes = format!(
                        "property: {}\nscope: {}\ndetail: {}\nactions:\n{}\n",
                        p.name,
                        name,
                        detail(&last),
                        actions
                            .iter()
                            .map(|a| format!("  {a:?}"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                    let _ = std::fs::write(base.with_extension("txt"), notes);
                }
                counterexamples.push(Finding {
                    property: p.name,
                    actions,
                    detail: detail(&last),
                    trace,
                });
            }
        }
    }
    Report {
        scope: name,
        unique_states: checker.unique_state_count(),
        generated: checker.state_count(),
        max_depth: checker.max_depth(),
        elapsed,
        counterexamples,
        examples_found,
        examples_missing,
    }
}

/// The final states of `count` random schedules of `scope` (seeded, so
/// the same every run): what [`sample_traces`] writes, and what the model's
/// own tests replay natively through the trace crate.
pub fn sample_runs(scope: Scope, count: usize, seed: u64) -> (SinkModel, Vec<St>) {
    let model = SinkModel::new(scope);
    let mut rng = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move |n: usize| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((rng >> 33) as usize) % n
    };
    let mut runs = Vec::with_capacity(count);
    for _ in 0..count {
        let inits = model.init_states();
        let mut st = inits[next(inits.len())].clone();
        loop {
            let mut actions = Vec::new();
            model.actions(&st, &mut actions);
            if actions.is_empty() {
                break;
            }
            let a = actions[next(actions.len())];
            if let Some(n) = model.next_state(&st, a) {
                st = n;
            }
        }
        runs.push(st);
    }
    (model, runs)
}

/// Random schedules of `scope`: writes `<dir>/sample-<i>.trace.json` and
/// `<dir>/sample-<i>.table.json` (the model's snapshots: identifier and
/// committables), for replaying them through another host
/// (`sinkcoord replay`); the model's tests replay them natively.
pub fn sample_traces(scope: Scope, count: usize, seed: u64, dir: &FsPath) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let (model, runs) = sample_runs(scope, count, seed);
    for (i, st) in runs.iter().enumerate() {
        std::fs::write(
            dir.join(format!("sample-{i}.trace.json")),
            model.trace_document(st),
        )?;
        let table: Vec<serde_json::Value> = st
            .table
            .iter()
            .map(|s| {
                serde_json::json!({
                    "identifier": if s.identifier == sink_coordinator::END {
                        serde_json::json!("end")
                    } else {
                        serde_json::json!(s.identifier)
                    },
                    "committables": s.committables.iter()
                        .map(|(t, c)| serde_json::json!([t, String::from_utf8_lossy(c)]))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        std::fs::write(
            dir.join(format!("sample-{i}.table.json")),
            serde_json::to_string(&table).expect("json"),
        )?;
    }
    Ok(())
}
