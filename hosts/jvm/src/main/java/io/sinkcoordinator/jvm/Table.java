package io.sinkcoordinator.jvm;

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
        g ->
            Lift.result(
                g,
                name,
                g.call(name, args),
                8,
                (m, p) -> m.u8(p) != 0 ? Optional.of(Lift.snapshot(m, p + 8)) : Optional.empty()));
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
  private <T> List<T> list(String fn, int stride, Lift.Value<T> element)
      throws CoordinatorException {
    String name = t + fn;
    return call(
        fn, g -> Lift.result(g, name, g.call(name), 4, (m, p) -> Lift.list(m, p, stride, element)));
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
