package io.sinkcoordinator.jvm;

import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * The commit coordinator of one sink (WIT resource {@code coordinator}): one instance of the core
 * module over {@code storage} (the table) and {@code clock}, resuming from a {@link RestorePoint}
 * if given. One per sink and per incarnation; calls are serialized.
 *
 * <p>Every method throws the {@link CoordinatorException} subclass of the component's error kind;
 * {@link ComponentTrapException} if the component trapped (the handle is then discarded).
 * Numbers the WIT types as {@code u64} are Java longs read as unsigned.
 */
public final class Coordinator extends Handle {
  private final int handle;

  /** A coordinator on the bundled module, with the system clock. */
  public Coordinator(Config config, Storage storage) throws CoordinatorException {
    this(config, storage, Clock.system(), null, CoordinatorRuntime.bundled());
  }

  /**
   * A coordinator. Nothing is checked or read until {@link #start()}. The runtime's {@link
   * CoordinatorRuntime#tableFormat()}, if not native, is set before it returns.
   *
   * @param restore null for a fresh start
   */
  public Coordinator(
      Config config, Storage storage, Clock clock, RestorePoint restore, CoordinatorRuntime runtime)
      throws CoordinatorException {
    super(runtime, storage, clock);
    Objects.requireNonNull(config, "config");
    this.handle = call("constructor", g -> construct(g, config, restore));
    if (runtime.tableFormat() != TableFormat.NATIVE) {
      setTableFormat(runtime.tableFormat());
    }
  }

  private int construct(Guest g, Config config, RestorePoint restore) {
    // 16 flat parameters (exactly MAX_FLAT_PARAMS, so still flat): docs/embedding.md section 5
    byte[] user = config.commitUser().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    int userPtr = g.lowerBytes(user);
    long tagSome = config.tagTimeRetainedMs().isPresent() ? 1 : 0;
    long tagMs = config.tagTimeRetainedMs().orElse(0);
    long rSome = 0;
    long rCheckpoint = 0;
    long statePtr = 0;
    long stateLen = 0;
    long finishedPtr = 0;
    long finishedLen = 0;
    if (restore != null) {
      rSome = 1;
      rCheckpoint = restore.checkpoint();
      statePtr = g.lowerBytes(restore.state());
      stateLen = restore.state().length;
      List<Integer> fin = restore.finishedSubtasks();
      int p = g.alloc(4, Math.multiplyExact(4, fin.size())); // list<u32>
      for (int i = 0; i < fin.size(); i++) {
        g.writeI32(p + 4 * i, fin.get(i));
      }
      finishedPtr = p;
      finishedLen = fin.size();
    }
    return g.call(
        Layout.COORDINATOR_CONSTRUCTOR,
        config.parallelism(),
        userPtr,
        user.length,
        config.checkpointing() ? 1 : 0,
        config.finalCommit() == FinalCommitMode.ON_END_INPUT ? 1 : 0,
        config.forceCreateSnapshot() ? 1 : 0,
        config.savepointAutoTag() ? 1 : 0,
        tagSome,
        tagMs,
        config.recovery() == RecoveryMode.CONTINUE ? 1 : 0,
        rSome,
        rCheckpoint,
        statePtr,
        stateLen,
        finishedPtr,
        finishedLen);
  }

  /** A method returning {@code result<outcome, error>}. */
  private Outcome outcomeCall(Layout.Export export, long... rest) throws CoordinatorException {
    return call(
        Guest.label(export),
        g -> {
          long[] args = new long[rest.length + 1];
          args[0] = g.coordinatorRep(handle);
          System.arraycopy(rest, 0, args, 1, rest.length);
          return outcomeResult(g, export, g.call(export, args));
        });
  }

  private static Outcome outcomeResult(Guest g, Layout.Export export, int ret)
      throws CoordinatorException {
    return Lift.result(g, export, ret, Layout.RESULT_OUTCOME_ERROR_PAYLOAD, Lift::outcome);
  }

  /**
   * Sets the size limits (host configuration); only while created, i.e. before {@link #start()}.
   */
  public void setLimits(Limits limits) throws CoordinatorException {
    Objects.requireNonNull(limits, "limits");
    Layout.Export export = Layout.COORDINATOR_SET_LIMITS;
    call(
        "set-limits",
        g -> {
          int ret =
              g.call(
                  export,
                  g.coordinatorRep(handle),
                  limits.maxCommittableBytes(),
                  limits.maxEventBytes(),
                  limits.maxSnapshotBytes());
          return Lift.result(g, export, ret, Layout.RESULT_ERROR_PAYLOAD, null);
        });
  }

  /**
   * Chooses the table format (host configuration, WIT 0.2.5); only while created, i.e. before
   * {@link #start()}, else a fatal {@link IllegalCallException}. {@link TableFormat#PAIMON} writes
   * an Apache Paimon table: {@code schema/schema-0} must be in the storage, and a committable that
   * is not a data file's metadata the table takes is a fatal {@link InvalidEventException} naming
   * its subtask and checkpoint.
   *
   * <p>A module older than 0.2.5 has no {@code set-table-format} and writes the native log only
   * ({@link CoordinatorRuntime#hasSetTableFormat()}): {@link TableFormat#NATIVE} needs no call,
   * any other format throws {@link InvalidConfigException} without entering the guest (the
   * coordinator stays usable), with the message of the Rust host.
   */
  public void setTableFormat(TableFormat format) throws CoordinatorException {
    Objects.requireNonNull(format, "format");
    Layout.Export export = Layout.COORDINATOR_SET_TABLE_FORMAT;
    call(
        "set-table-format",
        g -> {
          if (runtime.names.setTableFormat == null) {
            if (format == TableFormat.NATIVE) {
              return null;
            }
            throw new InvalidConfigException(
                "table-format "
                    + format.witName()
                    + ": the component has no set-table-format (it needs WIT 0.2.5 or later)",
                -1,
                null);
          }
          // (handle, enum discriminant) -> result<_, error>
          int ret = g.call(export, g.coordinatorRep(handle), format.ordinal());
          return Lift.result(g, export, ret, Layout.RESULT_ERROR_PAYLOAD, null);
        });
  }

  /** created -> running (fresh) or restoring (with a restore point). */
  public Outcome start() throws CoordinatorException {
    return outcomeCall(Layout.COORDINATOR_START);
  }

  /** A writer's entry for one checkpoint or END (what {@link Writer#report} returned). */
  public Outcome event(int subtask, int attempt, Entry entry) throws CoordinatorException {
    Objects.requireNonNull(entry, "entry");
    Layout.Export export = Layout.COORDINATOR_EVENT;
    return call(
        "event",
        g -> {
          int list = g.lowerByteLists(entry.committables());
          OptionalLong wm = entry.watermark();
          int ret =
              g.call(
                  export,
                  g.coordinatorRep(handle),
                  subtask,
                  attempt,
                  entry.checkpoint(),
                  list,
                  entry.committables().size(),
                  wm.isPresent() ? 1 : 0,
                  wm.orElse(0),
                  entry.savepoint() ? 1 : 0);
          return outcomeResult(g, export, ret);
        });
  }

  /**
   * Many writer events in one crossing: applied in order exactly as {@link #event} would, stopping
   * at the first error, with one merged outcome (committed snapshots and tags concatenated,
   * restart-required ORed, the last state and committed-up-to). An error carries {@link
   * CoordinatorException#applied()} (the failing event's index: after declined or storage, resend
   * from there) and {@link CoordinatorException#outcome()} (what the applied events did).
   *
   * <p>On a 0.2.2+ module the batch goes through {@code events-packed}: each event's committables
   * cross as one block, one guest allocation per event.
   */
  public Outcome events(List<WriterEvent> events) throws CoordinatorException {
    Objects.requireNonNull(events, "events");
    boolean packed = runtime.names.eventsPacked != null;
    Layout.Export export = packed ? Layout.COORDINATOR_EVENTS_PACKED : Layout.COORDINATOR_EVENTS;
    return call(
        "events",
        g -> {
          int n = events.size();
          int base = packed ? lowerPackedEvents(g, events) : lowerWriterEvents(g, events);
          int ret = g.call(export, g.coordinatorRep(handle), base, n);
          // result<batch-outcome, batch-error>
          int payload = ret + Layout.RESULT_BATCH_OUTCOME_BATCH_ERROR_PAYLOAD;
          CoordinatorException err = null;
          Outcome o = null;
          if (g.u8(ret) == 0) {
            o = Lift.batchOutcome(g, payload);
          } else {
            int applied = g.i32(payload + Layout.BATCH_ERROR_APPLIED);
            Outcome before = Lift.batchOutcome(g, payload + Layout.BATCH_ERROR_OUTCOME);
            err = Lift.error(g, payload + Layout.BATCH_ERROR_ERROR, applied, before);
          }
          g.post(export, ret);
          if (err != null) {
            throw err;
          }
          return o;
        });
  }

  /** list&lt;packed-event&gt;: each event's committables as one block; its address. */
  private static int lowerPackedEvents(Guest g, List<WriterEvent> events) {
    return lowerRecords(g, Layout.PACKED_EVENT_SIZE, Layout.PACKED_EVENT_ALIGN, events, (p, ev) -> {
      Entry e = ev.entry();
      g.writeI32(p + Layout.PACKED_EVENT_SUBTASK, ev.subtask());
      g.writeI32(p + Layout.PACKED_EVENT_ATTEMPT, ev.attempt());
      g.writeI64(p + Layout.PACKED_EVENT_CHECKPOINT, e.checkpoint());
      byte[] block = Guest.packCommittables(e.committables());
      g.writeList(p + Layout.PACKED_EVENT_COMMITTABLES, g.lowerBytes(block), block.length);
      writeOptionalI64(g, p + Layout.PACKED_EVENT_WATERMARK, e.watermark());
      g.writeU8(p + Layout.PACKED_EVENT_SAVEPOINT, e.savepoint() ? 1 : 0);
    });
  }

  /** list&lt;writer-event&gt; (a module without events-packed); its address. */
  private static int lowerWriterEvents(Guest g, List<WriterEvent> events) {
    return lowerRecords(g, Layout.WRITER_EVENT_SIZE, Layout.WRITER_EVENT_ALIGN, events, (p, ev) -> {
      g.writeI32(p + Layout.WRITER_EVENT_SUBTASK, ev.subtask());
      g.writeI32(p + Layout.WRITER_EVENT_ATTEMPT, ev.attempt());
      lowerEntry(g, p + Layout.WRITER_EVENT_ENTRY, ev.entry());
    });
  }

  /** Writes one record of a list in guest memory at its address. */
  private interface RecordWriter<T> {
    void write(int at, T item);
  }

  /**
   * A list's elements as {@code size}-byte records (aligned to {@code align}) in one new guest
   * allocation, each written by {@code write}; its address.
   */
  private static <T> int lowerRecords(
      Guest g, int size, int align, List<T> items, RecordWriter<T> write) {
    int base = g.alloc(align, Math.multiplyExact(size, items.size()));
    for (int i = 0; i < items.size(); i++) {
      write.write(base + size * i, items.get(i));
    }
    return base;
  }

  /** An entry record at {@code p}, its committables lowered first. */
  private static void lowerEntry(Guest g, int p, Entry e) {
    g.writeI64(p + Layout.ENTRY_CHECKPOINT, e.checkpoint());
    int committables = g.lowerByteLists(e.committables());
    g.writeList(p + Layout.ENTRY_COMMITTABLES, committables, e.committables().size());
    writeOptionalI64(g, p + Layout.ENTRY_WATERMARK, e.watermark());
    g.writeU8(p + Layout.ENTRY_SAVEPOINT, e.savepoint() ? 1 : 0);
  }

  /** An option&lt;s64&gt; at {@code p}. */
  private static void writeOptionalI64(Guest g, int p, OptionalLong v) {
    g.writeU8(p, v.isPresent() ? 1 : 0);
    g.writeI64(p + Layout.OPTION_S64_PAYLOAD, v.orElse(0));
  }

  /** A restored writer's replay of its buffer (what {@link Writer#restore} returned). */
  public Outcome restored(int subtask, int attempt, long checkpoint, List<Entry> entries)
      throws CoordinatorException {
    Objects.requireNonNull(entries, "entries");
    Layout.Export export = Layout.COORDINATOR_RESTORED;
    return call(
        "restored",
        g -> {
          int n = entries.size();
          int base = g.alloc(Layout.ENTRY_ALIGN, Math.multiplyExact(Layout.ENTRY_SIZE, n));
          for (int i = 0; i < n; i++) {
            lowerEntry(g, base + Layout.ENTRY_SIZE * i, entries.get(i));
          }
          int ret = g.call(export, g.coordinatorRep(handle), subtask, attempt, checkpoint, base, n);
          return outcomeResult(g, export, ret);
        });
  }

  /** Region failover of one writer, restarting from {@code checkpoint} (empty: from scratch). */
  public Outcome subtaskReset(int subtask, OptionalLong checkpoint) throws CoordinatorException {
    Objects.requireNonNull(checkpoint, "checkpoint");
    return outcomeCall(
        Layout.COORDINATOR_SUBTASK_RESET, subtask, checkpoint.isPresent() ? 1 : 0, checkpoint.orElse(0));
  }

  /** The coordinator's state bytes for checkpoint {@code checkpoint}. */
  public byte[] checkpoint(long checkpoint) throws CoordinatorException {
    Layout.Export export = Layout.COORDINATOR_CHECKPOINT;
    return call(
        "checkpoint",
        g -> {
          int ret = g.call(export, g.coordinatorRep(handle), checkpoint);
          return Lift.result(g, export, ret, Layout.RESULT_LIST_U8_ERROR_PAYLOAD, Lift::bytes);
        });
  }

  /** Checkpoint {@code checkpoint} completed: commits what it covers. */
  public Outcome checkpointComplete(long checkpoint) throws CoordinatorException {
    return outcomeCall(Layout.COORDINATOR_CHECKPOINT_COMPLETE, checkpoint);
  }

  /** Checkpoint {@code checkpoint} was aborted. */
  public Outcome checkpointAborted(long checkpoint) throws CoordinatorException {
    return outcomeCall(Layout.COORDINATOR_CHECKPOINT_ABORTED, checkpoint);
  }

  /** The job ends (WIT {@code close}; the instance stays, answering state queries). */
  public Outcome close() throws CoordinatorException {
    return outcomeCall(Layout.COORDINATOR_CLOSE);
  }

  /** The current lifecycle state (an enum returned flat). */
  public Lifecycle state() throws CoordinatorException {
    Layout.Export export = Layout.COORDINATOR_STATE;
    return call("state", g -> Lift.lifecycle(g.call(export, g.coordinatorRep(handle))));
  }

  /** Committed-up-to (SEMANTICS 5.5), answered in every state; empty until the rule first ran. */
  public OptionalLong committedUpTo() throws CoordinatorException {
    Layout.Export export = Layout.COORDINATOR_COMMITTED_UP_TO;
    return call(
        "committed-up-to",
        g -> {
          int ret = g.call(export, g.coordinatorRep(handle));
          OptionalLong v = g.optionalI64(ret);
          g.post(export, ret);
          return v;
        });
  }
}
