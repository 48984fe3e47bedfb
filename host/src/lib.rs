//! Embedding library of the sink coordinator component
//! (`wit/coordinator.wit`) on wasmtime: what an engine needs to run the
//! coordinator, and nothing else (no CLI, no test tooling; those live in
//! `sink-coordinator-testkit` and `sinkcoord`).
//!
//! - [`engine`]: wasmtime engine, the compiled component, imports, Stores;
//! - [`component`]: typed handles on the exports (coordinator, writer, table);
//! - [`artifact`]: the embedded component (`dist/`), its version;
//! - [`storage`]: storage backends (memory, local directory, object stores
//!   through `object_store`, opening by URL);
//! - [`clock`]: the system clock and the deterministic trace clock;
//! - [`env`](mod@env): shared handles and the storage + clock pair of a Store;
//! - [`error`]: the host's error type (the core's kinds plus `trap`).

#![warn(missing_docs)]

pub mod artifact;
pub mod clock;
pub mod component;
pub mod engine;
pub mod env;
pub mod error;
pub mod storage;

/// The core's types of this API (`Config`, `Entry`, `Outcome`, `Storage`,
/// ...): an embedder depends on this crate alone.
pub use sink_coordinator as core;

pub use component::{ComponentCoordinator, ComponentTable, ComponentWriter, PackedEventRef};
pub use engine::{Runtime, RuntimeOptions};
pub use error::{BatchFailure, BatchResult, HostError, HostErrorKind, HostResult};

/// The Rust host page of the documentation (`docs/hosts/rust.md`): its
/// example is compiled and run as a doctest, so the page cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../../docs/hosts/rust.md")]
pub struct RustHostGuide;
