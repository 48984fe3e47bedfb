package io.sinkcoordinator.flink.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sinkcoordinator.flink.TableReader;
import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Snapshot;
import io.sinkcoordinator.flink.component.TableLocation;
import io.sinkcoordinator.flink.component.Tag;
import io.sinkcoordinator.jvm.Moto;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The connector on a standalone Flink 2.3 cluster of separate processes (issue 24, item 4): an
 * application-mode JobManager and two TaskManagers on loopback run {@link NumbersJob} (ids {@code
 * 0 .. N-1}, parallelism 2, checkpoints every second into a local directory, retained) into a
 * table on the pure-Java runtime. While it runs: a savepoint through the REST API, {@code kill -9}
 * of a TaskManager that runs tasks (Flink restarts them; the TaskManager is started again), then
 * {@code kill -9} of the JobManager, started again with the job resumed from its latest retained
 * checkpoint, the TaskManagers registering with it again. After the end of input the table must
 * hold every id exactly once, end with the final (END) snapshot and carry the savepoint's tag.
 *
 * <p>Every wait is bounded; the processes' logs stay in {@code target/cluster/logs} and their
 * tails are printed when the test fails.
 */
class StandaloneClusterTest {
    /** The ids, and how many a second the source emits: about a minute of input. */
    private static final long COUNT = 24_000;
    private static final double RATE = 400;
    private static final String COMMIT_USER = "numbers-cluster";

    private final long start = System.nanoTime();

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void killedTaskManagerAndJobManagerStillExactlyOnce() throws Exception {
        Path dir = Path.of(System.getProperty("cluster.work.dir", "target/cluster"));
        deleteTree(dir);
        // The table on S3 (moto's S3 API on loopback): the JobManager and the TaskManagers share
        // no table directory. The processes get the store's settings as AWS_* variables, the way
        // credentials should reach a cluster; this JVM's reader gets them as options.
        Moto moto = Moto.shared();
        TableLocation table = new TableLocation(moto.freshUrl("cluster") + "/numbers", moto.options());
        List<String> tableArgs = List.of("--table", table.url());
        List<String> jobArgs = Stream.concat(tableArgs.stream(), Stream.of(
                        "--commit-user", COMMIT_USER,
                        "--count", Long.toString(COUNT),
                        "--rate", Double.toString(RATE),
                        "--parallelism", "2"))
                .toList();

        // No native library anywhere: a JNI load in any process would fail on this path (the
        // connector's jar may bundle the library; the job's runtime is CHICORY).
        List<String> jvmOptions =
                List.of("-Dsinkcoord.native.library=" + dir.resolve("no-native-library"));
        try (StandaloneCluster cluster = new StandaloneCluster(
                dir, classpath(), Path.of(System.getProperty("cluster.log4j")), jvmOptions,
                moto.env())) {
            try {
                run(cluster, table, jobArgs);
            } catch (Throwable t) {
                System.out.println(cluster.tails(60));
                throw t;
            }
        }
    }

    private void run(StandaloneCluster cluster, TableLocation table, List<String> jobArgs) throws Exception {
        FlinkRest rest = new FlinkRest(cluster.restPort);
        String first = JobID.generate().toHexString();
        String resumed = JobID.generate().toHexString();

        // 1. the cluster and the job (the TaskManagers retry until the JobManager is up)
        StandaloneCluster.Node tm1 = cluster.startTaskManager("taskmanager-1");
        StandaloneCluster.Node tm2 = cluster.startTaskManager("taskmanager-2");
        StandaloneCluster.Node jm1 = cluster.startJobManager(
                "jobmanager-1", NumbersJob.class.getName(), first, null, jobArgs);
        await("two TaskManagers registered", 90, () -> rest.taskManagers().size() == 2);
        await("job " + first + " running", 90, () -> rest.allTasksRunning(first));
        await("a first checkpoint", 60, () -> rest.completedCheckpoints(first) >= 1);
        log("job " + first + " running, checkpoints completing");

        // 2. a savepoint through the REST API: the sink tags its snapshot savepoint-<id>
        long savepointId = savepoint(rest, cluster, first);
        // Flink 2 does not notify an intermediate savepoint's completion: its entries are
        // committed, and the snapshot tagged, with the next checkpoint's completion
        String tag = "savepoint-" + savepointId;
        await("the tag " + tag + " in the table", 60, () -> tagNames(table).contains(tag));
        log("the table has the tag " + tag);

        // 3. kill -9 a TaskManager that runs tasks; Flink restarts them, the TaskManager comes back
        String victimId = busyTaskManagers(rest).get(0);
        StandaloneCluster.Node victim = victimId.equals(tm1.name()) ? tm1 : tm2;
        int failuresBefore = rest.failures(first);
        victim.kill();
        log("killed " + victim.name() + " (kill -9)");
        cluster.startTaskManager(victim.name() + "-restarted");
        await("the job's failover after the TaskManager's death", 60,
                () -> rest.failures(first) > failuresBefore);
        await("the job's tasks running again", 90, () -> rest.allTasksRunning(first));
        long afterFailover = rest.completedCheckpoints(first);
        await("a checkpoint after the failover", 60,
                () -> rest.completedCheckpoints(first) > afterFailover);
        assertEquals(Optional.of("RUNNING"), rest.jobState(first),
                "the input ended before the JobManager's kill: lower RATE");
        int failuresFirst = rest.failures(first);
        log("tasks restarted after " + failuresFirst + " failure(s), running on "
                + busyTaskManagers(rest) + ", checkpoints completing");

        // 4. kill -9 the JobManager; a new one resumes the job from its latest retained checkpoint
        await("TaskManagers registered again", 60, () -> rest.taskManagers().size() == 2);
        jm1.kill();
        Path latest = latestRetainedCheckpoint(cluster.checkpoints.resolve(first));
        log("killed jobmanager-1 (kill -9); resuming from " + latest);
        cluster.startJobManager("jobmanager-2", NumbersJob.class.getName(), resumed, latest, jobArgs);
        await("the TaskManagers registered with the new JobManager", 90,
                () -> rest.taskManagers().size() == 2);
        await("job " + resumed + " running", 90, () -> rest.allTasksRunning(resumed));
        String restored = awaitPresent("the resumed job's restored checkpoint", 30,
                () -> rest.checkpoints(resumed)
                        .map(c -> c.path("latest").path("restored").path("external_path").asText())
                        .filter(path -> !path.isEmpty()));
        assertTrue(restored.contains(latest.getFileName().toString()),
                "the resumed job restored " + restored + ", not " + latest);
        log("job " + resumed + " resumed from " + restored);

        // 5. the end of input, the final commit; then the table
        await("job " + resumed + " finished", 150, () -> {
            String state = rest.jobState(resumed).orElse("");
            assertTrue(!state.equals("FAILED") && !state.equals("CANCELED"), "job " + state);
            return state.equals("FINISHED");
        });
        int failuresResumed = rest.failures(resumed);
        log("job " + resumed + " finished");

        checkTable(table, savepointId, tag, failuresFirst + " (first job) + " + failuresResumed
                + " (resumed job), resumed from " + latest.getFileName());
    }

    /**
     * Triggers a savepoint of job {@code jobId} through the REST API, as {@code flink savepoint}
     * does, and returns its checkpoint id once it completed.
     */
    private long savepoint(FlinkRest rest, StandaloneCluster cluster, String jobId) throws Exception {
        String body = "{\"target-directory\": \"" + cluster.savepoints.toUri() + "\","
                + " \"cancel-job\": false}";
        String trigger = rest.post("/jobs/" + jobId + "/savepoints", body)
                .orElseThrow(() -> new AssertionError("the savepoint trigger was refused"))
                .path("request-id").asText();
        JsonNode operation = awaitPresent("the savepoint", 60,
                () -> rest.get("/jobs/" + jobId + "/savepoints/" + trigger)
                        .filter(s -> s.path("status").path("id").asText().equals("COMPLETED"))
                        .map(s -> s.path("operation")));
        assertTrue(operation.has("location"), "the savepoint failed: " + operation);
        String location = operation.path("location").asText();
        long id = awaitPresent("the savepoint in the checkpoint statistics", 30,
                () -> checkpointId(rest, jobId, location));
        log("savepoint " + id + " at " + location);
        return id;
    }

    /**
     * The table after the job: every id exactly once, the final (END) snapshot last, the tag
     * {@code tag} on the snapshot of savepoint {@code savepointId}; prints the summary.
     */
    private void checkTable(TableLocation table, long savepointId, String tag, String failures)
            throws IOException {
        try (TableReader reader = openTable(table)) {
            List<Snapshot> snapshots = reader.snapshots();
            List<Tag> tags = reader.tags();
            assertExactlyOnce(reader, COUNT);
            assertEquals(Entry.END, snapshots.get(snapshots.size() - 1).identifier(),
                    "the last snapshot is the final commit");
            Tag savepointTag = tags.stream().filter(t -> t.name().equals(tag)).findFirst()
                    .orElseThrow(() -> new AssertionError("no tag " + tag + " among " + tags));
            assertTrue(snapshots.stream().anyMatch(s -> s.id() == savepointTag.snapshotId()
                            && s.identifier() == savepointId),
                    savepointTag + " points at the savepoint's snapshot");
            System.out.printf(
                    "standalone cluster: %d records exactly once in %s, %d snapshots (last END), tags %s,"
                            + " failures seen %s, %.0f s%n",
                    COUNT, table.url(), snapshots.size(), tags.stream().map(Tag::name).toList(), failures,
                    seconds());
        }
    }

    /** The id of the job's checkpoint (or savepoint) stored at {@code path}, if listed (yet). */
    private static Optional<Long> checkpointId(FlinkRest rest, String jobId, String path)
            throws InterruptedException {
        JsonNode history = rest.checkpoints(jobId).map(c -> c.path("history")).orElse(null);
        for (JsonNode checkpoint : history == null ? List.<JsonNode>of() : history) {
            if (path.equals(checkpoint.path("external_path").asText())) {
                return Optional.of(checkpoint.path("id").asLong());
            }
        }
        return Optional.empty();
    }

    /** The table, read on the pure-Java runtime (S3Storage) as the job writes it. */
    private static TableReader openTable(TableLocation table) {
        return TableReader.open(table, ComponentRuntime.CHICORY);
    }

    /** The names of the table's tags now (read while the job writes it). */
    private static List<String> tagNames(TableLocation table) {
        try (TableReader reader = openTable(table)) {
            return reader.tags().stream().map(Tag::name).toList();
        } catch (IllegalArgumentException noTableYet) {
            return List.of(); // nothing committed yet: a reader never creates a table
        }
    }

    /** The ids of the TaskManagers with an occupied slot (those that run tasks of the job). */
    private static List<String> busyTaskManagers(FlinkRest rest) throws InterruptedException {
        List<String> busy = new ArrayList<>();
        for (JsonNode tm : rest.taskManagers()) {
            if (tm.path("freeSlots").asInt() < tm.path("slotsNumber").asInt()) {
                busy.add(tm.path("id").asText());
            }
        }
        assertTrue(!busy.isEmpty(), "no TaskManager runs tasks: " + rest.taskManagers());
        return busy;
    }

    /**
     * The newest {@code chk-N} directory with a {@code _metadata} file: a checkpoint whose
     * metadata was written (atomically, as a file renamed into place) is complete, whether or
     * not the JobManager lived to tell the tasks.
     */
    static Path latestRetainedCheckpoint(Path jobCheckpoints) throws IOException {
        try (Stream<Path> dirs = Files.list(jobCheckpoints)) {
            return dirs.filter(d -> d.getFileName().toString().startsWith("chk-"))
                    .filter(d -> Files.exists(d.resolve("_metadata")))
                    .max(Comparator.comparingLong(
                            d -> Long.parseLong(d.getFileName().toString().substring(4))))
                    .orElseThrow(() ->
                            new AssertionError("no retained checkpoint in " + jobCheckpoints));
        }
    }

    /** Every id of {@code 0 .. n-1} committed exactly once, and nothing else. */
    private static void assertExactlyOnce(TableReader reader, long n) throws IOException {
        int[] counts = new int[Math.toIntExact(n)];
        for (byte[] record : reader.records()) {
            long id = Long.parseLong(new String(record, StandardCharsets.UTF_8));
            assertTrue(id >= 0 && id < n, "record " + id + " was never produced");
            counts[(int) id]++;
        }
        StringBuilder wrong = new StringBuilder();
        for (int i = 0; i < counts.length && wrong.length() < 400; i++) {
            if (counts[i] != 1) {
                wrong.append(' ').append(i).append('x').append(counts[i]);
            }
        }
        assertEquals("", wrong.toString(), "ids not committed exactly once (id x times)");
    }

    /** What a wait polls: a value once there is one. */
    @FunctionalInterface
    interface Probe<T> {
        Optional<T> poll() throws Exception;
    }

    /** A condition a wait polls. */
    @FunctionalInterface
    interface Condition {
        boolean holds() throws Exception;
    }

    /**
     * Polls {@code probe} every 250 ms for {@code seconds} at most and returns its first value,
     * else fails naming {@code what}.
     */
    private static <T> T awaitPresent(String what, long seconds, Probe<T> probe) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        for (Optional<T> value = probe.poll(); ; value = probe.poll()) {
            if (value.isPresent()) {
                return value.get();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + seconds + " s waiting for " + what);
            }
            Thread.sleep(250);
        }
    }

    /** Waits until {@code condition} holds, as {@link #awaitPresent}. */
    private static void await(String what, long seconds, Condition condition) throws Exception {
        awaitPresent(what, seconds, () -> condition.holds() ? Optional.of(true) : Optional.empty());
    }

    private void log(String step) {
        System.out.printf("[%5.1f s] %s%n", seconds(), step);
    }

    private double seconds() {
        return (System.nanoTime() - start) / 1e9;
    }

    /** The module's classes and its runtime dependencies (target/cluster.classpath). */
    private static String classpath() throws IOException {
        String deps = Files.readString(Path.of(System.getProperty("cluster.classpath.file"))).trim();
        return System.getProperty("cluster.classes") + File.pathSeparator + deps;
    }

    private static void deleteTree(Path dir) throws IOException {
        if (Files.exists(dir)) {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }
}
