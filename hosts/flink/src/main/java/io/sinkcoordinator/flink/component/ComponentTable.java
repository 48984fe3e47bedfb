package io.sinkcoordinator.flink.component;

import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Collectors;

/** Read-only view of a table's log through the component (WIT interface {@code table}). */
public final class ComponentTable implements AutoCloseable {
    private long handle;
    /** The Chicory reader ({@link ComponentRuntime#CHICORY}), else null (JNI). */
    private io.sinkcoordinator.jvm.Table jvm;
    /** The Chicory reader's storage (closed with it), else null. */
    private io.sinkcoordinator.jvm.Storage storage;

    /** Opens an existing log directory. */
    public ComponentTable(String logDir) {
        this(logDir, ComponentRuntime.JNI);
    }

    /** The same on {@code runtime} (the JNI library, or Chicory without native code). */
    public ComponentTable(String logDir, ComponentRuntime runtime) {
        this(TableLocation.of(logDir), runtime);
    }

    /**
     * The log at {@code log} (a local directory or an object store, see {@link TableLocation}),
     * which must exist, read through {@code runtime}.
     */
    public ComponentTable(TableLocation log, ComponentRuntime runtime) {
        if (runtime == ComponentRuntime.CHICORY) {
            // as the JNI side: a reader never creates a table
            this.storage = log.open(runtime, false);
            this.jvm = new io.sinkcoordinator.jvm.Table(
                    storage, io.sinkcoordinator.jvm.Clock.system(), Chicory.runtime());
            return;
        }
        this.handle = Native.tableOpen(log.url(), log.optionArray());
    }

    private long live() {
        if (handle == 0) {
            throw new IllegalStateException("the table was closed");
        }
        return handle;
    }

    /** A list the Chicory reader reads, each element converted to this package's type. */
    private <J, T> List<T> chicory(
            Chicory.Call<io.sinkcoordinator.jvm.Table, List<J>> read, Function<J, T> convert) {
        return Chicory.call(jvm, false, "table", read).stream()
                .map(convert)
                .collect(Collectors.toList());
    }

    /** Every snapshot, by id. */
    public synchronized List<Snapshot> snapshots() {
        if (jvm != null) {
            return chicory(t -> t.listSnapshots(), Chicory::snapshot);
        }
        return Arrays.asList(Native.tableListSnapshots(live()));
    }

    /** Every tag, by name in byte order. */
    public synchronized List<Tag> tags() {
        if (jvm != null) {
            return chicory(t -> t.listTags(), Chicory::tag);
        }
        return Arrays.asList(Native.tableListTags(live()));
    }

    @Override
    public synchronized void close() {
        if (storage != null) {
            TableLocation.close(storage);
            storage = null;
        }
        if (handle != 0) {
            Native.tableFree(handle);
            handle = 0;
        }
    }
}
