package io.sinkcoordinator.jvm;

/** A coordinator's lifecycle state (WIT {@code lifecycle}). */
public enum Lifecycle {
  CREATED("created"),
  RESTORING("restoring"),
  RUNNING("running"),
  CLOSED("closed"),
  FAILED("failed");

  private final String witName;

  Lifecycle(String witName) {
    this.witName = witName;
  }

  /** The WIT name ({@code running}, ...). */
  public String witName() {
    return witName;
  }

  @Override
  public String toString() {
    return witName;
  }
}
