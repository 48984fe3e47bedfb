//! The writers that the writer steps so far have created, for the rules a
//! single step cannot show (TRACE-FORMAT "Writer steps").

use std::collections::{BTreeMap, BTreeSet};

use super::error::Malformed;
use super::{Op, Step};

/// What the writer-level steps so far have created: which writers exist
/// (with their attempt) and which writer state bytes `writer_snapshot` kept.
/// All of it follows from the steps alone: writers are created by steps and
/// never removed, whatever the calls return.
#[derive(Default)]
pub(crate) struct WriterBook {
    /// Every writer so far, by (instance name, subtask), and its attempt.
    attempts: BTreeMap<(String, u32), u32>,
    /// (instance name, subtask, checkpoint) of every kept writer state.
    kept: BTreeSet<(String, u32, u64)>,
}

impl WriterBook {
    /// The default attempt of a `writer_restore`: the previous writer's
    /// attempt + 1, or 0 when there was no writer.
    pub(crate) fn next_attempt(&self, instance: &str, subtask: u32) -> Result<u32, Malformed> {
        match self.attempts.get(&(instance.to_string(), subtask)) {
            None => Ok(0),
            Some(previous) => previous.checked_add(1).ok_or_else(|| {
                Malformed::at(
                    "attempt",
                    format!(
                        "the default attempt (the previous attempt {previous} + 1) does not fit 0..=4294967295: give \"attempt\""
                    ),
                )
            }),
        }
    }

    /// The existing writers of `instance`, in subtask order.
    fn subtasks_of<'a>(&'a self, instance: &'a str) -> impl Iterator<Item = u32> + 'a {
        self.attempts
            .keys()
            .filter(move |(name, _)| name == instance)
            .map(|(_, s)| *s)
    }

    /// The writer rules a step's shape cannot show: `writer_committed`,
    /// `writer_abort` and `writer_snapshot` need an existing writer, and
    /// `writer_restore` from a number needs kept writer state bytes.
    pub(crate) fn check(&self, step: &Step) -> Result<(), Malformed> {
        let name = &step.instance;
        match &step.op {
            Op::WriterCommitted { subtask, .. }
            | Op::WriterAbort { subtask, .. }
            | Op::WriterSnapshot { subtask, .. } => match subtask {
                Some(s) if !self.attempts.contains_key(&(name.clone(), *s)) => {
                    Err(Malformed::at(
                        "subtask",
                        format!(
                            "no writer {s} of instance {name:?} exists yet (a writer is created by its first \"write\", \"end_input\", \"send\" or \"writer_restore\" step)"
                        ),
                    ))
                }
                None if self.subtasks_of(name).next().is_none() => Err(Malformed::at(
                    "subtask",
                    format!(
                        "instance {name:?} has no writer yet (without \"subtask\" the step applies to every writer of the instance)"
                    ),
                )),
                _ => Ok(()),
            },
            Op::WriterRestore {
                subtask,
                checkpoint: Some(c),
                ..
            } if !self.kept.contains(&(name.clone(), *subtask, *c)) => Err(Malformed::at(
                "checkpoint",
                format!(
                    "no writer state bytes were kept for checkpoint {c} of writer {subtask} of instance {name:?} (no \"writer_snapshot\" step for it)"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Records what a (checked) step creates.
    pub(crate) fn apply(&mut self, step: &Step) {
        let name = &step.instance;
        match &step.op {
            Op::Write { subtask, .. } | Op::EndInput { subtask, .. } | Op::Send { subtask, .. } => {
                self.attempts.entry((name.clone(), *subtask)).or_insert(0);
            }
            Op::WriterRestore {
                subtask, attempt, ..
            } => {
                self.attempts.insert((name.clone(), *subtask), *attempt);
            }
            Op::WriterSnapshot {
                subtask,
                checkpoint,
            } => {
                let subtasks: Vec<u32> = match subtask {
                    Some(s) => vec![*s],
                    None => self.subtasks_of(name).collect(),
                };
                for s in subtasks {
                    self.kept.insert((name.clone(), s, *checkpoint));
                }
            }
            _ => {}
        }
    }
}
