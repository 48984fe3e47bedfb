package io.sinkcoordinator.flink;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The connector's test runner (no JUnit here: there is no Maven registry):
 * runs every test, or those named on the command line, prints one line per
 * test and {@code N passed, N failed}, and exits non-zero on a failure.
 */
public final class FlinkTests {
    interface Test {
        void run() throws Exception;
    }

    private FlinkTests() {}

    static Map<String, Test> all() {
        Map<String, Test> tests = new LinkedHashMap<>();
        tests.put("component-round-trip", ComponentTest::roundTrip);
        tests.put("component-finished-restore", ComponentTest::finishedRestore);
        tests.put("component-finished-replays", ComponentTest::finishedReplays);
        tests.put("coordinator-declines-while-failing", CoordinatorScheduleTests::declinesWhileFailing);
        tests.put("coordinator-failed-final-commit",
                CoordinatorScheduleTests::failedFinalCommitReleasesNobody);
        tests.put("coordinator-releases-ended-writers", CoordinatorScheduleTests::releasesEndedWriters);
        tests.put("bounded-p4", EndToEndTests::boundedP4);
        tests.put("random-failures", EndToEndTests::randomFailures);
        tests.put("storage-faults", EndToEndTests::storageFaults);
        tests.put("uneven-finish-failover", EndToEndTests::unevenFinishFailover);
        tests.put("batch-mode", EndToEndTests::batchMode);
        tests.put("builder-append", BuilderTests::builderAppend);
        tests.put("builder-append-chicory",
                () -> BuilderTests.builderAppend(
                        io.sinkcoordinator.flink.component.ComponentRuntime.CHICORY));
        tests.put("stop-with-savepoint", EndToEndTests::stopWithSavepoint);
        tests.put("stop-with-savepoint-drain", FinishTests::stopWithSavepointDrain);
        tests.put("finished-global-failover", FinishTests::finishedGlobalFailover);
        tests.put("final-commit-outage", FinalCommitTests::finalCommitOutage);
        tests.put("final-notice-skipped", FinalCommitTests::finalNoticeSkipped);
        tests.put("kill-9-restart", CrashTest::killAndRestart);
        return tests;
    }

    public static void main(String[] args) {
        Map<String, Test> tests = all();
        List<String> names = args.length == 0 ? new ArrayList<>(tests.keySet()) : List.of(args);
        int passed = 0;
        int failed = 0;
        for (String name : names) {
            Test test = tests.get(name);
            if (test == null) {
                System.out.println("FAIL " + name + ": no such test");
                failed++;
                continue;
            }
            long start = System.nanoTime();
            try {
                test.run();
                passed++;
                System.out.printf("ok   %s (%.1f s)%n", name, (System.nanoTime() - start) / 1e9);
            } catch (Throwable t) {
                failed++;
                System.out.printf("FAIL %s (%.1f s): %s%n", name,
                        (System.nanoTime() - start) / 1e9, t);
                t.printStackTrace(System.out);
            }
            System.out.flush();
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
