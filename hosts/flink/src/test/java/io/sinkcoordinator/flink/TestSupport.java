package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Snapshot;
import io.sinkcoordinator.flink.component.TableLocation;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** Helpers of the end-to-end tests: environments, throttling, exactly-once checks. */
final class TestSupport {
    private TestSupport() {}

    static Path tempDir(String name) throws IOException {
        Path base = Path.of(System.getProperty("sinkcoord.test.dir",
                System.getProperty("java.io.tmpdir")));
        Files.createDirectories(base);
        return Files.createTempDirectory(base, name + "-");
    }

    /** A test body on a temporary directory. */
    interface DirTest {
        void run(Path dir) throws Exception;
    }

    /** Runs {@code test} on a fresh temporary directory {@code name-*}, deleted afterwards. */
    static void withTempDir(String name, DirTest test) throws Exception {
        Path dir = tempDir(name);
        try {
            test.run(dir);
        } finally {
            deleteTree(dir);
        }
    }

    static void deleteTree(Path dir) {
        if (Boolean.getBoolean("sinkcoord.test.keep")) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // best effort: temporary test data
        }
    }

    /** A local MiniCluster environment with P slots and a fixed-delay restart strategy. */
    static StreamExecutionEnvironment env(int parallelism, int restarts, Configuration extra) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, restarts);
        conf.set(
                RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY,
                java.time.Duration.ofMillis(50));
        conf.addAll(extra);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        return env;
    }

    /**
     * Slows a subtask down to about {@code recordsPerMs[subtask % n]} records
     * per millisecond, so that checkpoints happen while data flows.
     */
    static final class Throttle extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final int[] recordsPerMs;
        private transient int every;
        private transient long seen;

        Throttle(int... recordsPerMs) {
            this.recordsPerMs = recordsPerMs;
        }

        @Override
        public void open(OpenContext context) {
            int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            every = Math.max(1, recordsPerMs[subtask % recordsPerMs.length]);
        }

        @Override
        public Long map(Long value) throws Exception {
            if (++seen % every == 0) {
                Thread.sleep(1);
            }
            return value;
        }
    }

    /**
     * Every value of {@code 0 .. n-1} is committed exactly once, and nothing else: the records
     * (decimal strings), or on a Paimon table the first column of the rows (PaimonTests).
     */
    static void assertExactlyOnce(Path table, long n) throws IOException {
        assertExactlyOnce(TableLocation.of(table.toString()), n);
    }

    /** {@link #assertExactlyOnce(Path, long)} of a table anywhere (an object store's too). */
    static void assertExactlyOnce(TableLocation table, long n) throws IOException {
        int[] counts = new int[Math.toIntExact(n)];
        long total = 0;
        List<Long> values = new java.util.ArrayList<>();
        try (TableReader reader = TableReader.open(table, SinkOptions.defaultRuntime())) {
            if (reader.paimon()) {
                reader.rows().forEach(row -> values.add((Long) row[0]));
            } else {
                for (byte[] record : reader.records()) {
                    values.add(Long.parseLong(new String(record, StandardCharsets.UTF_8)));
                }
            }
        }
        for (long v : values) {
            check(v >= 0 && v < n, "record " + v + " was never produced");
            counts[(int) v]++;
            total++;
        }
        StringBuilder ranges = new StringBuilder();
        for (int i = 0; i < counts.length && ranges.length() < 400; i++) {
            if (counts[i] != 1) {
                int j = i;
                while (j + 1 < counts.length && counts[j + 1] == counts[i]) {
                    j++;
                }
                ranges.append(' ').append(i).append('-').append(j).append('x').append(counts[i]);
                i = j;
            }
        }
        long missing = 0;
        long duplicated = 0;
        long firstMissing = -1;
        long firstDuplicate = -1;
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] == 0) {
                missing++;
                if (firstMissing < 0) {
                    firstMissing = i;
                }
            } else if (counts[i] > 1) {
                duplicated++;
                if (firstDuplicate < 0) {
                    firstDuplicate = i;
                }
            }
        }
        check(
                missing == 0 && duplicated == 0,
                "expected each of " + n + " records once; got " + total + " records, " + missing
                        + " missing (first " + firstMissing + "), " + duplicated
                        + " duplicated (first " + firstDuplicate + "); ranges" + ranges);
    }

    /** The table's snapshots; the last one is the END snapshot. */
    static List<Snapshot> assertEndSnapshot(Path table) {
        return assertEndSnapshot(TableLocation.of(table.toString()));
    }

    /** {@link #assertEndSnapshot(Path)} of a table anywhere. */
    static List<Snapshot> assertEndSnapshot(TableLocation table) {
        try (TableReader reader = TableReader.open(table, SinkOptions.defaultRuntime())) {
            List<Snapshot> snapshots = reader.snapshots();
            check(!snapshots.isEmpty(), "no snapshot committed");
            Snapshot last = snapshots.get(snapshots.size() - 1);
            check(last.identifier() == Entry.END, "the last snapshot is not END: " + last);
            long ends = snapshots.stream().filter(s -> s.identifier() == Entry.END).count();
            check(ends == 1, ends + " END snapshots");
            return snapshots;
        }
    }

    /**
     * Waits until no coordinator loop thread ({@code sinkcoord-*-loop}) is alive: after a job
     * ended, Flink closes its coordinators (on a thread of its own, shortly after the job's
     * result is out), and every instance's close ends its loop, failovers' instances included.
     * Polled within a generous bound (above the coordinators' close bound and Flink's).
     */
    static void awaitNoLoopThreads() throws InterruptedException {
        long start = System.nanoTime();
        long deadline = start + java.time.Duration.ofSeconds(90).toNanos();
        List<String> left = loopThreadNames();
        while (!left.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(20);
            left = loopThreadNames();
        }
        check(left.isEmpty(), "coordinator loop threads left after the job ended: " + left);
        System.out.println("     no loop thread left ("
                + (System.nanoTime() - start) / 1_000_000 + " ms after the job's end)");
    }

    private static List<String> loopThreadNames() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith("sinkcoord-")
                        && t.getName().endsWith("-loop"))
                .map(Thread::getName)
                .sorted()
                .collect(java.util.stream.Collectors.toList());
    }

    static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }
}
