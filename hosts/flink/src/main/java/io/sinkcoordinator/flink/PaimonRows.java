package io.sinkcoordinator.flink;

import java.io.Serializable;

/**
 * How a record becomes a row of a Paimon table: its column values, in the order of the table's
 * {@link PaimonSchema} columns, as Java values of the column types ({@code BOOLEAN} Boolean,
 * {@code INT} Integer, {@code BIGINT} Long, {@code FLOAT} Float, {@code DOUBLE} Double, {@code
 * STRING} String, {@code BYTES} byte[]; null for SQL null, in nullable columns only). Shipped to
 * the writers with the job, so it must be serializable (a lambda of this type is).
 *
 * <pre>{@code
 * PaimonRows<Event> rows = e -> new Object[] {e.id(), e.name()};
 * }</pre>
 */
@FunctionalInterface
public interface PaimonRows<T> extends Serializable {
    Object[] row(T record);
}
