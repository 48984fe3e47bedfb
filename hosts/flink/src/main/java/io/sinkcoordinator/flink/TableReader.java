package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.ComponentTable;
import io.sinkcoordinator.flink.component.Snapshot;
import io.sinkcoordinator.flink.component.Tag;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.serialization.DeserializationSchema;

/**
 * Reads what a sink committed: the snapshots and tags of the table's log
 * (decoded by the component's {@code table} interface) and the records of
 * the data files the snapshots name, in snapshot order.
 */
public final class TableReader implements AutoCloseable {
    private final Path table;
    private final ComponentTable log;

    private TableReader(Path table, ComponentRuntime runtime) {
        this.table = table;
        this.log = new ComponentTable(SinkOptions.logDir(table).toString(), runtime);
    }

    /** Opens the table at {@code table} (it must exist), on the default runtime of SinkOptions. */
    public static TableReader open(String table) {
        return open(table, SinkOptions.defaultRuntime());
    }

    /** Opens the table at {@code table} (it must exist), read through {@code runtime}. */
    public static TableReader open(String table, ComponentRuntime runtime) {
        return new TableReader(Paths.get(table).toAbsolutePath(), runtime);
    }

    public List<Snapshot> snapshots() {
        return log.snapshots();
    }

    public List<Tag> tags() {
        return log.tags();
    }

    /** Every committed record's bytes, snapshot by snapshot. */
    public List<byte[]> records() throws IOException {
        List<byte[]> records = new ArrayList<>();
        for (Snapshot snapshot : log.snapshots()) {
            records.addAll(records(snapshot));
        }
        return records;
    }

    /** The records of one snapshot. */
    public List<byte[]> records(Snapshot snapshot) throws IOException {
        List<byte[]> records = new ArrayList<>();
        for (byte[] committable : snapshot.committables()) {
            records.addAll(DataFiles.read(table, committable));
        }
        return records;
    }

    /** Every committed record, decoded. */
    public <T> List<T> records(DeserializationSchema<T> schema) throws IOException {
        List<T> out = new ArrayList<>();
        for (byte[] record : records()) {
            out.add(schema.deserialize(record));
        }
        return out;
    }

    /**
     * Prints a table's snapshots (with their record counts) and tags: {@code TableReader <table>}.
     */
    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: TableReader <table directory>");
            System.exit(2);
        }
        try (TableReader reader = open(args[0])) {
            for (Snapshot snapshot : reader.snapshots()) {
                System.out.println(snapshot + " records=" + reader.records(snapshot).size()
                        + " subtasks=" + java.util.Arrays.toString(snapshot.subtasks()));
            }
            for (Tag tag : reader.tags()) {
                System.out.println(tag);
            }
        }
    }

    @Override
    public void close() {
        log.close();
    }
}
