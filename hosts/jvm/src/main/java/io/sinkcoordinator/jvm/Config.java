package io.sinkcoordinator.jvm;

import java.util.Objects;
import java.util.OptionalLong;

/**
 * A coordinator's configuration (WIT {@code config}). Nothing is checked until
 * {@link Coordinator#start()}: a bad value is an {@link InvalidConfigException} from there.
 *
 * @param parallelism writer subtasks, 1 ..= 1,000,000 (unsigned)
 * @param commitUser identity of this sink across restarts (non-empty)
 * @param checkpointing false = batch: the final commit happens on the last END entry
 * @param tagTimeRetainedMs empty = savepoint tags never expire (an unsigned u64 otherwise)
 */
public record Config(
    int parallelism,
    String commitUser,
    boolean checkpointing,
    FinalCommitMode finalCommit,
    boolean forceCreateSnapshot,
    boolean savepointAutoTag,
    OptionalLong tagTimeRetainedMs,
    RecoveryMode recovery) {

  public Config {
    Objects.requireNonNull(commitUser, "commitUser");
    Objects.requireNonNull(finalCommit, "finalCommit");
    Objects.requireNonNull(tagTimeRetainedMs, "tagTimeRetainedMs");
    Objects.requireNonNull(recovery, "recovery");
  }

  /** A streaming sink's defaults: checkpointing, final commit on checkpoint, restart on recovery. */
  public static Config of(int parallelism, String commitUser) {
    return new Config(
        parallelism,
        commitUser,
        true,
        FinalCommitMode.ON_CHECKPOINT,
        false,
        false,
        OptionalLong.empty(),
        RecoveryMode.RESTART);
  }
}
