package io.sinkcoordinator.flink;

import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Injects failures: an exception in {@code map} fails the task (a region
 * failover: with forward edges each subtask is its own region). A stall in
 * {@code snapshotState} longer than the checkpoint timeout expires the
 * checkpoint, which with no tolerable checkpoint failures fails the whole
 * job (a global failover: the coordinator is recreated from its last
 * checkpoint). An exception in {@code snapshotState} would not do: Flink
 * 2.3 treats it as a task failure (region failover). Budgets are static:
 * the MiniCluster runs every attempt in this JVM, so they bound the number
 * of failures across attempts and the job eventually finishes.
 */
final class Chaos extends RichMapFunction<Long, Long> implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;

    static final AtomicInteger REGION_BUDGET = new AtomicInteger();
    static final AtomicInteger GLOBAL_BUDGET = new AtomicInteger();
    static final AtomicInteger REGION_INJECTED = new AtomicInteger();
    static final AtomicInteger GLOBAL_INJECTED = new AtomicInteger();

    private final double regionPerRecord;
    private final double globalPerSnapshot;
    /** How long an injected stall lasts (longer than the checkpoint timeout). */
    static final long STALL_MS = 1_500;
    /** Only this subtask fails (-1: any), and only after it processed this many records. */
    private final int onlySubtask;
    private final long afterRecords;
    /**
     * Stalls only after this many records, and task failures only before: a
     * task failure during a stall aborts the stalled checkpoint (it then does
     * not expire and no global failover follows), so the two are kept apart.
     */
    private final long stallAfterRecords;
    private transient Random random;
    private transient int subtask;
    private transient long seen;

    Chaos(double regionPerRecord, double globalPerSnapshot, int onlySubtask, long afterRecords) {
        this(regionPerRecord, globalPerSnapshot, onlySubtask, afterRecords, afterRecords);
    }

    Chaos(
            double regionPerRecord,
            double globalPerSnapshot,
            int onlySubtask,
            long afterRecords,
            long stallAfterRecords) {
        this.regionPerRecord = regionPerRecord;
        this.globalPerSnapshot = globalPerSnapshot;
        this.onlySubtask = onlySubtask;
        this.afterRecords = afterRecords;
        this.stallAfterRecords = stallAfterRecords;
    }

    /**
     * The environment of a job whose checkpoints stall (here or in FinishTests): checkpoints
     * every 100 ms, timing out within a stall, so that a stall expires its checkpoint.
     */
    static StreamExecutionEnvironment env(int parallelism, int restarts) {
        StreamExecutionEnvironment env = TestSupport.env(parallelism, restarts, new Configuration());
        env.enableCheckpointing(100);
        env.getCheckpointConfig().setCheckpointTimeout(STALL_MS / 2);
        return env;
    }

    /** What was injected since the last {@link #budget}, for a test's report. */
    static String injected() {
        return "injected " + REGION_INJECTED.get() + " task failures, " + GLOBAL_INJECTED.get()
                + " checkpoint stalls";
    }

    static void budget(int region, int global) {
        REGION_BUDGET.set(region);
        GLOBAL_BUDGET.set(global);
        REGION_INJECTED.set(0);
        GLOBAL_INJECTED.set(0);
    }

    @Override
    public void open(OpenContext context) {
        subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        // A fixed seed per subtask: the failure points are the same in every
        // run, so the number of injected failures does not depend on luck.
        random = new Random(0x5EEDL ^ (31L * subtask));
    }

    private boolean armed() {
        return (onlySubtask < 0 || onlySubtask == subtask) && seen >= afterRecords;
    }

    @Override
    public Long map(Long value) {
        seen++;
        if (armed()
                && (stallAfterRecords == afterRecords || seen < stallAfterRecords)
                && random.nextDouble() < regionPerRecord
                && take(REGION_BUDGET)) {
            REGION_INJECTED.incrementAndGet();
            throw new RuntimeException("injected task failure in subtask " + subtask);
        }
        return value;
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws InterruptedException {
        // Stalls only in one subtask (0, or the chosen one):
        // a stall in a subtask that a region failover restarts at the same time
        // is aborted with the failover instead of expiring.
        if (random != null
                && armed()
                && seen >= stallAfterRecords
                && (onlySubtask >= 0 || subtask == 0)
                && random.nextDouble() < globalPerSnapshot
                && take(GLOBAL_BUDGET)) {
            GLOBAL_INJECTED.incrementAndGet();
            Thread.sleep(STALL_MS);
        }
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {}

    private static boolean take(AtomicInteger budget) {
        return budget.getAndUpdate(b -> Math.max(0, b - 1)) > 0;
    }
}
