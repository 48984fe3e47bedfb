package io.sinkcoordinator.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.Entry;
import java.nio.file.Path;
import java.util.Map;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The coordinator's metrics (SinkMetrics) as a metric reporter sees them after a job. */
class MetricsMiniClusterTest {
    private static final InMemoryReporter REPORTER = InMemoryReporter.createWithRetainedMetrics();

    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setConfiguration(REPORTER.addToConfiguration(new Configuration()))
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static long gauge(JobID job, String name) {
        Map<String, Metric> found = REPORTER.findMetrics(job, name);
        assertEquals(1, found.size(), name + ": " + found.keySet());
        Object v = ((Gauge<?>) found.values().iterator().next()).getValue();
        return ((Number) v).longValue();
    }

    @Test
    void committedCheckpointDurationAndAge() throws Exception {
        Path table = TestSupport.tempDir("metrics");
        try {
            long n = 5_000;
            StreamExecutionEnvironment env = TestSupport.env(2, 0, new Configuration());
            env.enableCheckpointing(100);
            DataStream<String> records =
                    env.fromSequence(0, n - 1).map(new TestSupport.Throttle(5)).map(String::valueOf);
            CoordinatedSink.forInput(records, new SimpleStringSchema())
                    .table(table.toString())
                    .commitUser(EndToEndTests.user(table))
                    .runtime(ComponentRuntime.CHICORY)
                    .append();
            JobID job = env.execute("metrics").getJobID();
            TestSupport.assertExactlyOnce(table, n);
            // a bounded job ends with its END snapshot
            assertEquals(Entry.END, gauge(job, "lastCommittedCheckpoint"));
            assertTrue(gauge(job, "snapshotsCommitted") >= 2);
            assertTrue(gauge(job, "lastCommitDurationMs") >= 0);
            long age = gauge(job, "timeSinceLastCommitMs");
            assertTrue(age >= 0 && age < 60_000, "timeSinceLastCommitMs " + age);
            assertEquals(0, gauge(job, "storageRetries"));
        } finally {
            TestSupport.deleteTree(table);
        }
    }
}
