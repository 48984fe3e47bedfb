package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.Entry;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/** The operator events between the writers and the coordinator (Java-serialized by Flink). */
final class Events {
    private Events() {}

    /** Writer → coordinator: the entry of one checkpoint, or END. */
    record Committable(Entry entry) implements OperatorEvent {
        @Override
        public String toString() {
            return "Committable" + entry;
        }
    }

    /** Writer → coordinator: the replay of its buffer after restoring from {@code checkpoint}. */
    record Restored(long checkpoint, Entry[] entries) implements OperatorEvent {
        @Override
        public String toString() {
            return "Restored{checkpoint=" + checkpoint + ", entries=" + entries.length + "}";
        }
    }

    /** Coordinator → writer: committed-up-to (SEMANTICS 5.5); the writer may forget entries. */
    record CommittedUpTo(long upTo) implements OperatorEvent {
        @Override
        public String toString() {
            return "CommittedUpTo{" + (upTo == Entry.END ? "END" : Long.toString(upTo)) + "}";
        }
    }

    /**
     * Coordinator → an ended writer: the coordinator processed the completion of checkpoint
     * {@code completed} (at or after the writer's final checkpoint) without failing, so it holds
     * the writer's END entry and the writer may finish. Sent only while some writer has not ended
     * (the last ones wait for committed-up-to END instead); see SinkCoordinator#release.
     */
    record Released(long completed) implements OperatorEvent {
        @Override
        public String toString() {
            return "Released{completed=" + completed + "}";
        }
    }

    /**
     * Coordinator → a writer that has not ended: the coordinator processed, without failing, the
     * completion of savepoint {@code completed} (or a later one) and this writer's event for it
     * (its entry, reported as a savepoint's). A writer whose task stops after a synchronous
     * savepoint (stop-with-savepoint without drain) waits for it: the savepoint's commit, made
     * at the completion or at the last writer's late event, precedes the last writer's notice,
     * so the job cannot end before that commit and its tag (the coordinator runs calls on its
     * loop, after Flink's call returned).
     */
    record SavepointProcessed(long completed) implements OperatorEvent {
        @Override
        public String toString() {
            return "SavepointProcessed{completed=" + completed + "}";
        }
    }
}
