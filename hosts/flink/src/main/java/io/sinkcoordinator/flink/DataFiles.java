package io.sinkcoordinator.flink;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.flink.api.common.serialization.SerializationSchema;

/**
 * The writers' record files under {@code <table>/data}: a sequence of
 * length-prefixed records (Java {@code DataOutput} framing, so no parser of
 * our own). A file is named in a committable only after it was closed and
 * fsynced: the table never points at a partial file. Files of failed
 * attempts stay unreferenced (their records are replayed by the source).
 */
final class DataFiles {
    private DataFiles() {}

    /** Record files under {@code <table>/data}, each record serialized by {@code schema}. */
    static <T> WriterFiles<T> of(String table, SerializationSchema<T> schema) {
        return new RecordFiles<>(table, schema);
    }

    private static final class RecordFiles<T> implements WriterFiles<T> {
        private static final long serialVersionUID = 1L;
        private final String table;
        private final SerializationSchema<T> schema;

        RecordFiles(String table, SerializationSchema<T> schema) {
            this.table = table;
            this.schema = java.util.Objects.requireNonNull(schema, "schema");
        }

        @Override
        public File<T> create(int subtask) throws IOException {
            return DataFiles.create(Path.of(table).resolve("data"), subtask, System.nanoTime(), schema);
        }
    }

    /** An open record file, each record serialized by the sink's schema. */
    static final class Writer<T> implements WriterFiles.File<T>, AutoCloseable {
        private final String name;
        private final SerializationSchema<T> schema;
        private final WriterFiles.NewFile file;
        private final DataOutputStream out;
        private long records;

        private Writer(Path dataDir, String name, SerializationSchema<T> schema) throws IOException {
            this.name = name;
            this.schema = schema;
            this.file = new WriterFiles.NewFile(dataDir, name);
            this.out = new DataOutputStream(file.out);
        }

        @Override
        public void write(T value) throws IOException {
            byte[] record = schema.serialize(value);
            out.writeInt(record.length);
            out.write(record);
            records++;
        }

        @Override
        public long records() {
            return records;
        }

        /** Flushes and fsyncs; the committable naming the file (relative to the table). */
        @Override
        public byte[] finish() throws IOException {
            file.sync(out);
            out.close();
            return ("data/" + name).getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public void discard() {
            file.discard(out);
        }

        @Override
        public void close() {
            discard();
        }
    }

    /** A new file for one subtask; the name is unique across attempts and restarts. */
    static <T> Writer<T> create(
            Path dataDir, int subtask, long checkpointHint, SerializationSchema<T> schema)
            throws IOException {
        String name = String.format("%05d-%d-%s.rec", subtask, checkpointHint, UUID.randomUUID());
        return new Writer<>(dataDir, name, schema);
    }

    /** The records of the file a committable names. */
    static List<byte[]> read(Path table, byte[] committable) throws IOException {
        String relative = new String(committable, StandardCharsets.UTF_8);
        if (!relative.startsWith("data/") || relative.contains("..")) {
            throw new IOException("not a data file committable: " + relative);
        }
        List<byte[]> records = new ArrayList<>();
        try (InputStream raw = Files.newInputStream(table.resolve(relative));
                DataInputStream in = new DataInputStream(new BufferedInputStream(raw, 1 << 16))) {
            while (true) {
                int length;
                try {
                    length = in.readInt();
                } catch (EOFException end) {
                    break;
                }
                if (length < 0) {
                    throw new IOException(relative + ": negative record length " + length);
                }
                byte[] record = new byte[length];
                in.readFully(record);
                records.add(record);
            }
        }
        return records;
    }
}
