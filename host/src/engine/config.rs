//! The wasmtime configuration of an engine: determinism, metering, the
//! deadline's epochs and how instances' memories are allocated.

use super::{RuntimeOptions, DEFAULT_POOL_KEEP_RESIDENT};

/// How an engine allocates its instances' memories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// The pooling allocator with this many slots
    /// ([`RuntimeOptions::instance_pool`]).
    Pooled(u32),
    /// One allocation per instance (no pool, or it could not be reserved).
    OnDemand,
    /// Instances past the pool, of which a process may hold many thousands
    /// (a trace with 17,000 `start` steps of distinct instances, issue 26):
    /// each memory is initialised by copying instead of mapping the
    /// copy-on-write image, so it costs the kernel two memory mappings
    /// (accessible and reserved) instead of four (plus the image and the
    /// part after it). The kernel's limit on mappings per process
    /// (`vm.max_map_count`, 65,530 by default) made instance 16,366
    /// fail with "Cannot allocate memory"; it is now reached only past
    /// 32,000 live instances (32,262 measured).
    Overflow,
}

/// The engine configuration for `options` and the allocation `layout`.
pub(super) fn engine_config(options: &RuntimeOptions, layout: Layout) -> wasmtime::Config {
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
    // A new instance's memory maps the component's data segments
    // copy-on-write instead of copying them (wasmtime's default, said
    // here because the pool's speed depends on it).
    config.memory_init_cow(layout != Layout::Overflow);
    if let Layout::Pooled(slots) = layout {
        let mut pool = wasmtime::PoolingAllocationConfig::default();
        // Per component instance: one linear memory, at most a few core
        // instances (the main module and wit-component's shim and fixup
        // modules) and tables; the counts below are upper bounds, only
        // memories and tables reserve address space.
        pool.total_component_instances(slots)
            .total_memories(slots)
            .total_tables(slots.saturating_mul(2))
            .total_core_instances(slots.saturating_mul(8))
            // The pool enforces the memory limit too (the Store's limiter
            // reports it first, with the limit in its message).
            .max_memory_size(usize::try_from(options.memory_limit()).unwrap_or(usize::MAX));
        // Resetting a slot for reuse: the pages an instance dirtied are
        // found with Linux's PAGEMAP_SCAN (6.7+; else the first bytes are
        // reset) and copied back from the image instead of unmapped, up to
        // this many bytes per memory (the rest is unmapped), so the next
        // instance takes no page faults there: instantiation is faster
        // than with `madvise` alone (BENCHMARKS.md). Small by default,
        // because an idle slot keeps that much resident and, without
        // PAGEMAP_SCAN, it is reset whole on every reuse.
        let keep = options.pool_keep_resident_bytes;
        pool.linear_memory_keep_resident(keep)
            .table_keep_resident(keep.min(DEFAULT_POOL_KEEP_RESIDENT))
            .pagemap_scan(wasmtime::Enabled::Auto);
        config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    }
    config
}
