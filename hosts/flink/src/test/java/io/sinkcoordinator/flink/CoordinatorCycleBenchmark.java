package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.bench.BenchLog;
import io.sinkcoordinator.flink.bench.JniJobBenchmark;
import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.Entry;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What a Flink checkpoint cycle at P = 256 costs the JobManager (issue 24, item 5): the
 * connector's {@link SinkCoordinator}, the object Flink calls, driven as Flink's JobManager
 * would for one checkpoint of JniJobBenchmark's job (the same entries, built outside the op):
 * 256 {@code handleEventFromOperator} calls (writer events, held and sent to the component as one
 * batch), {@code checkpointCoordinator} and, once its future holds the state bytes, {@code
 * notifyCheckpointComplete}. The JMH thread plays Flink's JobManager main thread; the
 * coordinator's calls run on its own loop thread ({@link CoordinatorLoop}).
 *
 * <p>Measured, per cycle:
 *
 * <ul>
 *   <li>the primary score: wall time from the first callback until the loop processed the
 *       completion (hand-offs between the two threads included);
 *   <li>{@code loopCpuNs} ÷ {@code cycles} (secondary): the loop thread's CPU time, what the
 *       cycle costs the coordinator thread (the batch, the state, the commit with its storage
 *       writes, the bookkeeping and the 256 committed-up-to sends);
 *   <li>{@code callbackNs} ÷ {@code cycles} (secondary): the time of the 258 callbacks on the
 *       calling thread (they only queue work), what the cycle costs Flink's main thread.
 * </ul>
 *
 * Not measured: Flink's own work (RPC, deserializing the events, the checkpoint's bookkeeping),
 * and the sends themselves: the fake gateways drop the events (Flink's serialize them and hand
 * them to the main thread). Storage is tmpfs, as in JniJobBenchmark ({@link BenchLog}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xss8m"})
@Warmup(iterations = 12, time = 3)
@Measurement(iterations = 5, time = 3)
public class CoordinatorCycleBenchmark {
    static final int WRITERS = JniJobBenchmark.WRITERS;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /**
     * A subtask's gateway that keeps only the last committed-up-to it was sent (the tests'
     * CoordinatorScheduleTests.FakeGateway keeps every event, which over thousands of cycles
     * would grow without bound and slow each send).
     */
    static final class Gateway extends CoordinatorScheduleTests.FakeGateway {
        volatile long upTo = -1;

        Gateway(int subtask) {
            super(subtask);
        }

        @Override
        void record(OperatorEvent event) {
            if (event instanceof Events.CommittedUpTo c) {
                upTo = c.upTo();
            }
        }
    }

    /** One running job per trial, started and with every gateway ready, on a tmpfs table. */
    @State(Scope.Thread)
    public static class Job {
        @Param({"JNI", "CHICORY"})
        public String runtime;

        BenchLog table;
        Path logDir;
        CoordinatorScheduleTests.FakeContext context;
        SinkCoordinator coordinator;
        final Gateway[] gateways = new Gateway[WRITERS];
        long loopThread;
        long checkpoint;
        OperatorEvent[] next;

        @Setup(Level.Trial)
        public void start() throws Exception {
            table = BenchLog.create("flink");
            SinkOptions options = SinkOptions.of(table.root.toString(), "bench")
                    .withRuntime(ComponentRuntime.valueOf(runtime));
            logDir = options.logDir();
            context = new CoordinatorScheduleTests.FakeContext(WRITERS);
            coordinator = new SinkCoordinator(context, options);
            coordinator.start();
            for (int s = 0; s < WRITERS; s++) {
                gateways[s] = new Gateway(s);
                coordinator.executionAttemptReady(s, 0, gateways[s]);
            }
            coordinator.idle().get(60, TimeUnit.SECONDS);
            List<Thread> loop = CoordinatorThreadTests.loopThreads("bench");
            if (loop.size() != 1) {
                throw new IllegalStateException("expected one loop thread, found " + loop);
            }
            loopThread = loop.get(0).getId();
        }

        @TearDown(Level.Trial)
        public void stop() throws Exception {
            coordinator.close();
            table.close();
            if (!context.failures.isEmpty()) {
                throw new AssertionError("the coordinator failed the job", context.failures.get(0));
            }
        }

        @Setup(Level.Invocation)
        public void prepare() throws Exception {
            // the previous cycle committed (every writer was told), then the next one's events
            for (Gateway g : gateways) {
                if (g.upTo != checkpoint && checkpoint > 0) {
                    throw new AssertionError("subtask " + g.subtask + " has committed-up-to "
                            + g.upTo + " after checkpoint " + checkpoint);
                }
            }
            BenchLog.prune(logDir);
            Entry[] entries = JniJobBenchmark.entries(checkpoint + 1);
            next = new OperatorEvent[entries.length];
            for (int s = 0; s < entries.length; s++) {
                next[s] = new Events.Committable(entries[s]);
            }
        }
    }

    /** The secondary figures (summed over an iteration; BenchTable divides them by cycles). */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Costs {
        public long cycles;
        public long loopCpuNs;
        public long callbackNs;

        @Setup(Level.Iteration)
        public void reset() {
            cycles = 0;
            loopCpuNs = 0;
            callbackNs = 0;
        }
    }

    @Benchmark
    public byte[] cycle(Job job, Costs costs) throws Exception {
        long cp = ++job.checkpoint;
        SinkCoordinator c = job.coordinator;
        long cpu = THREADS.getThreadCpuTime(job.loopThread);
        long t = System.nanoTime();
        for (int s = 0; s < WRITERS; s++) {
            c.handleEventFromOperator(s, 0, job.next[s]);
        }
        CompletableFuture<byte[]> state = new CompletableFuture<>();
        c.checkpointCoordinator(cp, state);
        long callbacks = System.nanoTime() - t;
        byte[] bytes = state.get(60, TimeUnit.SECONDS); // Flink completes it after the acks
        t = System.nanoTime();
        c.notifyCheckpointComplete(cp);
        callbacks += System.nanoTime() - t;
        c.idle().get(60, TimeUnit.SECONDS);
        costs.loopCpuNs += THREADS.getThreadCpuTime(job.loopThread) - cpu;
        costs.callbackNs += callbacks;
        costs.cycles++;
        return bytes;
    }
}
