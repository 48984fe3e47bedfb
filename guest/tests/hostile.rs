//! Hostile sizes (issue 26): the commit user's length is bounded in the
//! configuration and in restored state bytes, and counted in the snapshot
//! limit, the same natively as in the component (testkit's hostile tests run
//! the component). Hostile tables are in `src/table/tests.rs`.

use sink_coordinator::error::Defect;
use sink_coordinator::{
    Config, Coordinator, Entry, ErrorKind, ErrorReason, Limits, MemEnv, RestorePoint,
    MAX_COMMIT_USER_BYTES,
};

fn entry(checkpoint: u64, committables: Vec<Vec<u8>>) -> Entry {
    Entry {
        checkpoint,
        committables: committables.into(),
        watermark: None,
        savepoint: false,
    }
}

#[test]
fn a_commit_user_longer_than_the_bound_is_invalid_config() {
    let mut env = MemEnv::default();
    let mut c = Coordinator::new(Config::new(1, "x".repeat(MAX_COMMIT_USER_BYTES + 1)), None);
    let e = c.start(&mut env).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidConfig);
    assert_eq!(
        e.reason(),
        &ErrorReason::CommitUserTooLong {
            bytes: MAX_COMMIT_USER_BYTES + 1
        }
    );
    // The text is the contract.
    assert_eq!(
        e.message(),
        "the commit user is 65537 bytes long, more than 65536"
    );
    // At the bound it runs and commits.
    let mut c = Coordinator::new(Config::new(1, "x".repeat(MAX_COMMIT_USER_BYTES)), None);
    c.start(&mut env).unwrap();
    c.event(&mut env, 0, 0, entry(1, vec![b"a".to_vec()]))
        .unwrap();
    assert_eq!(
        c.checkpoint_complete(&mut env, 1).unwrap().committed,
        vec![1]
    );
}

#[test]
fn a_restored_commit_user_longer_than_the_bound_is_corrupt_state() {
    let mut env = MemEnv::default();
    let mut c = Coordinator::new(Config::new(1, "a"), None);
    c.start(&mut env).unwrap();
    let state = c.checkpoint(&mut env, 1).unwrap();
    // The state begins with its version and the commit user "a" (length 1);
    // the user becomes 65,537 bytes (LEB128 0x81 0x80 0x04).
    assert_eq!(&state[1..3], b"\x01a");
    let mut long = vec![state[0], 0x81, 0x80, 0x04];
    long.extend(std::iter::repeat_n(b'x', MAX_COMMIT_USER_BYTES + 1));
    long.extend_from_slice(&state[3..]);
    let restore = RestorePoint {
        checkpoint: 1,
        state: long,
        finished_subtasks: Vec::new(),
    };
    let mut c = Coordinator::new(Config::new(1, "a"), Some(restore));
    let e = c.start(&mut env).unwrap_err();
    assert_eq!(e.kind, ErrorKind::CorruptState);
    assert!(
        matches!(
            e.reason(),
            ErrorReason::CoordinatorState {
                defect: Defect::CommitUserTooLong { bytes: 65537 },
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn the_commit_user_counts_in_the_snapshot_limit() {
    let limits = Limits {
        max_committable_bytes: 1000,
        max_event_bytes: 1000,
        max_snapshot_bytes: 1000,
    };
    // 984 bytes of committable + 16 framing = 1000: fits with no user at
    // all, but the user "ab" adds 4 (it is named twice).
    let mut env = MemEnv::default();
    let mut c = Coordinator::new(Config::new(1, "ab"), None);
    c.set_limits(limits).unwrap();
    c.start(&mut env).unwrap();
    let e = c
        .event(&mut env, 0, 0, entry(1, vec![vec![0; 984]]))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidEvent);
    assert!(
        matches!(
            e.reason(),
            ErrorReason::SnapshotTooLarge {
                total: 1004,
                max: 1000,
                ..
            }
        ),
        "{e}"
    );
    let mut c = Coordinator::new(Config::new(1, "ab"), None);
    c.set_limits(limits).unwrap();
    c.start(&mut env).unwrap();
    c.event(&mut env, 0, 0, entry(1, vec![vec![0; 980]]))
        .unwrap();
}
