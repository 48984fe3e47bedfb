package io.sinkcoordinator.jvm;

/** When the final commit happens (WIT {@code final-commit-mode}). */
public enum FinalCommitMode {
  /** At the first checkpoint-complete after the last END entry. */
  ON_CHECKPOINT("on-checkpoint"),
  /** Within the call that delivers the last END entry. */
  ON_END_INPUT("on-end-input");

  private final String witName;

  FinalCommitMode(String witName) {
    this.witName = witName;
  }

  /** The WIT name. */
  public String witName() {
    return witName;
  }

  /** The mode of a WIT name, or null. */
  public static FinalCommitMode fromWitName(String name) {
    for (FinalCommitMode m : values()) {
      if (m.witName.equals(name)) {
        return m;
      }
    }
    return null;
  }
}
