package io.sinkcoordinator.flink.component;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The JNI batch's packing: WIT's packed-event blocks, back to back, with the fields beside. */
class PackedBatchTest {
    @Test
    void entriesArePackedAsPackedEventBlocks() {
        byte[] big = new byte[200];
        Arrays.fill(big, (byte) 7);
        Entry[] entries = {
            new Entry(3, new byte[][] {{'a'}, {}}, true, -5, false),
            new Entry(Entry.END, new byte[][] {}, false, 0, true),
            new Entry(4, new byte[][] {big}, false, 0, false),
        };
        PackedBatch b = PackedBatch.of(entries);
        assertArrayEquals(new long[] {3, Entry.END, 4}, b.checkpoints);
        assertArrayEquals(new long[] {-5, 0, 0}, b.watermarks);
        assertArrayEquals(new byte[] {1, 2, 0}, b.flags);
        // [count 2, len 1, 'a', len 0], [count 0], [count 1, len 200 = 0xC8 0x01, 200 bytes]
        byte[] want = new byte[4 + 1 + 3 + 200];
        byte[] head = {2, 1, 'a', 0, 0, 1, (byte) 0xC8, 1};
        System.arraycopy(head, 0, want, 0, head.length);
        Arrays.fill(want, head.length, want.length, (byte) 7);
        assertArrayEquals(want, b.blockBytes());
        assertArrayEquals(new int[] {4, 5, want.length}, b.ends);
    }

    @Test
    void theBlocksBufferIsReusedWhileItHoldsThem() {
        Entry small = new Entry(1, new byte[][] {{1, 2, 3}}, false, 0, false);
        PackedBatch first = PackedBatch.of(new Entry[] {small});
        assertTrue(first.blocks.isDirect());
        PackedBatch again = PackedBatch.of(new Entry[] {small, small}, first.blocks);
        assertSame(first.blocks, again.blocks);
        assertArrayEquals(new byte[] {1, 3, 1, 2, 3, 1, 3, 1, 2, 3}, again.blockBytes());
        Entry big = new Entry(2, new byte[][] {new byte[first.blocks.capacity()]}, false, 0, false);
        PackedBatch grown = PackedBatch.of(new Entry[] {big}, first.blocks);
        assertNotSame(first.blocks, grown.blocks);
        assertTrue(grown.blocks.capacity() >= grown.size && grown.blocks.isDirect());
        assertArrayEquals(new int[] {grown.size}, grown.ends);
    }

    @Test
    void nullEntriesAndCommittablesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> PackedBatch.of(new Entry[] {null}));
        Entry withNull = new Entry(1, new byte[][] {null}, false, 0, false);
        assertThrows(IllegalArgumentException.class, () -> PackedBatch.of(new Entry[] {withNull}));
    }
}
