//! The checks a call makes before it changes anything: the lifecycle state
//! it is allowed in, and the range of its subtask and checkpoint arguments
//! (SEMANTICS 2 and 8: each refusal is fatal and names the call).

use super::Coordinator;
use crate::error::{ErrorReason, Result};
use crate::types::{Lifecycle, END, MAX_CHECKPOINT};

impl Coordinator {
    /// The state check every call makes first.
    pub(super) fn require(&self, call: &'static str, allowed: &[Lifecycle]) -> Result<()> {
        let state = self.state();
        if allowed.contains(&state) {
            Ok(())
        } else {
            Err(ErrorReason::NotAllowed { call, state }.into())
        }
    }

    pub(super) fn require_subtask(&self, call: &'static str, s: u32) -> Result<()> {
        if s < self.config.parallelism {
            Ok(())
        } else {
            Err(ErrorReason::SubtaskOutsideParallelism {
                call,
                subtask: s,
                parallelism: self.config.parallelism,
            }
            .into())
        }
    }

    /// As [`Self::require_checkpoint`], naming the subtask; the message is
    /// only built on the error path.
    pub(super) fn require_checkpoint_of(
        call: &'static str,
        s: u32,
        c: u64,
        end_allowed: bool,
    ) -> Result<()> {
        if c <= MAX_CHECKPOINT || (end_allowed && c == END) {
            Ok(())
        } else {
            Err(ErrorReason::CheckpointOutOfRange {
                call,
                subtask: Some(s),
                checkpoint: c,
            }
            .into())
        }
    }

    pub(super) fn require_checkpoint(call: &'static str, c: u64, end_allowed: bool) -> Result<()> {
        if c <= MAX_CHECKPOINT || (end_allowed && c == END) {
            Ok(())
        } else {
            Err(ErrorReason::CheckpointOutOfRange {
                call,
                subtask: None,
                checkpoint: c,
            }
            .into())
        }
    }
}
