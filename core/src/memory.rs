//! The core's one audited module of unsafe code: what safe Rust cannot
//! give, behind APIs whose soundness does not depend on their callers.
//! Everything else in the crate is `deny(unsafe_code)`; the SAFETY comment
//! of each block says why it holds.
//!
//! - **Prefetch hints**: a single intrinsic that reads and writes nothing
//!   the program can observe, so none can break memory safety whatever its
//!   argument.
//! - **The cycle counter** ([`cycle_counter`]): reads the CPU's
//!   time-stamp counter, which changes no memory (lock holds are timed
//!   with it: `hold_timer.rs`).
//! - **[`FillBuf`]**: a byte buffer that one writer fills front to back
//!   while readers on other threads copy out what is already filled,
//!   without a lock between them (the change journal's chunks: a consumer
//!   copies records out while the master appends the next ones).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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

/// The CPU's time-stamp counter (x86_64: `RDTSC`), or `None` on targets
/// without one. About 10 ns a read where a monotonic clock read is 25–40
/// (a vDSO call); what a tick is worth is for the caller to calibrate.
#[inline(always)]
pub(crate) fn cycle_counter() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC is part of the x86_64 baseline, so always present; it
    // reads a counter into a register and touches no memory, so no value
    // of the program can change. The intrinsic is `unsafe` only because
    // it is an architecture intrinsic.
    return Some(unsafe { std::arch::x86_64::_rdtsc() });
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// A fixed-length byte buffer filled front to back by one writer, its
/// [`FillWriter`], while any number of threads holding the buffer copy out
/// bytes already filled ([`copy_to`](FillBuf::copy_to)): the filled prefix
/// never changes again, and the writer only ever writes past it, so the
/// two never touch the same byte and need no lock between them.
///
/// Soundness rests on this module alone: there is exactly one writer per
/// buffer (made only together with the buffer, not `Clone`); the writer
/// writes only bytes at or past `filled` and publishes them by raising
/// `filled` (release) after writing; a reader copies only bytes below the
/// `filled` it loads (acquire). Writing over filled bytes
/// ([`FillWriter::reset`]) needs the writer to be the buffer's only holder.
pub(crate) struct FillBuf {
    /// The start of `len` bytes owned by this buffer (a leaked
    /// `Box<[u8]>`, given back in `Drop`).
    ptr: *mut u8,
    len: usize,
    /// Bytes `..filled` are written and never written again (until a
    /// reset by the sole holder).
    filled: AtomicUsize,
}

// SAFETY: the buffer owns its bytes (no thread-bound state); moving it to
// another thread moves that ownership.
unsafe impl Send for FillBuf {}
// SAFETY: the only access through `&FillBuf` is `copy_to`, which reads
// bytes below an acquire load of `filled`; the single writer writes only at
// or past `filled` and raises it with a release store after writing, so a
// read never overlaps a write and sees the bytes as written.
unsafe impl Sync for FillBuf {}

impl FillBuf {
    /// Copies the filled bytes `from..from + out.len()` into `out`. `false`
    /// (nothing copied) when any of them is not filled yet.
    #[inline]
    pub fn copy_to(&self, from: usize, out: &mut [u8]) -> bool {
        let filled = self.filled.load(Ordering::Acquire);
        match from.checked_add(out.len()) {
            Some(end) if end <= filled => {
                // `from..end` lies within the `len` bytes owned (`filled
                // <= len`) and below `filled` as loaded with acquire.
                // SAFETY: those bytes were written before the writer's
                // release store of `filled` and are never written again
                // while this `&self` exists (a reset needs the writer to be
                // the only holder); `out` is a distinct `&mut` slice.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.ptr.add(from), out.as_mut_ptr(), out.len());
                }
                true
            }
            _ => false,
        }
    }
}

impl Drop for FillBuf {
    fn drop(&mut self) {
        let raw = std::ptr::slice_from_raw_parts_mut(self.ptr, self.len);
        // SAFETY: `ptr`/`len` are the leaked `Box<[u8]>` of `new`, given
        // back once, here; `&mut self` means no reader or writer is left.
        drop(unsafe { Box::from_raw(raw) });
    }
}

/// The one writer of a [`FillBuf`].
pub(crate) struct FillWriter {
    buf: Arc<FillBuf>,
}

impl FillWriter {
    /// A buffer of `len` zero bytes, none filled, and its writer (the
    /// only way to make either).
    pub fn new(len: usize) -> FillWriter {
        let bytes: Box<[u8]> = vec![0u8; len].into_boxed_slice();
        let ptr = Box::into_raw(bytes).cast::<u8>();
        FillWriter {
            buf: Arc::new(FillBuf {
                ptr,
                len,
                filled: AtomicUsize::new(0),
            }),
        }
    }

    /// The buffer, for readers (each holder keeps it alive and blocks
    /// [`reset`](Self::reset) until it lets go).
    #[inline]
    pub fn shared(&self) -> Arc<FillBuf> {
        Arc::clone(&self.buf)
    }

    /// Bytes filled.
    #[inline]
    pub fn filled(&self) -> usize {
        // Only this writer stores `filled`.
        self.buf.filled.load(Ordering::Relaxed)
    }

    /// Bytes left to fill.
    #[inline]
    pub fn room(&self) -> usize {
        self.buf.len - self.filled()
    }

    /// Length of the buffer.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len
    }

    /// Fills the next `n` bytes with what `write` writes into them (they
    /// hold whatever was there before: zeroes, or a reset's zeroes) and
    /// publishes them to readers. `false` (`write` not called) when fewer
    /// than `n` bytes are left.
    #[inline]
    pub fn fill_with(&mut self, n: usize, write: impl FnOnce(&mut [u8])) -> bool {
        let at = self.filled();
        if n > self.buf.len - at {
            return false;
        }
        // SAFETY: `at..at + n` lies within the owned bytes (checked above);
        // it is at or past `filled`, which no reader copies from, and this
        // writer is the buffer's only one (`&mut self`, not `Clone`), so
        // the slice aliases nothing for as long as it lives.
        let out = unsafe { std::slice::from_raw_parts_mut(self.buf.ptr.add(at), n) };
        write(out);
        self.buf.filled.store(at + n, Ordering::Release);
        true
    }

    /// Starts loading the lines of the next `n` bytes past the filled ones
    /// (clipped to the buffer), those the next fills write: issued after a
    /// fill, they arrive while the caller does other work, so the next
    /// fill's stores find their lines in cache instead of waiting for them
    /// at the next locked instruction (which drains pending stores).
    #[inline]
    pub fn prefetch_next(&self, n: usize) {
        let at = self.filled();
        let end = at.saturating_add(n).min(self.buf.len);
        // Addresses only, never dereferenced (`prefetch_line`): the lines
        // from the one holding byte `at` up to the one holding `end - 1`.
        let mut off = at & !(LINE - 1);
        while off < end {
            prefetch_line(self.buf.ptr.wrapping_add(off));
            off += LINE;
        }
    }

    /// Makes the whole buffer unfilled again and writes zeroes over it, if
    /// no reader holds it (`false`, nothing changed, when one does). The
    /// zeroes are not needed by anyone: writing the whole buffer in one
    /// streamed pass brings its cache lines back writable at once, instead
    /// of one at a time as the next fills touch them.
    pub fn reset(&mut self) -> bool {
        let Some(buf) = Arc::get_mut(&mut self.buf) else {
            return false;
        };
        // SAFETY: `get_mut` succeeded: this is the only holder of the
        // buffer, so nothing else reads or writes its `len` owned bytes
        // while this slice lives.
        let all = unsafe { std::slice::from_raw_parts_mut(buf.ptr, buf.len) };
        all.fill(0);
        *buf.filled.get_mut() = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // What a writer fills is what readers copy out, and nothing past the
    // filled prefix can be copied.
    #[test]
    fn a_fill_buf_hands_out_only_filled_bytes() {
        let mut w = FillWriter::new(16);
        let r = w.shared();
        let mut out = [0u8; 4];
        assert!(!r.copy_to(0, &mut out), "nothing is filled yet");
        assert!(w.fill_with(3, |b| b.copy_from_slice(b"abc")));
        assert_eq!((w.filled(), w.room(), w.len()), (3, 13, 16));
        assert!(!r.copy_to(0, &mut out), "byte 3 is not filled");
        assert!(r.copy_to(1, &mut out[..2]));
        assert_eq!(&out[..2], b"bc");
        assert!(!r.copy_to(usize::MAX, &mut out[..2]), "no overflow");
        assert!(!w.fill_with(14, |_| panic!("must not be called")));
        assert!(w.fill_with(13, |b| b.fill(b'x')));
        assert!(r.copy_to(15, &mut out[..1]));
        assert_eq!(out[0], b'x');
    }

    // A reset writes over the bytes only when no reader holds the buffer.
    #[test]
    fn a_fill_buf_is_reset_only_by_its_sole_holder() {
        let mut w = FillWriter::new(8);
        assert!(w.fill_with(8, |b| b.fill(7)));
        let r = w.shared();
        assert!(!w.reset(), "a reader holds it");
        let mut out = [0u8; 8];
        assert!(r.copy_to(0, &mut out));
        assert_eq!(out, [7; 8]);
        drop(r);
        assert!(w.reset());
        assert_eq!(w.filled(), 0);
        assert!(w.fill_with(2, |b| assert_eq!(b, [0, 0])));
    }

    // Readers on other threads copy while the writer fills: every copy of
    // a filled range sees exactly the bytes written there (each byte is a
    // function of its position), however the two interleave.
    #[test]
    fn readers_copy_filled_bytes_while_the_writer_fills() {
        const LEN: usize = 1 << 16;
        let mut w = FillWriter::new(LEN);
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let r = w.shared();
                std::thread::spawn(move || {
                    let mut out = vec![0u8; 257];
                    let mut checked = 0usize;
                    while checked < LEN {
                        let n = out.len().min(LEN - checked);
                        if r.copy_to(checked, &mut out[..n]) {
                            for (i, b) in out[..n].iter().enumerate() {
                                assert_eq!(*b, ((checked + i) % 251) as u8);
                            }
                            checked += n;
                        } else {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut at = 0;
        while at < LEN {
            let n = (at % 97 + 1).min(LEN - at);
            assert!(w.fill_with(n, |b| {
                for (i, x) in b.iter_mut().enumerate() {
                    *x = ((at + i) % 251) as u8;
                }
            }));
            at += n;
        }
        for r in readers {
            r.join().unwrap();
        }
    }

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
