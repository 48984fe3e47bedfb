package io.sinkcoordinator.flink.component;

import java.util.Arrays;

/**
 * What one coordinator call did (WIT {@code outcome}). The native library builds it through the
 * canonical constructor ({@code OUTCOME_CTOR} in hosts/flink/native/src/convert.rs): the
 * components keep that order and those types. Its arrays compare by identity in {@code equals}.
 *
 * @param state lifecycle state after the call: created, restoring, running, closed, failed
 * @param committed identifiers of the snapshots this call wrote, in log order
 * @param restartRequired the recovery committed something: the host should fail over once more
 * @param committedUpTo committed-up-to after the call (SEMANTICS 5.5), or -1 for none
 */
public record Outcome(
        String state,
        long[] committed,
        String[] tagsCreated,
        String[] tagsDeleted,
        boolean restartRequired,
        long committedUpTo) {

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
