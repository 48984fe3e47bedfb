package io.sinkcoordinator.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * Reading the component's results out of guest memory (canonical ABI layouts of
 * docs/embedding.md section 4, as generated from the WIT into {@link Layout}; offsets are relative
 * to the record or result). Every value is copied out before the function's {@code cabi_post_*}
 * frees it.
 */
final class Lift {
  private static final Lifecycle[] LIFECYCLE = Lifecycle.values();

  private Lift() {}

  /** Reads one value at {@code p}. */
  interface Value<T> {
    T lift(Guest g, int p);
  }

  /**
   * A {@code result<T, error>} at {@code ret}, both payloads at {@code ret + payload} (the
   * result type's {@code Layout.RESULT_..._PAYLOAD}): the ok value read by {@code ok} (null: {@code result<_, error>}), or the
   * error thrown; either way only after the function's {@code cabi_post_*} ran.
   */
  static <T> T result(Guest g, Layout.Export export, int ret, int payload, Value<T> ok)
      throws CoordinatorException {
    boolean isOk = g.u8(ret) == 0;
    T value = isOk && ok != null ? ok.lift(g, ret + payload) : null;
    CoordinatorException err = isOk ? null : error(g, ret + payload, -1, null);
    g.post(export, ret);
    if (err != null) {
      throw err;
    }
    return value;
  }

  /** list&lt;T&gt; whose descriptor is at {@code p}: elements of {@code stride} bytes. */
  static <T> List<T> list(Guest g, int p, int stride, Value<T> element) {
    int ptr = g.i32(p + Layout.LIST_PTR);
    int n = g.i32(p + Layout.LIST_LEN);
    g.checkCount(ptr, n, stride);
    List<T> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(element.lift(g, ptr + stride * i));
    }
    return out;
  }

  /** list&lt;u8&gt; whose descriptor is at {@code p}. */
  static byte[] bytes(Guest g, int p) {
    return g.bytesAt(p);
  }

  static Lifecycle lifecycle(int v) {
    if (v < 0 || v >= LIFECYCLE.length) {
      throw new IndexOutOfBoundsException("lifecycle " + v);
    }
    return LIFECYCLE[v];
  }

  /** error at {@code p}. */
  static CoordinatorException error(Guest g, int p, int applied, Outcome outcome) {
    return CoordinatorException.of(
        g.u8(p + Layout.ERROR_KIND), g.stringAt(p + Layout.ERROR_MESSAGE), applied, outcome);
  }

  /** outcome at {@code p}. */
  static Outcome outcome(Guest g, int p) {
    return new Outcome(
        lifecycle(g.u8(p + Layout.OUTCOME_STATE)),
        g.u64s(p + Layout.OUTCOME_COMMITTED),
        g.strings(p + Layout.OUTCOME_TAGS_CREATED),
        g.strings(p + Layout.OUTCOME_TAGS_DELETED),
        g.u8(p + Layout.OUTCOME_RESTART_REQUIRED) != 0,
        g.optionalI64(p + Layout.OUTCOME_COMMITTED_UP_TO));
  }

  /** batch-outcome at {@code p} (its effects an option&lt;batch-effects&gt;), as an {@link Outcome}. */
  static Outcome batchOutcome(Guest g, int p) {
    Lifecycle state = lifecycle(g.u8(p + Layout.BATCH_OUTCOME_STATE));
    OptionalLong cut = g.optionalI64(p + Layout.BATCH_OUTCOME_COMMITTED_UP_TO);
    int effects = p + Layout.BATCH_OUTCOME_EFFECTS;
    if (g.u8(effects) == 0) {
      return new Outcome(state, List.of(), List.of(), List.of(), false, cut);
    }
    int e = effects + Layout.OPTION_BATCH_EFFECTS_PAYLOAD;
    return new Outcome(
        state,
        g.u64s(e + Layout.BATCH_EFFECTS_COMMITTED),
        g.strings(e + Layout.BATCH_EFFECTS_TAGS_CREATED),
        g.strings(e + Layout.BATCH_EFFECTS_TAGS_DELETED),
        g.u8(e + Layout.BATCH_EFFECTS_RESTART_REQUIRED) != 0,
        cut);
  }

  /** entry at {@code p}. */
  static Entry entry(Guest g, int p) {
    List<byte[]> committables =
        list(g, p + Layout.ENTRY_COMMITTABLES, Layout.LIST_SIZE, Guest::bytesAt);
    return new Entry(
        g.i64(p + Layout.ENTRY_CHECKPOINT),
        committables,
        g.optionalI64(p + Layout.ENTRY_WATERMARK),
        g.u8(p + Layout.ENTRY_SAVEPOINT) != 0);
  }

  /** list&lt;entry&gt; whose descriptor is at {@code p}. */
  static List<Entry> entries(Guest g, int p) {
    return list(g, p, Layout.ENTRY_SIZE, Lift::entry);
  }

  /** snapshot at {@code p}; its committables are tuple&lt;u32, list&lt;u8&gt;&gt;. */
  static Snapshot snapshot(Guest g, int p) {
    List<Snapshot.Committable> committables =
        list(
            g,
            p + Layout.SNAPSHOT_COMMITTABLES,
            Layout.TUPLE_U32_LIST_U8_SIZE,
            (m, e) ->
                new Snapshot.Committable(
                    m.i32(e + Layout.TUPLE_U32_LIST_U8_F0),
                    m.bytesAt(e + Layout.TUPLE_U32_LIST_U8_F1)));
    return new Snapshot(
        g.i64(p + Layout.SNAPSHOT_ID),
        g.stringAt(p + Layout.SNAPSHOT_COMMIT_USER),
        g.i64(p + Layout.SNAPSHOT_IDENTIFIER),
        g.optionalI64(p + Layout.SNAPSHOT_WATERMARK),
        g.i64(p + Layout.SNAPSHOT_TIME_MS),
        committables);
  }

  /** tag at {@code p}. */
  static Tag tag(Guest g, int p) {
    return new Tag(
        g.stringAt(p + Layout.TAG_NAME),
        g.i64(p + Layout.TAG_SNAPSHOT_ID),
        g.i64(p + Layout.TAG_IDENTIFIER),
        g.i64(p + Layout.TAG_CREATE_TIME_MS),
        g.optionalI64(p + Layout.TAG_EXPIRE_TIME_MS));
  }
}
