package io.sinkcoordinator.jvm;

/** Fatal: the configuration or the limits are rejected (WIT error kind {@code invalid-config}). */
public final class InvalidConfigException extends CoordinatorException {
  private static final long serialVersionUID = 1L;

  InvalidConfigException(String message, int applied, Outcome outcome) {
    super("invalid-config", message, applied, outcome, null);
  }
}
