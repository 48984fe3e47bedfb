//! The wasmtime side: engine configuration, the compiled component, host
//! implementations of the `storage` and `clock` imports, and Store creation.
//!
//! A [`Runtime`] compiles the component once and keeps one pre-linked
//! `InstancePre`; every coordinator, writer and table handle gets its own
//! Store from it (~20 µs), because a Store that saw a trap can never enter
//! the component again (toolchain.md 5).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sink_coordinator::{Clock, Limits, Storage};
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

const MIB: u64 = 1 << 20;

/// The wasm32 maximum of a linear memory, 4 GiB.
const WASM32_MEMORY_BYTES: u64 = 4 << 30;

/// The guest's linear memory limit by default (derived from the default
/// [`Limits`], see [`memory_for`]): the wasm32 maximum, 4 GiB.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = memory_for(&DEFAULT_LIMITS);

/// Bytes the guest may hand to the host in one crossing by default (derived
/// from the default [`Limits`], see [`hostcall_bytes_for`]): 2,624 MiB.
/// wasmtime's own default, 128 MiB, made a commit of 128 MiB of
/// committables trap.
pub const DEFAULT_MAX_HOSTCALL_BYTES: u64 = hostcall_bytes_for(&DEFAULT_LIMITS);

const DEFAULT_LIMITS: Limits = Limits::DEFAULT;

/// How often the engine's ticker advances the epoch: the resolution of
/// [`RuntimeOptions::call_deadline`].
pub const DEADLINE_TICK: Duration = Duration::from_millis(100);

/// The memory a guest needs to commit a snapshot of the largest size the
/// limits allow: the held entries, the encoded snapshot and the list of
/// references the encoder walks (each at most the snapshot's size), plus
/// 256 MiB for everything else; at most the wasm32 maximum.
pub const fn memory_for(limits: &Limits) -> u64 {
    let need = limits
        .max_snapshot_bytes
        .saturating_mul(3)
        .saturating_add(256 * MIB);
    if need < WASM32_MEMORY_BYTES {
        need
    } else {
        WASM32_MEMORY_BYTES
    }
}

/// The host-call copy budget the limits need: the largest crossing is a
/// snapshot's value (`put-if-absent`) or the state bytes (`checkpoint`),
/// both bounded by the snapshot limit plus headers; twice that plus 64 MiB
/// also covers a snapshot lifted as a list of `(subtask, bytes)` (32 host
/// bytes per committable against the 16 the limits count).
pub const fn hostcall_bytes_for(limits: &Limits) -> u64 {
    limits
        .max_snapshot_bytes
        .saturating_mul(2)
        .saturating_add(64 * MIB)
}

/// A per-call wall-clock deadline for the limits: one minute plus five
/// minutes per GiB of the snapshot limit (storage writes of a large
/// snapshot count too); a committed 1 GiB snapshot took 14 s in total.
pub fn deadline_for(limits: &Limits) -> Duration {
    let per_gib = Duration::from_secs(300).as_millis() as u64;
    let extra_ms = (u128::from(limits.max_snapshot_bytes) * u128::from(per_gib) >> 30) as u64;
    Duration::from_secs(60) + Duration::from_millis(extra_ms)
}

/// The documented ranges of the limits (checked by the CLI at parse time
/// and by [`RuntimeOptions::validate`]).
pub const FUEL_RANGE: std::ops::RangeInclusive<u64> = 1_000_000..=1_000_000_000_000_000;
pub const MAX_MEMORY_RANGE: std::ops::RangeInclusive<u64> = (4 << 20)..=(4 << 30);
pub const MAX_HOSTCALL_RANGE: std::ops::RangeInclusive<u64> = (1 << 20)..=(4 << 30);

/// How a [`Runtime`] runs the component: its resource limits (README,
/// "Limits") and where precompiled code is cached.
///
/// The limits bound what one guest call may consume, so that neither a
/// guest bug nor a hostile input can hang or exhaust the host. They are
/// derived from the coordinator's own size limits ([`Self::from_limits`]),
/// which every [`ComponentCoordinator`](crate::ComponentCoordinator) of the
/// runtime enforces: a value the core accepted never traps at commit. The
/// defaults let a 1 GiB snapshot commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// The coordinator's size limits (checked when input arrives), applied
    /// to every coordinator created on the runtime; the wasmtime limits
    /// below are derived from them by [`Self::from_limits`].
    pub limits: Limits,
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
    /// Wall-clock time one call may take (storage calls included); `None`:
    /// unbounded. Enforced through epoch interruption by a ticker thread the
    /// runtime owns, every [`DEADLINE_TICK`]; a call past it traps ("the
    /// call exceeded its deadline of N ms"). Default [`deadline_for`] the
    /// limits.
    pub call_deadline: Option<Duration>,
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
        Self::from_limits(Limits::default())
    }
}

impl RuntimeOptions {
    /// The options for coordinators with size limits `limits`: the memory
    /// limit, host-call copy budget and call deadline derived from them
    /// ([`memory_for`], [`hostcall_bytes_for`], [`deadline_for`]), default
    /// fuel, no backtraces, no cache.
    pub fn from_limits(limits: Limits) -> Self {
        let memory = memory_for(&limits);
        RuntimeOptions {
            limits,
            fuel_per_call: Some(DEFAULT_FUEL_PER_CALL),
            max_memory_bytes: (memory < WASM32_MEMORY_BYTES).then_some(memory as usize),
            max_hostcall_bytes: usize::try_from(hostcall_bytes_for(&limits)).unwrap_or(usize::MAX),
            call_deadline: Some(deadline_for(&limits)),
            wasm_backtrace: false,
            cache_dir: None,
        }
    }

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
        )?;
        self.limits.validate().map_err(|e| e.message)?;
        // A value the core accepts must never trap at commit.
        let need = hostcall_bytes_for(&self.limits).min(*MAX_HOSTCALL_RANGE.end());
        if (self.max_hostcall_bytes as u64) < need {
            return Err(format!(
                "max_hostcall_bytes {} is below the {need} bytes that max-snapshot-bytes {} needs",
                self.max_hostcall_bytes, self.limits.max_snapshot_bytes
            ));
        }
        let need = memory_for(&self.limits);
        if self.memory_limit() < need {
            return Err(format!(
                "max_memory_bytes {} is below the {need} bytes that max-snapshot-bytes {} needs",
                self.memory_limit(),
                self.limits.max_snapshot_bytes
            ));
        }
        Ok(())
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

/// Advances the engine's epoch every [`DEADLINE_TICK`] until dropped (when
/// the last clone of its [`Runtime`] goes).
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: &Engine) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let engine = engine.clone();
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("sinkcoord-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    std::thread::park_timeout(DEADLINE_TICK);
                    engine.increment_epoch();
                }
            })?;
        Ok(Ticker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// A compiled component, ready to be instantiated into new Stores.
/// Cloning is cheap (reference counted).
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    pre: SinkCoordinatorPre<StoreData>,
    options: RuntimeOptions,
    /// Only while a call deadline is configured.
    _ticker: Option<Arc<Ticker>>,
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
        config.epoch_interruption(options.call_deadline.is_some());
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
        let ticker = match options.call_deadline {
            Some(_) => Some(Arc::new(
                Ticker::start(&engine).context("cannot start the deadline ticker thread")?,
            )),
            None => None,
        };
        Ok(Runtime {
            engine,
            pre,
            options,
            _ticker: ticker,
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

    /// Grants `fuel` for the next call (no-op when metering is off) and
    /// starts its deadline.
    pub(crate) fn refuel(
        &self,
        store: &mut Store<StoreData>,
        fuel: Option<u64>,
    ) -> wasmtime::Result<()> {
        if self.options.fuel_per_call.is_some() {
            store.set_fuel(fuel.unwrap_or(u64::MAX))?;
        }
        if let Some(deadline) = self.options.call_deadline {
            // Whole ticks, rounded up; at least one.
            let tick = DEADLINE_TICK.as_millis().max(1);
            let ticks = deadline.as_millis().div_ceil(tick).max(1);
            store.set_epoch_deadline(u64::try_from(ticks).unwrap_or(u64::MAX));
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
