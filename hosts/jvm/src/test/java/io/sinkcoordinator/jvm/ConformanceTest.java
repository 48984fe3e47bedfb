package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every trace of tests/conformance and tests/regressions through its resolved call script on
 * Chicory (the build-time compiled module): the rendered result document must equal the expected
 * one byte for byte (the sibling {@code .result.json}, masked only where it holds the placeholders
 * of tests/conformance/README.md, as hosts/compare.sh does; else {@code sinkcoord replay
 * --native}), and the checkpoint state bytes must equal the native core's. Malformed traces
 * ({@code sinkcoord script} exits 2) must be rejected by the native core too.
 *
 * <p>Needs the CLI: {@code -Dsinkcoord=BIN} (default {@code target/release/sinkcoord} of the
 * checkout; {@code make jvm-test} builds it first).
 */
class ConformanceTest {
  private static final Path REPO = Path.of(System.getProperty("repo.root", "../..")).toAbsolutePath().normalize();
  private static final String SINKCOORD =
      System.getProperty("sinkcoord", REPO.resolve("target/release/sinkcoord").toString());
  /** Every trace on the compiled module; every STRIDE-th also on the interpreter and the runtime compiler. */
  private static final int STRIDE = Integer.getInteger("jvm.conformance.stride", 10);
  private static CoordinatorRuntime runtime;
  private static CoordinatorRuntime interpreter;
  private static CoordinatorRuntime runtimeCompiled;
  private static int passed;
  private static int total;
  private static int traces;

  @TempDir static Path tmp;

  @BeforeAll
  static void load() {
    runtime = CoordinatorRuntime.bundled();
    interpreter = CoordinatorRuntime.bundled(CoordinatorRuntime.Mode.INTERPRETER);
    runtimeCompiled = CoordinatorRuntime.bundled(CoordinatorRuntime.Mode.RUNTIME_COMPILED);
  }

  @AfterAll
  static void summary() {
    System.out.println(
        "ConformanceTest: " + passed + " of " + total + " runs identical (" + traces
            + " traces on the compiled module, every " + STRIDE
            + "th also on the interpreter and the runtime compiler)");
  }

  private record Run(int code, String out, String err) {}

  private static Run run(String... cmd) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(cmd)
            .redirectOutput(ProcessBuilder.Redirect.PIPE)
            .redirectError(ProcessBuilder.Redirect.PIPE)
            .start();
    // Read both streams fully (the result documents are small; stderr too).
    var out = p.getInputStream().readAllBytes();
    var err = p.getErrorStream().readAllBytes();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail("timeout: " + String.join(" ", cmd));
    }
    return new Run(
        p.exitValue(),
        new String(out, StandardCharsets.UTF_8),
        new String(err, StandardCharsets.UTF_8));
  }

  static final String MESSAGE = "\"message\": \"(\\\\.|[^\"\\\\])*\"";
  static final String STATE_BYTES = "\"state_bytes\": [0-9]+";

  private static String mask(String s) {
    return s.replaceAll(MESSAGE, "\"message\": \"...\"").replaceAll(STATE_BYTES, "\"state_bytes\": 0");
  }

  /** compare.sh's same_result: byte for byte, or masked where the expected file has placeholders. */
  static boolean sameResult(String expected, String actual) {
    if (expected.equals(actual)) {
      return true;
    }
    if (expected.contains("\"message\": \"...\"")
        || expected.matches("(?s).*\"state_bytes\": 0[,}].*")) {
      return mask(expected).equals(mask(actual));
    }
    return false;
  }

  private static List<Path> traces() throws IOException {
    List<Path> out = new ArrayList<>();
    for (String dir : List.of("tests/conformance", "tests/regressions")) {
      try (Stream<Path> s = Files.walk(REPO.resolve(dir))) {
        s.filter(p -> p.getFileName().toString().endsWith(".trace.json")).sorted().forEach(out::add);
      }
    }
    return out;
  }

  @TestFactory
  Stream<DynamicTest> everyTrace() throws IOException {
    assertTrue(
        Files.isExecutable(Path.of(SINKCOORD)),
        "no sinkcoord CLI at " + SINKCOORD + " (make build, or -Dsinkcoord=BIN)");
    List<Path> traces = traces();
    assertTrue(traces.size() > 200, "expected the conformance traces, found " + traces.size());
    ConformanceTest.traces = traces.size();
    List<DynamicTest> tests = new ArrayList<>();
    for (int i = 0; i < traces.size(); i++) {
      Path t = traces.get(i);
      String label = REPO.relativize(t).toString();
      tests.add(DynamicTest.dynamicTest(label, () -> check(t, runtime)));
      if (STRIDE > 0 && i % STRIDE == 0) {
        tests.add(DynamicTest.dynamicTest(label + " [interpreter]", () -> check(t, interpreter)));
        tests.add(
            DynamicTest.dynamicTest(
                label + " [runtime-compiled]", () -> check(t, runtimeCompiled)));
      }
    }
    return tests.stream();
  }

  private static void check(Path trace, CoordinatorRuntime runtime) throws Exception {
    total++;
    String name =
        trace.getFileName().toString().replace(".trace.json", "") + "." + runtime.mode();
    Path script = tmp.resolve(name + ".script");
    Run s = run(SINKCOORD, "script", trace.toString());
    Path expectedFile = trace.resolveSibling(name + ".result.json");
    Run nativeRun =
        run(
            SINKCOORD,
            "replay",
            "--native",
            "--states",
            tmp.resolve(name + ".native.states").toString(),
            trace.toString());
    if (s.code() == 2) {
      // A malformed trace: the native replay must refuse it too, and there is no expected file.
      assertEquals(2, nativeRun.code(), "sinkcoord script exits 2, replay --native does not");
      assertTrue(!Files.exists(expectedFile), "a malformed trace with a result file");
      passed++;
      return;
    }
    assertEquals(0, s.code(), "sinkcoord script: " + s.err());
    Files.writeString(script, s.out());
    Path raw = tmp.resolve(name + ".jvm.raw");
    List<String> lines;
    try {
      lines = ScriptRunner.run(script, runtime);
    } catch (ScriptRunner.Failure e) {
      fail("the JVM host stopped: " + e.getMessage());
      return;
    }
    Files.writeString(raw, String.join("", lines));
    Path states = tmp.resolve(name + ".jvm.states");
    Run render =
        run(SINKCOORD, "script", "--render", raw.toString(), "--states", states.toString(), trace.toString());
    assertEquals(0, render.code(), "sinkcoord script --render: " + render.err());
    String expected = Files.exists(expectedFile) ? Files.readString(expectedFile) : nativeRun.out();
    if (!sameResult(expected, render.out())) {
      fail("result differs from " + (Files.exists(expectedFile) ? expectedFile.getFileName() : "replay --native")
          + ":\n--- expected\n" + expected + "\n--- jvm\n" + render.out());
    }
    // Never masked: the native core's document and state bytes, byte for byte.
    if (nativeRun.code() == 0) {
      assertEquals(nativeRun.out(), render.out(), "result differs from replay --native");
      assertEquals(
          Files.readString(tmp.resolve(name + ".native.states")),
          Files.readString(states),
          "checkpoint state bytes differ from the native core's");
    }
    passed++;
  }
}
