package io.sinkcoordinator.jvm;

import java.util.List;

/**
 * The table's object store, supplied by the host (WIT interface {@code storage}). Keys are
 * {@code /}-separated ASCII paths such as {@code snapshot/00000000000000000001}.
 *
 * <p>A failure is reported by throwing {@link BackendException}; anything else thrown traps the
 * component. Calls come from the thread that called the coordinator, one at a time, and must not
 * call back into the same coordinator.
 */
public interface Storage {
  /** The value of {@code key}, or null if it does not exist. */
  byte[] get(String key) throws BackendException;

  /**
   * Atomic create: writes {@code value} only if {@code key} does not exist; true if this call
   * created it. This is how exactly-once is enforced: it must be atomic against every other
   * writer of the table.
   */
  boolean putIfAbsent(String key, byte[] value) throws BackendException;

  /** Overwriting write (hints only, never snapshots or tags). */
  void put(String key, byte[] value) throws BackendException;

  /** Removes {@code key}; deleting a missing key succeeds. */
  void delete(String key) throws BackendException;

  /** The keys starting with {@code prefix}, in byte order of their UTF-8. */
  List<String> list(String prefix) throws BackendException;
}
