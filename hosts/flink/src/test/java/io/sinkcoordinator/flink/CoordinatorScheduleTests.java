package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.TestSupport.check;

import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Snapshot;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;
import org.apache.flink.api.common.JobID;
import org.apache.flink.metrics.groups.OperatorCoordinatorMetricGroup;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.messages.Acknowledge;
import org.apache.flink.runtime.operators.coordination.CoordinatorStore;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * SinkCoordinator driven call by call, as Flink's JobManager would, with a fake context and
 * fake subtask gateways: the schedules of the held-back storageFaults loss (FinalCommitTests has
 * the whole job), deterministic and without a cluster. The coordinator runs its calls on its
 * loop thread; a test waits for the loop ({@link Job#checkpoint}, {@link Job#sync}) before it
 * looks at what the calls did.
 */
final class CoordinatorScheduleTests {
    private CoordinatorScheduleTests() {}

    /** The generous bound of every wait for the coordinator's loop. */
    static final long WAIT_SECONDS = 60;

    /** The context's failJob calls (made on the loop), and nothing else of a JobManager. */
    static final class FakeContext implements OperatorCoordinator.Context {
        final int parallelism;
        final List<Throwable> failures = new CopyOnWriteArrayList<>();

        FakeContext(int parallelism) {
            this.parallelism = parallelism;
        }

        @Override
        public JobID getJobID() {
            return new JobID();
        }

        @Override
        public OperatorID getOperatorId() {
            return new OperatorID();
        }

        @Override
        public OperatorCoordinatorMetricGroup metricGroup() {
            return null; // SinkMetrics registers nothing on a null group
        }

        @Override
        public void failJob(Throwable cause) {
            failures.add(cause);
        }

        @Override
        public int currentParallelism() {
            return parallelism;
        }

        @Override
        public ClassLoader getUserCodeClassloader() {
            return CoordinatorScheduleTests.class.getClassLoader();
        }

        @Override
        public CoordinatorStore getCoordinatorStore() {
            return null;
        }

        @Override
        public boolean isConcurrentExecutionAttemptsSupported() {
            return false;
        }

        @Override
        public CheckpointCoordinator getCheckpointCoordinator() {
            return null; // FinishedSubtasks: no store, no finished subtasks
        }
    }

    /** What the coordinator sent one writer subtask (from its loop). */
    static class FakeGateway implements OperatorCoordinator.SubtaskGateway {
        final int subtask;
        final List<OperatorEvent> sent = new CopyOnWriteArrayList<>();

        FakeGateway(int subtask) {
            this.subtask = subtask;
        }

        @Override
        public CompletableFuture<Acknowledge> sendEvent(OperatorEvent event) {
            record(event);
            return CompletableFuture.completedFuture(Acknowledge.get());
        }

        /** Keeps {@code event} (a subclass may keep less). */
        void record(OperatorEvent event) {
            sent.add(event);
        }

        @Override
        public ExecutionAttemptID getExecution() {
            return ExecutionAttemptID.randomId();
        }

        @Override
        public int getSubtask() {
            return subtask;
        }

        boolean gotEndCommitted() {
            return sent.stream().anyMatch(e -> e instanceof Events.CommittedUpTo
                    && ((Events.CommittedUpTo) e).upTo() == Entry.END);
        }

        boolean gotRelease() {
            return sent.stream().anyMatch(e -> e instanceof Events.Released);
        }

        boolean gotCommitted(long upTo) {
            return sent.stream().anyMatch(e -> e instanceof Events.CommittedUpTo
                    && ((Events.CommittedUpTo) e).upTo() == upTo);
        }
    }

    /** A coordinator of P writers on a fresh table, started, with every gateway ready. */
    static final class Job implements AutoCloseable {
        final Path table;
        final String user;
        final FakeContext context;
        final SinkCoordinator coordinator;
        final FakeGateway[] gateways;
        private final CoordinatorThreadTests.Gate gate;

        Job(String name, int parallelism, boolean outage) throws Exception {
            // an outage: this commit user's first instance fails every write to the table log
            this(name, parallelism, o -> outage ? o.withStorageFaultDrill(0, 0) : o, null,
                    SinkCoordinator.CLOSE_WAIT);
        }

        /**
         * The same with the options {@code tweak} makes of the defaults; {@code gate} (may be
         * null) sees every component call, on the loop.
         */
        Job(String name, int parallelism, UnaryOperator<SinkOptions> tweak,
                CoordinatorThreadTests.Gate gate, Duration closeWait) throws Exception {
            table = TestSupport.tempDir(name);
            user = EndToEndTests.user(table);
            SinkOptions options = tweak.apply(SinkOptions.of(table.toString(), user));
            context = new FakeContext(parallelism);
            coordinator = new SinkCoordinator(context, options, closeWait);
            this.gate = gate;
            if (gate != null) {
                coordinator.beforeCalls(gate);
            }
            coordinator.start();
            gateways = new FakeGateway[parallelism];
            for (int s = 0; s < parallelism; s++) {
                gateways[s] = new FakeGateway(s);
                coordinator.executionAttemptReady(s, 0, gateways[s]);
            }
        }

        void report(int subtask, long checkpoint, String... files) {
            report(subtask, checkpoint, false, files);
        }

        /** A report of checkpoint {@code checkpoint}, a savepoint's if {@code savepoint}. */
        void report(int subtask, long checkpoint, boolean savepoint, String... files) {
            byte[][] committables = new byte[files.length][];
            for (int i = 0; i < files.length; i++) {
                committables[i] = ("data/" + files[i]).getBytes(StandardCharsets.UTF_8);
            }
            coordinator.handleEventFromOperator(subtask, 0, new Events.Committable(
                    new Entry(checkpoint, committables, false, 0, savepoint)));
        }

        void end(int subtask, String... files) {
            report(subtask, Entry.END, files);
        }

        /** The coordinator's checkpoint, answered from its loop; null if it declined. */
        byte[] checkpoint(long id) throws Exception {
            CompletableFuture<byte[]> result = new CompletableFuture<>();
            coordinator.checkpointCoordinator(id, result);
            return answer(id, result);
        }

        /** The answer to checkpoint {@code id}: its state bytes, or null if it declined. */
        static byte[] answer(long id, CompletableFuture<byte[]> result) throws Exception {
            try {
                return result.get(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (ExecutionException declined) {
                return null;
            } catch (TimeoutException e) {
                throw new AssertionError("checkpoint " + id + " not answered in "
                        + WAIT_SECONDS + " s", e);
            }
        }

        /** Flink's completion notice, and the wait until the loop processed it. */
        void complete(long id) throws Exception {
            coordinator.notifyCheckpointComplete(id);
            sync();
        }

        /** Waits until the loop ran every call made so far. */
        void sync() throws Exception {
            coordinator.idle().get(WAIT_SECONDS, TimeUnit.SECONDS);
        }

        /** The table's snapshots now (none before the component created its log). */
        List<Snapshot> snapshots() {
            if (!Files.isDirectory(SinkOptions.logDir(table))) {
                return List.of();
            }
            try (TableReader reader = TableReader.open(table.toString())) {
                return reader.snapshots();
            }
        }

        /** Closes the coordinator; its loop thread must be gone then (close joins it). */
        @Override
        public void close() {
            if (gate != null) {
                gate.open(); // a test that failed with its gate shut must not wait here
            }
            coordinator.close();
            List<Thread> left = CoordinatorThreadTests.loopThreads(user);
            TestSupport.deleteTree(table);
            check(left.isEmpty(), "loop threads left after close: " + left);
        }
    }

    /**
     * Once an instance has asked Flink to fail over, it drops the events it gets and makes no
     * call; a checkpoint it answered could complete with a state that lacks them (an END entry a
     * finished writer no longer holds). It declines instead.
     */
    static void declinesWhileFailing() throws Exception {
        try (Job job = new Job("declines-failing", 2, true)) {
            job.report(0, 1, "a");
            job.report(1, 1, "b");
            check(job.checkpoint(1) != null, "a healthy instance answers its checkpoint");
            job.complete(1); // the outage: its attempts run out
            check(job.context.failures.size() == 1, "the outage did not fail the job: "
                    + job.context.failures);
            job.end(0, "c");
            job.end(1, "d");
            check(job.checkpoint(2) == null,
                    "a failing instance answered checkpoint 2 (its state lacks the END entries"
                            + " it dropped)");
        }
    }

    /**
     * The schedule of the loss (storageFaults, FinalCommitTests): both writers ended, their final
     * checkpoint completes, and the final commit fails. Flink has already let the tasks go; the
     * coordinator must not release them, so the job cannot be FINISHED before its failover.
     */
    static void failedFinalCommitReleasesNobody() throws Exception {
        try (Job job = new Job("final-fails", 2, true)) {
            job.end(0, "a");
            job.end(1, "b");
            job.report(0, 1);
            job.report(1, 1);
            check(job.checkpoint(1) != null, "checkpoint 1 declined");
            job.complete(1);
            check(job.context.failures.size() == 1, "the final commit's outage did not fail the job");
            for (FakeGateway g : job.gateways) {
                check(!g.gotRelease() && !g.gotEndCommitted(),
                        "subtask " + g.subtask + " was let go after a failed final commit: "
                                + g.sent);
            }
        }
    }

    /**
     * A writer that ends early is released by the completion of its final checkpoint (it then
     * finishes, and its gateway is dropped: an event reaching a FINISHED task fails the job);
     * the last one only by committed-up-to END, once the END snapshot is in the table.
     */
    static void releasesEndedWriters() throws Exception {
        try (Job job = new Job("release", 2, false)) {
            job.report(0, 1, "a");
            job.report(1, 1, "b");
            job.checkpoint(1);
            job.complete(1);
            job.end(0, "c");
            job.report(0, 2); // subtask 0's final checkpoint
            job.report(1, 2, "d");
            job.checkpoint(2);
            check(!job.gateways[0].gotRelease(), "released before its final checkpoint completed");
            job.complete(2);
            check(job.gateways[0].gotRelease(), "subtask 0 not released: " + job.gateways[0].sent);
            check(!job.gateways[1].gotRelease(), "subtask 1 released before its end");
            int after = job.gateways[0].sent.size();
            job.end(1, "e");
            job.report(1, 3);
            job.checkpoint(3);
            // Flink has told the task of checkpoint 3 already; it must wait for this notice
            check(!job.gateways[1].gotEndCommitted() && !job.gateways[1].gotRelease(),
                    "the last writer let go before the final completion: " + job.gateways[1].sent);
            job.complete(3); // the final commit
            check(job.gateways[1].gotEndCommitted(), "subtask 1 not told END: " + job.gateways[1].sent);
            check(!job.gateways[1].gotRelease(), "the last writer waits for END, not a release");
            check(job.gateways[0].sent.size() == after,
                    "an event reached released subtask 0: " + job.gateways[0].sent);
            check(job.context.failures.isEmpty(), "failed: " + job.context.failures);
            try (TableReader reader = TableReader.open(job.table.toString())) {
                check(reader.snapshots().get(reader.snapshots().size() - 1).identifier() == Entry.END,
                        "no END snapshot: " + reader.snapshots());
            }
        }
    }

    /**
     * Without checkpoints (batch) no completion follows the end, so a writer waits in endInput
     * until the coordinator processed its END event (it runs events on its loop, after Flink's
     * call returned): a Released event for a writer that ends early, committed-up-to END for
     * the last one, whose END made the final commit.
     */
    static void batchReleasesEachEnd() throws Exception {
        try (Job job = new Job("batch-release", 2,
                o -> o.withConfig(o.config().withCheckpointing(false)), null,
                SinkCoordinator.CLOSE_WAIT)) {
            job.end(0, "a");
            job.sync();
            check(job.gateways[0].gotRelease(), "subtask 0 not released: " + job.gateways[0].sent);
            check(job.snapshots().isEmpty(), "committed before the last END: " + job.snapshots());
            job.end(1, "b");
            job.sync();
            check(job.gateways[1].gotEndCommitted(), "subtask 1 not told END: "
                    + job.gateways[1].sent);
            check(!job.gateways[0].gotEndCommitted(),
                    "an event reached released subtask 0: " + job.gateways[0].sent);
            List<Snapshot> snapshots = job.snapshots();
            check(snapshots.size() == 1 && snapshots.get(0).identifier() == Entry.END,
                    "batch commits once, END: " + snapshots);
            check(job.context.failures.isEmpty(), "failed: " + job.context.failures);
        }
    }

    /**
     * A stop-with-savepoint without drain: the writers' tasks stop once the savepoint completed
     * and wait until the coordinator processed its completion (SavepointProcessed, sent from its
     * loop after the commit), so the job cannot end before the savepoint's commit; an event that
     * comes after the completion was processed is acknowledged once processed (a commit that
     * waited for it is made by then), so the last writer's task stops after the commit.
     */
    static void acknowledgesSavepoints() throws Exception {
        try (Job job = new Job("savepoint-ack", 2, false)) {
            job.report(0, 1, true, "a");
            check(job.checkpoint(1) != null, "savepoint 1 declined");
            job.complete(1); // subtask 1's event for it is late
            check(job.gateways[0].sent.stream().anyMatch(
                            e -> e instanceof Events.SavepointProcessed
                                    && ((Events.SavepointProcessed) e).completed() == 1),
                    "subtask 0 not told: " + job.gateways[0].sent);
            // the commit waits for the late event (SEMANTICS 10 item 1), subtask 1's task too
            check(job.snapshots().isEmpty(), "committed without subtask 1: " + job.snapshots());
            check(job.gateways[1].sent.stream().noneMatch(e -> e instanceof Events.SavepointProcessed),
                    "subtask 1 told before its event: " + job.gateways[1].sent);
            job.report(1, 1, true, "b"); // makes the commit, then is acknowledged
            job.sync();
            check(job.snapshots().size() == 1, "savepoint 1 not committed: " + job.snapshots());
            check(job.gateways[1].sent.stream().anyMatch(
                            e -> e instanceof Events.SavepointProcessed
                                    && ((Events.SavepointProcessed) e).completed() >= 1),
                    "the late subtask 1 not told: " + job.gateways[1].sent);
            check(job.context.failures.isEmpty(), "failed: " + job.context.failures);
        }
    }
}
