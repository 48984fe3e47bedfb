package io.sinkcoordinator.flink.component;

/**
 * Which engine runs the component in this JVM (a {@code SinkOptions} setting, the same Java
 * interface either way).
 */
public enum ComponentRuntime {
    /**
     * The JNI library {@code libsinkcoord_flink} (the Rust host on wasmtime): the fastest, but a
     * platform-specific native library on every JobManager and TaskManager.
     */
    JNI,
    /**
     * The core module on Chicory, a WebAssembly runtime in pure Java (the {@code
     * sink-coordinator-jvm} binding, compiled to JVM bytecode at build time): no native code.
     */
    CHICORY
}
