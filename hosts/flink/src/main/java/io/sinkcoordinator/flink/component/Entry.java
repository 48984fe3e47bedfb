package io.sinkcoordinator.flink.component;

import java.io.Serializable;
import java.util.Arrays;

/**
 * What one writer reports for one checkpoint (SEMANTICS 1): committables are
 * opaque bytes; an absent watermark orders below every number. The
 * checkpoint {@link #END} ({@code Long.MAX_VALUE}) is the end of input.
 *
 * <p>The native library builds it through the canonical constructor ({@code ENTRY_CTOR} in
 * hosts/flink/native/src/convert.rs) and reads its fields by name: the components keep those
 * names, that order and those types. It travels in operator events (Java serialization).
 */
public record Entry(
        long checkpoint,
        byte[][] committables,
        boolean hasWatermark,
        long watermark,
        boolean savepoint)
        implements Serializable {
    /** The reserved checkpoint id of an end-of-input entry. */
    public static final long END = Long.MAX_VALUE;

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

    /** By content: the committables' bytes, not the arrays' identity. */
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
