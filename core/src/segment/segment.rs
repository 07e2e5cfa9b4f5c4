//! One mounted segment: its identity and its offset allocator, whose
//! allocated blocks record the object that owns them (its key hash), so an
//! unmount finds the affected objects, and each one's replica by segment
//! and block, in O(buffers on the segment) without a separate address map.

use crate::memory::Region;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::allocator::{AllocError, BlockId, OffsetAllocator};
use crate::types::{ClientId, Pool, SegmentId, SegmentSpec};

/// The object a buffer belongs to, as its block records it: the hash of
/// the object's key, which picks its shard and finds it in the shard's
/// index. Which of the object's replicas holds the buffer is not recorded:
/// the replica names its block (segment and [`BlockId`]), and while a block
/// is allocated no other buffer of its segment has its id, so a holder
/// finds it by those. Eight bytes, so a block's slot in the allocator's
/// slab is 32 (two to a cache line). Opaque: made and read only through
/// these methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferOwner {
    object_hash: u64,
}

const _: () = assert!(std::mem::size_of::<BufferOwner>() == 8);

impl BufferOwner {
    /// A buffer of the object whose key hashes to `object_hash` (a
    /// discarded buffer restored from a snapshot: the hash that picked the
    /// shard it waits in).
    pub fn object(object_hash: u64) -> Self {
        BufferOwner { object_hash }
    }

    /// The owning object's key hash (it picks the shard).
    pub fn object_hash(self) -> u64 {
        self.object_hash
    }
}

/// One allocated buffer of a segment (see [`Segment::live_buffers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveBuffer {
    pub address: u64,
    pub len: u64,
    pub owner: BufferOwner,
    /// What [`Segment::free`] (or `free_later`) needs besides the address
    /// and length.
    pub block: BlockId,
}

/// A mounted segment. Identity fields are immutable; allocation state sits
/// behind a mutex held only for the duration of one allocator call (which
/// may merge up to `DEFERRED` waiting frees first: `free_later`).
pub struct Segment {
    pub id: SegmentId,
    pub name: Arc<str>,
    pub owner: ClientId,
    pub pool: Pool,
    /// Absolute address of the first byte; buffer addresses are `base + offset`.
    pub base: u64,
    pub size: u64,
    /// Free space and every allocated buffer with its owner.
    alloc: Mutex<OffsetAllocator<BufferOwner>>,
    /// Mirror of `alloc.allocated_bytes()`, written under the lock after
    /// every call that can change it (a merge of waiting frees included:
    /// [`settled`](Self::settled)), so metrics and watermark checks read it
    /// without contending with writers.
    allocated: AtomicU64,
}

impl Segment {
    /// A segment with all of its space free. `spec` is expected to be
    /// validated (`SegmentTable::mount` does); should `base + size` overflow
    /// anyway, the allocator is clamped so no address can wrap.
    #[cfg(test)]
    pub fn new(id: SegmentId, owner: ClientId, spec: &SegmentSpec) -> Self {
        Self::in_region(id, owner, spec, None)
    }

    /// As [`new`](Self::new), the allocator's block slots carved from
    /// `region` while it has room (`commit_presized`).
    pub(crate) fn in_region(
        id: SegmentId,
        owner: ClientId,
        spec: &SegmentSpec,
        region: Option<Arc<Region>>,
    ) -> Self {
        let capacity = spec.size.min(u64::MAX - spec.base);
        Segment {
            id,
            name: Arc::from(spec.name.as_str()),
            owner,
            pool: spec.pool,
            base: spec.base,
            size: spec.size,
            alloc: Mutex::new(OffsetAllocator::in_region(capacity, region)),
            allocated: AtomicU64::new(0),
        }
    }

    /// Allocates `len` bytes (best fit) for `owner`; returns the absolute
    /// address and the block id [`free`](Self::free) takes back, or `None`
    /// if `len` is 0 or there is no room.
    pub fn allocate(&self, len: u64, owner: BufferOwner) -> Option<(u64, BlockId)> {
        let mut alloc = self.alloc.lock();
        let (offset, block) = alloc.allocate(len, owner)?;
        self.publish(&alloc);
        Some((self.base + offset, block))
    }

    /// Frees the buffer `block` at `address`, which must have exactly `len`
    /// bytes: a range outside the segment is `OutOfRange`, an empty one
    /// `ZeroLength`, and a block id that names no buffer with exactly this
    /// address and length `UnknownBlock` (a double free, a wrong length, an
    /// address inside a buffer: each would free someone else's bytes or
    /// nothing). Nothing changes on error.
    pub fn free(&self, block: BlockId, address: u64, len: u64) -> Result<(), AllocError> {
        self.freeing(address, len, |alloc, offset| {
            alloc.free(block, offset, len).map(drop)
        })
    }

    /// Frees the buffer `block` at `address` of `len` bytes as
    /// [`free`](Self::free) does, its merge into the free ranges deferred
    /// and done with others ([`OffsetAllocator::free_later`]): the bytes
    /// count as free at once, and every later call sees what freeing now
    /// would have left. Checks the range now (`OutOfRange`, `ZeroLength`,
    /// and `UnknownBlock` for more bytes than are allocated); a block that
    /// is not there with exactly this range is a caller's bug, refused now
    /// by a debug build and when it merges by a release build.
    pub fn free_later(&self, block: BlockId, address: u64, len: u64) -> Result<(), AllocError> {
        self.freeing(address, len, |alloc, offset| {
            alloc.free_later(block, offset, len)
        })
    }

    /// What both frees share: the range checked and turned into an offset,
    /// `free` run on the allocator under its lock, the allocated-bytes
    /// mirror published after it (nothing changes on error).
    fn freeing(
        &self,
        address: u64,
        len: u64,
        free: impl FnOnce(&mut OffsetAllocator<BufferOwner>, u64) -> Result<(), AllocError>,
    ) -> Result<(), AllocError> {
        let offset = self.offset_of(address, len)?;
        let mut alloc = self.alloc.lock();
        free(&mut alloc, offset)?;
        self.publish(&alloc);
        Ok(())
    }

    /// Marks exactly `address..address+len` allocated for `owner` (snapshot
    /// restore) and returns its block id. The range must be entirely free,
    /// else `Overlap`.
    pub fn reserve(
        &self,
        address: u64,
        len: u64,
        owner: BufferOwner,
    ) -> Result<BlockId, AllocError> {
        let offset = self.offset_of(address, len)?;
        let mut alloc = self.alloc.lock();
        let block = alloc.reserve(offset, len, owner)?;
        self.publish(&alloc);
        Ok(block)
    }

    /// The length and owner of the buffer `block` at `address`, if it exists.
    pub fn buffer(&self, block: BlockId, address: u64) -> Option<(u64, BufferOwner)> {
        let offset = address.checked_sub(self.base)?;
        let b = self.settled().block(block, offset).ok()?;
        Some((b.len, b.owner))
    }

    /// Bytes currently allocated; lock-free.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Bytes of the allocator's block slots that lie in a region
    /// (`commit_presized`).
    pub fn region_bytes(&self) -> usize {
        self.alloc.lock().region_bytes()
    }

    /// The largest allocation that would currently succeed.
    pub fn largest_free(&self) -> u64 {
        self.settled().largest_free()
    }

    /// Every live buffer, sorted by address.
    pub fn live_buffers(&self) -> Vec<LiveBuffer> {
        let mut out: Vec<LiveBuffer> = {
            let mut alloc = self.settled();
            alloc
                .blocks()
                .map(|(block, b)| LiveBuffer {
                    address: self.base + b.offset,
                    len: b.len,
                    owner: b.owner,
                    block,
                })
                .collect()
        };
        // Sort outside the lock: only the copy is needed for that.
        out.sort_unstable_by_key(|b| b.address);
        out
    }

    /// The owner and block of every live buffer, in no particular order:
    /// what an unmount needs, in one walk over the blocks.
    pub fn owners(&self) -> Vec<(BufferOwner, BlockId)> {
        let mut alloc = self.settled();
        let mut out = Vec::with_capacity(alloc.block_count());
        out.extend(alloc.blocks().map(|(id, b)| (b.owner, id)));
        out
    }

    pub fn live_count(&self) -> usize {
        self.settled().block_count()
    }

    /// Whether `owner` mounting `spec` is the same mount as this segment (an
    /// idempotent re-mount rather than a name conflict).
    pub fn matches_spec(&self, owner: ClientId, spec: &SegmentSpec) -> bool {
        self.owner == owner
            && *self.name == *spec.name
            && self.base == spec.base
            && self.size == spec.size
            && self.pool == spec.pool
    }

    /// Converts an absolute range to an allocator offset, rejecting empty
    /// ranges and ranges not inside the segment.
    fn offset_of(&self, address: u64, len: u64) -> Result<u64, AllocError> {
        if len == 0 {
            return Err(AllocError::ZeroLength);
        }
        let offset = address
            .checked_sub(self.base)
            .ok_or(AllocError::OutOfRange)?;
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(offset),
            _ => Err(AllocError::OutOfRange),
        }
    }

    /// The allocator under its lock, its waiting frees merged and the
    /// mirror of its allocated bytes brought up to date (a merge that
    /// refuses a bad free gives its bytes back): for the calls that only
    /// read it.
    fn settled(&self) -> MutexGuard<'_, OffsetAllocator<BufferOwner>> {
        let mut alloc = self.alloc.lock();
        alloc.settle();
        self.publish(&alloc);
        alloc
    }

    fn publish(&self, alloc: &OffsetAllocator<BufferOwner>) {
        self.allocated
            .store(alloc.allocated_bytes(), Ordering::Relaxed);
    }
}

impl fmt::Debug for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Segment")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("pool", &self.pool)
            .field("base", &self.base)
            .field("size", &self.size)
            .field("allocated", &self.allocated_bytes())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0x1000_0000;

    fn seg(size: u64) -> Segment {
        Segment::new(
            7,
            42,
            &SegmentSpec {
                name: "seg-a".into(),
                base: BASE,
                size,
                pool: Pool::Memory,
            },
        )
    }

    fn owner(object_hash: u64) -> BufferOwner {
        BufferOwner::object(object_hash)
    }

    /// `(address, len, owner)` of every live buffer, by address.
    fn bufs(s: &Segment) -> Vec<(u64, u64, BufferOwner)> {
        s.live_buffers()
            .into_iter()
            .map(|b| (b.address, b.len, b.owner))
            .collect()
    }

    #[test]
    fn allocate_returns_absolute_addresses_and_tracks_owners() {
        let s = seg(1000);
        let (a, ba) = s.allocate(100, owner(1)).unwrap();
        let (b, bb) = s.allocate(200, owner(2)).unwrap();
        assert_eq!(a, BASE);
        assert_eq!(b, BASE + 100);
        assert_eq!(s.allocated_bytes(), 300);
        assert_eq!(s.largest_free(), 700);
        assert_eq!(s.live_count(), 2);
        assert_eq!(bufs(&s), vec![(a, 100, owner(1)), (b, 200, owner(2))]);
        assert_eq!(s.buffer(ba, a), Some((100, owner(1))));
        assert_eq!(s.buffer(bb, b), Some((200, owner(2))));
        assert_eq!(s.buffer(bb, a), None);
        assert_eq!(s.allocate(701, owner(3)), None);
        assert_eq!(s.allocate(0, owner(3)), None);
        assert_eq!(s.live_count(), 2);
        let mut owners = s.owners();
        owners.sort_unstable_by_key(|o| o.0.object_hash());
        assert_eq!(owners, [(owner(1), ba), (owner(2), bb)]);
    }

    /// A deferred free counts at once in the lock-free allocated bytes, and
    /// every reader sees the buffer gone; its range is checked at the call.
    #[test]
    fn a_deferred_free_is_seen_at_once() {
        let s = seg(1000);
        let (a, ba) = s.allocate(100, owner(1)).unwrap();
        let (b, bb) = s.allocate(200, owner(2)).unwrap();
        assert_eq!(s.free_later(ba, a, 0), Err(AllocError::ZeroLength));
        assert_eq!(s.free_later(ba, BASE - 1, 10), Err(AllocError::OutOfRange));
        assert_eq!(s.free_later(ba, a, 400), Err(AllocError::UnknownBlock));
        assert_eq!(s.allocated_bytes(), 300);
        s.free_later(ba, a, 100).unwrap();
        assert_eq!(s.allocated_bytes(), 200);
        assert_eq!(s.buffer(ba, a), None);
        assert_eq!(bufs(&s), vec![(b, 200, owner(2))]);
        assert_eq!(s.live_count(), 1);
        assert_eq!(s.owners(), [(owner(2), bb)]);
        assert_eq!(s.largest_free(), 700);
        s.free_later(bb, b, 200).unwrap();
        assert_eq!(s.allocated_bytes(), 0);
        assert_eq!(s.largest_free(), 1000);
        assert_eq!(s.allocate(1000, owner(4)).map(|p| p.0), Some(BASE));
    }

    #[test]
    fn free_requires_an_exact_live_buffer() {
        let s = seg(1000);
        let (a, ba) = s.allocate(100, owner(1)).unwrap();
        let (b, bb) = s.allocate(100, owner(2)).unwrap();
        assert_eq!(s.free(ba, a, 50), Err(AllocError::UnknownBlock)); // wrong length
        assert_eq!(s.free(ba, a, 200), Err(AllocError::UnknownBlock)); // spans two buffers
        assert_eq!(s.free(ba, a + 10, 10), Err(AllocError::UnknownBlock)); // inside a buffer
        assert_eq!(s.free(bb, a, 100), Err(AllocError::UnknownBlock)); // another buffer's id
        assert_eq!(s.free(ba, BASE - 1, 10), Err(AllocError::OutOfRange));
        assert_eq!(s.free(ba, BASE + 990, 20), Err(AllocError::OutOfRange));
        assert_eq!(s.free(ba, u64::MAX, 20), Err(AllocError::OutOfRange));
        assert_eq!(s.free(ba, a, 0), Err(AllocError::ZeroLength));
        assert_eq!(s.allocated_bytes(), 200);
        assert_eq!(s.live_count(), 2);

        s.free(ba, a, 100).unwrap();
        assert_eq!(s.free(ba, a, 100), Err(AllocError::UnknownBlock)); // double free
        s.free(bb, b, 100).unwrap();
        assert_eq!(s.allocated_bytes(), 0);
        assert_eq!(s.live_count(), 0);
        assert_eq!(s.largest_free(), 1000);
    }

    #[test]
    fn reserve_carves_and_registers_the_buffer() {
        let s = seg(1000);
        let r = s.reserve(BASE + 500, 100, owner(9)).unwrap();
        assert_eq!(s.allocated_bytes(), 100);
        assert_eq!(bufs(&s), vec![(BASE + 500, 100, owner(9))]);
        assert_eq!(s.live_buffers()[0].block, r);
        assert_eq!(
            s.reserve(BASE + 550, 100, owner(10)),
            Err(AllocError::Overlap)
        );
        assert_eq!(
            s.reserve(BASE + 950, 100, owner(10)),
            Err(AllocError::OutOfRange)
        );
        assert_eq!(s.reserve(BASE, 0, owner(10)), Err(AllocError::ZeroLength));
        assert_eq!(s.live_count(), 1);
        // Best fit now sees holes of 500 and 400.
        assert_eq!(s.allocate(400, owner(11)).map(|p| p.0), Some(BASE + 600));
        s.free(r, BASE + 500, 100).unwrap();
        assert_eq!(s.allocated_bytes(), 400);
    }

    /// Owners stay with their buffers while frees coalesce holes and later
    /// allocations reuse both the bytes and the freed blocks' slots.
    #[test]
    fn owners_survive_free_reuse_and_coalescing() {
        let s = seg(1000);
        let p: Vec<(u64, BlockId)> = (0..10)
            .map(|i| s.allocate(100, owner(i)).unwrap())
            .collect();
        for i in [1, 2, 3, 7] {
            s.free(p[i].1, p[i].0, 100).unwrap();
        }
        // [100, 400) coalesced into one hole; best fit puts 250 there.
        let (x, bx) = s.allocate(250, owner(100)).unwrap();
        assert_eq!(x, BASE + 100);
        let (y, by) = s.allocate(100, owner(101)).unwrap(); // the hole at 700
        assert_eq!(y, BASE + 700);
        let mut expected: Vec<_> = [0, 4, 5, 6, 8, 9]
            .iter()
            .map(|&i| (p[i].0, 100, owner(i as u64)))
            .collect();
        expected.push((x, 250, owner(100)));
        expected.push((y, 100, owner(101)));
        expected.sort_unstable_by_key(|e| e.0);
        assert_eq!(bufs(&s), expected);
        // The freed blocks' ids are stale: each names nothing or the new
        // buffer in its slot, which a stale (address, length) never matches.
        for i in [1, 2, 3, 7] {
            assert_eq!(s.free(p[i].1, p[i].0, 100), Err(AllocError::UnknownBlock));
        }
        assert_eq!(s.buffer(bx, x), Some((250, owner(100))));
        assert_eq!(s.buffer(by, y), Some((100, owner(101))));
        for b in s.live_buffers() {
            s.free(b.block, b.address, b.len).unwrap();
        }
        assert_eq!(s.largest_free(), 1000);
        assert_eq!(s.live_count(), 0);
    }

    #[test]
    fn matches_spec_compares_every_field() {
        let s = seg(1000);
        let spec = SegmentSpec {
            name: "seg-a".into(),
            base: BASE,
            size: 1000,
            pool: Pool::Memory,
        };
        assert!(s.matches_spec(42, &spec));
        assert!(!s.matches_spec(43, &spec));
        for changed in [
            SegmentSpec {
                name: "seg-b".into(),
                ..spec.clone()
            },
            SegmentSpec {
                base: BASE + 1,
                ..spec.clone()
            },
            SegmentSpec {
                size: 999,
                ..spec.clone()
            },
            SegmentSpec {
                pool: Pool::NofSsd,
                ..spec.clone()
            },
        ] {
            assert!(!s.matches_spec(42, &changed), "{changed:?}");
        }
    }

    #[test]
    fn overflowing_spec_never_yields_wrapping_addresses() {
        let s = Segment::new(
            1,
            1,
            &SegmentSpec {
                name: "top".into(),
                base: u64::MAX - 10,
                size: 100,
                pool: Pool::Memory,
            },
        );
        assert_eq!(s.allocate(11, owner(1)), None);
        assert_eq!(s.allocate(10, owner(1)).map(|p| p.0), Some(u64::MAX - 10));
    }
}
