//! Declared size limits, checked when input arrives.
//!
//! SEMANTICS leaves sizes to the host; a host that embeds the component
//! bounds what one call may copy and allocate, so an entry the coordinator
//! accepted but could not commit would fail at every retry of its commit (a
//! crash loop). The coordinator therefore refuses, with a fatal
//! `invalid-event` naming the limit, the sizes, the subtask and the
//! checkpoint, any input that could make a later commit exceed a limit:
//! - one committable above [`Limits::max_committable_bytes`];
//! - one entry (an event, one entry of a restore event, an END entry) above
//!   [`Limits::max_event_bytes`];
//! - an entry that would make a snapshot exceed
//!   [`Limits::max_snapshot_bytes`]: the snapshot of its checkpoint (every
//!   subtask's entry for it), or, for an ended writer's entries and END
//!   entries, the END snapshot (counted as if every entry an ended writer
//!   still holds went into it, which bounds what the final commit writes).
//!
//! Sizes count each committable's length plus
//! [`COMMITTABLE_OVERHEAD_BYTES`](crate::limits::COMMITTABLE_OVERHEAD_BYTES)
//! for its framing, so that many tiny committables are bounded too. The
//! checks cost O(1) per committable of the input: the per-checkpoint and
//! END totals are kept up to date by `slots`.

use crate::committables::Committables;
use crate::error::{Error, ErrorReason, Result};

/// What each committable counts on top of its length: its length prefix,
/// its subtask in a snapshot and its list slot (a round upper bound).
pub const COMMITTABLE_OVERHEAD_BYTES: u64 = 16;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The largest value any limit may take: a component's linear memory is at
/// most 4 GiB, so nothing larger can ever be held.
pub const MAX_LIMIT_BYTES: u64 = 4 * GIB;

/// The coordinator's size limits, in bytes (see the module docs). Host
/// configuration: set with `Coordinator::set_limits` (WIT `set-limits`)
/// before `start`; the defaults apply otherwise, and let a 1 GiB snapshot
/// commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest single committable (its length). Default 1 GiB.
    pub max_committable_bytes: u64,
    /// Largest entry: its committables' lengths plus
    /// [`COMMITTABLE_OVERHEAD_BYTES`] each. Default 1.25 GiB.
    pub max_event_bytes: u64,
    /// Largest snapshot, counted like an entry. Default 1.25 GiB.
    pub max_snapshot_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// The size of a list of committables, as the limits count it (O(1): the
/// list keeps its count and byte total).
pub fn committables_bytes(committables: &Committables) -> u64 {
    (committables.len() as u64)
        .saturating_mul(COMMITTABLE_OVERHEAD_BYTES)
        .saturating_add(committables.total_bytes())
}

impl Limits {
    /// The defaults (also `Limits::default()`), usable in constants.
    pub const DEFAULT: Limits = Limits {
        max_committable_bytes: GIB,
        max_event_bytes: GIB + 256 * MIB,
        max_snapshot_bytes: GIB + 256 * MIB,
    };

    /// Every limit must be in `1..=MAX_LIMIT_BYTES` (`invalid-config`).
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("max-committable-bytes", self.max_committable_bytes),
            ("max-event-bytes", self.max_event_bytes),
            ("max-snapshot-bytes", self.max_snapshot_bytes),
        ] {
            if v == 0 || v > MAX_LIMIT_BYTES {
                return Err(ErrorReason::LimitOutOfRange {
                    limit: name,
                    value: v,
                }
                .into());
            }
        }
        Ok(())
    }

    /// Checks one entry's content: each committable and the entry's total.
    /// `what` names the input ("event", "restore event", ...). Returns the
    /// entry's size. O(1): the list keeps its longest committable and its
    /// total; the message is built out of line, only for a refusal.
    #[inline]
    pub(crate) fn check_entry(
        &self,
        what: &'static str,
        s: u32,
        checkpoint: u64,
        committables: &Committables,
    ) -> Result<u64> {
        let total = committables_bytes(committables);
        if committables.largest() <= self.max_committable_bytes && total <= self.max_event_bytes {
            return Ok(total);
        }
        Err(self.entry_refused(what, s, checkpoint, committables, total))
    }

    #[cold]
    #[inline(never)]
    fn entry_refused(
        &self,
        what: &'static str,
        s: u32,
        checkpoint: u64,
        committables: &Committables,
        total: u64,
    ) -> Error {
        if committables.largest() > self.max_committable_bytes {
            // The first committable that is too long, for the message.
            let max = self.max_committable_bytes;
            let (i, len) = committables
                .iter()
                .map(|c| c.len() as u64)
                .enumerate()
                .find(|(_, len)| *len > max)
                .unwrap_or((0, committables.largest()));
            return ErrorReason::CommittableTooLong {
                what,
                subtask: s,
                checkpoint,
                index: i,
                bytes: len,
                max,
            }
            .into();
        }
        ErrorReason::EntryTooLarge {
            what,
            subtask: s,
            checkpoint,
            bytes: total,
            committables: committables.len(),
            max: self.max_event_bytes,
        }
        .into()
    }

    /// Checks that snapshot `snapshot` would hold at most
    /// `max_snapshot_bytes` once subtask `s`'s entry for `checkpoint`
    /// (`bytes`) is added, bringing it to `total`.
    #[inline]
    pub(crate) fn check_snapshot(
        &self,
        s: u32,
        checkpoint: u64,
        bytes: u64,
        snapshot: u64,
        total: u64,
    ) -> Result<()> {
        if total <= self.max_snapshot_bytes {
            return Ok(());
        }
        Err(self.snapshot_refused(s, checkpoint, bytes, snapshot, total))
    }

    #[cold]
    #[inline(never)]
    fn snapshot_refused(
        &self,
        s: u32,
        checkpoint: u64,
        bytes: u64,
        snapshot: u64,
        total: u64,
    ) -> Error {
        ErrorReason::SnapshotTooLarge {
            subtask: s,
            checkpoint,
            bytes,
            snapshot,
            total,
            max: self.max_snapshot_bytes,
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorKind, ErrorReason};
    use alloc::vec;

    #[test]
    fn defaults_let_a_1_gib_snapshot_commit() {
        let l = Limits::default();
        l.validate().unwrap();
        assert!(l.max_committable_bytes >= GIB);
        assert!(l.max_snapshot_bytes >= GIB + 1024 * 1024 * COMMITTABLE_OVERHEAD_BYTES);
        assert!(l.max_event_bytes >= GIB + COMMITTABLE_OVERHEAD_BYTES);
    }

    #[test]
    fn validate_rejects_zero_and_huge() {
        let mut l = Limits::default();
        l.max_event_bytes = 0;
        assert_eq!(l.validate().unwrap_err().kind, ErrorKind::InvalidConfig);
        l.max_event_bytes = MAX_LIMIT_BYTES + 1;
        let e = l.validate().unwrap_err();
        assert_eq!(
            e.reason(),
            &ErrorReason::LimitOutOfRange {
                limit: "max-event-bytes",
                value: MAX_LIMIT_BYTES + 1
            }
        );
        assert_eq!(e.kind, ErrorKind::InvalidConfig);
    }

    #[test]
    fn entry_checks_name_limit_sizes_subtask_and_checkpoint() {
        let l = Limits {
            max_committable_bytes: 10,
            max_event_bytes: 42,
            max_snapshot_bytes: 100,
        };
        let ok = vec![vec![0u8; 10], vec![]];
        assert_eq!(
            l.check_entry("event", 3, 7, &ok.into()).unwrap(),
            10 + 2 * 16
        );
        let e = l
            .check_entry("event", 3, 7, &vec![vec![0u8; 11]].into())
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidEvent);
        assert_eq!(
            e.reason(),
            &ErrorReason::CommittableTooLong {
                what: "event",
                subtask: 3,
                checkpoint: 7,
                index: 0,
                bytes: 11,
                max: 10
            }
        );
        // The text is the contract the conformance results pin.
        assert_eq!(
            e.message(),
            "event of subtask 3 for checkpoint 7: committable 0 holds 11 bytes, more than max-committable-bytes 10"
        );
        let e = l
            .check_entry(
                "event",
                3,
                crate::END,
                &vec![vec![0u8; 9], vec![0u8; 9]].into(),
            )
            .unwrap_err();
        assert_eq!(
            e.reason(),
            &ErrorReason::EntryTooLarge {
                what: "event",
                subtask: 3,
                checkpoint: crate::END,
                bytes: 50,
                committables: 2,
                max: 42
            }
        );
        assert_eq!(
            e.message(),
            "event of subtask 3 for checkpoint END: the entry holds 50 bytes (2 committables), more than max-event-bytes 42"
        );
        l.check_snapshot(1, 2, 30, 2, 100).unwrap();
        let e = l.check_snapshot(1, 2, 30, 2, 101).unwrap_err();
        assert_eq!(
            e.reason(),
            &ErrorReason::SnapshotTooLarge {
                subtask: 1,
                checkpoint: 2,
                bytes: 30,
                snapshot: 2,
                total: 101,
                max: 100
            }
        );
    }

    #[test]
    fn many_empty_committables_count() {
        let many: Vec<Vec<u8>> = vec![Vec::new(); 1000];
        assert_eq!(committables_bytes(&many.into()), 16_000);
    }

    // --- enforced by the coordinator -------------------------------------

    use crate::{Config, Coordinator, Entry, Lifecycle, MemEnv, END};

    /// Snapshots count the commit user twice: "job" adds 6 bytes, so a
    /// snapshot of 100 bytes of committables fits exactly.
    fn small() -> Limits {
        Limits {
            max_committable_bytes: 40,
            max_event_bytes: 80,
            max_snapshot_bytes: 106,
        }
    }

    /// A running coordinator with `small()` limits.
    fn running(p: u32) -> (Coordinator, MemEnv) {
        let mut env = MemEnv::default();
        let mut c = Coordinator::new(Config::new(p, "job"), None);
        c.set_limits(small()).unwrap();
        c.start(&mut env).unwrap();
        (c, env)
    }

    /// An entry whose committables have the given lengths.
    fn sized(checkpoint: u64, lens: &[usize]) -> Entry {
        Entry {
            checkpoint,
            committables: lens.iter().map(|n| vec![b'x'; *n]).collect(),
            watermark: None,
            savepoint: false,
        }
    }

    #[test]
    fn set_limits_only_while_created() {
        let mut env = MemEnv::default();
        let mut c = Coordinator::new(Config::new(1, "job"), None);
        assert_eq!(c.limits(), Limits::default());
        let mut bad = small();
        bad.max_snapshot_bytes = 0;
        assert_eq!(
            c.set_limits(bad).unwrap_err().kind,
            ErrorKind::InvalidConfig
        );
        assert_eq!(c.state(), Lifecycle::Failed);

        let mut c = Coordinator::new(Config::new(1, "job"), None);
        c.set_limits(small()).unwrap();
        assert_eq!(c.limits(), small());
        c.start(&mut env).unwrap();
        let e = c.set_limits(Limits::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::IllegalState);
        assert_eq!(
            e.reason(),
            &ErrorReason::NotAllowed {
                call: "set-limits",
                state: Lifecycle::Running
            }
        );
    }

    #[test]
    fn exactly_at_the_limits_commits() {
        let (mut c, mut env) = running(1);
        // 40 + 16 + 8 + 16 = 80 bytes: the event limit, within the snapshot limit.
        c.event(&mut env, 0, 0, sized(1, &[40, 8])).unwrap();
        let o = c.checkpoint_complete(&mut env, 1).unwrap();
        assert_eq!(o.committed, vec![1]);
    }

    #[test]
    fn oversized_event_is_refused_when_it_arrives() {
        let (mut c, mut env) = running(1);
        let e = c.event(&mut env, 0, 0, sized(4, &[41])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidEvent);
        assert!(
            matches!(
                e.reason(),
                ErrorReason::CommittableTooLong {
                    what: "event",
                    subtask: 0,
                    checkpoint: 4,
                    index: 0,
                    bytes: 41,
                    max: 40
                }
            ),
            "{e}"
        );
        assert_eq!(c.state(), Lifecycle::Failed);
        let (mut c, mut env) = running(1);
        let e = c.event(&mut env, 0, 0, sized(END, &[40, 9])).unwrap_err();
        assert_eq!(
            e.reason(),
            &ErrorReason::EntryTooLarge {
                what: "event",
                subtask: 0,
                checkpoint: END,
                bytes: 81,
                committables: 2,
                max: 80
            }
        );
    }

    #[test]
    fn snapshot_limit_counts_every_subtask() {
        let (mut c, mut env) = running(2);
        c.event(&mut env, 0, 0, sized(1, &[34])).unwrap(); // 50 bytes
        c.event(&mut env, 1, 0, sized(1, &[34])).unwrap(); // 100 + 6: at the limit
        c.event(&mut env, 0, 0, sized(2, &[34])).unwrap();
        let e = c.event(&mut env, 1, 0, sized(2, &[35])).unwrap_err();
        assert_eq!(
            e.reason(),
            &ErrorReason::SnapshotTooLarge {
                subtask: 1,
                checkpoint: 2,
                bytes: 51,
                snapshot: 2,
                total: 107,
                max: 106
            }
        );
    }

    #[test]
    fn end_snapshot_bound_counts_an_ended_writers_entries() {
        let (mut c, mut env) = running(2);
        // Checkpoint 1 cannot commit while subtask 1 reported nothing.
        c.event(&mut env, 0, 0, sized(1, &[34])).unwrap(); // 50
        let e = c.event(&mut env, 0, 0, sized(END, &[35])).unwrap_err(); // 51
        assert_eq!(
            e.message(),
            "entry of subtask 0 for checkpoint END (51 bytes) would make the snapshot of checkpoint END hold 107 bytes, more than max-snapshot-bytes 106"
        );
        // A replaced END entry does not count twice.
        let (mut c, mut env) = running(2);
        c.event(&mut env, 0, 0, sized(END, &[34])).unwrap();
        c.event(&mut env, 0, 0, sized(END, &[40, 8])).unwrap(); // 80
        let e = c.event(&mut env, 1, 0, sized(END, &[5])).unwrap_err();
        assert!(
            matches!(
                e.reason(),
                ErrorReason::SnapshotTooLarge {
                    subtask: 1,
                    total: 107,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn restore_event_entries_are_checked() {
        let (mut c, mut env) = running(1);
        let e = c
            .restored(&mut env, 0, 1, 3, vec![sized(2, &[10]), sized(3, &[41])])
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidEvent);
        assert!(
            matches!(
                e.reason(),
                ErrorReason::CommittableTooLong {
                    what: "restore event",
                    subtask: 0,
                    checkpoint: 3,
                    index: 0,
                    ..
                }
            ),
            "{e}"
        );
        let (mut c, mut env) = running(1);
        c.restored(&mut env, 0, 1, 3, vec![sized(2, &[34]), sized(3, &[34])])
            .unwrap();
    }
}
