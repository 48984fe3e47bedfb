package io.sinkcoordinator.jvm;

/**
 * A value above a storage's bound ({@link DirectoryStorage}'s {@code maxValueBytes}, or {@link
 * DirectoryStorage#MAX_HINT_BYTES} under {@code hint/}), refused before it is read or written. An
 * {@code io} error: the component receives it as {@code storage-error.io} with this message.
 */
public final class ValueTooLargeException extends BackendException {
  private static final long serialVersionUID = 1L;

  private final String key;
  private final long size;
  private final long limit;

  public ValueTooLargeException(String key, long size, long limit) {
    super(
        Kind.IO,
        "the value of key \"" + key + "\" holds " + size + " bytes, more than "
            + (key.startsWith("hint/") ? "the hint limit" : "the storage's maxValueBytes")
            + " (" + limit + " bytes)");
    this.key = key;
    this.size = size;
    this.limit = limit;
  }

  /** The key. */
  public String key() {
    return key;
  }

  /** The value's size in bytes (at least {@code limit + 1} if it grew while read). */
  public long size() {
    return size;
  }

  /** The bound that applies to the key. */
  public long limit() {
    return limit;
  }
}
