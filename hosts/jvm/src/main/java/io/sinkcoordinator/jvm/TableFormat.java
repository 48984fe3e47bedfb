package io.sinkcoordinator.jvm;

/**
 * How a coordinator writes its table (WIT {@code table-format}, added in 0.2.5); see {@link
 * Coordinator#setTableFormat}. Host configuration, not part of the state bytes: a restored
 * coordinator is given its format again.
 */
public enum TableFormat implements WitEnum {
  /** This project's own snapshot log ({@code snapshot/<20 digits>}, {@code tag/<name>}). */
  NATIVE,
  /**
   * An Apache Paimon append table with unaware buckets (docs/paimon.md): {@code schema/schema-0}
   * must be in the storage, and every committable is one data file's metadata (encoding {@code
   * PCM} v1).
   */
  PAIMON;

  /** The format of a WIT name, or null. */
  public static TableFormat fromWitName(String name) {
    return WitNames.lookup(values(), name);
  }
}
