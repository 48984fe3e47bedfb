package io.sinkcoordinator.flink;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The writers' record files under {@code <table>/data}: a sequence of
 * length-prefixed records (Java {@code DataOutput} framing, so no parser of
 * our own). A file is named in a committable only after it was closed and
 * fsynced: the table never points at a partial file. Files of failed
 * attempts stay unreferenced (their records are replayed by the source).
 */
final class DataFiles {
    private DataFiles() {}

    /** An open record file. */
    static final class Writer implements AutoCloseable {
        private final Path path;
        private final String name;
        private final FileChannel channel;
        private final DataOutputStream out;
        private long records;

        private Writer(Path dataDir, String name) throws IOException {
            Files.createDirectories(dataDir);
            this.name = name;
            this.path = dataDir.resolve(name);
            this.channel =
                    FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            this.out =
                    new DataOutputStream(
                            new BufferedOutputStream(
                                    java.nio.channels.Channels.newOutputStream(channel), 1 << 16));
        }

        void write(byte[] record) throws IOException {
            out.writeInt(record.length);
            out.write(record);
            records++;
        }

        long records() {
            return records;
        }

        /** Flushes and fsyncs; the committable naming the file (relative to the table). */
        byte[] finish() throws IOException {
            out.flush();
            channel.force(true);
            out.close();
            return ("data/" + name).getBytes(StandardCharsets.UTF_8);
        }

        /** Closes and deletes a file that will never be reported. */
        void discard() {
            try {
                out.close();
            } catch (IOException ignored) {
                // the file is deleted next; nothing refers to it
            }
            try {
                Files.deleteIfExists(path);
            } catch (IOException ignored) {
                // an unreferenced leftover is harmless
            }
        }

        @Override
        public void close() {
            discard();
        }
    }

    /** A new file for one subtask; the name is unique across attempts and restarts. */
    static Writer create(Path dataDir, int subtask, long checkpointHint) throws IOException {
        String name = String.format("%05d-%d-%s.rec", subtask, checkpointHint, UUID.randomUUID());
        return new Writer(dataDir, name);
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
