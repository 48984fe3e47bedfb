package io.sinkcoordinator.flink.component;

/** A named, durable pointer to a snapshot (SEMANTICS 1). */
public final class Tag {
    public final String name;
    public final long snapshotId;
    public final long identifier;
    public final long createTimeMs;
    public final boolean hasExpireTime;
    public final long expireTimeMs;

    public Tag(
            String name,
            long snapshotId,
            long identifier,
            long createTimeMs,
            boolean hasExpireTime,
            long expireTimeMs) {
        this.name = name;
        this.snapshotId = snapshotId;
        this.identifier = identifier;
        this.createTimeMs = createTimeMs;
        this.hasExpireTime = hasExpireTime;
        this.expireTimeMs = expireTimeMs;
    }

    @Override
    public String toString() {
        return "Tag{" + name + " -> snapshot " + snapshotId + ", identifier " + identifier + "}";
    }
}
