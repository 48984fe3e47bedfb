//! A batch of writer events (WIT `coordinator.events`, added in 0.2.1,
//! `events-packed`, added in 0.2.2, and `events-block`, added in 0.2.10):
//! applied in order exactly as if `event` were called for each, stopping at
//! the first error, with one merged outcome. The component's export, the
//! native replay and the benchmarks share this loop, so a batch means the
//! same everywhere.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::env::{AsEnv, Env};
use crate::error::{Error, ErrorReason};
use crate::types::{Entry, Lifecycle, Outcome};
use crate::{Committables, Coordinator};

/// One writer event of a batch: the arguments of one `event` call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterEvent {
    /// The writer subtask.
    pub subtask: u32,
    /// Its attempt (informational, SEMANTICS 2).
    pub attempt: u32,
    /// What it reports.
    pub entry: Entry,
}

/// A batch stopped at an error: the events before the failing one stay
/// applied, the ones after it were not looked at.
#[derive(Clone, Debug)]
pub struct BatchError {
    /// How many events were applied before the error: the failing event's
    /// index. After `declined` the failing event changed nothing; after
    /// `storage` its input was accepted and repeating it is safe; either
    /// way the host resends the events from this index.
    pub applied: usize,
    /// What the applied events did, merged, with the state and
    /// committed-up-to after the failing event (`failed` when fatal).
    pub outcome: Outcome,
    /// The failing event's error (its message names subtask and checkpoint).
    pub error: Error,
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "event {} of the batch: {}",
            self.applied,
            self.error.reason()
        )
    }
}

impl core::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Merges the outcomes of consecutive calls: concatenates `committed`,
/// `tags_created` and `tags_deleted`, ORs `restart_required`, and takes the
/// last state and committed-up-to.
#[derive(Clone, Debug)]
pub struct Merged {
    outcome: Outcome,
}

impl Merged {
    /// Nothing merged yet: the state and committed-up-to given (the
    /// instance's current ones, the answer for an empty batch).
    pub fn new(state: Lifecycle, committed_up_to: Option<u64>) -> Self {
        Merged {
            outcome: Outcome {
                state,
                committed: Vec::new(),
                tags_created: Vec::new(),
                tags_deleted: Vec::new(),
                restart_required: false,
                committed_up_to,
            },
        }
    }

    /// Adds the outcome of the next call.
    #[inline]
    pub fn add(&mut self, o: Outcome) {
        let m = &mut self.outcome;
        m.state = o.state;
        m.committed_up_to = o.committed_up_to;
        m.restart_required |= o.restart_required;
        // Moves instead of copies in the common case: the first non-empty
        // list is taken as it is.
        append(&mut m.committed, o.committed);
        append(&mut m.tags_created, o.tags_created);
        append(&mut m.tags_deleted, o.tags_deleted);
    }

    /// The merged outcome with the state and committed-up-to given (the
    /// instance's, after a failed call whose outcome was not added).
    pub fn after(mut self, state: Lifecycle, committed_up_to: Option<u64>) -> Outcome {
        self.outcome.state = state;
        self.outcome.committed_up_to = committed_up_to;
        self.outcome
    }

    /// The merged outcome.
    pub fn finish(self) -> Outcome {
        self.outcome
    }
}

/// Appends `more` to `into`. Inlined, and a `more` without a buffer (the
/// usual case: an event that commits and tags nothing) is skipped without
/// its drop: in the component each of these was a call, a large share of
/// a batched event's cost for the three lists (measured: BENCHMARKS.md).
#[inline(always)]
fn append<T>(into: &mut Vec<T>, mut more: Vec<T>) {
    if more.capacity() == 0 {
        // No buffer and so no elements (length <= capacity): nothing to
        // move and nothing to free.
        core::mem::forget(more);
    } else if into.is_empty() {
        *into = more;
    } else {
        into.append(&mut more);
    }
}

/// Applies `events` in order as `coordinator.event` would, stopping at the
/// first error; returns the merged outcome (see [`Merged`]). The error is
/// boxed: it is rare, and large (it carries an outcome).
pub fn events(
    coordinator: &mut Coordinator,
    env: &mut dyn AsEnv,
    events: impl IntoIterator<Item = WriterEvent>,
) -> Result<Outcome, Box<BatchError>> {
    // `dyn`: one copy of the loop for every iterator type (see `apply`).
    let events: &mut dyn Iterator<Item = Result<WriterEvent, Error>> =
        &mut events.into_iter().map(Ok);
    apply(coordinator, &mut env.as_env(), events)
}

/// One writer event of `events-packed` (WIT 0.2.2): a [`WriterEvent`]
/// whose committables are one block (see [`crate::packed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedEvent {
    /// The writer subtask.
    pub subtask: u32,
    /// Its attempt (informational, SEMANTICS 2).
    pub attempt: u32,
    /// The entry's checkpoint.
    pub checkpoint: u64,
    /// The entry's committables as one block.
    pub committables: Vec<u8>,
    /// The entry's watermark.
    pub watermark: Option<i64>,
    /// The entry's savepoint flag.
    pub savepoint: bool,
}

impl From<&WriterEvent> for PackedEvent {
    /// The same event with its committables as one block (what a host lowers for
    /// `events-packed`); [`PackedEvent::unpack`] gives it back.
    fn from(e: &WriterEvent) -> Self {
        PackedEvent {
            subtask: e.subtask,
            attempt: e.attempt,
            checkpoint: e.entry.checkpoint,
            committables: e.entry.committables.as_packed().to_vec(),
            watermark: e.entry.watermark,
            savepoint: e.entry.savepoint,
        }
    }
}

impl<'a> From<&'a PackedEvent> for crate::block::BlockEvent<'a> {
    /// The event as one of an `events-block` batch, its block borrowed.
    fn from(e: &'a PackedEvent) -> Self {
        crate::block::BlockEvent::new(
            e.subtask,
            e.attempt,
            e.checkpoint,
            &e.committables,
            e.watermark,
            e.savepoint,
        )
    }
}

impl PackedEvent {
    /// The event as the core takes it, or the fatal `invalid-event` of a
    /// malformed block (naming the subtask and checkpoint).
    pub fn unpack(self) -> Result<WriterEvent, Error> {
        let PackedEvent {
            subtask: s,
            attempt,
            checkpoint,
            committables,
            watermark,
            savepoint,
        } = self;
        // The block is kept as it is: the core holds committables packed.
        let committables = Committables::from_packed(committables).map_err(|error| {
            Error::from(ErrorReason::MalformedCommittables {
                subtask: s,
                checkpoint,
                error,
            })
        })?;
        Ok(WriterEvent {
            subtask: s,
            attempt,
            entry: Entry {
                checkpoint,
                committables,
                watermark,
                savepoint,
            },
        })
    }
}

/// [`events`] for packed events (WIT `events-packed`): the same loop; an
/// event whose block is malformed is the failing event, a fatal
/// `invalid-event` that fails the instance like any content that breaks a
/// rule.
pub fn events_packed(
    coordinator: &mut Coordinator,
    env: &mut dyn AsEnv,
    events: impl IntoIterator<Item = PackedEvent>,
) -> Result<Outcome, Box<BatchError>> {
    apply(
        coordinator,
        &mut env.as_env(),
        events.into_iter().map(PackedEvent::unpack),
    )
}

/// [`events_packed`] for a whole batch as one byte string (WIT
/// `events-block`, 0.2.10; see [`crate::block`]): a block that does not
/// decode whole is refused before any event is applied, a fatal
/// `invalid-event` at index 0 saying where it stops; otherwise exactly
/// [`events_packed`] of its events (a malformed committables block inside
/// a well-framed event is that event's failure).
pub fn events_block(
    coordinator: &mut Coordinator,
    env: &mut dyn AsEnv,
    block: &[u8],
) -> Result<Outcome, Box<BatchError>> {
    let events = match crate::block::decode(block) {
        Ok(events) => events,
        Err(e) => {
            let error = coordinator.refuse(Error::from(ErrorReason::MalformedEventsBlock(e)));
            let outcome = Merged::new(coordinator.state(), coordinator.committed_up_to()).finish();
            return Err(Box::new(BatchError {
                applied: 0,
                outcome,
                error,
            }));
        }
    };
    apply(
        coordinator,
        &mut env.as_env(),
        events.into_iter().map(|e| {
            PackedEvent {
                subtask: e.subtask,
                attempt: e.attempt,
                checkpoint: e.checkpoint,
                // The core keeps each entry's block: one copy out of the
                // batch's bytes (a guest allocation, not a crossing).
                committables: e.committables.to_vec(),
                watermark: e.watermark,
                savepoint: e.savepoint,
            }
            .unpack()
        }),
    )
}

/// The loop of all three. `events` passes a `dyn` iterator (one copy of the
/// loop for every iterator type it is given); `events-packed`, the hot
/// path, its own type, so that its steps are inlined: the `dyn` calls and
/// the moves of each event through them were a measurable part of a batched
/// event in the component (BENCHMARKS.md), for a few hundred bytes of code.
fn apply(
    coordinator: &mut Coordinator,
    env: &mut Env<'_>,
    events: impl Iterator<Item = Result<WriterEvent, Error>>,
) -> Result<Outcome, Box<BatchError>> {
    let mut merged = Merged::new(coordinator.state(), coordinator.committed_up_to());
    for (i, e) in events.enumerate() {
        let result = match e {
            Ok(e) => coordinator.event_in(env, e.subtask, e.attempt, e.entry),
            Err(error) => Err(coordinator.refuse(error)),
        };
        match result {
            Ok(o) => merged.add(o),
            Err(error) => {
                return Err(Box::new(BatchError {
                    applied: i,
                    outcome: merged.after(coordinator.state(), coordinator.committed_up_to()),
                    error,
                }))
            }
        }
    }
    Ok(merged.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MemEnv;
    use crate::types::{Config, FinalCommitMode, RecoveryMode};
    use crate::ErrorKind;
    use proptest::prelude::*;

    fn config(parallelism: u32, final_commit: FinalCommitMode) -> Config {
        Config {
            parallelism,
            commit_user: "u".into(),
            checkpointing: true,
            final_commit,
            force_create_snapshot: false,
            savepoint_auto_tag: true,
            tag_time_retained_ms: None,
            recovery: RecoveryMode::Restart,
        }
    }

    fn entry(checkpoint: u64, n: u8, savepoint: bool) -> Entry {
        Entry {
            checkpoint,
            committables: (0..n).map(|i| alloc::vec![i; 3]).collect(),
            watermark: Some(checkpoint as i64),
            savepoint,
        }
    }

    /// A mix of events, completions and repeated or out-of-range events:
    /// applied one by one and in batches split at arbitrary points between
    /// completions, the table, the outcomes and the errors agree.
    fn steps() -> impl Strategy<Value = Vec<(u32, u64, u8, bool)>> {
        prop::collection::vec((0u32..4, 0u64..6, 0u8..3, any::<bool>()), 0..40)
    }

    /// The events of `steps` (checkpoint 5 stands for one far beyond the
    /// others), sent by `attempt`.
    fn writer_events(steps: &[(u32, u64, u8, bool)], attempt: u32) -> Vec<WriterEvent> {
        steps
            .iter()
            .map(|&(s, cp, n, sp)| WriterEvent {
                subtask: s,
                attempt,
                entry: entry(if cp == 5 { u64::MAX >> 1 } else { cp }, n, sp),
            })
            .collect()
    }

    fn run(
        batch: bool,
        cuts: &[usize],
        steps: &[(u32, u64, u8, bool)],
        mode: FinalCommitMode,
    ) -> (Vec<Outcome>, Vec<(usize, ErrorKind, ErrorReason)>, MemEnv) {
        let mut env = MemEnv::default();
        let mut c = Coordinator::new(config(3, mode), None);
        c.start(&mut env).unwrap();
        let evs = writer_events(steps, 0);
        let mut outcomes = Vec::new();
        let mut errors = Vec::new();
        let mut start = 0;
        let mut bounds: Vec<usize> = cuts.iter().map(|&c| c % (evs.len() + 1)).collect();
        bounds.push(evs.len());
        bounds.sort_unstable();
        for end in bounds {
            if end < start {
                continue;
            }
            let chunk = evs[start..end].to_vec();
            if batch {
                match events(&mut c, &mut env, chunk) {
                    Ok(o) => outcomes.push(o),
                    Err(e) => {
                        outcomes.push(e.outcome);
                        errors.push((start + e.applied, e.error.kind, e.error.into_reason()));
                        break;
                    }
                }
            } else {
                let mut merged = Merged::new(c.state(), c.committed_up_to());
                let mut failed = false;
                for (i, e) in chunk.into_iter().enumerate() {
                    match c.event(&mut env, e.subtask, e.attempt, e.entry) {
                        Ok(o) => merged.add(o),
                        Err(err) => {
                            errors.push((start + i, err.kind, err.into_reason()));
                            failed = true;
                            break;
                        }
                    }
                }
                outcomes.push(merged.after(c.state(), c.committed_up_to()));
                if failed {
                    break;
                }
            }
            if c.state() == Lifecycle::Running {
                if let Some(cp) = steps.get(end).map(|s| s.1) {
                    let _ = c.checkpoint(&mut env, cp);
                    let _ = c.checkpoint_complete(&mut env, cp);
                }
            }
            start = end;
        }
        (outcomes, errors, env)
    }

    proptest! {
        #[test]
        fn a_batch_is_its_events_one_by_one(
            steps in steps(),
            cuts in prop::collection::vec(0usize..64, 0..6),
            on_end in any::<bool>(),
        ) {
            let mode = if on_end { FinalCommitMode::OnEndInput } else { FinalCommitMode::OnCheckpoint };
            let (o1, e1, env1) = run(false, &cuts, &steps, mode);
            let (o2, e2, env2) = run(true, &cuts, &steps, mode);
            prop_assert_eq!(o1, o2);
            prop_assert_eq!(e1, e2);
            prop_assert_eq!(env1.storage.map, env2.storage.map);
        }
    }

    fn packed(e: &WriterEvent) -> PackedEvent {
        PackedEvent::from(e)
    }

    proptest! {
        /// `events-packed` and `events-block` are `events`: the same
        /// outcomes, errors and table, also when an event's committables
        /// block is malformed (`broken`: that event's block loses its last
        /// byte).
        #[test]
        fn a_packed_batch_is_the_batch(
            steps in steps(),
            on_end in any::<bool>(),
            broken in prop::option::of(0usize..40),
        ) {
            let mode = if on_end { FinalCommitMode::OnEndInput } else { FinalCommitMode::OnCheckpoint };
            let evs = writer_events(&steps, 1);
            let mut packed: Vec<PackedEvent> = evs.iter().map(packed).collect();
            if let Some(e) = broken.and_then(|i| packed.get_mut(i)) {
                e.committables.pop();
            }
            let mut results = Vec::new();
            for how in 0..3 {
                let mut env = MemEnv::default();
                let mut c = Coordinator::new(config(3, mode), None);
                c.start(&mut env).unwrap();
                let r = match how {
                    0 if broken.is_none() => events(&mut c, &mut env, evs.clone()),
                    0 | 1 => events_packed(&mut c, &mut env, packed.clone()),
                    _ => {
                        let block = crate::block::encode(packed.iter().map(Into::into));
                        events_block(&mut c, &mut env, &block)
                    }
                };
                let r = r.map_err(|e| (e.applied, e.outcome, e.error.kind, e.error.into_reason()));
                results.push((r, c.state(), env.storage.map));
            }
            prop_assert_eq!(&results[0], &results[1]);
            prop_assert_eq!(&results[1], &results[2]);
        }
    }

    #[test]
    fn a_malformed_block_is_a_fatal_invalid_event_naming_subtask_and_checkpoint() {
        let blocks: [(&[u8], &str); 5] = [
            (&[1, 3, b'a'], "is truncated at byte 2"),
            (
                &[1, 1, b'a', b'b'],
                "has bytes after its last committable (1)",
            ),
            (&[0x81, 0x00, 1, b'a'], "has an overlong number at byte 0"),
            (&[], "is truncated at byte 0"),
            (&[0xff, 0xff, 0xff, 0xff, 0x0f], "is truncated at byte 5"),
        ];
        for (block, why) in blocks {
            let mut env = MemEnv::default();
            let mut c = Coordinator::new(config(2, FinalCommitMode::OnCheckpoint), None);
            c.start(&mut env).unwrap();
            let good = packed(&WriterEvent {
                subtask: 0,
                attempt: 0,
                entry: entry(3, 2, false),
            });
            let mut bad = good.clone();
            bad.subtask = 1;
            bad.checkpoint = u64::MAX >> 1;
            bad.committables = block.to_vec();
            let e =
                events_packed(&mut c, &mut env, alloc::vec![good.clone(), bad, good]).unwrap_err();
            assert_eq!(e.applied, 1, "{block:?}");
            assert_eq!(e.error.kind, ErrorKind::InvalidEvent);
            assert!(
                matches!(
                    e.error.reason(),
                    ErrorReason::MalformedCommittables {
                        subtask: 1,
                        checkpoint: crate::END,
                        ..
                    }
                ),
                "{}",
                e.error
            );
            // The text is the contract: the unpacking error's words, after the event's.
            assert_eq!(
                e.error.message(),
                alloc::format!(
                    "event of subtask 1 for checkpoint END: the committables block {why}"
                )
            );
            assert_eq!(e.outcome.state, Lifecycle::Failed);
            assert_eq!(c.state(), Lifecycle::Failed);
        }
    }

    /// A batch that does not decode whole changes nothing and fails the
    /// instance; its message says where decoding stopped.
    #[test]
    fn a_malformed_events_block_is_refused_whole() {
        let good = packed(&WriterEvent {
            subtask: 0,
            attempt: 0,
            entry: entry(3, 2, false),
        });
        let block = crate::block::encode([(&good).into(), (&good).into()]);
        let mut trailing = block.clone();
        trailing.push(0);
        let cases: [(&[u8], &str); 3] = [
            (
                &block[..block.len() - 1],
                "the events block is truncated or malformed at event 1 (byte 17)",
            ),
            (
                &trailing,
                "the events block has 1 bytes after its last event (of 2)",
            ),
            (
                &[],
                "the events block is truncated or malformed at event 0 (byte 0)",
            ),
        ];
        for (bytes, message) in cases {
            let mut env = MemEnv::default();
            let mut c = Coordinator::new(config(2, FinalCommitMode::OnCheckpoint), None);
            c.start(&mut env).unwrap();
            let before = env.storage.map.clone();
            let e = events_block(&mut c, &mut env, bytes).unwrap_err();
            assert_eq!(e.applied, 0);
            assert_eq!(e.error.kind, ErrorKind::InvalidEvent);
            assert_eq!(e.error.message(), message);
            assert_eq!(e.outcome.state, Lifecycle::Failed);
            assert_eq!(c.state(), Lifecycle::Failed);
            assert_eq!(env.storage.map, before);
        }
    }

    /// A block beyond a limit decodes, and the limit refuses it as for `event`.
    #[test]
    fn a_block_beyond_a_limit_is_refused_by_the_limit() {
        let mut env = MemEnv::default();
        let mut c = Coordinator::new(config(1, FinalCommitMode::OnCheckpoint), None);
        c.set_limits(crate::Limits {
            max_committable_bytes: 4,
            ..crate::Limits::DEFAULT
        })
        .unwrap();
        c.start(&mut env).unwrap();
        let ev = WriterEvent {
            subtask: 0,
            attempt: 0,
            entry: Entry {
                checkpoint: 1,
                committables: alloc::vec![alloc::vec![1u8; 5]].into(),
                watermark: None,
                savepoint: false,
            },
        };
        let e = events_packed(&mut c, &mut env, [packed(&ev)]).unwrap_err();
        assert_eq!(e.error.kind, ErrorKind::InvalidEvent);
        assert_eq!(
            e.error.reason(),
            &ErrorReason::CommittableTooLong {
                what: "event",
                subtask: 0,
                checkpoint: 1,
                index: 0,
                bytes: 5,
                max: 4
            }
        );
        assert_eq!(c.state(), Lifecycle::Failed);
    }

    #[test]
    fn an_empty_batch_reports_the_current_state() {
        let mut env = MemEnv::default();
        let mut c = Coordinator::new(config(2, FinalCommitMode::OnCheckpoint), None);
        let o = events(&mut c, &mut env, Vec::new()).unwrap();
        assert_eq!(o.state, Lifecycle::Created);
        assert!(o.committed.is_empty() && !o.restart_required);
    }

    #[test]
    fn an_error_names_the_failing_event_and_keeps_the_earlier_ones() {
        let mut env = MemEnv::default();
        let mut c = Coordinator::new(config(2, FinalCommitMode::OnCheckpoint), None);
        c.start(&mut env).unwrap();
        let ev = |s, cp| WriterEvent {
            subtask: s,
            attempt: 0,
            entry: entry(cp, 1, false),
        };
        // Subtask 7 is out of range for parallelism 2: fatal.
        let e = events(
            &mut c,
            &mut env,
            alloc::vec![ev(0, 1), ev(1, 1), ev(7, 1), ev(0, 2)],
        )
        .unwrap_err();
        assert_eq!(e.applied, 2);
        assert!(e.error.kind.is_fatal(), "{e}");
        assert_eq!(e.outcome.state, Lifecycle::Failed);
        assert_eq!(c.state(), Lifecycle::Failed);
    }
}
