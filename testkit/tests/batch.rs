//! `events` (WIT 0.2.1): a batch of writer events, through the component
//! (0.2.2 through `events-packed`, the 0.2.1 artifact through `events`) and
//! natively, gives the same outcomes, errors and table as the same
//! events sent one by one through the native core's `event` — including
//! fatal errors in the middle of a batch and storage faults, after which the
//! host resends from the failing event as the WIT tells it to. The
//! component runs every batch with both lowerings of `events-packed`: the
//! hand-written one (feature `hand-lowering`, the default) and wasmtime's
//! derived one.

use proptest::prelude::*;
use sink_coordinator::batch::Merged;
use sink_coordinator::{
    Config, Entry, ErrorKind, FinalCommitMode, Lifecycle, Outcome, RecoveryMode, WriterEvent, END,
};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::Shared;
use sink_coordinator_host::error::HostErrorKind;
use sink_coordinator_host::storage::MemStorage;
use sink_coordinator_host::{Runtime, RuntimeOptions};
use sink_coordinator_testkit::faults::{CallKind, Fault, FaultMode, FaultyStorage};
use std::sync::OnceLock;

use sink_coordinator_testkit::driver::{CoordinatorApi, Engine};

/// One step of a plan: a burst of events, a completion, or a storage fault
/// on the next put (so the next commit fails with `storage`).
#[derive(Clone, Debug)]
enum Step {
    /// (subtask, checkpoint step, committables, savepoint): the event's
    /// checkpoint is the subtask's previous one plus the step (0 repeats
    /// it; 4 = END).
    Events(Vec<(u32, u64, u8, bool)>),
    /// Completes the highest checkpoint sent so far, minus this.
    Complete(u64),
    PutFault(u64),
}

fn step() -> impl Strategy<Value = Step> {
    // Subtask 3 is out of range (parallelism 3): a fatal error, rarely;
    // so are a repeated checkpoint and an event after END.
    let event = (
        prop_oneof![150 => 0u32..3, 1 => Just(3u32)],
        prop_oneof![1 => Just(0u64), 150 => 1u64..3, 3 => Just(4u64)],
        0u8..3,
        prop::bool::weighted(0.2),
    );
    prop_oneof![
        4 => prop::collection::vec(event, 0..8).prop_map(Step::Events),
        2 => (0u64..2).prop_map(Step::Complete),
        1 => (0u64..2).prop_map(Step::PutFault),
    ]
}

fn config(final_commit: FinalCommitMode) -> Config {
    Config {
        parallelism: 3,
        commit_user: "batch".into(),
        checkpointing: true,
        final_commit,
        force_create_snapshot: false,
        savepoint_auto_tag: true,
        tag_time_retained_ms: Some(1_000),
        recovery: RecoveryMode::Restart,
    }
}

fn writer_event(subtask: u32, checkpoint: u64, n: u8, savepoint: bool) -> WriterEvent {
    WriterEvent {
        subtask,
        attempt: 0,
        entry: Entry {
            checkpoint,
            committables: (0..n)
                .map(|i| format!("{subtask}-{checkpoint}-{i}").into_bytes())
                .collect(),
            watermark: Some(checkpoint as i64 & 0xffff),
            savepoint,
        },
    }
}

/// What a run shows: every call's outcome (a burst's merged one) or error
/// (kind, message, and for a burst the failing index), then the table.
type Seen = Vec<String>;

/// Sends one burst one event at a time, as a 0.2.0 host does, merging the
/// outcomes; on an error, stops there (index of the failing event).
#[allow(clippy::result_large_err)] // a test's comparison value, not an API
fn one_by_one(
    c: &mut dyn CoordinatorApi,
    events: &[WriterEvent],
) -> Result<Outcome, (usize, Outcome, HostErrorKind, String)> {
    let mut merged = Merged::new(c.state(), c.committed_up_to());
    for (i, e) in events.iter().enumerate() {
        match c.event(e.subtask, e.attempt, e.entry.clone()) {
            Ok(o) => merged.add(o),
            Err(err) => {
                let (state, up_to) = (c.state(), c.committed_up_to());
                return Err((i, merged.after(state, up_to), err.kind, err.message));
            }
        }
    }
    Ok(merged.finish())
}

fn run(engine: &Engine, batched: bool, final_commit: FinalCommitMode, plan: &[Step]) -> Seen {
    let storage = Shared::new(FaultyStorage::new(MemStorage::default()));
    let clock = Shared::new(ManualClock::new(1_000, 7));
    let mut driver = engine
        .driver(storage.as_storage(), clock.as_clock())
        .unwrap();
    let mut c = driver.create(config(final_commit), None).unwrap();
    // Errors as kind and message: the native core keeps a storage error's
    // source, which the component cannot carry across.
    let plain =
        |r: Result<Outcome, sink_coordinator_host::HostError>| r.map_err(|e| (e.kind, e.message));
    let mut seen = vec![format!("{:?}", plain(c.start()))];
    // Each subtask's last checkpoint, and the highest one sent.
    let mut last = [0u64; 4];
    let mut highest = 0u64;
    'plan: for step in plan {
        match step {
            Step::Events(burst) => {
                let mut events = Vec::new();
                for &(s, step, n, savepoint) in burst {
                    let slot = &mut last[s as usize];
                    *slot = if step == 4 {
                        END
                    } else {
                        slot.saturating_add(step).min(END - 1)
                    };
                    if *slot != END {
                        highest = highest.max(*slot);
                    }
                    events.push(writer_event(s, *slot, n, savepoint));
                }
                // A declined or storage error: the host resends from the
                // failing event (at most twice; a fault is used up by then).
                for _ in 0..3 {
                    let result = if batched {
                        c.events(events.clone())
                            .map_err(|f| (f.applied, f.outcome, f.error.kind, f.error.message))
                    } else {
                        one_by_one(c.as_mut(), &events)
                    };
                    seen.push(format!("{result:?}"));
                    match result {
                        Ok(_) => break,
                        Err((applied, _, kind, _)) if !kind.is_fatal() => {
                            events.drain(..applied);
                        }
                        Err(_) => break 'plan,
                    }
                }
            }
            Step::Complete(back) => {
                let checkpoint = highest.saturating_sub(*back);
                let _ = c.checkpoint(checkpoint);
                seen.push(format!("{:?}", plain(c.checkpoint_complete(checkpoint))));
            }
            Step::PutFault(skip) => storage.lock().push_fault(
                CallKind::Put,
                Fault {
                    skip: *skip,
                    count: 1,
                    mode: FaultMode::Fail,
                },
            ),
        }
        if c.state() == Lifecycle::Failed {
            break;
        }
    }
    storage.lock().set_suspended(true);
    seen.push(format!(
        "{:?}",
        driver.list_snapshots().map_err(|e| e.message)
    ));
    seen.push(format!("{:?}", driver.list_tags().map_err(|e| e.message)));
    seen
}

/// The components compiled once for every case: native, the embedded
/// component (batches through `events-packed`, lowered by hand), the same
/// component with wasmtime's derived lowering (the fallback of the
/// `hand-lowering` feature), and the 0.2.1 artifact (which has no
/// `events-packed`: batches through `events`).
fn engines() -> [Engine; 4] {
    static RUNTIMES: OnceLock<(Runtime, Runtime, Runtime)> = OnceLock::new();
    let (current, derived, v021) = RUNTIMES.get_or_init(|| {
        let current = Runtime::embedded().expect("the embedded component loads");
        let derived = Runtime::new(
            sink_coordinator_host::artifact::EMBEDDED_WASM,
            RuntimeOptions {
                derived_lowering: true,
                ..RuntimeOptions::default()
            },
        )
        .expect("the embedded component loads");
        let v021 = Runtime::new(
            include_bytes!("../../dist/sink-coordinator-0.2.1.wasm"),
            RuntimeOptions::default(),
        )
        .expect("the 0.2.1 component loads");
        (current, derived, v021)
    });
    [
        Engine::NATIVE,
        Engine::Component(current.clone()),
        Engine::Component(derived.clone()),
        Engine::Component(v021.clone()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_batch_is_its_events_one_by_one(
        plan in prop::collection::vec(step(), 0..14),
        on_end_input in any::<bool>(),
    ) {
        let mode = if on_end_input { FinalCommitMode::OnEndInput } else { FinalCommitMode::OnCheckpoint };
        let [native, component, derived, v021] = engines();
        let expected = run(&native, false, mode, &plan);
        if std::env::var_os("BATCH_TEST_SHOW").is_some() {
            eprintln!("{}", expected.join("\n"));
        }
        prop_assert_eq!(&run(&native, true, mode, &plan), &expected, "native batch");
        prop_assert_eq!(&run(&component, true, mode, &plan), &expected, "component batch");
        prop_assert_eq!(&run(&derived, true, mode, &plan), &expected, "component batch, derived lowering");
        prop_assert_eq!(&run(&v021, true, mode, &plan), &expected, "0.2.1 component batch");
    }
}

/// A batch that stops at a fatal error: the events before it are applied,
/// the error names the failing event's index, the instance is failed, and
/// the component and the native core agree.
#[test]
fn a_fatal_error_in_a_batch_names_the_event_and_keeps_the_earlier_ones() {
    for engine in engines() {
        let storage = Shared::new(FaultyStorage::new(MemStorage::default()));
        let clock = Shared::new(ManualClock::new(0, 1));
        let mut driver = engine
            .driver(storage.as_storage(), clock.as_clock())
            .unwrap();
        let mut c = driver
            .create(config(FinalCommitMode::OnCheckpoint), None)
            .unwrap();
        c.start().unwrap();
        let events: Vec<WriterEvent> = [(0, 1), (1, 2), (9, 1), (2, 1)]
            .into_iter()
            .map(|(s, n)| writer_event(s, 1, n, false))
            .collect();
        let failure = c.events(events).unwrap_err();
        assert_eq!(failure.applied, 2, "{}", engine.name());
        assert_eq!(
            failure.error.kind,
            HostErrorKind::Core(ErrorKind::InvalidEvent),
            "{failure}"
        );
        assert!(failure.error.message.contains('9'), "{failure}");
        assert_eq!(failure.outcome.state, Lifecycle::Failed);
        assert_eq!(c.state(), Lifecycle::Failed);
        // An empty batch answers the state without an error.
        let ok = c.events(Vec::new()).unwrap();
        assert_eq!(ok.state, Lifecycle::Failed);
    }
}
