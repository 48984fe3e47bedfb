package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.TestSupport.check;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.TableLocation;
import io.sinkcoordinator.jvm.Moto;
import io.sinkcoordinator.jvm.Storage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Tables on S3 (moto's S3 API on loopback, {@code make moto-setup}): the coordinator and the
 * writers reach the table only through the runtime's object store, as on a cluster whose
 * JobManager and TaskManagers share no disk. Nothing of the table is on the local disk.
 */
final class S3Tests {
    private S3Tests() {}

    /** A fresh table in moto's bucket, {@code <name>/db.db/events}, with moto's options. */
    static SinkOptions options(String name, boolean paimon) {
        Moto moto = Moto.shared();
        String url = moto.freshUrl(name) + "/db.db/events";
        SinkOptions options = SinkOptions.of(url, "user-" + name);
        for (Map.Entry<String, String> o : moto.options().entrySet()) {
            options = options.withStorageOption(o.getKey(), o.getValue());
        }
        return paimon ? options.withPaimon(PaimonTests.SCHEMA) : options;
    }

    /**
     * Task failures (region failovers) and expired checkpoints (global failovers), as
     * EndToEndTests.randomFailures, on an S3 table: every record exactly once, read back from
     * S3; a Paimon table is also copied out of the bucket and read by pypaimon, the paimon crate
     * and Paimon's Java reader.
     */
    static void failures(boolean paimon) throws Exception {
        String name = (paimon ? "flink-s3-paimon-" : "flink-s3-native-")
                + SinkOptions.defaultRuntime().name().toLowerCase();
        SinkOptions options = options(name, paimon);
        long n = 30_000;
        Chaos.budget(3, 1);
        StreamExecutionEnvironment env = Chaos.env(4, 100);
        EndToEndTests.pipeline(env, n, options, new Chaos(1.0 / 1500, 1.0, -1, 0, 5_000), 15);
        env.execute(name);
        TableLocation table = options.location();
        TestSupport.assertExactlyOnce(table, n);
        int snapshots = TestSupport.assertEndSnapshot(table).size();
        EndToEndTests.checkFailovers(options.config().commitUser());
        // the other runtime's store (object_store under JNI, the AWS SDK under Chicory) reads the same
        ComponentRuntime other = SinkOptions.defaultRuntime() == ComponentRuntime.JNI
                ? ComponentRuntime.CHICORY : ComponentRuntime.JNI;
        try (TableReader reader = TableReader.open(table, other)) {
            long rows = paimon ? reader.rows().size() : reader.records().size();
            check(reader.snapshots().size() == snapshots && rows == n,
                    other + " reads " + reader.snapshots().size() + " snapshots, " + rows + " records");
        }
        System.out.println("     " + table + ": " + snapshots + " snapshots, read alike through " + other);
        if (paimon) {
            TestSupport.withTempDir("s3-paimon-copy", warehouse -> {
                int files = copy(table, PaimonTests.table(warehouse));
                System.out.println("     copied " + files + " objects out of the bucket");
                PaimonTests.pypaimon(warehouse, n);
                PaimonTests.otherReaders(warehouse, n);
            });
        }
    }

    /** Copies every object of the table at {@code table} into the directory {@code to}. */
    static int copy(TableLocation table, Path to) throws Exception {
        Storage storage = table.open(ComponentRuntime.CHICORY, false);
        try {
            int n = 0;
            for (String key : storage.list("")) {
                Path file = to.resolve(key);
                Files.createDirectories(file.getParent());
                Files.write(file, storage.get(key));
                n++;
            }
            check(n > 0, "no object under " + table);
            return n;
        } finally {
            TableLocation.close(storage);
        }
    }
}
