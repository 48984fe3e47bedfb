package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The end-to-end tests (EndToEndTests, FinishTests, FinalCommitTests, CrashTest, PaimonTests,
 * S3Tests) as JUnit 5
 * tests on a shared MiniCluster, each on both runtimes: Chicory (pure Java) and the JNI library.
 * The runtime reaches a body as the default of {@link SinkOptions#of} ({@code
 * sinkcoord.runtime}, set around each body; the kill -9 test passes it to its child JVM).
 * After each body, no coordinator loop thread may be left (TestSupport#awaitNoLoopThreads).
 */
class EndToEndMiniClusterTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = FlinkTests.cluster();

    /**
     * Chicory's compiled guest functions run interpreted by HotSpot until C2 compiles them
     * (docs/hosts/jvm.md): cold, a completion takes up to a second, and a timing-sensitive test
     * (a storage drill that needs enough commits before the input ends, a failover that needs
     * finished subtasks) would see too few. The runtime the connector shares
     * (CoordinatorRuntime.bundled()) is therefore warmed up first.
     */
    @BeforeAll
    static void warmUpChicory() {
        io.sinkcoordinator.jvm.CoordinatorRuntime.bundled().warmUp(java.time.Duration.ofSeconds(20));
    }

    /**
     * The assertions that check a test's scenario happened (a failover came, a drill hit, enough
     * checkpoints ran), not what the sink did: on a loaded machine the timing they need is
     * sometimes missed (seen with both runtimes). Such a run is repeated, twice at most; a wrong
     * table (lost or duplicated records, a missing tag) never is.
     */
    private static final java.util.List<String> SCENARIO_MISSED =
            java.util.List.of(
                    "few checkpoints", "few storage repeats", "no failover after the outage",
                    "no global failover", "no region failover", "no restart-required", "no stall",
                    "the outage did not fail the job", "no global restore saw finished subtasks",
                    "the drain did not stop the sources early", "no END data of finished subtask");

    private static boolean scenarioMissed(AssertionError e) {
        String m = String.valueOf(e.getMessage());
        return SCENARIO_MISSED.stream().anyMatch(m::startsWith);
    }

    private static void on(ComponentRuntime runtime, FlinkTests.Test body) throws Exception {
        FlinkTests.on(runtime, () -> {
            for (int run = 1; ; run++) {
                try {
                    body.run();
                    // its jobs ended: every coordinator instance (failovers' too) closed its loop
                    TestSupport.awaitNoLoopThreads();
                    return;
                } catch (AssertionError e) {
                    if (run == 3 || !scenarioMissed(e)) {
                        throw e;
                    }
                    System.out.println("     scenario missed (run " + run + "), repeating: " + e.getMessage());
                }
            }
        });
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void boundedP4(ComponentRuntime runtime) throws Exception {
        on(runtime, EndToEndTests::boundedP4);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void randomFailures(ComponentRuntime runtime) throws Exception {
        on(runtime, EndToEndTests::randomFailures);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void storageFaults(ComponentRuntime runtime) throws Exception {
        on(runtime, EndToEndTests::storageFaults);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void unevenFinishFailover(ComponentRuntime runtime) throws Exception {
        on(runtime, EndToEndTests::unevenFinishFailover);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void batchMode(ComponentRuntime runtime) throws Exception {
        on(runtime, EndToEndTests::batchMode);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void stopWithSavepoint(ComponentRuntime runtime) throws Exception {
        on(runtime, EndToEndTests::stopWithSavepoint);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void stopWithSavepointDrain(ComponentRuntime runtime) throws Exception {
        on(runtime, FinishTests::stopWithSavepointDrain);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void finishedGlobalFailover(ComponentRuntime runtime) throws Exception {
        on(runtime, FinishTests::finishedGlobalFailover);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void finalCommitOutage(ComponentRuntime runtime) throws Exception {
        on(runtime, FinalCommitTests::finalCommitOutage);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void finalNoticeSkipped(ComponentRuntime runtime) throws Exception {
        on(runtime, FinalCommitTests::finalNoticeSkipped);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void killAndRestart(ComponentRuntime runtime) throws Exception {
        on(runtime, CrashTest::killAndRestart);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void paimonFailures(ComponentRuntime runtime) throws Exception {
        on(runtime, PaimonTests::failures);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void paimonStopWithSavepoint(ComponentRuntime runtime) throws Exception {
        on(runtime, PaimonTests::stopWithSavepoint);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void paimonStorageFaults(ComponentRuntime runtime) throws Exception {
        on(runtime, PaimonTests::storageFaults);
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void s3Failures(ComponentRuntime runtime) throws Exception {
        on(runtime, () -> S3Tests.failures(false));
    }

    @ParameterizedTest
    @EnumSource(ComponentRuntime.class)
    void s3PaimonFailures(ComponentRuntime runtime) throws Exception {
        on(runtime, () -> S3Tests.failures(true));
    }

    @org.junit.jupiter.api.Test
    void paimonSchemaAndRows() throws Exception {
        PaimonTests.schemaAndRows();
    }
}
