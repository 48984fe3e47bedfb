package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.TestSupport.check;

import io.sinkcoordinator.flink.component.CoordinatorConfig;
import io.sinkcoordinator.flink.component.Snapshot;
import io.sinkcoordinator.flink.component.Tag;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The end-to-end scenarios on an Apache Paimon table ({@code db.events} of a warehouse in a
 * temporary directory): each record {@code v} of {@code 0 .. n-1} is the row {@code (id = v, name
 * = "n<v>")}, the name null for every 7th. After each job, the table is read by the connector's TableReader (every id exactly
 * once, one END snapshot last) and by pypaimon ({@code tests/paimon/read_table.py
 * --expect-ids n}), Paimon's own Python reader, which must find every id exactly once too.
 */
final class PaimonTests {
    private PaimonTests() {}

    static final PaimonSchema SCHEMA = PaimonSchema.parse("id BIGINT NOT NULL, name STRING");

    /** A record's row: its id and a name, sometimes null (the nullable column's union). */
    static final PaimonRows<Long> ROWS = v -> new Object[] {v, v % 7 == 0 ? null : "n" + v};

    /** The table {@code db.events} of a warehouse. */
    static Path table(Path warehouse) {
        return warehouse.resolve("db.db").resolve("events");
    }

    static SinkOptions options(Path warehouse) {
        return SinkOptions.of(table(warehouse).toString(), EndToEndTests.user(warehouse))
                .withPaimon(SCHEMA);
    }

    /**
     * EndToEndTests.runExactlyOnce on the warehouse's table (TableReader: every id exactly once,
     * one END snapshot last), then the data files' names and pypaimon's read of the table.
     */
    static void runExactlyOnce(
            StreamExecutionEnvironment env,
            String job,
            Path warehouse,
            long n,
            SinkOptions options,
            MapFunction<Long, Long> chaos,
            int... recordsPerMs)
            throws Exception {
        Path table = table(warehouse);
        EndToEndTests.runExactlyOnce(env, job, table, n, options, chaos, recordsPerMs);
        try (java.util.stream.Stream<Path> files = Files.list(table.resolve(PaimonFiles.BUCKET))) {
            check(files.allMatch(
                            f -> f.getFileName().toString().matches("data-[0-9a-f-]{36}-0\\.avro")),
                    "data files named as Paimon names them");
        }
        pypaimon(warehouse, n);
        otherReaders(warehouse, n);
    }

    /**
     * Task failures (region failovers) and expired checkpoints (global failovers: the job
     * restarts from its last checkpoint), as EndToEndTests.randomFailures, on a Paimon table.
     */
    static void failures() throws Exception {
        TestSupport.withTempDir("paimon-failures", warehouse -> {
            long n = 60_000;
            Chaos.budget(4, 2);
            StreamExecutionEnvironment env = Chaos.env(4, 100);
            runExactlyOnce(env, "paimon-failures", warehouse, n, options(warehouse),
                    new Chaos(1.0 / 2000, 1.0, -1, 0, 7_000), 15);
            EndToEndTests.checkFailovers(EndToEndTests.user(warehouse));
        });
    }

    /**
     * The storage fault drill of EndToEndTests.storageFaults on a Paimon table: a commit writes
     * five files (a manifest, two manifest lists, the snapshot, {@code LATEST}), so the drill
     * fails every 7th write (every 3rd would fail every attempt of every commit), half of them
     * after the write landed; the first instance loses its storage after 12 writes, its repeats
     * run out and the job fails over; the next instance's recovery commits what the failed
     * commit could not.
     */
    static void storageFaults() throws Exception {
        TestSupport.withTempDir("paimon-storage-faults", warehouse -> {
            long n = 30_000;
            StreamExecutionEnvironment env = TestSupport.env(2, 10, new Configuration());
            env.enableCheckpointing(100);
            SinkOptions options = options(warehouse).withStorageFaultDrill(7, 12);
            runExactlyOnce(env, "paimon-storage-faults", warehouse, n, options, null, 10);
            EndToEndTests.checkStorageDrill(EndToEndTests.user(warehouse));
        });
    }

    /**
     * Stop-with-savepoint (tagged {@code savepoint-<id>}), then the job resumed from the
     * savepoint to the end: pypaimon reads the tag's rows as TableReader counts them up to the
     * tagged snapshot, and every id exactly once at the end.
     */
    static void stopWithSavepoint() throws Exception {
        TestSupport.withTempDir("paimon-savepoint", warehouse -> TestSupport.withTempDir(
                "paimon-savepoints", savepoints -> {
            long n = 60_000;
            Path table = table(warehouse);
            SinkOptions options = options(warehouse).withConfig(
                    CoordinatorConfig.of(EndToEndTests.user(warehouse)).withSavepointAutoTag(true));
            StreamExecutionEnvironment env = TestSupport.env(2, 0, new Configuration());
            env.enableCheckpointing(100);
            EndToEndTests.pipeline(env, n, options, null, 4);
            String savepoint = EndToEndTests.stopAfterTwoSnapshots(
                    env, "paimon-savepoint-first-half", table, savepoints);
            Tag tag;
            long tagged = 0;
            try (TableReader reader = TableReader.open(table.toString())) {
                tag = EndToEndTests.savepointTag(reader);
                for (Snapshot s : reader.snapshots()) {
                    if (s.id() <= tag.snapshotId()) {
                        tagged += reader.rows(s).size();
                    }
                }
            }
            String line = "  tag " + tag.name() + ": " + tagged + " rows";
            check(pypaimon(warehouse, -1).contains(line),
                    "pypaimon reads the tag's " + tagged + " rows");
            runExactlyOnce(EndToEndTests.resumed(savepoint), "paimon-savepoint-resumed", warehouse, n,
                    options, null, 200);
            System.out.println("     " + tag + "; " + CoordinatorStats.of(EndToEndTests.user(warehouse)));
        }));
    }

    /**
     * The schema file is the one {@code sinkcoord table create} writes, byte for byte; the Avro
     * schema is Paimon's; an existing schema is checked; rows of the wrong shape are refused.
     */
    static void schemaAndRows() throws Exception {
        String rust = "{\"version\":3,\"id\":0,\"fields\":[{\"id\":0,\"name\":\"id\",\"type\":"
                + "\"BIGINT NOT NULL\"},{\"id\":1,\"name\":\"name\",\"type\":\"STRING\"}],"
                + "\"highestFieldId\":1,\"partitionKeys\":[],\"primaryKeys\":[],\"options\":"
                + "{\"bucket\":\"-1\",\"file.format\":\"avro\",\"manifest.compression\":\"null\"},"
                + "\"timeMillis\":1796349477246}";
        check(SCHEMA.schemaJson(1796349477246L).equals(rust), SCHEMA.schemaJson(1796349477246L));
        check(SCHEMA.avroSchema().toString().equals(
                        "{\"type\":\"record\",\"name\":\"record\",\"namespace\":"
                                + "\"org.apache.paimon.avro.generated\",\"fields\":[{\"name\":\"id\","
                                + "\"type\":\"long\"},{\"name\":\"name\",\"type\":[\"null\",\"string\"],"
                                + "\"default\":null}]}"),
                SCHEMA.avroSchema().toString());
        TestSupport.withTempDir("paimon-schema", table -> {
            SCHEMA.createOrCheck(table);
            String created = Files.readString(table.resolve("schema/schema-0"));
            SCHEMA.createOrCheck(table); // the table's own schema: accepted, left as it is
            check(Files.readString(table.resolve("schema/schema-0")).equals(created), created);
            check(created.replaceAll("\"timeMillis\":\\d+", "").equals(
                    rust.replaceAll("\"timeMillis\":\\d+", "")), created);
            refused(() -> PaimonSchema.parse("id BIGINT, name STRING NOT NULL").createOrCheck(table),
                    "the table has the columns [id BIGINT NOT NULL, name STRING]");
        });
        refused(() -> PaimonSchema.parse("id DECIMAL"), "column 'id': unsupported type DECIMAL");
        refused(() -> PaimonSchema.parse("id BIGINT, id INT"), "two columns of one name");
        PaimonSchema.Column id = SCHEMA.columns().get(0);
        check(PaimonFiles.avroValue(id, 7).equals(7L), "an Integer in a BIGINT column");
        refused(() -> PaimonFiles.avroValue(id, null), "column id is NOT NULL");
        refused(() -> PaimonFiles.avroValue(id, "7"), "column id (BIGINT): a java.lang.String");
        refused(() -> CoordinatedSink.sinkTo(
                        StreamExecutionEnvironment.getExecutionEnvironment().fromData("x"),
                        new org.apache.flink.api.common.serialization.SimpleStringSchema(),
                        SinkOptions.of("/tmp/t", "u").withPaimon(SCHEMA)),
                "a Paimon table takes rows");
    }

    private static void refused(FlinkTests.Test call, String message) throws Exception {
        try {
            call.run();
        } catch (RuntimeException e) {
            check(String.valueOf(e.getMessage()).contains(message), "refused with " + e);
            return;
        }
        throw new AssertionError("not refused: " + message);
    }

    /**
     * Reads the table with pypaimon ({@code tests/paimon/read_table.py WAREHOUSE db.events},
     * with {@code --expect-ids n} unless {@code n < 0}); fails unless it exits 0. Returns its
     * output lines. The venv is {@code <repo>/target/paimon-venv}, made by {@code
     * tests/paimon/setup.sh} (idempotent) when missing.
     */
    static List<String> pypaimon(Path warehouse, long n) throws IOException, InterruptedException {
        Path repo = repoRoot();
        Path python = repo.resolve("target/paimon-venv/bin/python");
        if (!Files.isExecutable(python)) {
            run(List.of(repo.resolve("tests/paimon/setup.sh").toString()));
        }
        List<String> command = new ArrayList<>(List.of(python.toString(),
                repo.resolve("tests/paimon/read_table.py").toString(), warehouse.toString(),
                "db.events"));
        if (n >= 0) {
            command.addAll(List.of("--expect-ids", Long.toString(n)));
        }
        List<String> lines = run(command);
        lines.forEach(l -> System.out.println("     pypaimon: " + l));
        return lines;
    }

    /**
     * Paimon's Java reader and the {@code paimon} crate's ({@code tests/paimon/JavaRead.java},
     * {@code tests/paimon/rust-reader}) read the ids 0..n-1 of {@code db.events}, each once,
     * where {@code make paimon-rust-test} (which {@code make test} runs first) built them;
     * else say they were not run.
     */
    static void otherReaders(Path warehouse, long n) throws IOException, InterruptedException {
        Path repo = repoRoot();
        Path rust = repo.resolve("target/paimon-rust-reader/release/paimon-rust-read");
        if (Files.isExecutable(rust)) {
            checkIds("the paimon crate", run(List.of(rust.toString(), warehouse.toString(), "db",
                    "events")), n);
        } else {
            System.out.println("     the paimon crate's reader: not built (make paimon-rust-test)");
        }
        if (Files.exists(repo.resolve("target/paimon-java/JavaRead.class"))) {
            List<String> setup = run(List.of(repo.resolve("tests/paimon/java-setup.sh").toString()));
            String classpath = setup.get(setup.size() - 1);
            checkIds("Paimon's Java reader", run(List.of("java", "-cp", classpath, "JavaRead",
                    warehouse.toString(), "events")), n);
        } else {
            System.out.println("     Paimon's Java reader: not set up (make paimon-test)");
        }
    }

    /** The last line of a reader's output, a JSON list of sorted ids, is 0..n-1. */
    private static void checkIds(String reader, List<String> lines, long n) {
        String last = lines.isEmpty() ? "" : lines.get(lines.size() - 1).trim();
        String inner = last.replaceAll("^\\[|\\]$", "").trim();
        long[] ids = inner.isEmpty()
                ? new long[0]
                : java.util.Arrays.stream(inner.split(",")).mapToLong(v -> Long.parseLong(v.trim())).toArray();
        boolean exact = ids.length == n;
        for (int i = 0; exact && i < ids.length; i++) {
            exact = ids[i] == i;
        }
        check(exact, reader + " reads " + ids.length + " ids, not 0.." + (n - 1) + " each once");
        System.out.println("     " + reader + ": every id 0.." + (n - 1) + " exactly once");
    }

    private static List<String> run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        List<String> lines = new ArrayList<>();
        try (BufferedReader out = new BufferedReader(
                new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String l = out.readLine(); l != null; l = out.readLine()) {
                lines.add(l);
            }
        }
        int rc = p.waitFor();
        check(rc == 0, String.join(" ", command) + " exited " + rc + ":\n" + String.join("\n", lines));
        return lines;
    }

    /** The repository: the first directory up from the working directory with tests/paimon. */
    private static Path repoRoot() {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.exists(d.resolve("tests/paimon/read_table.py"))) {
                return d;
            }
        }
        throw new AssertionError("no tests/paimon/read_table.py above " + Path.of("").toAbsolutePath());
    }
}
