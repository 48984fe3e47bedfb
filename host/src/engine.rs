//! The wasmtime side: engine configuration, the compiled component, host
//! implementations of the `storage` and `clock` imports, and Store creation.
//!
//! A [`Runtime`] compiles the component once and keeps one pre-linked
//! `InstancePre`; every coordinator, writer and table handle gets its own
//! Store from it (~20 µs), because a Store that saw a trap can never enter
//! the component again (toolchain.md 5).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sink_coordinator::{Clock, Storage};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::error::Context as _;
use wasmtime::{Engine, Store};

use crate::env::HostEnv;

wasmtime::component::bindgen!({ path: "../wit", world: "sink-coordinator" });

/// The WIT types of the exported `types` interface.
pub use exports::sink::coordinator::types as wit;
use sink::coordinator::{clock as wit_clock, storage as wit_storage};

/// The committed component (`dist/`), see [`crate::artifact`].
pub use crate::artifact::EMBEDDED_WASM;

/// Fuel for one call by default: far more than any legitimate call needs
/// (a call costs thousands to millions of units; committing a 1 GiB
/// snapshot costs about 35 billion: ~32 units per byte), and still finite:
/// a runaway loop traps instead of hanging the host.
pub const DEFAULT_FUEL_PER_CALL: u64 = 100_000_000_000;

/// The guest's linear memory limit by default: the wasm32 maximum, 4 GiB.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 4 << 30;

/// Bytes the guest may hand to the host in one crossing by default (a
/// storage import's arguments, or an export's results): 2 GiB, enough for a
/// 1 GiB snapshot value with room to spare. wasmtime's own default, 128 MiB,
/// made a commit of 128 MiB of committables trap.
pub const DEFAULT_MAX_HOSTCALL_BYTES: u64 = 2 << 30;

/// The documented ranges of the limits (checked by the CLI at parse time
/// and by [`RuntimeOptions::validate`]).
pub const FUEL_RANGE: std::ops::RangeInclusive<u64> = 1_000_000..=1_000_000_000_000_000;
pub const MAX_MEMORY_RANGE: std::ops::RangeInclusive<u64> = (4 << 20)..=(4 << 30);
pub const MAX_HOSTCALL_RANGE: std::ops::RangeInclusive<u64> = (1 << 20)..=(4 << 30);

/// How a [`Runtime`] runs the component: its resource limits (README,
/// "Limits") and where precompiled code is cached.
///
/// The limits bound what one guest call may consume, so that neither a
/// guest bug nor a hostile input can hang or exhaust the host. They must be
/// at least as generous as the coordinator's own size limits (maximum bytes
/// of an event and of a snapshot, checked when an event arrives): a value
/// the core accepted must never trap at commit. The defaults let a 1 GiB
/// snapshot commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// The per-call budget: fuel (≈ wasm instructions) granted to each call,
    /// including instantiation; `None` turns fuel metering off. Running out
    /// is a trap ("all fuel consumed by WebAssembly"). Default
    /// [`DEFAULT_FUEL_PER_CALL`]; range [`FUEL_RANGE`].
    pub fuel_per_call: Option<u64>,
    /// Upper bound of a Store's linear memory in bytes; `None` = the wasm32
    /// limit of 4 GiB. Growing past it traps with "out of memory (limit N
    /// bytes)". Range [`MAX_MEMORY_RANGE`].
    pub max_memory_bytes: Option<usize>,
    /// Bytes the guest may pass to the host in one crossing (wasmtime's
    /// "hostcall fuel": the arguments of a storage import, the results of an
    /// export). Exceeding it traps ("too much data is being copied between
    /// the host and the guest"). Default [`DEFAULT_MAX_HOSTCALL_BYTES`];
    /// range [`MAX_HOSTCALL_RANGE`].
    pub max_hostcall_bytes: usize,
    /// Capture wasm backtraces of traps (`sinkcoord --verbose`). Off by
    /// default: a trap is then one line.
    pub wasm_backtrace: bool,
    /// A directory for precompiled components (`*.cwasm`), keyed by a hash
    /// of the component and of the engine configuration: a later process
    /// loads the machine code (~1 ms) instead of compiling (~200 ms).
    /// The directory must be trusted: its files are loaded as machine code.
    pub cache_dir: Option<PathBuf>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            fuel_per_call: Some(DEFAULT_FUEL_PER_CALL),
            max_memory_bytes: None,
            max_hostcall_bytes: DEFAULT_MAX_HOSTCALL_BYTES as usize,
            wasm_backtrace: false,
            cache_dir: None,
        }
    }
}

impl RuntimeOptions {
    /// Checks every limit against its documented range (the CLI's ranges).
    /// `Runtime::new` does not insist: tests and simulations use tiny
    /// budgets on purpose.
    pub fn validate(&self) -> Result<(), String> {
        fn check(name: &str, v: u64, range: &std::ops::RangeInclusive<u64>) -> Result<(), String> {
            if range.contains(&v) {
                Ok(())
            } else {
                Err(format!(
                    "{name} {v} is out of range {}..={}",
                    range.start(),
                    range.end()
                ))
            }
        }
        if let Some(fuel) = self.fuel_per_call {
            check("fuel_per_call", fuel, &FUEL_RANGE)?;
        }
        if let Some(max) = self.max_memory_bytes {
            check("max_memory_bytes", max as u64, &MAX_MEMORY_RANGE)?;
        }
        check(
            "max_hostcall_bytes",
            self.max_hostcall_bytes as u64,
            &MAX_HOSTCALL_RANGE,
        )
    }

    /// The memory limit in force, in bytes.
    pub fn memory_limit(&self) -> u64 {
        self.max_memory_bytes
            .map_or(DEFAULT_MAX_MEMORY_BYTES, |m| m as u64)
    }
}

/// The Store's resource limiter: a memory growth past the limit traps with
/// a message that says so (the guest's allocator would otherwise abort with
/// "wasm `unreachable` instruction executed").
struct GuestLimits {
    max_memory: u64,
}

impl wasmtime::ResourceLimiter for GuestLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let limit = maximum.map_or(self.max_memory, |m| self.max_memory.min(m as u64));
        if desired as u64 > limit {
            return Err(wasmtime::format_err!(
                "out of memory (limit {limit} bytes): the guest tried to grow its memory from {current} to {desired} bytes"
            ));
        }
        Ok(true)
    }

    /// Growth the memory's type itself forbids (past the wasm32 maximum of
    /// 4 GiB) never reaches `memory_growing`: without this the guest's
    /// allocator would abort with "wasm `unreachable` instruction executed".
    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(wasmtime::format_err!(
            "out of memory (limit {} bytes): {error}",
            self.max_memory
        ))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

/// The data of every Store: the effects the imports forward to.
pub struct StoreData {
    pub env: HostEnv,
    limits: GuestLimits,
}

impl wit_storage::Host for StoreData {
    fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, wit_storage::StorageError> {
        self.env.get(&key).map_err(storage_error)
    }
    fn put_if_absent(
        &mut self,
        key: String,
        value: Vec<u8>,
    ) -> Result<bool, wit_storage::StorageError> {
        self.env.put_if_absent(&key, &value).map_err(storage_error)
    }
    fn put(&mut self, key: String, value: Vec<u8>) -> Result<(), wit_storage::StorageError> {
        self.env.put(&key, &value).map_err(storage_error)
    }
    fn delete(&mut self, key: String) -> Result<(), wit_storage::StorageError> {
        self.env.delete(&key).map_err(storage_error)
    }
    fn list(&mut self, prefix: String) -> Result<Vec<String>, wit_storage::StorageError> {
        self.env.list(&prefix).map_err(storage_error)
    }
}

impl wit_clock::Host for StoreData {
    fn now_ms(&mut self) -> u64 {
        self.env.now_ms()
    }
}

fn storage_error(e: sink_coordinator::StorageError) -> wit_storage::StorageError {
    match e {
        sink_coordinator::StorageError::Io(m) => wit_storage::StorageError::Io(m),
        sink_coordinator::StorageError::InvalidKey(m) => wit_storage::StorageError::InvalidKey(m),
    }
}

/// A compiled component, ready to be instantiated into new Stores.
/// Cloning is cheap (reference counted).
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    pre: SinkCoordinatorPre<StoreData>,
    options: RuntimeOptions,
}

impl Runtime {
    /// Compiles a component (binary) and links it against the host's imports.
    pub fn new(wasm: &[u8], options: RuntimeOptions) -> anyhow::Result<Self> {
        Ok(Self::compile(wasm, options)?)
    }

    fn compile(wasm: &[u8], options: RuntimeOptions) -> wasmtime::Result<Self> {
        let mut config = wasmtime::Config::new();
        // Backtraces make a trap message span many lines: only on request.
        if !options.wasm_backtrace {
            config.wasm_backtrace_max_frames(None);
        }
        config.wasm_component_model(true);
        // Determinism (SEMANTICS 9): the same NaN bits on every host.
        config.cranelift_nan_canonicalization(true);
        config.consume_fuel(options.fuel_per_call.is_some());
        let engine = Engine::new(&config).context("cannot create the wasmtime engine")?;
        let component = match &options.cache_dir {
            Some(dir) => load_or_compile(&engine, wasm, dir)?,
            None => Component::new(&engine, wasm).context("cannot compile the component")?,
        };
        let mut linker: Linker<StoreData> = Linker::new(&engine);
        SinkCoordinator::add_to_linker::<StoreData, HasSelf<StoreData>>(&mut linker, |data| data)
            .context("cannot link the storage and clock imports")?;
        let instance_pre = linker
            .instantiate_pre(&component)
            .context("the component's imports do not match the host (storage, clock)")?;
        let pre = SinkCoordinatorPre::new(instance_pre)
            .context("the component does not export the sink-coordinator world")?;
        Ok(Runtime {
            engine,
            pre,
            options,
        })
    }

    /// Loads and compiles a component file.
    pub fn from_file(path: &Path, options: RuntimeOptions) -> anyhow::Result<Self> {
        let wasm = std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        Self::new(&wasm, options)
    }

    /// The embedded component with default options, compiled once per process.
    pub fn embedded() -> anyhow::Result<Self> {
        static EMBEDDED: OnceLock<Result<Runtime, String>> = OnceLock::new();
        EMBEDDED
            .get_or_init(|| {
                Runtime::new(EMBEDDED_WASM, RuntimeOptions::default()).map_err(|e| format!("{e:#}"))
            })
            .clone()
            .map_err(anyhow::Error::msg)
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn options(&self) -> &RuntimeOptions {
        &self.options
    }

    /// A new Store over `env`, instantiated: one per coordinator, writer or
    /// table handle.
    pub(crate) fn instantiate(
        &self,
        env: HostEnv,
    ) -> wasmtime::Result<(Store<StoreData>, SinkCoordinator)> {
        let limits = GuestLimits {
            max_memory: self.options.memory_limit(),
        };
        let mut store = Store::try_new(&self.engine, StoreData { env, limits })?;
        store.limiter(|data| &mut data.limits);
        store.set_hostcall_fuel(self.options.max_hostcall_bytes);
        // Instantiation runs guest code (data segments, start functions):
        // it needs fuel like any call.
        self.refuel(&mut store, self.options.fuel_per_call)?;
        let bindings = self.pre.instantiate(&mut store)?;
        Ok((store, bindings))
    }

    /// Grants `fuel` for the next call (no-op when metering is off).
    pub(crate) fn refuel(
        &self,
        store: &mut Store<StoreData>,
        fuel: Option<u64>,
    ) -> wasmtime::Result<()> {
        if self.options.fuel_per_call.is_some() {
            store.set_fuel(fuel.unwrap_or(u64::MAX))?;
        }
        Ok(())
    }
}

/// Loads the precompiled `wasm` from `dir`, or compiles it and stores it there.
/// The cache is best effort: any problem with it falls back to compiling.
fn load_or_compile(engine: &Engine, wasm: &[u8], dir: &Path) -> wasmtime::Result<Component> {
    // 128 bits from two differently seeded SipHashes over the component and
    // everything of the engine that affects the machine code.
    let key: String = [0u8, 1]
        .iter()
        .map(|seed| {
            let mut h = DefaultHasher::new();
            seed.hash(&mut h);
            wasm.hash(&mut h);
            engine.precompile_compatibility_hash().hash(&mut h);
            format!("{:016x}", h.finish())
        })
        .collect();
    let path = dir.join(format!("sink-coordinator-{key}.cwasm"));
    if path.is_file() {
        // SAFETY: the file was written by `Component::serialize` below (the
        // directory is trusted, see `RuntimeOptions::cache_dir`); wasmtime
        // checks its header and engine compatibility and rejects other files.
        if let Ok(component) = unsafe { Component::deserialize_file(engine, &path) } {
            return Ok(component);
        }
    }
    let component = Component::new(engine, wasm).context("cannot compile the component")?;
    if let Ok(bytes) = component.serialize() {
        // Write then rename: a concurrent process never loads a partial file.
        let tmp = dir.join(format!(
            ".sink-coordinator-{key}.{}.tmp",
            std::process::id()
        ));
        let stored = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&tmp, &bytes))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if stored.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok(component)
}

/// Compile-time check: handles can move to another thread.
#[allow(dead_code)]
fn assert_send() {
    fn is_send<T: Send>() {}
    is_send::<Store<StoreData>>();
    is_send::<Runtime>();
}
