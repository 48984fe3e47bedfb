package io.sinkcoordinator.flink.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link JniJobBenchmark} and io.sinkcoordinator.flink.CoordinatorCycleBenchmark (JMH) and
 * prints BENCHMARKS.md rows: the Flink connector's component API on the JNI library (and on
 * Chicory beside it) ÷ Rust-wasmtime (criterion's medians of the same workloads in {@code
 * target/criterion}, written by {@code make bench}'s criterion step; without them the rows give
 * the JVM's absolute figures only), and what a Flink checkpoint cycle costs the JobManager.
 *
 * <pre>
 *   java -cp ... io.sinkcoordinator.flink.bench.BenchTable REPO [--quick]
 * </pre>
 *
 * {@code --quick}: 2 short warm-up and 3 measurement iterations (a smoke run; noisier).
 */
public final class BenchTable {
    private static final String[] RUNTIMES = {"JNI", "CHICORY"};

    /**
     * The median's point estimate in criterion's estimates.json (this module has no JSON library
     * on its test classpath; the object before it, the confidence interval, has no such field).
     */
    private static final Pattern MEDIAN =
            Pattern.compile("\"median\"\\s*:\\s*\\{.*?\"point_estimate\"\\s*:\\s*([-0-9.eE+]+)", Pattern.DOTALL);

    private BenchTable() {}

    private static Double criterionNs(Path repo, String id) {
        Path f = repo.resolve("target/criterion").resolve(id).resolve("new/estimates.json");
        try {
            Matcher m = MEDIAN.matcher(Files.readString(f));
            return m.find() ? Double.valueOf(m.group(1)) : null;
        } catch (Exception e) {
            return null;
        }
    }

    private static String us(double ns) {
        return String.format(Locale.ROOT, ns >= 10_000 ? "%.1f µs" : "%.2f µs", ns / 1000);
    }

    private static String ratio(double jvm, Double rust) {
        return rust == null ? "" : String.format(Locale.ROOT, "%.2f× ", jvm / rust);
    }

    private static String label(String runtime) {
        return runtime.equals("JNI") ? "JNI" : "Chicory (compiled)";
    }

    /** One runtime's cell part: its ratio to Rust-wasmtime's {@code rust} ns, then both sides. */
    private static String versus(String runtime, double ns, Double rust, String measured) {
        return label(runtime) + " " + ratio(ns, rust) + "(" + measured
                + (rust == null ? "" : " vs " + us(rust)) + ")";
    }

    public static void main(String[] args) throws Exception {
        Path repo = Path.of(args.length > 0 ? args[0] : "../..").toAbsolutePath().normalize();
        boolean quick = args.length > 1 && args[1].equals("--quick");
        ChainedOptionsBuilder opts =
                new OptionsBuilder()
                        .include(JniJobBenchmark.class.getName() + ".*")
                        .include("io.sinkcoordinator.flink.CoordinatorCycleBenchmark.*")
                        .resultFormat(ResultFormatType.JSON)
                        .result(repo.resolve("hosts/flink/target/jmh-result.json").toString());
        if (quick) {
            opts =
                    opts.warmupIterations(2)
                            .warmupTime(TimeValue.seconds(1))
                            .measurementIterations(3)
                            .measurementTime(TimeValue.seconds(1));
        }
        Collection<RunResult> results = new Runner(opts.build()).run();
        // "JniJobBenchmark.cycle/JNI" -> µs per op; "...CoordinatorCycleBenchmark.cycle/JNI/loopCpuNs"
        // -> the secondary figure per cycle, in ns
        Map<String, Double> us = new HashMap<>();
        for (RunResult r : results) {
            String bench = r.getParams().getBenchmark();
            String cls = bench.substring(0, bench.lastIndexOf('.'));
            String key = cls.substring(cls.lastIndexOf('.') + 1) + bench.substring(bench.lastIndexOf('.'))
                    + "/" + r.getParams().getParam("runtime");
            us.put(key, r.getPrimaryResult().getScore());
            var aux = r.getSecondaryResults(); // JMH declares it with the raw Result type
            var cycles = aux.get("cycles");
            for (String counter : new String[] {"loopCpuNs", "callbackNs"}) {
                if (cycles != null && aux.get(counter) != null && cycles.getScore() > 0) {
                    us.put(key + "/" + counter, aux.get(counter).getScore() / cycles.getScore());
                }
            }
        }
        Double rustCycle = criterionNs(repo, "job_p256/component");
        Double rustBatch = criterionNs(repo, "events_batch_p256/component");
        // the same cycle over a directory table on tmpfs: the storage these benchmarks have
        Double rustCycleTmpfs = criterionNs(repo, "job_p256_tmpfs/component");
        int p = JniJobBenchmark.WRITERS;
        List<String> event = new ArrayList<>();
        List<String> cycle = new ArrayList<>();
        List<String> flink = new ArrayList<>();
        for (String rt : RUNTIMES) {
            Double batch = us.get("JniJobBenchmark.eventsBatch/" + rt);
            Double cyc = us.get("JniJobBenchmark.cycle/" + rt);
            Double wall = us.get("CoordinatorCycleBenchmark.cycle/" + rt);
            Double loopCpu = us.get("CoordinatorCycleBenchmark.cycle/" + rt + "/loopCpuNs");
            Double callbacks = us.get("CoordinatorCycleBenchmark.cycle/" + rt + "/callbackNs");
            if (batch != null) {
                double ns = batch * 1000;
                event.add(versus(rt, ns, rustBatch,
                        us(ns / p) + " per event, " + us(ns) + " per batch of " + p));
            }
            if (cyc != null) {
                cycle.add(versus(rt, cyc * 1000, rustCycle, us(cyc * 1000) + " on tmpfs")
                        + (rustCycleTmpfs == null ? "" : ", " + ratio(cyc * 1000, rustCycleTmpfs)
                                + "Rust-wasmtime on the same tmpfs table (" + us(rustCycleTmpfs) + ")"));
            }
            if (wall != null && loopCpu != null && callbacks != null) {
                flink.add(label(rt) + ": " + us(loopCpu) + " loop-thread CPU"
                        + (rustCycle == null ? "" : " (" + ratio(loopCpu, rustCycle).trim()
                                + " Rust-wasmtime's cycle)")
                        + ", " + us(callbacks) + " in the callbacks on the calling thread, "
                        + us(wall * 1000) + " wall until the completion is processed");
            }
        }
        String missing = rustCycle == null || rustBatch == null
                ? " (no criterion estimate for Rust-wasmtime in target/criterion: run `make bench`)"
                : "";
        System.out.println();
        System.out.println("Flink connector's component API (hosts/flink), JNI library and Chicory, Java "
                + System.getProperty("java.version") + missing + ":");
        System.out.println();
        System.out.println("| what | now | goal |");
        System.out.println("|---|---|---|");
        System.out.println("| JNI per batched event, P = 256, 4 × 200 B, one `events-packed` batch"
                + " — ÷ Rust-wasmtime | " + String.join("; ", event) + " | JNI ≤ 1.5× (Chicory compiled ≤ 5×) |");
        System.out.println("| JNI per checkpoint cycle, P = 256 (batch, state, completion), the table on"
                + " tmpfs — ÷ Rust-wasmtime in memory, and on the same tmpfs table | " + String.join("; ", cycle) + " | JNI ≤ 1.5× (Chicory compiled ≤ 5×) |");
        System.out.println("| Flink checkpoint cycle at P = 256 on the JobManager: SinkCoordinator, 256"
                + " `handleEventFromOperator` + `checkpointCoordinator` + `notifyCheckpointComplete`"
                + " (fake context and gateways) | " + String.join("; ", flink) + " | — (issue 24 asks the cost) |");
    }
}
