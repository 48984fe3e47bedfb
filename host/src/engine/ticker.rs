//! The deadline ticker: a runtime's call deadline is enforced through
//! wasmtime's epoch interruption, and something must advance the epoch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use wasmtime::Engine;

use super::DEADLINE_TICK;

/// Advances the engine's epoch every [`DEADLINE_TICK`] until dropped (when
/// the last clone of its [`Runtime`] goes).
pub(super) struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    pub(super) fn start(engine: &Engine) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let engine = engine.clone();
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("sinkcoord-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    std::thread::park_timeout(DEADLINE_TICK);
                    engine.increment_epoch();
                }
            })?;
        Ok(Ticker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}
