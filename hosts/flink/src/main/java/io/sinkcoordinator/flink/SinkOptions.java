package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.CoordinatorConfig;
import java.io.Serializable;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Objects;

/**
 * Where a sink writes and how its coordinator behaves: the table location
 * (a local directory: {@code log/} holds the snapshot log and tags written
 * by the component, {@code data/} the record files of the writers), the
 * commit user and the SEMANTICS options, plus the host's retry budget for
 * {@code storage} errors.
 */
public final class SinkOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    /** How often a call that failed on storage is repeated before the job fails. */
    public static final int DEFAULT_STORAGE_ATTEMPTS = 5;

    private final String table;
    private final CoordinatorConfig config;
    private final int storageAttempts;
    private final int faultEvery;
    private final long faultAfter;
    /** Not final: set by {@link #withRuntime} on a copy, so the other copies keep it as is. */
    private ComponentRuntime runtime = defaultRuntime();

    private SinkOptions(String table, CoordinatorConfig config, int storageAttempts) {
        this(table, config, storageAttempts, 0, -1);
    }

    private SinkOptions(
            String table,
            CoordinatorConfig config,
            int storageAttempts,
            int faultEvery,
            long faultAfter) {
        this.table = Objects.requireNonNull(table, "table");
        this.config = Objects.requireNonNull(config, "config");
        if (storageAttempts < 1) {
            throw new IllegalArgumentException("storageAttempts must be at least 1");
        }
        this.storageAttempts = storageAttempts;
        if (faultEvery < 0 || faultAfter < -1) {
            throw new IllegalArgumentException("fault drill: every >= 0, after >= -1");
        }
        this.faultEvery = faultEvery;
        this.faultAfter = faultAfter;
    }

    /** A table at {@code table}, committed as {@code commitUser}, with the default options. */
    public static SinkOptions of(String table, String commitUser) {
        return new SinkOptions(
                Paths.get(table).toAbsolutePath().toString(),
                CoordinatorConfig.of(commitUser),
                DEFAULT_STORAGE_ATTEMPTS);
    }

    /** The same sink writing to another table location. */
    public SinkOptions withTable(String table) {
        return new SinkOptions(
                Paths.get(table).toAbsolutePath().toString(),
                config,
                storageAttempts,
                faultEvery,
                faultAfter).runtimeOf(this);
    }

    /**
     * The runtime of {@link #of}: {@code -Dsinkcoord.runtime=chicory} or {@code =jni} (the JVM
     * property of the job's client), else {@link ComponentRuntime#JNI}.
     */
    static ComponentRuntime defaultRuntime() {
        String v = System.getProperty("sinkcoord.runtime", "jni");
        return v.equalsIgnoreCase("chicory") ? ComponentRuntime.CHICORY : ComponentRuntime.JNI;
    }

    private SinkOptions runtimeOf(SinkOptions from) {
        this.runtime = from.runtime;
        return this;
    }

    /**
     * The same sink on another runtime: {@link ComponentRuntime#CHICORY} runs the component in
     * pure Java (no native library on any JobManager or TaskManager), {@link
     * ComponentRuntime#JNI} through the JNI library (faster; needs the library).
     */
    public SinkOptions withRuntime(ComponentRuntime runtime) {
        SinkOptions copy = new SinkOptions(table, config, storageAttempts, faultEvery, faultAfter);
        copy.runtime = java.util.Objects.requireNonNull(runtime, "runtime");
        return copy;
    }

    /** Where the component runs (the coordinator, the writers' helpers, table reads). */
    public ComponentRuntime runtime() {
        return runtime;
    }

    /** The same sink with other coordinator options (the commit user included). */
    public SinkOptions withConfig(CoordinatorConfig config) {
        return new SinkOptions(table, config, storageAttempts, faultEvery, faultAfter).runtimeOf(this);
    }

    /** How often a call that failed on {@code storage} is made in all before the job fails. */
    public SinkOptions withStorageAttempts(int attempts) {
        return new SinkOptions(table, config, attempts, faultEvery, faultAfter).runtimeOf(this);
    }

    /**
     * A storage fault drill (tests, outage rehearsals): every coordinator
     * instance fails every {@code every}-th write to the table log (0: none),
     * and the job's first instance fails every write after its first {@code
     * after} (-1: none), so that its repeats run out, the job fails over and
     * the next instance recovers.
     */
    public SinkOptions withStorageFaultDrill(int every, long after) {
        return new SinkOptions(table, config, storageAttempts, every, after).runtimeOf(this);
    }

    /** The drill's period (0: none). */
    public int faultEvery() {
        return faultEvery;
    }

    /** The drill's outage start for the first instance (-1: none). */
    public long faultAfter() {
        return faultAfter;
    }

    public String table() {
        return table;
    }

    public CoordinatorConfig config() {
        return config;
    }

    public int storageAttempts() {
        return storageAttempts;
    }

    /** The component's storage: snapshots and tags. */
    public Path logDir() {
        return logDir(Paths.get(table));
    }

    /** The writers' record files. */
    public Path dataDir() {
        return Paths.get(table).resolve("data");
    }

    static Path logDir(Path table) {
        return table.resolve("log");
    }
}
