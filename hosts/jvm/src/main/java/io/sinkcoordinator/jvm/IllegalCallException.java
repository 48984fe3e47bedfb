package io.sinkcoordinator.jvm;

/** Fatal: the call is not allowed in the instance's state (WIT error kind {@code illegal-state}). */
public final class IllegalCallException extends CoordinatorException {
  private static final long serialVersionUID = 1L;

  IllegalCallException(String message, int applied, Outcome outcome) {
    super("illegal-state", message, applied, outcome, null);
  }
}
