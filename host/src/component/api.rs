//! The component's handles implement the core's
//! [`CoordinatorApi`](sink_coordinator::CoordinatorApi) and
//! [`WriterApi`](sink_coordinator::WriterApi), the calls whatever runs them:
//! an embedder (or replay, or the simulator) written against the traits
//! runs the native core ([`sink_coordinator::NativeCoordinator`]) or the
//! component alike.

use sink_coordinator::{CoordinatorApi, Entry, Lifecycle, Outcome, WriterApi, WriterEvent};

use super::{ComponentCoordinator, ComponentWriter};
use crate::error::{BatchResult, HostResult};

impl CoordinatorApi for ComponentCoordinator {
    fn state(&mut self) -> Lifecycle {
        ComponentCoordinator::state(self)
    }
    fn start(&mut self) -> HostResult<Outcome> {
        ComponentCoordinator::start(self)
    }
    fn event(&mut self, subtask: u32, attempt: u32, entry: Entry) -> HostResult<Outcome> {
        ComponentCoordinator::event(self, subtask, attempt, entry)
    }
    fn events(&mut self, events: Vec<WriterEvent>) -> BatchResult {
        ComponentCoordinator::events(self, events)
    }
    fn restored(
        &mut self,
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    ) -> HostResult<Outcome> {
        ComponentCoordinator::restored(self, subtask, attempt, checkpoint, entries)
    }
    fn subtask_reset(&mut self, subtask: u32, checkpoint: Option<u64>) -> HostResult<Outcome> {
        ComponentCoordinator::subtask_reset(self, subtask, checkpoint)
    }
    fn checkpoint(&mut self, checkpoint: u64) -> HostResult<Vec<u8>> {
        ComponentCoordinator::checkpoint(self, checkpoint)
    }
    fn checkpoint_complete(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        ComponentCoordinator::checkpoint_complete(self, checkpoint)
    }
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<Outcome> {
        ComponentCoordinator::checkpoint_aborted(self, checkpoint)
    }
    fn close(&mut self) -> HostResult<Outcome> {
        ComponentCoordinator::close(self)
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        ComponentCoordinator::committed_up_to(self)
    }
}

impl WriterApi for ComponentWriter {
    fn report(
        &mut self,
        checkpoint: u64,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        savepoint: bool,
    ) -> HostResult<Entry> {
        ComponentWriter::report(self, checkpoint, &committables, watermark, savepoint)
    }
    fn end_input(
        &mut self,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
    ) -> HostResult<Entry> {
        ComponentWriter::end_input(self, &committables, watermark)
    }
    fn committed(&mut self, u: u64) -> HostResult<()> {
        ComponentWriter::committed(self, u)
    }
    fn checkpoint_aborted(&mut self, checkpoint: u64) -> HostResult<()> {
        ComponentWriter::checkpoint_aborted(self, checkpoint)
    }
    fn state(&mut self) -> HostResult<Vec<u8>> {
        ComponentWriter::state(self)
    }
    fn restore(&mut self, state: &[u8], checkpoint: u64) -> HostResult<Vec<Entry>> {
        ComponentWriter::restore(self, state, checkpoint)
    }
}
