package io.sinkcoordinator.flink.component;

/**
 * One committed record of a table's log (SEMANTICS 1). The native library builds it through the
 * canonical constructor ({@code SNAPSHOT_CTOR} in hosts/flink/native/src/convert.rs): the
 * components keep that order and those types. Its arrays compare by identity in {@code equals}.
 *
 * @param identifier the checkpoint id it commits, or {@link Entry#END}
 * @param subtasks {@code subtasks[i]} reported {@code committables[i]}; subtask order, then
 *     report order
 */
public record Snapshot(
        long id,
        String commitUser,
        long identifier,
        boolean hasWatermark,
        long watermark,
        long timeMs,
        int[] subtasks,
        byte[][] committables) {

    @Override
    public String toString() {
        return "Snapshot{id="
                + id
                + ", user="
                + commitUser
                + ", identifier="
                + (identifier == Entry.END ? "END" : Long.toString(identifier))
                + ", committables="
                + committables.length
                + "}";
    }
}
