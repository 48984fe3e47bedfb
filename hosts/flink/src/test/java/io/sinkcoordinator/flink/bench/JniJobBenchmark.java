package io.sinkcoordinator.flink.bench;

import io.sinkcoordinator.flink.component.BatchOutcome;
import io.sinkcoordinator.flink.component.ComponentCoordinator;
import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.CoordinatorConfig;
import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Outcome;
import io.sinkcoordinator.flink.component.TableLocation;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
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
 * hosts/jvm's JobBenchmark through the Flink connector's component API ({@link
 * ComponentCoordinator}), on the JNI library and on Chicory side by side: the workloads of
 * testkit/benches/perf.rs, so that the figures divide by criterion's Rust-wasmtime ones. P = 256
 * writers, each reporting 4 committables of 200 B per checkpoint, a checkpoint's events as one
 * {@link ComponentCoordinator#events} batch (the JNI library sends it as {@code events-packed}),
 * the coordinator's state taken and the checkpoint completed (one snapshot committed) every cycle.
 * The entries are built outside the measured op (a host has them in hand).
 *
 * <p>The one difference from those: storage is the table log directory the API opens, on tmpfs,
 * its older snapshots removed outside the measured op ({@link BenchLog}), so a cycle also pays the
 * few system calls of each write (perf's storage is a map in memory).
 *
 * <ul>
 *   <li>{@code cycle}: one checkpoint cycle (criterion's {@code job_p256/component});
 *   <li>{@code eventsBatch}: only the batch, its checkpoint and completion in the per-invocation
 *       setup ({@code events_batch_p256/component}); ÷ 256 = per batched event.
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xss8m"})
@Warmup(iterations = 12, time = 3)
@Measurement(iterations = 5, time = 3)
public class JniJobBenchmark {
    public static final int WRITERS = 256;
    static final int COMMITTABLES = 4;
    static final int BYTES = 200;

    /** Writer s's entry for checkpoint c: distinct 200-byte committables and a watermark. */
    static Entry entry(int s, long c) {
        byte[][] committables = new byte[COMMITTABLES][];
        for (int i = 0; i < COMMITTABLES; i++) {
            byte[] b = new byte[BYTES];
            Arrays.fill(b, (byte) 'x');
            byte[] tag = (s + "/" + c + "/" + i).getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(tag, 0, b, 0, tag.length);
            committables[i] = b;
        }
        return new Entry(c, committables, true, c * 1000, false);
    }

    /** Every writer's entry for checkpoint c (CoordinatorCycleBenchmark sends the same). */
    public static Entry[] entries(long c) {
        Entry[] out = new Entry[WRITERS];
        for (int s = 0; s < WRITERS; s++) {
            out[s] = entry(s, c);
        }
        return out;
    }

    /** One running job per trial: the coordinator, its next checkpoint and that one's events. */
    @State(Scope.Thread)
    public static class Job {
        @Param({"JNI", "CHICORY"})
        public String runtime;

        BenchLog log;
        ComponentCoordinator coordinator;
        final int[] subtasks = new int[WRITERS];
        final int[] attempts = new int[WRITERS];
        long checkpoint;
        Entry[] next;
        boolean pending;

        @Setup(Level.Trial)
        public void start() throws IOException {
            for (int s = 0; s < WRITERS; s++) {
                subtasks[s] = s;
            }
            log = BenchLog.create("component");
            coordinator = new ComponentCoordinator(
                    TableLocation.of(log.root.toString()), WRITERS, CoordinatorConfig.of("bench"), -1, null,
                    new int[0], 0, -1, ComponentRuntime.valueOf(runtime));
            coordinator.start();
        }

        @TearDown(Level.Trial)
        public void stop() throws IOException {
            coordinator.close();
            log.close();
        }

        BatchOutcome batch() {
            BatchOutcome o = coordinator.events(subtasks, attempts, next);
            if (o.error != null) {
                throw new AssertionError("checkpoint " + checkpoint + "'s batch", o.error);
            }
            return o;
        }

        void complete(long cp) {
            coordinator.checkpoint(cp);
            Outcome o = coordinator.checkpointComplete(cp);
            if (o.committed().length != 1) {
                throw new AssertionError("checkpoint " + cp + ": " + o.committed().length + " snapshots");
            }
        }

        @Setup(Level.Invocation)
        public void prepare() throws IOException {
            if (pending) {
                // eventsBatch left its checkpoint open: complete it outside the measured op
                complete(checkpoint);
                pending = false;
            }
            BenchLog.prune(log.root);
            next = entries(checkpoint + 1);
        }
    }

    @Benchmark
    public BatchOutcome cycle(Job job) {
        long cp = ++job.checkpoint;
        BatchOutcome batch = job.batch();
        job.complete(cp);
        return batch;
    }

    @Benchmark
    public BatchOutcome eventsBatch(Job job) {
        job.checkpoint++;
        job.pending = true;
        return job.batch();
    }
}
