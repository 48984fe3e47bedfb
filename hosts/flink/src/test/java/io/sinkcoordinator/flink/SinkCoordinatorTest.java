package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.FlinkTests.on;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * CoordinatorScheduleTests and CoordinatorThreadTests (SinkCoordinator call by call, fake
 * context, no cluster) as JUnit 5 tests on both runtimes.
 */
class SinkCoordinatorTest {
    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void declinesWhileFailing(ComponentRuntime runtime) throws Exception {
        on(runtime, CoordinatorScheduleTests::declinesWhileFailing);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void failedFinalCommitReleasesNobody(ComponentRuntime runtime) throws Exception {
        on(runtime, CoordinatorScheduleTests::failedFinalCommitReleasesNobody);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void releasesEndedWriters(ComponentRuntime runtime) throws Exception {
        on(runtime, CoordinatorScheduleTests::releasesEndedWriters);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void acknowledgesSavepoints(ComponentRuntime runtime) throws Exception {
        on(runtime, CoordinatorScheduleTests::acknowledgesSavepoints);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void batchReleasesEachEnd(ComponentRuntime runtime) throws Exception {
        on(runtime, CoordinatorScheduleTests::batchReleasesEachEnd);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void callbacksReturnWhileACommitHangs(ComponentRuntime runtime) throws Exception {
        on(runtime, CoordinatorThreadTests::callbacksReturnWhileACommitHangs);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void closeRunsTheQueuedFinalCommit(ComponentRuntime runtime) throws Exception {
        on(runtime, CoordinatorThreadTests::closeRunsTheQueuedFinalCommit);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void closeGivesUpAfterItsBound(ComponentRuntime runtime) throws Exception {
        on(runtime, CoordinatorThreadTests::closeGivesUpAfterItsBound);
    }
}
