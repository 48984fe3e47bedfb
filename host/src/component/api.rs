//! The component's handles implement the core's
//! [`CoordinatorApi`](sink_coordinator::CoordinatorApi) and
//! [`WriterApi`](sink_coordinator::WriterApi), the calls whatever runs them:
//! an embedder (or replay, or the simulator) written against the traits
//! runs the native core ([`sink_coordinator::NativeCoordinator`]) or the
//! component alike.

use sink_coordinator::{
    ApplyResult, Call, CoordinatorApi, HostCallError, Lifecycle, Reply, WriterApi, WriterCall,
    WriterReply,
};

use super::{ComponentCoordinator, ComponentWriter};
use crate::error::HostResult;

impl CoordinatorApi for ComponentCoordinator {
    fn state(&mut self) -> Lifecycle {
        ComponentCoordinator::state(self)
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        ComponentCoordinator::committed_up_to(self)
    }
    fn apply(&mut self, call: Call) -> ApplyResult {
        let outcome = match call {
            Call::Start => self.start(),
            Call::Event {
                subtask,
                attempt,
                entry,
            } => ComponentCoordinator::event(self, subtask, attempt, entry),
            Call::Events(events) => {
                return ComponentCoordinator::events(self, events)
                    .map(Reply::Outcome)
                    .map_err(HostCallError::Batch)
            }
            Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => ComponentCoordinator::restored(self, subtask, attempt, checkpoint, entries),
            Call::SubtaskReset {
                subtask,
                checkpoint,
            } => ComponentCoordinator::subtask_reset(self, subtask, checkpoint),
            Call::Checkpoint(n) => {
                return Ok(Reply::State(ComponentCoordinator::checkpoint(self, n)?))
            }
            Call::CheckpointComplete(n) => ComponentCoordinator::checkpoint_complete(self, n),
            Call::CheckpointAborted(n) => ComponentCoordinator::checkpoint_aborted(self, n),
            Call::Close => ComponentCoordinator::close(self),
        };
        Ok(Reply::Outcome(outcome?))
    }
}

impl WriterApi for ComponentWriter {
    fn apply(&mut self, call: WriterCall<'_>) -> HostResult<WriterReply> {
        Ok(match call {
            WriterCall::Report {
                checkpoint,
                committables,
                watermark,
                savepoint,
            } => WriterReply::Entry(ComponentWriter::report(
                self,
                checkpoint,
                &committables,
                watermark,
                savepoint,
            )?),
            WriterCall::EndInput {
                committables,
                watermark,
            } => WriterReply::Entry(ComponentWriter::end_input(self, &committables, watermark)?),
            WriterCall::Committed(u) => {
                ComponentWriter::committed(self, u)?;
                WriterReply::Done
            }
            WriterCall::CheckpointAborted(c) => {
                ComponentWriter::checkpoint_aborted(self, c)?;
                WriterReply::Done
            }
            WriterCall::State => WriterReply::State(ComponentWriter::state(self)?),
            WriterCall::Restore { state, checkpoint } => {
                WriterReply::Entries(ComponentWriter::restore(self, state, checkpoint)?)
            }
        })
    }
}
