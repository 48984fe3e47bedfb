package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.TestSupport.check;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * A process crash: the job runs in a child JVM that is killed with SIGKILL
 * at a random moment, then restarted from its last retained checkpoint
 * ({@code execution.state-recovery.path}), several times in a row, until it
 * finishes; every record must still be committed exactly once.
 */
final class CrashTest {
    private CrashTest() {}

    static final long N = 60_000;
    static final int KILLS = 3;

    static void killAndRestart() throws Exception {
        Path table = TestSupport.tempDir("crash");
        Path checkpoints = TestSupport.tempDir("crash-checkpoints");
        Path logs = TestSupport.tempDir("crash-logs");
        Random random = new Random();
        try {
            String restoreFrom = "";
            int kills = 0;
            for (int run = 0; run < 12; run++) {
                Optional<Path> before = latestCheckpoint(checkpoints);
                Process child = start(table, checkpoints, restoreFrom, logs.resolve("run-" + run
                        + ".log"));
                boolean kill = kills < KILLS;
                boolean exited;
                if (kill) {
                    // Kill at a random moment after this run completed a new
                    // checkpoint (start-up time varies a lot on a loaded machine).
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
                    while (!(exited = !child.isAlive())
                            && latestCheckpoint(checkpoints).equals(before)
                            && System.nanoTime() < deadline) {
                        Thread.sleep(50);
                    }
                    exited = child.waitFor(random.nextInt(1_500), TimeUnit.MILLISECONDS);
                } else {
                    exited = child.waitFor(300, TimeUnit.SECONDS);
                }
                if (exited) {
                    check(child.exitValue() == 0,
                            "run " + run + " failed with " + child.exitValue() + "; see " + logs);
                    break; // finished (possibly before the planned kill)
                }
                check(kill, "run " + run + " did not finish in time; see " + logs);
                child.destroyForcibly(); // SIGKILL on Linux
                child.waitFor();
                kills++;
                Optional<Path> latest = latestCheckpoint(checkpoints);
                if (latest.isPresent()) {
                    restoreFrom = latest.get().toString();
                }
                System.out.println("     killed run " + run + "; restoring from "
                        + (restoreFrom.isEmpty() ? "nothing" : checkpoints.relativize(Path
                                .of(restoreFrom))));
            }
            check(kills >= 2, "only " + kills + " kills");
            System.out.println("     " + kills + " kills; restarted from retained checkpoints");
            TestSupport.assertExactlyOnce(table, N);
            TestSupport.assertEndSnapshot(table);
        } finally {
            TestSupport.deleteTree(table);
            TestSupport.deleteTree(checkpoints);
            TestSupport.deleteTree(logs);
        }
    }

    private static Process start(Path table, Path checkpoints, String restoreFrom, Path log)
            throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx512m");
        // The killed job's scratch files (Flink's io.tmp.dirs default) land in
        // the test JVM's java.io.tmpdir, not necessarily /tmp.
        command.add("-Djava.io.tmpdir=" + System.getProperty("java.io.tmpdir"));
        command.add("-XX:-UsePerfData");
        command.add("-Dsinkcoord.native.library="
                + System.getProperty("sinkcoord.native.library", ""));
        // the child job runs its component where the parent's tests do (JNI or Chicory)
        command.add("-Dsinkcoord.runtime=" + System.getProperty("sinkcoord.runtime", "jni"));
        String log4j = System.getProperty("log4j2.configurationFile");
        if (log4j != null) {
            command.add("-Dlog4j2.configurationFile=" + log4j);
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(CrashJob.class.getName());
        command.add(table.toString());
        command.add(checkpoints.toString());
        command.add(restoreFrom);
        return new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    /** The newest complete retained checkpoint (its {@code _metadata} exists) of any run. */
    static Optional<Path> latestCheckpoint(Path checkpoints) throws IOException {
        try (Stream<Path> paths = Files.walk(checkpoints, 3)) {
            return paths.filter(p -> p.getFileName().toString().startsWith("chk-"))
                    .filter(p -> Files.isRegularFile(p.resolve("_metadata")))
                    .filter(p -> p.resolve("_metadata").toFile().length() > 0)
                    .max((a, b) -> Long.compare(modified(a), modified(b)));
        }
    }

    private static long modified(Path p) {
        return new File(p.toFile(), "_metadata").lastModified() * 1_000_000L
                + Long.parseLong(p.getFileName().toString().substring(4));
    }

    /** The child JVM's job: checkpoints retained on a local directory. */
    public static final class CrashJob {
        public static void main(String[] args) throws Exception {
            String table = args[0];
            String checkpoints = args[1];
            String restoreFrom = args.length > 2 ? args[2] : "";
            Configuration conf = new Configuration();
            conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
            conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                    Path.of(checkpoints).toUri().toString());
            conf.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                    org.apache.flink.configuration.ExternalizedCheckpointRetention
                            .RETAIN_ON_CANCELLATION);
            conf.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 3);
            if (!restoreFrom.isEmpty()) {
                conf.set(StateRecoveryOptions.SAVEPOINT_PATH, restoreFrom);
            }
            StreamExecutionEnvironment env = TestSupport.env(4, 10, conf);
            env.enableCheckpointing(100, CheckpointingMode.EXACTLY_ONCE);
            EndToEndTests.pipeline(env, N, SinkOptions.of(table, "crash-job"), null, 2);
            env.execute("crash-job");
        }
    }
}
