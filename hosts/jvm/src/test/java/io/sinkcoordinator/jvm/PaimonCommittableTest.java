package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sinkcoordinator.jvm.PaimonCommittable.ColumnStats;
import io.sinkcoordinator.jvm.PaimonCommittable.Datum;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * {@link PaimonCommittable} against the shared vectors {@code tests/paimon/committables.json},
 * whose hex the Rust encoder fixes (paimon/tests/committable_vectors.rs), and its refusals.
 */
class PaimonCommittableTest {
  static final Path REPO = BindingTest.REPO;

  /** A vector's value: {"long": "n"} is a decimal string (JSON numbers lose bits past 2^53). */
  static Datum datum(JsonNode d) {
    assertEquals(1, d.size(), d.toString());
    Map.Entry<String, JsonNode> e = d.fields().next();
    JsonNode v = e.getValue();
    switch (e.getKey()) {
      case "null":
        return Datum.NULL;
      case "int":
        assertTrue(v.canConvertToInt(), v.toString());
        return Datum.ofInt(v.intValue());
      case "long":
        return Datum.ofBigint(Long.parseLong(v.textValue()));
      case "string":
        return Datum.of(v.textValue());
      case "bool":
        return Datum.of(v.booleanValue());
      default:
        throw new AssertionError("unknown value kind " + e.getKey());
    }
  }

  static long int64(JsonNode f, String field) {
    return Long.parseLong(f.get(field).textValue());
  }

  static PaimonCommittable dataFile(JsonNode f) {
    List<Datum> partition = new ArrayList<>();
    f.get("partition").forEach(d -> partition.add(datum(d)));
    List<ColumnStats> stats = new ArrayList<>();
    for (JsonNode s : f.get("value_stats")) {
      JsonNode n = s.get("null_count");
      stats.add(
          new ColumnStats(
              s.get("column").textValue(),
              datum(s.get("min")),
              datum(s.get("max")),
              n == null || n.isNull()
                  ? OptionalLong.empty()
                  : OptionalLong.of(Long.parseLong(n.textValue()))));
    }
    return new PaimonCommittable(
        f.get("file_name").textValue(),
        int64(f, "file_size"),
        int64(f, "row_count"),
        int64(f, "schema_id"),
        int64(f, "min_sequence_number"),
        int64(f, "max_sequence_number"),
        int64(f, "creation_time_millis"),
        partition,
        stats);
  }

  @Test
  void everyVectorEncodesToItsHex() throws Exception {
    JsonNode cases =
        new ObjectMapper()
            .readTree(REPO.resolve("tests/paimon/committables.json").toFile())
            .get("cases");
    assertTrue(cases.size() >= 8, cases.size() + " cases");
    for (JsonNode c : cases) {
      byte[] got = dataFile(c.get("data_file")).encode();
      assertEquals(c.get("hex").textValue(), HexFormat.of().formatHex(got), c.get("name").asText());
    }
  }

  @Test
  void theBuilderMatchesTheRecord() {
    PaimonCommittable built =
        PaimonCommittable.builder("data-1-0.parquet")
            .fileSize(1234)
            .rowCount(10)
            .schemaId(0)
            .sequenceNumbers(0, 9)
            .creationTimeMillis(1700000000000L)
            .partition(Datum.of("2024-01-01"), Datum.ofInt(3))
            .stats(new ColumnStats("id", Datum.ofBigint(1), Datum.ofBigint(10), 0))
            .build();
    PaimonCommittable record =
        new PaimonCommittable(
            "data-1-0.parquet",
            1234,
            10,
            0,
            0,
            9,
            1700000000000L,
            List.of(new Datum.Str("2024-01-01"), new Datum.Int(3)),
            List.of(
                new ColumnStats(
                    "id", new Datum.Bigint(1), new Datum.Bigint(10), OptionalLong.of(0))));
    assertEquals(record, built);
    assertArrayEquals(record.encode(), built.encode());
  }

  static void refuses(Class<? extends Throwable> type, String message, Executable e) {
    Throwable t = assertThrows(type, e);
    assertTrue(
        t.getMessage().contains(message), "'" + t.getMessage() + "' lacks '" + message + "'");
  }

  @Test
  void refusesWhatTheCoordinatorWouldRefuse() {
    for (String name :
        new String[] {"", ".", "..", "a/b", "a\\b", "a\nb", "a\u007fb", "a".repeat(256)}) {
      refuses(
          IllegalArgumentException.class,
          "is not a plain file name",
          () -> PaimonCommittable.builder(name).build());
    }
    PaimonCommittable.builder("é".repeat(127) + "a").build(); // 255 UTF-8 bytes
    refuses(
        IllegalArgumentException.class,
        "is not a plain file name",
        () -> PaimonCommittable.builder("é".repeat(128)).build());
    refuses(
        IllegalArgumentException.class,
        "file name is not well-formed Unicode",
        () -> PaimonCommittable.builder("a\ud800").build());
    refuses(
        IllegalArgumentException.class,
        "file size -1 is negative",
        () -> PaimonCommittable.builder("a").fileSize(-1).build());
    refuses(
        IllegalArgumentException.class,
        "row count -1 is negative",
        () -> PaimonCommittable.builder("a").rowCount(-1).build());
    refuses(
        IllegalArgumentException.class,
        "schema id -1 is negative",
        () -> PaimonCommittable.builder("a").schemaId(-1).build());
    refuses(
        IllegalArgumentException.class,
        "null count -1 of stats column 'id' is negative",
        () -> new ColumnStats("id", Datum.NULL, Datum.NULL, -1));
    refuses(
        IllegalArgumentException.class,
        "string value is not well-formed Unicode",
        () -> Datum.of("\udc00"));
    refuses(
        NullPointerException.class,
        "min (Datum.NULL for null)",
        () -> new ColumnStats("id", null, Datum.NULL));
    refuses(
        NullPointerException.class,
        "file name",
        () -> PaimonCommittable.builder(null).build());
    assertThrows(
        NullPointerException.class,
        () -> PaimonCommittable.builder("a").partition((Datum) null).build());
  }
}
