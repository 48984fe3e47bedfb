//! Test kit of the sink coordinator: what other hosts and embedders use to
//! test against the same scenarios as this repository.
//!
//! - [`trace`], [`render`], [`faults`]: TRACE-FORMAT, the canonical result
//!   document and the storage fault injector, re-exported from the pure
//!   trace crate (`sink-coordinator-trace`, no wasmtime);
//! - [`replay`]: replaying a trace through the native core or the component;
//! - [`driver`]: the component's driver beside the trace crate's native one;
//! - [`sim`]: the seeded, fault-injecting job simulator and its invariants;
//! - [`perf`]: the workloads of `make bench` (native core and component);
//! - [`storage_conformance`]: what any implementation of the `storage`
//!   import must do, checked against a backend;
//! - [`storage_hook`]: a storage that runs a test's hook before each
//!   `put-if-absent`;
//! - [`moto`]: a local S3 API server (moto) for tests against S3.
//!
//! Depends on the embedding library (`sink-coordinator-host`) and the core;
//! nothing here is needed to embed the coordinator.

#![warn(missing_docs)]

pub mod driver;
pub mod moto;
pub mod perf;
pub mod replay;
pub mod script;
pub mod sim;
pub mod storage_conformance;
pub mod storage_hook;

pub use sink_coordinator_trace::format as trace;
pub use sink_coordinator_trace::{faults, format, render};
