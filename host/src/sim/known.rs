//! Known gaps of SEMANTICS (the core implements it as written) that the
//! simulator finds, each with a minimal regression trace in
//! `tests/regressions/`. A violation that matches one is labelled with its
//! id; the test net reports those separately (and fails on them only with
//! `SIM_STRICT=1`), and fails on anything else.

/// The writer helper drops the entries it replays after a restore
/// (SEMANTICS 11: "after a restore only the END entry stays buffered"). After
/// a region failover, uncommitted entries of completed checkpoints then live
/// only in the coordinator's slot; a global failover from a later checkpoint
/// before the coordinator committed them loses them (the writers' states at
/// that checkpoint no longer hold them). The same drop loses the savepoint
/// flags of those entries: a savepoint tag whose creation failed is then
/// never re-created by the recovery (SEMANTICS 5.4: "writers replay the flag
/// from their own state after a failover").
/// `tests/regressions/writer-drops-restored-entries.trace.json`
pub const WRITER_DROPS_RESTORED_ENTRIES: &str = "writer-drops-restored-entries";

/// A final commit whose END entries are all empty writes no END snapshot
/// (SEMANTICS 5.3), so an instance created by a later global failover does
/// not know the final commit happened (it learns it only from the END
/// snapshot) and commits the writers' replayed input again: checkpoints the
/// final commit committed without their completion are duplicated.
/// `tests/regressions/final-commit-without-end-snapshot.trace.json`
pub const FINAL_COMMIT_WITHOUT_END_SNAPSHOT: &str = "final-commit-without-end-snapshot";

/// Every known issue id.
pub const ALL: [&str; 2] = [
    WRITER_DROPS_RESTORED_ENTRIES,
    FINAL_COMMIT_WITHOUT_END_SNAPSHOT,
];

// Fixed in the core (their traces in tests/regressions now pin the fix):
// `final-commit-tag-not-retried` (a failed tag after the final commit is
// retried by the repeated call) and `empty-checkpoint-after-hint-failure`
// (an empty target counts as committed as soon as its entries leave).
