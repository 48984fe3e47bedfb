package io.sinkcoordinator.flink.component;

import java.util.Arrays;

/** What one coordinator call did (WIT {@code outcome}). */
public final class Outcome {
    /** Lifecycle state after the call: created, restoring, running, closed, failed. */
    public final String state;
    /** Identifiers of the snapshots this call wrote, in log order. */
    public final long[] committed;
    public final String[] tagsCreated;
    public final String[] tagsDeleted;
    /** The recovery committed something: the host should fail over once more. */
    public final boolean restartRequired;
    /** Committed-up-to after the call (SEMANTICS 5.5), or -1 for none. */
    public final long committedUpTo;

    public Outcome(
            String state,
            long[] committed,
            String[] tagsCreated,
            String[] tagsDeleted,
            boolean restartRequired,
            long committedUpTo) {
        this.state = state;
        this.committed = committed;
        this.tagsCreated = tagsCreated;
        this.tagsDeleted = tagsDeleted;
        this.restartRequired = restartRequired;
        this.committedUpTo = committedUpTo;
    }

    @Override
    public String toString() {
        return "Outcome{state="
                + state
                + ", committed="
                + Arrays.toString(committed)
                + ", tagsCreated="
                + Arrays.toString(tagsCreated)
                + ", tagsDeleted="
                + Arrays.toString(tagsDeleted)
                + ", restartRequired="
                + restartRequired
                + ", committedUpTo="
                + committedUpTo
                + "}";
    }
}
