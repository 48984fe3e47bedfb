package io.sinkcoordinator.flink.component;

/**
 * The writer-side helper of one subtask (WIT resource {@code writer},
 * SEMANTICS 11): it keeps every entry the table may still lack and says
 * which event to send.
 */
public final class ComponentWriter implements AutoCloseable {
    private static final byte[][] NONE = new byte[0][];

    private long handle;
    /** The Chicory instance ({@link ComponentRuntime#CHICORY}), else null (JNI). */
    private io.sinkcoordinator.jvm.Writer jvm;
    private boolean closed;

    public ComponentWriter(int subtask) {
        this(subtask, ComponentRuntime.JNI);
    }

    /** The same on {@code runtime} (the JNI library, or Chicory without native code). */
    public ComponentWriter(int subtask, ComponentRuntime runtime) {
        if (runtime == ComponentRuntime.CHICORY) {
            try {
                this.jvm = new io.sinkcoordinator.jvm.Writer(subtask, Chicory.runtime());
            } catch (io.sinkcoordinator.jvm.CoordinatorException e) {
                throw Chicory.error(e);
            }
            return;
        }
        this.handle = Native.writerNew(subtask);
    }

    /** A call on the Chicory instance: its errors as this package's {@link ComponentException}. */
    private <T> T chicory(Chicory.Call<io.sinkcoordinator.jvm.Writer, T> call) {
        return Chicory.call(jvm, closed, "writer", call);
    }

    private static java.util.List<byte[]> list(byte[][] committables) {
        return committables == null ? java.util.List.of() : java.util.Arrays.asList(committables);
    }

    private static java.util.OptionalLong watermark(Long watermark) {
        return watermark == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(watermark);
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
        if (jvm != null) {
            return Chicory.entry(chicory(w -> w.report(
                    checkpoint, list(committables), watermark(watermark), savepoint)));
        }
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
        if (jvm != null) {
            return Chicory.entry(chicory(w -> w.endInput(list(committables), watermark(watermark))));
        }
        return Native.writerEndInput(
                live(),
                committables == null ? NONE : committables,
                watermark != null,
                watermark == null ? 0 : watermark);
    }

    /** The coordinator's committed-up-to: drops entries it covers. */
    public synchronized void committed(long upTo) {
        if (jvm != null) {
            Chicory.run(jvm, closed, "writer", w -> w.committed(upTo));
            return;
        }
        Native.writerCommitted(live(), upTo);
    }

    public synchronized void checkpointAborted(long checkpoint) {
        if (jvm != null) {
            Chicory.run(jvm, closed, "writer", w -> w.checkpointAborted(checkpoint));
            return;
        }
        Native.writerCheckpointAborted(live(), checkpoint);
    }

    public synchronized byte[] state() {
        if (jvm != null) {
            return chicory(w -> w.state());
        }
        return Native.writerState(live());
    }

    /** Restores from state taken at {@code checkpoint}; the entries of the restore event. */
    public synchronized Entry[] restore(byte[] state, long checkpoint) {
        if (jvm != null) {
            java.util.List<io.sinkcoordinator.jvm.Entry> entries = chicory(w -> w.restore(state, checkpoint));
            Entry[] out = new Entry[entries.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = Chicory.entry(entries.get(i));
            }
            return out;
        }
        return Native.writerRestore(live(), state, checkpoint);
    }

    @Override
    public synchronized void close() {
        if (jvm != null) {
            closed = true;
            return;
        }
        if (handle != 0) {
            Native.writerFree(handle);
            handle = 0;
        }
    }
}
