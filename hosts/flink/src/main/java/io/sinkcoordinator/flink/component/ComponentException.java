package io.sinkcoordinator.flink.component;

/**
 * An error the component returned (SEMANTICS 8) or a guest trap. The kind
 * tells the host what to do: {@code declined} refuses one call and changes
 * nothing, {@code storage} may be retried by repeating the call, every other
 * kind ({@code illegal-state}, {@code invalid-event}, {@code invalid-config},
 * {@code corrupt-state}, {@code trap}) left the instance failed.
 */
public final class ComponentException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String kind;

    public ComponentException(String kind, String message) {
        super(kind + ": " + message);
        this.kind = kind;
    }

    public String kind() {
        return kind;
    }

    public boolean isDeclined() {
        return "declined".equals(kind);
    }

    public boolean isStorage() {
        return "storage".equals(kind);
    }

    /** The instance is failed: the host discards it and fails over. */
    public boolean isFatal() {
        return !isDeclined() && !isStorage();
    }
}
