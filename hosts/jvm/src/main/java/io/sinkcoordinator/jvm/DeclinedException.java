package io.sinkcoordinator.jvm;

/** Refused: nothing changed, the instance stays usable (WIT error kind {@code declined}). */
public final class DeclinedException extends CoordinatorException {
  private static final long serialVersionUID = 1L;

  DeclinedException(String message, int applied, Outcome outcome) {
    super("declined", message, applied, outcome, null);
  }
}
