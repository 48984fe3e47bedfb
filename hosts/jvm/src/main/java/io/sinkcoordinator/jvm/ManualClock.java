package io.sinkcoordinator.jvm;

/** A clock that reads a settable value (tests, examples, deterministic replays). */
public final class ManualClock implements Clock {
  private volatile long ms;

  public ManualClock(long ms) {
    this.ms = ms;
  }

  @Override
  public long nowMs() {
    return ms;
  }

  /** Sets the time. */
  public void set(long ms) {
    this.ms = ms;
  }

  /** Moves the time forward by {@code deltaMs}. */
  public void advance(long deltaMs) {
    this.ms += deltaMs;
  }
}
