package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.ComponentTable;
import io.sinkcoordinator.flink.component.Snapshot;
import io.sinkcoordinator.flink.component.TableLocation;
import io.sinkcoordinator.flink.component.Tag;
import io.sinkcoordinator.jvm.BackendException;
import io.sinkcoordinator.jvm.Storage;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.serialization.DeserializationSchema;

/**
 * Reads what a sink committed: the snapshots and tags of the table's log
 * (decoded by the component's {@code table} interface) and the records of
 * the data files the snapshots name, in snapshot order. A Paimon table (one
 * with {@code schema/schema-0} and no native {@code log/}) is read the same
 * way, through the component's Paimon reader: its snapshots' committables
 * are the {@code PCM} metadata of their new data files, whose rows {@link
 * #rows()} reads (unpartitioned tables).
 */
public final class TableReader implements AutoCloseable {
    private final TableLocation table;
    /** The table's files (the data files, the Paimon schema). */
    private final Storage files;
    private final boolean paimon;
    private final ComponentTable log;

    private TableReader(TableLocation table, ComponentRuntime runtime) {
        this.table = table;
        this.files = table.open(runtime, false);
        try {
            this.paimon = isPaimon(files);
            this.log = new ComponentTable(paimon ? table : table.resolve("log"), runtime);
        } catch (IOException | RuntimeException e) {
            TableLocation.close(files);
            throw e instanceof IOException io ? new java.io.UncheckedIOException(io) : (RuntimeException) e;
        }
    }

    /** {@link #isPaimon(Storage)} of a local table. */
    static boolean isPaimon(java.nio.file.Path table) throws IOException {
        return java.nio.file.Files.isDirectory(table)
                && isPaimon(TableLocation.of(table.toString()).open(ComponentRuntime.CHICORY, false));
    }

    /** A Paimon table: its schema, and no native log beside it. */
    static boolean isPaimon(Storage table) throws IOException {
        try {
            return table.list("log/").isEmpty() && table.get(PaimonSchema.KEY) != null;
        } catch (BackendException e) {
            throw new IOException("cannot read the table: " + e.getMessage(), e);
        }
    }

    /** The file at {@code key} of the table's {@code storage}; a missing file is an error. */
    static byte[] file(Storage storage, String key) throws IOException {
        byte[] bytes;
        try {
            bytes = storage.get(key);
        } catch (BackendException e) {
            throw new IOException("cannot read " + key + ": " + e.getMessage(), e);
        }
        if (bytes == null) {
            throw new java.io.FileNotFoundException(key + " is missing from the table");
        }
        return bytes;
    }

    /** Whether the table is a Paimon table (else the native log over record files). */
    public boolean paimon() {
        return paimon;
    }

    /** Opens the table at {@code table} (it must exist), on the default runtime of SinkOptions. */
    public static TableReader open(String table) {
        return open(table, SinkOptions.defaultRuntime());
    }

    /** Opens the table at {@code table} (it must exist), read through {@code runtime}. */
    public static TableReader open(String table, ComponentRuntime runtime) {
        return open(TableLocation.of(table), runtime);
    }

    /**
     * Opens the table at {@code table} (a local directory or an object store, with its options),
     * read through {@code runtime}.
     */
    public static TableReader open(TableLocation table, ComponentRuntime runtime) {
        return new TableReader(table, runtime);
    }

    public List<Snapshot> snapshots() {
        return log.snapshots();
    }

    public List<Tag> tags() {
        return log.tags();
    }

    /** Every committed record's bytes, snapshot by snapshot. */
    public List<byte[]> records() throws IOException {
        return everySnapshot(this::records);
    }

    /** What {@code read} reads of each snapshot, in snapshot order. */
    private <R> List<R> everySnapshot(SnapshotReader<R> read) throws IOException {
        List<R> out = new ArrayList<>();
        for (Snapshot snapshot : log.snapshots()) {
            out.addAll(read.of(snapshot));
        }
        return out;
    }

    /** Reads one snapshot's records or rows. */
    @FunctionalInterface
    private interface SnapshotReader<R> {
        List<R> of(Snapshot snapshot) throws IOException;
    }

    /** The records of one snapshot (a native table; Paimon tables have {@link #rows()}). */
    public List<byte[]> records(Snapshot snapshot) throws IOException {
        if (paimon) {
            throw new IllegalStateException(table + " is a Paimon table: read its rows()");
        }
        List<byte[]> records = new ArrayList<>();
        for (byte[] committable : snapshot.committables()) {
            records.addAll(DataFiles.read(files, committable));
        }
        return records;
    }

    /** Every committed row of a Paimon table, snapshot by snapshot: its column values. */
    public List<Object[]> rows() throws IOException {
        return everySnapshot(this::rows);
    }

    /** The rows of the data files one snapshot of a Paimon table added. */
    public List<Object[]> rows(Snapshot snapshot) throws IOException {
        if (!paimon) {
            throw new IllegalStateException(table + " is no Paimon table: read its records()");
        }
        List<Object[]> rows = new ArrayList<>();
        for (byte[] committable : snapshot.committables()) {
            rows.addAll(PaimonFiles.read(files, committable));
        }
        return rows;
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
            System.err.println("usage: TableReader <table directory or URL>");
            System.exit(2);
        }
        try (TableReader reader = open(args[0])) {
            for (Snapshot snapshot : reader.snapshots()) {
                int n = reader.paimon()
                        ? reader.rows(snapshot).size() : reader.records(snapshot).size();
                System.out.println(snapshot + " records=" + n
                        + " subtasks=" + java.util.Arrays.toString(snapshot.subtasks()));
            }
            for (Tag tag : reader.tags()) {
                System.out.println(tag);
            }
        }
    }

    @Override
    public void close() {
        try {
            log.close();
        } finally {
            TableLocation.close(files);
        }
    }
}
