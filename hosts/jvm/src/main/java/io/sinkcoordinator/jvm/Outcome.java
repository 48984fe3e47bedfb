package io.sinkcoordinator.jvm;

import java.util.List;
import java.util.OptionalLong;

/**
 * What one call did (WIT {@code outcome}); a batch's merged outcome has the same shape.
 *
 * @param committed identifiers of the snapshots this call wrote, in log order (unsigned)
 * @param restartRequired the recovery committed something and recovery = restart
 * @param committedUpTo committed-up-to after the call (SEMANTICS 5.5): forward it to every
 *     writer ({@link Writer#committed})
 */
public record Outcome(
    Lifecycle state,
    List<Long> committed,
    List<String> tagsCreated,
    List<String> tagsDeleted,
    boolean restartRequired,
    OptionalLong committedUpTo) {
  public Outcome {
    committed = List.copyOf(committed);
    tagsCreated = List.copyOf(tagsCreated);
    tagsDeleted = List.copyOf(tagsDeleted);
  }
}
