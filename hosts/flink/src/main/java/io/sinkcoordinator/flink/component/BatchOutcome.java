package io.sinkcoordinator.flink.component;

/**
 * What a batch of writer events did ({@code coordinator.events}, WIT 0.2.1):
 * the events before {@link #applied} were applied, in order, exactly as one
 * {@code event} call each; {@link #outcome} is their merged outcome. With an
 * {@link #error}, event {@link #applied} failed and the later ones were not
 * looked at: after {@code declined} or {@code storage} the instance stays
 * usable and the caller resends from there (a {@code storage} error accepted
 * the failing event's input, so repeating it is safe); a fatal error failed
 * the instance.
 */
public final class BatchOutcome {
    /** Events applied: all of them, or the failing event's index. */
    public final int applied;
    /** The applied events' outcomes, merged. */
    public final Outcome outcome;
    /** The failing event's error, or null. */
    public final ComponentException error;

    public BatchOutcome(int applied, Outcome outcome, ComponentException error) {
        this.applied = applied;
        this.outcome = outcome;
        this.error = error;
    }
}
