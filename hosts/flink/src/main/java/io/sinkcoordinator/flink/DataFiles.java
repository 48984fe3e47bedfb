package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.TableLocation;
import io.sinkcoordinator.jvm.Storage;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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

    /** The record files' directory in the table. */
    static final String DIR = "data/";

    /** Record files under {@code <table>/data}, each record serialized by {@code schema}. */
    static <T> WriterFiles<T> of(
            TableLocation table, ComponentRuntime runtime, SerializationSchema<T> schema) {
        return new RecordFiles<>(table, runtime, schema);
    }

    private static final class RecordFiles<T> extends WriterFiles.OnTable<T> {
        private static final long serialVersionUID = 1L;
        private final SerializationSchema<T> schema;

        RecordFiles(TableLocation table, ComponentRuntime runtime, SerializationSchema<T> schema) {
            super(table, runtime);
            this.schema = java.util.Objects.requireNonNull(schema, "schema");
        }

        @Override
        public File<T> create(int subtask) throws IOException {
            // unique across attempts and restarts
            String name = String.format("%05d-%d-%s.rec", subtask, System.nanoTime(), UUID.randomUUID());
            return new Writer<>(newFile(DIR + name), schema);
        }
    }

    /** An open record file, each record serialized by the sink's schema. */
    static final class Writer<T> implements WriterFiles.File<T>, AutoCloseable {
        private final SerializationSchema<T> schema;
        private final WriterFiles.NewFile file;
        private final DataOutputStream out;
        private long records;

        private Writer(WriterFiles.NewFile file, SerializationSchema<T> schema) {
            this.schema = schema;
            this.file = file;
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
            return file.key.getBytes(StandardCharsets.UTF_8);
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

    /** The records of the file a committable names, in the local table {@code table}. */
    static List<byte[]> read(Path table, byte[] committable) throws IOException {
        Storage storage = TableLocation.of(table.toString()).open(ComponentRuntime.CHICORY, false);
        return read(storage, committable);
    }

    /** The records of the file a committable names, read from the table's {@code storage}. */
    static List<byte[]> read(Storage storage, byte[] committable) throws IOException {
        String relative = new String(committable, StandardCharsets.UTF_8);
        if (!relative.startsWith(DIR) || relative.contains("..")) {
            throw new IOException("not a data file committable: " + relative);
        }
        byte[] file = TableReader.file(storage, relative);
        List<byte[]> records = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(file))) {
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
