package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A directory table that starts failing mid-run (issue 26: "mid-run storage failure tested
 * natively only"): after two commits every storage call fails, and the coordinator's call is a
 * typed {@link StorageException} (the handle stays usable); once the storage is back the same call
 * commits. Then a create-once that lands but reports an error (an ambiguous write: the answer was
 * lost) is resolved by the retry without a duplicate.
 */
class StorageFailureTest {
  @TempDir Path dir;

  /** Fails every call while {@code down}, or applies one create and then fails ({@code loseAck}). */
  static final class Flaky implements Storage {
    final Storage inner;
    boolean down;
    boolean loseAck;
    int failures;

    Flaky(Storage inner) {
      this.inner = inner;
    }

    private void gate(String op, String key) throws BackendException {
      if (down) {
        failures++;
        throw BackendException.io("storage down: " + op + " " + key);
      }
    }

    @Override
    public byte[] get(String key) throws BackendException {
      gate("get", key);
      return inner.get(key);
    }

    @Override
    public boolean putIfAbsent(String key, byte[] value) throws BackendException {
      gate("put-if-absent", key);
      boolean created = inner.putIfAbsent(key, value);
      if (loseAck) {
        loseAck = false;
        failures++;
        throw BackendException.io("connection lost after put-if-absent " + key + " was applied");
      }
      return created;
    }

    @Override
    public void put(String key, byte[] value) throws BackendException {
      gate("put", key);
      inner.put(key, value);
    }

    @Override
    public void delete(String key) throws BackendException {
      gate("delete", key);
      inner.delete(key);
    }

    @Override
    public List<String> list(String prefix) throws BackendException {
      gate("list", prefix);
      return inner.list(prefix);
    }
  }

  private static void prepare(Coordinator c, long cp) throws CoordinatorException {
    byte[] committable = ("c" + cp).getBytes(StandardCharsets.UTF_8);
    c.event(0, 0, new Entry(cp, List.of(committable), OptionalLong.of(cp), false));
    c.checkpoint(cp);
  }

  @Test
  void aDirectoryStorageFailingMidRunRecoversWithoutADuplicate() throws Exception {
    Flaky storage = new Flaky(new DirectoryStorage(dir));
    Coordinator c =
        new Coordinator(Config.of(1, "job-1"), storage, new ManualClock(7), null, CoordinatorRuntime.bundled());
    c.start();
    prepare(c, 1);
    assertEquals(List.of(1L), c.checkpointComplete(1).committed());
    prepare(c, 2);
    assertEquals(List.of(2L), c.checkpointComplete(2).committed());

    // The storage goes down mid-run: a typed, retryable error, not a trap.
    prepare(c, 3);
    storage.down = true;
    StorageException e = assertThrows(StorageException.class, () -> c.checkpointComplete(3));
    assertFalse(e.fatal());
    assertTrue(e.detail().contains("storage down"), e.detail());
    assertThrows(StorageException.class, () -> c.checkpointComplete(3));
    storage.down = false;
    assertEquals(List.of(3L), c.checkpointComplete(3).committed());

    // A create that lands but answers with an error: the retry finds its own commit.
    prepare(c, 4);
    storage.loseAck = true;
    assertThrows(StorageException.class, () -> c.checkpointComplete(4));
    c.checkpointComplete(4);
    prepare(c, 5);
    assertEquals(List.of(5L), c.checkpointComplete(5).committed());
    assertTrue(storage.failures >= 3, "failures injected: " + storage.failures);

    List<Long> ids =
        new Table(new DirectoryStorage(dir)).listSnapshots().stream().map(Snapshot::identifier).toList();
    assertEquals(List.of(1L, 2L, 3L, 4L, 5L), ids);
  }
}
