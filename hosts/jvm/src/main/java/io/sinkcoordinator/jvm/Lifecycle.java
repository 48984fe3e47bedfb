package io.sinkcoordinator.jvm;

/** A coordinator's lifecycle state (WIT {@code lifecycle}). */
public enum Lifecycle {
  CREATED,
  RESTORING,
  RUNNING,
  CLOSED,
  FAILED;

  /** The WIT name ({@code running}, ...). */
  public String witName() {
    return WitNames.of(this);
  }

  @Override
  public String toString() {
    return witName();
  }
}
