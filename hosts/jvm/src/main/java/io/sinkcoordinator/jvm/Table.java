package io.sinkcoordinator.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads the table's snapshot log and tags back (WIT interface {@code table}) without
 * re-implementing the storage format. Stateless: after a trap the next call starts a fresh
 * instance.
 */
public final class Table extends Handle {
  private final String t;

  /** A reader on the bundled module, with the system clock (never read). */
  public Table(Storage storage) {
    this(storage, Clock.system(), CoordinatorRuntime.bundled());
  }

  public Table(Storage storage, Clock clock, CoordinatorRuntime runtime) {
    super(runtime, storage, clock);
    this.t = runtime.names.t;
  }

  @Override
  void trapped(String message) {
    discardInstance(null);
  }

  /** result&lt;option&lt;snapshot&gt;, error&gt;: option at ret + 8, the snapshot at ret + 16. */
  private Optional<Snapshot> optionalSnapshot(String fn, long... args) throws CoordinatorException {
    String name = t + fn;
    return call(
        fn,
        g -> {
          int ret = g.call(name, args);
          Optional<Snapshot> s = Optional.empty();
          CoordinatorException err = null;
          if (g.u8(ret) != 0) {
            err = Lift.error(g, ret + 8, -1, null);
          } else if (g.u8(ret + 8) != 0) {
            s = Optional.of(Lift.snapshot(g, ret + 16));
          }
          g.post(name, ret);
          if (err != null) {
            throw err;
          }
          return s;
        });
  }

  /** The newest snapshot, if any. */
  public Optional<Snapshot> latestSnapshot() throws CoordinatorException {
    return optionalSnapshot("latest-snapshot");
  }

  /** Snapshot {@code id}, if it exists. */
  public Optional<Snapshot> snapshotById(long id) throws CoordinatorException {
    return optionalSnapshot("snapshot-by-id", id);
  }

  /** result&lt;list&lt;T&gt;, error&gt;: both payloads at ret + 4. */
  private interface Element<T> {
    T lift(Guest g, int p);
  }

  private <T> List<T> list(String fn, int stride, Element<T> element) throws CoordinatorException {
    String name = t + fn;
    return call(
        fn,
        g -> {
          int ret = g.call(name);
          List<T> out = null;
          CoordinatorException err = null;
          if (g.u8(ret) == 0) {
            int ptr = g.i32(ret + 4);
            int n = g.i32(ret + 8);
            g.checkCount(ptr, n, stride);
            out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
              out.add(element.lift(g, ptr + stride * i));
            }
          } else {
            err = Lift.error(g, ret + 4, -1, null);
          }
          g.post(name, ret);
          if (err != null) {
            throw err;
          }
          return out;
        });
  }

  /** Every snapshot, by id. */
  public List<Snapshot> listSnapshots() throws CoordinatorException {
    return list("list-snapshots", 56, Lift::snapshot);
  }

  /** Every tag, by name in byte order. */
  public List<Tag> listTags() throws CoordinatorException {
    return list("list-tags", 48, Lift::tag);
  }
}
