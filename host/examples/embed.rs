//! Embedding the coordinator in a Rust engine: the smallest complete job.
//!
//! The embedded component (`dist/`, loaded by [`Runtime::embedded`]) runs one
//! coordinator and two writer helpers over an in-memory table. One
//! checkpoint goes through the order Flink uses (SEMANTICS 1, 5): the
//! coordinator takes its state first, then each writer reports what it wrote
//! and the entries are delivered as one batch of events (`events`: one
//! crossing into the component for the burst), then the checkpoint completes and
//! the coordinator commits. The host forwards the outcome's committed-up-to
//! to the writers, which lets them drop what was committed. Finally the
//! table is read back through the component and the snapshot printed.
//!
//! Run it with `cargo run --release -p sink-coordinator-host --example embed`;
//! `cargo test` runs it too (the test below) and checks the snapshot.
//!
//! A real engine keeps the same shape and swaps the pieces: a table on its
//! object store (any [`Storage`](sink_coordinator::Storage)), the system
//! clock, one writer helper per sink subtask in the task managers, the
//! coordinator's state stored with each checkpoint (and passed as a
//! `RestorePoint` to a new coordinator after a failover).

use std::error::Error;

use sink_coordinator::{Config, MemStorage, Snapshot, WriterEvent};
use sink_coordinator_host::clock::SystemClock;
use sink_coordinator_host::env::{HostEnv, Shared};
use sink_coordinator_host::{ComponentCoordinator, ComponentTable, ComponentWriter, Runtime};

/// Runs the job and returns the snapshot it committed.
fn run() -> Result<Snapshot, Box<dyn Error>> {
    let runtime = Runtime::embedded()?;

    // The table is shared: the coordinator writes it, the host reads it
    // back afterwards (a `LocalDirStorage` would keep it on disk).
    let table = Shared::new(MemStorage::default());
    let env = HostEnv::new(table.clone(), SystemClock);
    let config = Config::new(2, "embed-example");
    let mut coordinator = ComponentCoordinator::new(&runtime, env, &config, None)?;
    coordinator.start()?;

    let mut writers = Vec::new();
    for subtask in 0..2 {
        writers.push(ComponentWriter::new(&runtime, subtask)?);
    }

    // Checkpoint 1. The coordinator's state is what a checkpoint stores for
    // it; each writer's `state()` is stored with the writer's own state.
    let checkpoint = 1;
    let _coordinator_state = coordinator.checkpoint(checkpoint)?;
    let mut events = Vec::new();
    for (subtask, writer) in (0u32..).zip(writers.iter_mut()) {
        // A committable is opaque to the coordinator: here a file name.
        let file = format!("data/part-{subtask}-{checkpoint}.parquet").into_bytes();
        let entry = writer.report(checkpoint, &[file], Some(1_000), false)?;
        let _writer_state = writer.state()?;
        // One event alone: `coordinator.event(subtask, 0, entry)`.
        events.push(WriterEvent {
            subtask,
            attempt: 0,
            entry,
        });
    }
    // The events that arrived together go in one crossing; on an error the
    // failure says how many were applied (resend the rest after `declined`
    // or `storage`).
    coordinator.events(events)?;

    let outcome = coordinator.checkpoint_complete(checkpoint)?;
    println!(
        "checkpoint {checkpoint} completed: snapshots {:?} committed, committed up to {:?}",
        outcome.committed, outcome.committed_up_to
    );
    if let Some(up_to) = outcome.committed_up_to {
        for writer in &mut writers {
            writer.committed(up_to)?;
        }
    }
    coordinator.close()?;

    // Read the table as any reader of it would.
    let mut reader = ComponentTable::new(&runtime, table)?;
    let snapshot = reader
        .latest_snapshot()?
        .ok_or("the checkpoint committed no snapshot")?;
    Ok(snapshot)
}

fn main() -> Result<(), Box<dyn Error>> {
    let snapshot = run()?;
    println!(
        "snapshot {} by {:?}: checkpoint {}, watermark {:?}",
        snapshot.id, snapshot.commit_user, snapshot.identifier, snapshot.watermark
    );
    for (subtask, committable) in &snapshot.committables {
        println!(
            "  subtask {subtask}: {}",
            String::from_utf8_lossy(committable)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn commits_both_writers_files_once() {
        let snapshot = super::run().expect("the example runs");
        assert_eq!(snapshot.id, 1);
        assert_eq!(snapshot.identifier, 1);
        assert_eq!(snapshot.commit_user, "embed-example");
        assert_eq!(snapshot.watermark, Some(1_000));
        assert_eq!(
            snapshot.committables,
            vec![
                (0, b"data/part-0-1.parquet".to_vec()),
                (1, b"data/part-1-1.parquet".to_vec()),
            ]
        );
    }
}
