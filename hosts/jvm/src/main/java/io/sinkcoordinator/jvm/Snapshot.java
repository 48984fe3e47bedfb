package io.sinkcoordinator.jvm;

import java.util.List;
import java.util.OptionalLong;

/**
 * One snapshot of the table's log (WIT {@code snapshot}).
 *
 * @param id 1, 2, 3 ... per table
 * @param identifier the checkpoint it commits (or {@link Entry#END})
 * @param committables (subtask, committable) in subtask order, then report order
 */
public record Snapshot(
    long id,
    String commitUser,
    long identifier,
    OptionalLong watermark,
    long timeMs,
    List<Committable> committables) {
  public Snapshot {
    committables = List.copyOf(committables);
  }

  /** One committable of a snapshot and the subtask that reported it. */
  public record Committable(int subtask, byte[] bytes) {}
}
