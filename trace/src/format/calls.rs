//! The coordinator steps of a trace as the core's [`Call`] values, and
//! back: a replay hands a step to `apply`, and a recorder (the simulator,
//! the model) writes the call it made as a step. Only `start` (which also
//! creates the instance) and the host and writer steps have no call.

use sink_coordinator::Call;

use super::Op;

impl Op {
    /// The coordinator call this step makes, if it is one.
    pub fn call(&self) -> Option<Call> {
        Some(match self.clone() {
            Op::Event {
                subtask,
                attempt,
                entry,
            } => Call::Event {
                subtask,
                attempt,
                entry,
            },
            Op::Checkpoint { checkpoint } => Call::Checkpoint(checkpoint),
            Op::Complete { checkpoint } => Call::CheckpointComplete(checkpoint),
            Op::Abort { checkpoint } => Call::CheckpointAborted(checkpoint),
            Op::ResetSubtask {
                subtask,
                checkpoint,
            } => Call::SubtaskReset {
                subtask,
                checkpoint,
            },
            Op::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            },
            Op::Close => Call::Close,
            _ => return None,
        })
    }

    /// The step that makes `call`. `None` for `start` (its step carries the
    /// configuration), for `events` (a trace delivers a batch as its
    /// events, one step each) and for a call TRACE-FORMAT has no step for.
    pub fn of_call(call: &Call) -> Option<Op> {
        Some(match call.clone() {
            Call::Event {
                subtask,
                attempt,
                entry,
            } => Op::Event {
                subtask,
                attempt,
                entry,
            },
            Call::Checkpoint(checkpoint) => Op::Checkpoint { checkpoint },
            Call::CheckpointComplete(checkpoint) => Op::Complete { checkpoint },
            Call::CheckpointAborted(checkpoint) => Op::Abort { checkpoint },
            Call::SubtaskReset {
                subtask,
                checkpoint,
            } => Op::ResetSubtask {
                subtask,
                checkpoint,
            },
            Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => Op::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            },
            Call::Close => Op::Close,
            // `start`, `events`, and every call TRACE-FORMAT has no step
            // for: one catch-all, so that a call added to the WIT and the
            // core needs no arm here. A recorder that gets `None` for a
            // call it must record says so by the call's name
            // (`Call::name`), see the simulator's `call_on`.
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator::{Entry, END};

    #[test]
    fn every_call_step_round_trips() {
        let entry = Entry {
            checkpoint: END,
            committables: vec![vec![1]].into(),
            watermark: Some(3),
            savepoint: false,
        };
        let calls = [
            Call::Event {
                subtask: 2,
                attempt: 1,
                entry: entry.clone(),
            },
            Call::Checkpoint(4),
            Call::CheckpointComplete(4),
            Call::CheckpointAborted(5),
            Call::SubtaskReset {
                subtask: 1,
                checkpoint: None,
            },
            Call::Restored {
                subtask: 0,
                attempt: 2,
                checkpoint: 3,
                entries: vec![entry],
            },
            Call::Close,
        ];
        for call in calls {
            let op = Op::of_call(&call).expect("a step");
            assert_eq!(op.call(), Some(call));
        }
        assert_eq!(Op::of_call(&Call::Start), None);
        assert_eq!(Op::of_call(&Call::Events(vec![])), None);
    }
}
