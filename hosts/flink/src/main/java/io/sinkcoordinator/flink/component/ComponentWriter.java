package io.sinkcoordinator.flink.component;

/**
 * The writer-side helper of one subtask (WIT resource {@code writer},
 * SEMANTICS 11): it keeps every entry the table may still lack and says
 * which event to send.
 */
public final class ComponentWriter implements AutoCloseable {
    private static final byte[][] NONE = new byte[0][];

    private long handle;

    public ComponentWriter(int subtask) {
        this.handle = Native.writerNew(subtask);
    }

    private long live() {
        if (handle == 0) {
            throw new IllegalStateException("the writer was closed");
        }
        return handle;
    }

    /** Buffers the entry of {@code checkpoint} and returns the event to send. */
    public synchronized Entry report(
            long checkpoint, byte[][] committables, Long watermark, boolean savepoint) {
        return Native.writerReport(
                live(),
                checkpoint,
                committables == null ? NONE : committables,
                watermark != null,
                watermark == null ? 0 : watermark,
                savepoint);
    }

    /** The END entry to send (appended to a restored END entry). */
    public synchronized Entry endInput(byte[][] committables, Long watermark) {
        return Native.writerEndInput(
                live(),
                committables == null ? NONE : committables,
                watermark != null,
                watermark == null ? 0 : watermark);
    }

    /** The coordinator's committed-up-to: drops entries it covers. */
    public synchronized void committed(long upTo) {
        Native.writerCommitted(live(), upTo);
    }

    public synchronized void checkpointAborted(long checkpoint) {
        Native.writerCheckpointAborted(live(), checkpoint);
    }

    public synchronized byte[] state() {
        return Native.writerState(live());
    }

    /** Restores from state taken at {@code checkpoint}; the entries of the restore event. */
    public synchronized Entry[] restore(byte[] state, long checkpoint) {
        return Native.writerRestore(live(), state, checkpoint);
    }

    @Override
    public synchronized void close() {
        if (handle != 0) {
            Native.writerFree(handle);
            handle = 0;
        }
    }
}
