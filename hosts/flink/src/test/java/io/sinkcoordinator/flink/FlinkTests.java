package io.sinkcoordinator.flink;

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
}
