//! JNI library of the Flink connector (`hosts/flink`): the component's
//! coordinator, writer helper and table, reachable from the JVM class
//! `io.sinkcoordinator.flink.component.Native`.
//!
//! The component is compiled once per process ([`runtime`]); every
//! coordinator, writer and table handle is its own instance (one wasmtime
//! Store each), so a trap in one never affects another.
//!
//! Handles cross JNI as `long`s: a boxed `Mutex` whose address the Java
//! wrapper keeps and frees exactly once (the wrappers are synchronized and
//! refuse calls after `close`; the Mutex guards anyway, so a misuse from
//! two threads cannot race inside a Store).
//!
//! - [`convert`]: Java objects <-> the core's types;
//! - [`call`]: panic and error fencing of every exported function;
//! - [`coordinator`], [`writer`], [`table`], [`storage`]: the exported
//!   functions;
//! - [`faults`]: storage fault drills of the coordinator's table log.

pub mod call;
pub mod convert;
pub mod coordinator;
pub mod faults;
pub mod storage;
pub mod table;
pub mod writer;

use std::sync::OnceLock;

use sink_coordinator_host::Runtime;

/// The component, compiled once per process (a JVM loads this library
/// once): instantiating it per handle then costs tens of microseconds.
pub fn runtime() -> Result<Runtime, String> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| Runtime::embedded().map_err(|e| format!("{e:#}")))
        .clone()
}
