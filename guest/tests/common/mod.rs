//! Random calls for the property tests (`arbitrary_calls.rs`, `rule_shortcut.rs`):
//! one generator, each test choosing its mix.

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use sink_coordinator::{Call, Entry};

/// How often each call is drawn (relative weights; 0 leaves a call out), the
/// checkpoints drawn, and the committable bytes of an entry.
pub struct Mix {
    pub checkpoint: BoxedStrategy<u64>,
    pub event: u32,
    /// The chance that an event's entry is a savepoint's.
    pub savepoint: f64,
    pub restored: u32,
    pub complete: u32,
    pub close: u32,
    /// Committable `i` of an entry for checkpoint `c`.
    pub committable: fn(u8, u64) -> Vec<u8>,
}

/// An entry for checkpoint `c` with `n` committables, committable `i` being
/// `committable(i, c)`.
pub fn entry(
    committable: fn(u8, u64) -> Vec<u8>,
    c: u64,
    n: u8,
    w: Option<i64>,
    sp: bool,
) -> Entry {
    Entry {
        checkpoint: c,
        committables: (0..n).map(|i| committable(i, c)).collect(),
        watermark: w,
        savepoint: sp,
    }
}

/// One call drawn from `mix`. Subtasks are drawn from 0..4, so that some
/// calls name a subtask outside the parallelism.
pub fn call(mix: &Mix) -> impl Strategy<Value = Call> {
    let cp = || mix.checkpoint.clone();
    let f = mix.committable;
    let arms: Vec<(u32, BoxedStrategy<Call>)> = vec![
        (
            mix.event,
            (
                0u32..4,
                cp(),
                0u8..3,
                proptest::option::of(-2i64..3),
                proptest::bool::weighted(mix.savepoint),
            )
                .prop_map(move |(s, c, n, w, sp)| Call::Event {
                    subtask: s,
                    attempt: 0,
                    entry: entry(f, c, n, w, sp),
                })
                .boxed(),
        ),
        (
            mix.restored,
            (
                0u32..4,
                0u64..6,
                proptest::collection::vec((cp(), 0u8..2), 0..3),
            )
                .prop_map(move |(s, r, e)| Call::Restored {
                    subtask: s,
                    attempt: 1,
                    checkpoint: r,
                    entries: e
                        .into_iter()
                        .map(|(c, n)| entry(f, c, n, None, n == 1))
                        .collect(),
                })
                .boxed(),
        ),
        (
            1,
            (0u32..4, proptest::option::of(0u64..6))
                .prop_map(|(s, r)| Call::SubtaskReset {
                    subtask: s,
                    checkpoint: r,
                })
                .boxed(),
        ),
        (1, cp().prop_map(Call::Checkpoint).boxed()),
        (
            mix.complete,
            cp().prop_map(Call::CheckpointComplete).boxed(),
        ),
        (1, cp().prop_map(Call::CheckpointAborted).boxed()),
        (mix.close, Just(Call::Close).boxed()),
    ];
    Union::new_weighted(arms.into_iter().filter(|(w, _)| *w > 0).collect())
}
