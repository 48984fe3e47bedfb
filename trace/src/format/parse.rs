//! Reading a trace: the document through serde ([`super::doc`]), then the
//! rules a field's type cannot say (the first step, existing instances and
//! writers, `count` at least 1, `state_hex` with a number).

use std::collections::BTreeSet;

use crate::faults::Fault;
use serde::de::DeserializeOwned;
use serde::de::IntoDeserializer;
use serde::Deserialize;
use serde_json::value::RawValue;
use sink_coordinator::Config;

use super::doc::{self, ConfigDoc, OpName, TraceHead};
use super::error::Malformed;
use super::value::{literals, Obj, Seen};
use super::writers::WriterBook;
use super::{Op, Step, Trace, DEFAULT_INSTANCE};

/// Parses and validates a trace document.
pub fn parse(text: &str) -> Result<Trace, Malformed> {
    parse_slice(text.as_bytes())
}

/// Parses and validates a trace document given as bytes (which must be UTF-8).
pub fn parse_slice(bytes: &[u8]) -> Result<Trace, Malformed> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(Malformed::new(
            "the trace starts with a UTF-8 byte-order mark (bytes EF BB BF); JSON text must not \
             have one (RFC 8259): save the file as UTF-8 without a BOM",
        ));
    }
    // JSON syntax first, for the whole document: its errors carry the line
    // and column, the others the step and field.
    let text: &str = syntax(serde_json::from_slice::<&RawValue>(bytes))?.get();
    let _literals = literals::scope(text.as_bytes());
    if !text.starts_with('{') {
        return Err(not_an_object(text, "a trace"));
    }
    let head: TraceHead<'_> = located(text, "at the top level")?;
    let config = match (&head.config.0.parallelism, &head.config.0.commit_user) {
        (None, _) => return Err(missing("config", "parallelism")),
        (_, None) => return Err(missing("config", "commit_user")),
        (Some(p), Some(u)) => head.config.0.apply(Config::new(p.0, u.clone())),
    };
    let mut steps = Vec::with_capacity(head.steps.len());
    // Names that have had a start or failover so far.
    let mut instances: BTreeSet<String> = BTreeSet::new();
    let mut writers = WriterBook::default();
    for (index, raw) in head.steps.iter().enumerate() {
        let (name, step) =
            step(raw, &config, &writers).map_err(|(e, name)| e.in_step(index, name.as_deref()))?;
        let place = |e: Malformed| e.in_step(index, Some(&name));
        let creates = matches!(step.op, Op::Start { .. } | Op::Failover { .. });
        if index == 0 && !creates {
            return Err(place(Malformed::at(
                "op",
                "the first step must be \"start\" or \"failover\"",
            )));
        }
        // Every step but start and failover needs its instance, writer steps
        // included (a writer exists only after a step that needed it).
        if !creates && !instances.contains(&step.instance) {
            return Err(place(Malformed::at(
                "instance",
                format!(
                    "no instance {:?} exists yet: its first step must be \"start\" or \"failover\"",
                    step.instance
                ),
            )));
        }
        writers.check(&step).map_err(place)?;
        writers.apply(&step);
        instances.insert(step.instance.clone());
        steps.push(step);
    }
    Ok(Trace {
        config,
        clock_start_ms: head.clock_start_ms.0,
        clock_step_ms: head.clock_step_ms.0,
        steps,
    })
}

/// `text` (valid JSON, not an object) where `what` was expected.
fn not_an_object(text: &str, what: &str) -> Malformed {
    let seen: Seen = serde_json::from_str(text).unwrap_or(Seen::Null);
    Malformed::new(format!(
        "expected {what} (an object), got {}",
        seen.describe()
    ))
}

fn missing(object: &str, name: &str) -> Malformed {
    Malformed::at(
        &format!("{object}.{name}"),
        format!("missing required field {name:?}"),
    )
}

/// A JSON syntax error, with its place said once, up front.
fn syntax<T>(r: Result<T, serde_json::Error>) -> Result<T, Malformed> {
    r.map_err(|e| {
        // serde_json appends " at line L column C".
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let what = text.strip_suffix(&suffix).unwrap_or(&text);
        Malformed::new(format!(
            "invalid JSON at line {}, column {}: {what}",
            e.line(),
            e.column()
        ))
    })
}

/// `T` from (syntactically valid) JSON text, an error naming the field.
fn located<'a, T: Deserialize<'a>>(text: &'a str, context: &str) -> Result<T, Malformed> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de)
        .map_err(|e| Malformed::from_serde(e.path(), e.inner(), context))
}

/// One step; on error, the error and the step's `op` when it has one.
fn step(
    raw: &RawValue,
    config: &Config,
    writers: &WriterBook,
) -> Result<(String, Step), (Malformed, Option<String>)> {
    let text = raw.get();
    // A step that is not an object has no op to look for.
    if !text.starts_with('{') {
        return Err((not_an_object(text, "a step"), None));
    }
    /// The op's name, before the op's own fields are read.
    #[derive(Deserialize)]
    struct Head {
        op: String,
    }
    let name = located::<Head>(text, "").map_err(|e| (e, None))?.op;
    let fail = |e: Malformed| (e, Some(name.clone()));
    let op_name = OpName::deserialize(name.as_str().into_deserializer()).map_err(
        |e: serde::de::value::Error| {
            let list = e.to_string();
            let expected = list
                .rsplit_once("expected ")
                .map_or(String::new(), |(_, l)| {
                    let l = l.strip_prefix("one of ").unwrap_or(l);
                    l.replace('`', "").replace(" or ", ", ")
                });
            fail(Malformed::at(
                "op",
                format!("unknown op {name:?} (expected one of: {expected})"),
            ))
        },
    )?;
    let context = format!("for op {name:?}");
    let (instance, op) = op(op_name, text, &context, config, writers).map_err(fail)?;
    let instance = instance.unwrap_or_else(|| DEFAULT_INSTANCE.to_string());
    Ok((name, Step { instance, op }))
}

/// The op's own struct, and the step's instance name.
fn op(
    name: OpName,
    text: &str,
    context: &str,
    config: &Config,
    writers: &WriterBook,
) -> Result<(Option<String>, Op), Malformed> {
    fn read<T: DeserializeOwned>(text: &str, context: &str) -> Result<T, Malformed> {
        located(text, context)
    }
    let over =
        |c: Option<Obj<ConfigDoc>>| c.map_or_else(|| config.clone(), |c| c.0.apply(config.clone()));
    Ok(match name {
        OpName::Start => {
            let d: doc::StartDoc = read(text, context)?;
            (
                d.instance,
                Op::Start {
                    config: over(d.config),
                },
            )
        }
        OpName::Event => {
            let d: doc::EventDoc = read(text, context)?;
            let entry = doc::entry(d.checkpoint.0, d.committables, d.watermark, d.savepoint);
            let op = Op::Event {
                subtask: d.subtask.0,
                attempt: d.attempt.0,
                entry,
            };
            (d.instance, op)
        }
        OpName::Checkpoint | OpName::Complete | OpName::Abort => {
            let d: doc::CheckpointDoc = read(text, context)?;
            let checkpoint = d.checkpoint.0;
            let op = match name {
                OpName::Checkpoint => Op::Checkpoint { checkpoint },
                OpName::Complete => Op::Complete { checkpoint },
                _ => Op::Abort { checkpoint },
            };
            (d.instance, op)
        }
        OpName::ResetSubtask => {
            let d: doc::ResetSubtaskDoc = read(text, context)?;
            let op = Op::ResetSubtask {
                subtask: d.subtask.0,
                checkpoint: d.checkpoint.0.map(|c| c.0),
            };
            (d.instance, op)
        }
        OpName::Restored => {
            let d: doc::RestoredDoc = read(text, context)?;
            let op = Op::Restored {
                subtask: d.subtask.0,
                attempt: d.attempt.0,
                checkpoint: d.checkpoint.0,
                entries: d.entries.into_iter().map(|e| e.0.into_entry()).collect(),
            };
            (d.instance, op)
        }
        OpName::Failover => {
            let d: doc::FailoverDoc = read(text, context)?;
            let checkpoint = d.checkpoint.0.map(|c| c.0);
            if d.state_hex.is_some() && checkpoint.is_none() {
                return Err(Malformed::at(
                    "state_hex",
                    "\"state_hex\" needs a checkpoint number, not null",
                ));
            }
            // Ignored with a null checkpoint (but still checked above: a
            // list of the wrong type is still a broken trace).
            let finished_subtasks = match checkpoint {
                Some(_) => d.finished_subtasks.iter().map(|s| s.0).collect(),
                None => Vec::new(),
            };
            let op = Op::Failover {
                checkpoint,
                finished_subtasks,
                config: over(d.config),
                state: d.state_hex.map(|h| h.0),
            };
            (d.instance, op)
        }
        OpName::Close => (read::<doc::CloseDoc>(text, context)?.instance, Op::Close),
        OpName::Clock => {
            let d: doc::ClockDoc = read(text, context)?;
            (d.instance, Op::Clock { ms: d.ms.0 })
        }
        OpName::StorageFault => {
            let d: doc::StorageFaultDoc = read(text, context)?;
            if d.count.0 < 1 {
                return Err(Malformed::at("count", "a fault's count must be at least 1"));
            }
            let fault = Fault {
                skip: d.skip.0,
                count: d.count.0,
                mode: d.mode.into(),
            };
            (
                d.instance,
                Op::StorageFault {
                    call: d.call.into(),
                    fault,
                },
            )
        }
        OpName::Write => {
            let d: doc::WriteDoc = read(text, context)?;
            let entry = doc::entry(d.checkpoint.0, d.committables, d.watermark, d.savepoint);
            let op = Op::Write {
                subtask: d.subtask.0,
                entry,
                send: d.send,
            };
            (d.instance, op)
        }
        OpName::EndInput => {
            let d: doc::EndInputDoc = read(text, context)?;
            let op = Op::EndInput {
                subtask: d.subtask.0,
                committables: doc::bytes(d.committables),
                watermark: d.watermark.0.map(|w| w.0),
                send: d.send,
            };
            (d.instance, op)
        }
        OpName::Send => {
            let d: doc::SendDoc = read(text, context)?;
            if d.count.is_some_and(|c| c.0 < 1) {
                return Err(Malformed::at(
                    "count",
                    "a send's count must be at least 1 (omit it to send the whole outbox)",
                ));
            }
            let op = Op::Send {
                subtask: d.subtask.0,
                count: d.count.map(|c| c.0),
            };
            (d.instance, op)
        }
        OpName::WriterCommitted => {
            let d: doc::WriterCommittedDoc = read(text, context)?;
            let op = Op::WriterCommitted {
                subtask: d.subtask.map(|s| s.0),
                checkpoint: d.checkpoint.map(|c| c.0),
            };
            (d.instance, op)
        }
        OpName::WriterAbort | OpName::WriterSnapshot => {
            let d: doc::WriterCheckpointDoc = read(text, context)?;
            let subtask = d.subtask.map(|s| s.0);
            let checkpoint = d.checkpoint.0;
            let op = match name {
                OpName::WriterAbort => Op::WriterAbort {
                    subtask,
                    checkpoint,
                },
                _ => Op::WriterSnapshot {
                    subtask,
                    checkpoint,
                },
            };
            (d.instance, op)
        }
        OpName::WriterRestore => {
            let d: doc::WriterRestoreDoc = read(text, context)?;
            let op = Op::WriterRestore {
                subtask: d.subtask.0,
                checkpoint: d.checkpoint.0.map(|c| c.0),
                attempt: match d.attempt {
                    Some(a) => a.0,
                    None => writers.next_attempt(
                        d.instance.as_deref().unwrap_or(DEFAULT_INSTANCE),
                        d.subtask.0,
                    )?,
                },
                send: d.send,
            };
            (d.instance, op)
        }
    })
}
