package io.sinkcoordinator.flink.component;

/**
 * A batch of entries as the JNI library takes it: each entry's fields in parallel arrays and
 * its committables as one block of WIT's {@code packed-event} encoding (an unsigned LEB128
 * count, then per committable an unsigned LEB128 length and its bytes), all blocks in one
 * array. The batch then crosses JNI in a handful of array copies instead of a few calls per
 * event and per committable, which cost more than the component's own work (issue 24's JMH
 * profile, BENCHMARKS.md).
 */
final class PackedBatch {
    final long[] checkpoints;
    final long[] watermarks;
    /** Bit 0: the entry has a watermark; bit 1: it is a savepoint's. */
    final byte[] flags;
    final byte[] blocks;
    /** Where each entry's block ends in {@link #blocks}. */
    final int[] ends;

    private PackedBatch(int n, int size) {
        checkpoints = new long[n];
        watermarks = new long[n];
        flags = new byte[n];
        blocks = new byte[size];
        ends = new int[n];
    }

    static PackedBatch of(Entry[] entries) {
        long size = 0;
        for (Entry e : entries) {
            byte[][] cs = committables(e);
            size += lebLength(cs.length);
            for (byte[] c : cs) {
                size += lebLength(c.length) + c.length;
            }
        }
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a batch of " + size + " bytes is too large for one call");
        }
        PackedBatch b = new PackedBatch(entries.length, (int) size);
        int at = 0;
        for (int i = 0; i < entries.length; i++) {
            Entry e = entries[i];
            byte[][] cs = committables(e);
            b.checkpoints[i] = e.checkpoint();
            b.watermarks[i] = e.watermark();
            b.flags[i] = (byte) ((e.hasWatermark() ? 1 : 0) | (e.savepoint() ? 2 : 0));
            at = leb(b.blocks, at, cs.length);
            for (byte[] c : cs) {
                at = leb(b.blocks, at, c.length);
                System.arraycopy(c, 0, b.blocks, at, c.length);
                at += c.length;
            }
            b.ends[i] = at;
        }
        return b;
    }

    private static byte[][] committables(Entry e) {
        if (e == null) {
            throw new IllegalArgumentException("an entry is null");
        }
        byte[][] cs = e.committables() == null ? new byte[0][] : e.committables();
        for (int i = 0; i < cs.length; i++) {
            if (cs[i] == null) {
                throw new IllegalArgumentException("committable " + i + " is null");
            }
        }
        return cs;
    }

    private static int lebLength(int v) {
        int n = 1;
        for (long x = Integer.toUnsignedLong(v) >>> 7; x != 0; x >>>= 7) {
            n++;
        }
        return n;
    }

    private static int leb(byte[] out, int at, int v) {
        long x = Integer.toUnsignedLong(v);
        while (x >= 0x80) {
            out[at++] = (byte) (x | 0x80);
            x >>>= 7;
        }
        out[at++] = (byte) x;
        return at;
    }
}
