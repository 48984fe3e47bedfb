package io.sinkcoordinator.flink.component;

import java.util.Arrays;
import java.util.List;

/** Read-only view of a table's log through the component (WIT interface {@code table}). */
public final class ComponentTable implements AutoCloseable {
    private long handle;

    /** Opens an existing log directory. */
    public ComponentTable(String logDir) {
        this.handle = Native.tableOpen(logDir);
    }

    private long live() {
        if (handle == 0) {
            throw new IllegalStateException("the table was closed");
        }
        return handle;
    }

    /** Every snapshot, by id. */
    public synchronized List<Snapshot> snapshots() {
        return Arrays.asList(Native.tableListSnapshots(live()));
    }

    /** Every tag, by name in byte order. */
    public synchronized List<Tag> tags() {
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
