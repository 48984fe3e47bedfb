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
 * Which writer subtasks Flink will not run again after restoring from a
 * checkpoint (SEMANTICS 6.2 {@code finished-subtasks}).
 *
 * <p>FLIP-147 records an operator subtask whose task had finished before the
 * checkpoint (or whose operators had all finished when it snapshotted) as
 * "finished" in the checkpoint, and a restore deploys such a task as finished
 * without initializing its operators: it sends no restore event. The
 * coordinator API does not say which subtasks these are, but its context
 * exposes the checkpoint coordinator, whose store holds the completed
 * checkpoint being restored; its state of this operator marks them ({@link
 * OperatorState#isFullyFinished()}, {@link OperatorSubtaskState#isFinished()}).
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
        for (CompletedCheckpoint checkpoint : checkpoints.getCheckpointStore().getAllCheckpoints()) {
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
