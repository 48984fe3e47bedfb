package io.sinkcoordinator.jvm;

/** The only clock the component reads (WIT interface {@code clock}). */
@FunctionalInterface
public interface Clock {
  /** Milliseconds since the Unix epoch (an unsigned u64). */
  long nowMs();

  /** The system's wall clock. */
  static Clock system() {
    return System::currentTimeMillis;
  }
}
