package io.sinkcoordinator.flink;

import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;

/**
 * The sink's metrics on its coordinator's metric group (Flink's {@code OperatorCoordinator
 * .Context#metricGroup}), read from the sink's {@link CoordinatorStats}:
 *
 * <ul>
 *   <li>{@code lastCommittedCheckpoint}: the checkpoint (snapshot identifier) of the last
 *       committed snapshot, -1 before the first (END is {@code Long.MAX_VALUE});
 *   <li>{@code snapshotsCommitted}: snapshots committed so far;
 *   <li>{@code lastCommitDurationMs}: how long the last committing call took (the completion or
 *       batch that wrote the snapshot, storage retries included), -1 before the first;
 *   <li>{@code timeSinceLastCommitMs}: time since the last successful commit, -1 before the first
 *       (the alerting metric: it grows while checkpoints complete but nothing commits);
 *   <li>{@code storageRetries}: calls repeated after a storage error.
 * </ul>
 *
 * <p>Why the stats and not the instance: a global failover replaces the coordinator instance
 * (RecreateOnResetOperatorCoordinator) but keeps its metric group, and a second registration of a
 * name is refused with a warning; gauges bound to the first instance would then report it
 * forever. The stats are per commit user and survive instances, so the gauges are registered once
 * per group and stay true.
 */
final class SinkMetrics {
    private static final Set<MetricGroup> REGISTERED =
            Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

    private SinkMetrics() {}

    static void register(MetricGroup group, CoordinatorStats stats) {
        if (group == null || !REGISTERED.add(group)) {
            return;
        }
        group.gauge("lastCommittedCheckpoint", (Gauge<Long>) stats.lastCommittedCheckpoint::get);
        group.gauge("snapshotsCommitted", (Gauge<Long>) stats.snapshotsCommitted::get);
        group.gauge(
                "lastCommitDurationMs",
                (Gauge<Long>) () -> {
                    long ns = stats.lastCommitNanos.get();
                    return ns < 0 ? -1L : ns / 1_000_000;
                });
        group.gauge(
                "timeSinceLastCommitMs",
                (Gauge<Long>) () -> {
                    long at = stats.lastCommitEpochMs.get();
                    return at < 0 ? -1L : Math.max(0, System.currentTimeMillis() - at);
                });
        group.gauge("storageRetries", (Gauge<Long>) stats.storageRetries::get);
    }
}
