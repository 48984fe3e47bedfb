package io.sinkcoordinator.jvm;

import java.util.List;

/**
 * A component or core module refused at load: not a wasm binary, not a sink coordinator, or its
 * WIT package version is outside {@link CoordinatorRuntime#COMPATIBLE_VERSIONS} (the same range
 * and message as the Rust, Node and Python hosts).
 */
public final class IncompatibleComponentException extends Exception {
  private static final long serialVersionUID = 1L;

  private final List<String> found;

  IncompatibleComponentException(String message, List<String> found, Throwable cause) {
    super(message, cause);
    this.found = List.copyOf(found);
  }

  /** The {@code sink:coordinator} versions the module's names carry (sorted). */
  public List<String> found() {
    return found;
  }
}
