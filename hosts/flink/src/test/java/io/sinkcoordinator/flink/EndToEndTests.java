package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.TestSupport.check;

import io.sinkcoordinator.flink.component.CoordinatorConfig;
import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Snapshot;
import io.sinkcoordinator.flink.component.Tag;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** Jobs in a MiniCluster, each checking that every input record is committed exactly once. */
final class EndToEndTests {
    private EndToEndTests() {}

    /**
     * The pipeline of every test: a sequence, throttled, maybe failing, as strings, into the sink;
     * on a Paimon table, as the rows of PaimonTests.ROWS.
     */
    static void pipeline(
            StreamExecutionEnvironment env,
            long n,
            SinkOptions options,
            MapFunction<Long, Long> chaos,
            int... recordsPerMs) {
        DataStream<Long> numbers = numbers(env, n, chaos, recordsPerMs);
        if (options.paimon() != null) {
            CoordinatedSink.forPaimon(numbers, options.paimon(), PaimonTests.ROWS)
                    .options(options)
                    .append();
        } else {
            CoordinatedSink.sinkTo(numbers.map(String::valueOf), new SimpleStringSchema(), options);
        }
    }

    /** The input of every test: {@code 0 .. n-1}, throttled, maybe failing. */
    static DataStream<Long> numbers(
            StreamExecutionEnvironment env, long n, MapFunction<Long, Long> chaos,
            int... recordsPerMs) {
        DataStream<Long> numbers =
                env.fromSequence(0, n - 1).map(new TestSupport.Throttle(recordsPerMs));
        return chaos == null ? numbers : numbers.map(chaos);
    }

    static String user(Path table) {
        return "user-" + table.getFileName();
    }

    /** The sink's options of every test: the table, its user named after it. */
    static SinkOptions options(Path table) {
        return SinkOptions.of(table.toString(), user(table));
    }

    /**
     * Runs {@link #pipeline} as job {@code job}, then checks the table: each record committed
     * once, one END snapshot last; returns the snapshots.
     */
    static List<Snapshot> runExactlyOnce(
            StreamExecutionEnvironment env,
            String job,
            Path table,
            long n,
            SinkOptions options,
            MapFunction<Long, Long> chaos,
            int... recordsPerMs)
            throws Exception {
        pipeline(env, n, options, chaos, recordsPerMs);
        env.execute(job);
        TestSupport.assertExactlyOnce(table, n);
        return TestSupport.assertEndSnapshot(table);
    }

    static void boundedP4() throws Exception {
        TestSupport.withTempDir("bounded", table -> {
            long n = 40_000;
            StreamExecutionEnvironment env = TestSupport.env(4, 0, new Configuration());
            env.enableCheckpointing(100);
            int snapshots = runExactlyOnce(env, "bounded-p4", table, n, options(table), null, 20).size();
            CoordinatorStats stats = CoordinatorStats.of(user(table));
            check(stats.checkpointsCompleted.get() >= 3, "few checkpoints: " + stats);
            check(snapshots >= 3, "only " + snapshots + " snapshots");
            // A checkpoint's four events go as one batch (SinkCoordinator#flush).
            check(stats.batches.get() < stats.eventsSent.get(), "events not batched: " + stats);
            System.out.println("     " + snapshots + " snapshots; " + stats);
        });
    }

    static void randomFailures() throws Exception {
        TestSupport.withTempDir("failures", table -> {
            long n = 60_000;
            Chaos.budget(4, 2);
            StreamExecutionEnvironment env = Chaos.env(4, 100);
            runExactlyOnce(
                    env, "random-failures", table, n, options(table),
                    new Chaos(1.0 / 2000, 1.0, -1, 0, 7_000), 15);
            checkFailovers(user(table));
        });
    }

    /** The scenario of {@link #randomFailures} (and PaimonTests.failures) happened. */
    static void checkFailovers(String user) {
        CoordinatorStats stats = CoordinatorStats.of(user);
        System.out.println("     " + Chaos.injected() + "; " + stats);
        check(stats.subtaskResets.get() > 0, "no region failover: " + stats);
        check(stats.globalRestores.get() > 0, "no global failover: " + stats);
    }

    /**
     * SEMANTICS 8 in Flink, by a storage fault drill on the table log: every
     * 3rd write of every coordinator instance fails (alternately before and
     * after landing), which the coordinator repeats; the first instance then
     * loses its storage after 6 writes, so a commit's repeats run out and the
     * job fails over; the next instance's recovery commits what that commit
     * could not and asks for one more failover ({@code restart-required}).
     */
    static void storageFaults() throws Exception {
        TestSupport.withTempDir("storage-faults", table -> {
            long n = 30_000;
            StreamExecutionEnvironment env = TestSupport.env(2, 10, new Configuration());
            env.enableCheckpointing(100);
            SinkOptions options = options(table).withStorageFaultDrill(3, 6);
            runExactlyOnce(env, "storage-faults", table, n, options, null, 10);
            checkStorageDrill(user(table));
        });
    }

    /**
     * The scenario of {@link #storageFaults} (and PaimonTests.storageFaults) happened: repeats,
     * the outage's fatal failure, the failover after it and the recovery's restart-required.
     */
    static void checkStorageDrill(String user) {
        CoordinatorStats stats = CoordinatorStats.of(user);
        System.out.println("     " + stats);
        check(stats.storageRetries.get() >= 5, "few storage repeats: " + stats);
        check(stats.fatalFailures.get() >= 1, "the outage did not fail the job: " + stats);
        check(stats.globalRestores.get() >= 2, "no failover after the outage: " + stats);
        check(stats.restartsRequested.get() >= 1, "no restart-required: " + stats);
    }

    /**
     * Subtask 3 is 25 times slower than the others, which finish first; then
     * it fails its task once (a region failover) and a checkpoint once (a
     * global failover restoring a checkpoint in which the others are finished).
     */
    static void unevenFinishFailover() throws Exception {
        TestSupport.withTempDir("uneven", table -> {
            long n = 40_000;
            Chaos.budget(1, 1);
            StreamExecutionEnvironment env = Chaos.env(4, 20);
            runExactlyOnce(
                    env, "uneven-finish-failover", table, n, options(table),
                    new Chaos(1.0 / 300, 0.3, 3, 2_000), 50, 50, 50, 2);
            CoordinatorStats stats = CoordinatorStats.of(user(table));
            System.out.println("     " + Chaos.injected() + "; " + stats);
            check(stats.restoresWithFinishedSubtasks.get() > 0,
                    "no global restore saw finished subtasks: " + stats);
        });
    }

    static void batchMode() throws Exception {
        TestSupport.withTempDir("batch", table -> {
            long n = 20_000;
            StreamExecutionEnvironment env = TestSupport.env(4, 0, new Configuration());
            env.setRuntimeMode(RuntimeExecutionMode.BATCH);
            List<Snapshot> snapshots =
                    runExactlyOnce(env, "batch-mode", table, n, options(table), null, 1000);
            check(snapshots.size() == 1, "batch commits once: " + snapshots);
        });
    }

    static void stopWithSavepoint() throws Exception {
        TestSupport.withTempDir("savepoint", table -> TestSupport.withTempDir("savepoints", savepoints -> {
            long n = 60_000;
            SinkOptions options =
                    options(table).withConfig(CoordinatorConfig.of(user(table)).withSavepointAutoTag(true));
            StreamExecutionEnvironment env = TestSupport.env(2, 0, new Configuration());
            env.enableCheckpointing(100);
            pipeline(env, n, options, null, 4);
            String savepoint = stopAfterTwoSnapshots(env, "savepoint-first-half", table, savepoints);
            Tag tag;
            try (TableReader reader = TableReader.open(table.toString())) {
                tag = savepointTag(reader);
            }
            runExactlyOnce(resumed(savepoint), "savepoint-resumed", table, n, options, null, 200);
            System.out.println("     " + tag + "; " + CoordinatorStats.of(user(table)));
        }));
    }

    /**
     * Starts the job of {@code env} and, once {@code table} has two snapshots, stops it with a
     * savepoint into {@code savepoints} (no drain); the savepoint's path, when the job ended.
     */
    static String stopAfterTwoSnapshots(
            StreamExecutionEnvironment env, String job, Path table, Path savepoints)
            throws Exception {
        JobClient client = env.executeAsync(job);
        waitForSnapshots(table, 2, Duration.ofSeconds(60));
        String savepoint =
                client.stopWithSavepoint(
                                false, savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
                        .get();
        client.getJobExecutionResult().get();
        return savepoint;
    }

    /** An environment of parallelism 2, checkpointing, resuming from {@code savepoint}. */
    static StreamExecutionEnvironment resumed(String savepoint) {
        Configuration resume = new Configuration();
        resume.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        StreamExecutionEnvironment env = TestSupport.env(2, 0, resume);
        env.enableCheckpointing(100);
        return env;
    }

    /**
     * The one tag of a table after a stop-with-savepoint: {@code savepoint-<id>}, on the
     * savepoint's snapshot, the last one.
     */
    static Tag savepointTag(TableReader reader) {
        List<Tag> tags = reader.tags();
        check(tags.size() == 1, "one savepoint tag expected: " + tags);
        Tag tag = tags.get(0);
        check(tag.name().equals("savepoint-" + tag.identifier()), "tag " + tag);
        Optional<Snapshot> tagged =
                reader.snapshots().stream().filter(s -> s.id() == tag.snapshotId()).findFirst();
        check(tagged.isPresent() && tagged.get().identifier() == tag.identifier(),
                "the tag points at its savepoint's snapshot: " + tag);
        Snapshot last = reader.snapshots().get(reader.snapshots().size() - 1);
        check(last.id() == tag.snapshotId(), "the savepoint's snapshot is the last: " + last);
        return tag;
    }

    static void waitForSnapshots(Path table, int count, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (java.nio.file.Files.isDirectory(SinkOptions.logDir(table))
                    || TableReader.isPaimon(table)) {
                try (TableReader reader = TableReader.open(table.toString())) {
                    if (reader.snapshots().stream().filter(s -> s.identifier() != Entry.END).count()
                            >= count) {
                        return;
                    }
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("fewer than " + count + " snapshots after " + timeout);
    }
}
