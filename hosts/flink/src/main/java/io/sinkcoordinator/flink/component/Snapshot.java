package io.sinkcoordinator.flink.component;

/** One committed record of a table's log (SEMANTICS 1). */
public final class Snapshot {
    public final long id;
    public final String commitUser;
    /** The checkpoint id it commits, or {@link Entry#END}. */
    public final long identifier;
    public final boolean hasWatermark;
    public final long watermark;
    public final long timeMs;
    /** {@code subtasks[i]} reported {@code committables[i]}; subtask order, then report order. */
    public final int[] subtasks;
    public final byte[][] committables;

    public Snapshot(
            long id,
            String commitUser,
            long identifier,
            boolean hasWatermark,
            long watermark,
            long timeMs,
            int[] subtasks,
            byte[][] committables) {
        this.id = id;
        this.commitUser = commitUser;
        this.identifier = identifier;
        this.hasWatermark = hasWatermark;
        this.watermark = watermark;
        this.timeMs = timeMs;
        this.subtasks = subtasks;
        this.committables = committables;
    }

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
