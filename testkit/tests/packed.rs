//! `events-packed` (WIT 0.2.2) and `events-block` (0.2.10) through the
//! Rust host: packed events and blocks give what `events` gives; a
//! malformed committables block is the failing event, a fatal
//! `invalid-event` naming its subtask and checkpoint, with the events
//! before it applied — never a trap; a block that does not decode whole
//! applies nothing. The same holds on the 0.2.9 component, which has no
//! `events-block` (the host sends `events-packed`), and on the 0.2.1
//! component, which has neither (the host unpacks and sends `events`).

use sink_coordinator::batch::PackedEvent;
use sink_coordinator::{Config, Entry, ErrorKind, Lifecycle, MemStorage, WriterEvent, END};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::error::HostErrorKind;
use sink_coordinator_host::{ComponentCoordinator, ComponentTable, Runtime, RuntimeOptions};

/// The embedded component, 0.2.9 (no `events-block`) and 0.2.1 (no
/// `events-packed` either), with what each has: (packed, block).
fn runtimes() -> [(Runtime, (bool, bool)); 3] {
    let old = |bytes: &[u8]| Runtime::new(bytes, RuntimeOptions::default()).unwrap();
    [
        (Runtime::embedded().unwrap(), (true, true)),
        (
            old(include_bytes!("../../dist/sink-coordinator-0.2.9.wasm")),
            (true, false),
        ),
        (
            old(include_bytes!("../../dist/sink-coordinator-0.2.1.wasm")),
            (false, false),
        ),
    ]
}

/// The block of `events`.
fn block(events: &[PackedEvent]) -> Vec<u8> {
    sink_coordinator::block::encode(events.iter().map(Into::into))
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
    for (runtime, (has_packed, has_block)) in runtimes() {
        for how in 0..5 {
            let table = Shared::new(MemStorage::default());
            let mut c = coordinator(&runtime, &table);
            assert_eq!(c.has_events_packed(), has_packed);
            assert!(!c.has_events_block(), "off by default");
            c.use_events_block(true);
            assert_eq!(c.has_events_block(), has_block);
            // 0, 1: `events`, `events-packed` as the host chooses (the
            // block where there is one); 2, 3: both without the block;
            // 4: a block of the host's own.
            c.use_events_block(how < 2 || how == 4);
            let p: Vec<PackedEvent> = batch.iter().map(packed).collect();
            let o = match how {
                0 | 2 => c.events(batch.clone()).unwrap(),
                1 | 3 => c.events_packed(&p).unwrap(),
                _ => c.events_block(&block(&p)).unwrap(),
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
        for ((committables, why), as_block) in blocks
            .into_iter()
            .zip([false, true])
            .chain(blocks.into_iter().zip([true, false]))
        {
            let table = Shared::new(MemStorage::default());
            let mut c = coordinator(&runtime, &table);
            let mut bad = packed(&event(1, END, 1));
            bad.committables = committables.to_vec();
            let events = [packed(&event(0, 1, 2)), bad, packed(&event(2, 1, 1))];
            let failure = if as_block {
                c.events_block(&block(&events)).unwrap_err()
            } else {
                c.events_packed(&events).unwrap_err()
            };
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

/// Bytes that are not a block (cut short, trailing bytes, a flag of 2):
/// nothing applied, a fatal `invalid-event` saying where decoding stopped,
/// the table untouched, on every component (the older ones through the
/// host's decoding).
#[test]
fn a_malformed_events_block_applies_nothing_on_every_component() {
    let events = [packed(&event(0, 1, 2)), packed(&event(1, 1, 0))];
    let good = block(&events);
    let mut trailing = good.clone();
    trailing.push(7);
    let mut flag = good.clone();
    *flag.last_mut().unwrap() = 2;
    let cases = [
        (
            good[..good.len() - 3].to_vec(),
            "malformed at event 1 (byte 143)",
        ),
        (trailing, "has 1 bytes after its last event (of 2)"),
        (flag, "malformed at event 1 (byte 143)"),
        (Vec::new(), "malformed at event 0 (byte 0)"),
    ];
    for (runtime, _) in runtimes() {
        for (bytes, why) in &cases {
            let table = Shared::new(MemStorage::default());
            let mut c = coordinator(&runtime, &table);
            let before = table.lock().map.clone();
            let failure = c.events_block(bytes).unwrap_err();
            assert_eq!(failure.applied, 0, "{failure}");
            assert_eq!(
                failure.error.kind,
                HostErrorKind::Core(ErrorKind::InvalidEvent),
                "{failure}"
            );
            assert!(
                failure.error.message.starts_with("the events block ")
                    && failure.error.message.ends_with(why),
                "{failure}"
            );
            assert_eq!(failure.outcome.state, Lifecycle::Failed);
            assert_eq!(c.state(), Lifecycle::Failed);
            assert_eq!(table.lock().map, before);
        }
    }
}
