//! Recording the simulation's calls as a TRACE-FORMAT trace, and writing it
//! as JSON that `sinkcoord replay` (and [`crate::trace::parse`]) accepts.
//!
//! Every coordinator call the simulator makes is one step, in order, with
//! the storage faults it injects (`storage_fault`) and the clock it sets
//! (`clock`). Each coordinator instance is a trace instance: `main` for the
//! job, `b` for the second job on the same table, and a new name for the
//! instance that replaces one left running as a stale coordinator (it is
//! then restored from `state_hex`). Events carry the entries the writer
//! helpers returned, so the trace needs no writer steps.
//!
//! A call cut short in the middle (a simulated crash after its k-th write,
//! or a guest that ran out of fuel) is recorded as the call preceded by a
//! `storage_fault` that fails the storage call the crash preempted: the
//! replay stops at the same point, leaving the same table. The result of
//! these steps is a `storage` error where the run saw a crash or a trap;
//! only the table is compared.

use sink_coordinator::Config;

use crate::trace::{Op, Step, Trace, DEFAULT_INSTANCE};

/// The trace being recorded, and per step the result the run saw (the
/// error kind's name, `""` for success; `None`: not compared — steps that
/// call nothing, and calls cut short by a crash or a trap).
#[derive(Clone, Debug)]
pub(crate) struct Recorder {
    pub(crate) trace: Trace,
    pub(crate) seen: Vec<Option<&'static str>>,
}

impl Recorder {
    pub(crate) fn new(config: Config, clock_start_ms: u64) -> Self {
        Recorder {
            trace: Trace {
                config,
                clock_start_ms,
                clock_step_ms: 0,
                steps: Vec::new(),
            },
            seen: Vec::new(),
        }
    }

    /// The result the run saw for the last step.
    pub(crate) fn saw(&mut self, result: Option<&'static str>) {
        if let Some(last) = self.seen.last_mut() {
            *last = result;
        }
    }

    pub(crate) fn push(&mut self, instance: &str, op: Op) {
        self.trace.steps.push(Step {
            instance: instance.to_string(),
            op,
        });
        self.seen.push(None);
    }

    /// Inserts a step before the last one (a crash's `storage_fault`).
    pub(crate) fn insert_before_last(&mut self, op: Op) {
        let at = self.trace.steps.len().saturating_sub(1);
        self.trace.steps.insert(
            at,
            Step {
                instance: DEFAULT_INSTANCE.to_string(),
                op,
            },
        );
        self.seen.insert(at, None);
    }

    pub(crate) fn len(&self) -> usize {
        self.trace.steps.len()
    }
}

/// The trace as a TRACE-FORMAT JSON document, one step per line (see
/// [`crate::trace::to_json`]).
pub fn render_trace(trace: &Trace) -> String {
    crate::trace::to_json(trace)
}
