//! A counting global allocator for benchmarks and allocation tests: forwards every call to the
//! system allocator and counts allocations, so a figure or a test can say "N allocations per
//! cycle". Include it with `#[path = ".../alloc_counter.rs"] mod alloc_counter;` and install it
//! with `#[global_allocator] static A: alloc_counter::CountingAlloc = alloc_counter::CountingAlloc;`.
//!
//! [`ThreadCountingAlloc`] counts per thread instead, and only on threads that opted in
//! ([`count_this_thread`]): for tests whose loopback server runs in the same process and
//! allocates freely (the counter lives in `const`-initialised thread-local `Cell`s without
//! destructors, which the allocator can read and bump without allocating).
//!
//! This is test-side code; the product's only `unsafe` lives in its signal-handling module.
#![allow(unsafe_code)]
// Each crate that includes it uses only part of it (one of the two allocators): the rest would warn.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts every heap allocation (and reallocation) made by the process.
pub struct CountingAlloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is a relaxed atomic counter increment.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's guarantees for `alloc` are passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's guarantees for `alloc_zeroed` are passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees for `dealloc` are passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's guarantees for `realloc` are passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Heap allocations (including reallocations) so far in this process, all threads.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// Counts the allocations of the threads that opted in, per thread.
pub struct ThreadCountingAlloc;

thread_local! {
    /// Whether this thread's allocations are counted.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
    /// This thread's count (per thread, so tests running side by side do not mix).
    static THREAD_ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note_thread() {
    if COUNTED.try_with(Cell::get).unwrap_or(false) {
        let _ = THREAD_ALLOCS.try_with(|n| n.set(n.get() + 1));
    }
}

/// Starts (or stops) counting this thread's allocations under [`ThreadCountingAlloc`].
pub fn count_this_thread(on: bool) {
    COUNTED.with(|c| c.set(on));
}

/// This thread's counted allocations so far (under [`ThreadCountingAlloc`]).
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCS.with(Cell::get)
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is reading and bumping two thread-locals.
unsafe impl GlobalAlloc for ThreadCountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_thread();
        // SAFETY: the caller's guarantees for `alloc` are passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_thread();
        // SAFETY: the caller's guarantees for `alloc_zeroed` are passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees for `dealloc` are passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_thread();
        // SAFETY: the caller's guarantees for `realloc` are passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
