//! Glue for effects: a cloneable shared handle (one storage and one clock
//! serve several coordinator instances, e.g. across a failover) and the
//! storage + clock pair a Store or a native call runs against. Both are the
//! core's (pure, no wasmtime), so the test tooling below this crate uses
//! the same types.

pub use sink_coordinator::shared::{HostEnv, Shared};
