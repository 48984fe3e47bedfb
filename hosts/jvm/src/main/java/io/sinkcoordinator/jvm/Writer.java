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
    this.handle = call("constructor", g -> g.call(Layout.WRITER_CONSTRUCTOR, subtask));
  }

  /** A method returning {@code result<entry, error>}. */
  private static Entry entryResult(Guest g, Layout.Export export, int ret)
      throws CoordinatorException {
    return Lift.result(g, export, ret, Layout.RESULT_ENTRY_ERROR_PAYLOAD, Lift::entry);
  }

  /** A method of {@code (handle, checkpoint) -> result<_, error>}. */
  private void checkpointMethod(Layout.Export export, long checkpoint)
      throws CoordinatorException {
    call(
        Guest.label(export),
        g -> {
          int ret = g.call(export, g.writerRep(handle), checkpoint);
          return Lift.result(g, export, ret, Layout.RESULT_ERROR_PAYLOAD, null);
        });
  }

  /** The flat call of a method that takes the committables, given their lowered list. */
  private interface CommittablesCall {
    int call(Guest g, Layout.Export export, int list);
  }

  /** report and end-input: the committables lowered, then {@code result<entry, error>}. */
  private Entry entryMethod(
      Layout.Export export,
      List<byte[]> committables,
      OptionalLong watermark,
      CommittablesCall fn)
      throws CoordinatorException {
    Objects.requireNonNull(committables, "committables");
    Objects.requireNonNull(watermark, "watermark");
    return call(
        Guest.label(export),
        g -> entryResult(g, export, fn.call(g, export, g.lowerByteLists(committables))));
  }

  /**
   * Buffers the entry for {@code checkpoint} (strictly increasing) and returns the event to send.
   */
  public Entry report(
      long checkpoint, List<byte[]> committables, OptionalLong watermark, boolean savepoint)
      throws CoordinatorException {
    return entryMethod(
        Layout.WRITER_REPORT,
        committables,
        watermark,
        (g, export, list) ->
            g.call(
                export,
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
        Layout.WRITER_END_INPUT,
        committables,
        watermark,
        (g, export, list) ->
            g.call(
                export,
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
    checkpointMethod(Layout.WRITER_COMMITTED, checkpoint);
  }

  /** Clears the savepoint flag of entry {@code checkpoint}. */
  public void checkpointAborted(long checkpoint) throws CoordinatorException {
    checkpointMethod(Layout.WRITER_CHECKPOINT_ABORTED, checkpoint);
  }

  /** The buffer as versioned bytes (for the engine's checkpoint). */
  public byte[] state() throws CoordinatorException {
    Layout.Export export = Layout.WRITER_STATE;
    return call(
        "state",
        g -> {
          int ret = g.call(export, g.writerRep(handle));
          byte[] b = Lift.bytes(g, ret);
          g.post(export, ret);
          return b;
        });
  }

  /**
   * Restores a fresh writer from {@code state} taken at {@code checkpoint}; returns the entries of
   * the single {@link Coordinator#restored} event to send.
   */
  public List<Entry> restore(byte[] state, long checkpoint) throws CoordinatorException {
    Objects.requireNonNull(state, "state");
    Layout.Export export = Layout.WRITER_RESTORE;
    return call(
        "restore",
        g -> {
          int p = g.lowerBytes(state);
          int ret = g.call(export, g.writerRep(handle), p, state.length, checkpoint);
          return Lift.result(g, export, ret, Layout.RESULT_LIST_ENTRY_ERROR_PAYLOAD, Lift::entries);
        });
  }
}
