//! One mounted segment: its identity, its offset allocator and the live
//! buffers placed in it, each tagged with the replica that owns it so an
//! unmount finds the affected objects in O(buffers on the segment).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

// Swiss table with foldhash (already the crate's hashing): the address map
// is touched by every allocation and free, where std's SipHash showed up.
use hashbrown::hash_map::{Entry, HashMap};
use parking_lot::Mutex;

use super::allocator::{AllocError, OffsetAllocator};
use crate::types::{ClientId, Pool, SegmentId, SegmentSpec};

/// The replica a buffer belongs to: the object (by its key hash, which picks
/// the shard) and the replica id within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferOwner {
    pub object_hash: u64,
    pub replica_id: u64,
}

/// A mounted segment. Identity fields are immutable; allocation state sits
/// behind a mutex held only for the duration of one allocator call.
pub struct Segment {
    pub id: SegmentId,
    pub name: Arc<str>,
    pub owner: ClientId,
    pub pool: Pool,
    /// Absolute address of the first byte; buffer addresses are `base + offset`.
    pub base: u64,
    pub size: u64,
    inner: Mutex<Inner>,
    /// Mirror of `inner.alloc.allocated_bytes()`, written under the lock, so
    /// metrics and watermark checks read it without contending with writers.
    allocated: AtomicU64,
}

struct Inner {
    alloc: OffsetAllocator,
    /// Absolute address -> (len, owner) of every allocated buffer.
    live: HashMap<u64, (u64, BufferOwner)>,
}

impl Segment {
    /// A segment with all of its space free. `spec` is expected to be
    /// validated (`SegmentTable::mount` does); should `base + size` overflow
    /// anyway, the allocator is clamped so no address can wrap.
    pub fn new(id: SegmentId, owner: ClientId, spec: &SegmentSpec) -> Self {
        let capacity = spec.size.min(u64::MAX - spec.base);
        Segment {
            id,
            name: Arc::from(spec.name.as_str()),
            owner,
            pool: spec.pool,
            base: spec.base,
            size: spec.size,
            inner: Mutex::new(Inner {
                alloc: OffsetAllocator::new(capacity),
                live: HashMap::new(),
            }),
            allocated: AtomicU64::new(0),
        }
    }

    /// Allocates `len` bytes (best fit) for `owner`; returns the absolute
    /// address, or `None` if `len` is 0 or no free range is large enough.
    pub fn allocate(&self, len: u64, owner: BufferOwner) -> Option<u64> {
        let mut inner = self.inner.lock();
        let offset = inner.alloc.allocate(len)?;
        let address = self.base + offset;
        inner.live.insert(address, (len, owner));
        self.publish(&inner);
        Some(address)
    }

    /// Frees the live buffer at `address`, which must have exactly `len`
    /// bytes: a wrong length or an address that starts no live buffer is
    /// `Overlap` (it would free someone else's bytes or nothing), a range
    /// outside the segment `OutOfRange`. Nothing changes on error.
    pub fn free(&self, address: u64, len: u64) -> Result<(), AllocError> {
        let offset = self.offset_of(address, len)?;
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        match inner.live.entry(address) {
            Entry::Occupied(live) if live.get().0 == len => {
                // Cannot fail while `live` and the allocator agree; done
                // before removing from `live` so that a broken invariant
                // still changes nothing.
                inner.alloc.free(offset, len)?;
                live.remove();
            }
            _ => return Err(AllocError::Overlap),
        }
        self.publish(inner);
        Ok(())
    }

    /// Marks exactly `address..address+len` allocated for `owner` (snapshot
    /// restore). The range must be entirely free, else `Overlap`.
    pub fn reserve(&self, address: u64, len: u64, owner: BufferOwner) -> Result<(), AllocError> {
        let offset = self.offset_of(address, len)?;
        let mut inner = self.inner.lock();
        inner.alloc.reserve(offset, len)?;
        inner.live.insert(address, (len, owner));
        self.publish(&inner);
        Ok(())
    }

    /// Re-points the live buffer at `address` to a new owner (e.g. a replica
    /// that moved to another record). `false` if no live buffer starts there.
    pub fn set_owner(&self, address: u64, owner: BufferOwner) -> bool {
        match self.inner.lock().live.get_mut(&address) {
            Some(entry) => {
                entry.1 = owner;
                true
            }
            None => false,
        }
    }

    /// Bytes currently allocated; lock-free.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// The largest allocation that would currently succeed.
    pub fn largest_free(&self) -> u64 {
        self.inner.lock().alloc.largest_free()
    }

    /// Every live buffer as `(address, len, owner)`, sorted by address.
    pub fn live_buffers(&self) -> Vec<(u64, u64, BufferOwner)> {
        let mut out: Vec<_> = {
            let inner = self.inner.lock();
            inner
                .live
                .iter()
                .map(|(&addr, &(len, owner))| (addr, len, owner))
                .collect()
        };
        // Sort outside the lock: only the copy is needed for that.
        out.sort_unstable_by_key(|&(addr, _, _)| addr);
        out
    }

    pub fn live_count(&self) -> usize {
        self.inner.lock().live.len()
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

    fn publish(&self, inner: &Inner) {
        self.allocated
            .store(inner.alloc.allocated_bytes(), Ordering::Relaxed);
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

    fn owner(replica_id: u64) -> BufferOwner {
        BufferOwner {
            object_hash: 0xABCD,
            replica_id,
        }
    }

    #[test]
    fn allocate_returns_absolute_addresses_and_tracks_owners() {
        let s = seg(1000);
        let a = s.allocate(100, owner(1)).unwrap();
        let b = s.allocate(200, owner(2)).unwrap();
        assert_eq!(a, BASE);
        assert_eq!(b, BASE + 100);
        assert_eq!(s.allocated_bytes(), 300);
        assert_eq!(s.largest_free(), 700);
        assert_eq!(s.live_count(), 2);
        assert_eq!(
            s.live_buffers(),
            vec![(a, 100, owner(1)), (b, 200, owner(2))]
        );
        assert_eq!(s.allocate(701, owner(3)), None);
        assert_eq!(s.allocate(0, owner(3)), None);
        assert_eq!(s.live_count(), 2);
    }

    #[test]
    fn free_requires_an_exact_live_buffer() {
        let s = seg(1000);
        let a = s.allocate(100, owner(1)).unwrap();
        let b = s.allocate(100, owner(2)).unwrap();
        assert_eq!(s.free(a, 50), Err(AllocError::Overlap)); // wrong length
        assert_eq!(s.free(a, 200), Err(AllocError::Overlap)); // spans two buffers
        assert_eq!(s.free(a + 10, 10), Err(AllocError::Overlap)); // inside a buffer
        assert_eq!(s.free(BASE - 1, 10), Err(AllocError::OutOfRange));
        assert_eq!(s.free(BASE + 990, 20), Err(AllocError::OutOfRange));
        assert_eq!(s.free(u64::MAX, 20), Err(AllocError::OutOfRange));
        assert_eq!(s.free(a, 0), Err(AllocError::ZeroLength));
        assert_eq!(s.allocated_bytes(), 200);
        assert_eq!(s.live_count(), 2);

        s.free(a, 100).unwrap();
        assert_eq!(s.free(a, 100), Err(AllocError::Overlap)); // double free
        s.free(b, 100).unwrap();
        assert_eq!(s.allocated_bytes(), 0);
        assert_eq!(s.live_count(), 0);
        assert_eq!(s.largest_free(), 1000);
    }

    #[test]
    fn reserve_carves_and_registers_the_buffer() {
        let s = seg(1000);
        s.reserve(BASE + 500, 100, owner(9)).unwrap();
        assert_eq!(s.allocated_bytes(), 100);
        assert_eq!(s.live_buffers(), vec![(BASE + 500, 100, owner(9))]);
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
        assert_eq!(s.allocate(400, owner(11)), Some(BASE + 600));
        s.free(BASE + 500, 100).unwrap();
        assert_eq!(s.allocated_bytes(), 400);
    }

    #[test]
    fn set_owner_repoints_only_live_buffers() {
        let s = seg(1000);
        let a = s.allocate(100, owner(1)).unwrap();
        assert!(s.set_owner(a, owner(5)));
        assert!(!s.set_owner(a + 1, owner(6)));
        assert_eq!(s.live_buffers(), vec![(a, 100, owner(5))]);
        s.free(a, 100).unwrap();
        assert!(!s.set_owner(a, owner(7)));
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
        assert_eq!(s.allocate(10, owner(1)), Some(u64::MAX - 10));
    }
}
