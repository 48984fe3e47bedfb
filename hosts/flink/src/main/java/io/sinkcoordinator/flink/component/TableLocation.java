package io.sinkcoordinator.flink.component;

import io.sinkcoordinator.jvm.BackendException;
import io.sinkcoordinator.jvm.DirectoryStorage;
import io.sinkcoordinator.jvm.S3Storage;
import io.sinkcoordinator.jvm.Storage;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Where a table lives: a local directory (a plain path or {@code file:///path}) or an object store
 * ({@code s3://bucket/prefix}, also {@code s3a://}; {@code gs://bucket/prefix}; {@code
 * az://container/prefix}), with the store's options. The options are {@code object_store}'s keys,
 * as the Rust host and the CLI take them ({@code aws_endpoint}, {@code aws_region}, {@code
 * aws_allow_http}, ...); the environment of each process ({@code AWS_*}, {@code GOOGLE_*}, {@code
 * AZURE_*}) is read first and the options override it.
 *
 * <p>On a cluster the JobManager and the TaskManagers do not share a disk: the table must then be
 * on an object store (or a shared mount). Both runtimes open local directories and {@code s3://};
 * {@code gs://} and {@code az://} need the {@link ComponentRuntime#JNI} runtime.
 *
 * @param url the location: an absolute local path, or the object store URL as given
 * @param options the object store's options, sorted by key (empty for a local directory)
 */
public record TableLocation(String url, Map<String, String> options) implements Serializable {

    public TableLocation {
        Objects.requireNonNull(url, "url");
        if (url.isEmpty()) {
            throw new IllegalArgumentException("a table location is empty");
        }
        String path = localPath(url);
        if (path != null) {
            url = Paths.get(path).toAbsolutePath().toString();
        }
        TreeMap<String, String> sorted = new TreeMap<>();
        for (Map.Entry<String, String> e : Objects.requireNonNull(options, "options").entrySet()) {
            sorted.put(Objects.requireNonNull(e.getKey(), "option key"),
                    Objects.requireNonNull(e.getValue(), "option " + e.getKey()));
        }
        options = java.util.Collections.unmodifiableSortedMap(sorted);
    }

    /** {@code location} with no options. */
    public static TableLocation of(String location) {
        return new TableLocation(location, Map.of());
    }

    /** The local path of {@code url} (no scheme, or {@code file://}), else null. */
    private static String localPath(String url) {
        if (!url.contains("://")) {
            return url;
        }
        if (url.regionMatches(true, 0, "file://", 0, 7)) {
            return java.net.URI.create(url).getPath();
        }
        return null;
    }

    /** Whether the table is a local directory. */
    public boolean local() {
        return localPath(url) != null;
    }

    /** The local directory; only for a {@link #local} table. */
    public Path path() {
        if (!local()) {
            throw new IllegalStateException(url + " is not a local directory");
        }
        return Paths.get(url);
    }

    /** The location {@code child} inside this one ({@code log} of a native table). */
    public TableLocation resolve(String child) {
        String base = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
        return new TableLocation(local() ? path().resolve(child).toString() : base + "/" + child, options);
    }

    /** The options as JNI takes them: alternating keys and values. */
    String[] optionArray() {
        String[] out = new String[options.size() * 2];
        int i = 0;
        for (Map.Entry<String, String> e : options.entrySet()) {
            out[i++] = e.getKey();
            out[i++] = e.getValue();
        }
        return out;
    }

    /** The URL's scheme in lower case, or {@code file}. */
    private String scheme() {
        return local() ? "file" : url.substring(0, url.indexOf("://")).toLowerCase(Locale.ROOT);
    }

    /**
     * The table's storage for the host's own reads and writes (the writers' data files, a reader's
     * reads, the Paimon schema): a local directory through the JVM binding's {@link
     * DirectoryStorage}; an object store through the runtime ({@link ComponentRuntime#JNI}: the
     * native library's stores; {@link ComponentRuntime#CHICORY}: the JVM binding's {@link
     * S3Storage}, {@code s3://} only). {@code create}: a missing local directory is made;
     * otherwise it must exist. Close it with {@link #close(Storage)}.
     */
    public Storage open(ComponentRuntime runtime, boolean create) {
        if (local()) {
            Path dir = path();
            try {
                if (create) {
                    Files.createDirectories(dir);
                } else if (!Files.isDirectory(dir)) {
                    throw new IllegalArgumentException("cannot open the table " + url + ": no such directory");
                }
                return new DirectoryStorage(dir);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open the table " + url + ": " + e.getMessage(), e);
            } catch (BackendException e) {
                throw new IllegalArgumentException("cannot open the table " + url + ": " + e.getMessage(), e);
            }
        }
        if (runtime == ComponentRuntime.JNI) {
            return new NativeStorage(this, create);
        }
        String scheme = scheme();
        if (!scheme.equals("s3") && !scheme.equals("s3a")) {
            throw new IllegalArgumentException(
                    "the table " + url + ": the Chicory runtime opens local directories and s3:// tables; "
                            + scheme + ":// needs the JNI runtime");
        }
        return S3Storage.open(url, options);
    }

    /** Closes a storage {@link #open} returned (an object store's client), best effort. */
    public static void close(Storage storage) {
        if (storage instanceof AutoCloseable c) {
            try {
                c.close();
            } catch (Exception ignored) {
                // a client's resources; nothing of the table depends on it
            }
        }
    }

    @Override
    public String toString() {
        return url;
    }
}
