package io.sinkcoordinator.flink;

import org.junit.jupiter.api.Test;

/**
 * ComponentTest (the JNI wrappers ComponentCoordinator, ComponentWriter and ComponentTable
 * without Flink) as JUnit 5 tests: the JNI runtime only, since those classes are its API.
 */
class ComponentWrapperTest {
    @Test
    void roundTrip() throws Exception {
        ComponentTest.roundTrip();
    }

    @Test
    void finishedRestore() throws Exception {
        ComponentTest.finishedRestore();
    }

    @Test
    void finishedReplays() throws Exception {
        ComponentTest.finishedReplays();
    }
}
