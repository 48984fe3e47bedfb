package io.sinkcoordinator.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * Executes a resolved call script ({@code sinkcoord script TRACE}, format in hosts/README.md)
 * through the binding's typed API (Coordinator, Writer, Table, a Storage and a Clock served from
 * the script, every import call checked against it) and prints each call's raw result, one JSON
 * line per call line: {@code {"ok": VALUE}} or {@code {"err": {"kind", "message"}}}. {@code
 * sinkcoord script --render RAW TRACE} turns them into the result document. The trace semantics
 * live in the Rust test kit; this only marshals, as hosts/node/run.mjs and hosts/python/run.py.
 *
 * <pre>
 *   java -cp ... io.sinkcoordinator.jvm.ScriptRunner [--component FILE] [--mode M] SCRIPT
 *   java -cp ... io.sinkcoordinator.jvm.ScriptRunner [--component FILE] [--mode M] --batch LIST
 * </pre>
 *
 * With {@code --batch}, LIST holds lines {@code SCRIPT<TAB>RAW}: each script runs on the same
 * loaded runtime (one JVM start for a whole comparison), its raw results go to RAW, its exit code
 * to RAW.code and a failure's message to RAW.err. Exit codes: 0 executed (even if calls returned
 * errors), 1 the component's calls differ from the script, it trapped, or the host failed; 2
 * usage.
 */
public final class ScriptRunner {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HexFormat HEX = HexFormat.of();

  /** The run stopped: a divergence, a trap, a host failure (exit code 1). */
  public static final class Failure extends Exception {
    private static final long serialVersionUID = 1L;

    Failure(String message) {
      super(message);
    }
  }

  /** Thrown inside an import when the component's call differs from the script. */
  private static final class Divergence extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Divergence(String message) {
      super(message);
    }
  }

  private final List<JsonNode> lines;
  private int pos;
  private String divergence;
  private final TreeMap<String, byte[]> map = new TreeMap<>(MemoryStorage::byteOrder);

  private ScriptRunner(List<JsonNode> lines) {
    this.lines = lines;
  }

  /** The raw result lines of a script (each ends with a newline). */
  public static List<String> run(Path script, CoordinatorRuntime runtime)
      throws IOException, Failure {
    List<JsonNode> lines = new ArrayList<>();
    for (String l : Files.readAllLines(script, StandardCharsets.UTF_8)) {
      if (!l.isBlank()) {
        lines.add(JSON.readTree(l));
      }
    }
    return new ScriptRunner(lines).execute(runtime);
  }

  // --------------------------------------------------------------------------------------------
  // Storage and clock served from the script
  // --------------------------------------------------------------------------------------------

  private static String show(JsonNode l) {
    return l == null ? "the end of the script" : l.toString();
  }

  private Divergence diverge(String message) {
    if (divergence == null) {
      divergence = "script line " + (pos + 1) + ": " + message;
    }
    return new Divergence(divergence);
  }

  /** The next line must be this import call; returns it. */
  private JsonNode expect(String kind, Map<String, String> call) {
    JsonNode line = pos < lines.size() ? lines.get(pos) : null;
    boolean same = line != null && line.has(kind);
    for (Map.Entry<String, String> e : call.entrySet()) {
      if (!same) {
        break;
      }
      JsonNode v = line.get(e.getKey());
      same = v != null && v.isTextual() && v.asText().equals(e.getValue());
    }
    if (!same) {
      StringBuilder shown = new StringBuilder("{");
      call.forEach((k, v) -> shown.append(shown.length() > 1 ? "," : "").append(q(k)).append(':').append(q(v)));
      throw diverge(
          "the component calls " + shown.append('}') + ", the script has " + show(line));
    }
    pos++;
    return line;
  }

  private static BackendException storageError(JsonNode fault) {
    BackendException.Kind kind =
        fault.get("kind").asText().equals("invalid-key")
            ? BackendException.Kind.INVALID_KEY
            : BackendException.Kind.IO;
    return new BackendException(kind, fault.get("message").asText());
  }

  private JsonNode storageLine(String op, String key, byte[] value) {
    Map<String, String> call = new java.util.LinkedHashMap<>();
    call.put("storage", op);
    call.put("key", key);
    if (value != null) {
      call.put("value", HEX.formatHex(value));
    }
    JsonNode fault = expect("storage", call).get("fault");
    return fault == null || fault.isNull() ? null : fault;
  }

  private interface Apply<T> {
    T run();
  }

  private <T> T write(String op, String key, byte[] value, Apply<T> apply) throws BackendException {
    JsonNode fault = storageLine(op, key, value);
    if (fault != null && !fault.get("applied").asBoolean()) {
      throw storageError(fault);
    }
    T r = apply.run();
    if (fault != null) {
      throw storageError(fault);
    }
    return r;
  }

  private final Storage storage =
      new Storage() {
        @Override
        public byte[] get(String key) throws BackendException {
          JsonNode fault = storageLine("get", key, null);
          if (fault != null) {
            throw storageError(fault);
          }
          byte[] v = map.get(key);
          return v == null ? null : v.clone();
        }

        @Override
        public boolean putIfAbsent(String key, byte[] value) throws BackendException {
          return write(
              "put-if-absent", key, value, () -> map.putIfAbsent(key, value.clone()) == null);
        }

        @Override
        public void put(String key, byte[] value) throws BackendException {
          write("put", key, value, () -> map.put(key, value.clone()));
        }

        @Override
        public void delete(String key) throws BackendException {
          write("delete", key, null, () -> map.remove(key));
        }

        @Override
        public List<String> list(String prefix) throws BackendException {
          JsonNode fault = storageLine("list", prefix, null);
          if (fault != null) {
            throw storageError(fault);
          }
          List<String> keys = new ArrayList<>();
          for (String k : map.tailMap(prefix, true).keySet()) {
            if (!k.startsWith(prefix)) {
              break;
            }
            keys.add(k);
          }
          return keys;
        }
      };

  private final Clock clock =
      () -> Long.parseUnsignedLong(expect("clock", Map.of()).get("clock").get("u64").asText());

  // --------------------------------------------------------------------------------------------
  // Arguments (wire form: testkit/src/script/wire.rs) and raw results
  // --------------------------------------------------------------------------------------------

  private static long u64(JsonNode v) {
    return Long.parseUnsignedLong(v.get("u64").asText());
  }

  private static OptionalLong optU64(JsonNode v) {
    return v == null || v.isNull() ? OptionalLong.empty() : OptionalLong.of(u64(v));
  }

  private static OptionalLong optS64(JsonNode v) {
    return v == null || v.isNull()
        ? OptionalLong.empty()
        : OptionalLong.of(Long.parseLong(v.get("s64").asText()));
  }

  private static int u32(JsonNode v) {
    return (int) Long.parseLong(v.asText());
  }

  private static byte[] bytes(JsonNode v) {
    return HEX.parseHex(v.get("bytes").asText());
  }

  private static List<byte[]> byteList(JsonNode v) {
    List<byte[]> out = new ArrayList<>();
    v.forEach(x -> out.add(bytes(x)));
    return out;
  }

  private static Entry entry(JsonNode v) {
    return new Entry(
        u64(v.get("checkpoint")),
        byteList(v.get("committables")),
        optS64(v.get("watermark")),
        v.get("savepoint").asBoolean());
  }

  private static Config config(JsonNode v) {
    FinalCommitMode fc = FinalCommitMode.fromWitName(v.get("final-commit").asText());
    RecoveryMode rm = RecoveryMode.fromWitName(v.get("recovery").asText());
    if (fc == null || rm == null) {
      throw new IllegalArgumentException("unknown enum value in " + v);
    }
    return new Config(
        u32(v.get("parallelism")),
        v.get("commit-user").asText(),
        v.get("checkpointing").asBoolean(),
        fc,
        v.get("force-create-snapshot").asBoolean(),
        v.get("savepoint-auto-tag").asBoolean(),
        optU64(v.get("tag-time-retained-ms")),
        rm);
  }

  private static RestorePoint restorePoint(JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    List<Integer> finished = new ArrayList<>();
    v.get("finished-subtasks").forEach(x -> finished.add(u32(x)));
    return new RestorePoint(u64(v.get("checkpoint")), bytes(v.get("state")), finished);
  }

  static String q(String s) {
    try {
      return JSON.writeValueAsString(s);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  private static String u(long v) {
    return Long.toUnsignedString(v);
  }

  private static String opt(OptionalLong v, boolean signed) {
    if (v.isEmpty()) {
      return "null";
    }
    return signed ? Long.toString(v.getAsLong()) : u(v.getAsLong());
  }

  private static String strings(List<String> l) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < l.size(); i++) {
      b.append(i > 0 ? "," : "").append(q(l.get(i)));
    }
    return b.append(']').toString();
  }

  static String encode(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Outcome o) {
      StringBuilder committed = new StringBuilder("[");
      for (int i = 0; i < o.committed().size(); i++) {
        committed.append(i > 0 ? "," : "").append(u(o.committed().get(i)));
      }
      return "{\"committed\":" + committed.append(']') + ",\"committed-up-to\":"
          + opt(o.committedUpTo(), false) + ",\"restart-required\":" + o.restartRequired()
          + ",\"state\":" + q(o.state().witName()) + ",\"tags-created\":" + strings(o.tagsCreated())
          + ",\"tags-deleted\":" + strings(o.tagsDeleted()) + "}";
    }
    if (v instanceof Lifecycle l) {
      return q(l.witName());
    }
    if (v instanceof OptionalLong o) {
      return opt(o, false);
    }
    if (v instanceof byte[] b) {
      return q(HEX.formatHex(b));
    }
    if (v instanceof java.util.Optional<?> o) {
      return encode(o.orElse(null));
    }
    if (v instanceof Entry e) {
      List<String> hex = new ArrayList<>();
      e.committables().forEach(c -> hex.add(HEX.formatHex(c)));
      return "{\"checkpoint\":" + u(e.checkpoint()) + ",\"committables\":" + strings(hex)
          + ",\"savepoint\":" + e.savepoint() + ",\"watermark\":" + opt(e.watermark(), true) + "}";
    }
    if (v instanceof Snapshot s) {
      StringBuilder cs = new StringBuilder("[");
      for (int i = 0; i < s.committables().size(); i++) {
        Snapshot.Committable c = s.committables().get(i);
        cs.append(i > 0 ? "," : "").append('[').append(Integer.toUnsignedString(c.subtask()))
            .append(',').append(q(HEX.formatHex(c.bytes()))).append(']');
      }
      return "{\"commit-user\":" + q(s.commitUser()) + ",\"committables\":" + cs.append(']')
          + ",\"id\":" + u(s.id()) + ",\"identifier\":" + u(s.identifier()) + ",\"time-ms\":"
          + u(s.timeMs()) + ",\"watermark\":" + opt(s.watermark(), true) + "}";
    }
    if (v instanceof Tag t) {
      return "{\"create-time-ms\":" + u(t.createTimeMs()) + ",\"expire-time-ms\":"
          + opt(t.expireTimeMs(), false) + ",\"identifier\":" + u(t.identifier()) + ",\"name\":"
          + q(t.name()) + ",\"snapshot-id\":" + u(t.snapshotId()) + "}";
    }
    if (v instanceof List<?> l) {
      StringBuilder b = new StringBuilder("[");
      for (int i = 0; i < l.size(); i++) {
        b.append(i > 0 ? "," : "").append(encode(l.get(i)));
      }
      return b.append(']').toString();
    }
    throw new IllegalArgumentException("cannot encode " + v.getClass());
  }

  // --------------------------------------------------------------------------------------------
  // The calls
  // --------------------------------------------------------------------------------------------

  private Object invoke(
      JsonNode line, JsonNode a, Map<Integer, Object> handles, Table table, CoordinatorRuntime rt)
      throws CoordinatorException {
    String name = line.get("call").asText();
    JsonNode h = line.get("h");
    if (name.equals("coordinator")) {
      handles.put(
          h.asInt(), new Coordinator(config(a.get(0)), storage, clock, restorePoint(a.get(1)), rt));
      return null;
    }
    if (name.equals("writer")) {
      handles.put(h.asInt(), new Writer(u32(a.get(0)), storage, clock, rt));
      return null;
    }
    if (h == null) {
      return switch (name) {
        case "latest-snapshot" -> table.latestSnapshot();
        case "snapshot-by-id" -> table.snapshotById(u64(a.get(0)));
        case "list-snapshots" -> table.listSnapshots();
        case "list-tags" -> table.listTags();
        default -> throw diverge("unknown table call " + name);
      };
    }
    Object target = handles.get(h.asInt());
    if (target instanceof Coordinator c) {
      return switch (name) {
        case "set-limits" -> {
          JsonNode l = a.get(0);
          c.setLimits(
              new Limits(
                  u64(l.get("max-committable-bytes")),
                  u64(l.get("max-event-bytes")),
                  u64(l.get("max-snapshot-bytes"))));
          yield null;
        }
        case "set-table-format" -> {
          TableFormat f = TableFormat.fromWitName(a.get(0).asText());
          if (f == null) {
            throw new IllegalArgumentException("unknown table format " + a.get(0));
          }
          c.setTableFormat(f);
          yield null;
        }
        case "start" -> c.start();
        case "event" -> c.event(u32(a.get(0)), u32(a.get(1)), entry(a.get(2)));
        case "restored" -> {
          List<Entry> entries = new ArrayList<>();
          a.get(3).forEach(e -> entries.add(entry(e)));
          yield c.restored(u32(a.get(0)), u32(a.get(1)), u64(a.get(2)), entries);
        }
        case "subtask-reset" -> c.subtaskReset(u32(a.get(0)), optU64(a.get(1)));
        case "checkpoint" -> c.checkpoint(u64(a.get(0)));
        case "checkpoint-complete" -> c.checkpointComplete(u64(a.get(0)));
        case "checkpoint-aborted" -> c.checkpointAborted(u64(a.get(0)));
        case "close" -> c.close();
        case "state" -> c.state();
        case "committed-up-to" -> c.committedUpTo();
        default -> throw diverge("unknown coordinator call " + name);
      };
    }
    if (target instanceof Writer w) {
      return switch (name) {
        case "report" ->
            w.report(
                u64(a.get(0)), byteList(a.get(1)), optS64(a.get(2)), a.get(3).asBoolean());
        case "end-input" -> w.endInput(byteList(a.get(0)), optS64(a.get(1)));
        case "committed" -> {
          w.committed(u64(a.get(0)));
          yield null;
        }
        case "checkpoint-aborted" -> {
          w.checkpointAborted(u64(a.get(0)));
          yield null;
        }
        case "state" -> w.state();
        case "restore" -> w.restore(bytes(a.get(0)), u64(a.get(1)));
        default -> throw diverge("unknown writer call " + name);
      };
    }
    throw diverge("no handle " + h);
  }

  private List<String> execute(CoordinatorRuntime rt) throws Failure {
    Map<Integer, Object> handles = new HashMap<>();
    Table table = new Table(storage, clock, rt);
    List<String> out = new ArrayList<>();
    while (pos < lines.size()) {
      JsonNode line = lines.get(pos++);
      if (!line.has("call")) {
        pos--;
        throw new Failure(
            "script line " + (pos + 1) + ": the component did not make the import call " + show(line));
      }
      String raw;
      try {
        raw = "{\"ok\":" + encode(invoke(line, line.get("args"), handles, table, rt)) + "}";
      } catch (ComponentTrapException e) {
        if (divergence != null) {
          throw new Failure(divergence);
        }
        throw new Failure(
            "script line " + pos + ": " + line.get("call").asText() + " trapped: " + e.detail());
      } catch (CoordinatorException e) {
        if (divergence != null) {
          throw new Failure(divergence);
        }
        raw = "{\"err\":{\"kind\":" + q(e.kind()) + ",\"message\":" + q(e.detail()) + "}}";
      } catch (Divergence e) {
        throw new Failure(divergence);
      } catch (RuntimeException e) {
        throw new Failure("script line " + pos + ": the host failed: " + e);
      }
      out.add(raw + "\n");
    }
    return out;
  }

  // --------------------------------------------------------------------------------------------
  // Command line
  // --------------------------------------------------------------------------------------------

  private static final String USAGE =
      "usage: ScriptRunner [--component FILE] [--mode compiled|interpreter|runtime-compiled]"
          + " (SCRIPT | --batch LIST)";

  public static void main(String[] args) throws IOException {
    String component = null;
    String mode = System.getenv().getOrDefault("SINK_COORDINATOR_JVM_MODE", "compiled");
    String batch = null;
    String script = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--component" -> component = i + 1 < args.length ? args[++i] : null;
        case "--mode" -> mode = i + 1 < args.length ? args[++i] : null;
        case "--batch" -> batch = i + 1 < args.length ? args[++i] : null;
        default -> {
          if (args[i].startsWith("-") || script != null) {
            usage();
          }
          script = args[i];
        }
      }
    }
    if (mode == null || (batch == null) == (script == null)) {
      usage();
    }
    CoordinatorRuntime.Mode m =
        switch (mode) {
          case "compiled" -> CoordinatorRuntime.Mode.COMPILED;
          case "interpreter" -> CoordinatorRuntime.Mode.INTERPRETER;
          case "runtime-compiled" -> CoordinatorRuntime.Mode.RUNTIME_COMPILED;
          default -> {
            usage();
            yield null;
          }
        };
    CoordinatorRuntime rt;
    try {
      rt =
          component == null
              ? CoordinatorRuntime.bundled(m)
              : CoordinatorRuntime.fromFile(Path.of(component), m);
    } catch (IncompatibleComponentException | IOException e) {
      System.err.println("ScriptRunner: " + e.getMessage());
      System.exit(1);
      return;
    }
    if (script != null) {
      try {
        System.out.print(String.join("", run(Path.of(script), rt)));
        System.out.flush();
      } catch (Failure e) {
        System.err.println("ScriptRunner: " + e.getMessage());
        System.exit(1);
      }
      return;
    }
    for (String l : Files.readAllLines(Path.of(batch))) {
      if (l.isBlank()) {
        continue;
      }
      String[] parts = l.split("\t");
      Path raw = Path.of(parts[1]);
      int code = 0;
      String err = "";
      try {
        Files.writeString(raw, String.join("", run(Path.of(parts[0]), rt)));
      } catch (Failure | IOException e) {
        code = 1;
        err = "ScriptRunner: " + e.getMessage() + "\n";
        Files.deleteIfExists(raw);
      }
      Files.writeString(Path.of(parts[1] + ".err"), err);
      Files.writeString(Path.of(parts[1] + ".code"), code + "\n");
    }
  }

  private static void usage() {
    System.err.println(USAGE);
    System.exit(2);
  }
}
