package io.sinkcoordinator.jvm;

import java.util.List;
import java.util.Optional;

/**
 * Reads the table's snapshot log and tags back (WIT interface {@code table}) without
 * re-implementing the storage format. Stateless: after a trap the next call starts a fresh
 * instance.
 */
public final class Table extends Handle {
  /** A reader on the bundled module, with the system clock (never read). */
  public Table(Storage storage) {
    this(storage, Clock.system(), CoordinatorRuntime.bundled());
  }

  public Table(Storage storage, Clock clock, CoordinatorRuntime runtime) {
    super(runtime, storage, clock);
  }

  @Override
  void trapped(String message) {
    discardInstance(null);
  }

  /** result&lt;option&lt;snapshot&gt;, error&gt;. */
  private Optional<Snapshot> optionalSnapshot(Layout.Export export, long... args)
      throws CoordinatorException {
    return call(
        Guest.label(export),
        g ->
            Lift.result(
                g,
                export,
                g.call(export, args),
                Layout.RESULT_OPTION_SNAPSHOT_ERROR_PAYLOAD,
                (m, p) ->
                    m.u8(p) != 0
                        ? Optional.of(Lift.snapshot(m, p + Layout.OPTION_SNAPSHOT_PAYLOAD))
                        : Optional.empty()));
  }

  /** The newest snapshot, if any. */
  public Optional<Snapshot> latestSnapshot() throws CoordinatorException {
    return optionalSnapshot(Layout.TABLE_LATEST_SNAPSHOT);
  }

  /** Snapshot {@code id}, if it exists. */
  public Optional<Snapshot> snapshotById(long id) throws CoordinatorException {
    return optionalSnapshot(Layout.TABLE_SNAPSHOT_BY_ID, id);
  }

  /**
   * result&lt;list&lt;T&gt;, error&gt; (its payload at {@code payload}): elements of {@code
   * stride} bytes.
   */
  private <T> List<T> list(Layout.Export export, int payload, int stride, Lift.Value<T> element)
      throws CoordinatorException {
    return call(
        Guest.label(export),
        g ->
            Lift.result(
                g, export, g.call(export), payload, (m, p) -> Lift.list(m, p, stride, element)));
  }

  /** Every snapshot, by id. */
  public List<Snapshot> listSnapshots() throws CoordinatorException {
    return list(
        Layout.TABLE_LIST_SNAPSHOTS,
        Layout.RESULT_LIST_SNAPSHOT_ERROR_PAYLOAD,
        Layout.SNAPSHOT_SIZE,
        Lift::snapshot);
  }

  /** Every tag, by name in byte order. */
  public List<Tag> listTags() throws CoordinatorException {
    return list(
        Layout.TABLE_LIST_TAGS, Layout.RESULT_LIST_TAG_ERROR_PAYLOAD, Layout.TAG_SIZE, Lift::tag);
  }
}
