//! The component's global allocator: dlmalloc, from the `dlmalloc` crate
//! rather than the copy inside `std`, behind a small cache of freed blocks.
//!
//! Why dlmalloc from the crate: the copy `std` links on wasm32 takes memory
//! only through `memory.grow`, never the part of the initial memory above
//! the static data, so every fresh instance's first allocation (the
//! constructor's) grew the memory by a page. In wasmtime's pooling
//! allocator a slot is shrunk back to its initial size when reused, so that
//! grow cost an `mprotect` pair per instance, about half of instantiation
//! (BENCHMARKS.md, instance + constructor). The crate's wasm allocator
//! (0.2.14) first offers dlmalloc the initial memory between the linker's
//! `__heap_base` and `__heap_end`, which `build.rs` makes large enough for
//! dlmalloc's first 64 KiB request.
//!
//! Why the cache ([`Cached`]): an event lifted from `list<list<u8>>` arrives
//! as one vector per committable, which the core packs into one buffer
//! (`committables`) and frees at once; dlmalloc's `free` coalesces each
//! block with its neighbours and files the result in its bins, about 350
//! instructions per block, and the next event's allocations split them
//! again. Freed small blocks are kept on per-size lists instead (like
//! glibc's tcache) and handed out again first: a free and an allocation of
//! the same size class cost a few instructions each.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

/// Size classes are multiples of this many bytes.
const GRANULE: usize = 16;
/// Classes: blocks up to `CLASSES * GRANULE` bytes (1 KiB) are cached.
const CLASSES: usize = 64;
/// At most this many bytes are kept in the cache (the rest goes back to the
/// inner allocator), so that a burst of frees does not pin memory.
const MAX_CACHED_BYTES: usize = 256 * 1024;
/// Blocks of the inner allocator are requested with this alignment, the
/// most a cached block promises (dlmalloc serves it without `memalign`).
const BLOCK_ALIGN: usize = 8;

/// The per-class lists of free blocks. Each free block holds the address
/// of the next one of its class in its first bytes (every class is at
/// least `GRANULE` bytes, more than a pointer).
struct Lists {
    heads: [*mut u8; CLASSES],
    cached_bytes: usize,
}

/// A [`GlobalAlloc`] that keeps freed blocks of up to 1 KiB (alignment up
/// to 8) on per-size-class lists and serves allocations of the same class
/// from them first; everything else goes to `A`. Blocks are requested from
/// `A` at their class's full size, so that any block of a class can serve
/// any request of that class.
pub struct Cached<A> {
    inner: A,
    lists: UnsafeCell<Lists>,
}

// SAFETY: the component is single-threaded (wasm32 without threads); the
// native unit tests use their own instances from one thread each.
unsafe impl<A: Sync> Sync for Cached<A> {}

impl<A> Cached<A> {
    /// An empty cache over `inner`.
    pub const fn new(inner: A) -> Self {
        Cached {
            inner,
            lists: UnsafeCell::new(Lists {
                heads: [core::ptr::null_mut(); CLASSES],
                cached_bytes: 0,
            }),
        }
    }
}

/// The class of `layout`, if it is cached.
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size();
    if layout.align() <= BLOCK_ALIGN && size > 0 && size <= CLASSES * GRANULE {
        Some((size - 1) / GRANULE)
    } else {
        None
    }
}

/// The layout the inner allocator sees for a block of class `class`.
fn block_layout(class: usize) -> Layout {
    // (class + 1) * GRANULE is at most 1 KiB and BLOCK_ALIGN a power of two.
    Layout::from_size_align((class + 1) * GRANULE, BLOCK_ALIGN).unwrap_or(Layout::new::<u64>())
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for Cached<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            return unsafe { self.inner.alloc(layout) };
        };
        // SAFETY: one thread (see `Sync`); no other reference to the lists
        // is alive during this call.
        let lists = unsafe { &mut *self.lists.get() };
        let head = lists.heads[class];
        if head.is_null() {
            return unsafe { self.inner.alloc(block_layout(class)) };
        }
        // SAFETY: `head` is a free block of this class, whose first bytes
        // hold the next free block (written by `dealloc`).
        lists.heads[class] = unsafe { head.cast::<*mut u8>().read() };
        lists.cached_bytes -= (class + 1) * GRANULE;
        head
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            return unsafe { self.inner.dealloc(ptr, layout) };
        };
        // SAFETY: as in `alloc`.
        let lists = unsafe { &mut *self.lists.get() };
        let size = (class + 1) * GRANULE;
        if lists.cached_bytes + size > MAX_CACHED_BYTES {
            return unsafe { self.inner.dealloc(ptr, block_layout(class)) };
        }
        // SAFETY: `ptr` is a block of this class (at least 16 bytes, aligned
        // to 8) that the caller gave up; it now holds the list's link.
        unsafe { ptr.cast::<*mut u8>().write(lists.heads[class]) };
        lists.heads[class] = ptr;
        lists.cached_bytes += size;
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if class_of(layout).is_none() {
            return unsafe { self.inner.alloc_zeroed(layout) };
        }
        let ptr = unsafe { self.alloc(layout) };
        if !ptr.is_null() {
            // SAFETY: `ptr` holds at least `layout.size()` bytes.
            unsafe { ptr.write_bytes(0, layout.size()) };
        }
        ptr
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return core::ptr::null_mut();
        };
        match (class_of(layout), class_of(new_layout)) {
            // The block already has room for the new size.
            (Some(a), Some(b)) if a == b => ptr,
            (None, None) => unsafe { self.inner.realloc(ptr, layout, new_size) },
            _ => {
                let new = unsafe { self.alloc(new_layout) };
                if !new.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and
                    // are distinct (`ptr` is still allocated).
                    unsafe {
                        core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                new
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static HEAP: Cached<dlmalloc::GlobalDlmalloc> = Cached::new(dlmalloc::GlobalDlmalloc);

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use std::alloc::System;

    /// Blocks come back from the lists, keep their contents through
    /// `realloc` across classes and past the cache, and the byte cap holds.
    #[test]
    fn blocks_are_reused_and_contents_kept() {
        let heap = Cached::new(System);
        unsafe {
            let l = Layout::from_size_align(200, 1).unwrap();
            let a = heap.alloc(l);
            a.write_bytes(7, 200);
            heap.dealloc(a, l);
            // Same class (193..=208 bytes): the same block.
            let b = heap.alloc(Layout::from_size_align(208, 8).unwrap());
            assert_eq!(a, b);
            b.write_bytes(1, 208);
            // Grown within its class: in place; across classes and past the
            // cache: moved with its contents.
            let l208 = Layout::from_size_align(208, 8).unwrap();
            assert_eq!(heap.realloc(b, l208, 200), b);
            let c = heap.realloc(b, l208, 5000);
            assert!((0..208).all(|i| *c.add(i) == 1));
            let c2 = heap.realloc(c, Layout::from_size_align(5000, 8).unwrap(), 100);
            assert!((0..100).all(|i| *c2.add(i) == 1));
            heap.dealloc(c2, Layout::from_size_align(100, 8).unwrap());
            // Zeroed allocations are zeroed even from a reused block.
            let z = heap.alloc_zeroed(Layout::from_size_align(100, 8).unwrap());
            assert!((0..100).all(|i| *z.add(i) == 0));
            heap.dealloc(z, Layout::from_size_align(100, 8).unwrap());
            // More than the cap: the rest goes back to the inner allocator.
            let big = Layout::from_size_align(1024, 8).unwrap();
            let blocks: Vec<*mut u8> = (0..400).map(|_| heap.alloc(big)).collect();
            for p in &blocks {
                heap.dealloc(*p, big);
            }
            assert!((*heap.lists.get()).cached_bytes <= MAX_CACHED_BYTES);
            // Over-aligned and large layouts bypass the cache.
            let odd = Layout::from_size_align(64, 64).unwrap();
            let p = heap.alloc(odd);
            assert_eq!(p as usize % 64, 0);
            heap.dealloc(p, odd);
        }
    }
}
