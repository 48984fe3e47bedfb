package io.sinkcoordinator.jvm;

/** Fatal: the call's content breaks a rule or a size limit (WIT error kind {@code invalid-event}). */
public final class InvalidEventException extends CoordinatorException {
  private static final long serialVersionUID = 1L;

  InvalidEventException(String message, int applied, Outcome outcome) {
    super("invalid-event", message, applied, outcome, null);
  }
}
