package io.sinkcoordinator.flink.component;

import io.sinkcoordinator.jvm.BackendException;
import io.sinkcoordinator.jvm.Storage;
import java.util.Arrays;
import java.util.List;

/**
 * A table's storage opened by the JNI library (the host crate's storage by URL: a local
 * directory, {@code s3://}, {@code gs://}, {@code az://}), so that the JNI runtime's writers and
 * readers reach every store its coordinator reaches, with the same settings. Failures are {@link
 * BackendException}s of the store's kind. Thread-safe (the handle is locked per call).
 */
final class NativeStorage implements Storage, AutoCloseable {
    private long handle;

    NativeStorage(TableLocation location, boolean create) {
        this.handle = Native.storageOpen(location.url(), location.optionArray(), create);
    }

    private synchronized long live() {
        if (handle == 0) {
            throw new IllegalStateException("the storage was closed");
        }
        return handle;
    }

    @Override
    public byte[] get(String key) throws BackendException {
        return Native.storageGet(live(), key);
    }

    @Override
    public boolean putIfAbsent(String key, byte[] value) throws BackendException {
        return Native.storagePutIfAbsent(live(), key, value);
    }

    @Override
    public void put(String key, byte[] value) throws BackendException {
        Native.storagePut(live(), key, value);
    }

    @Override
    public void delete(String key) throws BackendException {
        Native.storageDelete(live(), key);
    }

    @Override
    public List<String> list(String prefix) throws BackendException {
        return Arrays.asList(Native.storageList(live(), prefix));
    }

    @Override
    public synchronized void close() {
        if (handle != 0) {
            Native.storageFree(handle);
            handle = 0;
        }
    }
}
