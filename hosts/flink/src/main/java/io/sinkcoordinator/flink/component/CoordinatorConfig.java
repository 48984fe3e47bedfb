package io.sinkcoordinator.flink.component;

import java.io.Serializable;
import java.util.Objects;

/**
 * The coordinator's options (WIT {@code config} without the parallelism,
 * which the engine knows only at run time). Immutable; the {@code with*}
 * methods return changed copies.
 *
 * @param tagTimeRetainedMs -1: savepoint tags never expire
 */
public record CoordinatorConfig(
        String commitUser,
        boolean checkpointing,
        boolean finalCommitOnEndInput,
        boolean forceCreateSnapshot,
        boolean savepointAutoTag,
        long tagTimeRetainedMs,
        boolean recoveryContinue)
        implements Serializable {
    public CoordinatorConfig {
        Objects.requireNonNull(commitUser, "commitUser");
    }

    /** The defaults of SEMANTICS: checkpointing, final commit on checkpoint, recovery restart. */
    public static CoordinatorConfig of(String commitUser) {
        return new CoordinatorConfig(commitUser, true, false, false, false, -1, false);
    }

    /** The same options for another commit user (the sink's identity across restarts). */
    public CoordinatorConfig withCommitUser(String user) {
        return new CoordinatorConfig(
                user, checkpointing, finalCommitOnEndInput, forceCreateSnapshot, savepointAutoTag,
                tagTimeRetainedMs, recoveryContinue);
    }

    /** false = batch: the final commit happens on the last END entry. */
    public CoordinatorConfig withCheckpointing(boolean on) {
        return new CoordinatorConfig(
                commitUser, on, finalCommitOnEndInput, forceCreateSnapshot, savepointAutoTag,
                tagTimeRetainedMs, recoveryContinue);
    }

    /** Final commit within the call that delivers the last END entry. */
    public CoordinatorConfig withFinalCommitOnEndInput(boolean on) {
        return new CoordinatorConfig(
                commitUser, checkpointing, on, forceCreateSnapshot, savepointAutoTag,
                tagTimeRetainedMs, recoveryContinue);
    }

    public CoordinatorConfig withForceCreateSnapshot(boolean on) {
        return new CoordinatorConfig(
                commitUser, checkpointing, finalCommitOnEndInput, on, savepointAutoTag,
                tagTimeRetainedMs, recoveryContinue);
    }

    /** Tag {@code savepoint-<id>} on every savepoint's snapshot. */
    public CoordinatorConfig withSavepointAutoTag(boolean on) {
        return new CoordinatorConfig(
                commitUser, checkpointing, finalCommitOnEndInput, forceCreateSnapshot, on,
                tagTimeRetainedMs, recoveryContinue);
    }

    /** Savepoint tags expire this long after creation; -1 = never. */
    public CoordinatorConfig withTagTimeRetainedMs(long ms) {
        return new CoordinatorConfig(
                commitUser, checkpointing, finalCommitOnEndInput, forceCreateSnapshot,
                savepointAutoTag, ms, recoveryContinue);
    }

    /** true = a recovery that committed something keeps running (no extra failover). */
    public CoordinatorConfig withRecoveryContinue(boolean on) {
        return new CoordinatorConfig(
                commitUser, checkpointing, finalCommitOnEndInput, forceCreateSnapshot,
                savepointAutoTag, tagTimeRetainedMs, on);
    }
}
