//! Instances alive at once, counted per runtime (for messages) and per
//! process (for the bound, [`super::RuntimeOptions::max_live_instances`]).
//!
//! Past the pool, each instance costs the kernel two memory mappings, and
//! the kernel's limit on mappings per process (`vm.max_map_count`, 65,530
//! by default) then refuses the next one with "Cannot allocate memory" at
//! about 32,000 live instances (issue 26). The bound refuses earlier, at a
//! count the host chose, with a message naming it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Stores alive in this process, across every runtime.
static PROCESS_LIVE: AtomicUsize = AtomicUsize::new(0);

/// Stores (coordinators, writers, table handles) of every runtime alive in
/// this process now: the count that
/// [`RuntimeOptions::max_live_instances`](super::RuntimeOptions::max_live_instances) bounds.
pub fn live_instances() -> usize {
    PROCESS_LIVE.load(Ordering::Relaxed)
}

/// One live Store: both counts go down when it is dropped.
pub(super) struct LiveStore(Arc<AtomicUsize>);

impl LiveStore {
    /// Counts one more Store of the runtime counting in `runtime`, or
    /// refuses with the process's count when it already holds `max`.
    pub(super) fn admit(runtime: &Arc<AtomicUsize>, max: u32) -> Result<Self, usize> {
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        let mut now = PROCESS_LIVE.load(Ordering::Relaxed);
        loop {
            if now >= max {
                return Err(now);
            }
            match PROCESS_LIVE.compare_exchange_weak(
                now,
                now + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(seen) => now = seen,
            }
        }
        runtime.fetch_add(1, Ordering::Relaxed);
        Ok(LiveStore(Arc::clone(runtime)))
    }
}

impl Drop for LiveStore {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
        PROCESS_LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}
