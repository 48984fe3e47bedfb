//! Host of the sink coordinator component (`wit/coordinator.wit`).
//!
//! - [`engine`]: wasmtime engine, the compiled component, imports, Stores;
//! - [`component`]: typed handles on the exports (coordinator, writer, table);
//! - [`driver`]: one interface over the native core and the component;
//! - [`storage`]: storage backends (memory, local directory, fault injection);
//! - [`clock`]: the system clock and the deterministic trace clock;
//! - [`env`]: shared handles and the storage + clock pair of a Store;
//! - [`trace`], [`replay`], [`render`]: TRACE-FORMAT parsing, replay, output;
//! - [`error`]: the host's error type (the core's kinds plus `trap`).

pub mod clock;
pub mod component;
pub mod driver;
pub mod engine;
pub mod env;
pub mod error;
pub mod render;
pub mod replay;
pub mod sim;
pub mod storage;
pub mod trace;

pub use component::{ComponentCoordinator, ComponentTable, ComponentWriter};
pub use engine::{Runtime, RuntimeOptions};
pub use error::{HostError, HostErrorKind, HostResult};
