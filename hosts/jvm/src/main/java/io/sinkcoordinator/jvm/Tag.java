package io.sinkcoordinator.jvm;

import java.util.OptionalLong;

/** A tag of the table (WIT {@code tag}): a savepoint's named snapshot. */
public record Tag(
    String name,
    long snapshotId,
    long identifier,
    long createTimeMs,
    OptionalLong expireTimeMs) {}
