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

use std::fmt::Write as _;

use sink_coordinator::{Config, Entry, FinalCommitMode, RecoveryMode};

use crate::render::{checkpoint, json_str};
use crate::trace::{Op, Step, Trace, DEFAULT_INSTANCE};

/// The trace being recorded, and per step the result the run saw (the
/// error kind's name, `""` for success; `None`: not compared — steps that
/// call nothing, and calls cut short by a crash or a trap).
#[derive(Clone, Debug)]
pub struct Recorder {
    pub trace: Trace,
    pub seen: Vec<Option<&'static str>>,
}

impl Recorder {
    pub fn new(config: Config, clock_start_ms: u64) -> Self {
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
    pub fn saw(&mut self, result: Option<&'static str>) {
        if let Some(last) = self.seen.last_mut() {
            *last = result;
        }
    }

    pub fn push(&mut self, instance: &str, op: Op) {
        self.trace.steps.push(Step {
            instance: instance.to_string(),
            op,
        });
        self.seen.push(None);
    }

    /// Inserts a step before the last one (a crash's `storage_fault`).
    pub fn insert_before_last(&mut self, op: Op) {
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

    pub fn len(&self) -> usize {
        self.trace.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.trace.steps.is_empty()
    }
}

fn config_json(c: &Config) -> String {
    format!(
        "{{\"parallelism\": {}, \"commit_user\": {}, \"checkpointing\": {}, \"final_commit\": {}, \
         \"force_create_snapshot\": {}, \"savepoint_auto_tag\": {}, \"tag_time_retained_ms\": {}, \"recovery\": {}}}",
        c.parallelism,
        json_str(&c.commit_user),
        c.checkpointing,
        json_str(match c.final_commit {
            FinalCommitMode::OnCheckpoint => "on-checkpoint",
            FinalCommitMode::OnEndInput => "on-end-input",
        }),
        c.force_create_snapshot,
        c.savepoint_auto_tag,
        c.tag_time_retained_ms.map_or_else(|| "null".to_string(), |v| v.to_string()),
        json_str(match c.recovery {
            RecoveryMode::Restart => "restart",
            RecoveryMode::Continue => "continue",
        }),
    )
}

fn strings(items: &[Vec<u8>]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|b| json_str(&String::from_utf8_lossy(b)))
        .collect();
    format!("[{}]", parts.join(", "))
}

fn watermark(w: Option<i64>) -> String {
    w.map_or_else(|| "null".to_string(), |v| v.to_string())
}

fn entry_fields(e: &Entry) -> String {
    format!(
        "\"checkpoint\": {}, \"committables\": {}, \"watermark\": {}, \"savepoint\": {}",
        checkpoint(e.checkpoint),
        strings(&e.committables),
        watermark(e.watermark),
        e.savepoint
    )
}

fn writer_op(op: &str, subtask: Option<u32>, c: u64) -> String {
    match subtask {
        Some(s) => format!(
            "{{\"op\": \"{op}\", \"subtask\": {s}, \"checkpoint\": {}}}",
            checkpoint(c)
        ),
        None => format!("{{\"op\": \"{op}\", \"checkpoint\": {}}}", checkpoint(c)),
    }
}

fn op_json(op: &Op, base: &Config) -> String {
    let config_override = |c: &Config| {
        if c == base {
            String::new()
        } else {
            format!(", \"config\": {}", config_json(c))
        }
    };
    match op {
        Op::Start { config } => format!("{{\"op\": \"start\"{}}}", config_override(config)),
        Op::Event { subtask, attempt, entry } => {
            format!("{{\"op\": \"event\", \"subtask\": {subtask}, \"attempt\": {attempt}, {}}}", entry_fields(entry))
        }
        Op::Checkpoint { checkpoint: c } => format!("{{\"op\": \"checkpoint\", \"checkpoint\": {}}}", checkpoint(*c)),
        Op::Complete { checkpoint: c } => format!("{{\"op\": \"complete\", \"checkpoint\": {}}}", checkpoint(*c)),
        Op::Abort { checkpoint: c } => format!("{{\"op\": \"abort\", \"checkpoint\": {}}}", checkpoint(*c)),
        Op::ResetSubtask { subtask, checkpoint: c } => format!(
            "{{\"op\": \"reset_subtask\", \"subtask\": {subtask}, \"checkpoint\": {}}}",
            c.map_or_else(|| "null".to_string(), checkpoint)
        ),
        Op::Restored { subtask, attempt, checkpoint: c, entries } => {
            let entries: Vec<String> = entries.iter().map(|e| format!("{{{}}}", entry_fields(e))).collect();
            format!(
                "{{\"op\": \"restored\", \"subtask\": {subtask}, \"attempt\": {attempt}, \"checkpoint\": {}, \"entries\": [{}]}}",
                checkpoint(*c),
                entries.join(", ")
            )
        }
        Op::Failover { checkpoint: c, finished_subtasks, config, state } => {
            let mut out = format!(
                "{{\"op\": \"failover\", \"checkpoint\": {}",
                c.map_or_else(|| "null".to_string(), checkpoint)
            );
            if c.is_some() && !finished_subtasks.is_empty() {
                let f: Vec<String> = finished_subtasks.iter().map(u32::to_string).collect();
                let _ = write!(out, ", \"finished_subtasks\": [{}]", f.join(", "));
            }
            out.push_str(&config_override(config));
            if let Some(bytes) = state {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                let _ = write!(out, ", \"state_hex\": \"{hex}\"");
            }
            out.push('}');
            out
        }
        Op::Close => "{\"op\": \"close\"}".to_string(),
        Op::Clock { ms } => format!("{{\"op\": \"clock\", \"ms\": {ms}}}"),
        Op::Write { subtask, entry, send } => format!(
            "{{\"op\": \"write\", \"subtask\": {subtask}, {}, \"send\": {send}}}",
            entry_fields(entry)
        ),
        Op::EndInput { subtask, committables, watermark: w, send } => format!(
            "{{\"op\": \"end_input\", \"subtask\": {subtask}, \"committables\": {}, \"watermark\": {}, \"send\": {send}}}",
            strings(committables),
            watermark(*w)
        ),
        Op::Send { subtask, count } => match count {
            Some(n) => format!("{{\"op\": \"send\", \"subtask\": {subtask}, \"count\": {n}}}"),
            None => format!("{{\"op\": \"send\", \"subtask\": {subtask}}}"),
        },
        Op::WriterCommitted { subtask, checkpoint: c } => {
            let mut out = String::from("{\"op\": \"writer_committed\"");
            if let Some(s) = subtask {
                let _ = write!(out, ", \"subtask\": {s}");
            }
            if let Some(c) = c {
                let _ = write!(out, ", \"checkpoint\": {}", checkpoint(*c));
            }
            out.push('}');
            out
        }
        Op::WriterAbort { subtask, checkpoint: c } => writer_op("writer_abort", *subtask, *c),
        Op::WriterSnapshot { subtask, checkpoint: c } => writer_op("writer_snapshot", *subtask, *c),
        Op::WriterRestore { subtask, checkpoint: c, attempt, send } => format!(
            "{{\"op\": \"writer_restore\", \"subtask\": {subtask}, \"checkpoint\": {}, \"attempt\": {attempt}, \"send\": {send}}}",
            c.map_or_else(|| "null".to_string(), checkpoint)
        ),
        Op::StorageFault { call, fault } => format!(
            "{{\"op\": \"storage_fault\", \"call\": \"{}\", \"mode\": \"{}\", \"skip\": {}, \"count\": {}}}",
            call.name(),
            fault.mode.name(),
            fault.skip,
            fault.count
        ),
    }
}

/// The trace as a TRACE-FORMAT JSON document, one step per line.
pub fn render_trace(trace: &Trace) -> String {
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"config\": {},", config_json(&trace.config));
    let _ = writeln!(out, "  \"clock_start_ms\": {},", trace.clock_start_ms);
    let _ = writeln!(out, "  \"clock_step_ms\": {},", trace.clock_step_ms);
    out.push_str("  \"steps\": [");
    for (i, step) in trace.steps.iter().enumerate() {
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        let op = op_json(&step.op, &trace.config);
        if step.instance == DEFAULT_INSTANCE {
            out.push_str(&op);
        } else {
            // `{"instance": NAME, "op": ...}`
            let _ = write!(
                out,
                "{{\"instance\": {}, {}",
                json_str(&step.instance),
                &op[1..]
            );
        }
    }
    out.push_str(if trace.steps.is_empty() {
        "]\n}\n"
    } else {
        "\n  ]\n}\n"
    });
    out
}
