//! Calling the coordinator from async Rust (tokio): the coordinator on a
//! thread of its own, reached through a channel.
//!
//! Every call into the component is synchronous, and so is every storage
//! call it makes: a commit may wait on the table's storage (with retries)
//! for as long as the store takes. Called on a tokio worker thread, that
//! would stall every task of the worker. The pattern here is the one
//! Paimon's `runInEventLoop` and Hudi's executor use for the same reason: the
//! coordinator lives on one dedicated thread, which runs the calls in the
//! order they were sent; async code sends a closure and awaits its answer.
//!
//! A dedicated thread rather than `spawn_blocking`: it keeps one instance on
//! one thread (no lock, calls in order), and it is outside every tokio
//! runtime, so the embedding's `ObjectStorage` (which refuses to block a
//! thread that has a runtime, `spawn_blocking`'s threads included) works
//! there as well as the directory table used here.
//!
//! Run it with `cargo run --release -p sink-coordinator-host --example tokio`;
//! `cargo test` runs its test.

use std::error::Error;
use std::sync::mpsc;
use std::thread::JoinHandle;

use sink_coordinator::{Config, Snapshot, WriterEvent};
use sink_coordinator_host::clock::SystemClock;
use sink_coordinator_host::env::HostEnv;
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_host::{ComponentCoordinator, ComponentTable, ComponentWriter, Runtime};
use tokio::sync::oneshot;

type BoxError = Box<dyn Error + Send + Sync>;
type Job = Box<dyn FnOnce(&mut ComponentCoordinator) + Send>;

/// A coordinator owned by a thread of its own; `call` runs a closure on it.
struct CoordinatorThread {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl CoordinatorThread {
    /// Starts the thread, which makes the coordinator with `make` (the
    /// instance is created where it is used, so it never moves).
    async fn spawn(
        make: impl FnOnce() -> Result<ComponentCoordinator, BoxError> + Send + 'static,
    ) -> Result<Self, BoxError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, started) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("sink-coordinator".into())
            .spawn(move || {
                let mut coordinator = match make() {
                    Ok(c) => {
                        let _ = ready.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                // Ends when every sender is dropped: the calls sent before
                // are all run first (a final commit is never dropped).
                for job in queue {
                    job(&mut coordinator);
                }
            })?;
        started
            .await
            .map_err(|_| "the coordinator thread stopped")??;
        Ok(CoordinatorThread {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `f` on the coordinator's thread, after every call sent before.
    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ComponentCoordinator) -> R + Send + 'static,
    ) -> Result<R, BoxError> {
        let (answer, result) = oneshot::channel();
        let job: Job = Box::new(move |c| {
            let _ = answer.send(f(c));
        });
        self.jobs
            .as_ref()
            .ok_or("the coordinator thread is closed")?
            .send(job)
            .map_err(|_| "the coordinator thread stopped")?;
        Ok(result.await.map_err(|_| "the coordinator thread stopped")?)
    }

    /// Waits, off the runtime's threads, until every call sent has run.
    async fn close(mut self) -> Result<(), BoxError> {
        drop(self.jobs.take());
        let thread = self.thread.take().ok_or("closed twice")?;
        tokio::task::spawn_blocking(move || thread.join())
            .await?
            .map_err(|_| "the coordinator thread panicked")?;
        Ok(())
    }
}

/// Three checkpoints of a job with two writers, driven from async tasks; the
/// last snapshot is returned.
async fn run(table: std::path::PathBuf) -> Result<Snapshot, BoxError> {
    let runtime = Runtime::embedded()?;
    let (rt, dir) = (runtime.clone(), table.clone());
    let coordinator = CoordinatorThread::spawn(move || {
        let storage = LocalDirStorage::open(dir)?;
        let env = HostEnv::new(storage, SystemClock);
        let mut c = ComponentCoordinator::new(&rt, env, &Config::new(2, "tokio-example"), None)?;
        c.start()?;
        Ok(c)
    })
    .await?;

    let mut writers = Vec::new();
    for subtask in 0..2 {
        writers.push(ComponentWriter::new(&runtime, subtask)?);
    }
    for checkpoint in 1..=3 {
        let _state = coordinator
            .call(move |c| c.checkpoint(checkpoint))
            .await??;
        let mut events = Vec::new();
        for (subtask, writer) in (0u32..).zip(writers.iter_mut()) {
            let file = format!("data/part-{subtask}-{checkpoint}.parquet").into_bytes();
            let entry = writer.report(checkpoint, &[file], None, false)?;
            events.push(WriterEvent {
                subtask,
                attempt: 0,
                entry,
            });
        }
        // While the coordinator commits, this task is free: another task
        // (here a timer) runs on the same runtime.
        let commit = coordinator.call(move |c| {
            c.events(events).map_err(|f| f.to_string())?;
            c.checkpoint_complete(checkpoint).map_err(|e| e.to_string())
        });
        let (outcome, ()) = tokio::join!(commit, tokio::time::sleep(std::time::Duration::ZERO));
        let outcome = outcome??;
        println!(
            "checkpoint {checkpoint}: snapshots {:?} committed, committed up to {:?}",
            outcome.committed, outcome.committed_up_to
        );
        if let Some(up_to) = outcome.committed_up_to {
            for writer in &mut writers {
                writer.committed(up_to)?;
            }
        }
    }
    coordinator.call(|c| c.close()).await??;
    coordinator.close().await?;

    // A reader of the table, also off the runtime's threads.
    let snapshot = tokio::task::spawn_blocking(move || -> Result<_, BoxError> {
        let mut reader = ComponentTable::new(&runtime, LocalDirStorage::open(table)?)?;
        reader
            .latest_snapshot()?
            .ok_or_else(|| "no snapshot was committed".into())
    })
    .await??;
    Ok(snapshot)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let table = std::env::args_os()
        .nth(1)
        .map(Into::into)
        .unwrap_or_else(|| std::env::temp_dir().join("sink-coordinator-tokio-example"));
    let _ = std::fs::remove_dir_all(&table);
    let snapshot = run(table).await?;
    println!(
        "snapshot {} by {:?}: checkpoint {}, {} committables",
        snapshot.id,
        snapshot.commit_user,
        snapshot.identifier,
        snapshot.committables.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[tokio::test(flavor = "current_thread")]
    async fn three_checkpoints_from_async_tasks() {
        let table = std::env::temp_dir().join(format!("sinkcoord-tokio-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&table);
        let snapshot = super::run(table.clone()).await.expect("the example runs");
        let _ = std::fs::remove_dir_all(&table);
        assert_eq!((snapshot.id, snapshot.identifier), (3, 3));
        assert_eq!(snapshot.commit_user, "tokio-example");
        assert_eq!(
            snapshot.committables,
            vec![
                (0, b"data/part-0-3.parquet".to_vec()),
                (1, b"data/part-1-3.parquet".to_vec()),
            ]
        );
    }
}
