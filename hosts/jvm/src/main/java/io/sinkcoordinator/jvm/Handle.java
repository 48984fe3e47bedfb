package io.sinkcoordinator.jvm;

import java.util.Objects;

/**
 * What {@link Coordinator}, {@link Writer} and {@link Table} share: one guest instance, calls
 * serialized and never nested, and the rule of docs/embedding.md section 6: after a trap the
 * instance is discarded and never entered again.
 */
abstract class Handle {
  /** A call into the guest that may return the component's error. */
  interface GuestCall<T> {
    T apply(Guest g) throws CoordinatorException;
  }

  final CoordinatorRuntime runtime;
  final Storage storage;
  final Clock clock;
  private Guest guest;
  private String discarded;
  private boolean inCall;

  Handle(CoordinatorRuntime runtime, Storage storage, Clock clock) {
    this.runtime = Objects.requireNonNull(runtime, "runtime");
    this.storage = Objects.requireNonNull(storage, "storage");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /**
   * Runs {@code fn} on the instance (created on first use). The component's errors pass through;
   * anything else (a Chicory trap, a memory bound, an exception a storage or clock threw, a
   * malformed result) discards the instance and becomes a {@link ComponentTrapException}.
   */
  final synchronized <T> T call(String what, GuestCall<T> fn) throws CoordinatorException {
    if (discarded != null) {
      throw new ComponentTrapException(
          "the instance was discarded after a trap: " + discarded, null);
    }
    if (inCall) {
      // A Storage calling back into its own coordinator: the guest is mid-call (its allocator
      // or a RefCell may be borrowed), so entering it again would corrupt it.
      throw new ComponentTrapException(what + ": a call nested inside an import call", null);
    }
    inCall = true;
    Guest g = guest;
    try {
      if (g == null) {
        g = new Guest(runtime, storage, clock);
        guest = g;
      }
      return fn.apply(g);
    } catch (CoordinatorException e) {
      throw e;
    } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
      Throwable cause = g != null && g.importFailure != null ? g.importFailure : e;
      String message = what + " trapped: " + describe(cause);
      trapped(message);
      throw new ComponentTrapException(message, cause);
    } finally {
      inCall = false;
    }
  }

  private static String describe(Throwable t) {
    String m = t.getMessage();
    return m == null ? t.getClass().getSimpleName() : m;
  }

  /** After a trap: the handle refuses every call (a table overrides this: it is stateless). */
  void trapped(String message) {
    discarded = message;
    guest = null;
  }

  /** Drops the instance as after a trap, but with a plain reason (the state lives on elsewhere). */
  final synchronized void discardInstance(String reason) {
    if (discarded == null) {
      discarded = reason;
    }
    guest = null;
  }

  /** Whether a trap (or {@code discard}) discarded this handle's instance. */
  public final synchronized boolean discarded() {
    return discarded != null;
  }

  /** The runtime the instance runs on. */
  public final CoordinatorRuntime runtime() {
    return runtime;
  }
}
