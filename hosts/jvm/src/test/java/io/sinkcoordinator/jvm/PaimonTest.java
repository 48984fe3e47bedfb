package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Coordinator#setTableFormat} on Paimon tables: the golden job of every host ({@code
 * tests/paimon/golden/two-checkpoints.json}, written by the native core) leaves the same table
 * byte for byte; a 0.2.4 module refuses Paimon; a bad committable is a fatal invalid-event.
 */
class PaimonTest {
  static final Path REPO = BindingTest.REPO;
  static final HexFormat HEX = HexFormat.of();
  static final String NO_SET_TABLE_FORMAT =
      "table-format paimon: the component has no set-table-format (it needs WIT 0.2.5 or later)";

  static JsonNode golden() throws Exception {
    return new ObjectMapper()
        .readTree(REPO.resolve("tests/paimon/golden/two-checkpoints.json").toFile());
  }

  /** A coordinator on the bundled module over {@code storage}, holding the golden schema. */
  static Coordinator paimonCoordinator(JsonNode g, MemoryStorage storage) throws Exception {
    JsonNode schema = g.get("schema");
    storage.putIfAbsent(schema.get("key").asText(), HEX.parseHex(schema.get("value").asText()));
    JsonNode cfg = g.get("config");
    Config config =
        new Config(
            cfg.get("parallelism").asInt(),
            cfg.get("commit-user").asText(),
            true,
            FinalCommitMode.ON_CHECKPOINT,
            false,
            cfg.get("savepoint-auto-tag").asBoolean(),
            OptionalLong.empty(),
            RecoveryMode.RESTART);
    Coordinator c =
        new Coordinator(
            config,
            storage,
            new ManualClock(g.get("clock-ms").asLong()),
            null,
            CoordinatorRuntime.bundled());
    c.setTableFormat(TableFormat.PAIMON);
    return c;
  }

  /**
   * The golden job: each event one {@code event} call, or ({@code batched}) each checkpoint's
   * events as one {@code events} batch (events-packed: the committables cross as one block); its
   * table must be the golden one.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void theGoldenJobWritesTheGoldenTable(boolean batched) throws Exception {
    JsonNode g = golden();
    assertEquals("paimon", g.get("format").asText());
    MemoryStorage storage = new MemoryStorage();
    Coordinator c = paimonCoordinator(g, storage);
    List<WriterEvent> batch = new ArrayList<>();
    int i = 0;
    for (JsonNode s : g.get("steps")) {
      String what = "step " + i++ + " " + s;
      switch (s.get("call").asText()) {
        case "start" -> c.start();
        case "event" -> {
          List<byte[]> committables = new ArrayList<>();
          s.get("committables").forEach(h -> committables.add(HEX.parseHex(h.asText())));
          JsonNode wm = s.get("watermark");
          Entry entry =
              new Entry(
                  s.get("checkpoint").asLong(),
                  committables,
                  wm.isNull() ? OptionalLong.empty() : OptionalLong.of(wm.asLong()),
                  s.get("savepoint").asBoolean());
          if (batched) {
            batch.add(new WriterEvent(s.get("subtask").asInt(), s.get("attempt").asInt(), entry));
          } else {
            c.event(s.get("subtask").asInt(), s.get("attempt").asInt(), entry);
          }
        }
        case "checkpoint-complete" -> {
          if (!batch.isEmpty()) {
            c.events(batch);
            batch.clear();
          }
          Outcome out = c.checkpointComplete(s.get("checkpoint").asLong());
          List<Long> committed = new ArrayList<>();
          s.get("committed").forEach(n -> committed.add(n.asLong()));
          List<String> tags = new ArrayList<>();
          s.get("tags-created").forEach(n -> tags.add(n.asText()));
          assertEquals(committed, out.committed(), what);
          assertEquals(tags, out.tagsCreated(), what);
        }
        default -> throw new AssertionError("unknown call in " + what);
      }
    }
    Map<String, String> want = new TreeMap<>();
    g.get("table").fields().forEachRemaining(e -> want.put(e.getKey(), e.getValue().asText()));
    Map<String, String> got = new TreeMap<>();
    storage.snapshot().forEach((k, v) -> got.put(k, HEX.formatHex(v)));
    assertEquals(want.keySet(), got.keySet(), "the table's keys");
    for (String k : want.keySet()) {
      assertEquals(want.get(k), got.get(k), k);
    }
  }

  @Test
  void aBadCommittableIsAFatalInvalidEvent() throws Exception {
    MemoryStorage storage = new MemoryStorage();
    Coordinator c = paimonCoordinator(golden(), storage);
    c.start();
    Entry bad = new Entry(7, List.of(new byte[] {0}), OptionalLong.empty(), false);
    InvalidEventException e = assertThrows(InvalidEventException.class, () -> c.event(1, 0, bad));
    assertTrue(
        e.detail().startsWith("event of subtask 1 for checkpoint 7: committable 0: "), e.detail());
    assertEquals(Lifecycle.FAILED, c.state());
    assertEquals(List.of("schema/schema-0"), new ArrayList<>(storage.snapshot().keySet()));
  }

  @Test
  void aRuntimeWithTheFormatSetsItOnEveryCoordinator() throws Exception {
    CoordinatorRuntime paimon = CoordinatorRuntime.bundled().withTableFormat(TableFormat.PAIMON);
    assertEquals(TableFormat.PAIMON, paimon.tableFormat());
    assertEquals(TableFormat.NATIVE, CoordinatorRuntime.bundled().tableFormat());
    MemoryStorage storage = new MemoryStorage();
    JsonNode schema = golden().get("schema");
    storage.putIfAbsent(schema.get("key").asText(), HEX.parseHex(schema.get("value").asText()));
    Coordinator c = new Coordinator(Config.of(2, "job"), storage, new ManualClock(1), null, paimon);
    c.start();
    Entry notPcm =
        new Entry(
            1, List.of("file-1".getBytes(StandardCharsets.UTF_8)), OptionalLong.empty(), false);
    assertThrows(InvalidEventException.class, () -> c.event(0, 0, notPcm), "a Paimon table");

    CoordinatorRuntime old =
        CoordinatorRuntime.fromFile(
            REPO.resolve("dist/sink-coordinator-0.2.4.core.wasm"),
            CoordinatorRuntime.Mode.INTERPRETER);
    new Coordinator(
        Config.of(1, "job"),
        new MemoryStorage(),
        new ManualClock(1),
        null,
        old.withTableFormat(TableFormat.NATIVE));
    InvalidConfigException e =
        assertThrows(
            InvalidConfigException.class,
            () ->
                new Coordinator(
                    Config.of(1, "job"),
                    new MemoryStorage(),
                    new ManualClock(1),
                    null,
                    old.withTableFormat(TableFormat.PAIMON)));
    assertEquals(NO_SET_TABLE_FORMAT, e.detail());
  }

  @Test
  void theFormatIsChosenOnlyWhileCreated() throws Exception {
    Coordinator c = new Coordinator(Config.of(1, "job"), new MemoryStorage());
    c.start();
    assertThrows(IllegalCallException.class, () -> c.setTableFormat(TableFormat.PAIMON));
    assertEquals(TableFormat.PAIMON, TableFormat.fromWitName("paimon"));
  }

  @Test
  void anOlderModuleRefusesPaimon(@TempDir Path dir) throws Exception {
    CoordinatorRuntime old =
        CoordinatorRuntime.fromFile(
            REPO.resolve("dist/sink-coordinator-0.2.4.core.wasm"),
            CoordinatorRuntime.Mode.INTERPRETER);
    assertFalse(old.hasSetTableFormat());
    assertTrue(CoordinatorRuntime.bundled().hasSetTableFormat());
    Coordinator c =
        new Coordinator(Config.of(1, "job"), new MemoryStorage(), new ManualClock(1), null, old);
    c.setTableFormat(TableFormat.NATIVE);
    InvalidConfigException e =
        assertThrows(InvalidConfigException.class, () -> c.setTableFormat(TableFormat.PAIMON));
    assertEquals(NO_SET_TABLE_FORMAT, e.detail());
    assertEquals(Lifecycle.RUNNING, c.start().state(), "the refusal left the coordinator usable");

    // The script runner's set-table-format line, on both modules.
    Path script = dir.resolve("format.script");
    Files.writeString(
        script,
        "{\"call\": \"coordinator\", \"h\": 1, \"args\": [{\"parallelism\": 2, \"commit-user\":"
            + " \"job\", \"checkpointing\": true, \"final-commit\": \"on-checkpoint\","
            + " \"force-create-snapshot\": false, \"savepoint-auto-tag\": false,"
            + " \"tag-time-retained-ms\": null, \"recovery\": \"restart\"}, null]}\n"
            + "{\"call\": \"set-table-format\", \"h\": 1, \"args\": [\"paimon\"]}\n",
        StandardCharsets.UTF_8);
    assertEquals(
        List.of("{\"ok\":null}\n", "{\"ok\":null}\n"),
        ScriptRunner.run(script, CoordinatorRuntime.bundled()));
    assertEquals(
        List.of(
            "{\"ok\":null}\n",
            "{\"err\":{\"kind\":\"invalid-config\",\"message\":\"" + NO_SET_TABLE_FORMAT + "\"}}\n"),
        ScriptRunner.run(script, old));
  }
}
