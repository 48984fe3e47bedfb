//! Resolved call scripts: the trace semantics written once, for hosts that
//! only marshal calls.
//!
//! [`record`] replays a trace on the native core and writes every component
//! call the replayer makes (coordinator and writer constructors and methods,
//! the `table` reads, in order, with their arguments), each followed by the
//! storage and clock import calls made inside it: the storage call with its
//! key (and value), and how it ends — `"fault": null`, or the error to return
//! and whether the change is applied first; each clock reading's value. A
//! host executes the script against the component with an in-memory storage
//! that checks every import call against the script and stops on the first
//! difference, and prints each call's raw result, one JSON line per call
//! line (`{"ok": VALUE}` or `{"err": {"kind", "message"}}`).
//!
//! [`play`] turns those raw results into the result document: the same
//! replayer runs the trace again, its calls answered by the raw results
//! (`playback.rs`). Trace parsing, outboxes, faults, table differences and
//! rendering stay in this crate; the script's line format is in
//! `hosts/README.md` and [`wire`].

mod calls;
mod playback;
mod record;
pub mod wire;

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;

use crate::replay::{replay_with_driver, CheckpointState, ReplayError, ReplayResult};
use crate::trace::Trace;
use playback::{PlaybackDriver, SharedTape, Tape};
use record::{Log, RecordingDriver};

/// A recorded trace.
pub struct Recording {
    /// The script lines, in call order.
    pub script: Vec<Value>,
    /// The native core's raw result of each call line, as a faithful host
    /// prints it.
    pub results: Vec<Value>,
}

/// The script of `trace`, and the native core's raw results.
pub fn record(trace: &Trace) -> Result<Recording, ReplayError> {
    let log = Log::default();
    let recorder = log.clone();
    replay_with_driver(trace, move |storage, clock| {
        Ok(Box::new(RecordingDriver::new(storage, clock, recorder)))
    })?;
    Ok(Recording {
        script: log.lines(),
        results: log.results(),
    })
}

/// Script lines (or raw results) as JSON lines.
pub fn to_json_lines(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The result document and checkpoint states of `trace`, from a host's raw
/// results (`raw`: one JSON line per call line of [`record`]'s script).
pub fn play(trace: &Trace, raw: &str) -> Result<(ReplayResult, Vec<CheckpointState>), ReplayError> {
    let script = record(trace)?.script;
    let raw = raw
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| ReplayError::Host(format!("raw results, line {}: {e}", i + 1)))
        })
        .collect::<Result<Vec<Value>, _>>()?;
    let mut tape: Option<SharedTape> = None;
    let played = replay_with_driver(trace, |storage, _clock| {
        let shared = Rc::new(RefCell::new(Tape::new(script, raw, storage)));
        tape = Some(shared.clone());
        Ok(Box::new(PlaybackDriver::new(shared)))
    });
    // A divergence explains any replay failure it caused.
    if let Some(tape) = &tape {
        if let Err(m) = tape.borrow().verdict() {
            return Err(ReplayError::Host(format!(
                "the host's calls differ from the script: {m}"
            )));
        }
    }
    played
}

#[cfg(test)]
mod tests;
