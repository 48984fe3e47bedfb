package io.sinkcoordinator.jvm;

import java.util.List;
import java.util.Objects;

/**
 * A global failover: restore from the coordinator state of checkpoint {@code checkpoint} (WIT
 * {@code restore-point}).
 *
 * @param finishedSubtasks writers that had fully finished before {@code checkpoint}
 */
public record RestorePoint(long checkpoint, byte[] state, List<Integer> finishedSubtasks) {
  public RestorePoint {
    Objects.requireNonNull(state, "state");
    finishedSubtasks = List.copyOf(finishedSubtasks);
  }
}
