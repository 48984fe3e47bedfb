package io.sinkcoordinator.jvm;

/** What a recovery that committed something asks of the host (WIT {@code recovery-mode}). */
public enum RecoveryMode implements WitEnum {
  /** Fail over once more ({@link Outcome#restartRequired()}). */
  RESTART,
  /** Keep running. */
  CONTINUE;

  /** The mode of a WIT name, or null. */
  public static RecoveryMode fromWitName(String name) {
    return WitNames.lookup(values(), name);
  }
}
