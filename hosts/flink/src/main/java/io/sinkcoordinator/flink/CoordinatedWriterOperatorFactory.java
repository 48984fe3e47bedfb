package io.sinkcoordinator.flink;

import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEventDispatcher;
import org.apache.flink.runtime.operators.coordination.OperatorEventGateway;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.CoordinatedOperatorFactory;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;

/** Creates the writer operators and names their coordinator (one per sink). */
final class CoordinatedWriterOperatorFactory<T> extends AbstractStreamOperatorFactory<Void>
        implements CoordinatedOperatorFactory<Void>, OneInputStreamOperatorFactory<T, Void> {
    private static final long serialVersionUID = 1L;

    private final SinkOptions options;
    private final WriterFiles<T> files;

    CoordinatedWriterOperatorFactory(SinkOptions options, WriterFiles<T> files) {
        this.options = options;
        this.files = files;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <S extends StreamOperator<Void>> S createStreamOperator(
            StreamOperatorParameters<Void> parameters) {
        OperatorID id = parameters.getStreamConfig().getOperatorID();
        OperatorEventDispatcher dispatcher = parameters.getOperatorEventDispatcher();
        OperatorEventGateway gateway = dispatcher.getOperatorEventGateway(id);
        CoordinatedWriterOperator<T> operator =
                new CoordinatedWriterOperator<>(
                        parameters, files, options.runtime(),
                        options.config().checkpointing(), gateway);
        dispatcher.registerEventHandler(id, operator);
        return (S) operator;
    }

    @Override
    public OperatorCoordinator.Provider getCoordinatorProvider(
            String operatorName, OperatorID operatorID) {
        return new SinkCoordinatorProvider(operatorID, options);
    }

    @Override
    public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
        return CoordinatedWriterOperator.class;
    }
}
