package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentWriter;
import io.sinkcoordinator.flink.component.Entry;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.apache.flink.runtime.operators.coordination.OperatorEventGateway;
import org.apache.flink.runtime.operators.coordination.OperatorEventHandler;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.OperatorSnapshotFutures;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * One writer subtask: appends records to a data file under the table (a
 * record file, or a Paimon data file: {@link WriterFiles}), and at every
 * checkpoint closes the file and reports it as the checkpoint's committable
 * through the component's writer helper (SEMANTICS
 * 11), which also keeps every entry the table may still lack in this
 * operator's state until the coordinator's committed-up-to covers it.
 *
 * <p>Flink callback → helper call: {@code initializeState} (restored) →
 * {@code restore}, then the restore event in {@code open}; {@code
 * snapshotState} → {@code report} (the savepoint flag from the checkpoint's
 * type, synchronous savepoints included) and {@code state}; {@code endInput}
 * → {@code end-input}; a {@code CommittedUpTo} event → {@code committed};
 * {@code notifyCheckpointAborted} → {@code checkpoint-aborted}.
 *
 * <p>An ended writer does not let its task finish on its final checkpoint's completion alone:
 * {@code notifyCheckpointComplete} of that checkpoint runs the task's mailbox until the
 * coordinator released it (a {@code Released} event, or committed-up-to END). Flink tells the
 * tasks of a completion before their coordinator, so without the wait a job could be FINISHED
 * before a failed final commit's failover (SinkCoordinator#release). Without checkpoints (batch,
 * or streaming with checkpointing off) no completion follows the end: {@code endInput} waits
 * instead, until the coordinator processed the END event (a {@code Released} event, or
 * committed-up-to END for the last writer, whose END made the final commit). The coordinator
 * processes events on a thread of its own, after Flink's call returned, so without the wait the
 * job could end FINISHED before its final commit ran. For the same reason a writer that has not
 * ended and whose task stops after a synchronous savepoint (stop-with-savepoint without drain)
 * waits in that savepoint's completion until the coordinator processed it ({@code
 * SavepointProcessed}): the savepoint's commit and tag are in the table when the job ends.
 */
public final class CoordinatedWriterOperator<T> extends AbstractStreamOperator<Void>
        implements OneInputStreamOperator<T, Void>, BoundedOneInput, OperatorEventHandler {
    private static final long serialVersionUID = 1L;
    private static final org.slf4j.Logger LOG =
            org.slf4j.LoggerFactory.getLogger(CoordinatedWriterOperator.class);

    /** The data files the records go to. */
    private final WriterFiles<T> files;
    /** Where the writer helper (WIT {@code writer}) runs: JNI or Chicory. */
    private final io.sinkcoordinator.flink.component.ComponentRuntime runtime;
    /** The job checkpoints (else no completion follows the end: endInput waits). */
    private final boolean checkpointing;
    private final transient OperatorEventGateway gateway;

    private transient ComponentWriter helper;
    private transient ListState<byte[]> helperState;
    private transient WriterFiles.File<T> current;
    /** The restore event to send in {@code open} (null when not restored). */
    private transient Events.Restored restoreEvent;
    /** The checkpoint being snapshotted is a savepoint (set just before snapshotState). */
    private transient boolean savepoint;
    private transient Long watermark;
    private transient int subtask;
    /** Ended (END sent, or restored with an END entry): it finishes only once released. */
    private transient boolean ended;
    /** The first checkpoint snapshotted after the end, its final checkpoint (-1: none yet). */
    private transient long finalCheckpoint;
    /** The highest completion the coordinator released it on (-1: none). */
    private transient long releasedAt;
    /** A {@code Released} event arrived (what endInput waits for without checkpoints). */
    private transient boolean releasedOnce;
    /** The synchronous savepoint snapshotted last, after which the task stops (-1: none). */
    private transient long stopSavepoint;
    /** The highest savepoint completion the coordinator processed (-1: none). */
    private transient long savepointProcessed;
    /** Committed-up-to END arrived: the final commit happened. */
    private transient boolean endCommitted;
    /** Inside the wait (a completion processed by the wait's mailbox loop must not nest). */
    private transient boolean waiting;

    CoordinatedWriterOperator(
            StreamOperatorParameters<Void> parameters,
            WriterFiles<T> files,
            io.sinkcoordinator.flink.component.ComponentRuntime runtime,
            boolean checkpointing,
            OperatorEventGateway gateway) {
        super(parameters);
        this.files = files;
        this.runtime = runtime;
        this.checkpointing = checkpointing;
        this.gateway = gateway;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        helper = new ComponentWriter(subtask, runtime);
        ended = false;
        finalCheckpoint = -1;
        releasedAt = -1;
        releasedOnce = false;
        stopSavepoint = -1;
        savepointProcessed = -1;
        endCommitted = false;
        waiting = false;
        helperState =
                context.getOperatorStateStore()
                        .getListState(
                                new ListStateDescriptor<>(
                                        "sink-coordinator-writer",
                                        BytePrimitiveArraySerializer.INSTANCE));
        LOG.debug("writer subtask {} attempt {}: restored={}",
                subtask, getRuntimeContext().getTaskInfo().getAttemptNumber(),
                        context.isRestored());
        if (context.isRestored()) {
            long checkpoint = context.getRestoredCheckpointId().getAsLong();
            List<byte[]> states = new ArrayList<>();
            helperState.get().forEach(states::add);
            if (states.size() > 1) {
                throw new IllegalStateException(
                        "writer subtask "
                                + subtask
                                + " restored "
                                + states.size()
                                + " helper states from checkpoint "
                                + checkpoint
                                + ": the sink cannot be rescaled");
            }
            // No state: Flink 2.3 marked this subtask finished in the restored
            // checkpoint yet runs its operators again (restored, stateless,
            // endInput once more). It announces the restore like any writer;
            // the core knows it finished (the coordinator passes the finished
            // subtasks at restore) and ignores its replays (SEMANTICS 6.2).
            Entry[] entries =
                    states.isEmpty() ? new Entry[0] : helper.restore(states.get(0), checkpoint);
            restoreEvent = new Events.Restored(checkpoint, entries);
            for (Entry e : entries) {
                ended |= e.isEnd();
            }
        }
    }

    @Override
    public void open() throws Exception {
        super.open();
        if (restoreEvent != null) {
            gateway.sendEventToCoordinator(restoreEvent);
            restoreEvent = null;
        }
    }

    @Override
    public void processElement(StreamRecord<T> element) throws Exception {
        if (current == null) {
            current = files.create(subtask);
        }
        current.write(element.getValue());
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        // The end-of-input watermark (MAX) is not an event time.
        if (mark.getTimestamp() != Long.MAX_VALUE) {
            watermark = mark.getTimestamp();
        }
        super.processWatermark(mark);
    }

    /** The committables of the records written since the last report (0 or 1 file). */
    private byte[][] finishFile() throws Exception {
        if (current == null) {
            return new byte[0][];
        }
        WriterFiles.File<T> file = current;
        current = null;
        if (file.records() == 0) {
            file.discard();
            return new byte[0][];
        }
        return new byte[][] {file.finish()};
    }

    @Override
    public OperatorSnapshotFutures snapshotState(
            long checkpointId,
            long timestamp,
            CheckpointOptions checkpointOptions,
            CheckpointStreamFactory factory)
            throws Exception {
        // The only place the checkpoint's type is visible to an operator.
        savepoint = checkpointOptions.getCheckpointType().isSavepoint();
        if (checkpointOptions.getCheckpointType() instanceof SavepointType
                && ((SavepointType) checkpointOptions.getCheckpointType()).isSynchronous()) {
            stopSavepoint = checkpointId; // the task stops once it completed
        }
        return super.snapshotState(checkpointId, timestamp, checkpointOptions, factory);
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        long checkpoint = context.getCheckpointId();
        Entry entry = helper.report(checkpoint, finishFile(), watermark, savepoint);
        helperState.update(Collections.singletonList(helper.state()));
        gateway.sendEventToCoordinator(new Events.Committable(entry));
        if (ended && finalCheckpoint < 0) {
            finalCheckpoint = checkpoint;
        }
    }

    @Override
    public void endInput() throws Exception {
        LOG.debug("writer subtask {}: endInput", subtask);
        Entry entry = helper.endInput(finishFile(), watermark);
        gateway.sendEventToCoordinator(new Events.Committable(entry));
        ended = true;
        if (!checkpointing) {
            // no final checkpoint's completion will come to wait in: wait for the END's processing
            waitUntil(() -> endCommitted || releasedOnce, "its END event was processed");
        }
    }

    /**
     * After the end, the completion of the final checkpoint (or a later one) waits, running the
     * task's mailbox (operator events, further checkpoints), until the coordinator releases the
     * writer. A cancel (the failover a failed final commit asks for) interrupts the wait.
     */
    @Override
    public void notifyCheckpointComplete(long checkpointId) throws Exception {
        super.notifyCheckpointComplete(checkpointId);
        if (!ended && checkpointId == stopSavepoint && !waiting) {
            waitUntil(() -> savepointProcessed >= checkpointId || endCommitted,
                    "savepoint " + checkpointId + " completed (the task stops)");
            return;
        }
        if (!ended || finalCheckpoint < 0 || checkpointId < finalCheckpoint || waiting) {
            return;
        }
        waitUntil(this::released, "checkpoint " + checkpointId + " completed");
    }

    /** Runs the task's mailbox until {@code done} (a cancel interrupts it). */
    private void waitUntil(java.util.function.BooleanSupplier done, String after)
            throws InterruptedException {
        waiting = true;
        try {
            org.apache.flink.api.common.operators.MailboxExecutor mailbox =
                    getContainingTask()
                            .getMailboxExecutorFactory()
                            .createExecutor(
                                    org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox
                                            .MIN_PRIORITY);
            if (!done.getAsBoolean()) {
                LOG.debug("writer subtask {}: {}, waiting for the release", subtask, after);
            }
            while (!done.getAsBoolean()) {
                mailbox.yield();
            }
        } finally {
            waiting = false;
        }
    }

    private boolean released() {
        return endCommitted || releasedAt >= finalCheckpoint;
    }

    @Override
    public void handleOperatorEvent(OperatorEvent event) {
        if (event instanceof Events.CommittedUpTo) {
            long upTo = ((Events.CommittedUpTo) event).upTo();
            helper.committed(upTo);
            endCommitted |= upTo == Entry.END;
        } else if (event instanceof Events.Released) {
            releasedAt = Math.max(releasedAt, ((Events.Released) event).completed());
            releasedOnce = true;
        } else if (event instanceof Events.SavepointProcessed) {
            savepointProcessed =
                    Math.max(savepointProcessed, ((Events.SavepointProcessed) event).completed());
        } else {
            throw new IllegalArgumentException(
                    "writer subtask " + subtask + ": unexpected operator event " + event);
        }
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) throws Exception {
        super.notifyCheckpointAborted(checkpointId);
        if (helper != null) {
            helper.checkpointAborted(checkpointId);
        }
    }

    @Override
    public void close() throws Exception {
        try {
            if (current != null) {
                current.discard();
                current = null;
            }
            if (helper != null) {
                helper.close();
                helper = null;
            }
            files.close();
        } finally {
            super.close();
        }
    }
}
