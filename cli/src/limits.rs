//! The resource-limit options (README, "Limits"), in two groups, because
//! not every command uses both:
//!
//! - [`SizeLimitArgs`], the coordinator's size limits: set on a
//!   coordinator (the component's `set-limits`, the native core's
//!   `set_limits`), so only commands that run one take them (`replay`);
//! - [`RuntimeLimitArgs`], the wasmtime limits of every call into the
//!   component (fuel, memory, bytes per host call): also the read-only
//!   `inspect`, which decodes the table through the component.
//!
//! `inspect --help` listed the size limits too, which a table reader never
//! sets (issue 25). [`LimitArgs`] flattens both groups for `replay`.
//!
//! Each value is range-checked while the command line is parsed, so an out
//! of range value is a usage error (exit 2) before anything runs. The
//! wasmtime limits not given on the command line are derived from the size
//! limits (the defaults where a command has none), as
//! `RuntimeOptions::from_limits` documents.

use clap::Args;
use sink_coordinator::limits::MAX_LIMIT_BYTES;
use sink_coordinator::Limits;
use sink_coordinator_host::engine::{
    RuntimeOptions, FUEL_RANGE, MAX_HOSTCALL_RANGE, MAX_MEMORY_RANGE,
};

use crate::clip;

/// Both groups of limits, for a command that runs a coordinator. Sizes
/// take an optional binary suffix: K, KiB, M, MiB, G, GiB.
#[derive(Args, Debug, Clone)]
pub struct LimitArgs {
    #[command(flatten)]
    size: SizeLimitArgs,
    #[command(flatten)]
    runtime: RuntimeLimitArgs,
}

/// The coordinator's size limits (README, "Limits").
#[derive(Args, Debug, Clone)]
pub struct SizeLimitArgs {
    /// Largest single committable the coordinator accepts; a larger one is a
    /// fatal `invalid-event` when its event arrives. Default 1GiB; range
    /// 1..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_size_limit)]
    max_committable_bytes: Option<u64>,
    /// Largest entry (its committables plus 16 bytes each). Default
    /// 1.25GiB (1342177280); range 1..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_size_limit)]
    max_event_bytes: Option<u64>,
    /// Largest snapshot, counted like an entry; the memory and host-call
    /// limits below are derived from it unless given. Default 1.25GiB
    /// (1342177280); range 1..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_size_limit)]
    max_snapshot_bytes: Option<u64>,
}

/// The limits of every call into the component (README, "Limits").
#[derive(Args, Debug, Clone)]
pub struct RuntimeLimitArgs {
    /// Fuel (about one unit per wasm instruction) for each call into the
    /// component; running out traps. Default: no metering (the per-call
    /// deadline and the memory limit stop a runaway guest). Range 1000000..=1000000000000000.
    #[arg(long, value_name = "UNITS", value_parser = parse_fuel)]
    fuel: Option<u64>,
    /// Upper bound of the component's linear memory; growing past it traps
    /// with "out of memory". Default derived from the snapshot size limit
    /// (--max-snapshot-bytes where the command has it; 4GiB for the
    /// default); range 4MiB..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_memory)]
    max_memory: Option<u64>,
    /// Bytes the component may pass to the host in one call (a snapshot's
    /// value, a listing); more traps. Default derived from the snapshot
    /// size limit (--max-snapshot-bytes where the command has it, else its
    /// default: raise this to read a table written with a larger one);
    /// range 1MiB..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_hostcall)]
    max_hostcall_bytes: Option<u64>,
}

const SIZE_LIMIT_RANGE: std::ops::RangeInclusive<u64> = 1..=MAX_LIMIT_BYTES;

fn parse_size_limit(s: &str) -> Result<u64, String> {
    parse_in_range(s, &SIZE_LIMIT_RANGE, true)
}

fn parse_fuel(s: &str) -> Result<u64, String> {
    parse_in_range(s, &FUEL_RANGE, false)
}

fn parse_memory(s: &str) -> Result<u64, String> {
    parse_in_range(s, &MAX_MEMORY_RANGE, true)
}

fn parse_hostcall(s: &str) -> Result<u64, String> {
    parse_in_range(s, &MAX_HOSTCALL_RANGE, true)
}

/// An integer (with a binary size suffix where `sized`) in `range`.
fn parse_in_range(
    s: &str,
    range: &std::ops::RangeInclusive<u64>,
    sized: bool,
) -> Result<u64, String> {
    let shown = clip(s, 40);
    let (digits, unit) = if sized {
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let unit = match &s[split..] {
            "" => 1u64,
            "K" | "KiB" => 1 << 10,
            "M" | "MiB" => 1 << 20,
            "G" | "GiB" => 1 << 30,
            other => {
                return Err(format!(
                    "unknown size suffix {:?} in {shown:?} (use K, KiB, M, MiB, G or GiB)",
                    clip(other, 20)
                ))
            }
        };
        (&s[..split], unit)
    } else {
        (s, 1)
    };
    let range_text = if sized {
        format!(
            "{}..={}",
            size_text(*range.start()),
            size_text(*range.end())
        )
    } else {
        format!("{}..={}", range.start(), range.end())
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{shown:?} is not a non-negative integer (range {range_text})"
        ));
    }
    let value = digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(unit))
        .filter(|v| range.contains(v))
        .ok_or_else(|| format!("{shown} is out of range {range_text}"))?;
    Ok(value)
}

/// `4194304` as `4MiB`, for range messages.
fn size_text(v: u64) -> String {
    for (unit, name) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if v >= unit && v.is_multiple_of(unit) {
            return format!("{}{name}", v / unit);
        }
    }
    v.to_string()
}

impl SizeLimitArgs {
    /// The coordinator's size limits: the defaults, overridden by the
    /// options given.
    pub fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        if let Some(v) = self.max_committable_bytes {
            limits.max_committable_bytes = v;
        }
        if let Some(v) = self.max_event_bytes {
            limits.max_event_bytes = v;
        }
        if let Some(v) = self.max_snapshot_bytes {
            limits.max_snapshot_bytes = v;
        }
        limits
    }
}

impl LimitArgs {
    /// The coordinator's size limits (see [`SizeLimitArgs::limits`]).
    pub fn limits(&self) -> Limits {
        self.size.limits()
    }

    /// The runtime options these arguments ask for, on top of `base` (see
    /// [`RuntimeLimitArgs::options`]), derived from the size limits given.
    pub fn options(&self, base: RuntimeOptions) -> RuntimeOptions {
        self.runtime.options(self.limits(), base)
    }
}

impl RuntimeLimitArgs {
    /// The runtime options these arguments ask for, on top of `base` (its
    /// cache directory and backtrace setting are kept): the size limits
    /// `limits`, the wasmtime limits derived from them, then the wasmtime
    /// limits given explicitly. A combination that could trap at commit
    /// (memory or host-call budget below what the snapshot limit needs) is
    /// allowed — tests and operators probing a trap ask for it — and is
    /// printed as a one-line warning on stderr.
    pub fn options(&self, limits: Limits, base: RuntimeOptions) -> RuntimeOptions {
        let derived = RuntimeOptions::from_limits(limits);
        let mut options = RuntimeOptions {
            cache_dir: base.cache_dir,
            wasm_backtrace: base.wasm_backtrace,
            ..derived
        };
        options.fuel_per_call = self.fuel.or(base.fuel_per_call);
        if let Some(v) = self.max_memory {
            options.max_memory_bytes = usize::try_from(v).ok();
        }
        if let Some(v) = self.max_hostcall_bytes {
            options.max_hostcall_bytes = usize::try_from(v).unwrap_or(usize::MAX);
        }
        if let Err(why) = options.validate() {
            eprintln!("sinkcoord: warning: {why}: a commit near the size limits may trap");
        }
        options
    }
}
