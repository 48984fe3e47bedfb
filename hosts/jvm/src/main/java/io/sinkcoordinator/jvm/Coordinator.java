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
  private final String c;

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
    this.c = runtime.names.c;
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
      int p = g.alloc(4, Math.multiplyExact(4, fin.size()));
      for (int i = 0; i < fin.size(); i++) {
        g.writeI32(p + 4 * i, fin.get(i));
      }
      finishedPtr = p;
      finishedLen = fin.size();
    }
    return g.call(
        c + "[constructor]coordinator",
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

  /** A method returning {@code result<outcome, error>}: the payload at ret + 8. */
  private Outcome outcomeCall(String method, long... rest) throws CoordinatorException {
    String name = c + "[method]coordinator." + method;
    return call(
        method,
        g -> {
          long[] args = new long[rest.length + 1];
          args[0] = g.coordinatorRep(handle);
          System.arraycopy(rest, 0, args, 1, rest.length);
          return outcomeResult(g, name, g.call(name, args));
        });
  }

  private static Outcome outcomeResult(Guest g, String name, int ret) throws CoordinatorException {
    return Lift.result(g, name, ret, 8, Lift::outcome);
  }

  /**
   * Sets the size limits (host configuration); only while created, i.e. before {@link #start()}.
   */
  public void setLimits(Limits limits) throws CoordinatorException {
    Objects.requireNonNull(limits, "limits");
    String name = c + "[method]coordinator.set-limits";
    call(
        "set-limits",
        g -> {
          int ret =
              g.call(
                  name,
                  g.coordinatorRep(handle),
                  limits.maxCommittableBytes(),
                  limits.maxEventBytes(),
                  limits.maxSnapshotBytes());
          // result<_, error>: the error at ret + 4
          return Lift.result(g, name, ret, 4, null);
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
    String name = runtime.names.setTableFormat;
    call(
        "set-table-format",
        g -> {
          if (name == null) {
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
          // (handle, enum discriminant) -> result<_, error>, the error at ret + 4 (as set-limits)
          int ret = g.call(name, g.coordinatorRep(handle), format.ordinal());
          return Lift.result(g, name, ret, 4, null);
        });
  }

  /** created -> running (fresh) or restoring (with a restore point). */
  public Outcome start() throws CoordinatorException {
    return outcomeCall("start");
  }

  /** A writer's entry for one checkpoint or END (what {@link Writer#report} returned). */
  public Outcome event(int subtask, int attempt, Entry entry) throws CoordinatorException {
    Objects.requireNonNull(entry, "entry");
    String name = c + "[method]coordinator.event";
    return call(
        "event",
        g -> {
          int list = g.lowerByteLists(entry.committables());
          OptionalLong wm = entry.watermark();
          int ret =
              g.call(
                  name,
                  g.coordinatorRep(handle),
                  subtask,
                  attempt,
                  entry.checkpoint(),
                  list,
                  entry.committables().size(),
                  wm.isPresent() ? 1 : 0,
                  wm.orElse(0),
                  entry.savepoint() ? 1 : 0);
          return outcomeResult(g, name, ret);
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
    String packed = runtime.names.eventsPacked;
    String name = packed != null ? packed : runtime.names.events;
    return call(
        "events",
        g -> {
          int n = events.size();
          // packed-event and writer-event: 48 bytes, align 8; subtask @0, attempt @4, then the
          // entry's fields @8 as in an entry record
          int base = g.alloc(8, Math.multiplyExact(48, n));
          for (int i = 0; i < n; i++) {
            WriterEvent ev = events.get(i);
            int p = base + 48 * i;
            g.writeI32(p, ev.subtask());
            g.writeI32(p + 4, ev.attempt());
            lowerEntry(g, p + 8, ev.entry(), packed != null);
          }
          int ret = g.call(name, g.coordinatorRep(handle), base, n);
          // result<batch-outcome, batch-error>, payload at +8; batch-error: applied u32 @0,
          // batch-outcome @8, error @64
          CoordinatorException err = null;
          Outcome o = null;
          if (g.u8(ret) == 0) {
            o = Lift.batchOutcome(g, ret + 8);
          } else {
            int applied = g.i32(ret + 8);
            err = Lift.error(g, ret + 72, applied, Lift.batchOutcome(g, ret + 16));
          }
          g.post(name, ret);
          if (err != null) {
            throw err;
          }
          return o;
        });
  }

  /**
   * entry (40 / 8) at {@code p}: checkpoint u64 @0, committables @8/@12 (as {@code
   * list<list<u8>>}, or {@code packed} as one block, {@code packed-event}), watermark
   * option&lt;s64&gt; @16 (value @24), savepoint u8 @32.
   */
  private static void lowerEntry(Guest g, int p, Entry e, boolean packed) {
    g.writeI64(p, e.checkpoint());
    if (packed) {
      byte[] block = Guest.packCommittables(e.committables());
      g.writeI32(p + 8, g.lowerBytes(block));
      g.writeI32(p + 12, block.length);
    } else {
      g.writeI32(p + 8, g.lowerByteLists(e.committables()));
      g.writeI32(p + 12, e.committables().size());
    }
    g.writeU8(p + 16, e.watermark().isPresent() ? 1 : 0);
    g.writeI64(p + 24, e.watermark().orElse(0));
    g.writeU8(p + 32, e.savepoint() ? 1 : 0);
  }

  /** A restored writer's replay of its buffer (what {@link Writer#restore} returned). */
  public Outcome restored(int subtask, int attempt, long checkpoint, List<Entry> entries)
      throws CoordinatorException {
    Objects.requireNonNull(entries, "entries");
    String name = c + "[method]coordinator.restored";
    return call(
        "restored",
        g -> {
          int n = entries.size();
          int base = g.alloc(8, Math.multiplyExact(40, n));
          for (int i = 0; i < n; i++) {
            lowerEntry(g, base + 40 * i, entries.get(i), false);
          }
          int ret = g.call(name, g.coordinatorRep(handle), subtask, attempt, checkpoint, base, n);
          return outcomeResult(g, name, ret);
        });
  }

  /** Region failover of one writer, restarting from {@code checkpoint} (empty: from scratch). */
  public Outcome subtaskReset(int subtask, OptionalLong checkpoint) throws CoordinatorException {
    Objects.requireNonNull(checkpoint, "checkpoint");
    return outcomeCall(
        "subtask-reset", subtask, checkpoint.isPresent() ? 1 : 0, checkpoint.orElse(0));
  }

  /** The coordinator's state bytes for checkpoint {@code checkpoint}. */
  public byte[] checkpoint(long checkpoint) throws CoordinatorException {
    String name = c + "[method]coordinator.checkpoint";
    return call(
        "checkpoint",
        g -> {
          int ret = g.call(name, g.coordinatorRep(handle), checkpoint);
          // result<list<u8>, error>: both payloads at ret + 4
          return Lift.result(g, name, ret, 4, Lift::bytes);
        });
  }

  /** Checkpoint {@code checkpoint} completed: commits what it covers. */
  public Outcome checkpointComplete(long checkpoint) throws CoordinatorException {
    return outcomeCall("checkpoint-complete", checkpoint);
  }

  /** Checkpoint {@code checkpoint} was aborted. */
  public Outcome checkpointAborted(long checkpoint) throws CoordinatorException {
    return outcomeCall("checkpoint-aborted", checkpoint);
  }

  /** The job ends (WIT {@code close}; the instance stays, answering state queries). */
  public Outcome close() throws CoordinatorException {
    return outcomeCall("close");
  }

  /** The current lifecycle state (an enum returned flat). */
  public Lifecycle state() throws CoordinatorException {
    String name = c + "[method]coordinator.state";
    return call("state", g -> Lift.lifecycle(g.call(name, g.coordinatorRep(handle))));
  }

  /** Committed-up-to (SEMANTICS 5.5), answered in every state; empty until the rule first ran. */
  public OptionalLong committedUpTo() throws CoordinatorException {
    String name = c + "[method]coordinator.committed-up-to";
    return call(
        "committed-up-to",
        g -> {
          int ret = g.call(name, g.coordinatorRep(handle));
          OptionalLong v = g.optionalI64(ret);
          g.post(name, ret);
          return v;
        });
  }
}
