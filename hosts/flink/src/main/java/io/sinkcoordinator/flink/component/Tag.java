package io.sinkcoordinator.flink.component;

/**
 * A named, durable pointer to a snapshot (SEMANTICS 1). The native library builds it through
 * the canonical constructor ({@code TAG_CTOR} in hosts/flink/native/src/convert.rs): the
 * components keep that order and those types.
 */
public record Tag(
        String name,
        long snapshotId,
        long identifier,
        long createTimeMs,
        boolean hasExpireTime,
        long expireTimeMs) {

    @Override
    public String toString() {
        return "Tag{" + name + " -> snapshot " + snapshotId + ", identifier " + identifier + "}";
    }
}
