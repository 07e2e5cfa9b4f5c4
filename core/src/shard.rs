//! A metadata shard: the objects whose key hashes to it, the writes in
//! flight (so the stale-write sweep never walks all objects) and the
//! discarded buffers waiting for their release instant. Objects live in an
//! [`Arena`] (dense, addressed by slot); the hash index holds only slots.

use crate::arena::Arena;
use crate::clock::Instant;
use crate::key;
use crate::object::Object;
use crate::object_ref::ObjectRef;
use crate::types::{Key, SegmentId};
use hashbrown::{HashMap, HashTable};
use parking_lot::RwLock;

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
    /// The records, by slot.
    objects: Arena<Object>,
    /// Hash index: the slot of every record, under the record's hash
    /// (recomputed from the record when the table grows).
    index: HashTable<u32>,
    /// write token → object hash, for every write in flight.
    pub in_flight: HashMap<u64, u64>,
    pub discarded: Vec<Discarded>,
}

impl ShardState {
    /// The slot of the first record hashing to `hash` that `eq` accepts.
    #[inline]
    fn slot_where(&self, hash: u64, eq: impl Fn(&Object) -> bool) -> Option<u32> {
        let objects = &self.objects;
        self.index
            .find(hash, |&s| objects.get(s).is_some_and(&eq))
            .copied()
    }

    #[inline]
    fn find_where(&self, hash: u64, eq: impl Fn(&Object) -> bool) -> Option<&Object> {
        let slot = self.slot_where(hash, eq)?;
        self.objects.get(slot)
    }

    #[inline]
    fn find_where_mut(&mut self, hash: u64, eq: impl Fn(&Object) -> bool) -> Option<&mut Object> {
        let slot = self.slot_where(hash, eq)?;
        self.objects.get_mut(slot)
    }

    #[inline]
    pub fn find(&self, hash: u64, k: Key<'_>) -> Option<&Object> {
        self.find_where(hash, |o| key::matches(&o.key, k))
    }

    #[inline]
    pub fn find_mut(&mut self, hash: u64, k: Key<'_>) -> Option<&mut Object> {
        self.find_where_mut(hash, |o| key::matches(&o.key, k))
    }

    #[inline]
    pub fn find_scoped(&self, hash: u64, scoped: &str) -> Option<&Object> {
        self.find_where(hash, |o| &*o.key == scoped)
    }

    pub fn find_scoped_mut(&mut self, hash: u64, scoped: &str) -> Option<&mut Object> {
        self.find_where_mut(hash, |o| &*o.key == scoped)
    }

    /// The object with creation sequence `seq` among those hashing to `hash`
    /// (for holders of a `(hash, seq)` pair rather than a handle).
    #[allow(dead_code)]
    pub fn find_by_seq(&self, hash: u64, seq: u64) -> Option<&Object> {
        self.find_where(hash, |o| o.seq == seq)
    }

    #[allow(dead_code)]
    pub fn find_by_seq_mut(&mut self, hash: u64, seq: u64) -> Option<&mut Object> {
        self.find_where_mut(hash, |o| o.seq == seq)
    }

    /// The object whose current write has token `token`, among those hashing
    /// to `hash`.
    pub fn find_by_token(&self, hash: u64, token: u64) -> Option<&Object> {
        self.find_where(hash, |o| o.write_token == token)
    }

    pub fn find_by_token_mut(&mut self, hash: u64, token: u64) -> Option<&mut Object> {
        self.find_where_mut(hash, |o| o.write_token == token)
    }

    /// The object holding replica `replica_id` on `segment`, among those
    /// hashing to `hash`.
    pub fn find_by_replica_mut(
        &mut self,
        hash: u64,
        segment: SegmentId,
        replica_id: u64,
    ) -> Option<&mut Object> {
        self.find_where_mut(hash, |o| {
            o.replicas
                .iter()
                .any(|r| r.id == replica_id && r.segment == segment)
        })
    }

    /// A handle to the object stored under `k`, for a holder that will
    /// come back to it under a later lock.
    #[allow(dead_code)]
    pub fn locate(&self, hash: u64, k: Key<'_>, shard: u32) -> Option<ObjectRef> {
        let slot = self.slot_where(hash, |o| key::matches(&o.key, k))?;
        Some(ObjectRef {
            shard,
            slot,
            gen: self.objects.generation(slot)?,
        })
    }

    /// The object `r` names, if it is still stored (its slot has not been
    /// freed since the handle was taken). `r.shard` is the caller's to
    /// match with this shard.
    #[inline]
    pub fn get(&self, r: ObjectRef) -> Option<&Object> {
        self.objects.get_checked(r.slot, r.gen)
    }

    #[allow(dead_code)]
    #[inline]
    pub fn get_mut(&mut self, r: ObjectRef) -> Option<&mut Object> {
        self.objects.get_checked_mut(r.slot, r.gen)
    }

    /// Stores a new object. The caller has checked that its key is absent.
    /// Panics only if the shard holds 2^32 − 1 objects (no slot number is
    /// left), which no master's memory reaches.
    pub fn insert(&mut self, obj: Object) -> u32 {
        let hash = obj.hash;
        let (slot, _) = self
            .objects
            .insert(obj)
            .expect("a shard holds fewer than 2^32 - 1 objects");
        let objects = &self.objects;
        self.index
            .insert_unique(hash, slot, |&s| objects.get(s).map_or(0, |o| o.hash));
        slot
    }

    /// Removes and returns the object in `slot`, which hashes to `hash`.
    fn take_slot(&mut self, hash: u64, slot: u32) -> Option<Object> {
        let entry = self.index.find_entry(hash, |&s| s == slot).ok()?;
        entry.remove();
        self.objects.remove(slot)
    }

    /// Removes and returns the object stored under `scoped`.
    pub fn take(&mut self, hash: u64, scoped: &str) -> Option<Object> {
        let slot = self.slot_where(hash, |o| &*o.key == scoped)?;
        self.take_slot(hash, slot)
    }

    /// Removes and returns the object stored under `k` if `pred` accepts it;
    /// `Err` carries `pred`'s refusal, `Ok(None)` means no such object.
    pub fn take_if<E>(
        &mut self,
        hash: u64,
        k: Key<'_>,
        pred: impl FnOnce(&Object) -> Result<(), E>,
    ) -> Result<Option<Object>, E> {
        let Some(slot) = self.slot_where(hash, |o| key::matches(&o.key, k)) else {
            return Ok(None);
        };
        pred(self.objects.get(slot).expect("indexed slot holds a record"))?;
        Ok(self.take_slot(hash, slot))
    }

    /// Objects stored.
    #[inline]
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Every object, in arena order (sequential in memory, not hash order).
    pub fn iter(&self) -> impl Iterator<Item = &Object> + '_ {
        self.objects.iter().map(|(_, _, o)| o)
    }

    /// Every object with its slot and the slot's generation (the parts of
    /// its [`ObjectRef`]), in arena order.
    pub fn iter_slots(&self) -> impl Iterator<Item = (u32, u32, &Object)> + '_ {
        self.objects.iter()
    }

    /// The arena and the index agree: every record is indexed once under
    /// its hash, and the index names no other slot.
    pub fn check_index(&self) -> Result<(), String> {
        self.objects.check()?;
        if self.index.len() != self.objects.len() {
            return Err(format!(
                "index holds {} slots for {} records",
                self.index.len(),
                self.objects.len()
            ));
        }
        for (slot, _, o) in self.objects.iter() {
            if self.index.find(o.hash, |&s| s == slot).is_none() {
                return Err(format!("{:?} (slot {slot}) is not indexed", o.key));
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{scoped, KeyHasher};
    use crate::object::Replicas;
    use std::sync::atomic::AtomicU64;

    fn object(h: &KeyHasher, k: Key<'_>, seq: u64) -> Object {
        Object {
            key: scoped(k),
            hash: h.hash(k),
            size: 1,
            writer: 1,
            put_start: 0,
            seq,
            write_token: seq + 100,
            lease: AtomicU64::new(0),
            soft_pin: AtomicU64::new(crate::object::NO_DEADLINE),
            replicas: Replicas::new(),
            pending: None,
            group: None,
            hard_pin: false,
            task: None,
        }
    }

    #[test]
    fn lookups_find_the_record_by_key_sequence_and_token() {
        let h = KeyHasher::new();
        let mut st = ShardState::default();
        let names: Vec<String> = (0..3000).map(|i| format!("k{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            st.insert(object(&h, Key::new(n), i as u64));
        }
        st.check_index().unwrap();
        assert_eq!(st.len(), names.len());
        for (i, n) in names.iter().enumerate() {
            let k = Key::new(n);
            let hash = h.hash(k);
            assert_eq!(st.find(hash, k).unwrap().seq, i as u64);
            assert_eq!(st.find_scoped(hash, &scoped(k)).unwrap().seq, i as u64);
            assert_eq!(st.find_by_seq(hash, i as u64).unwrap().key, scoped(k));
            assert!(st.find_by_seq(hash, i as u64 + 1).is_none());
            assert_eq!(
                st.find_by_token(hash, i as u64 + 100).unwrap().seq,
                i as u64
            );
            st.find_by_seq_mut(hash, i as u64).unwrap().size = 7;
            assert_eq!(st.find_mut(hash, k).unwrap().size, 7);
        }
        // Another tenant's key with the same name is another key.
        let other = Key::scoped("t", "k1");
        assert!(st.find(h.hash(other), other).is_none());
        assert_eq!(st.iter().count(), names.len());
    }

    #[test]
    fn a_handle_resolves_until_its_object_is_erased() {
        let h = KeyHasher::new();
        let mut st = ShardState::default();
        let (a, b) = (Key::new("a"), Key::new("b"));
        st.insert(object(&h, a, 1));
        let ra = st.locate(h.hash(a), a, 3).unwrap();
        assert_eq!(ra.shard, 3);
        assert_eq!(st.get(ra).unwrap().seq, 1);
        st.get_mut(ra).unwrap().size = 9;
        assert_eq!(st.find(h.hash(a), a).unwrap().size, 9);
        let taken = st.take(h.hash(a), &scoped(a)).unwrap();
        assert_eq!(taken.seq, 1);
        assert!(st.get(ra).is_none());
        assert!(st.locate(h.hash(a), a, 3).is_none());
        // The slot is reused by the next object; the old handle stays dead.
        st.insert(object(&h, b, 2));
        let rb = st.locate(h.hash(b), b, 3).unwrap();
        assert_eq!(rb.slot, ra.slot);
        assert_ne!(rb.gen, ra.gen);
        assert!(st.get(ra).is_none());
        assert!(st.get_mut(ra).is_none());
        assert_eq!(st.get(rb).unwrap().seq, 2);
        st.check_index().unwrap();
    }

    #[test]
    fn take_if_leaves_a_refused_object_in_place() {
        let h = KeyHasher::new();
        let mut st = ShardState::default();
        let k = Key::new("k");
        st.insert(object(&h, k, 1));
        let hash = h.hash(k);
        assert_eq!(st.take_if(hash, k, |_| Err("busy")).err(), Some("busy"));
        assert!(st.find(hash, k).is_some());
        let missing = Key::new("nope");
        assert!(st
            .take_if(h.hash(missing), missing, |_| Err::<(), _>("never asked"))
            .unwrap()
            .is_none());
        assert_eq!(
            st.take_if(hash, k, |_| Ok::<(), ()>(()))
                .unwrap()
                .unwrap()
                .seq,
            1
        );
        assert_eq!(st.len(), 0);
        st.check_index().unwrap();
    }

    #[test]
    fn churn_keeps_the_index_and_arena_in_step() {
        // Insert and erase in waves so slots are reused across chunks.
        let h = KeyHasher::new();
        let mut st = ShardState::default();
        let mut live = std::collections::BTreeSet::new();
        for wave in 0..6u64 {
            for i in 0..1500u64 {
                let n = format!("k{}", (i * 7 + wave * 311) % 2500);
                let k = Key::new(&n);
                let hash = h.hash(k);
                if live.remove(&n) {
                    assert!(st.take(hash, &scoped(k)).is_some());
                } else {
                    assert!(st.find(hash, k).is_none());
                    st.insert(object(&h, k, wave * 10_000 + i));
                    live.insert(n);
                }
            }
            st.check_index().unwrap();
            assert_eq!(st.len(), live.len());
        }
        let mut seen: Vec<String> = st
            .iter()
            .map(|o| crate::key::split(&o.key).key.to_owned())
            .collect();
        seen.sort();
        assert_eq!(seen, live.into_iter().collect::<Vec<_>>());
    }
}
