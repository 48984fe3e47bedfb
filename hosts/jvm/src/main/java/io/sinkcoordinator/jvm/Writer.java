package io.sinkcoordinator.jvm;

import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * The writer-side half of the protocol for one subtask (WIT resource {@code writer}, SEMANTICS
 * 11): what a writer keeps in its checkpointed state and which event it sends. Its instance links
 * a storage and a clock that it never calls.
 */
public final class Writer extends Handle {
  private static final Storage NO_STORAGE =
      new Storage() {
        @Override
        public byte[] get(String key) throws BackendException {
          throw BackendException.io("a writer has no storage");
        }

        @Override
        public boolean putIfAbsent(String key, byte[] value) throws BackendException {
          throw BackendException.io("a writer has no storage");
        }

        @Override
        public void put(String key, byte[] value) throws BackendException {
          throw BackendException.io("a writer has no storage");
        }

        @Override
        public void delete(String key) throws BackendException {
          throw BackendException.io("a writer has no storage");
        }

        @Override
        public List<String> list(String prefix) throws BackendException {
          throw BackendException.io("a writer has no storage");
        }
      };

  private final int handle;
  private final String w;

  /** A writer on the bundled module. */
  public Writer(int subtask) throws CoordinatorException {
    this(subtask, CoordinatorRuntime.bundled());
  }

  public Writer(int subtask, CoordinatorRuntime runtime) throws CoordinatorException {
    this(subtask, NO_STORAGE, Clock.system(), runtime);
  }

  /** A writer whose instance links {@code storage} and {@code clock} (it calls neither). */
  public Writer(int subtask, Storage storage, Clock clock, CoordinatorRuntime runtime)
      throws CoordinatorException {
    super(runtime, storage, clock);
    this.w = runtime.names.w;
    this.handle = call("constructor", g -> g.call(w + "[constructor]writer", subtask));
  }

  /** A method returning {@code result<entry, error>}: both payloads at ret + 8. */
  private Entry entryResult(Guest g, String name, int ret) throws CoordinatorException {
    boolean ok = g.u8(ret) == 0;
    Entry e = ok ? Lift.entry(g, ret + 8) : null;
    CoordinatorException err = ok ? null : Lift.error(g, ret + 8, -1, null);
    g.post(name, ret);
    if (err != null) {
      throw err;
    }
    return e;
  }

  /** A method returning {@code result<_, error>}: the error at ret + 4. */
  private static void unitResult(Guest g, String name, int ret) throws CoordinatorException {
    CoordinatorException err = g.u8(ret) == 0 ? null : Lift.error(g, ret + 4, -1, null);
    g.post(name, ret);
    if (err != null) {
      throw err;
    }
  }

  /**
   * Buffers the entry for {@code checkpoint} (strictly increasing) and returns the event to send.
   */
  public Entry report(
      long checkpoint, List<byte[]> committables, OptionalLong watermark, boolean savepoint)
      throws CoordinatorException {
    Objects.requireNonNull(committables, "committables");
    Objects.requireNonNull(watermark, "watermark");
    String name = w + "[method]writer.report";
    return call(
        "report",
        g -> {
          int list = g.lowerByteLists(committables);
          int ret =
              g.call(
                  name,
                  g.writerRep(handle),
                  checkpoint,
                  list,
                  committables.size(),
                  watermark.isPresent() ? 1 : 0,
                  watermark.orElse(0),
                  savepoint ? 1 : 0);
          return entryResult(g, name, ret);
        });
  }

  /** The END entry to send; appended to a restored END entry. */
  public Entry endInput(List<byte[]> committables, OptionalLong watermark)
      throws CoordinatorException {
    Objects.requireNonNull(committables, "committables");
    Objects.requireNonNull(watermark, "watermark");
    String name = w + "[method]writer.end-input";
    return call(
        "end-input",
        g -> {
          int list = g.lowerByteLists(committables);
          int ret =
              g.call(
                  name,
                  g.writerRep(handle),
                  list,
                  committables.size(),
                  watermark.isPresent() ? 1 : 0,
                  watermark.orElse(0));
          return entryResult(g, name, ret);
        });
  }

  /**
   * The coordinator's committed-up-to, forwarded by the host: drops buffered entries up to it.
   */
  public void committed(long checkpoint) throws CoordinatorException {
    String name = w + "[method]writer.committed";
    call(
        "committed",
        g -> {
          unitResult(g, name, g.call(name, g.writerRep(handle), checkpoint));
          return null;
        });
  }

  /** Clears the savepoint flag of entry {@code checkpoint}. */
  public void checkpointAborted(long checkpoint) throws CoordinatorException {
    String name = w + "[method]writer.checkpoint-aborted";
    call(
        "checkpoint-aborted",
        g -> {
          unitResult(g, name, g.call(name, g.writerRep(handle), checkpoint));
          return null;
        });
  }

  /** The buffer as versioned bytes (for the engine's checkpoint). */
  public byte[] state() throws CoordinatorException {
    String name = w + "[method]writer.state";
    return call(
        "state",
        g -> {
          int ret = g.call(name, g.writerRep(handle));
          byte[] b = g.bytes(g.i32(ret), g.i32(ret + 4));
          g.post(name, ret);
          return b;
        });
  }

  /**
   * Restores a fresh writer from {@code state} taken at {@code checkpoint}; returns the entries of
   * the single {@link Coordinator#restored} event to send.
   */
  public List<Entry> restore(byte[] state, long checkpoint) throws CoordinatorException {
    Objects.requireNonNull(state, "state");
    String name = w + "[method]writer.restore";
    return call(
        "restore",
        g -> {
          int p = g.lowerBytes(state);
          int ret = g.call(name, g.writerRep(handle), p, state.length, checkpoint);
          // result<list<entry>, error>: both payloads at ret + 4
          boolean ok = g.u8(ret) == 0;
          List<Entry> entries = ok ? Lift.entries(g, g.i32(ret + 4), g.i32(ret + 8)) : null;
          CoordinatorException err = ok ? null : Lift.error(g, ret + 4, -1, null);
          g.post(name, ret);
          if (err != null) {
            throw err;
          }
          return entries;
        });
  }
}
