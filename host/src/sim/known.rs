//! Known issues of the coordinator core (guest/) and of SEMANTICS that the
//! simulator finds, each with a minimal regression trace in
//! `tests/regressions/`. A violation that matches one is labelled with its
//! id; the test net reports those separately (and fails on them only with
//! `SIM_STRICT=1`), and fails on anything else.

/// A storage error while tagging after the final commit (or while writing
/// its hint / reading a snapshot for the tag) is never retried: the repeated
/// call returns at once because the final commit has happened, so the
/// savepoint's tag is never created. SEMANTICS 5.2 and 8 ("repeating the
/// same call is safe and retries what failed"), 5.4.
/// `tests/regressions/final-commit-tag-retry-after-storage-error.trace.json`
pub const FINAL_COMMIT_TAG_NOT_RETRIED: &str = "final-commit-tag-not-retried";

/// A commit whose target checkpoint is empty removes its entries, but counts
/// it as committed only after the latest-snapshot hint is written; when that
/// put fails, repeating the call (a resend) is fatal `invalid-event`
/// ("checkpoints must increase"). SEMANTICS 3 rule 2 ("this counts even if
/// the same call failed later"), 5.2 ("repeating the call is safe").
/// `tests/regressions/empty-checkpoint-counts-after-hint-failure.trace.json`
pub const EMPTY_CHECKPOINT_AFTER_HINT_FAILURE: &str = "empty-checkpoint-after-hint-failure";

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
pub const ALL: [&str; 4] = [
    FINAL_COMMIT_TAG_NOT_RETRIED,
    EMPTY_CHECKPOINT_AFTER_HINT_FAILURE,
    WRITER_DROPS_RESTORED_ENTRIES,
    FINAL_COMMIT_WITHOUT_END_SNAPSHOT,
];
