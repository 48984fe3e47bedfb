package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.BatchOutcome;
import io.sinkcoordinator.flink.component.ComponentCoordinator;
import io.sinkcoordinator.flink.component.ComponentException;
import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Outcome;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.apache.flink.util.FlinkException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sink's commit coordinator in Flink's JobManager: every callback is one
 * call of the component's coordinator, run to completion on the
 * coordinator's thread, except that writer events are held and sent as one
 * batch ({@code events}, one crossing for a checkpoint's burst): when one
 * event from every subtask is held, when an END event or an event for a
 * completed checkpoint (it may commit at once) arrives, and before any other
 * callback's call. So the component sees the calls in the order Flink made
 * them, and {@code close} drops nothing (SEMANTICS 1).
 *
 * <table>
 * <caption>Callback → component call</caption>
 * <tr><td>start</td><td>new instance (fresh, or from the restored state bytes and the
 *     finished subtasks), {@code start}</td></tr>
 * <tr><td>handleEventFromOperator</td><td>{@code events} (ordinary or END, batched as
 *     above), {@code restored}</td></tr>
 * <tr><td>checkpointCoordinator</td><td>{@code checkpoint} → the state bytes</td></tr>
 * <tr><td>notifyCheckpointComplete / Aborted</td><td>{@code checkpoint-complete} /
 *     {@code checkpoint-aborted}</td></tr>
 * <tr><td>resetToCheckpoint</td><td>remembered for {@code start} (the wrapper creates a new
 *     instance per global failover)</td></tr>
 * <tr><td>subtaskReset</td><td>{@code subtask-reset}</td></tr>
 * <tr><td>executionAttemptReady / Failed</td><td>none: they only track the gateways that
 *     committed-up-to (and an ended writer's release, {@link #release}) is sent through</td></tr>
 * <tr><td>close</td><td>{@code close}</td></tr>
 * </table>
 *
 * <p>Errors (SEMANTICS 8): {@code declined} fails the one checkpoint;
 * {@code storage} repeats the same call up to {@link SinkOptions#storageAttempts()}
 * times, then fails the job; fatal errors and traps fail the job (a global
 * failover, which brings a new instance from the last checkpoint); {@code
 * restart-required} fails the job once more on purpose. After every call
 * whose outcome raised committed-up-to, it is sent to every running writer.
 * An instance that asked to fail over makes no more calls and declines
 * checkpoints, and it releases no ended writer (so the job cannot finish
 * before the failover, see {@link #release}).
 */
final class SinkCoordinator implements OperatorCoordinator {
    private static final Logger LOG = LoggerFactory.getLogger(SinkCoordinator.class);
    /**
     * Test hook ({@code -Dsinkcoord.test.skip-final-notice=true}): the first completion notice
     * at or after every writer's final checkpoint (all ended) is dropped, once per commit user and JVM, as
     * Flink may do (its tasks are told first; the coordinator's notice can come after the job
     * finished). Read at each notice (a test sets it around one job). Never set in production.
     */
    private static boolean skipFinalNotice() {
        return Boolean.getBoolean("sinkcoord.test.skip-final-notice");
    }

    private final Context context;
    private final SinkOptions options;
    private final CoordinatorStats stats;

    private ComponentCoordinator component;
    private long restoreCheckpoint = -1;
    private byte[] restoreState;
    private SubtaskGateway[] gateways = new SubtaskGateway[0];
    /** The highest committed-up-to sent to the writers (-1: none). */
    private long sentUpTo = -1;
    /** This instance asked Flink to fail over; later calls are moot until it is replaced. */
    private boolean failing;
    /**
     * Subtasks Flink marked finished in the restored checkpoint, for the
     * stats only. Flink 2.3 still redeploys them: their operators are
     * initialized (restored, with no state) and send an empty restore event
     * and an empty END entry. Their restore events and resets go to the
     * component: the core knows the finished subtasks (passed at {@code
     * start}) and ignores them for the instance's lifetime (SEMANTICS 6.2).
     * Their END events are dropped here (see handleEventFromOperator).
     */
    private final java.util.Set<Integer> finishedAtRestore = new java.util.HashSet<>();
    /** Writer events held for the next batch, in arrival order. */
    private final java.util.List<Held> held = new java.util.ArrayList<>();
    /** The highest checkpoint completed (-1: none): an event for it or below may commit. */
    private long lastCompleted = -1;

    /** One writer event held for a batch. */
    private record Held(int subtask, int attempt, Entry entry) {}

    /**
     * The writers this instance saw end (an END event, or a restore event carrying an END
     * entry), each with its final checkpoint: the first checkpoint it reported after the end
     * (-1: none reported yet). Such a writer does not finish before it is released (see {@link
     * #release}); {@link #released} holds those released, whose gateways are dropped.
     */
    private final java.util.Map<Integer, Long> ended = new java.util.HashMap<>();

    private final java.util.Set<Integer> released = new java.util.HashSet<>();
    /** The highest completion this instance processed without failing (-1: none). */
    private long completedOk = -1;

    /** Trigger time of the checkpoints in flight, by id (for the stats). */
    private final java.util.Map<Long, Long> triggeredAt = new java.util.HashMap<>();

    SinkCoordinator(Context context, SinkOptions options) {
        // The constructor must not touch the context's parallelism: adaptive
        // schedulers create coordinators before it is known.
        this.context = context;
        this.options = options;
        this.stats = CoordinatorStats.of(options.config().commitUser());
    }

    @Override
    public synchronized void start() throws Exception {
        SinkMetrics.register(context.metricGroup(), stats);
        int parallelism = context.currentParallelism();
        gateways = new SubtaskGateway[parallelism];
        int[] finished = new int[0];
        if (restoreCheckpoint >= 0) {
            finished = FinishedSubtasks.at(context, restoreCheckpoint, parallelism);
            for (int s : finished) {
                finishedAtRestore.add(s);
            }
            stats.globalRestores.incrementAndGet();
            if (finished.length > 0) {
                stats.restoresWithFinishedSubtasks.incrementAndGet();
            }
            LOG.info(
                    "sink {}: restoring from checkpoint {}, finished subtasks {}",
                    options.config().commitUser(),
                    restoreCheckpoint,
                    Arrays.toString(finished));
        }
        boolean first = stats.starts.incrementAndGet() == 1;
        long created = System.nanoTime();
        component =
                new ComponentCoordinator(
                        options.logDir().toString(),
                        parallelism,
                        options.config(),
                        restoreCheckpoint,
                        restoreState,
                        finished,
                        options.faultEvery(),
                        first ? options.faultAfter() : -1,
                        options.runtime());
        restoreState = null;
        record(created, stats.startNanos);
        apply("start", stats.startNanos, () -> component.start());
    }

    @Override
    public synchronized void close() {
        flush();
        if (component != null) {
            try {
                component.close();
            } catch (ComponentException e) {
                LOG.warn("sink {}: close: {}", options.config().commitUser(), e.getMessage());
            }
            component = null;
        }
    }

    @Override
    public synchronized void handleEventFromOperator(
            int subtask,
            int attempt,
            OperatorEvent event) {
        if (event instanceof Events.Committable) {
            Events.Committable e = (Events.Committable) event;
            if (e.entry.isEnd()) {
                // It now waits in its final checkpoint's completion until released.
                if (!released.contains(subtask)) {
                    ended.put(subtask, -1L);
                }
                if (finishedAtRestore.contains(subtask)) {
                    stats.endsOfFinished.incrementAndGet();
                    // The one replay SEMANTICS v2.1 does not cover: its 6.2
                    // accepts an END event of a finished subtask, and the
                    // rerun's empty END would replace the END entry that only
                    // the coordinator's state holds (the data would be lost;
                    // tests/regressions/finished-subtask-end-replay-drops-end-data).
                    // Dropped here until the page ignores it too.
                    if (e.entry.committables.length != 0) {
                        fail(
                                new FlinkException(
                                        "sink coordinator: subtask "
                                                + subtask
                                                + " was finished in the restored checkpoint "
                                                + restoreCheckpoint
                                                + " but sent an END entry with data"));
                    }
                    release();
                    return;
                }
                // The gateway stays: committed-up-to END (or a release) is
                // what lets this writer finish. It is dropped on release,
                // because Flink fails over when an operator event reaches a
                // FINISHED task (a CI run lost that race).
            } else if (ended.containsKey(subtask) && ended.get(subtask) < 0) {
                ended.put(subtask, e.entry.checkpoint);
            }
            held.add(new Held(subtask, attempt, e.entry));
            if (held.size() >= gateways.length
                    || e.entry.isEnd()
                    || e.entry.checkpoint <= lastCompleted) {
                flush();
            }
            release();
        } else if (event instanceof Events.Restored) {
            Events.Restored e = (Events.Restored) event;
            flush();
            for (Entry entry : e.entries) {
                if (entry.isEnd() && !released.contains(subtask)) {
                    // restored from a checkpoint taken after its end: it waits like any ended one
                    ended.put(subtask, -1L);
                }
            }
            if (finishedAtRestore.contains(subtask)) {
                stats.replaysOfFinished.incrementAndGet();
            }
            apply(
                    "restore event of subtask " + subtask,
                    stats.eventNanos,
                    () -> component.restored(subtask, attempt, e.checkpoint, e.entries));
            release();
        } else {
            fail(
                    new FlinkException(
                            "sink coordinator: unexpected operator event from subtask "
                                    + subtask
                                    + ": "
                                    + event));
        }
    }

    @Override
    public synchronized void checkpointCoordinator(
            long checkpointId,
            CompletableFuture<byte[]> result) {
        if (failing) {
            // This instance dropped the events it got since it asked to fail over (flush) and
            // made none of the calls (apply): its state is not what the writers were told was
            // delivered. A checkpoint with it must never complete (a finished writer's END
            // entry lives only there), so the checkpoint is declined; the failover comes anyway.
            stats.checkpointsDeclined.incrementAndGet();
            held.clear();
            result.completeExceptionally(
                    new FlinkException("sink coordinator: failing over, checkpoint "
                            + checkpointId + " declined"));
            return;
        }
        flush();
        long start = System.nanoTime();
        try {
            byte[] state = component.checkpoint(checkpointId);
            triggeredAt.put(checkpointId, start);
            result.complete(state);
        } catch (ComponentException e) {
            stats.checkpointsDeclined.incrementAndGet();
            // Declined (restoring): only this checkpoint fails. Fatal: the job too.
            result.completeExceptionally(e);
            if (e.isFatal()) {
                fail(e);
            }
        } finally {
            record(start, stats.checkpointCallNanos);
        }
    }

    @Override
    public synchronized void notifyCheckpointComplete(long checkpointId) {
        if (skipFinalNotice() && allEnded()
                && ended.values().stream().allMatch(f -> f >= 0 && f <= checkpointId)
                && stats.finalNoticesSkipped.compareAndSet(0, 1)) {
            // test hook (FinalCommitTests): Flink may skip or delay this notice (SEMANTICS 4)
            LOG.warn("sink {}: test hook: completion of checkpoint {} skipped",
                    options.config().commitUser(), checkpointId);
            return;
        }
        flush();
        lastCompleted = Math.max(lastCompleted, checkpointId);
        Long triggered = triggeredAt.remove(checkpointId);
        if (triggered != null) {
            stats.checkpointsCompleted.incrementAndGet();
            stats.checkpointNanos.addAndGet(System.nanoTime() - triggered);
        }
        triggeredAt.keySet().removeIf(id -> id < checkpointId);
        apply(
                "completion of checkpoint " + checkpointId,
                stats.completeNanos,
                () -> component.checkpointComplete(checkpointId));
        if (!failing && component != null) {
            completedOk = Math.max(completedOk, checkpointId);
        }
        release();
    }

    @Override
    public synchronized void notifyCheckpointAborted(long checkpointId) {
        flush();
        triggeredAt.remove(checkpointId);
        apply(
                "abort of checkpoint " + checkpointId,
                null,
                () -> component.checkpointAborted(checkpointId));
    }

    @Override
    public synchronized void resetToCheckpoint(long checkpointId, byte[] checkpointData) {
        if (component != null) {
            // RecreateOnResetOperatorCoordinator resets fresh instances only.
            throw new IllegalStateException("sink coordinator: reset of a started instance");
        }
        if (checkpointId == NO_CHECKPOINT || checkpointData == null) {
            restoreCheckpoint = -1;
            restoreState = null;
        } else {
            restoreCheckpoint = checkpointId;
            restoreState = checkpointData;
        }
    }

    @Override
    public synchronized void subtaskReset(int subtask, long checkpointId) {
        flush();
        stats.subtaskResets.incrementAndGet();
        if (finishedAtRestore.contains(subtask)) {
            stats.resetsOfFinished.incrementAndGet();
        }
        gateways[subtask] = null;
        // its next attempt restores and ends again (or not): nothing of the old one holds
        ended.remove(subtask);
        released.remove(subtask);
        long from = checkpointId == NO_CHECKPOINT ? -1 : checkpointId;
        apply("reset of subtask " + subtask, null, () -> component.subtaskReset(subtask, from));
    }

    @Override
    public synchronized void executionAttemptFailed(int subtask, int attempt, Throwable reason) {
        SubtaskGateway gateway = gateways[subtask];
        if (gateway != null && gateway.getExecution().getAttemptNumber() == attempt) {
            gateways[subtask] = null;
        }
    }

    @Override
    public synchronized void executionAttemptReady(
            int subtask,
            int attempt,
            SubtaskGateway gateway) {
        gateways[subtask] = gateway;
        // A restarted writer learns what it may forget (a stale value is still true).
        if (sentUpTo >= 0) {
            gateway.sendEvent(new Events.CommittedUpTo(sentUpTo));
        }
    }

    /**
     * Sends the held events as one batch, applying SEMANTICS 8 to an error
     * as {@link #apply} does for one event: {@code storage} resends from the
     * failing event (its input was accepted, repeating it is safe), up to
     * {@link SinkOptions#storageAttempts()} times; {@code declined} drops
     * that event and goes on with the next; fatal fails the job.
     */
    private void flush() {
        int from = 0;
        int attempt = 1;
        while (from < held.size() && !failing && component != null) {
            int n = held.size() - from;
            int[] subtasks = new int[n];
            int[] attempts = new int[n];
            Entry[] entries = new Entry[n];
            for (int i = 0; i < n; i++) {
                Held h = held.get(from + i);
                subtasks[i] = h.subtask();
                attempts[i] = h.attempt();
                entries[i] = h.entry();
            }
            stats.batches.incrementAndGet();
            long start = System.nanoTime();
            BatchOutcome result;
            try {
                result = component.events(subtasks, attempts, entries);
            } catch (RuntimeException e) {
                record(start, stats.eventNanos);
                fail(new FlinkException("sink coordinator: a batch of " + n + " events failed", e));
                break;
            }
            record(start, stats.eventNanos);
            stats.eventsSent.addAndGet(result.applied);
            after("a batch of " + n + " events", result.outcome, start);
            if (result.error == null) {
                break;
            }
            ComponentException e = result.error;
            Held failed = held.get(from + result.applied);
            String what = "event of subtask " + failed.subtask() + " (" + failed.entry() + ")";
            from += result.applied;
            if (e.isStorage() && attempt < options.storageAttempts()) {
                stats.storageRetries.incrementAndGet();
                LOG.warn("sink {}: {} failed on storage (attempt {}), repeating: {}",
                        options.config().commitUser(), what, attempt, e.getMessage());
                sleepQuietly(20L * attempt);
                attempt++;
            } else if (e.isDeclined()) {
                LOG.warn("sink {}: {} declined: {}", options.config().commitUser(), what,
                        e.getMessage());
                from++;
                attempt = 1;
            } else {
                fail(new FlinkException("sink coordinator: " + what + " failed", e));
                break;
            }
        }
        held.clear();
    }

    /**
     * Lets ended writers finish, once that cannot lose their END data (SEMANTICS 4: the
     * completion after every writer's final checkpoint is the one notice a host must not lose).
     *
     * <p>Why writers wait at all: Flink notifies the tasks of a completed checkpoint before it
     * queues the notice for this coordinator, and a task that ended its input finishes on that
     * notice. When the last writers finish, the job is FINISHED; a final commit that then fails
     * (storage) calls {@code failJob} behind the tasks' FINISHED reports, too late for a
     * failover, and the job ended without its END snapshot (FinalCommitTests). So an ended writer
     * waits in its final checkpoint's completion (CoordinatedWriterOperator) until: committed-up-to
     * END (sent by {@link #after}) once every writer has ended; before that, a {@link
     * Events.Released} once this instance processed, without failing, the completion of the
     * writer's final checkpoint (it holds its END entry then, and every later checkpoint's state
     * has it: SEMANTICS 6.2's finished subtasks). A failing instance releases nobody: the
     * failover cancels the waiting writers and restores them from a checkpoint whose state has
     * their END entry.
     */
    private void release() {
        if (failing || component == null || ended.isEmpty()) {
            return;
        }
        boolean allEnded = allEnded();
        for (java.util.Map.Entry<Integer, Long> e : ended.entrySet()) {
            int s = e.getKey();
            if (released.contains(s)) {
                continue;
            }
            boolean go =
                    allEnded
                            ? sentUpTo == Entry.END
                            : e.getValue() >= 0 && e.getValue() <= completedOk;
            if (!go) {
                continue;
            }
            released.add(s);
            SubtaskGateway gateway = gateways[s];
            if (gateway != null && !allEnded) {
                gateway.sendEvent(new Events.Released(completedOk));
            }
            gateways[s] = null;
        }
    }

    /** Every writer ended in this instance's view (or had finished before its restore). */
    private boolean allEnded() {
        for (int s = 0; s < gateways.length; s++) {
            if (!ended.containsKey(s) && !finishedAtRestore.contains(s)) {
                return false;
            }
        }
        return gateways.length > 0;
    }

    /** Runs one component call, applying SEMANTICS 8 to its error. */
    private void apply(String what, AtomicLong kind, Supplier<Outcome> call) {
        // `kind` is the stats counter the call's time also goes to (null: none).
        if (failing || component == null) {
            return;
        }
        for (int attempt = 1; ; attempt++) {
            long start = System.nanoTime();
            try {
                Outcome outcome = call.get();
                record(start, kind);
                after(what, outcome, start);
                return;
            } catch (ComponentException e) {
                record(start, kind);
                if (e.isStorage() && attempt < options.storageAttempts()) {
                    // The input was accepted; repeating the call retries what failed.
                    stats.storageRetries.incrementAndGet();
                    LOG.warn("sink {}: {} failed on storage (attempt {}), repeating: {}",
                            options.config().commitUser(), what, attempt, e.getMessage());
                    sleepQuietly(20L * attempt);
                    continue;
                }
                if (e.isDeclined()) {
                    LOG.warn("sink {}: {} declined: {}", options.config().commitUser(), what,
                            e.getMessage());
                    return;
                }
                fail(new FlinkException("sink coordinator: " + what + " failed", e));
                return;
            }
        }
    }

    /** What every successful call's outcome asks for; {@code start}: the call's nanoTime. */
    private void after(String what, Outcome outcome, long start) {
        if (outcome.committed.length > 0) {
            // the metrics of SinkMetrics: what was committed last, how long it took, when
            stats.snapshotsCommitted.addAndGet(outcome.committed.length);
            stats.lastCommittedCheckpoint.set(outcome.committed[outcome.committed.length - 1]);
            stats.lastCommitNanos.set(System.nanoTime() - start);
            stats.lastCommitEpochMs.set(System.currentTimeMillis());
        }
        if (outcome.committedUpTo > sentUpTo) {
            sentUpTo = outcome.committedUpTo;
            Events.CommittedUpTo event = new Events.CommittedUpTo(sentUpTo);
            for (SubtaskGateway gateway : gateways) {
                if (gateway != null) {
                    gateway.sendEvent(event);
                }
            }
        }
        if (outcome.restartRequired) {
            stats.restartsRequested.incrementAndGet();
            failing = true;
            context.failJob(
                    new FlinkException(
                            "sink coordinator: the recovery of "
                                    + options.config().commitUser()
                                    + " committed snapshots "
                                    + Arrays.toString(outcome.committed)
                                    + " ("
                                    + what
                                    + "); failing over once more so that every writer"
                                    + " starts from them"));
        }
    }

    private void fail(Throwable cause) {
        if (failing) {
            return;
        }
        failing = true;
        stats.fatalFailures.incrementAndGet();
        LOG.error("sink {}: failing the job", options.config().commitUser(), cause);
        context.failJob(cause);
    }

    /** Adds one component call's time to the totals and to its kind (null: none). */
    private void record(long start, AtomicLong kind) {
        long nanos = System.nanoTime() - start;
        stats.componentCalls.incrementAndGet();
        stats.componentNanos.addAndGet(nanos);
        if (kind != null) {
            kind.addAndGet(nanos);
        }
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
