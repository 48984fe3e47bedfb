package io.sinkcoordinator.flink;

import java.io.BufferedOutputStream;
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

/**
 * How a writer subtask turns its records into data files of the table: the native record files
 * ({@link DataFiles}) or Paimon's Avro data files ({@link PaimonFiles}). Shipped to the writers
 * with the job. A file is reported (its committable handed to the coordinator) only after {@link
 * File#finish} made it durable, so the table never points at a partial file.
 */
interface WriterFiles<T> extends Serializable {
    /** A new file of {@code subtask}, named so that no other attempt or restart reuses it. */
    File<T> create(int subtask) throws IOException;

    /** An open data file. */
    interface File<T> {
        void write(T record) throws IOException;

        long records();

        /** Flushes, fsyncs and closes the file; the committable that reports it. */
        byte[] finish() throws IOException;

        /** Closes and deletes a file that will never be reported. */
        void discard();
    }

    /**
     * A data file created for writing, never an existing one (so no two attempts share a file),
     * with a buffered stream into it for the format's writer.
     */
    final class NewFile {
        final Path path;
        /** The buffered stream into the file. */
        final OutputStream out;
        private final FileChannel channel;

        NewFile(Path dir, String name) throws IOException {
            Files.createDirectories(dir);
            this.path = dir.resolve(name);
            this.channel =
                    FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            this.out = new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 16);
        }

        /** Flushes {@code writer} (the format's writer over {@link #out}) and fsyncs the file. */
        void sync(Flushable writer) throws IOException {
            writer.flush();
            channel.force(true);
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
                Files.deleteIfExists(path);
            } catch (IOException ignored) {
                // an unreferenced leftover
            }
        }
    }
}
