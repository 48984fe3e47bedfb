package io.sinkcoordinator.jvm;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A table in memory (tests, examples). Thread-safe, so several coordinators of one table (several
 * instances sharing the host's storage) can use one; values are copied in and out. It applies the
 * key rules of every backend ({@link DirectoryStorage}'s check: a refused key or prefix is an
 * {@link BackendException.Kind#INVALID_KEY} error and nothing is stored), and no value bound (it
 * only holds the values it is handed).
 */
public final class MemoryStorage implements Storage {
  // Ordered by the UTF-8 bytes of the keys, as Rust's String order (list's contract); for the
  // ASCII keys the component uses this is also String order, but a host may store others.
  private final TreeMap<String, byte[]> items = new TreeMap<>(MemoryStorage::byteOrder);

  static int byteOrder(String a, String b) {
    return Arrays.compareUnsigned(
        a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public synchronized byte[] get(String key) throws BackendException {
    DirectoryStorage.check("key", key, false);
    byte[] v = items.get(key);
    return v == null ? null : v.clone();
  }

  @Override
  public synchronized boolean putIfAbsent(String key, byte[] value) throws BackendException {
    DirectoryStorage.check("key", key, false);
    return items.putIfAbsent(key, value.clone()) == null;
  }

  @Override
  public synchronized void put(String key, byte[] value) throws BackendException {
    DirectoryStorage.check("key", key, false);
    items.put(key, value.clone());
  }

  @Override
  public synchronized void delete(String key) throws BackendException {
    DirectoryStorage.check("key", key, false);
    items.remove(key);
  }

  @Override
  public synchronized List<String> list(String prefix) throws BackendException {
    DirectoryStorage.check("prefix", prefix, true);
    List<String> keys = new ArrayList<>();
    for (Map.Entry<String, byte[]> e : items.tailMap(prefix, true).entrySet()) {
      if (!e.getKey().startsWith(prefix)) {
        break;
      }
      keys.add(e.getKey());
    }
    return keys;
  }

  /** A copy of every key and value (tests). */
  public synchronized Map<String, byte[]> snapshot() {
    TreeMap<String, byte[]> copy = new TreeMap<>(MemoryStorage::byteOrder);
    items.forEach((k, v) -> copy.put(k, v.clone()));
    return copy;
  }
}
