package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.BatchOutcome;
import io.sinkcoordinator.flink.component.ComponentCoordinator;
import io.sinkcoordinator.flink.component.ComponentException;
import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Outcome;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.apache.flink.util.FlinkException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sink's commit coordinator in Flink's JobManager: every callback is one
 * call of the component's coordinator, except that writer events are held and
 * sent as one batch ({@code events}, one crossing for a checkpoint's burst):
 * when one event from every subtask is held, when an END event or an event for
 * a completed checkpoint (it may commit at once) arrives, and before any other
 * callback's call. So the component sees the calls in the order Flink made
 * them, and {@code close} drops nothing (SEMANTICS 1).
 *
 * <p>Threads: a callback only queues its work on this instance's {@link
 * CoordinatorLoop} and returns (Flink calls them on the JobManager's main
 * thread, which must never wait on storage); everything else, the component's
 * calls with their storage repeats, this class's bookkeeping, the events to
 * the writers and the completion of the checkpoint futures, runs there, one
 * task after the other in the callbacks' order. The fields below are the
 * loop's alone, except those marked as the caller's. {@link #close} drains the
 * loop (bounded by {@link #CLOSE_WAIT}) before it closes the component.
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

    /**
     * How long {@link #close} waits for the queued calls: below the 60 s after which Flink's
     * RecreateOnResetOperatorCoordinator fails the job over a close that hangs (it closes
     * instances on a thread of its own, so this wait never holds up the main thread).
     */
    static final Duration CLOSE_WAIT = Duration.ofSeconds(30);

    private final Context context;
    private final SinkOptions options;
    private final CoordinatorStats stats;
    private final CoordinatorLoop loop;
    private final Duration closeWait;
    /** Test hook ({@link #beforeCalls}), run on the loop before each component call. */
    private volatile Consumer<String> beforeCall;

    /** The caller's (set before start): resetToCheckpoint's restore point, and start itself. */
    private long restoreCheckpoint = -1;
    private byte[] restoreState;
    private boolean started;

    private ComponentCoordinator component;
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

    /**
     * By subtask, the savepoint its last event reported an entry of, whose completion this
     * instance did not process yet (-1: none): its processing is acknowledged to that writer
     * ({@link #savepointDone}).
     */
    private long[] savepointReported = new long[0];

    /** Trigger time of the checkpoints in flight, by id (for the stats). */
    private final java.util.Map<Long, Long> triggeredAt = new java.util.HashMap<>();

    SinkCoordinator(Context context, SinkOptions options) {
        this(context, options, CLOSE_WAIT);
    }

    /** The same with another bound on close's wait (tests). */
    SinkCoordinator(Context context, SinkOptions options, Duration closeWait) {
        // The constructor must not touch the context's parallelism: adaptive
        // schedulers create coordinators before it is known. Nor start a thread:
        // they may drop a coordinator without closing it.
        this.context = context;
        this.options = options;
        this.closeWait = closeWait;
        this.stats = CoordinatorStats.of(options.config().commitUser());
        this.loop = new CoordinatorLoop(
                threadName(options.config().commitUser()),
                (what, e) -> fail(new FlinkException("sink coordinator: " + what + " failed", e)));
    }

    /** The name of the loop thread of {@code commitUser}'s coordinators. */
    static String threadName(String commitUser) {
        return "sinkcoord-" + commitUser + "-loop";
    }

    /**
     * Test hook: {@code hook} runs on the loop before each component call, with what the call is
     * for ("completion of checkpoint 3", "a batch of 2 events", ...); it may block, as a slow
     * storage would. Set before start.
     */
    void beforeCalls(Consumer<String> hook) {
        this.beforeCall = hook;
    }

    /** Completes once the loop ran every call queued before (tests). */
    CompletableFuture<Void> idle() {
        return loop.idle();
    }

    /** Whether close was called (tests). */
    boolean closing() {
        return loop.closing();
    }

    private void enter(String what) {
        Consumer<String> hook = beforeCall;
        if (hook != null) {
            hook.accept(what);
        }
    }

    @Override
    public void start() throws Exception {
        if (started) {
            throw new IllegalStateException("sink coordinator: started twice");
        }
        started = true;
        SinkMetrics.register(context.metricGroup(), stats);
        // What the instance starts from is read here, on Flink's thread: the parallelism and
        // the checkpoint store are Flink's state (cheap reads), the rest is the loop's.
        int parallelism = context.currentParallelism();
        long restoreFrom = restoreCheckpoint;
        byte[] state = restoreState;
        restoreState = null;
        int[] finished =
                restoreFrom >= 0 ? FinishedSubtasks.at(context, restoreFrom, parallelism) : new int[0];
        boolean first = stats.starts.incrementAndGet() == 1;
        loop.start(context.getUserCodeClassloader());
        // The instance's creation compiles the component the first time: on the loop too.
        loop.execute("start", () -> create(parallelism, restoreFrom, state, finished, first));
    }

    private void create(int parallelism, long restoreFrom, byte[] state, int[] finished,
            boolean first) {
        gateways = new SubtaskGateway[parallelism];
        savepointReported = new long[parallelism];
        Arrays.fill(savepointReported, -1);
        if (restoreFrom >= 0) {
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
                    restoreFrom,
                    Arrays.toString(finished));
        }
        long created = System.nanoTime();
        component =
                new ComponentCoordinator(
                        options.log(),
                        parallelism,
                        options.config(),
                        restoreFrom,
                        state,
                        finished,
                        options.faultEvery(),
                        first ? options.faultAfter() : -1,
                        options.runtime());
        record(created, stats.startNanos);
        if (options.paimon() != null) {
            // a Paimon commit needs the schema
            io.sinkcoordinator.jvm.Storage table = options.location().open(options.runtime(), true);
            try {
                options.paimon().createOrCheck(table);
            } finally {
                io.sinkcoordinator.flink.component.TableLocation.close(table);
            }
            component.setTableFormat(options.tableFormat()); // host configuration, before start
        }
        apply("start", stats.startNanos, () -> component.start());
    }

    /**
     * Runs the calls still queued (a final commit, a savepoint's tag), then closes the component,
     * on the loop; waits for that up to the close bound (logged if exceeded: see {@link
     * CoordinatorLoop#close}). Flink's RecreateOnResetOperatorCoordinator calls this on a closing
     * thread of its own and creates a failover's next instance only after it returned, so two
     * instances of a sink never run calls at once while the bound holds.
     */
    @Override
    public void close() {
        if (!loop.close(this::closeComponent, closeWait)) {
            LOG.warn("sink {}: closed before its queued calls ran", options.config().commitUser());
        }
    }

    private void closeComponent() {
        if (!loop.abandoned()) {
            flush();
        }
        if (component != null) {
            try {
                component.close();
            } catch (RuntimeException e) {
                LOG.warn("sink {}: close: {}", options.config().commitUser(), e.getMessage());
            }
            component = null;
        }
    }

    @Override
    public void handleEventFromOperator(int subtask, int attempt, OperatorEvent event) {
        loop.execute("event of subtask " + subtask, () -> onEvent(subtask, attempt, event));
    }

    private void onEvent(int subtask, int attempt, OperatorEvent event) {
        if (event instanceof Events.Committable committable) {
            Entry entry = committable.entry();
            if (entry.isEnd()) {
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
                    if (entry.committables().length != 0) {
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
                ended.put(subtask, entry.checkpoint());
            }
            held.add(new Held(subtask, attempt, entry));
            if (held.size() >= gateways.length
                    || entry.isEnd()
                    || entry.checkpoint() <= lastCompleted) {
                flush();
            }
            release();
            if (entry.savepoint() && !entry.isEnd()) {
                if (entry.checkpoint() > completedOk) {
                    savepointReported[subtask] = entry.checkpoint();
                } else if (!failing && component != null && gateways[subtask] != null) {
                    // a late event: the completion was processed already (and a commit that
                    // waited for this event is made now)
                    gateways[subtask].sendEvent(new Events.SavepointProcessed(completedOk));
                }
            }
        } else if (event instanceof Events.Restored e) {
            flush();
            for (Entry entry : e.entries()) {
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
                    () -> component.restored(subtask, attempt, e.checkpoint(), e.entries()));
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

    /**
     * Queues the checkpoint; the loop completes {@code result} (exceptionally: declined), after
     * the events it sent for the calls before (Flink's exactly-once rule for coordinator
     * checkpoints: events and the future's completion strictly ordered, here by one thread).
     */
    @Override
    public void checkpointCoordinator(long checkpointId, CompletableFuture<byte[]> result) {
        long triggered = System.nanoTime();
        loop.execute(
                "checkpoint " + checkpointId,
                () -> {
                    try {
                        checkpoint(checkpointId, result, triggered);
                    } catch (RuntimeException | Error e) {
                        result.completeExceptionally(e);
                        throw e; // fails the job (CoordinatorLoop's handler), as Flink would
                    }
                },
                () -> result.completeExceptionally(new FlinkException(
                        "sink coordinator: closed before checkpoint " + checkpointId)));
    }

    private void checkpoint(long checkpointId, CompletableFuture<byte[]> result, long triggered) {
        flush(); // a no-op once failing
        if (failing || component == null) {
            // This instance dropped the events it got since it asked to fail over (flush) and
            // made none of the calls (apply): its state is not what the writers were told was
            // delivered. A checkpoint with it must never complete (a finished writer's END
            // entry lives only there), so the checkpoint is declined; the failover comes anyway.
            // (That includes a failure of the batch just flushed: its events are not in the
            // state either.)
            stats.checkpointsDeclined.incrementAndGet();
            result.completeExceptionally(
                    new FlinkException("sink coordinator: failing over, checkpoint "
                            + checkpointId + " declined"));
            return;
        }
        enter("checkpoint " + checkpointId);
        long start = System.nanoTime();
        try {
            byte[] state = component.checkpoint(checkpointId);
            triggeredAt.put(checkpointId, triggered);
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
    public void notifyCheckpointComplete(long checkpointId) {
        long notified = System.nanoTime();
        loop.execute(
                "completion of checkpoint " + checkpointId, () -> complete(checkpointId, notified));
    }

    private void complete(long checkpointId, long notified) {
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
            stats.checkpointNanos.addAndGet(notified - triggered);
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
        savepointDone(checkpointId);
    }

    /**
     * Tells each writer that has not ended, and whose event for savepoint {@code checkpointId}
     * (or one before) was processed, that this instance processed its completion without
     * failing (its commit and tag are made, unless they wait for a late event: the last such
     * event makes them before its writer is told). A writer whose task stops after a synchronous
     * savepoint waits for that (CoordinatedWriterOperator), so the job cannot end before them.
     * Ended writers wait for their release instead.
     */
    private void savepointDone(long checkpointId) {
        if (failing || component == null) {
            return;
        }
        Events.SavepointProcessed event = new Events.SavepointProcessed(checkpointId);
        for (int s = 0; s < savepointReported.length; s++) {
            // a completion covers the savepoints below it too (Flink may skip a notice:
            // SEMANTICS 4); a writer whose event has not come is told when it comes
            if (savepointReported[s] < 0 || savepointReported[s] > checkpointId) {
                continue;
            }
            savepointReported[s] = -1;
            if (gateways[s] != null && !ended.containsKey(s)) {
                gateways[s].sendEvent(event);
            }
        }
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) {
        loop.execute("abort of checkpoint " + checkpointId, () -> aborted(checkpointId));
    }

    private void aborted(long checkpointId) {
        flush();
        triggeredAt.remove(checkpointId);
        apply(
                "abort of checkpoint " + checkpointId,
                null,
                () -> component.checkpointAborted(checkpointId));
    }

    /**
     * Remembers the restore point for {@link #start}, on the caller's thread: Flink's
     * RecreateOnResetOperatorCoordinator resets fresh instances only, before their start (a
     * global failover closes the old instance, whose loop drains and ends, and creates a new
     * one), so no queued call can be behind it.
     */
    @Override
    public void resetToCheckpoint(long checkpointId, byte[] checkpointData) {
        if (started) {
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
    public void subtaskReset(int subtask, long checkpointId) {
        loop.execute("reset of subtask " + subtask, () -> reset(subtask, checkpointId));
    }

    private void reset(int subtask, long checkpointId) {
        flush();
        stats.subtaskResets.incrementAndGet();
        if (finishedAtRestore.contains(subtask)) {
            stats.resetsOfFinished.incrementAndGet();
        }
        gateways[subtask] = null;
        // its next attempt restores and ends again (or not): nothing of the old one holds
        savepointReported[subtask] = -1;
        ended.remove(subtask);
        released.remove(subtask);
        long from = checkpointId == NO_CHECKPOINT ? -1 : checkpointId;
        apply("reset of subtask " + subtask, null, () -> component.subtaskReset(subtask, from));
    }

    @Override
    public void executionAttemptFailed(int subtask, int attempt, Throwable reason) {
        loop.execute("failure of subtask " + subtask, () -> attemptFailed(subtask, attempt));
    }

    private void attemptFailed(int subtask, int attempt) {
        SubtaskGateway gateway = gateways[subtask];
        if (gateway != null && gateway.getExecution().getAttemptNumber() == attempt) {
            gateways[subtask] = null;
        }
    }

    /**
     * Queued like the rest: the gateway's {@code sendEvent} may be called from the loop (Flink's
     * SubtaskGatewayImpl serializes the event and hands the send to the main thread's executor,
     * in call order, as for Flink's own SourceCoordinator, which sends from its coordinator
     * thread).
     */
    @Override
    public void executionAttemptReady(int subtask, int attempt, SubtaskGateway gateway) {
        loop.execute("readiness of subtask " + subtask, () -> attemptReady(subtask, gateway));
    }

    private void attemptReady(int subtask, SubtaskGateway gateway) {
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
            enter("a batch of " + n + " events");
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
            Held failed = held.get(from + result.applied);
            String what = "event of subtask " + failed.subtask() + " (" + failed.entry() + ")";
            from += result.applied;
            AfterError next = afterError(what, result.error, attempt);
            if (next == AfterError.STOP) {
                break;
            }
            if (next == AfterError.REPEAT) {
                attempt++;
            } else {
                from++;
                attempt = 1;
            }
        }
        held.clear();
    }

    /** What SEMANTICS 8 makes of a call's error ({@link #afterError}). */
    private enum AfterError {
        /** Make the call again. */
        REPEAT,
        /** Go on without it (declined: nothing changed). */
        SKIP,
        /** Make no more calls: the job fails, or this instance was closed. */
        STOP
    }

    /**
     * SEMANTICS 8 for {@code what}'s error {@code e} on its {@code attempt}-th try: {@code
     * storage} is repeated, after a pause that grows with the attempts, up to {@link
     * SinkOptions#storageAttempts()} tries; {@code declined} is logged and skipped; anything
     * else fails the job.
     */
    private AfterError afterError(String what, ComponentException e, int attempt) {
        if (e.isStorage() && attempt < options.storageAttempts()) {
            // The input was accepted; repeating the call retries what failed.
            stats.storageRetries.incrementAndGet();
            LOG.warn("sink {}: {} failed on storage (attempt {}), repeating: {}",
                    options.config().commitUser(), what, attempt, e.getMessage());
            // closed meanwhile, after its wait ran out: drop
            return loop.pause(20L * attempt) ? AfterError.REPEAT : AfterError.STOP;
        }
        if (e.isDeclined()) {
            LOG.warn("sink {}: {} declined: {}", options.config().commitUser(), what,
                    e.getMessage());
            return AfterError.SKIP;
        }
        fail(new FlinkException("sink coordinator: " + what + " failed", e));
        return AfterError.STOP;
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
     * has it: SEMANTICS 6.2's finished subtasks). Without checkpoints (batch) a writer waits in
     * {@code endInput} instead, and is released once this instance processed its END event:
     * this instance processes events on its loop, after Flink's call returned, so the job could
     * otherwise end FINISHED before the last END's final commit ran. A failing instance releases nobody: the
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
            // Without checkpoints no completion comes: the END this instance just processed
            // is what the writer waits for (CoordinatedWriterOperator#endInput).
            boolean go =
                    allEnded
                            ? sentUpTo == Entry.END
                            : !options.config().checkpointing()
                                    || (e.getValue() >= 0 && e.getValue() <= completedOk);
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
            enter(what);
            long start = System.nanoTime();
            try {
                Outcome outcome = call.get();
                record(start, kind);
                after(what, outcome, start);
                return;
            } catch (ComponentException e) {
                record(start, kind);
                if (afterError(what, e, attempt) != AfterError.REPEAT) {
                    return;
                }
            }
        }
    }

    /** What every successful call's outcome asks for; {@code start}: the call's nanoTime. */
    private void after(String what, Outcome outcome, long start) {
        long[] committed = outcome.committed();
        if (committed.length > 0) {
            // the metrics of SinkMetrics: what was committed last, how long it took, when
            stats.snapshotsCommitted.addAndGet(committed.length);
            stats.lastCommittedCheckpoint.set(committed[committed.length - 1]);
            stats.lastCommitNanos.set(System.nanoTime() - start);
            stats.lastCommitEpochMs.set(System.currentTimeMillis());
        }
        if (outcome.committedUpTo() > sentUpTo) {
            sentUpTo = outcome.committedUpTo();
            Events.CommittedUpTo event = new Events.CommittedUpTo(sentUpTo);
            for (SubtaskGateway gateway : gateways) {
                if (gateway != null) {
                    gateway.sendEvent(event);
                }
            }
        }
        if (outcome.restartRequired()) {
            stats.restartsRequested.incrementAndGet();
            failing = true;
            context.failJob(
                    new FlinkException(
                            "sink coordinator: the recovery of "
                                    + options.config().commitUser()
                                    + " committed snapshots "
                                    + Arrays.toString(committed)
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
}
