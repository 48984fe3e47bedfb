package io.sinkcoordinator.jvm;

/** Fatal: state bytes or table contents cannot be decoded (WIT error kind {@code corrupt-state}). */
public final class CorruptStateException extends CoordinatorException {
  private static final long serialVersionUID = 1L;

  CorruptStateException(String message, int applied, Outcome outcome) {
    super("corrupt-state", message, applied, outcome, null);
  }
}
