//! Host-level errors: the core's error classes (SEMANTICS 8) plus `trap`,
//! which only a host running the component can observe. They are defined in
//! the core ([`sink_coordinator::api`]) beside the calls that return them.

pub use sink_coordinator::api::{BatchFailure, BatchResult, HostError, HostErrorKind, HostResult};
