package io.sinkcoordinator.jvm.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link JobBenchmark} (JMH) and prints BENCHMARKS.md rows: the JVM binding on Chicory, build-
 * time compiled and interpreted, ÷ Rust-wasmtime (criterion's medians of the same workloads in
 * {@code target/criterion}, written by {@code make bench}'s criterion step; without them the rows
 * give the JVM's absolute figures only).
 *
 * <pre>
 *   java -cp ... io.sinkcoordinator.jvm.bench.BenchTable REPO [--quick]
 * </pre>
 *
 * {@code --quick}: 2 short warm-up and 3 measurement iterations (a smoke run; noisier).
 */
public final class BenchTable {
  private BenchTable() {}

  private static Double criterionNs(Path repo, String id) {
    Path f = repo.resolve("target/criterion").resolve(id).resolve("new/estimates.json");
    try {
      JsonNode v = new ObjectMapper().readTree(Files.readString(f));
      return v.get("median").get("point_estimate").asDouble();
    } catch (Exception e) {
      return null;
    }
  }

  private static String us(double ns) {
    return String.format(Locale.ROOT, ns >= 10_000 ? "%.1f µs" : "%.2f µs", ns / 1000);
  }

  private static String ratio(double jvm, Double rust) {
    return rust == null ? "" : String.format(Locale.ROOT, "%.1f× ", jvm / rust);
  }

  public static void main(String[] args) throws Exception {
    Path repo = Path.of(args.length > 0 ? args[0] : "../..").toAbsolutePath().normalize();
    boolean quick = args.length > 1 && args[1].equals("--quick");
    ChainedOptionsBuilder opts =
        new OptionsBuilder()
            .include(JobBenchmark.class.getName() + ".*")
            .resultFormat(ResultFormatType.JSON)
            .result(repo.resolve("hosts/jvm/target/jmh-result.json").toString());
    if (quick) {
      opts =
          opts.warmupIterations(2)
              .warmupTime(TimeValue.seconds(1))
              .measurementIterations(3)
              .measurementTime(TimeValue.seconds(1));
    }
    Collection<RunResult> results = new Runner(opts.build()).run();
    Map<String, Double> us = new HashMap<>(); // "cycle/COMPILED" -> µs per op
    for (RunResult r : results) {
      String bench = r.getParams().getBenchmark();
      String name = bench.substring(bench.lastIndexOf('.') + 1);
      us.put(name + "/" + r.getParams().getParam("mode"), r.getPrimaryResult().getScore());
    }
    Double rustCycle = criterionNs(repo, "job_p256/component");
    Double rustBatch = criterionNs(repo, "events_batch_p256/component");
    int p = JobBenchmark.WRITERS;
    StringBuilder event = new StringBuilder();
    StringBuilder cycle = new StringBuilder();
    for (String mode : new String[] {"COMPILED", "INTERPRETER"}) {
      String label = mode.equals("COMPILED") ? "compiled" : "interpreter";
      Double batch = us.get("eventsBatch/" + mode);
      Double cyc = us.get("cycle/" + mode);
      if (batch != null) {
        double ns = batch * 1000;
        event.append(event.length() > 0 ? "; " : "")
            .append(label).append(' ').append(ratio(ns, rustBatch))
            .append('(').append(us(ns / p)).append(" per event, ").append(us(ns))
            .append(" per batch of ").append(p)
            .append(rustBatch == null ? "" : " vs " + us(rustBatch)).append(')');
      }
      if (cyc != null) {
        double ns = cyc * 1000;
        cycle.append(cycle.length() > 0 ? "; " : "")
            .append(label).append(' ').append(ratio(ns, rustCycle))
            .append('(').append(us(ns))
            .append(rustCycle == null ? "" : " vs " + us(rustCycle)).append(')');
      }
    }
    String missing = rustCycle == null || rustBatch == null
        ? " (no criterion estimate for Rust-wasmtime in target/criterion: run `make bench`)"
        : "";
    System.out.println();
    System.out.println("JVM binding on Chicory " + chicoryVersion() + ", Java "
        + System.getProperty("java.version") + missing + ":");
    System.out.println();
    System.out.println("| what | now | goal |");
    System.out.println("|---|---|---|");
    System.out.println("| JVM (Chicory) per batched event, P = 256, 4 × 200 B, one `events-packed` batch"
        + " — ÷ Rust-wasmtime | " + event + " | compiled ≤ 5× |");
    System.out.println("| JVM (Chicory) per checkpoint cycle, P = 256 (batch, state, completion)"
        + " — ÷ Rust-wasmtime | " + cycle + " | compiled ≤ 5× |");
  }

  private static String chicoryVersion() {
    Package pkg = com.dylibso.chicory.runtime.Instance.class.getPackage();
    String v = pkg == null ? null : pkg.getImplementationVersion();
    return v == null ? "1.7.5" : v;
  }
}
