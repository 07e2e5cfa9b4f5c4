//! A metadata shard: the objects whose key hashes to it, the writes in
//! flight (so the stale-write sweep never walks all objects) and the
//! discarded buffers waiting for their release instant.

use crate::clock::Instant;
use crate::key;
use crate::object::Object;
use crate::segment::BlockId;
use crate::types::{Key, SegmentId};
use hashbrown::{HashMap, HashTable};
use parking_lot::RwLock;

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
