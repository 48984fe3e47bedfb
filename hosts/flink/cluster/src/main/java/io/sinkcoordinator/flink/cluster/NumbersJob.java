package io.sinkcoordinator.flink.cluster;

import io.sinkcoordinator.flink.CoordinatedSink;
import io.sinkcoordinator.flink.SinkOptions;
import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.CoordinatorConfig;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The job of the standalone cluster test, and a template for one: the ids {@code 0 .. count-1}
 * as strings, throttled to {@code rate} records a second in all, into the connector's sink on the
 * pure-Java runtime (Chicory), savepoints tagged.
 *
 * <pre>
 * NumbersJob --table LOCATION --commit-user USER --count N [--rate R] [--parallelism P]
 *            [--option KEY=VALUE ...]
 * </pre>
 *
 * <p>Checkpointing comes from the cluster's configuration ({@code execution.checkpointing.interval}
 * in {@code config.yaml}); without it the sink would commit only once, at the end, so the job
 * refuses to run. The source ({@link DataGeneratorSource}) checkpoints its position, so a restored
 * job goes on where its checkpoint was and the table still gets every id exactly once.
 */
public final class NumbersJob {
    private NumbersJob() {}

    /** The parsed command line. */
    record Args(
            String table,
            String commitUser,
            long count,
            double rate,
            int parallelism,
            Map<String, String> storageOptions) {

        static Args parse(String[] args) {
            String table = null;
            String user = null;
            long count = -1;
            double rate = 1_000;
            int parallelism = 2;
            Map<String, String> options = new LinkedHashMap<>();
            for (int i = 0; i < args.length; i++) {
                String name = args[i];
                if (i + 1 == args.length) {
                    throw usage(name + " needs a value");
                }
                String value = args[++i];
                switch (name) {
                    case "--table" -> table = value;
                    case "--commit-user" -> user = value;
                    case "--count" -> count = Long.parseLong(value);
                    case "--rate" -> rate = Double.parseDouble(value);
                    case "--parallelism" -> parallelism = Integer.parseInt(value);
                    case "--option" -> {
                        int eq = value.indexOf('=');
                        if (eq < 1) {
                            throw usage("--option takes KEY=VALUE, not " + value);
                        }
                        options.put(value.substring(0, eq), value.substring(eq + 1));
                    }
                    default -> throw usage("unknown argument " + name);
                }
            }
            if (table == null || user == null || count < 0) {
                throw usage("--table, --commit-user and --count are required");
            }
            return new Args(table, user, count, rate, parallelism, Map.copyOf(options));
        }

        private static IllegalArgumentException usage(String problem) {
            return new IllegalArgumentException(problem + "; usage: NumbersJob --table LOCATION"
                    + " --commit-user USER --count N [--rate R] [--parallelism P]"
                    + " [--option KEY=VALUE ...]");
        }
    }

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        if (!env.getCheckpointConfig().isCheckpointingEnabled()) {
            throw new IllegalStateException(
                    "NumbersJob needs checkpointing: set execution.checkpointing.interval");
        }

        DataGeneratorSource<String> ids =
                new DataGeneratorSource<>(
                        String::valueOf,
                        args.count(),
                        RateLimiterStrategy.perSecond(args.rate()),
                        Types.STRING);
        DataStream<String> lines =
                env.fromSource(ids, WatermarkStrategy.noWatermarks(), "ids")
                        .setParallelism(args.parallelism())
                        .uid("numbers-ids"); // stable: a restored job finds the source's position

        CoordinatedSink.forInput(lines, new SimpleStringSchema())
                .options(sinkOptions(args))
                .runtime(ComponentRuntime.CHICORY) // pure Java: no native library on any process
                .writeParallelism(args.parallelism())
                .uidPrefix("numbers")
                .name("numbers-sink")
                .append();
        env.execute("numbers");
    }

    /** The sink's table and options: each savepoint tagged {@code savepoint-<id>}. */
    static SinkOptions sinkOptions(Args args) {
        SinkOptions options =
                SinkOptions.of(args.table(), args.commitUser())
                        .withConfig(
                                CoordinatorConfig.of(args.commitUser()).withSavepointAutoTag(true));
        // an object store's options (endpoint, region, ...); credentials are better given to the
        // processes as AWS_* environment variables than as options inside the job graph
        for (Map.Entry<String, String> o : args.storageOptions().entrySet()) {
            options = options.withStorageOption(o.getKey(), o.getValue());
        }
        return options;
    }
}
