package io.sinkcoordinator.jvm;

/**
 * Thrown by a {@link Storage} implementation: the component receives it as its {@code
 * storage-error} ({@code io} or {@code invalid-key}) and fails the call with a {@link
 * StorageException}. Any other exception a storage throws traps the component ({@link
 * ComponentTrapException}).
 */
public class BackendException extends Exception {
  private static final long serialVersionUID = 1L;

  /** The two cases of WIT {@code storage-error}. */
  public enum Kind {
    /** The backend failed (I/O, network, injected fault); a write may or may not have landed. */
    IO,
    /** The key is not acceptable to this backend. */
    INVALID_KEY
  }

  private final Kind kind;

  public BackendException(Kind kind, String message) {
    this(kind, message, null);
  }

  public BackendException(Kind kind, String message, Throwable cause) {
    super(message, cause);
    this.kind = kind == null ? Kind.IO : kind;
  }

  /** An {@code io} error. */
  public static BackendException io(String message) {
    return new BackendException(Kind.IO, message);
  }

  /** An {@code invalid-key} error. */
  public static BackendException invalidKey(String message) {
    return new BackendException(Kind.INVALID_KEY, message);
  }

  public Kind kind() {
    return kind;
  }
}
