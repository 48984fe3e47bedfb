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

    /** Opens an existing log directory. */
    public ComponentTable(String logDir) {
        this(logDir, ComponentRuntime.JNI);
    }

    /** The same on {@code runtime} (the JNI library, or Chicory without native code). */
    public ComponentTable(String logDir, ComponentRuntime runtime) {
        if (runtime == ComponentRuntime.CHICORY) {
            if (!java.nio.file.Files.isDirectory(java.nio.file.Path.of(logDir))) {
                // as the JNI side's open_existing: a reader never creates a table
                throw new IllegalArgumentException("cannot open the table log " + logDir + ": no such directory");
            }
            this.jvm = new io.sinkcoordinator.jvm.Table(
                    Chicory.storage(logDir, 0, -1), io.sinkcoordinator.jvm.Clock.system(), Chicory.runtime());
            return;
        }
        this.handle = Native.tableOpen(logDir);
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
        if (handle != 0) {
            Native.tableFree(handle);
            handle = 0;
        }
    }
}
