package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.TestSupport.check;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import java.nio.file.Path;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** The builder ({@link CoordinatedSink#forInput}): its operators and a checkpointed job. */
final class BuilderTests {
    private BuilderTests() {}

    /**
     * A job of parallelism 4 whose writers run with parallelism 2 under their own name and uid
     * prefix: every record exactly once, and the job graph carries the names.
     * Its component runs on {@code runtime}; the table is read back the same way.
     */
    static void builderAppend(ComponentRuntime runtime) throws Exception {
        Path table = TestSupport.tempDir("builder-" + runtime.name().toLowerCase());
        try {
            long n = 20_000;
            String user = EndToEndTests.user(table);
            StreamExecutionEnvironment env = TestSupport.env(4, 0, new Configuration());
            env.enableCheckpointing(100);
            DataStream<String> records =
                    env.fromSequence(0, n - 1)
                            .map(new TestSupport.Throttle(20))
                            .map(String::valueOf);
            DataStreamSink<Void> sink =
                    CoordinatedSink.forInput(records, new SimpleStringSchema())
                            .table(table.toString())
                            .commitUser(user)
                            .writeParallelism(2)
                            .uidPrefix("numbers")
                            .name("numbers-sink")
                            .runtime(runtime)
                            .append();
            check(sink.getTransformation().getParallelism() == 2, "sink parallelism");
            JobGraph graph = env.getStreamGraph(false).getJobGraph();
            boolean named = false;
            for (JobVertex v : graph.getVertices()) {
                if (v.getName().contains("numbers-sink")) {
                    named = true;
                    check(v.getParallelism() == 2, "writers run with parallelism 2: " + v);
                }
            }
            check(named, "no vertex named numbers-sink in " + graph.getVertices());
            env.execute("builder-append");
            TestSupport.assertExactlyOnce(table, n);
            check(TestSupport.assertEndSnapshot(table).size() >= 2, "a few snapshots");
        } finally {
            TestSupport.deleteTree(table);
        }
    }
}
