package io.sinkcoordinator.jvm;

import java.util.Objects;

/** One writer event of a batch ({@link Coordinator#events}): the arguments of one event call. */
public record WriterEvent(int subtask, int attempt, Entry entry) {
  public WriterEvent {
    Objects.requireNonNull(entry, "entry");
  }
}
