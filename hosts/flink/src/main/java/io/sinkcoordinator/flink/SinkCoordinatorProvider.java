package io.sinkcoordinator.flink;

import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.RecreateOnResetOperatorCoordinator;

/**
 * Creates the sink's coordinator. Flink's {@link
 * RecreateOnResetOperatorCoordinator} replaces the instance at every global
 * failover and hands the new one the checkpoint to restore (SEMANTICS 6.2:
 * a new instance from the state bytes) before starting it.
 */
final class SinkCoordinatorProvider extends RecreateOnResetOperatorCoordinator.Provider {
    private static final long serialVersionUID = 1L;

    private final SinkOptions options;

    SinkCoordinatorProvider(OperatorID operatorId, SinkOptions options) {
        super(operatorId);
        this.options = options;
    }

    @Override
    protected OperatorCoordinator getCoordinator(OperatorCoordinator.Context context) {
        return new SinkCoordinator(context, options);
    }
}
