package io.sinkcoordinator.jvm;

/** A storage import failed; the input was accepted and repeating the call is safe (WIT error kind {@code storage}). */
public final class StorageException extends CoordinatorException {
  private static final long serialVersionUID = 1L;

  StorageException(String message, int applied, Outcome outcome) {
    super("storage", message, applied, outcome, null);
  }
}
