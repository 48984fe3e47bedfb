package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.CoordinatorConfig;
import io.sinkcoordinator.flink.component.TableFormat;
import io.sinkcoordinator.flink.component.TableLocation;
import java.io.Serializable;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Objects;

/**
 * Where a sink writes and how its coordinator behaves: the table location
 * (a local directory or an object store, see {@link TableLocation}: natively,
 * {@code log/} holds the snapshot log and tags written by the component,
 * {@code data/} the record files of the writers; a Paimon table, {@link
 * #withPaimon}, is Paimon's own layout), the commit user
 * and the SEMANTICS options, plus the host's retry budget for {@code storage}
 * errors. Immutable; start from {@link #of}, the {@code with*} methods return
 * changed copies.
 *
 * @param table the table's location: a local directory (made absolute) or an object store's URL
 * @param config the coordinator's options (the commit user included)
 * @param storageAttempts how often a call that failed on {@code storage} is made in all before
 *     the job fails
 * @param faultEvery the storage fault drill's period (0: none), see {@link
 *     #withStorageFaultDrill}
 * @param faultAfter the drill's outage start for the first instance (-1: none)
 * @param runtime where the component runs (the coordinator, the writers' helpers, table reads)
 * @param paimon the row type of the Paimon table the sink writes; null: the native log
 * @param storageOptions an object store's options ({@link TableLocation}), sorted by key
 */
public record SinkOptions(
        String table,
        CoordinatorConfig config,
        int storageAttempts,
        int faultEvery,
        long faultAfter,
        ComponentRuntime runtime,
        PaimonSchema paimon,
        java.util.Map<String, String> storageOptions)
        implements Serializable {

    /** How often a call that failed on storage is repeated before the job fails. */
    public static final int DEFAULT_STORAGE_ATTEMPTS = 5;

    public SinkOptions {
        TableLocation location = new TableLocation(Objects.requireNonNull(table, "table"),
                Objects.requireNonNull(storageOptions, "storageOptions"));
        table = location.url();
        storageOptions = location.options();
        Objects.requireNonNull(config, "config");
        if (storageAttempts < 1) {
            throw new IllegalArgumentException("storageAttempts must be at least 1");
        }
        if (faultEvery < 0 || faultAfter < -1) {
            throw new IllegalArgumentException("fault drill: every >= 0, after >= -1");
        }
        Objects.requireNonNull(runtime, "runtime");
    }

    /** Options of a sink on the native log (the constructor before Paimon tables). */
    public SinkOptions(
            String table,
            CoordinatorConfig config,
            int storageAttempts,
            int faultEvery,
            long faultAfter,
            ComponentRuntime runtime) {
        this(table, config, storageAttempts, faultEvery, faultAfter, runtime, null, java.util.Map.of());
    }

    /**
     * A table at {@code table}, committed as {@code commitUser}, with the default options (no
     * fault drill; the runtime {@code -Dsinkcoord.runtime} names, else {@link
     * ComponentRuntime#JNI}).
     */
    public static SinkOptions of(String table, String commitUser) {
        return new SinkOptions(
                table, CoordinatorConfig.of(commitUser), DEFAULT_STORAGE_ATTEMPTS, 0, -1,
                defaultRuntime(), null, java.util.Map.of());
    }

    /**
     * The same sink with the object store option {@code key} set to {@code value} ({@code
     * object_store}'s keys, e.g. {@code aws_endpoint}, {@code aws_region}, {@code aws_allow_http};
     * see {@link TableLocation}). Prefer the processes' environment ({@code AWS_*}) for
     * credentials: options travel inside the job graph.
     */
    public SinkOptions withStorageOption(String key, String value) {
        java.util.Map<String, String> options = new java.util.TreeMap<>(storageOptions);
        options.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
        return new SinkOptions(table, config, storageAttempts, faultEvery, faultAfter, runtime, paimon, options);
    }

    /** The table's location with its store options. */
    public TableLocation location() {
        return new TableLocation(table, storageOptions);
    }

    /**
     * The component's storage (snapshots and tags): {@code <table>/log} natively, the table
     * itself on Paimon.
     */
    public TableLocation log() {
        return paimon == null ? location().resolve("log") : location();
    }

    /** The same sink writing to another table location. */
    public SinkOptions withTable(String table) {
        return new SinkOptions(table, config, storageAttempts, faultEvery, faultAfter, runtime, paimon, storageOptions);
    }

    /**
     * The runtime of {@link #of}: {@code -Dsinkcoord.runtime=chicory} or {@code =jni} (the JVM
     * property of the job's client), else {@link ComponentRuntime#JNI}.
     */
    static ComponentRuntime defaultRuntime() {
        String v = System.getProperty("sinkcoord.runtime", "jni");
        return v.equalsIgnoreCase("chicory") ? ComponentRuntime.CHICORY : ComponentRuntime.JNI;
    }

    /**
     * The same sink on another runtime: {@link ComponentRuntime#CHICORY} runs the component in
     * pure Java (no native library on any JobManager or TaskManager), {@link
     * ComponentRuntime#JNI} through the JNI library (faster; needs the library).
     */
    public SinkOptions withRuntime(ComponentRuntime runtime) {
        return new SinkOptions(table, config, storageAttempts, faultEvery, faultAfter, runtime, paimon, storageOptions);
    }

    /** The same sink with other coordinator options (the commit user included). */
    public SinkOptions withConfig(CoordinatorConfig config) {
        return new SinkOptions(table, config, storageAttempts, faultEvery, faultAfter, runtime, paimon, storageOptions);
    }

    /** How often a call that failed on {@code storage} is made in all before the job fails. */
    public SinkOptions withStorageAttempts(int attempts) {
        return new SinkOptions(table, config, attempts, faultEvery, faultAfter, runtime, paimon, storageOptions);
    }

    /**
     * A storage fault drill (tests, outage rehearsals): every coordinator
     * instance fails every {@code every}-th write to the table log (0: none),
     * and the job's first instance fails every write after its first {@code
     * after} (-1: none), so that its repeats run out, the job fails over and
     * the next instance recovers.
     */
    public SinkOptions withStorageFaultDrill(int every, long after) {
        return new SinkOptions(table, config, storageAttempts, every, after, runtime, paimon, storageOptions);
    }

    /**
     * The same sink writing an Apache Paimon append table of the row type {@code schema} at
     * {@link #table} ({@code <warehouse>/<db>.db/<name>}): the coordinator commits Paimon
     * snapshots, the writers write Avro data files (docs/hosts/flink.md, "Paimon tables").
     */
    public SinkOptions withPaimon(PaimonSchema schema) {
        Objects.requireNonNull(schema, "schema");
        return new SinkOptions(table, config, storageAttempts, faultEvery, faultAfter, runtime, schema,
                storageOptions);
    }

    /** {@link TableFormat#PAIMON} when {@link #paimon} is set, else {@link TableFormat#NATIVE}. */
    public TableFormat tableFormat() {
        return paimon == null ? TableFormat.NATIVE : TableFormat.PAIMON;
    }

    /** {@link #log} of a local table, as a directory. */
    public Path logDir() {
        return paimon == null ? logDir(Paths.get(table)) : Paths.get(table);
    }

    /** The writers' record files of a local table. */
    public Path dataDir() {
        return Paths.get(table).resolve("data");
    }

    static Path logDir(Path table) {
        return table.resolve("log");
    }
}
