package io.sinkcoordinator.flink.component;

import io.sinkcoordinator.jvm.BackendException;

import java.io.File;

/**
 * The JNI functions of the native library {@code libsinkcoord_flink} (crate
 * {@code hosts/flink/native}). Handles are opaque {@code long}s owned by the
 * wrapper classes of this package; nothing else should call these.
 *
 * <p>The library is found, in order, at the path of the system property
 * {@code sinkcoord.native.library}, of the environment variable
 * {@code SINKCOORD_NATIVE_LIBRARY}, in the jar ({@link NativeBundle}: the Maven
 * build bundles the library of its platform and it is extracted at load, as
 * sqlite-jdbc and netty do), or as {@code sinkcoord_flink} on
 * {@code java.library.path}. It is loaded once per class loader; the
 * component inside is compiled once per process.
 */
final class Native {
    static {
        String path = System.getProperty("sinkcoord.native.library");
        if (path == null || path.isEmpty()) {
            path = System.getenv("SINKCOORD_NATIVE_LIBRARY");
        }
        if (path != null && !path.isEmpty()) {
            System.load(new File(path).getAbsolutePath());
        } else {
            File bundled = NativeBundle.extract();
            if (bundled != null) {
                System.load(bundled.getAbsolutePath());
            } else {
                System.loadLibrary("sinkcoord_flink");
            }
        }
    }

    private Native() {}

    /** {@code location} and {@code options}: see {@link TableLocation}. */
    static native long coordinatorNew(
            String location,
            String[] options,
            int parallelism,
            String commitUser,
            boolean checkpointing,
            boolean finalOnEndInput,
            boolean forceCreateSnapshot,
            boolean savepointAutoTag,
            long tagRetainedMs,
            boolean recoveryContinue,
            long restoreCheckpoint,
            byte[] state,
            int[] finishedSubtasks,
            int faultEvery,
            long faultAfter);

    /** WIT {@code set-table-format}: {@code format} is a {@link TableFormat#witName()}. */
    static native void coordinatorSetTableFormat(long handle, String format);

    static native Outcome coordinatorStart(long handle);

    static native Outcome coordinatorEvent(long handle, int subtask, int attempt, Entry entry);

    /**
     * Event i: {@code (subtasks[i], attempts[i])}, checkpoint {@code checkpoints[i]}, the
     * watermark {@code watermarks[i]} if bit 0 of {@code flags[i]} is set, the savepoint flag
     * bit 1, its committables {@code blocks[ends[i-1]..ends[i]]} as one packed block (WIT
     * {@code packed-event}; {@link ComponentCoordinator#events} packs them). {@code blocks} is a
     * direct buffer whose first {@code size} bytes are the blocks, read in place.
     */
    static native BatchOutcome coordinatorEvents(
            long handle,
            int[] subtasks,
            int[] attempts,
            long[] checkpoints,
            long[] watermarks,
            byte[] flags,
            java.nio.ByteBuffer blocks,
            int size,
            int[] ends);

    static native Outcome coordinatorRestored(
            long handle, int subtask, int attempt, long checkpoint, Entry[] entries);

    static native Outcome coordinatorSubtaskReset(long handle, int subtask, long checkpoint);

    static native byte[] coordinatorCheckpoint(long handle, long checkpoint);

    static native Outcome coordinatorCheckpointComplete(long handle, long checkpoint);

    static native Outcome coordinatorCheckpointAborted(long handle, long checkpoint);

    static native Outcome coordinatorClose(long handle);

    static native String coordinatorState(long handle);

    static native long coordinatorCommittedUpTo(long handle);

    static native void coordinatorFree(long handle);

    static native long writerNew(int subtask);

    static native Entry writerReport(
            long handle,
            long checkpoint,
            byte[][] committables,
            boolean hasWatermark,
            long watermark,
            boolean savepoint);

    static native Entry writerEndInput(
            long handle, byte[][] committables, boolean hasWatermark, long watermark);

    static native void writerCommitted(long handle, long upTo);

    static native void writerCheckpointAborted(long handle, long checkpoint);

    static native byte[] writerState(long handle);

    static native Entry[] writerRestore(long handle, byte[] state, long checkpoint);

    static native void writerFree(long handle);

    static native long tableOpen(String location, String[] options);

    static native Snapshot[] tableListSnapshots(long handle);

    static native Tag[] tableListTags(long handle);

    static native void tableFree(long handle);

    /** A table's storage by URL ({@link NativeStorage}); its calls throw {@link BackendException}. */
    static native long storageOpen(String location, String[] options, boolean create);

    static native byte[] storageGet(long handle, String key) throws BackendException;

    static native void storagePut(long handle, String key, byte[] value) throws BackendException;

    static native boolean storagePutIfAbsent(long handle, String key, byte[] value)
            throws BackendException;

    static native void storageDelete(long handle, String key) throws BackendException;

    static native String[] storageList(long handle, String prefix) throws BackendException;

    static native void storageFree(long handle);
}
