package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The typed API on Chicory: what hosts/raw-abi/example.mjs checks, and the binding's own rules. */
class BindingTest {
  static final Path REPO =
      Path.of(System.getProperty("repo.root", "../..")).toAbsolutePath().normalize();

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static Entry entry(long cp, String committable, long wm) {
    return new Entry(cp, List.of(b(committable)), OptionalLong.of(wm), false);
  }

  static String witVersion() throws Exception {
    return CoreModule.witVersion(REPO);
  }

  /** How a test storage answers {@link Storage#get}. */
  interface Getter {
    byte[] get(String key) throws BackendException;
  }

  /** A storage whose reads are {@code get}'s and whose writes and lists go to {@code inner}. */
  static Storage readingBy(MemoryStorage inner, Getter get) {
    return new Storage() {
      @Override
      public byte[] get(String key) throws BackendException {
        return get.get(key);
      }

      @Override
      public boolean putIfAbsent(String key, byte[] value) throws BackendException {
        return inner.putIfAbsent(key, value);
      }

      @Override
      public void put(String key, byte[] value) throws BackendException {
        inner.put(key, value);
      }

      @Override
      public void delete(String key) throws BackendException {
        inner.delete(key);
      }

      @Override
      public List<String> list(String prefix) throws BackendException {
        return inner.list(prefix);
      }
    };
  }

  @ParameterizedTest
  @EnumSource(CoordinatorRuntime.Mode.class)
  void theRawAbiExampleOnEveryMode(CoordinatorRuntime.Mode mode) throws Exception {
    CoordinatorRuntime rt = CoordinatorRuntime.bundled(mode);
    assertEquals(witVersion(), rt.version());
    MemoryStorage storage = new MemoryStorage();
    Coordinator c = new Coordinator(Config.of(2, "job-1"), storage, new ManualClock(1000), null, rt);
    assertEquals(Lifecycle.CREATED, c.state());
    Outcome started = c.start();
    assertEquals(
        new Outcome(Lifecycle.RUNNING, List.of(), List.of(), List.of(), false, OptionalLong.empty()),
        started);
    c.event(0, 0, entry(1, "v1", 100));
    c.event(1, 0, entry(1, "v2", 200));
    Outcome done = c.checkpointComplete(1);
    assertEquals(List.of(1L), done.committed());
    assertEquals(OptionalLong.of(1), done.committedUpTo());
    assertEquals(OptionalLong.of(1), c.committedUpTo());

    Snapshot s = new Table(storage, new ManualClock(0), rt).snapshotById(1).orElseThrow();
    assertEquals("job-1", s.commitUser());
    assertEquals(OptionalLong.of(100), s.watermark());
    assertEquals(1000, s.timeMs());
    assertEquals(2, s.committables().size());
    assertEquals(1, s.committables().get(1).subtask());
    assertArrayEquals(b("v2"), s.committables().get(1).bytes());

    // format version 2, "job-1", parallelism 2, no ended slots
    assertEquals("02056a6f622d310200", HexFormat.of().formatHex(c.checkpoint(2)));

    InvalidEventException e =
        assertThrows(InvalidEventException.class, () -> c.event(5, 0, entry(2, "x", 0)));
    assertEquals("invalid-event", e.kind());
    assertEquals("event: subtask 5 is outside parallelism 2", e.detail());
    assertTrue(e.fatal());
    assertEquals(Lifecycle.FAILED, c.state());
    assertEquals(
        List.of("hint/latest-snapshot", "snapshot/00000000000000000001"),
        new ArrayList<>(storage.snapshot().keySet()));

    Writer w = new Writer(0, rt);
    Entry e1 = w.report(1, List.of(b("v1")), OptionalLong.of(100), false);
    assertEquals(1, e1.checkpoint());
    byte[] before = w.state();
    w.committed(1);
    byte[] after = w.state();
    List<Entry> replay = new Writer(0, rt).restore(before, 1);
    assertEquals(1, replay.size());
    assertArrayEquals(b("v1"), replay.get(0).committables().get(0));
    assertEquals(List.of(), new Writer(0, rt).restore(after, 1));
  }

  /** events (packed on 0.2.2+) does what the events one by one do, state bytes included. */
  @Test
  void aBatchEqualsTheEventsOneByOne() throws Exception {
    MemoryStorage one = new MemoryStorage();
    MemoryStorage batch = new MemoryStorage();
    Coordinator a = new Coordinator(Config.of(3, "u"), one, new ManualClock(7), null, CoordinatorRuntime.bundled());
    Coordinator z = new Coordinator(Config.of(3, "u"), batch, new ManualClock(7), null, CoordinatorRuntime.bundled());
    a.start();
    z.start();
    assertTrue(z.runtime().hasEventsPacked());
    for (long cp = 1; cp <= 3; cp++) {
      List<WriterEvent> events = new ArrayList<>();
      for (int s = 0; s < 3; s++) {
        List<byte[]> cs = new ArrayList<>();
        for (int i = 0; i < s + 1; i++) {
          cs.add(new byte[200 + i]); // lengths above 127: two-byte LEB128
        }
        cs.add(new byte[0]);
        events.add(new WriterEvent(s, 0, new Entry(cp, cs, OptionalLong.of(cp * 10 - s), false)));
      }
      for (WriterEvent e : events) {
        a.event(e.subtask(), e.attempt(), e.entry());
      }
      Outcome merged = z.events(events);
      assertEquals(Lifecycle.RUNNING, merged.state());
      assertArrayEquals(a.checkpoint(cp), z.checkpoint(cp));
      assertEquals(a.checkpointComplete(cp), z.checkpointComplete(cp));
    }
    assertEquals(one.snapshot().keySet(), batch.snapshot().keySet());
    for (String k : one.snapshot().keySet()) {
      assertArrayEquals(one.snapshot().get(k), batch.snapshot().get(k), k);
    }
    // An error stops the batch: the events before it stay applied.
    List<WriterEvent> bad =
        List.of(
            new WriterEvent(0, 0, entry(4, "ok", 1)),
            new WriterEvent(9, 0, entry(4, "bad", 1)),
            new WriterEvent(1, 0, entry(4, "never", 1)));
    InvalidEventException e = assertThrows(InvalidEventException.class, () -> z.events(bad));
    assertEquals(1, e.applied().getAsInt());
    assertEquals(Lifecycle.FAILED, e.outcome().orElseThrow().state());
  }

  @Test
  void theVersionCheckHasTheMessageOfEveryHost() throws Exception {
    Path old = REPO.resolve("dist/sink-coordinator-0.1.0.wasm");
    IncompatibleComponentException e =
        assertThrows(
            IncompatibleComponentException.class,
            () -> CoordinatorRuntime.fromFile(old, CoordinatorRuntime.Mode.INTERPRETER));
    assertEquals(
        "incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0, the component is"
            + " sink:coordinator@0.1.0",
        e.getMessage());
    assertThrows(
        IncompatibleComponentException.class,
        () -> CoordinatorRuntime.fromBytes(new byte[] {1, 2, 3}, CoordinatorRuntime.Mode.COMPILED));
    assertEquals(
        "0.2.3", CoordinatorRuntime.checkVersion(List.of("sink:coordinator/table@0.2.3#list-tags")));
    for (String v : List.of("0.2.0", "0.3.0", "0.2.3-rc.1", "v0.2.3", "1.2.3")) {
      assertThrows(
          IncompatibleComponentException.class,
          () -> CoordinatorRuntime.checkVersion(List.of("sink:coordinator/table@" + v + "#x")),
          v);
    }
  }

  @Test
  void theComponentAndItsCoreModuleAreTheSameModule() throws Exception {
    String v = witVersion();
    byte[] component = Files.readAllBytes(REPO.resolve("dist/sink-coordinator-" + v + ".wasm"));
    byte[] core = CoreModule.fromBytes(component);
    assertEquals(CoordinatorRuntime.bundledProperties().getProperty("sha256"), CoreModule.sha256(core));
    Path coreFile = REPO.resolve("dist/sink-coordinator-" + v + ".core.wasm");
    if (Files.exists(coreFile)) {
      assertArrayEquals(core, CoreModule.fromBytes(Files.readAllBytes(coreFile)));
    }
    // The bundled module, loaded from the file in COMPILED mode, uses the build-time classes.
    CoordinatorRuntime rt =
        CoordinatorRuntime.fromBytes(component, CoordinatorRuntime.Mode.COMPILED);
    assertEquals(CoordinatorRuntime.Mode.COMPILED, rt.mode());
  }

  /** A storage that throws something other than BackendException traps; no trap loop follows. */
  @Test
  void aTrapDiscardsTheInstanceOnce() throws Exception {
    MemoryStorage inner = new MemoryStorage();
    Storage broken =
        readingBy(
            inner,
            key -> {
              // A table read that finds no native log asks for the Paimon schema (0.2.5): absent,
              // so that the fresh table instance below reads an empty table instead of trapping.
              if (key.equals("schema/schema-0")) {
                return null;
              }
              throw new UnsupportedOperationException("boom on " + key);
            });
    Coordinator c = new Coordinator(Config.of(1, "u"), broken, new ManualClock(0), null, CoordinatorRuntime.bundled());
    c.start();
    ComponentTrapException t =
        assertThrows(ComponentTrapException.class, () -> c.event(0, 0, entry(1, "a", 1)));
    assertInstanceOf(UnsupportedOperationException.class, t.getCause());
    assertTrue(t.detail().contains("boom on"), t.detail());
    assertTrue(c.discarded());
    ComponentTrapException again = assertThrows(ComponentTrapException.class, c::state);
    assertTrue(again.detail().startsWith("the instance was discarded after a trap"));
    // A table is stateless: it starts a fresh instance after a trap.
    Table table = new Table(broken, new ManualClock(0), CoordinatorRuntime.bundled());
    assertThrows(ComponentTrapException.class, table::latestSnapshot);
    assertEquals(List.of(), table.listTags());
  }

  /** A backend error is the component's storage error: the call is safe to repeat. */
  @Test
  void aBackendErrorIsAStorageError() throws Exception {
    MemoryStorage inner = new MemoryStorage();
    boolean[] fail = {true};
    Storage flaky =
        readingBy(
            inner,
            key -> {
              if (fail[0]) {
                throw BackendException.io("injected");
              }
              return inner.get(key);
            });
    Coordinator c = new Coordinator(Config.of(1, "u"), flaky, new ManualClock(0), null, CoordinatorRuntime.bundled());
    c.start();
    StorageException e = assertThrows(StorageException.class, () -> c.event(0, 0, entry(1, "a", 1)));
    assertFalse(e.fatal());
    assertTrue(e.detail().contains("injected"), e.detail());
    fail[0] = false;
    c.event(0, 0, entry(1, "a", 1));
    assertEquals(List.of(1L), c.checkpointComplete(1).committed());
  }

  @Test
  void aNestedCallIsRefused() throws Exception {
    Coordinator[] self = new Coordinator[1];
    MemoryStorage inner = new MemoryStorage();
    Storage reentrant =
        readingBy(
            inner,
            key -> {
              try {
                self[0].state();
              } catch (CoordinatorException e) {
                throw BackendException.io("nested: " + e.getMessage());
              }
              return inner.get(key);
            });
    self[0] = new Coordinator(Config.of(1, "u"), reentrant, new ManualClock(0), null, CoordinatorRuntime.bundled());
    self[0].start();
    StorageException e =
        assertThrows(StorageException.class, () -> self[0].event(0, 0, entry(1, "a", 1)));
    assertTrue(e.detail().contains("nested inside an import call"), e.detail());
    assertFalse(self[0].discarded());
  }

  @Test
  void aDirectoryTableReadsBack(@TempDir Path dir) throws Exception {
    DirectoryStorage storage = new DirectoryStorage(dir);
    Coordinator c = new Coordinator(Config.of(1, "dir"), storage, new ManualClock(5), null, CoordinatorRuntime.bundled());
    c.start();
    for (long cp = 1; cp <= 3; cp++) {
      c.event(0, 0, entry(cp, "c" + cp, cp));
      c.checkpointComplete(cp);
    }
    assertTrue(Files.isRegularFile(dir.resolve("snapshot/00000000000000000003")));
    List<Snapshot> all = new Table(storage).listSnapshots();
    assertEquals(3, all.size());
    assertEquals(3, all.get(2).identifier());
    assertEquals(List.of("snapshot/00000000000000000001", "snapshot/00000000000000000002", "snapshot/00000000000000000003"), storage.list("snapshot/"));
    assertFalse(storage.putIfAbsent("snapshot/00000000000000000001", b("x")));
    for (String bad : List.of("", "/abs", "a//b", "a/../b", "a\\b", "x/.sinkcoord-tmp.1")) {
      BackendException e = assertThrows(BackendException.class, () -> storage.get(bad), bad);
      assertEquals(BackendException.Kind.INVALID_KEY, e.kind());
    }
    assertEquals(null, storage.get("missing/key"));
    storage.delete("missing/key");
  }

  /** Each WIT error kind has its class, its name, and whether it is fatal. */
  @Test
  void everyErrorKindHasItsClass() {
    List<Class<?>> classes =
        List.of(
            DeclinedException.class,
            StorageException.class,
            IllegalCallException.class,
            InvalidEventException.class,
            InvalidConfigException.class,
            CorruptStateException.class);
    List<String> names =
        List.of(
            "declined", "storage", "illegal-state", "invalid-event", "invalid-config", "corrupt-state");
    for (int kind = 0; kind < classes.size(); kind++) {
      CoordinatorException e = CoordinatorException.of(kind, "why", -1, null);
      assertInstanceOf(classes.get(kind), e);
      assertEquals(names.get(kind), e.kind());
      assertEquals(kind > 1, e.fatal(), names.get(kind));
      assertEquals(names.get(kind) + ": why", e.getMessage());
      assertEquals("why", e.detail());
    }
    ComponentTrapException trap = new ComponentTrapException("t", null);
    assertEquals("trap", trap.kind());
    assertTrue(trap.fatal());
  }

  /** The enums' WIT names (what ScriptRunner prints and parses), and their lookups. */
  @Test
  void theEnumsHaveTheWitNames() {
    assertEquals(
        List.of("on-checkpoint", "on-end-input"),
        Stream.of(FinalCommitMode.values()).map(FinalCommitMode::witName).toList());
    assertEquals(
        List.of("restart", "continue"),
        Stream.of(RecoveryMode.values()).map(RecoveryMode::witName).toList());
    assertEquals(
        List.of("native", "paimon"),
        Stream.of(TableFormat.values()).map(TableFormat::witName).toList());
    assertEquals(
        List.of("created", "restoring", "running", "closed", "failed"),
        Stream.of(Lifecycle.values()).map(Lifecycle::toString).toList());
    for (FinalCommitMode m : FinalCommitMode.values()) {
      assertEquals(m, FinalCommitMode.fromWitName(m.witName()));
    }
    for (RecoveryMode m : RecoveryMode.values()) {
      assertEquals(m, RecoveryMode.fromWitName(m.witName()));
    }
    assertEquals(TableFormat.NATIVE, TableFormat.fromWitName("native"));
    assertEquals(null, FinalCommitMode.fromWitName("ON_CHECKPOINT"));
    assertEquals(null, RecoveryMode.fromWitName("restart "));
  }

  @Test
  void configErrorsAndDeclinedCallsHaveTheirClasses() throws Exception {
    Coordinator bad = new Coordinator(Config.of(0, "u"), new MemoryStorage());
    assertThrows(InvalidConfigException.class, bad::start);
    Coordinator c = new Coordinator(Config.of(1, "u"), new MemoryStorage());
    assertThrows(InvalidConfigException.class, () -> c.setLimits(new Limits(0, 1, 1)));
    Coordinator d = new Coordinator(Config.of(1, "u"), new MemoryStorage());
    d.start();
    assertThrows(IllegalCallException.class, () -> d.setLimits(new Limits(1, 1, 1)));
    Coordinator r =
        new Coordinator(
            Config.of(1, "u"),
            new MemoryStorage(),
            Clock.system(),
            new RestorePoint(1, new byte[] {(byte) 0xff, 1, 2}, List.of()),
            CoordinatorRuntime.bundled());
    assertThrows(CorruptStateException.class, r::start);
  }
}
