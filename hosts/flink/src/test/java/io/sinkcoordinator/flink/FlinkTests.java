package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

/**
 * The shape of a test body (EndToEndTests, FinishTests, CoordinatorScheduleTests, ...): a static
 * method that throws on failure. The JUnit classes (*MiniClusterTest, SinkCoordinatorTest,
 * ComponentWrapperTest) run each body, on each runtime where it applies.
 */
final class FlinkTests {
    interface Test {
        void run() throws Exception;
    }

    private FlinkTests() {}

    /** The MiniCluster a JUnit class's jobs share: one TaskManager with four slots. */
    static MiniClusterExtension cluster() {
        return new MiniClusterExtension(
                new MiniClusterResourceConfiguration.Builder()
                        .setNumberTaskManagers(1)
                        .setNumberSlotsPerTaskManager(4)
                        .build());
    }

    /** Runs {@code body} with the system property {@code key} set to {@code value}, then restores it. */
    static void withProperty(String key, String value, Test body) throws Exception {
        String before = System.getProperty(key);
        System.setProperty(key, value);
        try {
            body.run();
        } finally {
            if (before == null) {
                System.clearProperty(key);
            } else {
                System.setProperty(key, before);
            }
        }
    }

    /**
     * Runs {@code body} on {@code runtime}: the default of {@link SinkOptions#of} ({@code
     * sinkcoord.runtime}, set around the body).
     */
    static void on(ComponentRuntime runtime, Test body) throws Exception {
        withProperty("sinkcoord.runtime", runtime.name().toLowerCase(), body);
    }
}
