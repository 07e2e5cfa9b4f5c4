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
//! - **[`fault_in_spare`]**: a vector's spare room faulted in with one
//!   `MADV_POPULATE_WRITE` instead of a page fault per page (the deadline
//!   index's heap chunks, made outside its lock); the advice changes no
//!   value.
//! - **[`FillBuf`]**: a byte buffer that one writer fills front to back
//!   while readers on other threads copy out what is already filled,
//!   without a lock between them (the change journal's chunks: a consumer
//!   copies records out while the master appends the next ones).
//! - **[`SpinLock`]**: a lock whose release is a plain store (the change
//!   journal's, taken twice per put pair), giving `&mut T` to one holder
//!   at a time as a mutex does.
//! - **[`Region`] and [`FixedVec`]**: one huge-page-advised mapping,
//!   committed when made, that a master's presized tables are carved from
//!   (`commit_presized`), and the fixed-capacity vector those tables are
//!   made of, on the heap or in a region.

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

/// Faults in every page of `spare` (a vector's spare room, about to be
/// written under a lock), so the writes that fill it later take no page
/// fault: the whole pages inside it with one `MADV_POPULATE_WRITE` (Linux
/// 5.14 on) instead of a fault each, the partial pages at its ends (which
/// may be shared with a neighbouring allocation) by writing a byte of the
/// room in each, and, where the kernel refuses the advice, a byte in every
/// page. The room stays uninitialised as far as its vector is concerned.
pub(crate) fn fault_in_spare<T>(spare: &mut [std::mem::MaybeUninit<T>]) {
    let bytes = std::mem::size_of_val(spare);
    if bytes == 0 {
        return;
    }
    // SAFETY: the bytes of `MaybeUninit` values may hold anything, so
    // viewing the same memory, exclusively borrowed for as long as the
    // view lives, as `bytes` uninitialised bytes (alignment 1) is sound.
    let raw: &mut [std::mem::MaybeUninit<u8>] =
        unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast(), bytes) };
    raw[0].write(0);
    raw[bytes - 1].write(0);
    if !populate_pages(raw.as_mut_ptr().cast(), bytes) {
        touch_pages(raw);
    }
}

/// Writes a zero into the first byte and into one byte of every page of
/// `raw` (uninitialised memory the caller holds exclusively), faulting
/// each of its pages in: `fault_in_spare`'s way where the kernel refuses
/// the advice.
fn touch_pages(raw: &mut [std::mem::MaybeUninit<u8>]) {
    for b in raw.iter_mut().step_by(page_size()) {
        b.write(0);
    }
    if let Some(last) = raw.last_mut() {
        last.write(0);
    }
}

/// The system's page size (4096 where it cannot be read): what advice
/// ranges are rounded to, so that rounding never reaches past a range on
/// a kernel with larger pages (the kernel rounds a length up to its own
/// page size).
fn page_size() -> usize {
    static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        #[cfg(unix)]
        {
            // SAFETY: sysconf reads a system constant; it takes no pointer
            // and changes no memory of the program.
            let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            match usize::try_from(n) {
                Ok(n) if n.is_power_of_two() && n >= BASE_PAGE => n,
                _ => BASE_PAGE,
            }
        }
        #[cfg(not(unix))]
        BASE_PAGE
    })
}

/// `MADV_POPULATE_WRITE` of the whole pages inside `start..start +
/// bytes`, memory the caller holds exclusively; `true` when the kernel did
/// it (or there is no whole page), `false` where it refuses or there is no
/// such advice.
#[cfg(target_os = "linux")]
fn populate_pages(start: *mut u8, bytes: usize) -> bool {
    let page = page_size();
    let from = (start as usize).next_multiple_of(page);
    let to = (start as usize).saturating_add(bytes) & !(page - 1);
    if to <= from {
        return true;
    }
    // SAFETY: `from..to` lies inside the caller's exclusive allocation
    // (whole pages of it, so no other allocation's bytes); populating
    // faults pages in (zeroed if new) and changes no byte of a page
    // already present, so no value the program holds changes, and the
    // kernel checks the range.
    let rc = unsafe {
        libc::madvise(
            from as *mut libc::c_void,
            to - from,
            libc::MADV_POPULATE_WRITE,
        )
    };
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn populate_pages(_start: *mut u8, _bytes: usize) -> bool {
    false
}

/// A fixed-length byte buffer filled front to back by one writer, its
/// [`FillWriter`], while any number of threads holding the buffer copy out
/// bytes already filled ([`filled_bytes`](FillBuf::filled_bytes)): the filled prefix
/// never changes again, and the writer only ever writes past it, so the
/// two never touch the same byte and need no lock between them.
///
/// Soundness rests on this module alone: there is exactly one writer per
/// buffer (made only together with the buffer, not `Clone`); the writer
/// writes only bytes at or past `filled` and publishes them by raising
/// `filled` (release) after writing; a reader copies only bytes below the
/// `filled` it loads (acquire), and a shared slice of them lives no longer
/// than its borrow of the buffer. Writing over filled bytes
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
// SAFETY: the only access through `&FillBuf` is `filled_bytes`, which
// reads bytes below an acquire load of `filled`; the single writer writes
// only at
// or past `filled` and raises it with a release store after writing, so a
// read never overlaps a write and sees the bytes as written.
unsafe impl Sync for FillBuf {}

impl FillBuf {
    /// The filled bytes `from..from + len`, `None` when any of them is not
    /// filled yet. They never change while the buffer is borrowed.
    #[inline]
    pub fn filled_bytes(&self, from: usize, len: usize) -> Option<&[u8]> {
        let filled = self.filled.load(Ordering::Acquire);
        match from.checked_add(len) {
            Some(end) if end <= filled => {
                // SAFETY: `from..end` lies in the owned bytes (`filled <=
                // len`), below `filled` loaded with acquire: written before
                // the writer's release store, never written again while
                // `&self` (so the slice) lives, as a reset needs the sole
                // holder: the shared slice aliases no write.
                Some(unsafe { std::slice::from_raw_parts(self.ptr.add(from), len) })
            }
            _ => None,
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

/// Bytes of a transparent huge page on the targets this crate is built
/// for (x86_64 and aarch64 with 4 KiB base pages).
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// Bytes of the smallest page of the targets this crate is built for (a
/// kernel may use larger ones: [`page_size`] is the system's).
const BASE_PAGE: usize = 4096;

/// One anonymous mapping that a master's presized tables are carved from
/// (`MasterConfig::commit_presized`, docs/CONTRACT.md §9): aligned to and
/// a multiple of [`HUGE_PAGE`], advised for transparent huge pages (a
/// kernel that declines backs it with base pages, and nothing else
/// changes), and made resident when it is mapped. Carving hands out
/// disjoint, never reused ranges front to back, so a carved range is
/// zeroed memory; the mapping goes when the last [`FixedVec`] carved from
/// it (each holds an `Arc` to it) does.
#[cfg(target_os = "linux")]
pub(crate) struct Region {
    /// Start of the mapping (aligned to [`HUGE_PAGE`]).
    base: std::ptr::NonNull<u8>,
    len: usize,
    /// Bytes carved so far (`..carved` is handed out).
    carved: AtomicUsize,
}

#[cfg(target_os = "linux")]
// SAFETY: the region owns its mapping (no thread-bound state), and the only
// shared access, `carve`, hands each byte range out once (an atomic
// compare-and-swap on `carved`), so threads never share a byte through it.
unsafe impl Send for Region {}
#[cfg(target_os = "linux")]
// SAFETY: as for `Send`: `&Region` only carves, atomically.
unsafe impl Sync for Region {}

#[cfg(target_os = "linux")]
impl Region {
    /// Maps at least `len` bytes (rounded up to whole huge pages) of zeroed
    /// memory, advised for huge pages, and makes every page of it resident
    /// now. `None` when `len` is 0 or the system gives no such mapping (the
    /// caller then uses the heap: huge pages are a hint).
    pub fn map_committed(len: usize) -> Option<Arc<Region>> {
        let len = len.checked_next_multiple_of(HUGE_PAGE)?;
        if len == 0 {
            return None;
        }
        let base = map_aligned(len)?;
        let region = Region {
            base,
            len,
            carved: AtomicUsize::new(0),
        };
        // Dropping a refused region unmaps it.
        region.commit().then(|| Arc::new(region))
    }

    /// Bytes mapped.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes handed out so far.
    #[cfg(test)]
    pub fn carved(&self) -> usize {
        self.carved.load(Ordering::Relaxed)
    }

    /// The next `bytes` bytes aligned to `align` (a power of two), or
    /// `None` when the region has no such range left or `align` is more
    /// than the base's own alignment ([`HUGE_PAGE`]), which an offset
    /// alone cannot give.
    fn carve(&self, bytes: usize, align: usize) -> Option<std::ptr::NonNull<u8>> {
        if !align.is_power_of_two() || align > HUGE_PAGE {
            return None;
        }
        let mut seen = self.carved.load(Ordering::Relaxed);
        loop {
            let start = seen.checked_next_multiple_of(align)?;
            let end = start.checked_add(bytes)?;
            if end > self.len {
                return None;
            }
            match self
                .carved
                .compare_exchange_weak(seen, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                // `start..end` lies within the mapping (checked above).
                Ok(_) => return std::ptr::NonNull::new(self.base.as_ptr().wrapping_add(start)),
                Err(now) => seen = now,
            }
        }
    }

    /// Faults every page in with one `MADV_POPULATE_WRITE` (Linux 5.14
    /// on), or, on a kernel without that advice, by writing a zero to each
    /// base page (the memory is zeroed already, so no value changes).
    /// `false` when the kernel has not the memory (the caller gives the
    /// region up).
    fn commit(&self) -> bool {
        // SAFETY: advice on this region's own mapping, whole; populating
        // anonymous memory faults in zeroed pages, so no value changes, and
        // the kernel checks the range.
        let rc = unsafe {
            libc::madvise(
                self.base.as_ptr().cast(),
                self.len,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if rc == 0 {
            return true;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return false;
        }
        for off in (0..self.len).step_by(BASE_PAGE) {
            // SAFETY: `off < len`, so the byte lies in the mapping, which
            // is readable and writable; nothing is carved yet (the region
            // is not shared before this returns), so no reference aliases
            // it; it holds zero, and zero is written.
            unsafe { self.base.as_ptr().add(off).write_volatile(0) };
        }
        true
    }

    /// Gives the whole pages inside `start..start + bytes` (a range
    /// carved from this region, no longer used) back to the system: they
    /// read as zeroes again if touched, and no range is carved twice, so
    /// nothing can see the difference.
    fn release(&self, start: *const u8, bytes: usize) {
        // The system's page size, not BASE_PAGE: on a kernel with larger
        // pages, advice on a range rounded to 4 KiB would be rounded up
        // past it by the kernel, onto bytes still carved and in use.
        let page = page_size();
        let from = (start as usize).next_multiple_of(page);
        let to = (start as usize).saturating_add(bytes) & !(page - 1);
        if to > from {
            // SAFETY: `from..to` lies inside a range of this mapping that
            // its owner gave up (the dropped vector); no other vector was
            // carved from any byte of it, so no live reference points
            // there. MADV_DONTNEED on private anonymous memory only makes
            // those pages read as zeroes.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED);
            }
        }
    }
}

#[cfg(target_os = "linux")]
impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("len", &self.len)
            .field("carved", &self.carved.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(target_os = "linux")]
impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` is this region's own mapping, unmapped once,
        // here; every `FixedVec` carved from it holds an `Arc` to it, so
        // none is left to use the memory.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

/// A fresh private anonymous mapping of `len` bytes (a multiple of
/// [`HUGE_PAGE`]) starting on a huge-page boundary, advised
/// `MADV_HUGEPAGE`; `None` if the system refuses it.
#[cfg(target_os = "linux")]
fn map_aligned(len: usize) -> Option<std::ptr::NonNull<u8>> {
    let span = len.checked_add(HUGE_PAGE)?;
    // SAFETY: a new anonymous mapping at an address the kernel picks; it
    // touches no existing memory.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let raw = raw.cast::<u8>();
    // Bytes from `raw` to the next huge-page boundary (0 when on one).
    let head = (HUGE_PAGE - (raw as usize & (HUGE_PAGE - 1))) & (HUGE_PAGE - 1);
    let tail = span - head - len;
    // SAFETY: the head `raw..raw + head` and the tail past `raw + head +
    // len` are parts of the mapping just made that nothing refers to;
    // unmapping them leaves `len` bytes from an aligned start.
    unsafe {
        if head > 0 {
            libc::munmap(raw.cast(), head);
        }
        if tail > 0 {
            libc::munmap(raw.add(head + len).cast(), tail);
        }
    }
    // SAFETY: `raw + head` lies within the mapping made above, which is
    // not null.
    let base = unsafe { raw.add(head) };
    // SAFETY: advice on the mapping just made; a hint that changes no
    // value. A kernel without transparent huge pages refuses it, which is
    // fine: the region is then on base pages.
    unsafe {
        libc::madvise(base.cast(), len, libc::MADV_HUGEPAGE);
    }
    std::ptr::NonNull::new(base)
}

/// Elsewhere no region is ever made: presized tables live on the heap.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub(crate) enum Region {}

#[cfg(not(target_os = "linux"))]
impl Region {
    pub fn map_committed(_len: usize) -> Option<Arc<Region>> {
        None
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        match *self {}
    }

    #[cfg(test)]
    pub fn carved(&self) -> usize {
        match *self {}
    }

    fn carve(&self, _bytes: usize, _align: usize) -> Option<std::ptr::NonNull<u8>> {
        match *self {}
    }

    fn release(&self, _start: *const u8, _bytes: usize) {
        match *self {}
    }
}

/// A vector whose capacity is fixed when it is made, on the heap or carved
/// from a [`Region`]: what the arena's chunks and the index's bucket array
/// are made of (`Vec` cannot hold memory that is not the global
/// allocator's). Its elements are `..len`; [`push`](Self::push) refuses
/// past the capacity instead of reallocating, and [`regrow`](Self::regrow)
/// moves the elements to a larger heap vector.
pub(crate) struct FixedVec<T> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
    cap: usize,
    /// The region the memory was carved from (kept alive by this `Arc`);
    /// `None`: `ptr`/`cap` are a `Vec<T>`'s allocation, given back in
    /// `Drop`.
    region: Option<Arc<Region>>,
    _owns: std::marker::PhantomData<T>,
}

// SAFETY: the vector owns its elements (moving it moves them) and its
// memory; the region it may hold is `Send + Sync`.
unsafe impl<T: Send> Send for FixedVec<T> {}
// SAFETY: `&FixedVec<T>` gives only `&[T]` and reads of `len`/`cap`.
unsafe impl<T: Sync> Sync for FixedVec<T> {}

impl<T> Default for FixedVec<T> {
    fn default() -> Self {
        FixedVec::from_vec(Vec::new())
    }
}

impl<T> FixedVec<T> {
    /// Takes over `v`'s allocation and elements.
    fn from_vec(v: Vec<T>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        FixedVec {
            // A `Vec`'s pointer is never null (dangling when it holds no
            // allocation).
            ptr: std::ptr::NonNull::new(v.as_mut_ptr()).unwrap_or(std::ptr::NonNull::dangling()),
            len: v.len(),
            cap: v.capacity(),
            region: None,
            _owns: std::marker::PhantomData,
        }
    }

    /// An empty vector with room for at least `cap` elements, on the heap.
    pub fn try_with_capacity(cap: usize) -> Result<Self, std::collections::TryReserveError> {
        let mut v = Vec::new();
        v.try_reserve_exact(cap)?;
        Ok(FixedVec::from_vec(v))
    }

    /// An empty vector with room for exactly `cap` elements carved from
    /// `region` while it has room, else on the heap, where running out of
    /// memory aborts as it does for a `Vec`.
    pub fn with_capacity_in(region: Option<&Arc<Region>>, cap: usize) -> Self {
        region
            .and_then(|r| Self::carved(r, cap))
            .unwrap_or_else(|| FixedVec::from_vec(Vec::with_capacity(cap)))
    }

    /// An empty vector with room for exactly `cap` elements carved from
    /// `region`, or on the heap (as [`try_with_capacity`](Self::try_with_capacity))
    /// when the region has no room left or is `None`.
    pub fn try_in(
        region: Option<&Arc<Region>>,
        cap: usize,
    ) -> Result<Self, std::collections::TryReserveError> {
        match region.and_then(|r| Self::carved(r, cap)) {
            Some(v) => Ok(v),
            None => Self::try_with_capacity(cap),
        }
    }

    fn carved(region: &Arc<Region>, cap: usize) -> Option<Self> {
        let size = std::mem::size_of::<T>();
        if size == 0 || cap == 0 {
            return None;
        }
        let bytes = size.checked_mul(cap)?;
        let ptr = region.carve(bytes, std::mem::align_of::<T>().max(LINE))?;
        Some(FixedVec {
            ptr: ptr.cast(),
            len: 0,
            cap,
            region: Some(Arc::clone(region)),
            _owns: std::marker::PhantomData,
        })
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Whether the memory was carved from a region.
    pub fn in_region(&self) -> bool {
        self.region.is_some()
    }

    /// Bytes a region gives a vector of `cap` elements: its own, rounded
    /// up to the cache line every carved range starts on (what a caller
    /// sums to size a region for the vectors it will carve).
    pub fn region_footprint(cap: usize) -> usize {
        // A carve aligns to `max(align, LINE)`: with `align <= LINE` this
        // rounding is exactly the padding before the next vector.
        const { assert!(std::mem::align_of::<T>() <= LINE) };
        cap.saturating_mul(std::mem::size_of::<T>())
            .next_multiple_of(LINE)
    }

    /// Bytes of this vector's capacity that lie in a region (0 on the
    /// heap).
    pub fn region_bytes(&self) -> usize {
        if self.in_region() {
            self.cap * std::mem::size_of::<T>()
        } else {
            0
        }
    }

    #[inline]
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    /// Appends `value`; gives it back when the vector is full.
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), T> {
        if self.len == self.cap {
            return Err(value);
        }
        // SAFETY: `len < cap`, so the slot is inside the memory owned, and
        // it holds no element (only `..len` do): writing it drops nothing
        // and aliases no reference handed out (those borrow `self`).
        unsafe { self.ptr.as_ptr().add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// The unused capacity, `len..cap`, as uninitialised slots (a value
    /// written there is neither read nor dropped by the vector).
    #[inline]
    pub fn spare_capacity_mut(&mut self) -> &mut [std::mem::MaybeUninit<T>] {
        // SAFETY: `len..cap` is inside the memory owned and holds no
        // element; `MaybeUninit` makes no claim on its contents, and the
        // slice borrows `self` mutably, so nothing else aliases it.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr
                    .as_ptr()
                    .add(self.len)
                    .cast::<std::mem::MaybeUninit<T>>(),
                self.cap - self.len,
            )
        }
    }

    /// Makes room for at least `cap` elements (no-op when `cap` is not more
    /// than the capacity): a heap vector grows as a `Vec` does (`realloc`,
    /// in place when it can); a region's moves its elements to a new heap
    /// vector and gives the whole pages it leaves back to the system (the
    /// range is never carved again). Unchanged on error.
    pub fn regrow(&mut self, cap: usize) -> Result<(), std::collections::TryReserveError> {
        if cap <= self.cap {
            return Ok(());
        }
        if self.region.is_none() {
            // SAFETY: without a region, `ptr`/`len`/`cap` are the `Vec`
            // taken over in `from_vec` (kept in step since): rebuilt here
            // only to grow it in place or by `realloc`, then taken over
            // again; `ManuallyDrop` keeps it from freeing anything, on
            // success or error.
            let mut v = std::mem::ManuallyDrop::new(unsafe {
                Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.cap)
            });
            let grown = v.try_reserve_exact(cap - self.len);
            // Unchanged on error: `v` still holds the old allocation.
            self.ptr = std::ptr::NonNull::new(v.as_mut_ptr()).unwrap_or(self.ptr);
            self.cap = v.capacity();
            return grown;
        }
        let mut fresh = FixedVec::try_with_capacity(cap)?;
        // SAFETY: the two allocations are distinct; `fresh` has room for
        // `cap > len` elements and holds none; after the copy the elements
        // belong to `fresh` alone, since `self.len` is set to 0 before
        // `self` (now empty) is dropped by the assignment below.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), fresh.ptr.as_ptr(), self.len);
        }
        fresh.len = self.len;
        self.len = 0;
        *self = fresh;
        Ok(())
    }
}

impl FixedVec<u64> {
    /// `n` zeroes, carved from `region` (carved memory is zeroed: a
    /// region's bytes are handed out once) or, when it has no room or is
    /// `None`, on the heap as zeroed memory whose pages the system
    /// provides as they are first written.
    pub fn try_zeroed(
        region: Option<&Arc<Region>>,
        n: usize,
    ) -> Result<Self, std::collections::TryReserveError> {
        if let Some(mut v) = region.and_then(|r| Self::carved(r, n)) {
            // A carved range was never written since the mapping zeroed
            // it, and zero is a `u64`.
            v.len = n;
            return Ok(v);
        }
        // Whether the memory can be had, asked without aborting; then the
        // zeroed allocation itself.
        Vec::<u64>::new().try_reserve_exact(n)?;
        Ok(FixedVec::from_vec(vec![0u64; n]))
    }
}

impl<T: Clone> Clone for FixedVec<T> {
    /// A copy on the heap, with the same capacity.
    fn clone(&self) -> Self {
        let mut v = Vec::with_capacity(self.cap);
        v.extend_from_slice(self);
        FixedVec::from_vec(v)
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for FixedVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a, T> IntoIterator for &'a FixedVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> std::ops::Deref for FixedVec<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `..len` are initialised elements in memory owned by the
        // vector (or a dangling, aligned pointer with `len` 0), borrowed
        // shared for as long as `self` is.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> std::ops::DerefMut for FixedVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, borrowed mutably for as long as `self` is.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for FixedVec<T> {
    fn drop(&mut self) {
        let len = std::mem::replace(&mut self.len, 0);
        match &self.region {
            // SAFETY: without a region, `ptr`/`cap` are the allocation of
            // the `Vec` taken over in `from_vec` and `..len` its
            // initialised elements, all owned here and given back once, as
            // the `Vec` (which frees its memory even if an element's drop
            // panics).
            None => drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), len, self.cap) }),
            Some(region) => {
                let elements = std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), len);
                // SAFETY: `..len` were initialised and owned by the vector;
                // they are dropped once, here (`len` is already 0).
                unsafe { std::ptr::drop_in_place(elements) };
                region.release(
                    self.ptr.as_ptr().cast(),
                    self.cap * std::mem::size_of::<T>(),
                );
            }
        }
    }
}

/// A mutual-exclusion lock released by a plain store (the change
/// journal's: `journal/ring.rs`). Taking it free is one locked
/// compare-and-swap and letting it go is an ordinary store, where a
/// `parking_lot` mutex takes a second locked instruction to let go (it
/// must see whether a waiter is parked, so its release is a
/// read-modify-write). On the put path a locked instruction waits for the
/// operation's earlier stores to reach the cache, so the one saved per
/// append is measurable (bench/README.md). A waiter spins a little, then
/// yields its CPU until the lock is free: the lock suits data held briefly
/// (an append, a reader's locating: a few hundred instructions, more only
/// when an append starts a chunk or writes a record of many kilobytes)
/// with nothing else taken while it is held, as the journal's is. It is
/// not a `parking_lot` lock, so that crate's deadlock detection (the
/// hooks build) does not see it; nothing is taken while it is held.
pub(crate) struct SpinLock<T> {
    locked: std::sync::atomic::AtomicBool,
    value: std::cell::UnsafeCell<T>,
}

// SAFETY: the lock hands out `&mut T` to one holder at a time (see
// `lock`), so sharing the lock between threads shares `T` only as a
// `Mutex<T>` does: `T: Send` suffices.
unsafe impl<T: Send> Sync for SpinLock<T> {}
unsafe impl<T: Send> Send for SpinLock<T> {}

/// Reads of a held [`SpinLock`] a waiter spins for before it yields.
const SPIN_TRIES: u32 = 100;

/// [`SpinLock`]'s hold: `T` while it lives, released when dropped.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    /// Shared between threads only as `&mut T` is (when `T: Sync`): a
    /// shared guard hands out `&T`, which for a `T` that is only `Send`
    /// (a `Cell`) would race. The lock reference alone would make the
    /// guard `Sync` whenever `T: Send`.
    _holds: std::marker::PhantomData<&'a mut T>,
}

impl<T> SpinLock<T> {
    pub(crate) fn new(value: T) -> Self {
        SpinLock {
            locked: std::sync::atomic::AtomicBool::new(false),
            value: std::cell::UnsafeCell::new(value),
        }
    }

    /// Takes the lock, waiting while another thread holds it. Not
    /// re-entrant: a thread that takes it again while holding it waits for
    /// ever (the journal calls nothing that takes it while it holds it).
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        if self
            .locked
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
        SpinGuard {
            lock: self,
            _holds: std::marker::PhantomData,
        }
    }

    /// Waits for the holder to let go: [`SPIN_TRIES`] reads spinning, then
    /// a yield of this thread's CPU per read (a holder that was preempted
    /// gets to run and finish).
    #[cold]
    fn lock_slow(&self) {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        let mut spins = 0u32;
        loop {
            while self.locked.load(Relaxed) {
                if spins < SPIN_TRIES {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Acquire, Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock
            .locked
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // What a writer fills is what readers read, and nothing past the
    // filled prefix can be read.
    #[test]
    fn a_fill_buf_hands_out_only_filled_bytes() {
        let mut w = FillWriter::new(16);
        let r = w.shared();
        assert_eq!(r.filled_bytes(0, 4), None, "nothing is filled yet");
        assert_eq!(r.filled_bytes(0, 0), Some(&b""[..]));
        assert!(w.fill_with(3, |b| b.copy_from_slice(b"abc")));
        assert_eq!((w.filled(), w.room(), w.len()), (3, 13, 16));
        assert_eq!(r.filled_bytes(0, 4), None, "byte 3 is not filled");
        assert_eq!(r.filled_bytes(1, 2), Some(&b"bc"[..]));
        assert_eq!(r.filled_bytes(usize::MAX, 2), None, "no overflow");
        assert!(!w.fill_with(14, |_| panic!("must not be called")));
        assert!(w.fill_with(13, |b| b.fill(b'x')));
        assert_eq!(r.filled_bytes(15, 1), Some(&b"x"[..]));
        assert_eq!(r.filled_bytes(15, 2), None, "past the buffer");
    }

    // A reset writes over the bytes only when no reader holds the buffer.
    #[test]
    fn a_fill_buf_is_reset_only_by_its_sole_holder() {
        let mut w = FillWriter::new(8);
        assert!(w.fill_with(8, |b| b.fill(7)));
        let r = w.shared();
        assert!(!w.reset(), "a reader holds it");
        assert_eq!(r.filled_bytes(0, 8), Some(&[7u8; 8][..]));
        drop(r);
        assert!(w.reset());
        assert_eq!(w.filled(), 0);
        assert!(w.fill_with(2, |b| assert_eq!(b, [0, 0])));
    }

    // Readers on other threads read while the writer fills: every read of
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
                    let mut checked = 0usize;
                    while checked < LEN {
                        let n = 257.min(LEN - checked);
                        if let Some(bytes) = r.filled_bytes(checked, n) {
                            for (i, b) in bytes.iter().enumerate() {
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

    // A fixed vector refuses past its capacity, keeps its elements when it
    // moves to a larger one, and drops each element once.
    #[test]
    fn a_fixed_vec_holds_what_it_was_given_and_drops_it_once() {
        let token = std::rc::Rc::new(());
        let mut v = FixedVec::try_with_capacity(3).unwrap();
        assert!(!v.in_region());
        for _ in 0..v.capacity() {
            assert!(v.push(std::rc::Rc::clone(&token)).is_ok());
        }
        assert!(v.push(std::rc::Rc::clone(&token)).is_err(), "full: refused");
        assert_eq!(std::rc::Rc::strong_count(&token), 1 + v.len());
        let cap = v.capacity();
        v.regrow(cap + 5).unwrap();
        assert!(v.capacity() >= cap + 5);
        assert_eq!(v.len(), cap);
        assert!(v.iter().all(|t| std::rc::Rc::ptr_eq(t, &token)));
        assert!(v.push(std::rc::Rc::clone(&token)).is_ok());
        assert_eq!(std::rc::Rc::strong_count(&token), 1 + v.len());
        let (len, cap) = (v.len(), v.capacity());
        assert!(v.regrow(usize::MAX).is_err(), "no such allocation");
        assert_eq!((v.len(), v.capacity()), (len, cap), "unchanged on error");
        assert_eq!(std::rc::Rc::strong_count(&token), 1 + v.len());
        assert_eq!(v.spare_capacity_mut().len(), v.capacity() - v.len());
        drop(v);
        assert_eq!(std::rc::Rc::strong_count(&token), 1, "each dropped once");
        let empty: FixedVec<String> = FixedVec::default();
        assert_eq!((empty.len(), empty.iter().count()), (0, 0));
    }

    // Vectors carved from a region take disjoint, zeroed, line-aligned
    // ranges of it; once it is full they are made on the heap; the region
    // outlives every vector carved from it, whoever drops first.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_region_hands_out_disjoint_zeroed_ranges_then_the_heap_takes_over() {
        let region = Region::map_committed(1).expect("a 2 MiB mapping");
        assert_eq!((region.len(), region.carved()), (HUGE_PAGE, 0));
        assert_eq!(
            region.base.as_ptr() as usize % HUGE_PAGE,
            0,
            "on a huge page"
        );
        assert!(
            region.carve(8, 2 * HUGE_PAGE).is_none(),
            "beyond the base's alignment"
        );
        assert!(region.carve(8, 3).is_none(), "not a power of two");
        assert_eq!(region.carved(), 0);
        let mut a = FixedVec::<u64>::try_zeroed(Some(&region), 1000).unwrap();
        let b = FixedVec::<u64>::try_zeroed(Some(&region), 3).unwrap();
        assert!(a.in_region() && b.in_region());
        assert_eq!(region.carved(), 8000_usize.next_multiple_of(64) + 24);
        assert!(a.iter().chain(b.iter()).all(|&x| x == 0));
        assert_eq!(b.as_ptr() as usize % 64, 0);
        a.iter_mut().for_each(|x| *x = u64::MAX);
        assert!(
            b.iter().all(|&x| x == 0),
            "a write to one is not seen in the other"
        );
        let mut c = FixedVec::<String>::try_in(Some(&region), 4).unwrap();
        assert!(c.in_region());
        assert!(c.push("kept".to_string()).is_ok());
        let rest = HUGE_PAGE - region.carved();
        let heap = FixedVec::<u8>::try_in(Some(&region), rest + 1).unwrap();
        assert!(!heap.in_region(), "no room left: the heap");
        let last = FixedVec::<u8>::try_in(Some(&region), rest - 63).unwrap();
        assert!(last.in_region(), "the rest still fits, aligned");
        drop(region);
        assert_eq!(c[0], "kept", "the vectors hold the mapping");
        c.regrow(8).unwrap();
        assert!(!c.in_region());
        assert_eq!(c[0], "kept");
        assert!(Region::map_committed(0).is_none());
        assert!(Region::map_committed(usize::MAX).is_none());
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

    /// Pages of `bytes` bytes at `start` that are not resident.
    #[cfg(target_os = "linux")]
    fn pages_not_resident(start: *const u8, bytes: usize) -> usize {
        let from = (start as usize) & !(BASE_PAGE - 1);
        let to = (start as usize + bytes).next_multiple_of(BASE_PAGE);
        let mut resident = vec![0u8; (to - from) / BASE_PAGE];
        // SAFETY: mincore only reads the process's page tables for the
        // range and writes one byte per page into `resident`, which has
        // exactly that many.
        let rc =
            unsafe { libc::mincore(from as *mut libc::c_void, to - from, resident.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
        resident.iter().filter(|&&r| r & 1 == 0).count()
    }

    /// A fresh private anonymous mapping of `pages` system pages, none of
    /// them resident yet, unmapped on drop.
    #[cfg(target_os = "linux")]
    struct Fresh {
        base: *mut u8,
        len: usize,
    }

    #[cfg(target_os = "linux")]
    impl Fresh {
        fn new(pages: usize) -> Fresh {
            let len = pages * page_size();
            // SAFETY: asks for a new mapping; no memory of the program is
            // read or written, and the result is checked before use.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(base, libc::MAP_FAILED, "mmap");
            Fresh {
                base: base.cast(),
                len,
            }
        }

        /// Whether each page of the mapping is resident.
        fn resident(&self) -> Vec<bool> {
            let mut r = vec![0u8; self.len / page_size()];
            // SAFETY: mincore reads the page tables of this mapping and
            // writes one byte per page into `r`, which has that many.
            let rc = unsafe { libc::mincore(self.base.cast(), self.len, r.as_mut_ptr()) };
            assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
            r.iter().map(|&b| b & 1 == 1).collect()
        }

        /// `count` uninitialised `T`s from byte `from` of the mapping.
        fn room<T>(&mut self, from: usize, count: usize) -> &mut [std::mem::MaybeUninit<T>] {
            assert_eq!(from % std::mem::align_of::<T>(), 0);
            assert!(from + count * std::mem::size_of::<T>() <= self.len);
            // SAFETY: the range lies inside the mapping (checked above),
            // aligned for T, readable and writable; it is borrowed through
            // `&mut self`, so nothing else aliases it; `MaybeUninit` makes
            // no claim on its bytes.
            unsafe { std::slice::from_raw_parts_mut(self.base.add(from).cast(), count) }
        }
    }

    #[cfg(target_os = "linux")]
    impl Drop for Fresh {
        fn drop(&mut self) {
            // SAFETY: unmaps the mapping `new` made; every view of it
            // borrowed `self`, so none outlives it.
            unsafe { libc::munmap(self.base.cast(), self.len) };
        }
    }

    // Faulting in a room faults in exactly its pages: the whole ones by
    // the advice, the partial ones at its ends by a byte each, the same
    // pages by the fallback that writes a byte per page, and no page
    // outside the room (which may belong to another allocation).
    #[cfg(target_os = "linux")]
    #[test]
    fn fault_in_spare_faults_in_exactly_the_pages_of_the_room() {
        let page = page_size();
        // From 40 bytes into page 1 to 100 bytes into page 13, in 24-byte
        // entries (their end falls short of page 13's 100th byte).
        let (from, end) = (page + 40, 13 * page + 100);
        let want: Vec<bool> = (0..16).map(|p| (1..=13).contains(&p)).collect();
        for fallback in [false, true] {
            let mut m = Fresh::new(16);
            assert!(m.resident().iter().all(|&r| !r), "a fresh mapping");
            if fallback {
                touch_pages(m.room::<u8>(from, (end - from) / 24 * 24));
            } else {
                fault_in_spare(m.room::<[u8; 24]>(from, (end - from) / 24));
            }
            assert_eq!(m.resident(), want, "fallback: {fallback}");
        }
        // A room that ends where a page starts leaves that page alone.
        let mut m = Fresh::new(16);
        fault_in_spare(m.room::<u8>(page + 40, 12 * page - 40));
        let want: Vec<bool> = (0..16).map(|p| (1..=12).contains(&p)).collect();
        assert_eq!(m.resident(), want, "a room ending at a page boundary");
        // A room within one page, and an empty one.
        let mut m = Fresh::new(4);
        fault_in_spare(m.room::<u64>(2 * page + 8, 3));
        fault_in_spare(m.room::<u64>(page, 0));
        assert_eq!(m.resident(), [false, false, true, false]);
    }

    // Faulting in a vector's spare room makes every page of it resident
    // and leaves the vector as it was: its length, the values it holds.
    #[test]
    fn fault_in_spare_makes_the_room_resident_and_changes_nothing() {
        // Large enough for the allocator to map it fresh (untouched pages).
        for (held, cap) in [(0usize, 1usize << 20), (3, 300_001), (5, 5), (0, 0)] {
            let mut v: Vec<u64> = (0..held as u64).collect();
            v.reserve_exact(cap - held);
            let spare = v.spare_capacity_mut();
            let (start, bytes) = (spare.as_ptr().cast::<u8>(), std::mem::size_of_val(spare));
            fault_in_spare(spare);
            assert_eq!(v.len(), held);
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
            #[cfg(target_os = "linux")]
            if bytes > 0 {
                assert_eq!(pages_not_resident(start, bytes), 0, "cap {cap}");
            }
            let _ = (start, bytes);
            v.extend(held as u64..cap as u64);
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        }
    }

    // The lock hands its value to one holder at a time: threads that each
    // add to a plain (non-atomic) pair under it, many times, end with
    // every addition counted and the pair's halves equal, which two
    // holders at once would break (the read-modify-writes would interleave
    // between the halves); the threads outnumber this machine's CPUs, so
    // waiters spin, yield and run while a holder is preempted.
    #[test]
    fn spin_lock_gives_its_value_to_one_holder_at_a_time() {
        const THREADS: u64 = 6;
        const ADDS: u64 = 20_000;
        let lock = Arc::new(SpinLock::new((0u64, 0u64)));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..ADDS {
                        let mut g = lock.lock();
                        let a = g.0;
                        g.0 = a + 1;
                        std::hint::spin_loop();
                        assert_eq!(g.1, a, "another holder changed the pair meanwhile");
                        g.1 = a + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("adder");
        }
        assert_eq!(*lock.lock(), (THREADS * ADDS, THREADS * ADDS));
    }

    // A guard lets go when dropped, also when its holder unwinds, and a
    // panic while held leaves the lock free for the next taker.
    #[test]
    fn spin_lock_is_free_after_a_holder_panics() {
        let lock = Arc::new(SpinLock::new(7u32));
        let l = lock.clone();
        let r = std::thread::spawn(move || {
            let mut g = l.lock();
            *g = 8;
            panic!("holder fails");
        })
        .join();
        assert!(r.is_err());
        assert_eq!(*lock.lock(), 8);
    }
}
