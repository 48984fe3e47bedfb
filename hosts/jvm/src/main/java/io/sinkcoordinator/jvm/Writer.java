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
  private static Entry entryResult(Guest g, String name, int ret) throws CoordinatorException {
    return Lift.result(g, name, ret, 8, Lift::entry);
  }

  /** A method of {@code (handle, checkpoint) -> result<_, error>}: the error at ret + 4. */
  private void checkpointMethod(String method, long checkpoint) throws CoordinatorException {
    String name = w + "[method]writer." + method;
    call(method, g -> Lift.result(g, name, g.call(name, g.writerRep(handle), checkpoint), 4, null));
  }

  /** The flat call of a method that takes the committables, given their lowered list. */
  private interface CommittablesCall {
    int call(Guest g, String name, int list);
  }

  /** report and end-input: the committables lowered, then {@code result<entry, error>}. */
  private Entry entryMethod(
      String method, List<byte[]> committables, OptionalLong watermark, CommittablesCall fn)
      throws CoordinatorException {
    Objects.requireNonNull(committables, "committables");
    Objects.requireNonNull(watermark, "watermark");
    String name = w + "[method]writer." + method;
    return call(
        method, g -> entryResult(g, name, fn.call(g, name, g.lowerByteLists(committables))));
  }

  /**
   * Buffers the entry for {@code checkpoint} (strictly increasing) and returns the event to send.
   */
  public Entry report(
      long checkpoint, List<byte[]> committables, OptionalLong watermark, boolean savepoint)
      throws CoordinatorException {
    return entryMethod(
        "report",
        committables,
        watermark,
        (g, name, list) ->
            g.call(
                name,
                g.writerRep(handle),
                checkpoint,
                list,
                committables.size(),
                watermark.isPresent() ? 1 : 0,
                watermark.orElse(0),
                savepoint ? 1 : 0));
  }

  /** The END entry to send; appended to a restored END entry. */
  public Entry endInput(List<byte[]> committables, OptionalLong watermark)
      throws CoordinatorException {
    return entryMethod(
        "end-input",
        committables,
        watermark,
        (g, name, list) ->
            g.call(
                name,
                g.writerRep(handle),
                list,
                committables.size(),
                watermark.isPresent() ? 1 : 0,
                watermark.orElse(0)));
  }

  /**
   * The coordinator's committed-up-to, forwarded by the host: drops buffered entries up to it.
   */
  public void committed(long checkpoint) throws CoordinatorException {
    checkpointMethod("committed", checkpoint);
  }

  /** Clears the savepoint flag of entry {@code checkpoint}. */
  public void checkpointAborted(long checkpoint) throws CoordinatorException {
    checkpointMethod("checkpoint-aborted", checkpoint);
  }

  /** The buffer as versioned bytes (for the engine's checkpoint). */
  public byte[] state() throws CoordinatorException {
    String name = w + "[method]writer.state";
    return call(
        "state",
        g -> {
          int ret = g.call(name, g.writerRep(handle));
          byte[] b = Lift.bytes(g, ret);
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
          return Lift.result(g, name, ret, 4, Lift::entries);
        });
  }
}
