package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link S3Storage}: its settings (no server needed), its calls on moto ({@link Moto}; the shared
 * conformance cases run in {@link StorageConformanceTest}), its retry policy against a stub
 * server, and a table that the JVM and the {@code sinkcoord} CLI ({@code -Dsinkcoord=BIN}) both
 * read and write.
 */
class S3StorageTest {
  private static final byte[] V1 = "v1".getBytes(StandardCharsets.UTF_8);

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  // --- settings

  private static String refused(String url, Map<String, String> options, Map<String, String> env) {
    return assertThrows(IllegalArgumentException.class, () -> S3Storage.open(url, options, env).close())
        .getMessage();
  }

  @Test
  void refusesBadUrlsNamingThem() {
    for (String url : List.of("s3:/nobucket", "gs://bucket/t", "/tmp/table", "s3://", "s3://b/a//b",
        "s3://b/a/../b", "s3://b/x%00y", "s3://b:9000/t", "s3://b/t?x=1", "not a url")) {
      String why = refused(url, Map.of(), Map.of());
      assertTrue(why.contains(url), url + ": " + why);
    }
    assertTrue(refused("gs://bucket/t", Map.of(), Map.of()).contains("s3://bucket/prefix"));
    assertTrue(refused("s3://b/a//b", Map.of(), Map.of()).contains("empty segment"));
  }

  @Test
  void refusesBadOptionsNamingThem() {
    String why = refused("s3://b/t", Map.of("aws_endpoint_typo", "x"), Map.of());
    assertTrue(why.contains("unknown option \"aws_endpoint_typo\"") && why.contains("aws_endpoint,"), why);
    why = refused("s3://b/t", Map.of("aws_allow_http", "maybe"), Map.of());
    assertTrue(why.contains("option \"aws_allow_http\" is \"maybe\", not a boolean"), why);
    why = refused("s3://b/t", Map.of("aws_endpoint", "ftp://host"), Map.of());
    assertTrue(why.contains("option \"aws_endpoint\" \"ftp://host\" is not an http:// or https:// URL"), why);
    why = refused("s3://b/t", Map.of("aws_access_key_id", "k"), Map.of());
    assertTrue(why.contains("an access key id without a secret access key"), why);
    // A bad variable is named too; unrelated AWS_* variables are ignored (as object_store).
    why = refused("s3://b/t", Map.of(), Map.of("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "sometimes", "AWS_PROFILE", "x"));
    assertTrue(why.contains("environment variable AWS_VIRTUAL_HOSTED_STYLE_REQUEST"), why);
  }

  @Test
  void refusesPlainHttpWithoutAllowHttp() {
    String why = refused("s3://b/t", Map.of("aws_endpoint", "http://127.0.0.1:9"), Map.of());
    assertTrue(why.contains("plain HTTP") && why.contains("aws_allow_http"), why);
    why = refused("s3://b/t", Map.of(), Map.of("AWS_ENDPOINT_URL", "http://127.0.0.1:9"));
    assertTrue(why.contains("environment variable AWS_ENDPOINT_URL") && why.contains("aws_allow_http"), why);
    // Allowed by the environment or an option; an option overrides the environment.
    S3Storage.open("s3://b/t", Map.of("aws_endpoint", "http://127.0.0.1:9"), Map.of("AWS_ALLOW_HTTP", "true")).close();
    why = refused("s3://b/t", Map.of("allow_http", "false"),
        Map.of("AWS_ENDPOINT", "http://127.0.0.1:9", "AWS_ALLOW_HTTP", "true"));
    assertTrue(why.contains("plain HTTP"), why);
  }

  @Test
  void readsTheEnvironmentThenTheOptions() {
    Map<String, String> env = Map.of(
        "AWS_ENDPOINT", "https://a.example", "AWS_ENDPOINT_URL", "https://b.example",
        "AWS_DEFAULT_REGION", "eu-west-1", "AWS_ACCESS_KEY_ID", "k", "AWS_SECRET_ACCESS_KEY", "s");
    S3Settings s = S3Settings.parse("s3a://bucket/tables/t1/", Map.of(), env);
    assertEquals("bucket", s.bucket());
    assertEquals("tables/t1", s.prefix());
    assertEquals("https://b.example", s.endpoint().toString());
    assertEquals("eu-west-1", s.region());
    assertTrue(s.hasStaticCredentials());
    assertFalse(s.virtualHostedStyle());
    s = S3Settings.parse("s3://bucket", Map.of("region", "ap-south-1", "endpoint_url", "https://c.example",
        "aws_virtual_hosted_style_request", "true"), env);
    assertEquals("", s.prefix());
    assertEquals("ap-south-1", s.region());
    assertEquals("https://c.example", s.endpoint().toString());
    assertTrue(s.virtualHostedStyle());
    s = S3Settings.parse("s3://bucket/my%20table", Map.of(), Map.of());
    assertEquals("my table", s.prefix());
    assertEquals(S3Settings.DEFAULT_REGION, s.region());
    assertNull(s.endpoint());
    assertFalse(s.hasStaticCredentials());
    assertFalse(s.toString().contains("\"s\""));
  }

  // --- on moto

  @Test
  void createsOnceOverwritesDeletesAndLists() throws Exception {
    Moto moto = Moto.shared();
    String url = moto.freshUrl("basics");
    try (S3Storage st = moto.open(url)) {
      assertEquals(url, st.url());
      assertNull(st.get("snapshot/1"));
      assertTrue(st.putIfAbsent("snapshot/1", V1));
      assertFalse(st.putIfAbsent("snapshot/1", utf8("v2")));
      assertArrayEquals(V1, st.get("snapshot/1"));
      st.put("hint/latest", utf8("1"));
      st.put("hint/latest", utf8("22"));
      assertArrayEquals(utf8("22"), st.get("hint/latest"));
      assertEquals(List.of("hint/latest", "snapshot/1"), st.list(""));
      assertEquals(List.of("snapshot/1"), st.list("snap"));
      st.delete("hint/latest");
      st.delete("hint/latest");
      st.delete("never/there");
      assertEquals(List.of("snapshot/1"), st.list(""));
      // The same table, configured from the AWS_* variables alone.
      try (S3Storage viaEnv = S3Storage.open(url, Map.of(), moto.env())) {
        assertArrayEquals(V1, viaEnv.get("snapshot/1"));
      }
      // A control character passes the common rules but not object paths (as on the Rust host).
      BackendException e = assertThrows(BackendException.class, () -> st.put("a\u0001b", V1));
      assertEquals(BackendException.Kind.INVALID_KEY, e.kind());
    }
  }

  @Test
  void prefixedTablesDoNotSeeEachOther() throws Exception {
    Moto moto = Moto.shared();
    String base = moto.freshUrl("prefixed");
    try (S3Storage a = moto.open(base + "/a");
        S3Storage ab = moto.open(base + "/ab");
        S3Storage root = moto.open(base)) {
      assertTrue(a.putIfAbsent("tag/x", utf8("a")));
      assertTrue(ab.putIfAbsent("tag/x", utf8("b")));
      assertEquals(List.of("tag/x"), a.list(""));
      assertArrayEquals(utf8("b"), ab.get("tag/x"));
      // The layout: key k of s3://bucket/p is the object p/k.
      assertEquals(List.of("a/tag/x", "ab/tag/x"), root.list(""));
      // A directory marker is not a key.
      root.put("a/dir/.keep", V1);
      assertEquals(List.of("dir/.keep", "tag/x"), a.list(""));
    }
  }

  @Test
  void eightThreadsCreateOneKeyOnce() throws Exception {
    Moto moto = Moto.shared();
    String url = moto.freshUrl("race");
    int racers = 8;
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    List<S3Storage> handles = new ArrayList<>();
    try {
      for (int round = 0; round < 5; round++) {
        String key = "snapshot/" + round;
        CyclicBarrier barrier = new CyclicBarrier(racers);
        List<Future<Boolean>> won = new ArrayList<>();
        for (int r = 0; r < racers; r++) {
          S3Storage st = moto.open(url);
          handles.add(st);
          byte[] value = utf8("racer-" + r);
          won.add(pool.submit(() -> {
            barrier.await(60, TimeUnit.SECONDS);
            return st.putIfAbsent(key, value);
          }));
        }
        List<Integer> winners = new ArrayList<>();
        for (int r = 0; r < racers; r++) {
          if (won.get(r).get(60, TimeUnit.SECONDS)) {
            winners.add(r);
          }
        }
        assertEquals(1, winners.size(), key + ": winners " + winners);
        assertArrayEquals(utf8("racer-" + winners.get(0)), handles.get(0).get(key));
      }
    } finally {
      pool.shutdownNow();
      handles.forEach(S3Storage::close);
    }
  }

  @Test
  void anUnreachableEndpointFailsNamingTheCall() {
    // Port 9 (discard) refuses on loopback: an error within the call timeout, not a hang.
    try (S3Storage st = S3Storage.open("s3://b/t", Map.of("aws_endpoint", "http://127.0.0.1:9",
        "aws_allow_http", "true", "aws_access_key_id", "k", "aws_secret_access_key", "s"), Map.of())) {
      BackendException e = assertThrows(BackendException.class, () -> st.list("snapshot/"));
      assertEquals(BackendException.Kind.IO, e.kind());
      assertTrue(e.getMessage().startsWith("cannot list \"snapshot/\" on s3://b/t: "), e.getMessage());
      e = assertThrows(BackendException.class, () -> st.putIfAbsent("snapshot/1", V1));
      assertTrue(e.getMessage().startsWith(
          "cannot create \"snapshot/1\" on s3://b/t (the change may or may not have landed): "), e.getMessage());
    }
  }

  // --- the retry policy, against a stub that answers every request with one status

  /** A loopback HTTP server answering {@code status} with an S3 error {@code code}; counts requests. */
  private record Stub(HttpServer server, AtomicInteger requests) implements AutoCloseable {
    static Stub answering(int status, String code) throws IOException {
      HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      AtomicInteger requests = new AtomicInteger();
      server.createContext("/", exchange -> {
        requests.incrementAndGet();
        exchange.getRequestBody().readAllBytes();
        byte[] body = utf8("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code
            + "</Code><Message>stub</Message></Error>");
        exchange.getResponseHeaders().add("Content-Type", "application/xml");
        exchange.sendResponseHeaders(status, body.length);
        exchange.getResponseBody().write(body);
        exchange.close();
      });
      server.start();
      return new Stub(server, requests);
    }

    S3Storage open() {
      return S3Storage.open("s3://b/t", Map.of("aws_endpoint", "http://127.0.0.1:" + server.getAddress().getPort(),
          "aws_allow_http", "true", "aws_access_key_id", "k", "aws_secret_access_key", "s"), Map.of());
    }

    @Override
    public void close() {
      server.stop(0);
    }
  }

  @Test
  void aConditionalCreateIsNeverRetried() throws Exception {
    try (Stub stub = Stub.answering(500, "InternalError"); S3Storage st = stub.open()) {
      BackendException e = assertThrows(BackendException.class, () -> st.putIfAbsent("snapshot/1", V1));
      assertTrue(e.getMessage().contains("may or may not have landed"), e.getMessage());
      assertEquals(1, stub.requests().get(), "the create was sent once");
      // The overwrite is retried (one try, three retries).
      stub.requests().set(0);
      assertThrows(BackendException.class, () -> st.put("hint/latest", V1));
      assertEquals(4, stub.requests().get(), "the overwrite's tries");
    }
  }

  @Test
  void preconditionFailedMeansExistedAndAConflictIsAmbiguous() throws Exception {
    try (Stub stub = Stub.answering(412, "PreconditionFailed"); S3Storage st = stub.open()) {
      assertFalse(st.putIfAbsent("snapshot/1", V1));
    }
    // 409: another conditional write of the key is in flight and may fail: not "existed".
    try (Stub stub = Stub.answering(409, "ConditionalRequestConflict"); S3Storage st = stub.open()) {
      BackendException e = assertThrows(BackendException.class, () -> st.putIfAbsent("snapshot/1", V1));
      assertEquals(BackendException.Kind.IO, e.kind());
      assertEquals(1, stub.requests().get());
    }
    // A missing bucket is an error, not a missing key.
    try (Stub stub = Stub.answering(404, "NoSuchBucket"); S3Storage st = stub.open()) {
      assertThrows(BackendException.class, () -> st.get("snapshot/1"));
    }
  }

  // --- one table, the JVM and the CLI

  private static final String SINKCOORD =
      System.getProperty("sinkcoord", Path.of(System.getProperty("repo.root", "../.."), "target/release/sinkcoord").toString());

  private record Run(int code, String out, String err) {}

  /** Runs the CLI with the moto environment (and no other AWS_* variable). */
  private static Run sinkcoord(Moto moto, String... args) throws Exception {
    assertTrue(Files.isExecutable(Path.of(SINKCOORD)), "no sinkcoord CLI at " + SINKCOORD + " (make build, or -Dsinkcoord=BIN)");
    List<String> cmd = new ArrayList<>(List.of(SINKCOORD));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().keySet().removeIf(k -> k.startsWith("AWS_"));
    pb.environment().putAll(moto.env());
    Process p = pb.start();
    p.getOutputStream().close();
    Future<byte[]> err = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r);
      t.setDaemon(true);
      return t;
    }).submit(() -> p.getErrorStream().readAllBytes());
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "sinkcoord " + String.join(" ", args) + " did not finish");
    return new Run(p.exitValue(), out, new String(err.get(), StandardCharsets.UTF_8));
  }

  @Test
  void theCliReadsWhatACoordinatorOnS3Committed() throws Exception {
    Moto moto = Moto.shared();
    String url = moto.freshUrl("jvm-coordinator");
    try (S3Storage storage = moto.open(url)) {
      Coordinator coordinator = new Coordinator(Config.of(2, "jvm-s3"), storage);
      coordinator.start();
      Writer[] writers = {new Writer(0), new Writer(1)};
      for (long cp = 1; cp <= 3; cp++) {
        List<WriterEvent> events = new ArrayList<>();
        for (int w = 0; w < writers.length; w++) {
          Entry e = writers[w].report(cp, List.of(utf8("file-" + w + "-" + cp)), OptionalLong.empty(), false);
          events.add(new WriterEvent(w, 0, e));
        }
        coordinator.events(events);
        coordinator.checkpoint(cp);
        Outcome outcome = coordinator.checkpointComplete(cp);
        assertEquals(List.of(cp), outcome.committed());
      }
      assertEquals(3, new Table(storage).listSnapshots().size());
    }
    Run inspect = sinkcoord(moto, "inspect", "--json", url);
    assertEquals(0, inspect.code(), inspect.out() + inspect.err());
    JsonNode doc = new ObjectMapper().readTree(inspect.out());
    List<Long> identifiers = new ArrayList<>();
    doc.get("snapshots").forEach(s -> {
      assertEquals("jvm-s3", s.get("commit_user").asText());
      identifiers.add(s.get("identifier").asLong());
    });
    assertEquals(List.of(1L, 2L, 3L), identifiers, inspect.out());
    assertEquals("file-1-2", doc.get("snapshots").get(1).get("committables").get(1).get(1).asText(), inspect.out());
  }

  @Test
  void aTableTheCliWroteReadsBack() throws Exception {
    Moto moto = Moto.shared();
    String url = moto.freshUrl("cli-simulate");
    Run sim = sinkcoord(moto, "simulate", "--table", url, "--writers", "2", "--checkpoints", "4", "--seed", "5",
        "--faults", "none", "--quiet");
    assertEquals(0, sim.code(), sim.out() + sim.err());
    Run inspect = sinkcoord(moto, "inspect", "--json", url);
    assertEquals(0, inspect.code(), inspect.out() + inspect.err());
    Map<Long, String> users = new HashMap<>();
    new ObjectMapper().readTree(inspect.out()).get("snapshots")
        .forEach(s -> users.put(s.get("id").asLong(), s.get("commit_user").asText()));
    assertTrue(users.size() > 0, inspect.out());
    try (S3Storage storage = moto.open(url)) {
      List<Snapshot> snapshots = new Table(storage).listSnapshots();
      assertEquals(users.size(), snapshots.size());
      for (Snapshot s : snapshots) {
        assertEquals(users.get(s.id()), s.commitUser(), "snapshot " + s.id());
      }
    }
  }
}
