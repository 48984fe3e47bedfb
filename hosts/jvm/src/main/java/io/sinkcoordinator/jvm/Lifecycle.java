package io.sinkcoordinator.jvm;

/** A coordinator's lifecycle state (WIT {@code lifecycle}). */
public enum Lifecycle implements WitEnum {
  CREATED,
  RESTORING,
  RUNNING,
  CLOSED,
  FAILED;

  @Override
  public String toString() {
    return witName();
  }
}
