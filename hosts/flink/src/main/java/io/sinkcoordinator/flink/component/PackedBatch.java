package io.sinkcoordinator.flink.component;

import java.nio.ByteBuffer;

/**
 * A batch of entries as the JNI library takes it: each entry's fields in parallel arrays and
 * its committables as one block of WIT's {@code packed-event} encoding (an unsigned LEB128
 * count, then per committable an unsigned LEB128 length and its bytes), all blocks in one
 * direct buffer. The batch then crosses JNI in a handful of array copies instead of a few calls
 * per event and per committable, which cost more than the component's own work (issue 24's JMH
 * profile, BENCHMARKS.md), and the blocks in none: the library lowers them into the guest
 * straight from the buffer. The buffer is reused from batch to batch (a fresh 200 KB array per
 * batch cost more in zeroing and page faults than the copy itself).
 */
final class PackedBatch {
    final long[] checkpoints;
    final long[] watermarks;
    /** Bit 0: the entry has a watermark; bit 1: it is a savepoint's. */
    final byte[] flags;
    /** The blocks, in {@code [0, size)}: a direct buffer (position 0). */
    final ByteBuffer blocks;
    /** The blocks' total length. */
    final int size;
    /** Where each entry's block ends in {@link #blocks}. */
    final int[] ends;

    private PackedBatch(int n, int size, ByteBuffer blocks) {
        checkpoints = new long[n];
        watermarks = new long[n];
        flags = new byte[n];
        this.size = size;
        this.blocks = blocks;
        ends = new int[n];
    }

    /** The entries packed into a new buffer. */
    static PackedBatch of(Entry[] entries) {
        return of(entries, null);
    }

    /**
     * The entries packed into {@code reuse} when it holds them (a direct buffer of an earlier
     * batch, or null), else into a new direct buffer of at least twice its capacity.
     */
    static PackedBatch of(Entry[] entries, ByteBuffer reuse) {
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
        ByteBuffer buffer = reuse;
        if (buffer == null || buffer.capacity() < size) {
            long grown = Math.max(size, reuse == null ? 1 << 16 : 2L * reuse.capacity());
            buffer = ByteBuffer.allocateDirect((int) Math.min(grown, Integer.MAX_VALUE - 8));
        }
        buffer.clear();
        PackedBatch b = new PackedBatch(entries.length, (int) size, buffer);
        for (int i = 0; i < entries.length; i++) {
            Entry e = entries[i];
            byte[][] cs = committables(e);
            b.checkpoints[i] = e.checkpoint();
            b.watermarks[i] = e.watermark();
            b.flags[i] = (byte) ((e.hasWatermark() ? 1 : 0) | (e.savepoint() ? 2 : 0));
            leb(buffer, cs.length);
            for (byte[] c : cs) {
                leb(buffer, c.length);
                buffer.put(c);
            }
            b.ends[i] = buffer.position();
        }
        buffer.flip();
        return b;
    }

    /** The blocks as an array (tests). */
    byte[] blockBytes() {
        byte[] out = new byte[size];
        blocks.duplicate().get(out);
        return out;
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

    private static void leb(ByteBuffer out, int v) {
        long x = Integer.toUnsignedLong(v);
        while (x >= 0x80) {
            out.put((byte) (x | 0x80));
            x >>>= 7;
        }
        out.put((byte) x);
    }
}
