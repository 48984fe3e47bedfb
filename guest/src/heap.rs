//! The component's global allocator: dlmalloc, from the `dlmalloc` crate
//! rather than the copy inside `std`.
//!
//! Why: the copy `std` links on wasm32 takes memory only through
//! `memory.grow`, never the part of the initial memory above the static
//! data, so every fresh instance's first allocation (the constructor's) grew
//! the memory by a page. In wasmtime's pooling allocator a slot is shrunk
//! back to its initial size when reused, so that grow cost an `mprotect`
//! pair per instance, about half of instantiation (BENCHMARKS.md, instance +
//! constructor). The crate's wasm allocator (0.2.14) first offers dlmalloc
//! the initial memory between the linker's `__heap_base` and `__heap_end`,
//! which `build.rs` makes large enough for dlmalloc's first 64 KiB request.
//! Same algorithm as before, so the per-call cost does not change.

#[global_allocator]
static HEAP: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;
