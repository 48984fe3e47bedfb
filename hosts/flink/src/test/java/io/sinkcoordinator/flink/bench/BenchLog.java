package io.sinkcoordinator.flink.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The benchmarks' table directory. The connector's component API has no in-memory storage (the
 * JNI library and its Chicory twin open a table log directory), so the closest to
 * testkit/benches/perf.rs's {@code BenchStorage} (and hosts/jvm's) is a directory on tmpfs
 * ({@code /dev/shm} when there is one: fsync is then free, but each write is still a few system
 * calls) whose old snapshot files are removed between measured ops, keeping the latest {@link
 * #KEPT_SNAPSHOTS} as those storages do (a run of many thousand checkpoints would otherwise fill
 * the memory with 200 KB snapshots). The coordinator reads snapshots back only when it loads the
 * table, so removing old ones changes nothing of what it does.
 */
public final class BenchLog implements AutoCloseable {
    /** Snapshot records kept, as perf::BenchStorage's {@code KEPT_SNAPSHOTS}. */
    static final int KEPT_SNAPSHOTS = 4;

    /** The directory made for the run (deleted by {@link #close}). */
    public final Path root;

    private BenchLog(Path root) {
        this.root = root;
    }

    /** A fresh directory named after {@code name}, on tmpfs if the machine has one. */
    public static BenchLog create(String name) throws IOException {
        Path shm = Path.of("/dev/shm");
        Path base = Files.isDirectory(shm) && Files.isWritable(shm)
                ? shm
                : Path.of(System.getProperty("java.io.tmpdir"));
        return new BenchLog(Files.createTempDirectory(base, "sinkcoord-bench-" + name + "-"));
    }

    /**
     * Removes the snapshot files of the table log {@code logDir} but the latest {@link
     * #KEPT_SNAPSHOTS} (their names are zero-padded ids: name order is id order).
     */
    public static void prune(Path logDir) throws IOException {
        Path dir = logDir.resolve("snapshot");
        if (!Files.isDirectory(dir)) {
            return;
        }
        List<Path> snapshots;
        try (Stream<Path> files = Files.list(dir)) {
            snapshots = files.filter(p -> !p.getFileName().toString().startsWith("."))
                    .sorted()
                    .collect(Collectors.toList());
        }
        for (int i = 0; i < snapshots.size() - KEPT_SNAPSHOTS; i++) {
            Files.delete(snapshots.get(i));
        }
    }

    @Override
    public void close() throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                Files.delete(p);
            }
        }
    }
}
