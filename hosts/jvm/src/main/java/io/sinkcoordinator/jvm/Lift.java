package io.sinkcoordinator.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * Reading the component's results out of guest memory (canonical ABI layouts of
 * docs/embedding.md section 4; offsets are relative to the record or result). Every value is
 * copied out before the function's {@code cabi_post_*} frees it.
 */
final class Lift {
  private static final Lifecycle[] LIFECYCLE = Lifecycle.values();

  private Lift() {}

  /** Reads one value at {@code p}. */
  interface Value<T> {
    T lift(Guest g, int p);
  }

  /**
   * A {@code result<T, error>} at {@code ret}, both payloads at {@code ret + payload} (4 or 8, the
   * payloads' alignment): the ok value read by {@code ok} (null: {@code result<_, error>}), or the
   * error thrown; either way only after the function's {@code cabi_post_*} ran.
   */
  static <T> T result(Guest g, String name, int ret, int payload, Value<T> ok)
      throws CoordinatorException {
    boolean isOk = g.u8(ret) == 0;
    T value = isOk && ok != null ? ok.lift(g, ret + payload) : null;
    CoordinatorException err = isOk ? null : error(g, ret + payload, -1, null);
    g.post(name, ret);
    if (err != null) {
      throw err;
    }
    return value;
  }

  /** list&lt;T&gt; (8 / 4): elements of {@code stride} bytes at ptr @0, their count @4. */
  static <T> List<T> list(Guest g, int p, int stride, Value<T> element) {
    int ptr = g.i32(p);
    int n = g.i32(p + 4);
    g.checkCount(ptr, n, stride);
    List<T> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(element.lift(g, ptr + stride * i));
    }
    return out;
  }

  /** list&lt;u8&gt; (8 / 4): ptr @0, len @4. */
  static byte[] bytes(Guest g, int p) {
    return g.bytes(g.i32(p), g.i32(p + 4));
  }

  static Lifecycle lifecycle(int v) {
    if (v < 0 || v >= LIFECYCLE.length) {
      throw new IndexOutOfBoundsException("lifecycle " + v);
    }
    return LIFECYCLE[v];
  }

  /** error (12 / 4): kind u8 @0, message (ptr, len) @4, @8. */
  static CoordinatorException error(Guest g, int p, int applied, Outcome outcome) {
    return CoordinatorException.of(
        g.u8(p), g.string(g.i32(p + 4), g.i32(p + 8)), applied, outcome);
  }

  /**
   * outcome (48 / 8): state u8 @0, committed list&lt;u64&gt; @4/@8, tags-created @12/@16,
   * tags-deleted @20/@24, restart-required u8 @28, committed-up-to option&lt;u64&gt; @32 (value @40).
   */
  static Outcome outcome(Guest g, int p) {
    return new Outcome(
        lifecycle(g.u8(p)),
        g.u64s(g.i32(p + 4), g.i32(p + 8)),
        g.strings(g.i32(p + 12), g.i32(p + 16)),
        g.strings(g.i32(p + 20), g.i32(p + 24)),
        g.u8(p + 28) != 0,
        g.optionalI64(p + 32));
  }

  /**
   * batch-outcome (56 / 8): state u8 @0, committed-up-to option&lt;u64&gt; @8 (value @16), effects
   * option&lt;batch-effects&gt; @24 (payload @28: committed @0/@4, tags-created @8/@12, tags-deleted
   * @16/@20, restart-required u8 @24), as a full {@link Outcome}.
   */
  static Outcome batchOutcome(Guest g, int p) {
    Lifecycle state = lifecycle(g.u8(p));
    OptionalLong cut = g.optionalI64(p + 8);
    if (g.u8(p + 24) == 0) {
      return new Outcome(state, List.of(), List.of(), List.of(), false, cut);
    }
    int e = p + 28;
    return new Outcome(
        state,
        g.u64s(g.i32(e), g.i32(e + 4)),
        g.strings(g.i32(e + 8), g.i32(e + 12)),
        g.strings(g.i32(e + 16), g.i32(e + 20)),
        g.u8(e + 24) != 0,
        cut);
  }

  /**
   * entry (40 / 8): checkpoint u64 @0, committables list&lt;list&lt;u8&gt;&gt; @8/@12, watermark
   * option&lt;s64&gt; @16 (value @24), savepoint u8 @32.
   */
  static Entry entry(Guest g, int p) {
    int ptr = g.i32(p + 8);
    int n = g.i32(p + 12);
    g.checkCount(ptr, n, 8);
    List<byte[]> committables = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      committables.add(g.bytes(g.i32(ptr + 8 * i), g.i32(ptr + 8 * i + 4)));
    }
    return new Entry(g.i64(p), committables, g.optionalI64(p + 16), g.u8(p + 32) != 0);
  }

  /** list&lt;entry&gt; (8 / 4). */
  static List<Entry> entries(Guest g, int p) {
    return list(g, p, 40, Lift::entry);
  }

  /**
   * snapshot (56 / 8): id u64 @0, commit-user @8/@12, identifier u64 @16, watermark
   * option&lt;s64&gt; @24 (value @32), time-ms u64 @40, committables
   * list&lt;tuple&lt;u32, list&lt;u8&gt;&gt;&gt; @48/@52 (elements 12 bytes: subtask, ptr, len).
   */
  static Snapshot snapshot(Guest g, int p) {
    int ptr = g.i32(p + 48);
    int n = g.i32(p + 52);
    g.checkCount(ptr, n, 12);
    List<Snapshot.Committable> committables = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int e = ptr + 12 * i;
      committables.add(new Snapshot.Committable(g.i32(e), g.bytes(g.i32(e + 4), g.i32(e + 8))));
    }
    return new Snapshot(
        g.i64(p),
        g.string(g.i32(p + 8), g.i32(p + 12)),
        g.i64(p + 16),
        g.optionalI64(p + 24),
        g.i64(p + 40),
        committables);
  }

  /**
   * tag (48 / 8): name @0/@4, snapshot-id u64 @8, identifier u64 @16, create-time-ms u64 @24,
   * expire-time-ms option&lt;u64&gt; @32 (value @40).
   */
  static Tag tag(Guest g, int p) {
    return new Tag(
        g.string(g.i32(p), g.i32(p + 4)),
        g.i64(p + 8),
        g.i64(p + 16),
        g.i64(p + 24),
        g.optionalI64(p + 32));
  }
}
