package io.sinkcoordinator.flink.component;

/**
 * One coordinator instance of the component (WIT resource {@code
 * coordinator}) over a table's log directory. Not thread-safe beyond its
 * own synchronization: the engine serializes calls anyway (one total order,
 * SEMANTICS 1). Checkpoint ids are {@code long}s; {@code -1} means none.
 */
public final class ComponentCoordinator implements AutoCloseable {
    private long handle;
    /** The Chicory instance ({@link ComponentRuntime#CHICORY}), else null (JNI). */
    private io.sinkcoordinator.jvm.Coordinator jvm;
    /** The JNI batches' blocks, reused from batch to batch ({@link PackedBatch}). */
    private java.nio.ByteBuffer blocks;
    /** The Chicory instance's storage (closed with it), else null. */
    private io.sinkcoordinator.jvm.Storage storage;
    private boolean closed;

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
        this(TableLocation.of(logDir), parallelism, config, restoreCheckpoint, state, finishedSubtasks,
                faultEvery, faultAfter, ComponentRuntime.JNI);
    }

    /**
     * The same over the storage at {@code log} (a local directory or an object store, see {@link
     * TableLocation}), on {@code runtime} (the JNI library, or Chicory without native code).
     */
    public ComponentCoordinator(
            TableLocation log,
            int parallelism,
            CoordinatorConfig config,
            long restoreCheckpoint,
            byte[] state,
            int[] finishedSubtasks,
            int faultEvery,
            long faultAfter,
            ComponentRuntime runtime) {
        if (runtime == ComponentRuntime.CHICORY) {
            java.util.List<Integer> finished = new java.util.ArrayList<>();
            for (int f : finishedSubtasks == null ? new int[0] : finishedSubtasks) {
                finished.add(f);
            }
            io.sinkcoordinator.jvm.Config c =
                    new io.sinkcoordinator.jvm.Config(
                            parallelism,
                            config.commitUser(),
                            config.checkpointing(),
                            config.finalCommitOnEndInput()
                                    ? io.sinkcoordinator.jvm.FinalCommitMode.ON_END_INPUT
                                    : io.sinkcoordinator.jvm.FinalCommitMode.ON_CHECKPOINT,
                            config.forceCreateSnapshot(),
                            config.savepointAutoTag(),
                            Chicory.optional(config.tagTimeRetainedMs()),
                            config.recoveryContinue()
                                    ? io.sinkcoordinator.jvm.RecoveryMode.CONTINUE
                                    : io.sinkcoordinator.jvm.RecoveryMode.RESTART);
            io.sinkcoordinator.jvm.RestorePoint restore =
                    restoreCheckpoint < 0
                            ? null
                            : new io.sinkcoordinator.jvm.RestorePoint(restoreCheckpoint, state, finished);
            this.storage = log.open(ComponentRuntime.CHICORY, true);
            try {
                this.jvm =
                        new io.sinkcoordinator.jvm.Coordinator(
                                c,
                                Chicory.drilled(storage, faultEvery, faultAfter),
                                io.sinkcoordinator.jvm.Clock.system(),
                                restore,
                                Chicory.runtime());
            } catch (io.sinkcoordinator.jvm.CoordinatorException e) {
                TableLocation.close(storage);
                throw Chicory.error(e);
            }
            return;
        }
        this.handle =
                Native.coordinatorNew(
                        log.url(),
                        log.optionArray(),
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

    /** A call on the Chicory instance: its errors as this package's {@link ComponentException}. */
    private <T> T chicory(Chicory.Call<io.sinkcoordinator.jvm.Coordinator, T> call) {
        return Chicory.call(jvm, closed, "coordinator", call);
    }

    /**
     * Chooses the table format (WIT {@code set-table-format}, component 0.2.5 on): only while
     * {@code created}, i.e. before {@link #start}. The coordinator's storage is then that table's
     * root ({@code schema/schema-0} in it for {@link TableFormat#PAIMON}). Host configuration, not
     * state: a restored instance is given its format again.
     */
    public synchronized void setTableFormat(TableFormat format) {
        if (jvm != null) {
            Chicory.run(jvm, closed, "coordinator",
                    c -> c.setTableFormat(io.sinkcoordinator.jvm.TableFormat.valueOf(format.name())));
            return;
        }
        Native.coordinatorSetTableFormat(live(), format.witName());
    }

    public synchronized Outcome start() {
        if (jvm != null) {
            return Chicory.outcome(chicory(c -> c.start()));
        }
        return Native.coordinatorStart(live());
    }

    public synchronized Outcome event(int subtask, int attempt, Entry entry) {
        if (jvm != null) {
            return Chicory.outcome(chicory(c -> c.event(subtask, attempt, Chicory.toJvm(entry))));
        }
        return Native.coordinatorEvent(live(), subtask, attempt, entry);
    }

    /**
     * Event i is {@code (subtasks[i], attempts[i], entries[i])}, all in one
     * crossing; an error comes back inside the result (see {@link BatchOutcome}).
     */
    public synchronized BatchOutcome events(int[] subtasks, int[] attempts, Entry[] entries) {
        if (jvm != null) {
            if (subtasks.length != entries.length || attempts.length != entries.length) {
                throw new IllegalArgumentException(
                        "a batch needs as many subtasks and attempts as entries");
            }
            java.util.List<io.sinkcoordinator.jvm.WriterEvent> batch =
                    new java.util.ArrayList<>(entries.length);
            for (int i = 0; i < entries.length; i++) {
                batch.add(new io.sinkcoordinator.jvm.WriterEvent(
                        subtasks[i], attempts[i], Chicory.toJvm(entries[i])));
            }
            if (closed) {
                throw new IllegalStateException("the coordinator was closed");
            }
            try {
                return new BatchOutcome(entries.length, Chicory.outcome(jvm.events(batch)), null);
            } catch (io.sinkcoordinator.jvm.CoordinatorException e) {
                if (e.applied().isEmpty() || e.outcome().isEmpty()) {
                    throw Chicory.error(e); // a trap: no batch result to return
                }
                return new BatchOutcome(
                        e.applied().getAsInt(), Chicory.outcome(e.outcome().get()), Chicory.error(e));
            }
        }
        if (subtasks.length != entries.length || attempts.length != entries.length) {
            throw new IllegalArgumentException(
                    "a batch needs as many subtasks and attempts as entries");
        }
        PackedBatch b = PackedBatch.of(entries, blocks);
        blocks = b.blocks; // reused by the next batch (the calls are serialized)
        return Native.coordinatorEvents(
                live(), subtasks, attempts, b.checkpoints, b.watermarks, b.flags, b.blocks, b.size,
                b.ends);
    }

    public synchronized Outcome restored(
            int subtask,
            int attempt,
            long checkpoint,
            Entry[] entries) {
        if (jvm != null) {
            java.util.List<io.sinkcoordinator.jvm.Entry> list = new java.util.ArrayList<>();
            for (Entry e : entries) {
                list.add(Chicory.toJvm(e));
            }
            return Chicory.outcome(chicory(c -> c.restored(subtask, attempt, checkpoint, list)));
        }
        return Native.coordinatorRestored(live(), subtask, attempt, checkpoint, entries);
    }

    /** {@code checkpoint} = -1 when the subtask restarts from scratch. */
    public synchronized Outcome subtaskReset(int subtask, long checkpoint) {
        if (jvm != null) {
            return Chicory.outcome(chicory(c -> c.subtaskReset(subtask, Chicory.optional(checkpoint))));
        }
        return Native.coordinatorSubtaskReset(live(), subtask, checkpoint);
    }

    public synchronized byte[] checkpoint(long checkpoint) {
        if (jvm != null) {
            return chicory(c -> c.checkpoint(checkpoint));
        }
        return Native.coordinatorCheckpoint(live(), checkpoint);
    }

    public synchronized Outcome checkpointComplete(long checkpoint) {
        if (jvm != null) {
            return Chicory.outcome(chicory(c -> c.checkpointComplete(checkpoint)));
        }
        return Native.coordinatorCheckpointComplete(live(), checkpoint);
    }

    public synchronized Outcome checkpointAborted(long checkpoint) {
        if (jvm != null) {
            return Chicory.outcome(chicory(c -> c.checkpointAborted(checkpoint)));
        }
        return Native.coordinatorCheckpointAborted(live(), checkpoint);
    }

    public synchronized String state() {
        if (jvm != null) {
            return chicory(c -> c.state()).witName();
        }
        return Native.coordinatorState(live());
    }

    /** Committed-up-to (SEMANTICS 5.5), -1 for none. */
    public synchronized long committedUpTo() {
        if (jvm != null) {
            return chicory(c -> c.committedUpTo()).orElse(-1);
        }
        return Native.coordinatorCommittedUpTo(live());
    }

    /** Closes the instance (component {@code close}) and frees it. Idempotent. */
    @Override
    public synchronized void close() {
        if (jvm != null) {
            if (!closed) {
                closed = true;
                try {
                    jvm.close();
                } catch (io.sinkcoordinator.jvm.CoordinatorException e) {
                    throw Chicory.error(e);
                } finally {
                    TableLocation.close(storage);
                }
            }
            return;
        }
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
