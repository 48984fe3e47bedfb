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
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder};

use crate::env::HostEnv;

wasmtime::component::bindgen!({ path: "../wit", world: "sink-coordinator" });

/// The WIT types of the exported `types` interface.
pub use exports::sink::coordinator::types as wit;
use sink::coordinator::{clock as wit_clock, storage as wit_storage};

/// The component built from `guest/` by `build.rs`.
pub const EMBEDDED_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sink_coordinator.wasm"));

/// Where `build.rs` also wrote the component (`target/sink-coordinator.wasm`).
pub const EMBEDDED_WASM_PATH: &str = env!("SINK_COORDINATOR_WASM");

/// Fuel for one call by default: far more than any legitimate call needs
/// (a call costs thousands to millions of units), small enough that a
/// runaway loop traps within seconds instead of hanging the host.
pub const DEFAULT_FUEL_PER_CALL: u64 = 20_000_000_000;

/// How a [`Runtime`] runs the component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// Fuel (≈ wasm instructions) granted to each call, including
    /// instantiation; `None` turns fuel metering off. Running out is a trap.
    pub fuel_per_call: Option<u64>,
    /// Upper bound of a Store's linear memory in bytes; `None` = the wasm32
    /// limit of 4 GiB. Growing past it fails the guest's allocation (a trap).
    pub max_memory_bytes: Option<usize>,
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
            cache_dir: None,
        }
    }
}

/// The data of every Store: the effects the imports forward to.
pub struct StoreData {
    pub env: HostEnv,
    limits: StoreLimits,
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
        let mut limits = StoreLimitsBuilder::new();
        if let Some(max) = self.options.max_memory_bytes {
            limits = limits.memory_size(max);
        }
        let mut store = Store::try_new(
            &self.engine,
            StoreData {
                env,
                limits: limits.build(),
            },
        )?;
        store.limiter(|data| &mut data.limits);
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
