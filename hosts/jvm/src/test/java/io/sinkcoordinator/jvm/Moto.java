package io.sinkcoordinator.jvm;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A local S3 API server for the tests, as the Rust tests start it (testkit/src/moto.rs): the
 * Python of {@code SINKCOORD_MOTO_PYTHON}, else {@code target/moto-venv/bin/python} of the
 * repository ({@code make moto-setup}), runs {@code tests/s3/moto_server.py} on a free loopback
 * port with the bucket {@link #BUCKET}. One server for every test class of the run, started on
 * first use; a test that needs it fails with the reason when it cannot start (S3 tests never skip
 * silently). Public, and in the module's test jar, for the Flink connector's S3 tests.
 */
public final class Moto {
  public static final String BUCKET = "sinkcoord-test";

  private static final AtomicLong TABLES = new AtomicLong();

  private static Moto shared;
  private static String failure;

  private final Process process;
  private final String endpoint;

  private Moto(Process process, String endpoint) {
    this.process = process;
    this.endpoint = endpoint;
  }

  /** The run's server, started on first use; an AssertionError with the reason if it cannot be. */
  public static synchronized Moto shared() {
    if (shared == null && failure == null) {
      try {
        shared = start();
        Moto started = shared;
        Runtime.getRuntime().addShutdownHook(new Thread(started::stop));
      } catch (IOException | RuntimeException e) {
        failure = e.getMessage();
      }
    }
    if (shared == null) {
      throw new AssertionError("the moto S3 server did not start: " + failure);
    }
    return shared;
  }

  private static Moto start() throws IOException {
    Path root = Path.of(System.getProperty("repo.root", "../.."));
    String override = System.getenv("SINKCOORD_MOTO_PYTHON");
    Path python =
        override != null && !override.isEmpty() ? Path.of(override) : root.resolve("target/moto-venv/bin/python");
    if (!Files.exists(python)) {
      throw new IllegalStateException(
          "moto is not installed (" + python + " is missing): run `make moto-setup` (tests/s3/setup.sh), "
              + "or point SINKCOORD_MOTO_PYTHON at a Python with moto[server]");
    }
    Process p =
        new ProcessBuilder(python.toString(), root.resolve("tests/s3/moto_server.py").toString(), BUCKET)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    // Its stdin stays open: the server stops when it closes (stop(), or this JVM's exit).
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line;
    try {
      // Read on another thread, so that a server that hangs while starting fails the test.
      line = CompletableFuture.supplyAsync(() -> readLine(out)).get(120, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      p.destroyForcibly();
      throw new IllegalStateException("no endpoint within 120 s (see its stderr above)");
    } catch (InterruptedException | ExecutionException e) {
      p.destroyForcibly();
      throw new IllegalStateException("reading its output: " + e);
    }
    if (line == null || !line.startsWith("endpoint ")) {
      p.destroyForcibly();
      throw new IllegalStateException("unexpected output " + line + " (see its stderr above)");
    }
    return new Moto(p, line.substring("endpoint ".length()).strip());
  }

  private static String readLine(BufferedReader r) {
    try {
      return r.readLine();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private void stop() {
    try {
      process.getOutputStream().close();
    } catch (IOException e) {
      // destroyed below anyway
    }
    process.destroy();
  }

  /** {@code http://127.0.0.1:PORT}. */
  public String endpoint() {
    return endpoint;
  }

  /** The options that reach this server (moto takes any credentials). */
  public Map<String, String> options() {
    return Map.of(
        "aws_endpoint", endpoint,
        "aws_allow_http", "true",
        "aws_region", "us-east-1",
        "aws_access_key_id", "testing",
        "aws_secret_access_key", "testing");
  }

  /**
   * The environment that makes a process ({@code sinkcoord}) reach this server: each option as
   * its {@code AWS_*} variable ({@code aws_endpoint} is {@code AWS_ENDPOINT}), which is how
   * object_store and S3Storage read the environment.
   */
  public Map<String, String> env() {
    Map<String, String> env = new java.util.HashMap<>();
    options().forEach((k, v) -> env.put(k.toUpperCase(java.util.Locale.ROOT), v));
    return env;
  }

  /** A table URL no other table of this run uses: {@code s3://sinkcoord-test/<name>-<pid>-<n>}. */
  public String freshUrl(String name) {
    return "s3://" + BUCKET + "/" + name + "-" + ProcessHandle.current().pid() + "-" + TABLES.getAndIncrement();
  }

  /** The table at {@code url} on this server (the process's own environment is not read). */
  public S3Storage open(String url) {
    return S3Storage.open(url, options(), Map.of());
  }
}
