//! A metadata shard: the objects whose key hashes to it, the writes in
//! flight (so the stale-write sweep never walks all objects) and the
//! discarded buffers waiting for their release instant.

use crate::clock::Instant;
use crate::key;
use crate::object::Object;
use crate::types::{Key, SegmentId};
use hashbrown::{HashMap, HashTable};
use parking_lot::RwLock;
use std::sync::atomic::Ordering;

/// A buffer no replica owns any more, held until `release_at` so a reader
/// that still has its descriptor never sees it reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Discarded {
    pub segment: SegmentId,
    pub addr: u64,
    pub len: u64,
    pub release_at: Instant,
}

#[derive(Default)]
pub(crate) struct ShardState {
    pub objects: HashTable<Object>,
    /// write token → object hash, for every write in flight.
    pub in_flight: HashMap<u64, u64>,
    pub discarded: Vec<Discarded>,
}

impl ShardState {
    #[inline]
    pub fn find(&self, hash: u64, k: Key<'_>) -> Option<&Object> {
        self.objects.find(hash, |o| key::matches(&o.key, k))
    }

    #[inline]
    pub fn find_mut(&mut self, hash: u64, k: Key<'_>) -> Option<&mut Object> {
        self.objects.find_mut(hash, |o| key::matches(&o.key, k))
    }

    /// [`find`](Self::find) for a batch read: also loads the object's lines
    /// the read then uses (replica list, lease, group lease) and returns a
    /// value made from them, which the caller folds into
    /// `std::hint::black_box`. A batch finds all its keys before it grants
    /// any lease; loading those lines here, between lookups that do not
    /// depend on each other, lets their cache misses overlap, where the
    /// lease updates (atomic read-modify-writes, which order the loads
    /// around them) would take them one at a time.
    #[inline]
    pub fn find_for_read(&self, hash: u64, k: Key<'_>) -> (Option<&Object>, u64) {
        let found = self.find(hash, k);
        let warm = found.map_or(0, |o| {
            let group = o
                .group
                .as_ref()
                .map_or(0, |g| g.lease.load(Ordering::Relaxed));
            o.replicas.len() as u64 ^ o.lease.load(Ordering::Relaxed) ^ group
        });
        (found, warm)
    }

    #[inline]
    pub fn find_scoped(&self, hash: u64, scoped: &str) -> Option<&Object> {
        self.objects.find(hash, |o| &*o.key == scoped)
    }

    pub fn find_scoped_mut(&mut self, hash: u64, scoped: &str) -> Option<&mut Object> {
        self.objects.find_mut(hash, |o| &*o.key == scoped)
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

pub(crate) struct Shard {
    pub state: RwLock<ShardState>,
}

impl Shard {
    pub fn new() -> Self {
        Shard {
            state: RwLock::new(ShardState::default()),
        }
    }
}
