//! `events-packed` (WIT 0.2.2) through the Rust host: packed events give
//! what `events` gives; a malformed committables block is the failing
//! event, a fatal `invalid-event` naming its subtask and checkpoint, with
//! the events before it applied — never a trap. The same holds on the
//! 0.2.1 component, which has no `events-packed` (the host unpacks and
//! sends `events`), and old hosts run the 0.2.2 component.

use sink_coordinator::batch::PackedEvent;
use sink_coordinator::{Config, Entry, ErrorKind, Lifecycle, MemStorage, WriterEvent, END};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::error::HostErrorKind;
use sink_coordinator_host::{ComponentCoordinator, ComponentTable, Runtime, RuntimeOptions};

fn runtimes() -> [(Runtime, bool); 2] {
    let v021 = Runtime::new(
        include_bytes!("../../dist/sink-coordinator-0.2.1.wasm"),
        RuntimeOptions::default(),
    )
    .expect("the 0.2.1 component loads");
    [(Runtime::embedded().unwrap(), true), (v021, false)]
}

fn event(subtask: u32, checkpoint: u64, n: usize) -> WriterEvent {
    WriterEvent {
        subtask,
        attempt: 2,
        entry: Entry {
            checkpoint,
            committables: (0..n).map(|i| vec![b'a' + i as u8; 130 * i]).collect(),
            watermark: (subtask != 2).then_some(-5 - i64::from(subtask)),
            savepoint: checkpoint == 2,
        },
    }
}

fn packed(e: &WriterEvent) -> PackedEvent {
    PackedEvent::from(e)
}

fn coordinator(runtime: &Runtime, table: &Shared<MemStorage>) -> ComponentCoordinator {
    let env = HostEnv::new(table.clone(), ManualClock::new(1_000, 1));
    let mut c = ComponentCoordinator::new(runtime, env, &Config::new(3, "packed"), None).unwrap();
    c.start().unwrap();
    c
}

#[test]
fn packed_events_commit_what_events_commit() {
    let batch: Vec<WriterEvent> = (0..3)
        .flat_map(|s| [event(s, 1, 3), event(s, 2, 0)])
        .collect();
    let mut tables = Vec::new();
    for (runtime, has_packed) in runtimes() {
        for use_packed in [false, true] {
            let table = Shared::new(MemStorage::default());
            let mut c = coordinator(&runtime, &table);
            assert_eq!(c.has_events_packed(), has_packed);
            let o = if use_packed {
                let p: Vec<PackedEvent> = batch.iter().map(packed).collect();
                c.events_packed(&p).unwrap()
            } else {
                c.events(batch.clone()).unwrap()
            };
            assert_eq!(o.state, Lifecycle::Running);
            c.checkpoint(2).unwrap();
            let done = c.checkpoint_complete(2).unwrap();
            assert_eq!(done.committed, vec![1]);
            let snapshots = ComponentTable::new(&runtime, table.clone())
                .unwrap()
                .list_snapshots()
                .unwrap();
            tables.push(format!("{snapshots:?} {:?}", table.lock().map));
        }
    }
    assert!(tables.windows(2).all(|w| w[0] == w[1]), "{tables:#?}");
}

#[test]
fn a_malformed_block_is_a_fatal_invalid_event_and_never_a_trap() {
    let blocks: [(&[u8], &str); 5] = [
        (&[2, 1, b'x'], "truncated"),
        (&[1, 1, b'x', b'y'], "after its last committable"),
        (&[0x80, 0x00], "overlong"),
        (&[0xff; 11], "overlong"),
        (&[], "truncated"),
    ];
    for (runtime, _) in runtimes() {
        for (block, why) in blocks {
            let table = Shared::new(MemStorage::default());
            let mut c = coordinator(&runtime, &table);
            let mut bad = packed(&event(1, END, 1));
            bad.committables = block.to_vec();
            let events = [packed(&event(0, 1, 2)), bad, packed(&event(2, 1, 1))];
            let failure = c.events_packed(&events).unwrap_err();
            assert_eq!(failure.applied, 1, "{failure}");
            assert_eq!(
                failure.error.kind,
                HostErrorKind::Core(ErrorKind::InvalidEvent),
                "{failure}"
            );
            let m = &failure.error.message;
            assert!(
                m.starts_with("event of subtask 1 for checkpoint END: the committables block")
                    && m.contains(why),
                "{m}"
            );
            assert_eq!(failure.outcome.state, Lifecycle::Failed);
            assert_eq!(c.state(), Lifecycle::Failed);
            // Failed: every later call is refused.
            assert!(c.checkpoint(1).is_err());
        }
    }
}

/// A committable beyond max-committable-bytes in a well-formed block: the
/// limit's own message, as for `event`.
#[test]
fn a_block_beyond_a_limit_is_refused_by_the_limit() {
    let limits = sink_coordinator::Limits {
        max_committable_bytes: 100,
        ..sink_coordinator::Limits::DEFAULT
    };
    let runtime = Runtime::new(
        sink_coordinator_host::artifact::EMBEDDED_WASM,
        RuntimeOptions::from_limits(limits),
    )
    .unwrap();
    let table = Shared::new(MemStorage::default());
    let mut c = coordinator(&runtime, &table);
    let failure = c.events_packed(&[packed(&event(0, 1, 2))]).unwrap_err();
    assert_eq!(failure.applied, 0);
    assert!(
        failure.error.message.contains("max-committable-bytes 100"),
        "{failure}"
    );
    assert_eq!(c.state(), Lifecycle::Failed);
}
