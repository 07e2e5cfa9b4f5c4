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

    /// The first object in the table slots `hash` probes whose control tag
    /// matches: a guess at what [`find`](Self::find) will return, made from
    /// the control bytes alone (no slot or key is read). A batch warms the
    /// cache through the guesses of all its keys before it finds any; a
    /// wrong guess only wastes a load.
    #[inline]
    pub fn candidate(&self, hash: u64) -> Option<&Object> {
        self.objects.iter_hash(hash).next()
    }

    /// Loads the slot of a [`candidate`](Self::candidate) (stored hash and
    /// key pointer) and returns a value made from it, for the caller to fold
    /// into `std::hint::black_box` (so the load is kept). No branch depends
    /// on what it loads, so a loop of these has all its misses in flight at
    /// once.
    #[inline]
    pub fn warm_slot(o: &Object) -> u64 {
        o.hash ^ o.key.len() as u64
    }

    /// Loads what a read of a [`candidate`](Self::candidate) uses after its
    /// slot (the key bytes, the replica list, the lease and the group's
    /// lease), as [`warm_slot`](Self::warm_slot) does the slot: run after
    /// the slots are in cache, as the addresses come from them.
    #[inline]
    pub fn warm_object(o: &Object) -> u64 {
        let first = o.key.as_bytes().first().copied().unwrap_or(0);
        let group = o
            .group
            .as_ref()
            .map_or(0, |g| g.lease.load(Ordering::Relaxed));
        u64::from(first) ^ o.replicas.len() as u64 ^ o.lease.load(Ordering::Relaxed) ^ group
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
