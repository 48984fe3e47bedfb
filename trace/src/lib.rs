//! The sink coordinator's pure test formats, standing directly on the core
//! (no wasmtime, no object stores):
//!
//! - [`format`](mod@format): TRACE-FORMAT v2 traces (`spec/TRACE-FORMAT.md`), read and
//!   written;
//! - [`render`]: the result document of a replay, byte for byte;
//! - [`faults`]: the one storage fault injector ([`faults::FaultyStorage`]);
//! - [`driver`]: how replay creates coordinators and writers, and the native
//!   core's [`driver::NativeDriver`];
//! - [`replay`]: a trace's steps through a driver, on a fresh or given table.
//! - [`corpus`]: the repository's trace corpora and their expected results;
//! - [`paimon`]: replaying on an Apache Paimon table (the trace's committables
//!   mapped to synthetic data files and back).
//!
//! The embedding crate's component handles implement the core's
//! [`CoordinatorApi`](sink_coordinator::CoordinatorApi) and
//! [`WriterApi`](sink_coordinator::WriterApi); the test kit adds a
//! component [`driver::Driver`] on top of this crate.

#![warn(missing_docs)]

pub mod corpus;
pub mod driver;
pub mod faults;
pub mod format;
pub mod paimon;
pub mod render;
pub mod replay;
