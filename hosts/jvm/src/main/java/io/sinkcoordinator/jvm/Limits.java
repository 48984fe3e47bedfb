package io.sinkcoordinator.jvm;

/**
 * Size limits in bytes (WIT {@code limits}), each 1 ..= 2^32; see {@link Coordinator#setLimits}.
 */
public record Limits(long maxCommittableBytes, long maxEventBytes, long maxSnapshotBytes) {}
