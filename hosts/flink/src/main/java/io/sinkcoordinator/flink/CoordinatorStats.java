package io.sinkcoordinator.flink;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counters of one sink's coordinators in this JVM (all incarnations of the
 * same commit user add up): how much time the component calls cost, how long
 * checkpoints took from the coordinator's trigger to its completion notice,
 * and how many failovers of each kind the coordinator went through. Tests
 * and operators read them; the coordinator's behaviour never depends on
 * them.
 */
public final class CoordinatorStats {
    private static final Map<String, CoordinatorStats> BY_USER = new ConcurrentHashMap<>();

    /** Time inside component calls (coordinator side), in nanoseconds. */
    public final AtomicLong componentNanos = new AtomicLong();
    public final AtomicLong componentCalls = new AtomicLong();
    /** The share of {@link #componentNanos} spent in: instance creation + start (the first one
     * compiles the component), writer events, checkpoint (state bytes), checkpoint-complete. */
    public final AtomicLong startNanos = new AtomicLong();
    public final AtomicLong eventNanos = new AtomicLong();
    public final AtomicLong checkpointCallNanos = new AtomicLong();
    public final AtomicLong completeNanos = new AtomicLong();
    /** Completed checkpoints and the sum of their trigger-to-completion times. */
    public final AtomicLong checkpointsCompleted = new AtomicLong();
    public final AtomicLong checkpointNanos = new AtomicLong();
    /** Checkpoints this coordinator declined (state restoring) or failed. */
    public final AtomicLong checkpointsDeclined = new AtomicLong();
    /** Coordinator instances started, and those started from a checkpoint (global failover). */
    public final AtomicLong starts = new AtomicLong();
    public final AtomicLong globalRestores = new AtomicLong();
    /** Region failovers of single writer subtasks. */
    public final AtomicLong subtaskResets = new AtomicLong();
    /** Restores where Flink reported subtasks finished before the checkpoint. */
    public final AtomicLong restoresWithFinishedSubtasks = new AtomicLong();
    /**
     * Restore events, resets and END events of subtasks named finished at the
     * instance's restore (Flink runs them again with no state), passed to the
     * component (SEMANTICS 6.2).
     */
    public final AtomicLong replaysOfFinished = new AtomicLong();
    public final AtomicLong resetsOfFinished = new AtomicLong();
    public final AtomicLong endsOfFinished = new AtomicLong();
    /** Failovers the coordinator requested: restart-required, and fatal errors. */
    public final AtomicLong restartsRequested = new AtomicLong();
    public final AtomicLong fatalFailures = new AtomicLong();
    /** Writer events sent, and the batches ({@code events} calls) they went in. */
    public final AtomicLong eventsSent = new AtomicLong();
    public final AtomicLong batches = new AtomicLong();
    /** Completion notices dropped by SinkCoordinator's test hook (skip-final-notice). */
    public final AtomicLong finalNoticesSkipped = new AtomicLong();
    /** Calls repeated after a storage error. */
    public final AtomicLong storageRetries = new AtomicLong();
    /** Snapshots committed, and the checkpoint (identifier) of the last one (-1: none yet). */
    public final AtomicLong snapshotsCommitted = new AtomicLong();
    public final AtomicLong lastCommittedCheckpoint = new AtomicLong(-1);
    /** The last committing call's duration (ns) and its end (epoch ms); -1 before the first. */
    public final AtomicLong lastCommitNanos = new AtomicLong(-1);
    public final AtomicLong lastCommitEpochMs = new AtomicLong(-1);

    private CoordinatorStats() {}

    /** The counters of {@code commitUser} (created on first use). */
    public static CoordinatorStats of(String commitUser) {
        return BY_USER.computeIfAbsent(commitUser, u -> new CoordinatorStats());
    }

    /** Mean component time per completed checkpoint (instance starts excluded), in microseconds. */
    public long componentMicrosPerCheckpoint() {
        long n = checkpointsCompleted.get();
        return n == 0 ? 0 : (componentNanos.get() - startNanos.get()) / n / 1000;
    }

    private long micros(AtomicLong nanos) {
        long n = checkpointsCompleted.get();
        return n == 0 ? 0 : nanos.get() / n / 1000;
    }

    /** Mean trigger-to-completion time of a checkpoint, in microseconds. */
    public long checkpointMicros() {
        long n = checkpointsCompleted.get();
        return n == 0 ? 0 : checkpointNanos.get() / n / 1000;
    }

    @Override
    public String toString() {
        return String.format(
                "component calls %d (%.1f ms total, starts %.1f ms; "
                        + "%d events in %d batches; "
                        + "per completed checkpoint %d us: "
                        + "events %d, checkpoint %d, complete %d), "
                        + "checkpoints completed %d (mean %d us trigger-to-completion), "
                        + "declined %d, "
                        + "coordinator starts %d, global restores %d (%d with finished subtasks), "
                        + "subtask resets %d, restore events/resets/END events of finished subtasks"
                        + " %d/%d/%d, "
                        + "restarts requested %d, fatal %d, storage retries %d",
                componentCalls.get(),
                componentNanos.get() / 1e6,
                startNanos.get() / 1e6,
                eventsSent.get(),
                batches.get(),
                componentMicrosPerCheckpoint(),
                micros(eventNanos),
                micros(checkpointCallNanos),
                micros(completeNanos),
                checkpointsCompleted.get(),
                checkpointMicros(),
                checkpointsDeclined.get(),
                starts.get(),
                globalRestores.get(),
                restoresWithFinishedSubtasks.get(),
                subtaskResets.get(),
                replaysOfFinished.get(),
                resetsOfFinished.get(),
                endsOfFinished.get(),
                restartsRequested.get(),
                fatalFailures.get(),
                storageRetries.get());
    }
}
