package io.sinkcoordinator.jvm;

import java.util.Optional;
import java.util.OptionalInt;

/**
 * A coordinator, writer or table call returned an error: one subclass per SEMANTICS error kind
 * (WIT {@code error-kind}), plus {@link ComponentTrapException}. Checked on purpose: every call
 * can fail, and the kinds differ in what the host does next (resend after {@link
 * DeclinedException} and {@link StorageException}, fail over after the fatal ones).
 */
public abstract sealed class CoordinatorException extends Exception
    permits DeclinedException,
        StorageException,
        IllegalCallException,
        InvalidEventException,
        InvalidConfigException,
        CorruptStateException,
        ComponentTrapException {
  private static final long serialVersionUID = 1L;

  private final String kind;
  private final String detail;
  private final int applied;
  private final transient Outcome outcome;

  /** Each subclass passes the WIT name of its kind. */
  CoordinatorException(String kind, String detail, int applied, Outcome outcome, Throwable cause) {
    super(detail, cause);
    this.kind = kind;
    this.detail = detail;
    this.applied = applied;
    this.outcome = outcome;
  }

  /** The WIT kebab-case name of the kind ({@code declined}, ..., {@code trap}). */
  public String kind() {
    return kind;
  }

  /** Whether the instance is unusable after this error (every kind but declined and storage). */
  public boolean fatal() {
    return !kind.equals("declined") && !kind.equals("storage");
  }

  /** The component's message: names the subtask and checkpoint involved. */
  public String detail() {
    return detail;
  }

  @Override
  public String getMessage() {
    return kind() + ": " + detail;
  }

  /**
   * For {@link Coordinator#events}: how many events were applied before the error (the failing
   * event's index); after declined or storage, resend from there.
   */
  public OptionalInt applied() {
    return applied < 0 ? OptionalInt.empty() : OptionalInt.of(applied);
  }

  /** For {@link Coordinator#events}: what the applied events did, merged. */
  public Optional<Outcome> outcome() {
    return Optional.ofNullable(outcome);
  }

  /** The exception of a WIT error kind (0 declined ... 5 corrupt-state). */
  static CoordinatorException of(int kind, String message, int applied, Outcome outcome) {
    return switch (kind) {
      case 0 -> new DeclinedException(message, applied, outcome);
      case 1 -> new StorageException(message, applied, outcome);
      case 2 -> new IllegalCallException(message, applied, outcome);
      case 3 -> new InvalidEventException(message, applied, outcome);
      case 4 -> new InvalidConfigException(message, applied, outcome);
      case 5 -> new CorruptStateException(message, applied, outcome);
      default -> throw new IndexOutOfBoundsException("error kind " + kind);
    };
  }
}
