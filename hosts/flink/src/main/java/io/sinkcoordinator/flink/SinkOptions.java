package io.sinkcoordinator.flink;

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

    private SinkOptions(String table, CoordinatorConfig config, int storageAttempts) {
        this.table = Objects.requireNonNull(table, "table");
        this.config = Objects.requireNonNull(config, "config");
        if (storageAttempts < 1) {
            throw new IllegalArgumentException("storageAttempts must be at least 1");
        }
        this.storageAttempts = storageAttempts;
    }

    /** A table at {@code table}, committed as {@code commitUser}, with the default options. */
    public static SinkOptions of(String table, String commitUser) {
        return new SinkOptions(
                Paths.get(table).toAbsolutePath().toString(),
                CoordinatorConfig.of(commitUser),
                DEFAULT_STORAGE_ATTEMPTS);
    }

    /** The same sink with other coordinator options (the commit user included). */
    public SinkOptions withConfig(CoordinatorConfig config) {
        return new SinkOptions(table, config, storageAttempts);
    }

    public SinkOptions withStorageAttempts(int attempts) {
        return new SinkOptions(table, config, attempts);
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
