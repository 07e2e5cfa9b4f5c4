//! A metadata shard: the objects whose key hashes to it, the writes in
//! flight (so the stale-write sweep never walks all objects), the
//! discarded buffers waiting for their release instant, and the shard's
//! share of the per-key gauges (summed over shards when read).

use crate::clock::Instant;
use crate::key;
use crate::object::Object;
use crate::segment::BlockId;
use crate::types::{Key, SegmentId};
use hashbrown::TryReserveError;
use hashbrown::{HashMap, HashTable};
use parking_lot::RwLock;
use std::sync::atomic::AtomicI64;

/// A buffer no replica owns any more, held until `release_at` so a reader
/// that still has its descriptor never sees it reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Discarded {
    pub segment: SegmentId,
    pub addr: u64,
    pub block: BlockId,
    pub len: u64,
    pub release_at: Instant,
}

#[derive(Default)]
pub(crate) struct ShardState {
    pub objects: HashTable<Object>,
    /// write token → object hash, for every write in flight.
    pub in_flight: HashMap<u64, u64>,
    pub discarded: Vec<Discarded>,
    /// Objects in this shard: its share of `master_key_count`. A plain
    /// field, changed with the insert or erase it counts under the write
    /// lock, so no per-key path writes a cache line every shard shares.
    pub keys: i64,
    /// Bytes of `discarded`: this shard's share of
    /// `master_discarded_staging_bytes`, changed with the list.
    pub discarded_bytes: i64,
}

impl ShardState {
    /// An empty shard whose object table holds `objects` objects before it
    /// grows (`expected_objects` presizing, docs/CONTRACT.md §9). The
    /// writes-in-flight map is not presized: it holds only the writes
    /// between a Start and their End, a small fraction of the objects.
    /// Fails, allocating nothing, if the table cannot be allocated.
    pub fn with_capacity(objects: usize) -> Result<Self, TryReserveError> {
        let mut st = ShardState::default();
        if objects > 0 {
            st.objects.try_reserve(objects, |o: &Object| o.hash)?;
        }
        Ok(st)
    }

    #[inline]
    pub fn find(&self, hash: u64, k: Key<'_>) -> Option<&Object> {
        self.objects.find(hash, |o| key::matches(&o.key, k))
    }

    #[inline]
    pub fn find_mut(&mut self, hash: u64, k: Key<'_>) -> Option<&mut Object> {
        self.objects.find_mut(hash, |o| key::matches(&o.key, k))
    }

    #[inline]
    pub fn find_scoped(&self, hash: u64, scoped: &str) -> Option<&Object> {
        self.objects.find(hash, |o| &*o.key == scoped)
    }

    pub fn find_scoped_mut(&mut self, hash: u64, scoped: &str) -> Option<&mut Object> {
        self.objects.find_mut(hash, |o| &*o.key == scoped)
    }

    /// The object created with sequence `seq` among those hashing to `hash`
    /// (what a deadline-index entry names). The full hash is compared too:
    /// the table only narrows candidates down to a 7-bit tag.
    #[inline]
    pub fn find_by_seq(&self, hash: u64, seq: u64) -> Option<&Object> {
        self.objects.find(hash, |o| o.seq == seq && o.hash == hash)
    }

    /// Mutable [`find_by_seq`](Self::find_by_seq); part of the identity
    /// API the record handles replace, unused until a caller needs it.
    #[allow(dead_code)]
    #[inline]
    pub fn find_by_seq_mut(&mut self, hash: u64, seq: u64) -> Option<&mut Object> {
        self.objects
            .find_mut(hash, |o| o.seq == seq && o.hash == hash)
    }

    pub fn insert(&mut self, obj: Object) {
        self.objects.insert_unique(obj.hash, obj, |o| o.hash);
    }

    /// Removes and returns the object stored under `scoped`.
    pub fn take(&mut self, hash: u64, scoped: &str) -> Option<Object> {
        self.objects
            .find_entry(hash, |o| &*o.key == scoped)
            .ok()
            .map(|e| e.remove().0)
    }

    /// The object holding replica `replica_id` on `segment`, among those
    /// hashing to `hash`.
    pub fn find_by_replica_mut(
        &mut self,
        hash: u64,
        segment: SegmentId,
        replica_id: u64,
    ) -> Option<&mut Object> {
        self.objects.find_mut(hash, |o| {
            o.replicas
                .iter()
                .any(|r| r.id == replica_id && r.segment == segment)
        })
    }
}

/// One shard: its lock and its soft-pin gauge, alone on their cache lines.
///
/// Aligned to 128 bytes (two 64-byte lines: x86's adjacent-line prefetcher
/// pulls lines in pairs, and some ARM cores have 128-byte lines), so the
/// lock words of neighbouring shards never share a line and a writer on one
/// shard does not slow readers of the next.
#[repr(align(128))]
pub(crate) struct Shard {
    pub state: RwLock<ShardState>,
    /// Objects of this shard with a committed deadline: its share of
    /// `master_soft_pin_key_count` (the gauge of docs/CONTRACT.md §4.9).
    /// An atomic beside the lock rather than a `ShardState` field because
    /// cleanup clears expired pins under the shard *read* lock; it is still
    /// changed only while the shard's lock is held, with the pin change it
    /// counts, and a restore sets it under the write lock.
    pub soft_pin_keys: AtomicI64,
}

/// Alignment the shard padding relies on (see [`Shard`]).
pub(crate) const SHARD_ALIGN: usize = 128;
const _: () = assert!(std::mem::align_of::<Shard>() == SHARD_ALIGN);
const _: () = assert!(std::mem::size_of::<Shard>() % SHARD_ALIGN == 0);

impl Shard {
    pub fn new(state: ShardState) -> Self {
        Shard {
            state: RwLock::new(state),
            soft_pin_keys: AtomicI64::new(0),
        }
    }
}
