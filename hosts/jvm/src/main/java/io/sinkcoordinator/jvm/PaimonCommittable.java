package io.sinkcoordinator.jvm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * A committable of Paimon mode: the metadata of one new data file of an append table, as a writer
 * reports it ({@link Writer#report}) to a coordinator whose table format is Paimon. {@link
 * #encode()} gives the bytes, encoding {@code PCM} v1 (docs/paimon.md, "The committable").
 *
 * <pre>{@code
 * byte[] committable = PaimonCommittable.builder("data-1-0.parquet")
 *     .fileSize(1234).rowCount(10).schemaId(0).sequenceNumbers(0, 9)
 *     .creationTimeMillis(1700000000000L)
 *     .partition(Datum.of("2024-01-01"), Datum.ofInt(3))
 *     .stats(new ColumnStats("id", Datum.ofBigint(1), Datum.ofBigint(10), 0))
 *     .build().encode();
 * }</pre>
 *
 * <p>The constructor checks what the coordinator checks without the table (a plain file name,
 * non-negative sizes, known null counts not negative, well-formed text), so that a bad file is an
 * {@link IllegalArgumentException} at the writer rather than a fatal invalid-event; the partition
 * arity and the value types against the table's schema are checked by the coordinator only.
 *
 * @param fileName the plain file name, e.g. {@code data-<uuid>-0.parquet}, under the partition's
 *     {@code bucket-0/}
 * @param schemaId the table's current schema id
 * @param creationTimeMillis epoch milliseconds (UTC)
 * @param partition one value per partition key, in key order; empty for an unpartitioned table
 * @param valueStats empty means no value stats
 */
public record PaimonCommittable(
    String fileName,
    long fileSize,
    long rowCount,
    long schemaId,
    long minSequenceNumber,
    long maxSequenceNumber,
    long creationTimeMillis,
    List<Datum> partition,
    List<ColumnStats> valueStats) {

  /** The longest file name the coordinator accepts, in UTF-8 bytes. */
  public static final int MAX_FILE_NAME_BYTES = 255;

  /**
   * One partition or stats value. The kinds are the encoding's tags: SQL null, a 32-bit {@link
   * Int} (INT, TINYINT, SMALLINT, DATE in days since epoch), a 64-bit {@link Bigint} (BIGINT), a
   * {@link Str} (STRING, VARCHAR, CHAR) and a {@link Bool} (BOOLEAN). INT and BIGINT are distinct
   * types because the encoding tags them differently.
   */
  public sealed interface Datum {
    /** SQL null (a Java {@code null} is refused: say which value is meant). */
    Datum NULL = new Null();

    static Datum ofInt(int value) {
      return new Int(value);
    }

    static Datum ofBigint(long value) {
      return new Bigint(value);
    }

    static Datum of(String value) {
      return new Str(value);
    }

    static Datum of(boolean value) {
      return new Bool(value);
    }

    /** SQL null. */
    record Null() implements Datum {}

    /** INT, TINYINT, SMALLINT or DATE. */
    record Int(int value) implements Datum {}

    /** BIGINT. */
    record Bigint(long value) implements Datum {}

    /** STRING, VARCHAR or CHAR; must be well-formed UTF-16 (no lone surrogate). */
    record Str(String value) implements Datum {
      public Str {
        utf8("string value", value);
      }
    }

    /** BOOLEAN. */
    record Bool(boolean value) implements Datum {}
  }

  /**
   * One column's value stats.
   *
   * @param min {@link Datum#NULL} when every value of the column is null
   * @param nullCount empty when the writer does not know it
   */
  public record ColumnStats(String column, Datum min, Datum max, OptionalLong nullCount) {
    public ColumnStats {
      utf8("stats column name", column);
      Objects.requireNonNull(min, "min (Datum.NULL for null)");
      Objects.requireNonNull(max, "max (Datum.NULL for null)");
      Objects.requireNonNull(nullCount, "nullCount (OptionalLong.empty() when unknown)");
      // The encoding's -1 is "unknown", which is an empty nullCount here: a negative count
      // would read back as unknown, not as what was sent.
      if (nullCount.isPresent() && nullCount.getAsLong() < 0) {
        throw new IllegalArgumentException(
            "null count " + nullCount.getAsLong() + " of stats column '" + column + "' is negative");
      }
    }

    /** Stats with a known null count. */
    public ColumnStats(String column, Datum min, Datum max, long nullCount) {
      this(column, min, max, OptionalLong.of(nullCount));
    }

    /** Stats whose null count is unknown. */
    public ColumnStats(String column, Datum min, Datum max) {
      this(column, min, max, OptionalLong.empty());
    }
  }

  public PaimonCommittable {
    byte[] name = utf8("file name", fileName);
    if (name.length == 0
        || name.length > MAX_FILE_NAME_BYTES
        || fileName.equals(".")
        || fileName.equals("..")
        || fileName.chars().anyMatch(c -> c == '/' || c == '\\' || c < 0x20 || c == 0x7f)) {
      throw new IllegalArgumentException(
          "file name '"
              + fileName
              + "' is not a plain file name (1 to "
              + MAX_FILE_NAME_BYTES
              + " UTF-8 bytes, not . or .., no /, \\ or control character)");
    }
    // Paimon's fields are signed 64-bit: sizes and the schema id are never negative.
    nonNegative("file size", fileSize);
    nonNegative("row count", rowCount);
    nonNegative("schema id", schemaId);
    // List.copyOf refuses null elements: a null value is Datum.NULL.
    partition = List.copyOf(Objects.requireNonNull(partition, "partition"));
    valueStats = List.copyOf(Objects.requireNonNull(valueStats, "valueStats"));
  }

  private static void nonNegative(String what, long v) {
    if (v < 0) {
      throw new IllegalArgumentException(what + " " + v + " is negative");
    }
  }

  /** The UTF-8 bytes of {@code s}; a lone surrogate is refused, not replaced by '?'. */
  private static byte[] utf8(String what, String s) {
    Objects.requireNonNull(s, what);
    try {
      ByteBuffer b = StandardCharsets.UTF_8.newEncoder().encode(CharBuffer.wrap(s));
      return Arrays.copyOf(b.array(), b.limit());
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException(what + " is not well-formed Unicode (a lone surrogate)");
    }
  }

  /** A builder of the file's fields; unset numbers are 0, unset lists empty. */
  public static Builder builder(String fileName) {
    return new Builder(fileName);
  }

  /** Builds a {@link PaimonCommittable} field by field (the record has nine components). */
  public static final class Builder {
    private final String fileName;
    private long fileSize;
    private long rowCount;
    private long schemaId;
    private long minSequenceNumber;
    private long maxSequenceNumber;
    private long creationTimeMillis;
    private final List<Datum> partition = new ArrayList<>();
    private final List<ColumnStats> valueStats = new ArrayList<>();

    private Builder(String fileName) {
      this.fileName = fileName;
    }

    public Builder fileSize(long bytes) {
      this.fileSize = bytes;
      return this;
    }

    public Builder rowCount(long rows) {
      this.rowCount = rows;
      return this;
    }

    public Builder schemaId(long id) {
      this.schemaId = id;
      return this;
    }

    public Builder sequenceNumbers(long min, long max) {
      this.minSequenceNumber = min;
      this.maxSequenceNumber = max;
      return this;
    }

    public Builder creationTimeMillis(long epochMillis) {
      this.creationTimeMillis = epochMillis;
      return this;
    }

    /** Appends partition values, in partition key order. */
    public Builder partition(Datum... values) {
      partition.addAll(Arrays.asList(values));
      return this;
    }

    /** Appends value stats columns. */
    public Builder stats(ColumnStats... columns) {
      valueStats.addAll(Arrays.asList(columns));
      return this;
    }

    /** The committable; throws what the record's constructor throws. */
    public PaimonCommittable build() {
      return new PaimonCommittable(
          fileName,
          fileSize,
          rowCount,
          schemaId,
          minSequenceNumber,
          maxSequenceNumber,
          creationTimeMillis,
          partition,
          valueStats);
    }
  }

  /** A little-endian output that grows as needed. */
  private static final class Out {
    private ByteBuffer b = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);

    private ByteBuffer room(int n) {
      if (b.remaining() < n) {
        ByteBuffer g =
            ByteBuffer.allocate(Math.max(b.capacity() * 2, b.position() + n))
                .order(ByteOrder.LITTLE_ENDIAN);
        g.put(b.flip());
        b = g;
      }
      return b;
    }

    void u8(int x) {
      room(1).put((byte) x);
    }

    void i32(int x) {
      room(4).putInt(x);
    }

    void i64(long x) {
      room(8).putLong(x);
    }

    void str(String s) {
      byte[] u = utf8("string", s);
      i32(u.length); // a Java String's UTF-8 form is below 2^32 bytes
      room(u.length).put(u);
    }

    void val(Datum d) {
      // Java 17: no pattern matching in switch; the interface is sealed, so these are all.
      if (d instanceof Datum.Int v) {
        u8(1);
        i32(v.value());
      } else if (d instanceof Datum.Bigint v) {
        u8(2);
        i64(v.value());
      } else if (d instanceof Datum.Str v) {
        u8(3);
        str(v.value());
      } else if (d instanceof Datum.Bool v) {
        u8(4);
        u8(v.value() ? 1 : 0);
      } else {
        u8(0);
      }
    }

    byte[] bytes() {
      return Arrays.copyOf(b.array(), b.position());
    }
  }

  /** The committable's bytes, encoding {@code PCM} v1: what {@link Writer#report} carries. */
  public byte[] encode() {
    Out out = new Out();
    out.u8('P');
    out.u8('C');
    out.u8('M');
    out.u8(1);
    out.str(fileName);
    for (long x :
        new long[] {
          fileSize, rowCount, schemaId, minSequenceNumber, maxSequenceNumber, creationTimeMillis
        }) {
      out.i64(x);
    }
    out.i32(partition.size());
    for (Datum d : partition) {
      out.val(d);
    }
    if (valueStats.isEmpty()) {
      out.u8(0);
    } else {
      out.u8(1);
      out.i32(valueStats.size());
      for (ColumnStats c : valueStats) {
        out.str(c.column());
        out.val(c.min());
        out.val(c.max());
        out.i64(c.nullCount().orElse(-1));
      }
    }
    return out.bytes();
  }
}
