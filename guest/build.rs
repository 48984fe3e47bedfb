//! The component's initial linear memory (wasm32 only): the 1 MiB stack,
//! the static data, and 192 KiB more for the heap, so that an instance
//! serves its first allocations without `memory.grow` (src/heap.rs).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        // 19 pages of 64 KiB: dlmalloc asks its system allocator for at
        // least one 64 KiB granule at the first allocation, and takes the
        // initial memory above the data only if that much is there.
        println!("cargo:rustc-link-arg=--initial-memory=1245184");
    }
}
