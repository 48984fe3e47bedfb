package io.sinkcoordinator.flink.component;

import java.io.Serializable;
import java.util.Arrays;

/**
 * What one writer reports for one checkpoint (SEMANTICS 1): committables are
 * opaque bytes; an absent watermark orders below every number. The
 * checkpoint {@link #END} ({@code Long.MAX_VALUE}) is the end of input.
 */
public final class Entry implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The reserved checkpoint id of an end-of-input entry. */
    public static final long END = Long.MAX_VALUE;

    public final long checkpoint;
    public final byte[][] committables;
    public final boolean hasWatermark;
    public final long watermark;
    public final boolean savepoint;

    public Entry(
            long checkpoint,
            byte[][] committables,
            boolean hasWatermark,
            long watermark,
            boolean savepoint) {
        this.checkpoint = checkpoint;
        this.committables = committables;
        this.hasWatermark = hasWatermark;
        this.watermark = watermark;
        this.savepoint = savepoint;
    }

    public boolean isEnd() {
        return checkpoint == END;
    }

    @Override
    public String toString() {
        return "Entry{checkpoint="
                + (isEnd() ? "END" : Long.toString(checkpoint))
                + ", committables="
                + committables.length
                + (hasWatermark ? ", watermark=" + watermark : "")
                + (savepoint ? ", savepoint" : "")
                + "}";
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Entry)) {
            return false;
        }
        Entry e = (Entry) o;
        return checkpoint == e.checkpoint
                && hasWatermark == e.hasWatermark
                && watermark == e.watermark
                && savepoint == e.savepoint
                && Arrays.deepEquals(committables, e.committables);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(checkpoint) * 31 + Arrays.deepHashCode(committables);
    }
}
