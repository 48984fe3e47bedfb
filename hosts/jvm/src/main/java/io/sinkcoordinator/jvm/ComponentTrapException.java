package io.sinkcoordinator.jvm;

/**
 * The component trapped (a guest bug, a host-imposed limit, or an exception other than {@link
 * BackendException} thrown by a {@link Storage} or {@link Clock}; the cause says which). Fatal:
 * the instance is discarded and never entered again (docs/embedding.md section 6), every later
 * call on the handle throws this again at once; a {@link Table} starts a fresh instance.
 */
public final class ComponentTrapException extends CoordinatorException {
  private static final long serialVersionUID = 1L;

  ComponentTrapException(String message, Throwable cause) {
    super("trap", message, -1, null, cause);
  }
}
