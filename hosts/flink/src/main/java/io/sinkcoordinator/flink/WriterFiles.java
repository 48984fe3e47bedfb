package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.TableLocation;
import io.sinkcoordinator.jvm.BackendException;
import io.sinkcoordinator.jvm.Storage;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.Flushable;
import java.io.IOException;
import java.io.OutputStream;
import java.io.Serializable;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;

/**
 * How a writer subtask turns its records into data files of the table: the native record files
 * ({@link DataFiles}) or Paimon's Avro data files ({@link PaimonFiles}). Shipped to the writers
 * with the job. A file is reported (its committable handed to the coordinator) only after {@link
 * File#finish} made it durable, so the table never points at a partial file.
 */
interface WriterFiles<T> extends Serializable {
    /** A new file of {@code subtask}, named so that no other attempt or restart reuses it. */
    File<T> create(int subtask) throws IOException;

    /** Releases what the files were written through (an object store's client). */
    default void close() {}

    /** An open data file. */
    interface File<T> {
        void write(T record) throws IOException;

        long records();

        /** Flushes, makes the file durable and closes it; the committable that reports it. */
        byte[] finish() throws IOException;

        /** Closes and deletes a file that will never be reported. */
        void discard();
    }

    /**
     * The files of one table: on a local directory written in place; on an object store through
     * the table's storage ({@link TableLocation#open}), opened on first use in each writer.
     */
    abstract class OnTable<T> implements WriterFiles<T> {
        private static final long serialVersionUID = 1L;
        final TableLocation table;
        private final ComponentRuntime runtime;
        private transient Storage storage;

        OnTable(TableLocation table, ComponentRuntime runtime) {
            this.table = Objects.requireNonNull(table, "table");
            this.runtime = Objects.requireNonNull(runtime, "runtime");
        }

        /** A new file at {@code key} (relative to the table, e.g. {@code data/<name>}). */
        NewFile newFile(String key) throws IOException {
            if (table.local()) {
                return new NewFile(table.path(), key);
            }
            if (storage == null) {
                storage = table.open(runtime, true);
            }
            return new NewFile(storage, key);
        }

        @Override
        public void close() {
            if (storage != null) {
                TableLocation.close(storage);
                storage = null;
            }
        }
    }

    /**
     * A data file created for writing, never an existing one (so no two attempts share a file),
     * with a buffered stream into it for the format's writer. On a local directory it is written
     * in place and fsynced; on an object store it is buffered in memory and put whole by {@link
     * #sync} (an object appears at once or not at all).
     */
    final class NewFile {
        /** The file's key in the table. */
        final String key;
        /** The buffered stream into the file. */
        final OutputStream out;
        /** Local: the file, its channel. */
        private final Path path;
        private final FileChannel channel;
        /** Object store: the table's storage and the file's bytes. */
        private final Storage storage;
        private final ByteArrayOutputStream buffer;

        NewFile(Path table, String key) throws IOException {
            this.key = key;
            this.path = table.resolve(key);
            Files.createDirectories(path.getParent());
            this.channel =
                    FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            this.out = new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 16);
            this.storage = null;
            this.buffer = null;
        }

        NewFile(Storage storage, String key) {
            this.key = key;
            this.path = null;
            this.channel = null;
            this.storage = storage;
            this.buffer = new ByteArrayOutputStream(1 << 16);
            this.out = buffer;
        }

        /**
         * Flushes {@code writer} (the format's writer over {@link #out}) and makes the file
         * durable: fsynced, or put into the object store.
         */
        void sync(Flushable writer) throws IOException {
            writer.flush();
            if (channel != null) {
                channel.force(true);
                return;
            }
            try {
                storage.put(key, buffer.toByteArray());
            } catch (BackendException e) {
                throw new IOException("cannot write the data file " + key + ": " + e.getMessage(), e);
            }
        }

        /** The file's size in bytes, once {@link #sync}ed. */
        long size() throws IOException {
            return channel != null ? Files.size(path) : buffer.size();
        }

        /**
         * Closes {@code writer} and deletes the file, best effort: nothing refers to a file that
         * was never reported, so a leftover is harmless.
         */
        void discard(Closeable writer) {
            try {
                writer.close();
            } catch (IOException ignored) {
                // the file is deleted next
            }
            try {
                if (path != null) {
                    Files.deleteIfExists(path);
                } else {
                    storage.delete(key); // a file put before a later failure
                }
            } catch (IOException | BackendException ignored) {
                // an unreferenced leftover
            }
        }
    }
}
