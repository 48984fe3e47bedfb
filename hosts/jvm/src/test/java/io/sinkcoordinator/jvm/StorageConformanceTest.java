package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The storage conformance suite of every host ({@code tests/storage/cases.json}, described in
 * {@code tests/storage/README.md}) against {@link DirectoryStorage} (every case), {@link
 * MemoryStorage} (the cases without bounds or a file system: it is a map for tests and examples,
 * with the key rules) and {@link S3Storage} on moto (the same cases). Every case runs even after
 * another fails, each under a deadline (a storage call that hangs fails its case, not the whole
 * run); the test fails with one line per failed step. The system property or environment
 * variable {@code SINKCOORD_STORAGE_CASES} names another cases file (to check that a broken
 * expectation fails). A {@code full-disk} case runs on a tmpfs of {@code options.full_disk_bytes}
 * mounted at the table root (root on Linux), unmounted after it; where the mount fails the case is
 * skipped with one line saying why.
 */
class StorageConformanceTest {
  /** The temporary-file prefix of every host's directory storage. */
  private static final String TMP_PREFIX = DirectoryStorage.TMP_PREFIX;

  private static final long CASE_DEADLINE_SECONDS = 60;

  @TempDir Path scratch;

  private static JsonNode suite() throws IOException {
    String override = System.getProperty("SINKCOORD_STORAGE_CASES", System.getenv("SINKCOORD_STORAGE_CASES"));
    Path path =
        override != null && !override.isEmpty()
            ? Path.of(override)
            : Path.of(System.getProperty("repo.root", "../.."), "tests", "storage", "cases.json");
    JsonNode suite = new ObjectMapper().readTree(path.toFile());
    assertEquals(1, suite.get("version").asInt(), "cases.json version");
    return suite;
  }

  /**
   * A fresh table: its handles and, for a directory, its root; {@code skip} says why a case cannot
   * run on it after all (a {@code full-disk} case whose tmpfs cannot be mounted); {@code close}
   * releases it after its case and returns null or why that failed.
   */
  private record Table(Supplier<Storage> open, Path root, String skip, Supplier<String> close) {
    Table(Supplier<Storage> open, Path root) {
      this(open, root, null, () -> null);
    }
  }

  /**
   * Runs a command: null if it exits 0, else its output on one line (or its exit status, or why it
   * could not start).
   */
  private static String command(String... args) {
    try {
      Process p = new ProcessBuilder(args).redirectErrorStream(true).start();
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      int status = p.waitFor();
      if (status == 0) {
        return null;
      }
      String why = String.join("; ", out.lines().map(String::strip).toList());
      return String.join(" ", args) + ": " + (why.isEmpty() ? "exit status " + status : why);
    } catch (IOException e) {
      return String.join(" ", args) + ": " + e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return String.join(" ", args) + ": interrupted";
    }
  }

  /** Mounts a tmpfs of {@code bytes} at {@code dir} (root on Linux); null or why it cannot. */
  private static String mountTmpfs(Path dir, long bytes) {
    return command("mount", "-t", "tmpfs", "-o", "size=" + bytes, "tmpfs", dir.toString());
  }

  /** Detaches the tmpfs at {@code dir} (even while a handle is open); null or why it failed. */
  private static String unmount(Path dir) {
    return command("umount", "-l", dir.toString());
  }

  /** Removes a case's directory (never through a link); best effort, @TempDir removes the rest. */
  private static void removeTree(Path dir) {
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException | RuntimeException e) {
      // left for @TempDir
    }
  }

  /** A suite value: a string's UTF-8, or byte i of {size, seed} = (seed + i + (i >> 8)) & 0xff. */
  static byte[] valueOf(JsonNode v) {
    if (v.isTextual()) {
      return v.asText().getBytes(StandardCharsets.UTF_8);
    }
    int size = v.get("size").asInt();
    int seed = v.get("seed").asInt();
    byte[] out = new byte[size];
    for (int i = 0; i < size; i++) {
      out[i] = (byte) (seed + i + (i >> 8));
    }
    return out;
  }

  private static String show(byte[] b) {
    if (b == null) {
      return "missing";
    }
    return b.length <= 40 ? '"' + new String(b, StandardCharsets.UTF_8) + '"' : "<" + b.length + " bytes>";
  }

  private static String kindOf(Throwable e) {
    if (e instanceof ValueTooLargeException) {
      return "value-too-large";
    }
    if (e instanceof BackendException b) {
      return b.kind() == BackendException.Kind.INVALID_KEY ? "invalid-key" : "io";
    }
    return "non-storage " + e.getClass().getSimpleName();
  }

  /** A call of the storage: its result, for the comparison. */
  private interface Call {
    Object run() throws Exception;
  }

  private static String step(Table table, Storage[] st, JsonNode s, JsonNode options)
      throws Exception {
    String op = s.get("op").asText();
    JsonNode e = s.has("expect") ? s.get("expect") : new ObjectMapper().createObjectNode();
    String key = s.has("key") ? s.get("key").asText() : null;
    Call call =
        switch (op) {
          case "get" -> () -> st[0].get(key);
          case "put-if-absent" -> () -> st[0].putIfAbsent(key, valueOf(s.get("value")));
          case "put" -> () -> {
            st[0].put(key, valueOf(s.get("value")));
            return "ok";
          };
          case "delete" -> () -> {
            st[0].delete(key);
            return "ok";
          };
          case "list" -> () -> st[0].list(s.get("prefix").asText());
          default -> null;
        };
    if (call != null) {
      Object got;
      try {
        got = call.run();
      } catch (Exception err) {
        if (e.has("error") && kindOf(err).equals(e.get("error").asText())) {
          return null;
        }
        return "got " + kindOf(err) + " error: " + err.getMessage();
      }
      String shown = got instanceof byte[] b ? show(b) : op.equals("get") ? "missing" : String.valueOf(got);
      if (e.has("error")) {
        return "expected a " + e.get("error").asText() + " error, got " + shown;
      }
      switch (op) {
        case "get" -> {
          byte[] want = e.has("missing") ? null : valueOf(e.get("value"));
          return Arrays.equals((byte[]) got, want) ? null : "expected " + show(want) + ", got " + shown;
        }
        case "put-if-absent" -> {
          boolean want = e.get("created").asBoolean();
          return got.equals(want) ? null : "expected created=" + want + ", got created=" + got;
        }
        case "list" -> {
          List<String> want = new ArrayList<>();
          e.get("keys").forEach(k -> want.add(k.asText()));
          return got.equals(want) ? null : "expected " + want + ", got " + got;
        }
        default -> {
          return null;
        }
      }
    }
    switch (op) {
      case "reopen" -> st[0] = table.open().get();
      case "race" -> {
        return race(table, s);
      }
      case "plant", "plant-temp-links" -> plant(table.root(), s);
      case "check-outside" -> {
        if (table.root() == null) {
          return null;
        }
        Path outside = table.root().resolveSibling("outside");
        String file = Files.readString(outside.resolve("file"));
        long entries;
        try (Stream<Path> list = Files.list(outside.resolve("dir"))) {
          entries = list.count();
        }
        boolean created = Files.exists(outside.resolve("missing"), LinkOption.NOFOLLOW_LINKS);
        if (!file.equals(options.get("outside_file_content").asText()) || entries != 0 || created) {
          return "outside the table changed: file \"" + file + "\", " + entries
              + " entries in dir, missing created: " + created;
        }
      }
      case "check-temp" -> {
        for (String field : List.of("present", "absent")) {
          for (JsonNode p : e.path(field)) {
            boolean exists = Files.exists(table.root().resolve(withPid(p.asText())), LinkOption.NOFOLLOW_LINKS);
            if (exists != field.equals("present")) {
              return withPid(p.asText()) + " should be " + field;
            }
          }
        }
      }
      case "check-no-temp" -> {
        if (table.root() == null) {
          return null;
        }
        List<Path> found;
        try (Stream<Path> walk = Files.walk(table.root())) {
          found =
              walk.filter(p -> p.getFileName().toString().startsWith(TMP_PREFIX))
                  .filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS))
                  .toList();
        }
        return found.isEmpty() ? null : "temporary files left: " + found;
      }
      default -> {
        return "unknown op " + op;
      }
    }
    return null;
  }

  /** A planted path with {@code {pid}} replaced by this process's id. */
  private static String withPid(String path) {
    return path.replace("{pid}", Long.toString(ProcessHandle.current().pid()));
  }

  private static void plant(Path root, JsonNode s) throws IOException, InterruptedException {
    Path outside = root.resolveSibling("outside");
    Path target =
        s.has("target") ? outside.resolve(s.get("target").asText().replace("outside-", "")) : null;
    if (s.get("op").asText().equals("plant-temp-links")) {
      long pid = ProcessHandle.current().pid();
      for (JsonNode d : s.get("dirs")) {
        Path dir = root.resolve(d.asText());
        Files.createDirectories(dir);
        for (int n = 0; n < s.get("count").asInt(); n++) {
          Files.createSymbolicLink(dir.resolve(TMP_PREFIX + pid + "." + n), target);
        }
      }
      return;
    }
    Path path = root.resolve(withPid(s.get("path").asText()));
    Files.createDirectories(path.getParent());
    switch (s.get("kind").asText()) {
      case "symlink" -> Files.createSymbolicLink(path, target);
      case "dir" -> Files.createDirectory(path);
      case "file" -> Files.write(path, valueOf(s.get("value")));
      case "sparse" -> {
        try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
          f.setLength(s.get("size").asLong());
        }
      }
      case "fifo" -> {
        Process p = new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
        assertEquals(0, p.waitFor(), "mkfifo " + path);
      }
      default -> throw new IllegalArgumentException("unknown kind " + s.get("kind"));
    }
  }

  private static String race(Table table, JsonNode s) throws Exception {
    int racers = s.get("racers").asInt();
    int keys = s.get("keys").asInt();
    String prefix = s.get("prefix").asText();
    CyclicBarrier barrier = new CyclicBarrier(racers);
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    try {
      List<Future<boolean[]>> results = new ArrayList<>();
      for (int r = 0; r < racers; r++) {
        Storage st = table.open().get();
        byte[] value = ("racer-" + r).getBytes(StandardCharsets.UTF_8);
        results.add(
            pool.submit(
                () -> {
                  boolean[] won = new boolean[keys];
                  for (int k = 0; k < keys; k++) {
                    barrier.await(CASE_DEADLINE_SECONDS, TimeUnit.SECONDS);
                    won[k] = st.putIfAbsent(prefix + k, value);
                  }
                  return won;
                }));
      }
      List<boolean[]> won = new ArrayList<>();
      for (Future<boolean[]> f : results) {
        won.add(f.get());
      }
      Storage st = table.open().get();
      for (int k = 0; k < keys; k++) {
        List<Integer> winners = new ArrayList<>();
        for (int r = 0; r < racers; r++) {
          if (won.get(r)[k]) {
            winners.add(r);
          }
        }
        byte[] stored = st.get(prefix + k);
        if (winners.size() != 1
            || !Arrays.equals(stored, ("racer-" + winners.get(0)).getBytes(StandardCharsets.UTF_8))) {
          return "key " + k + ": winners " + winners + ", stored " + show(stored);
        }
      }
      return null;
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Runs every case the backend can; one line per failed step. {@code fresh} makes a case's table
   * from its name and requirements; a table with {@code skip} counts as skipped, with one line
   * saying why.
   */
  private static List<String> run(
      String name, List<String> capabilities, BiFunction<String, List<String>, Table> fresh)
      throws Exception {
    JsonNode suite = suite();
    List<String> failures = new ArrayList<>();
    int passed = 0;
    int skipped = 0;
    // Daemon threads: a case whose call hangs must not keep the JVM alive.
    ExecutorService cases =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "storage-conformance");
              t.setDaemon(true);
              return t;
            });
    for (JsonNode c : suite.get("cases")) {
      List<String> requires = new ArrayList<>();
      c.path("requires").forEach(r -> requires.add(r.asText()));
      if (!capabilities.containsAll(requires)) {
        skipped++;
        continue;
      }
      String caseName = c.get("name").asText();
      Table table = fresh.apply(caseName, requires);
      if (table.skip() != null) {
        System.out.println("storage conformance, " + caseName + ": skipped: " + table.skip());
        skipped++;
        table.close().get();
        continue;
      }
      Future<List<String>> done =
          cases.submit(
              () -> {
                List<String> lines = new ArrayList<>();
                Storage[] st = {table.open().get()};
                int i = 0;
                for (JsonNode s : c.get("steps")) {
                  String why;
                  try {
                    why = step(table, st, s, suite.get("options"));
                  } catch (Exception | OutOfMemoryError err) {
                    // A value read whole (a sparse file) fails its step, not the run.
                    why = "threw " + err;
                  }
                  if (why != null) {
                    String at = s.has("key") ? s.get("key").asText() : s.has("prefix") ? s.get("prefix").asText() : "";
                    at = at.length() > 60 ? at.substring(0, 60) + "..." : at;
                    lines.add(name + ": " + caseName + " step " + i + " (" + s.get("op").asText() + " \"" + at + "\"): " + why);
                  }
                  i++;
                }
                return lines;
              });
      try {
        List<String> lines = done.get(CASE_DEADLINE_SECONDS, TimeUnit.SECONDS);
        failures.addAll(lines);
        if (lines.isEmpty()) {
          passed++;
        }
      } catch (TimeoutException t) {
        failures.add(name + ": " + caseName + ": did not finish within " + CASE_DEADLINE_SECONDS + " s (a storage call hangs)");
      } finally {
        String why = table.close().get();
        if (why != null) {
          failures.add(name + ": " + caseName + ": " + why);
        }
      }
    }
    cases.shutdownNow();
    System.out.println(
        "storage conformance, " + name + ": " + passed + " passed, " + failures.size()
            + " failed steps, " + skipped + " skipped");
    assertTrue(passed > 0, name + ": no case ran");
    return failures;
  }

  private static void assertNone(List<String> failures) {
    if (!failures.isEmpty()) {
      fail(failures.size() + " failed steps:\n" + String.join("\n", failures));
    }
  }

  @Test
  void directoryStoragePassesTheSuite() throws Exception {
    JsonNode options = suite().get("options");
    long max = options.get("max_value_bytes").asLong();
    int[] n = {0};
    assertNone(
        run(
            "DirectoryStorage",
            List.of("key-rules", "bounded", "filesystem", "full-disk"),
            (caseName, requires) -> {
              try {
                // A full-disk case lives outside @TempDir: if its tmpfs could not be
                // unmounted, JUnit's cleanup must not delete through the mount.
                boolean fullDisk = requires.contains("full-disk");
                Path base =
                    fullDisk
                        ? Files.createTempDirectory("sinkcoord-full-disk-")
                        : scratch.resolve(caseName + "-" + n[0]++);
                Files.createDirectories(base.resolve("outside").resolve("dir"));
                Files.writeString(base.resolve("outside").resolve("file"), options.get("outside_file_content").asText());
                Path root = base.resolve("table");
                Files.createDirectories(root);
                // full-disk: a small tmpfs at the root, before the storage is opened.
                String mountError = fullDisk ? mountTmpfs(root, options.get("full_disk_bytes").asLong()) : null;
                boolean mounted = fullDisk && mountError == null;
                return new Table(
                    () -> {
                      try {
                        return new DirectoryStorage(root, max);
                      } catch (BackendException e) {
                        throw new IllegalStateException(e);
                      }
                    },
                    root,
                    mountError == null ? null : "cannot mount a tmpfs (" + mountError + ")",
                    () -> {
                      String why = mounted ? unmount(root) : null;
                      // Never remove through a mount that is still attached.
                      if (why == null) {
                        removeTree(base);
                      }
                      return why;
                    });
              } catch (IOException e) {
                throw new IllegalStateException(e);
              }
            }));
  }

  /**
   * {@link S3Storage} on moto ({@link Moto}): the cases with the key rules only (no bound, no file
   * system), each on a fresh table of the shared bucket; every handle a case opened is closed
   * after it.
   */
  @Test
  void s3StoragePassesTheSuite() throws Exception {
    Moto moto = Moto.shared();
    assertNone(
        run(
            "S3Storage",
            List.of("key-rules"),
            (caseName, requires) -> {
              String url = moto.freshUrl("conformance-" + caseName);
              List<S3Storage> opened = java.util.Collections.synchronizedList(new ArrayList<>());
              return new Table(
                  () -> {
                    S3Storage st = moto.open(url);
                    opened.add(st);
                    return st;
                  },
                  null,
                  null,
                  () -> {
                    opened.forEach(S3Storage::close);
                    return null;
                  });
            }));
  }

  @Test
  void memoryStoragePassesTheSuite() throws Exception {
    assertNone(
        run(
            "MemoryStorage",
            List.of("key-rules"),
            (caseName, requires) -> {
              MemoryStorage m = new MemoryStorage();
              return new Table(() -> m, null);
            }));
  }
}
