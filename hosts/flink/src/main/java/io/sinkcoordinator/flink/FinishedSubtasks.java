package io.sinkcoordinator.flink;

import java.util.ArrayList;
import java.util.List;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.apache.flink.runtime.checkpoint.CompletedCheckpoint;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;

/**
 * Which writer subtasks had fully finished before a restored checkpoint
 * (SEMANTICS 6.2 {@code finished-subtasks}).
 *
 * <p>The coordinator API does not say, but its context exposes the checkpoint
 * coordinator, whose store holds the completed checkpoint being restored.
 * Flink (2.3, {@code DefaultCheckpointPlan}) gives the subtasks whose task was
 * FINISHED when that checkpoint was triggered a {@code
 * FinishedOperatorSubtaskState} ({@link OperatorSubtaskState#isFinished()};
 * {@link OperatorState#isFullyFinished()} when all are); a task that only
 * snapshotted after {@code finish()} keeps its ordinary state. That is the set
 * SEMANTICS asks for: a task finishes only after its final checkpoint
 * completed, its events reach the coordinator before its acknowledgement, and
 * the next checkpoint is triggered after that completion, so every event of a
 * finished writer is in the coordinator's state of the restored checkpoint.
 *
 * <p>Measured (the uneven-finish and finished-global-failover tests): after
 * such a restore Flink 2.3 still runs the finished subtasks' operators once
 * more, restored with no state, and calls {@code endInput} again. The
 * connector passes their replays on like any event; the core ignores a
 * finished subtask's restore events and resets (SEMANTICS 6.2).
 */
final class FinishedSubtasks {
    private FinishedSubtasks() {}

    /**
     * The finished subtasks of operator {@code context.getOperatorId()} in
     * checkpoint {@code checkpointId}; empty when the checkpoint is not in the
     * store (then every subtask is expected to send a restore event).
     */
    static int[] at(OperatorCoordinator.Context context, long checkpointId, int parallelism)
            throws Exception {
        CheckpointCoordinator checkpoints = context.getCheckpointCoordinator();
        if (checkpoints == null) {
            return new int[0];
        }
        OperatorID operator = context.getOperatorId();
        for (CompletedCheckpoint checkpoint : checkpoints.getCheckpointStore()
                .getAllCheckpoints()) {
            if (checkpoint.getCheckpointID() != checkpointId) {
                continue;
            }
            OperatorState state = checkpoint.getOperatorStates().get(operator);
            if (state == null) {
                return new int[0];
            }
            List<Integer> finished = new ArrayList<>();
            for (int s = 0; s < parallelism; s++) {
                OperatorSubtaskState subtask = state.getState(s);
                if (state.isFullyFinished() || (subtask != null && subtask.isFinished())) {
                    finished.add(s);
                }
            }
            return finished.stream().mapToInt(Integer::intValue).toArray();
        }
        return new int[0];
    }
}
