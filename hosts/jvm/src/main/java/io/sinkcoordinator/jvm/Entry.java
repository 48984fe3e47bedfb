package io.sinkcoordinator.jvm;

import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * What one writer reports for one checkpoint (WIT {@code entry}).
 *
 * @param checkpoint 0 ..= 2^63-2, or {@link #END}
 * @param committables opaque serialized committables, in report order (not copied: do not
 *     modify the arrays afterwards)
 * @param watermark empty = no watermark yet
 */
public record Entry(
    long checkpoint, List<byte[]> committables, OptionalLong watermark, boolean savepoint) {
  /** The checkpoint id of END (end of input): 2^63-1. */
  public static final long END = Long.MAX_VALUE;

  public Entry {
    committables = List.copyOf(committables);
    Objects.requireNonNull(watermark, "watermark");
  }
}
