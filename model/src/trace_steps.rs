//! Counterexamples as TRACE-FORMAT v2 steps, rendered to JSON only when a
//! trace is written.

use serde_json::{json, Value};
use sink_coordinator::END;

use crate::env::FaultMode;
use crate::state::*;

pub(crate) fn ck_json(c: u64) -> Value {
    if c == END {
        json!("end")
    } else {
        json!(c)
    }
}

pub(crate) fn opt_ck_json(c: Option<u64>) -> Value {
    c.map_or(Value::Null, ck_json)
}

pub(crate) fn strings(cs: &[Vec<u8>]) -> Value {
    Value::Array(
        cs.iter()
            .map(|c| Value::String(String::from_utf8_lossy(c).into_owned()))
            .collect(),
    )
}

pub(crate) fn entries_json(es: &[Ent]) -> Value {
    Value::Array(
        es.iter()
            .map(|e| {
                let mut v = json!({"checkpoint": ck_json(e.checkpoint), "committables": strings(&e.committables)});
                if e.savepoint {
                    v["savepoint"] = json!(true);
                }
                v
            })
            .collect(),
    )
}

/// One TRACE-FORMAT step (rendered to JSON only when a trace is written).
#[derive(Clone, Debug)]
pub enum TStep {
    Start,
    Checkpoint(u64),
    Abort(u64),
    Complete(u64),
    /// `write`: subtask, checkpoint, committables, savepoint flag.
    Write(u32, u64, Vec<Vec<u8>>, bool),
    WriterSnapshot(u32, u64),
    EndInput(u32, Vec<Vec<u8>>),
    Send(u32),
    WriterCommitted(u32, u64),
    WriterAbort(u32, u64),
    Reset(u32, Option<u64>),
    WriterRestore(u32, Option<u64>, u32),
    Failover(Option<u64>, Vec<u32>),
    Fault(FaultMode, u64),
    Event(u32, u32, Ent),
    Restored(u32, u32, u64, Vec<Ent>),
}

impl TStep {
    /// The step's fields, `op` first, in the order TRACE-FORMAT lists them.
    pub fn fields(&self) -> Vec<(&'static str, Value)> {
        let op = |name: &str| ("op", json!(name));
        match self {
            TStep::Start => vec![op("start")],
            TStep::Checkpoint(n) => vec![op("checkpoint"), ("checkpoint", ck_json(*n))],
            TStep::Abort(n) => vec![op("abort"), ("checkpoint", ck_json(*n))],
            TStep::Complete(n) => vec![op("complete"), ("checkpoint", ck_json(*n))],
            TStep::Write(s, n, data, sp) => {
                let mut v = vec![
                    op("write"),
                    ("subtask", json!(s)),
                    ("checkpoint", json!(n)),
                    ("committables", strings(data)),
                ];
                if *sp {
                    v.push(("savepoint", json!(true)));
                }
                v.push(("send", json!(false)));
                v
            }
            TStep::WriterSnapshot(s, n) => vec![
                op("writer_snapshot"),
                ("subtask", json!(s)),
                ("checkpoint", json!(n)),
            ],
            TStep::EndInput(s, data) => vec![
                op("end_input"),
                ("subtask", json!(s)),
                ("committables", strings(data)),
                ("send", json!(false)),
            ],
            TStep::Send(s) => vec![op("send"), ("subtask", json!(s)), ("count", json!(1))],
            TStep::WriterCommitted(s, u) => vec![
                op("writer_committed"),
                ("subtask", json!(s)),
                ("checkpoint", ck_json(*u)),
            ],
            TStep::WriterAbort(s, n) => vec![
                op("writer_abort"),
                ("subtask", json!(s)),
                ("checkpoint", json!(n)),
            ],
            TStep::Reset(s, r) => vec![
                op("reset_subtask"),
                ("subtask", json!(s)),
                ("checkpoint", opt_ck_json(*r)),
            ],
            TStep::WriterRestore(s, r, attempt) => vec![
                op("writer_restore"),
                ("subtask", json!(s)),
                ("checkpoint", opt_ck_json(*r)),
                ("attempt", json!(attempt)),
                ("send", json!(false)),
            ],
            TStep::Failover(r, finished) => vec![
                op("failover"),
                ("checkpoint", opt_ck_json(*r)),
                ("finished_subtasks", json!(finished)),
            ],
            TStep::Fault(mode, skip) => vec![
                op("storage_fault"),
                ("call", json!("put")),
                ("mode", json!(mode.name())),
                ("skip", json!(skip)),
            ],
            TStep::Event(s, attempt, e) => {
                let mut v = vec![
                    op("event"),
                    ("subtask", json!(s)),
                    ("attempt", json!(attempt)),
                    ("checkpoint", ck_json(e.checkpoint)),
                    ("committables", strings(&e.committables)),
                ];
                if e.savepoint {
                    v.push(("savepoint", json!(true)));
                }
                v
            }
            TStep::Restored(s, attempt, r, entries) => vec![
                op("restored"),
                ("subtask", json!(s)),
                ("attempt", json!(attempt)),
                ("checkpoint", json!(r)),
                ("entries", entries_json(entries)),
            ],
        }
    }

    /// One JSON object on one line, fields in `fields()` order.
    pub fn line(&self) -> String {
        let parts: Vec<String> = self
            .fields()
            .into_iter()
            .map(|(k, v)| format!("{}: {}", json!(k), v))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
}
