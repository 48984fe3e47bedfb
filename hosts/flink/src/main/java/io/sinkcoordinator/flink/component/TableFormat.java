package io.sinkcoordinator.flink.component;

/**
 * How a coordinator writes its table (WIT {@code table-format}, component 0.2.5 on). Host
 * configuration, not part of the coordinator's state: every instance of a sink, restored ones
 * included, is given the same format.
 */
public enum TableFormat {
    /** This project's snapshot log ({@code <table>/log}) over the writers' record files. */
    NATIVE,
    /**
     * An Apache Paimon append table (docs/paimon.md): every committable is one data file's
     * metadata (encoding {@code PCM} v1), and {@code schema/schema-0} must exist.
     */
    PAIMON;

    /** The WIT name ({@code native}, {@code paimon}). */
    public String witName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
