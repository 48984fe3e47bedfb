package io.sinkcoordinator.flink.component;

import io.sinkcoordinator.jvm.BackendException;
import io.sinkcoordinator.jvm.CoordinatorException;
import io.sinkcoordinator.jvm.CoordinatorRuntime;
import io.sinkcoordinator.jvm.Storage;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The {@link ComponentRuntime#CHICORY} side of this package: the component's core module on
 * Chicory through the pure-Java binding ({@code hosts/jvm}, {@code io.sinkcoordinator.jvm}), with
 * this package's types converted to and from the binding's. The JNI side's conventions hold: -1
 * for "none" in optional ids, a {@link ComponentException} with the error kind for every error
 * (a trap is kind {@code trap}).
 */
final class Chicory {
    private static volatile CoordinatorRuntime runtime;

    private Chicory() {}

    /** The bundled module, compiled at build time; loaded once per class loader. */
    static CoordinatorRuntime runtime() {
        CoordinatorRuntime rt = runtime;
        if (rt == null) {
            synchronized (Chicory.class) {
                if (runtime == null) {
                    runtime = CoordinatorRuntime.bundled();
                }
                rt = runtime;
            }
        }
        return rt;
    }

    static ComponentException error(CoordinatorException e) {
        return new ComponentException(e.kind(), e.detail());
    }

    /** A call on one of the binding's handles. */
    interface Call<H, T> {
        T apply(H handle) throws CoordinatorException;
    }

    /** A call on one of the binding's handles that returns nothing. */
    interface Action<H> {
        void apply(H handle) throws CoordinatorException;
    }

    /**
     * Runs {@code call} on {@code handle} (the {@code what} of a wrapper, refused once the wrapper
     * is {@code closed}, as the JNI side refuses a freed handle), its errors as this package's
     * {@link ComponentException}.
     */
    static <H, T> T call(H handle, boolean closed, String what, Call<H, T> call) {
        if (closed) {
            throw new IllegalStateException("the " + what + " was closed");
        }
        try {
            return call.apply(handle);
        } catch (CoordinatorException e) {
            throw error(e);
        }
    }

    /** {@link #call} for an {@link Action}. */
    static <H> void run(H handle, boolean closed, String what, Action<H> action) {
        call(
                handle,
                closed,
                what,
                h -> {
                    action.apply(h);
                    return null;
                });
    }

    /** {@code storage} behind the fault drill, if one is asked for. */
    static Storage drilled(Storage storage, int faultEvery, long faultAfter) {
        return faultEvery == 0 && faultAfter < 0 ? storage : new Drill(storage, faultEvery, faultAfter);
    }

    static OptionalLong optional(long v) {
        return v < 0 ? OptionalLong.empty() : OptionalLong.of(v);
    }

    static io.sinkcoordinator.jvm.Entry toJvm(Entry e) {
        List<byte[]> committables = new ArrayList<>(e.committables().length);
        for (byte[] c : e.committables()) {
            committables.add(c);
        }
        return new io.sinkcoordinator.jvm.Entry(
                e.checkpoint(),
                committables,
                e.hasWatermark() ? OptionalLong.of(e.watermark()) : OptionalLong.empty(),
                e.savepoint());
    }

    static Entry entry(io.sinkcoordinator.jvm.Entry e) {
        return new Entry(
                e.checkpoint(),
                e.committables().toArray(new byte[0][]),
                e.watermark().isPresent(),
                e.watermark().orElse(0),
                e.savepoint());
    }

    static Outcome outcome(io.sinkcoordinator.jvm.Outcome o) {
        long[] committed = new long[o.committed().size()];
        for (int i = 0; i < committed.length; i++) {
            committed[i] = o.committed().get(i);
        }
        return new Outcome(
                o.state().witName(),
                committed,
                o.tagsCreated().toArray(new String[0]),
                o.tagsDeleted().toArray(new String[0]),
                o.restartRequired(),
                o.committedUpTo().orElse(-1));
    }

    static Snapshot snapshot(io.sinkcoordinator.jvm.Snapshot s) {
        int n = s.committables().size();
        int[] subtasks = new int[n];
        byte[][] payloads = new byte[n][];
        for (int i = 0; i < n; i++) {
            subtasks[i] = s.committables().get(i).subtask();
            payloads[i] = s.committables().get(i).bytes();
        }
        return new Snapshot(
                s.id(),
                s.commitUser(),
                s.identifier(),
                s.watermark().isPresent(),
                s.watermark().orElse(0),
                s.timeMs(),
                subtasks,
                payloads);
    }

    static Tag tag(io.sinkcoordinator.jvm.Tag t) {
        return new Tag(
                t.name(),
                t.snapshotId(),
                t.identifier(),
                t.createTimeMs(),
                t.expireTimeMs().isPresent(),
                t.expireTimeMs().orElse(0));
    }

    /**
     * The storage fault drill of the JNI library ({@code native/src/faults.rs}), for the same
     * tests on both runtimes: writes only; every {@code every}-th write fails, and every write
     * after the first {@code after}; every other periodic fault lands the write before reporting
     * the error (an ambiguous failure, SEMANTICS 8); in an outage nothing lands.
     */
    static final class Drill implements Storage {
        private final Storage inner;
        private final int every;
        private final long after;
        private long writes;
        private long faults;

        Drill(Storage inner, int every, long after) {
            this.inner = inner;
            this.every = every;
            this.after = after;
        }

        private interface Write<T> {
            T run() throws BackendException;
        }

        private synchronized <T> T write(String what, String key, Write<T> f) throws BackendException {
            long n = ++writes;
            boolean periodic = every > 0 && n % every == 0;
            boolean outage = after >= 0 && n > after;
            if (!periodic && !outage) {
                return f.run();
            }
            faults++;
            boolean landed = !outage && faults % 2 == 0;
            if (landed) {
                f.run();
            }
            throw BackendException.io(
                    "injected fault (storage drill) on " + what + " " + key + ", write " + n
                            + (landed ? " (the write landed)" : ""));
        }

        @Override
        public byte[] get(String key) throws BackendException {
            return inner.get(key);
        }

        @Override
        public boolean putIfAbsent(String key, byte[] value) throws BackendException {
            return write("put-if-absent", key, () -> inner.putIfAbsent(key, value));
        }

        @Override
        public void put(String key, byte[] value) throws BackendException {
            write("put", key, () -> {
                inner.put(key, value);
                return null;
            });
        }

        @Override
        public void delete(String key) throws BackendException {
            write("delete", key, () -> {
                inner.delete(key);
                return null;
            });
        }

        @Override
        public List<String> list(String prefix) throws BackendException {
            return inner.list(prefix);
        }
    }
}
