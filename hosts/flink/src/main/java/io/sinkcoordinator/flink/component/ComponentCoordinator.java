package io.sinkcoordinator.flink.component;

/**
 * One coordinator instance of the component (WIT resource {@code
 * coordinator}) over a table's log directory. Not thread-safe beyond its
 * own synchronization: the engine serializes calls anyway (one total order,
 * SEMANTICS 1). Checkpoint ids are {@code long}s; {@code -1} means none.
 */
public final class ComponentCoordinator implements AutoCloseable {
    private long handle;

    /**
     * A coordinator in state {@code created}.
     *
     * @param restoreCheckpoint -1 for a fresh start; else the checkpoint whose
     *     coordinator {@code state} to restore, with the subtasks that had
     *     fully finished before it
     */
    public ComponentCoordinator(
            String logDir,
            int parallelism,
            CoordinatorConfig config,
            long restoreCheckpoint,
            byte[] state,
            int[] finishedSubtasks) {
        this(logDir, parallelism, config, restoreCheckpoint, state, finishedSubtasks, 0, -1);
    }

    /**
     * The same, with a storage fault drill on the table log: every {@code
     * faultEvery}-th write fails (0: none), and every write after the first
     * {@code faultAfter} fails (-1: none); every other injected fault lands
     * the write before reporting the error (ambiguous, SEMANTICS 8).
     */
    public ComponentCoordinator(
            String logDir,
            int parallelism,
            CoordinatorConfig config,
            long restoreCheckpoint,
            byte[] state,
            int[] finishedSubtasks,
            int faultEvery,
            long faultAfter) {
        this.handle =
                Native.coordinatorNew(
                        logDir,
                        parallelism,
                        config.commitUser(),
                        config.checkpointing(),
                        config.finalCommitOnEndInput(),
                        config.forceCreateSnapshot(),
                        config.savepointAutoTag(),
                        config.tagTimeRetainedMs(),
                        config.recoveryContinue(),
                        restoreCheckpoint,
                        state,
                        finishedSubtasks,
                        faultEvery,
                        faultAfter);
    }

    private long live() {
        if (handle == 0) {
            throw new IllegalStateException("the coordinator was closed");
        }
        return handle;
    }

    public synchronized Outcome start() {
        return Native.coordinatorStart(live());
    }

    public synchronized Outcome event(int subtask, int attempt, Entry entry) {
        return Native.coordinatorEvent(live(), subtask, attempt, entry);
    }

    /**
     * Event i is {@code (subtasks[i], attempts[i], entries[i])}, all in one
     * crossing; an error comes back inside the result (see {@link BatchOutcome}).
     */
    public synchronized BatchOutcome events(int[] subtasks, int[] attempts, Entry[] entries) {
        return Native.coordinatorEvents(live(), subtasks, attempts, entries);
    }

    public synchronized Outcome restored(
            int subtask,
            int attempt,
            long checkpoint,
            Entry[] entries) {
        return Native.coordinatorRestored(live(), subtask, attempt, checkpoint, entries);
    }

    /** {@code checkpoint} = -1 when the subtask restarts from scratch. */
    public synchronized Outcome subtaskReset(int subtask, long checkpoint) {
        return Native.coordinatorSubtaskReset(live(), subtask, checkpoint);
    }

    public synchronized byte[] checkpoint(long checkpoint) {
        return Native.coordinatorCheckpoint(live(), checkpoint);
    }

    public synchronized Outcome checkpointComplete(long checkpoint) {
        return Native.coordinatorCheckpointComplete(live(), checkpoint);
    }

    public synchronized Outcome checkpointAborted(long checkpoint) {
        return Native.coordinatorCheckpointAborted(live(), checkpoint);
    }

    public synchronized String state() {
        return Native.coordinatorState(live());
    }

    /** Committed-up-to (SEMANTICS 5.5), -1 for none. */
    public synchronized long committedUpTo() {
        return Native.coordinatorCommittedUpTo(live());
    }

    /** Closes the instance (component {@code close}) and frees it. Idempotent. */
    @Override
    public synchronized void close() {
        if (handle == 0) {
            return;
        }
        try {
            Native.coordinatorClose(handle);
        } finally {
            Native.coordinatorFree(handle);
            handle = 0;
        }
    }
}
