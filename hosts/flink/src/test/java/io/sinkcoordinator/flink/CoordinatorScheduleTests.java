package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.TestSupport.check;

import io.sinkcoordinator.flink.component.Entry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
 * the whole job), deterministic and without a cluster.
 */
final class CoordinatorScheduleTests {
    private CoordinatorScheduleTests() {}

    /** The context's failJob calls, and nothing else of a JobManager. */
    static final class FakeContext implements OperatorCoordinator.Context {
        final int parallelism;
        final List<Throwable> failures = new ArrayList<>();

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

    /** What the coordinator sent one writer subtask. */
    static final class FakeGateway implements OperatorCoordinator.SubtaskGateway {
        final int subtask;
        final List<OperatorEvent> sent = new ArrayList<>();

        FakeGateway(int subtask) {
            this.subtask = subtask;
        }

        @Override
        public CompletableFuture<Acknowledge> sendEvent(OperatorEvent event) {
            sent.add(event);
            return CompletableFuture.completedFuture(Acknowledge.get());
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
                    && ((Events.CommittedUpTo) e).upTo == Entry.END);
        }

        boolean gotRelease() {
            return sent.stream().anyMatch(e -> e instanceof Events.Released);
        }
    }

    /** A coordinator of P writers on a fresh table, started, with every gateway ready. */
    static final class Job implements AutoCloseable {
        final Path table;
        final FakeContext context;
        final SinkCoordinator coordinator;
        final FakeGateway[] gateways;

        Job(String name, int parallelism, boolean outage) throws Exception {
            table = TestSupport.tempDir(name);
            SinkOptions options = SinkOptions.of(table.toString(), EndToEndTests.user(table));
            if (outage) {
                // this commit user's first instance fails every write to the table log
                options = options.withStorageFaultDrill(0, 0);
            }
            context = new FakeContext(parallelism);
            coordinator = new SinkCoordinator(context, options);
            coordinator.start();
            gateways = new FakeGateway[parallelism];
            for (int s = 0; s < parallelism; s++) {
                gateways[s] = new FakeGateway(s);
                coordinator.executionAttemptReady(s, 0, gateways[s]);
            }
        }

        void report(int subtask, long checkpoint, String... files) {
            byte[][] committables = new byte[files.length][];
            for (int i = 0; i < files.length; i++) {
                committables[i] = ("data/" + files[i]).getBytes(StandardCharsets.UTF_8);
            }
            coordinator.handleEventFromOperator(subtask, 0,
                    new Events.Committable(new Entry(checkpoint, committables, false, 0, false)));
        }

        void end(int subtask, String... files) {
            report(subtask, Entry.END, files);
        }

        /** The coordinator's checkpoint; its state bytes, or null if it declined. */
        byte[] checkpoint(long id) {
            CompletableFuture<byte[]> result = new CompletableFuture<>();
            coordinator.checkpointCoordinator(id, result);
            check(result.isDone(), "checkpoint " + id + " not answered within the call");
            return result.isCompletedExceptionally() ? null : result.join();
        }

        @Override
        public void close() {
            coordinator.close();
            TestSupport.deleteTree(table);
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
            job.coordinator.notifyCheckpointComplete(1); // the outage: its attempts run out
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
            job.coordinator.notifyCheckpointComplete(1);
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
            job.coordinator.notifyCheckpointComplete(1);
            job.end(0, "c");
            job.report(0, 2); // subtask 0's final checkpoint
            job.report(1, 2, "d");
            job.checkpoint(2);
            check(!job.gateways[0].gotRelease(), "released before its final checkpoint completed");
            job.coordinator.notifyCheckpointComplete(2);
            check(job.gateways[0].gotRelease(), "subtask 0 not released: " + job.gateways[0].sent);
            check(!job.gateways[1].gotRelease(), "subtask 1 released before its end");
            int after = job.gateways[0].sent.size();
            job.end(1, "e");
            job.report(1, 3);
            job.checkpoint(3);
            // Flink has told the task of checkpoint 3 already; it must wait for this notice
            check(!job.gateways[1].gotEndCommitted() && !job.gateways[1].gotRelease(),
                    "the last writer let go before the final completion: " + job.gateways[1].sent);
            job.coordinator.notifyCheckpointComplete(3); // the final commit
            check(job.gateways[1].gotEndCommitted(), "subtask 1 not told END: " + job.gateways[1].sent);
            check(!job.gateways[1].gotRelease(), "the last writer waits for END, not a release");
            check(job.gateways[0].sent.size() == after,
                    "an event reached released subtask 0: " + job.gateways[0].sent);
            check(job.context.failures.isEmpty(), "failed: " + job.context.failures);
            try (TableReader reader = TableReader.open(job.table.toString())) {
                check(reader.snapshots().get(reader.snapshots().size() - 1).identifier == Entry.END,
                        "no END snapshot: " + reader.snapshots());
            }
        }
    }
}
