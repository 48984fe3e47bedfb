package io.sinkcoordinator.jvm;

/** What a recovery that committed something asks of the host (WIT {@code recovery-mode}). */
public enum RecoveryMode {
  /** Fail over once more ({@link Outcome#restartRequired()}). */
  RESTART("restart"),
  /** Keep running. */
  CONTINUE("continue");

  private final String witName;

  RecoveryMode(String witName) {
    this.witName = witName;
  }

  /** The WIT name. */
  public String witName() {
    return witName;
  }

  /** The mode of a WIT name, or null. */
  public static RecoveryMode fromWitName(String name) {
    for (RecoveryMode m : values()) {
      if (m.witName.equals(name)) {
        return m;
      }
    }
    return null;
  }
}
