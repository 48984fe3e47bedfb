//! Test kit of the sink coordinator: what other hosts and embedders use to
//! test against the same scenarios as this repository.
//!
//! - [`trace`]: TRACE-FORMAT parsing (`../shared/spec/TRACE-FORMAT.md`);
//! - [`replay`]: replaying a trace on a fresh in-memory table;
//! - [`render`]: the canonical result document (byte-identical across hosts);
//! - [`driver`]: one interface over the native core and the component;
//! - [`sim`]: the seeded, fault-injecting job simulator and its invariants;
//! - [`perf`]: the workloads of `make bench` (native core and component).
//!
//! Depends on the embedding library (`sink-coordinator-host`) and the core;
//! nothing here is needed to embed the coordinator.

#![warn(missing_docs)]

pub mod driver;
pub mod perf;
pub mod render;
pub mod replay;
pub mod script;
pub mod sim;
pub mod trace;
