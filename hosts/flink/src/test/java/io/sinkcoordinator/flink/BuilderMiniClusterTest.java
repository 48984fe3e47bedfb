package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The builder's job (BuilderTests.builderAppend) on a shared MiniCluster (one TaskManager, four
 * slots), on both runtimes: Chicory (pure Java) and the JNI library.
 */
class BuilderMiniClusterTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = FlinkTests.cluster();

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void builderAppend(ComponentRuntime runtime) throws Exception {
        BuilderTests.builderAppend(runtime);
    }
}
