//! Test kit of the sink coordinator: what other hosts and embedders use to
//! test against the same scenarios as this repository.
//!
//! - [`trace`]: TRACE-FORMAT parsing (`../shared/spec/TRACE-FORMAT.md`);
//! - [`replay`]: replaying a trace on a fresh in-memory table;
//! - [`render`]: the canonical result document (byte-identical across hosts);
//! - [`driver`]: one interface over the native core and the component;
//! - [`sim`]: the seeded, fault-injecting job simulator and its invariants;
//! - [`perf`]: the workloads of `make bench` (native core and component);
//! - [`storage_conformance`]: what any implementation of the `storage`
//!   import must do, checked against a backend;
//! - [`moto`]: a local S3 API server (moto) for tests against S3.
//!
//! Depends on the embedding library (`sink-coordinator-host`) and the core;
//! nothing here is needed to embed the coordinator.

#![warn(missing_docs)]

pub mod driver;
pub mod moto;
pub mod perf;
pub mod render;
pub mod replay;
pub mod script;
pub mod sim;
pub mod storage_conformance;
pub mod trace;
