package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.CoordinatorScheduleTests.WAIT_SECONDS;
import static io.sinkcoordinator.flink.TestSupport.check;

import io.sinkcoordinator.flink.CoordinatorScheduleTests.FakeGateway;
import io.sinkcoordinator.flink.CoordinatorScheduleTests.Job;
import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Snapshot;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * SinkCoordinator's threading (CoordinatorLoop), driven call by call with the fake context of
 * CoordinatorScheduleTests: Flink's callbacks return while a component call waits (as on a slow
 * storage), the calls keep Flink's order, and close runs the queued ones (a final commit) before
 * it closes the component, within its bound. No timed assertion: every wait is on a latch or a
 * future, bounded generously only so that a broken build fails instead of hanging.
 */
final class CoordinatorThreadTests {
    private CoordinatorThreadTests() {}

    /**
     * Holds one component call on the loop until opened, as a storage that hangs inside that
     * call would: it sees every call (SinkCoordinator#beforeCalls), before the component does,
     * and shuts on the first one named {@code call}. A call on the thread that built the gate
     * (the test's, standing for Flink's main thread) fails at once.
     */
    static final class Gate implements Consumer<String> {
        private final String call;
        private final Thread caller = Thread.currentThread();
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch open = new CountDownLatch(1);
        private final AtomicBoolean used = new AtomicBoolean();
        private volatile String thread;

        Gate(String call) {
            this.call = call;
        }

        @Override
        public void accept(String what) {
            if (Thread.currentThread() == caller) {
                throw new AssertionError("component call (" + what + ") on Flink's thread");
            }
            if (!what.equals(call) || !used.compareAndSet(false, true)) {
                return;
            }
            thread = Thread.currentThread().getName();
            entered.countDown();
            try {
                if (!open.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                    throw new AssertionError("the gate at " + call + " was never opened");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /** Waits until the loop is held in the call (it is in flight). */
        void awaitHeld() throws InterruptedException {
            check(entered.await(WAIT_SECONDS, TimeUnit.SECONDS),
                    "the loop never made the call " + call);
        }

        void open() {
            open.countDown();
        }

        String thread() {
            return thread;
        }
    }

    /** The live loop threads of {@code user}'s coordinators. */
    static List<Thread> loopThreads(String user) {
        String name = SinkCoordinator.threadName(user);
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().equals(name))
                .collect(Collectors.toList());
    }

    /**
     * The main thread never waits on storage: while the commit of checkpoint 1 hangs on the
     * loop, the completion notice that asked for it has returned, and so do the next events
     * and the next checkpoint (whose future stays open: it is answered after the commit, in
     * Flink's order). Opening the gate lets the commit land, then checkpoint 2 be answered.
     */
    static void callbacksReturnWhileACommitHangs() throws Exception {
        Gate gate = new Gate("completion of checkpoint 1");
        try (Job job = new Job("commit-hangs", 2, o -> o, gate, SinkCoordinator.CLOSE_WAIT)) {
            holdTheCommitOfCheckpoint1(job, gate);
            check(gate.thread().equals(SinkCoordinator.threadName(job.user)),
                    "the commit runs on " + gate.thread());
            job.report(0, 2, "c");
            job.report(1, 2, "d");
            CompletableFuture<byte[]> second = new CompletableFuture<>();
            job.coordinator.checkpointCoordinator(2, second);
            check(!second.isDone(), "checkpoint 2 answered before the commit queued before it");
            check(job.snapshots().isEmpty(), "committed while the call was held: "
                    + job.snapshots());
            for (FakeGateway g : job.gateways) {
                check(g.sent.isEmpty(), "subtask " + g.subtask + " told " + g.sent
                        + " before the commit");
            }
            gate.open();
            check(Job.answer(2, second) != null, "checkpoint 2 declined");
            List<Snapshot> snapshots = job.snapshots();
            check(snapshots.size() == 1 && snapshots.get(0).identifier() == 1,
                    "checkpoint 1 not committed before checkpoint 2 was answered: " + snapshots);
            for (FakeGateway g : job.gateways) {
                check(g.gotCommitted(1), "subtask " + g.subtask + " not told 1: " + g.sent);
            }
            check(job.context.failures.isEmpty(), "failed: " + job.context.failures);
        }
    }

    /**
     * Close drains: with a commit in flight and the final checkpoint's completion (the final
     * commit) queued behind it, close waits for both; the END snapshot is in the table when it
     * returns, and the writers were told END. Then the loop thread is gone (Job#close).
     */
    static void closeRunsTheQueuedFinalCommit() throws Exception {
        Gate gate = new Gate("completion of checkpoint 1");
        try (Job job = new Job("close-drains", 2, o -> o, gate, SinkCoordinator.CLOSE_WAIT)) {
            holdTheCommitOfCheckpoint1(job, gate);
            CompletableFuture<byte[]> last = queueFinalCheckpoint(job, 2);
            // Flink closes coordinators on a thread of its own
            CompletableFuture<Void> closed = CompletableFuture.runAsync(job.coordinator::close);
            awaitClosing(job);
            check(!closed.isDone(), "close returned while a commit was in flight");
            gate.open();
            closed.get(WAIT_SECONDS, TimeUnit.SECONDS);
            check(Job.answer(2, last) != null, "the final checkpoint declined");
            List<Snapshot> snapshots = job.snapshots();
            check(!snapshots.isEmpty() && snapshots.get(snapshots.size() - 1).identifier() == Entry.END,
                    "close dropped the final commit: " + snapshots);
            for (FakeGateway g : job.gateways) {
                check(g.gotEndCommitted(), "subtask " + g.subtask + " not told END: " + g.sent);
            }
            check(job.context.failures.isEmpty(), "failed: " + job.context.failures);
        }
    }

    /**
     * Close's wait is bounded: past it, close returns (and logs) while the call is still held;
     * once that call returns, the queued ones are dropped (their checkpoint answered as
     * declined, never left open), the component is closed and the loop thread ends.
     */
    static void closeGivesUpAfterItsBound() throws Exception {
        Gate gate = new Gate("completion of checkpoint 1");
        try (Job job = new Job("close-bound", 2, o -> o, gate, Duration.ofMillis(100))) {
            holdTheCommitOfCheckpoint1(job, gate);
            CompletableFuture<byte[]> last = queueFinalCheckpoint(job, 2);
            job.coordinator.close(); // returns after its 100 ms: the gate is still shut
            List<Thread> loop = loopThreads(job.user);
            check(loop.size() == 1, "the held loop thread: " + loop);
            gate.open();
            loop.get(0).join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
            check(!loop.get(0).isAlive(), "the loop thread did not end after its last call");
            check(Job.answer(2, last) == null, "a dropped checkpoint was answered with state");
            List<Snapshot> snapshots = job.snapshots();
            check(snapshots.size() == 1 && snapshots.get(0).identifier() == 1,
                    "the held commit must land, the dropped final commit not: " + snapshots);
        }
    }

    /**
     * Both writers report checkpoint 1 and the coordinator takes it; its completion notice
     * returns at once, and its commit is then held at {@code gate} (in flight on the loop).
     */
    private static void holdTheCommitOfCheckpoint1(Job job, Gate gate) throws Exception {
        job.report(0, 1, "a");
        job.report(1, 1, "b");
        check(job.checkpoint(1) != null, "checkpoint 1 declined");
        job.coordinator.notifyCheckpointComplete(1); // returns: the commit is the loop's
        gate.awaitHeld();
    }

    /** Waits until close was called (it then waits for the loop). */
    private static void awaitClosing(Job job) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!job.coordinator.closing()) {
            check(System.nanoTime() < deadline, "close was never called");
            Thread.sleep(1);
        }
    }

    /**
     * Both writers end and report their final checkpoint {@code id}; the checkpoint and its
     * completion (the final commit) are queued behind whatever the loop is doing.
     */
    private static CompletableFuture<byte[]> queueFinalCheckpoint(Job job, long id) {
        job.end(0, "c");
        job.end(1, "d");
        job.report(0, id);
        job.report(1, id);
        CompletableFuture<byte[]> result = new CompletableFuture<>();
        job.coordinator.checkpointCoordinator(id, result);
        job.coordinator.notifyCheckpointComplete(id);
        return result;
    }
}
