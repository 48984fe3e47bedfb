//! Replaying a trace (TRACE-FORMAT) through an [`Engine`]: the native core
//! or the component. The replayer itself is the trace crate's
//! ([`sink_coordinator_trace::replay`], which needs no wasmtime); this
//! module adds the choice of engine and the simulator's tables.

pub use sink_coordinator_trace::replay::*;

use sink_coordinator::{Clock, Shared, Storage, TableFormatKind};

use crate::driver::Driver;
pub use crate::driver::Engine;
use crate::format::Trace;
use crate::sim::backend::SimStore;

/// Parses, validates and replays a trace document.
pub fn replay_str(text: &str, engine: &Engine) -> Result<ReplayResult, ReplayError> {
    let trace = crate::format::parse(text)?;
    replay(&trace, engine)
}

/// Replays a validated trace on a fresh in-memory table.
pub fn replay(trace: &Trace, engine: &Engine) -> Result<ReplayResult, ReplayError> {
    replay_with_states(trace, engine).map(|(result, _)| result)
}

/// [`replay`] on `table`, which must be empty (e.g. an object store opened
/// by URL): a conforming backend gives the in-memory result.
pub fn replay_on(
    trace: &Trace,
    engine: &Engine,
    table: SimStore,
) -> Result<ReplayResult, ReplayError> {
    sink_coordinator_trace::replay::replay_on(
        trace,
        Box::new(table),
        maker(engine, TableFormatKind::Native),
    )
    .map(|(result, _)| result)
}

/// [`replay`], also returning the state bytes of every successful
/// coordinator `checkpoint` step, in step order.
pub fn replay_with_states(
    trace: &Trace,
    engine: &Engine,
) -> Result<(ReplayResult, Vec<CheckpointState>), ReplayError> {
    replay_with_states_in(trace, engine, TableFormatKind::Native)
}

/// [`replay_with_states`] on a table in `format` (`sinkcoord replay
/// --table-format`): on Paimon the trace's committables are synthetic data
/// files and the result is given in the trace's terms, so that it can be held
/// against the native format's.
pub fn replay_with_states_in(
    trace: &Trace,
    engine: &Engine,
    format: TableFormatKind,
) -> Result<(ReplayResult, Vec<CheckpointState>), ReplayError> {
    sink_coordinator_trace::replay::replay_with_driver(trace, maker(engine, format))
}

/// [`replay_with_states`] through the driver `make` builds over the
/// replayer's table and trace clock (the resolved call scripts of
/// [`crate::script`] record and play back through it).
pub fn replay_with_driver(
    trace: &Trace,
    make: impl FnOnce(
        Shared<dyn Storage + Send>,
        Shared<dyn Clock + Send>,
    ) -> Result<Box<dyn Driver>, ReplayError>,
) -> Result<(ReplayResult, Vec<CheckpointState>), ReplayError> {
    sink_coordinator_trace::replay::replay_with_driver(trace, Box::new(make))
}

fn maker(engine: &Engine, format: TableFormatKind) -> Box<MakeDriver<'_>> {
    Box::new(move |storage, clock| {
        engine
            .driver_in(storage, clock, format)
            .map_err(|e| ReplayError::Host(format!("cannot instantiate the component: {e}")))
    })
}
