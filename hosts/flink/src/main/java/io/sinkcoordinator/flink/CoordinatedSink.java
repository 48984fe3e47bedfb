package io.sinkcoordinator.flink;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * Attaches the exactly-once sink to a {@link DataStream}, in the style of Iceberg's
 * {@code FlinkSink.forRowData(ds)...append()}:
 *
 * <pre>{@code
 * DataStreamSink<Void> sink =
 *     CoordinatedSink.forInput(stream, new SimpleStringSchema())
 *         .table("/data/events")
 *         .commitUser("events-job")
 *         .writeParallelism(4)   // default: the stream's parallelism
 *         .uidPrefix("events")   // default: "sink-coordinator-writer"
 *         .name("events-sink")   // default: "sink-coordinator-writer"
 *         .append();
 * }</pre>
 *
 * <p>The writers run with the stream's parallelism (chained to it when
 * possible); their coordinator commits one snapshot per completed checkpoint
 * and a final END snapshot at the end of input. Without checkpointing, or
 * in batch execution mode, the coordinator is configured with {@code
 * checkpointing = false}: everything is committed once, on the last END entry.
 *
 * <p>An Apache Paimon append table instead (its location {@code <warehouse>/<db>.db/<name>}),
 * each record one row of the table:
 *
 * <pre>{@code
 * CoordinatedSink.forPaimon(events, PaimonSchema.parse("id BIGINT NOT NULL, name STRING"),
 *         e -> new Object[] {e.id(), e.name()})
 *     .table("/warehouse/db.db/events")
 *     .commitUser("events-job")
 *     .append();
 * }</pre>
 */
public final class CoordinatedSink {
    private CoordinatedSink() {}

    /** The name of the writer operator in the job graph. */
    public static final String OPERATOR_NAME = "sink-coordinator-writer";

    /**
     * The writers and their coordinator on {@code stream}, with the stream's parallelism, named
     * {@link #OPERATOR_NAME} and with the uid {@code OPERATOR_NAME-<commit user>}. Kept for the
     * jobs written before {@link #forInput}; the builder makes the same operator.
     */
    public static <T> SingleOutputStreamOperator<Void> sinkTo(
            DataStream<T> stream, SerializationSchema<T> schema, SinkOptions options) {
        return writers(stream, files(options, schema, null), options, stream.getParallelism(),
                OPERATOR_NAME, OPERATOR_NAME);
    }

    /** A builder of the sink on {@code stream}, each record serialized by {@code schema}. */
    public static <T> Builder<T> forInput(DataStream<T> stream, SerializationSchema<T> schema) {
        return new Builder<>(stream, java.util.Objects.requireNonNull(schema, "schema"), null, null);
    }

    /**
     * A builder of the sink on {@code stream} into a Paimon append table of the row type {@code
     * schema} (created by the sink if the table has no schema yet), each record the row {@code
     * rows} gives (see {@link PaimonRows}). The table is the builder's {@link Builder#table}.
     */
    public static <T> Builder<T> forPaimon(
            DataStream<T> stream, PaimonSchema schema, PaimonRows<T> rows) {
        return new Builder<>(stream, null, java.util.Objects.requireNonNull(schema, "schema"),
                java.util.Objects.requireNonNull(rows, "rows"));
    }

    /** The writers' files: Paimon data files of {@code rows} on a Paimon table, else record files. */
    private static <T> WriterFiles<T> files(
            SinkOptions options, SerializationSchema<T> schema, PaimonRows<T> rows) {
        if (options.paimon() == null) {
            return DataFiles.of(options.location(), options.runtime(), schema);
        }
        if (rows == null) {
            throw new IllegalArgumentException(
                    "a Paimon table takes rows, not serialized records: CoordinatedSink.forPaimon");
        }
        return PaimonFiles.of(options.location(), options.runtime(), options.paimon(), rows);
    }

    private static <T> SingleOutputStreamOperator<Void> writers(
            DataStream<T> stream,
            WriterFiles<T> files,
            SinkOptions options,
            int parallelism,
            String uidPrefix,
            String name) {
        StreamExecutionEnvironment env = stream.getExecutionEnvironment();
        boolean batch =
                env.getConfiguration().get(ExecutionOptions.RUNTIME_MODE)
                        == RuntimeExecutionMode.BATCH;
        boolean checkpointing = !batch && env.getCheckpointConfig().isCheckpointingEnabled();
        SinkOptions effective =
                options.withConfig(options.config().withCheckpointing(checkpointing));
        SingleOutputStreamOperator<Void> writers =
                stream.transform(
                        name,
                        Types.VOID,
                        new CoordinatedWriterOperatorFactory<>(effective, files));
        // A stable uid per commit user: a job resumed from a savepoint finds
        // its writers' state and its coordinator's state again.
        return writers.setParallelism(parallelism)
                .name(name)
                .uid(uidPrefix + "-" + options.config().commitUser());
    }

    /**
     * Where and how the sink writes. {@link #table} and {@link #commitUser}, or {@link #options},
     * are required; the rest has defaults.
     */
    public static final class Builder<T> {
        private final DataStream<T> stream;
        /** The records' serialization (native), or null (Paimon: {@link #paimon} and rows). */
        private final SerializationSchema<T> schema;
        private final PaimonSchema paimon;
        private final PaimonRows<T> rows;
        private SinkOptions options;
        private String table;
        private String commitUser;
        private int writeParallelism = -1;
        private String uidPrefix = OPERATOR_NAME;
        private String name = OPERATOR_NAME;
        private io.sinkcoordinator.flink.component.ComponentRuntime runtime;
        private final java.util.Map<String, String> storageOptions = new java.util.TreeMap<>();

        private Builder(
                DataStream<T> stream,
                SerializationSchema<T> schema,
                PaimonSchema paimon,
                PaimonRows<T> rows) {
            this.stream = java.util.Objects.requireNonNull(stream, "stream");
            this.schema = schema;
            this.paimon = paimon;
            this.rows = rows;
        }

        /**
         * The table's location: a local directory, or an object store's URL ({@code
         * s3://bucket/prefix}; see {@link io.sinkcoordinator.flink.component.TableLocation}),
         * which a cluster's JobManager and TaskManagers reach alike. Natively {@code log/} and
         * {@code data/} are in it.
         */
        public Builder<T> table(String location) {
            this.table = java.util.Objects.requireNonNull(location, "location");
            return this;
        }

        /**
         * An object store option of the table ({@code object_store}'s keys, e.g. {@code
         * aws_endpoint}; see {@link SinkOptions#withStorageOption}).
         */
        public Builder<T> storageOption(String key, String value) {
            storageOptions.put(java.util.Objects.requireNonNull(key, "key"),
                    java.util.Objects.requireNonNull(value, "value"));
            return this;
        }

        /** The sink's identity across restarts (the snapshots' commit user). */
        public Builder<T> commitUser(String commitUser) {
            this.commitUser = java.util.Objects.requireNonNull(commitUser, "commitUser");
            return this;
        }

        /**
         * Every option at once (coordinator configuration, storage retries); {@link #table} and
         * {@link #commitUser}, when also given, replace the table and commit user of these.
         */
        public Builder<T> options(SinkOptions options) {
            this.options = java.util.Objects.requireNonNull(options, "options");
            return this;
        }

        /** The writers' parallelism (default: the input stream's). */
        public Builder<T> writeParallelism(int parallelism) {
            if (parallelism < 1) {
                throw new IllegalArgumentException("writeParallelism must be at least 1");
            }
            this.writeParallelism = parallelism;
            return this;
        }

        /**
         * The prefix of the writer operator's uid, {@code <prefix>-<commit user>} (default {@link
         * #OPERATOR_NAME}, the uid {@link #sinkTo} gives). Keep it stable: a job resumed from a
         * savepoint finds its writers' and its coordinator's state by it.
         */
        public Builder<T> uidPrefix(String prefix) {
            this.uidPrefix = java.util.Objects.requireNonNull(prefix, "prefix");
            return this;
        }

        /**
         * Where the component runs: {@code CHICORY} (pure Java, no native library) or {@code JNI}
         * (default: the options' runtime, {@code -Dsinkcoord.runtime}, else JNI).
         */
        public Builder<T> runtime(io.sinkcoordinator.flink.component.ComponentRuntime runtime) {
            this.runtime = java.util.Objects.requireNonNull(runtime, "runtime");
            return this;
        }

        /** The operators' name in the job graph (default {@link #OPERATOR_NAME}). */
        public Builder<T> name(String name) {
            this.name = java.util.Objects.requireNonNull(name, "name");
            return this;
        }

        /**
         * Adds the writers and their coordinator to the job; the returned sink (a discarding sink
         * after the writers, which emit nothing) is where a job sets further sink properties.
         */
        public DataStreamSink<Void> append() {
            SinkOptions effective = options;
            if (effective == null) {
                if (table == null || commitUser == null) {
                    throw new IllegalStateException("a table and a commit user (or options) are required");
                }
                effective = SinkOptions.of(table, commitUser);
            } else {
                if (table != null) {
                    effective = effective.withTable(table);
                }
                if (commitUser != null) {
                    effective = effective.withConfig(effective.config().withCommitUser(commitUser));
                }
            }
            if (runtime != null) {
                effective = effective.withRuntime(runtime);
            }
            for (java.util.Map.Entry<String, String> o : storageOptions.entrySet()) {
                effective = effective.withStorageOption(o.getKey(), o.getValue());
            }
            if (paimon != null) {
                effective = effective.withPaimon(paimon);
            }
            int parallelism = writeParallelism > 0 ? writeParallelism : stream.getParallelism();
            SingleOutputStreamOperator<Void> writers =
                    writers(stream, files(effective, schema, rows), effective, parallelism,
                            uidPrefix, name);
            String user = effective.config().commitUser();
            return writers.sinkTo(new DiscardingSink<>())
                    .setParallelism(parallelism)
                    .name(name + "-end")
                    .uid(uidPrefix + "-" + user + "-end");
        }
    }
}
