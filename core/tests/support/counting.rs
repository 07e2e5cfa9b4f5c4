//! A counting global allocator for the tests that measure heap use
//! (`alloc_counting`: live bytes back to their baseline; `list_keys_paging`:
//! the peak during one call). A test binary installs it with
//! `#[global_allocator] static GLOBAL: Counting = Counting;`; the counts are
//! process-wide, so such a binary runs one measuring #[test].

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

pub struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);
static ALLOCS: AtomicU64 = AtomicU64::new(0);

fn grew(by: i64) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
    ALLOCS.fetch_add(1, Relaxed);
}

// SAFETY: every call forwards to the system allocator unchanged; the
// counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as i64, Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            grew(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// Heap bytes live now.
pub fn live() -> i64 {
    LIVE.load(Relaxed)
}

/// Allocations (and reallocations) made so far.
pub fn allocs() -> u64 {
    ALLOCS.load(Relaxed)
}

/// `f`'s result and the most heap bytes live at once while it ran, above
/// what was live when it started.
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, i64) {
    let base = live();
    PEAK.store(base, Relaxed);
    let out = f();
    (out, PEAK.load(Relaxed) - base)
}
