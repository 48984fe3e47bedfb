package io.sinkcoordinator.jvm;

/** When the final commit happens (WIT {@code final-commit-mode}). */
public enum FinalCommitMode implements WitEnum {
  /** At the first checkpoint-complete after the last END entry. */
  ON_CHECKPOINT,
  /** Within the call that delivers the last END entry. */
  ON_END_INPUT;

  /** The mode of a WIT name, or null. */
  public static FinalCommitMode fromWitName(String name) {
    return WitNames.lookup(values(), name);
  }
}
