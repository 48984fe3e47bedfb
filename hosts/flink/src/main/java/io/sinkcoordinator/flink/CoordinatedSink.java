package io.sinkcoordinator.flink;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Attaches the exactly-once sink to a {@link DataStream}:
 *
 * <pre>{@code
 * CoordinatedSink.sinkTo(stream, new SimpleStringSchema(),
 *         SinkOptions.of("/data/events", "events-job"));
 * }</pre>
 *
 * <p>The writers run with the stream's parallelism (chained to it when
 * possible); their coordinator commits one snapshot per completed checkpoint
 * and a final END snapshot at the end of input. Without checkpointing, or
 * in batch execution mode, the coordinator is configured with {@code
 * checkpointing = false}: everything is committed once, on the last END entry.
 */
public final class CoordinatedSink {
    private CoordinatedSink() {}

    /** The name of the writer operator in the job graph. */
    public static final String OPERATOR_NAME = "sink-coordinator-writer";

    public static <T> SingleOutputStreamOperator<Void> sinkTo(
            DataStream<T> stream, SerializationSchema<T> schema, SinkOptions options) {
        StreamExecutionEnvironment env = stream.getExecutionEnvironment();
        boolean batch =
                env.getConfiguration().get(ExecutionOptions.RUNTIME_MODE)
                        == RuntimeExecutionMode.BATCH;
        boolean checkpointing = !batch && env.getCheckpointConfig().isCheckpointingEnabled();
        SinkOptions effective =
                options.withConfig(options.config().withCheckpointing(checkpointing));
        SingleOutputStreamOperator<Void> writers =
                stream.transform(
                        OPERATOR_NAME,
                        Types.VOID,
                        new CoordinatedWriterOperatorFactory<>(effective, schema));
        // A stable uid per commit user: a job resumed from a savepoint finds
        // its writers' state and its coordinator's state again.
        return writers.setParallelism(stream.getParallelism())
                .name(OPERATOR_NAME)
                .uid(OPERATOR_NAME + "-" + options.config().commitUser());
    }
}
