//! The core's one audited module of unsafe code: hints to the memory
//! system that safe Rust cannot give. Each is a single intrinsic that
//! reads and writes nothing the program can observe, so none of them can
//! break memory safety whatever its argument; the SAFETY comment of each
//! block says why. Everything else in the crate is `deny(unsafe_code)`.

/// Asks the CPU to bring the cache line holding `r` into the cache,
/// without waiting for it: a caller that knows the addresses of several
/// upcoming loads issues their prefetches first, so their cache misses
/// (and page walks) are in flight together instead of one after another.
/// A hint only: it never faults, changes no value and is dropped by the
/// CPU when it has no room. A no-op on targets without the instruction.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    prefetch_line((r as *const T).cast::<u8>());
}

/// [`prefetch`] of every cache line `r` spans (a 128-byte record: both of
/// its lines).
#[inline(always)]
pub(crate) fn prefetch_all<T>(r: &T) {
    let start = (r as *const T).cast::<u8>();
    let mut off = 0;
    while off < std::mem::size_of::<T>() {
        // `wrapping_add`: an address, never dereferenced (a prefetch of
        // any address is harmless, see `prefetch_line`).
        prefetch_line(start.wrapping_add(off));
        off += LINE;
    }
}

/// [`prefetch`] of the line at `p`, an address that need not hold a
/// value yet (the spare capacity a vector is about to be written in). The
/// address is never dereferenced, so any value of `p` is harmless.
#[inline(always)]
pub(crate) fn prefetch_ptr<T>(p: *const T) {
    prefetch_line(p.cast::<u8>());
}

/// Bytes of a cache line on the targets this crate is built for.
const LINE: usize = 64;

#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 (SSE, part of the x86_64 baseline, so always
    // present) reads no memory architecturally and never faults, whatever
    // the address; no value of the program changes. The intrinsic is
    // `unsafe` only because it is a target-feature function.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    // A prefetch changes nothing: values read after it are the values
    // written before it, for any type and alignment.
    #[test]
    fn a_prefetch_changes_nothing() {
        let v: Vec<u64> = (0..4096).collect();
        for x in v.iter().step_by(7) {
            prefetch(x);
        }
        let bytes = [1u8, 2, 3];
        prefetch(&bytes[1]);
        let big = [7u8; 300];
        prefetch_all(&big);
        prefetch_ptr(big.as_ptr().wrapping_add(1 << 40));
        prefetch_ptr(std::ptr::null::<u64>());
        assert!(big.iter().all(|&b| b == 7));
        assert_eq!(bytes, [1, 2, 3]);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}
