//! [`RuntimeOptions`]: how a runtime runs the component (its resource
//! limits, the instance pool, the cache), with the defaults and ranges.

use std::path::PathBuf;
use std::time::Duration;

use sink_coordinator::{Limits, TableFormatKind};

/// A generous fuel budget for one call, for hosts that turn metering on
/// ([`RuntimeOptions::fuel_per_call`], off by default): far more than any
/// legitimate call needs (a call costs thousands to millions of units;
/// committing a 1 GiB snapshot costs about 35 billion: ~32 units per byte),
/// and still finite.
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

/// Instances a runtime keeps in its pool by default
/// ([`RuntimeOptions::instance_pool`]): each slot reserves 4 GiB of address
/// space (plus a 32 MiB guard), so 100 slots reserve about 400 GiB of the
/// 128 TiB a Linux process has, and several runtimes fit in one process.
pub const DEFAULT_INSTANCE_POOL: u32 = 100;

/// The documented range of the instance pool's size.
pub const INSTANCE_POOL_RANGE: std::ops::RangeInclusive<u32> = 1..=10_000;

/// Instances alive at once in a process by default
/// ([`RuntimeOptions::max_live_instances`]): below the ~32,000 that the
/// kernel's default `vm.max_map_count` lets a process map.
pub const DEFAULT_MAX_LIVE_INSTANCES: u32 = 30_000;

/// The documented range of [`RuntimeOptions::max_live_instances`] (past the
/// default, the host must raise `vm.max_map_count`).
pub const MAX_LIVE_INSTANCES_RANGE: std::ops::RangeInclusive<u32> = 1..=10_000_000;

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
    let extra_ms = ((u128::from(limits.max_snapshot_bytes) * u128::from(per_gib)) >> 30) as u64;
    Duration::from_secs(60) + Duration::from_millis(extra_ms)
}

/// The documented range of the fuel per call (checked by the CLI at parse
/// time and by [`RuntimeOptions::validate`]).
pub const FUEL_RANGE: std::ops::RangeInclusive<u64> = 1_000_000..=1_000_000_000_000_000;
/// The documented range of the memory limit.
pub const MAX_MEMORY_RANGE: std::ops::RangeInclusive<u64> = (4 << 20)..=(4 << 30);
/// Bytes of a pooled memory kept resident by default
/// ([`RuntimeOptions::pool_keep_resident_bytes`]): small, so that idle
/// slots hold little and a kernel without `PAGEMAP_SCAN` resets little.
pub const DEFAULT_POOL_KEEP_RESIDENT: usize = 64 << 10;
/// The documented range of [`RuntimeOptions::pool_keep_resident_bytes`]
/// (up to the wasm32 memory size).
pub const POOL_KEEP_RESIDENT_RANGE: std::ops::RangeInclusive<u64> = 0..=(4 << 30);
/// The documented range of the host-call copy budget.
pub const MAX_HOSTCALL_RANGE: std::ops::RangeInclusive<u64> = (1 << 20)..=(4 << 30);

/// How a [`Runtime`](super::Runtime) runs the component: its resource limits (README,
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
    /// An instruction budget per call: fuel (≈ wasm instructions) granted
    /// to each call, including instantiation; running out is a trap ("all
    /// fuel consumed by WebAssembly"). `None` (the default): no metering.
    /// A runaway guest is stopped by [`Self::call_deadline`] and the memory
    /// limit instead; metering every instruction made the realistic job
    /// about 25 % slower (BENCHMARKS.md). Turn it on for a deterministic
    /// budget (the simulator's trap injection uses it), e.g.
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
    /// Each file carries a checksum of its machine code, checked before the
    /// code is loaded: a damaged file is recompiled and replaced, never
    /// executed. The directory must still be trusted: someone who can write
    /// it can write machine code with a valid checksum.
    pub cache_dir: Option<PathBuf>,
    /// Instances (Stores of coordinators, writers and table handles) that
    /// wasmtime's pooling allocator keeps ready, with their memory's
    /// copy-on-write image mapped: a new instance then costs no `mmap`.
    /// Each slot reserves 4 GiB of address space plus a guard (the wasm32
    /// maximum, so the machine code needs no bounds checks) and lets the
    /// memory grow to [`Self::max_memory_bytes`]. More instances alive at
    /// once than the pool holds are not an error: the extra ones are
    /// allocated one by one as without a pool (slower: BENCHMARKS.md), their
    /// memories initialised by copying so that each costs the kernel two
    /// memory mappings (about 32,000 fit in a process at the default
    /// `vm.max_map_count`). A process
    /// that cannot reserve the pool's address space (`ulimit -v`, valgrind)
    /// runs without one ([`Runtime::instance_pool`](super::Runtime::instance_pool)). `None`: no pool at
    /// all. Default [`DEFAULT_INSTANCE_POOL`]; range [`INSTANCE_POOL_RANGE`].
    pub instance_pool: Option<u32>,
    /// Bytes of each pooled instance's linear memory kept resident when
    /// its slot is reset for the next instance (its tables keep at most
    /// [`DEFAULT_POOL_KEEP_RESIDENT`], all they use): the pages
    /// the last instance dirtied, up to this many, are copied back from the
    /// image instead of unmapped, so the next instance takes no page faults
    /// there (wasmtime's `linear_memory_keep_resident`). An instance that
    /// fills tens of MiB, as a restore of 100,000 ended writers does
    /// (~30 MiB), starts about a third faster with its whole memory kept
    /// (BENCHMARKS.md, "Memory kept resident"). The price is memory: an
    /// idle slot keeps up to this many bytes resident, for every slot of
    /// [`Self::instance_pool`] that was used; and on Linux before 6.7
    /// (no `PAGEMAP_SCAN`) every reuse resets all of it, dirtied or not.
    /// Default [`DEFAULT_POOL_KEEP_RESIDENT`] (64 KiB); range
    /// [`POOL_KEEP_RESIDENT_RANGE`].
    pub pool_keep_resident_bytes: usize,
    /// Instances (Stores) alive at once in the process, across every
    /// runtime ([`live_instances`](super::live_instances)): one more is refused with an error that
    /// names this bound, before the kernel refuses it with "Cannot allocate
    /// memory". Default [`DEFAULT_MAX_LIVE_INSTANCES`]; range
    /// [`MAX_LIVE_INSTANCES_RANGE`] (past the default, raise
    /// `vm.max_map_count`).
    pub max_live_instances: u32,
    /// Lower `events-packed` through wasmtime's derived lowering instead of
    /// the hand-written one (`component/batch.rs`, on wasmtime's unstable
    /// internals): the same bytes reach the guest, in more instructions.
    /// Off by default; without the crate's `hand-lowering` feature the
    /// derived lowering is the only one.
    pub derived_lowering: bool,
    /// The table format of every coordinator created on the runtime (WIT
    /// `set-table-format`, called while the instance is `created`); the
    /// default, [`TableFormatKind::Native`], makes no call, so components
    /// older than 0.2.5 run as before. Paimon needs a 0.2.5 component.
    pub table_format: TableFormatKind,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self::from_limits(Limits::default())
    }
}

impl RuntimeOptions {
    /// The options for coordinators with size limits `limits`: the memory
    /// limit, host-call copy budget and call deadline derived from them
    /// ([`memory_for`], [`hostcall_bytes_for`], [`deadline_for`]), no fuel
    /// metering, no backtraces, no cache.
    pub fn from_limits(limits: Limits) -> Self {
        let memory = memory_for(&limits);
        RuntimeOptions {
            limits,
            fuel_per_call: None,
            max_memory_bytes: (memory < WASM32_MEMORY_BYTES).then_some(memory as usize),
            max_hostcall_bytes: usize::try_from(hostcall_bytes_for(&limits)).unwrap_or(usize::MAX),
            call_deadline: Some(deadline_for(&limits)),
            wasm_backtrace: false,
            cache_dir: None,
            derived_lowering: false,
            instance_pool: Some(DEFAULT_INSTANCE_POOL),
            pool_keep_resident_bytes: DEFAULT_POOL_KEEP_RESIDENT,
            max_live_instances: DEFAULT_MAX_LIVE_INSTANCES,
            table_format: TableFormatKind::Native,
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
        if let Some(slots) = self.instance_pool {
            let range =
                u64::from(*INSTANCE_POOL_RANGE.start())..=u64::from(*INSTANCE_POOL_RANGE.end());
            check("instance_pool", u64::from(slots), &range)?;
        }
        check(
            "pool_keep_resident_bytes",
            self.pool_keep_resident_bytes as u64,
            &POOL_KEEP_RESIDENT_RANGE,
        )?;
        let range = u64::from(*MAX_LIVE_INSTANCES_RANGE.start())
            ..=u64::from(*MAX_LIVE_INSTANCES_RANGE.end());
        check(
            "max_live_instances",
            u64::from(self.max_live_instances),
            &range,
        )?;
        check(
            "max_hostcall_bytes",
            self.max_hostcall_bytes as u64,
            &MAX_HOSTCALL_RANGE,
        )?;
        self.limits.validate().map_err(|e| e.message())?;
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
