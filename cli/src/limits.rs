//! The resource-limit options of `replay` and `inspect` (README, "Limits"):
//! each value is range-checked while the command line is parsed, so an out
//! of range value is a usage error (exit 2) before anything runs.

use clap::Args;
use sink_coordinator_host::engine::{
    RuntimeOptions, DEFAULT_FUEL_PER_CALL, DEFAULT_MAX_HOSTCALL_BYTES, DEFAULT_MAX_MEMORY_BYTES,
    FUEL_RANGE, MAX_HOSTCALL_RANGE, MAX_MEMORY_RANGE,
};

use crate::clip;

/// The component's resource limits (README, "Limits"). Sizes take an
/// optional binary suffix: K, KiB, M, MiB, G, GiB.
#[derive(Args, Debug, Clone)]
pub struct LimitArgs {
    /// Fuel (about one unit per wasm instruction) for each call into the
    /// component; running out traps. Range 1000000..=1000000000000000.
    #[arg(long, value_name = "UNITS", value_parser = parse_fuel,
          default_value_t = DEFAULT_FUEL_PER_CALL)]
    fuel: u64,
    /// Upper bound of the component's linear memory; growing past it traps
    /// with "out of memory". Range 4MiB..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_memory,
          default_value_t = DEFAULT_MAX_MEMORY_BYTES)]
    max_memory: u64,
    /// Bytes the component may pass to the host in one call (a snapshot's
    /// value, a listing); more traps. Range 1MiB..=4GiB.
    #[arg(long, value_name = "BYTES", value_parser = parse_hostcall,
          default_value_t = DEFAULT_MAX_HOSTCALL_BYTES)]
    max_hostcall_bytes: u64,
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

impl LimitArgs {
    pub fn apply(&self, options: &mut RuntimeOptions) {
        options.fuel_per_call = Some(self.fuel);
        options.max_memory_bytes = usize::try_from(self.max_memory).ok();
        options.max_hostcall_bytes = usize::try_from(self.max_hostcall_bytes).unwrap_or(usize::MAX);
    }
}
