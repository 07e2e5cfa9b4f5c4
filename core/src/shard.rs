//! A metadata shard: the objects whose key hashes to it, the writes in
//! flight (so the stale-write sweep never walks all objects, and what only
//! a write in flight needs stays out of the records), the discarded
//! buffers waiting for their release instant, and the shard's share of the
//! per-key gauges (summed over shards when read). Objects live in an
//! [`Arena`] (packed in chunks, addressed by slot); the hash index
//! (`slot_index.rs`) holds only slots and 32 bits of their keys' hashes.

use crate::arena::Arena;
use crate::clock::Instant;
use crate::error::{Error, ErrorKind, Result};
use crate::key::{self, KeyHasher};
use crate::memory::Region;
use crate::object::Object;
use crate::object_ref::ObjectRef;
use crate::segment::BlockId;
use crate::slot_index::SlotIndex;
use crate::soft_pin::SoftPinIntent;
use crate::tenants::Tenants;
use crate::types::{Key, SegmentId};
use hashbrown::HashMap;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A buffer no replica owns any more, held until `release_at` so a reader
/// that still has its descriptor never sees it reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Discarded {
    pub segment: SegmentId,
    pub addr: u64,
    pub block: BlockId,
    pub len: u64,
    pub release_at: Instant,
    /// The id of the replica the buffer was (a snapshot lists it).
    pub replica: u64,
}

/// A buffer an operation freed while the journal is on, held allocated
/// until the record that frees it is appended (append before free,
/// `journal/capture.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingFree {
    pub segment: SegmentId,
    pub addr: u64,
    pub block: BlockId,
    pub len: u64,
}

/// A write in flight: the record it writes and its soft-pin intent while
/// still pending (docs/CONTRACT.md §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Write {
    pub slot: u32,
    pub pending: Option<SoftPinIntent>,
}

/// The writes in flight of a shard, by write token.
#[derive(Default)]
pub(crate) struct InFlight(HashMap<u64, Write>);

impl InFlight {
    /// Records the write `token` of the record in `slot`, pending `intent`.
    pub fn start(&mut self, token: u64, slot: u32, intent: Option<SoftPinIntent>) {
        self.0.insert(
            token,
            Write {
                slot,
                pending: intent,
            },
        );
    }

    /// The write `token` is over (its pending intent goes with it).
    pub fn end(&mut self, token: u64) {
        // Most shards have no write in flight: no hashing then.
        if !self.0.is_empty() {
            self.0.remove(&token);
        }
    }

    pub fn get(&self, token: u64) -> Option<&Write> {
        self.0.get(&token)
    }

    /// Takes the pending intent of write `token`, which stays in flight.
    pub fn take_pending(&mut self, token: u64) -> Option<SoftPinIntent> {
        self.0.get_mut(&token)?.pending.take()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, &Write)> + '_ {
        self.0.iter().map(|(&t, w)| (t, w))
    }
}

/// Room for one more object in a shard, made by
/// [`ShardState::reserve_insert`] before an operation changes anything and
/// used by [`ShardState::insert`]: an insert can then neither allocate nor
/// fail halfway, leaving a record stored but not indexed.
#[must_use = "room is made for an insert"]
pub(crate) struct Room(());

pub(crate) struct ShardState {
    /// The records, by slot.
    objects: Arena<Object>,
    /// Hash index: the slot of every record, under 32 bits of its key's
    /// hash (`slot_index.rs`; records do not store their hash).
    index: SlotIndex,
    /// The master's key hasher (the one that placed the keys in this
    /// shard), to recompute a record's hash from its key.
    hasher: KeyHasher,
    /// The tenants of the records, by id.
    tenants: Tenants,
    pub in_flight: InFlight,
    pub discarded: crate::discarded::DiscardedList,
    /// Buffers freed by the operation holding the write lock, waiting for
    /// its journal record (journal on only; empty whenever no operation
    /// holds the lock).
    pub pending_frees: Vec<PendingFree>,
    /// Objects in this shard: its share of `master_key_count`. A plain
    /// field, changed with the insert or erase it counts under the write
    /// lock, so no per-key path writes a cache line every shard shares.
    pub keys: i64,
    /// Bytes of `discarded`: this shard's share of
    /// `master_discarded_staging_bytes`, changed with the list.
    pub discarded_bytes: i64,
}

impl ShardState {
    /// The slot of the first record hashing to `hash` that `eq` accepts.
    #[inline]
    fn slot_where(&self, hash: u64, eq: impl Fn(&Object) -> bool) -> Option<u32> {
        let objects = &self.objects;
        self.index.find(hash, |s| objects.get(s).is_some_and(&eq))
    }

    #[inline]
    fn find_where_mut(&mut self, hash: u64, eq: impl Fn(&Object) -> bool) -> Option<&mut Object> {
        let slot = self.slot_where(hash, eq)?;
        self.objects.get_mut(slot)
    }

    /// The slot of the record stored under `k`. Compares the tenant id and
    /// the key bytes: no allocation, and a tenant no record of the shard
    /// uses is known absent without probing.
    #[inline]
    fn slot_of(&self, hash: u64, k: Key<'_>) -> Option<u32> {
        let tenant = self.tenants.lookup(k.tenant)?;
        self.slot_where(hash, |o| {
            o.key_bytes() == k.key.as_bytes() && o.in_tenant(tenant)
        })
    }

    /// An empty shard whose records hash with `hasher` (the master's).
    pub fn new(hasher: KeyHasher) -> Self {
        ShardState {
            objects: Arena::default(),
            index: SlotIndex::new(),
            hasher,
            tenants: Tenants::default(),
            in_flight: InFlight::default(),
            discarded: Default::default(),
            pending_frees: Vec::new(),
            keys: 0,
            discarded_bytes: 0,
        }
    }

    /// An empty shard whose records hash with `hasher` (the master's) and
    /// whose index and arena hold `objects` objects before they grow (`expected_objects` presizing, docs/CONTRACT.md §9). The
    /// writes-in-flight map is not presized: it holds only the writes
    /// between a Start and their End, a small fraction of the objects.
    /// Both are carved from `region` while it has room (`commit_presized`),
    /// else made on the heap. Fails, allocating nothing that stays, if the
    /// memory cannot be had (the message says which part and why).
    pub fn with_capacity(
        hasher: KeyHasher,
        objects: usize,
        region: Option<&Arc<Region>>,
    ) -> Result<Self, String> {
        let mut st = ShardState::new(hasher);
        if objects > 0 {
            // The table is empty: nothing is rehashed, the hasher is never called.
            st.index.try_reserve(objects, region)?;
            st.objects
                .try_reserve(objects, region)
                .map_err(|e| format!("arena: {e}"))?;
        }
        Ok(st)
    }

    /// Bytes [`with_capacity`](Self::with_capacity) of `objects` carves
    /// from a region (the index and the arena).
    pub fn reserved_bytes(objects: usize) -> usize {
        SlotIndex::reserved_bytes(objects).saturating_add(Arena::<Object>::reserved_bytes(objects))
    }

    /// Makes the presized arena resident now (`Arena::prefault`): a
    /// standby's, so applying its primary's journal does not fault it in.
    pub fn prefault(&mut self) {
        self.objects.prefault();
    }

    #[inline]
    pub fn find(&self, hash: u64, k: Key<'_>) -> Option<&Object> {
        self.objects.get(self.slot_of(hash, k)?)
    }

    #[inline]
    pub fn find_mut(&mut self, hash: u64, k: Key<'_>) -> Option<&mut Object> {
        let slot = self.slot_of(hash, k)?;
        self.objects.get_mut(slot)
    }

    /// The record stored under `k`, its handle (`shard` is this shard's
    /// index) and the shard's writes in flight, borrowed together (a
    /// write's End changes both; a commit registers the handle).
    pub fn find_write_mut(
        &mut self,
        hash: u64,
        k: Key<'_>,
        shard: u32,
    ) -> Option<(ObjectRef, &mut Object, &mut InFlight)> {
        let slot = self.slot_of(hash, k)?;
        let obj = self.objects.get_mut(slot)?;
        let seq = obj.seq;
        Some((ObjectRef { shard, slot, seq }, obj, &mut self.in_flight))
    }

    /// As [`find_write_mut`](Self::find_write_mut), for the record `r`
    /// names (a handle taken under this lock hold): no lookup.
    pub fn write_at(&mut self, r: ObjectRef) -> Option<(ObjectRef, &mut Object, &mut InFlight)> {
        let obj = self.objects.get_mut(r.slot).filter(|o| r.names(o))?;
        Some((r, obj, &mut self.in_flight))
    }

    /// The first object indexed under `hash`'s 32 index bits: a guess at
    /// what [`find`](Self::find) will return, made from the index alone
    /// (no key is read). A batch warms the
    /// cache through the guesses of all its keys before it finds any; a
    /// wrong guess only wastes a load.
    #[inline]
    pub fn candidate(&self, hash: u64) -> Option<&Object> {
        let slot = self.index.first(hash)?;
        self.objects.get(slot)
    }

    /// Starts loading the index bucket a lookup of `hash` reads first
    /// (a prefetch: nothing waits for it).
    #[inline]
    pub fn prefetch_bucket(&self, hash: u64) {
        self.index.prefetch(hash);
    }

    /// Starts loading, without waiting, what removing the record in `slot`
    /// touches in the arena: the record (both lines) and the end of the
    /// free list the slot goes on.
    #[inline]
    pub fn prefetch_removal(&self, slot: u32) {
        self.objects.prefetch(slot);
        self.objects.prefetch_removal();
    }

    /// Starts loading, without waiting, the record in `slot` (both lines);
    /// nothing for a slot never handed out.
    #[inline]
    pub fn prefetch_slot(&self, slot: u32) {
        self.objects.prefetch(slot);
    }

    /// Starts loading, without waiting, what a Start of a new key under
    /// `hash` touches first: the index bucket its lookup reads and the
    /// arena line its record will be written to, so the two misses
    /// overlap instead of following each other.
    #[inline]
    pub fn prefetch_insert(&self, hash: u64) {
        self.index.prefetch(hash);
        self.objects.prefetch_insert();
    }

    /// Reads the bucket of `hash` (best after
    /// [`prefetch_bucket`](Self::prefetch_bucket)) and starts loading the
    /// whole record of its [`candidate`](Self::candidate) slot, without
    /// waiting for the record.
    #[inline]
    pub fn prefetch_candidate(&self, hash: u64) {
        if let Some(slot) = self.index.first(hash) {
            self.objects.prefetch(slot);
        }
    }

    /// Loads the first bytes of a [`candidate`](Self::candidate)'s record
    /// (key length, replicas, lease) and returns a value made from it, for the caller to fold
    /// into `std::hint::black_box` (so the load is kept). No branch depends
    /// on what it loads, so a loop of these has all its misses in flight at
    /// once.
    #[inline]
    pub fn warm_slot(o: &Object) -> u64 {
        o.replicas.len() as u64 ^ o.lease.load(Ordering::Relaxed)
    }

    /// Touches the memory the next [`insert`](Self::insert) writes in the
    /// arena ([`Arena::warm_insert`]), changing nothing: for a caller that
    /// warms several shards before inserting into them. Returns a value to
    /// fold into `std::hint::black_box`.
    #[inline]
    pub fn warm_insert(&mut self) -> u64 {
        self.objects.warm_insert()
    }

    #[inline]
    pub fn find_scoped(&self, hash: u64, scoped: &str) -> Option<&Object> {
        self.find(hash, key::split(scoped))
    }

    /// The id of `tenant` if a record of this shard belongs to it.
    #[inline]
    pub fn tenant_id(&self, tenant: &str) -> Option<crate::tenants::TenantId> {
        self.tenants.lookup(tenant)
    }

    /// The tenant and key of a record of this shard.
    pub fn key_of<'a>(&'a self, obj: &'a Object) -> Key<'a> {
        key_of(&self.tenants, obj)
    }

    /// The tenant of a record of this shard.
    #[inline]
    pub fn tenant_of(&self, obj: &Object) -> &str {
        self.tenants.name(obj.tenant())
    }

    /// The hash of a record's key (recomputed: records do not store it).
    #[inline]
    pub fn hash_of(&self, obj: &Object) -> u64 {
        hash_of(&self.hasher, &self.tenants, obj)
    }

    /// The slot of the object created with sequence `seq` among those
    /// hashing to `hash` (how an unmount or the stale-write sweep names an
    /// object it found under another lock). The full hash
    /// is compared too, recomputed from the key of a record whose sequence
    /// matches: the index only narrows candidates down to 32 bits of hash.
    #[inline]
    fn slot_by_seq(&self, hash: u64, seq: u64) -> Option<u32> {
        let (hasher, tenants) = (&self.hasher, &self.tenants);
        self.slot_where(hash, |o| {
            o.seq == seq && hash_of(hasher, tenants, o) == hash
        })
    }

    /// The object created with sequence `seq` among those hashing to `hash`
    /// (see [`slot_by_seq`](Self::slot_by_seq)).
    #[inline]
    pub fn find_by_seq(&self, hash: u64, seq: u64) -> Option<&Object> {
        self.objects.get(self.slot_by_seq(hash, seq)?)
    }

    /// The record in `slot` (as a write in flight names it).
    #[inline]
    pub fn slot(&self, slot: u32) -> Option<&Object> {
        self.objects.get(slot)
    }

    pub fn slot_mut(&mut self, slot: u32) -> Option<&mut Object> {
        self.objects.get_mut(slot)
    }

    /// The object with a replica in block `block` of `segment`, among those
    /// hashing to `hash` (while a block is allocated no other buffer of its
    /// segment has its id).
    pub fn find_by_block_mut(
        &mut self,
        hash: u64,
        segment: SegmentId,
        block: BlockId,
    ) -> Option<&mut Object> {
        self.find_where_mut(hash, |o| o.replica_in(segment, block).is_some())
    }

    /// The handle of the record in `slot` (`shard` is this shard's index),
    /// if one is stored there.
    #[inline]
    pub fn object_ref(&self, shard: u32, slot: u32) -> Option<ObjectRef> {
        let seq = self.objects.get(slot)?.seq;
        Some(ObjectRef { shard, slot, seq })
    }

    /// A handle to the object stored under `k`, for a holder that comes
    /// back to it later in the same state (one operation, or one run of a
    /// standby's apply); it resolves to nothing once the object is erased
    /// or replaced by a write with a sequence of its own.
    #[allow(dead_code)]
    pub fn locate(&self, hash: u64, k: Key<'_>, shard: u32) -> Option<ObjectRef> {
        let slot = self.slot_of(hash, k)?;
        self.object_ref(shard, slot)
    }

    /// The object `r` names, if it is still stored (its slot holds the
    /// object of its creation sequence). `r.shard` is the caller's to match
    /// with this shard.
    #[allow(dead_code)]
    #[inline]
    pub fn get(&self, r: ObjectRef) -> Option<&Object> {
        self.objects.get(r.slot).filter(|o| r.names(o))
    }

    #[allow(dead_code)]
    #[inline]
    pub fn get_mut(&mut self, r: ObjectRef) -> Option<&mut Object> {
        self.objects.get_mut(r.slot).filter(|o| r.names(o))
    }

    /// Makes room for one more object, so that [`insert`](Self::insert)
    /// allocates nothing and cannot fail: an operation asks for it before
    /// it allocates buffers or changes anything, and a failure (no slot
    /// number or index entry left, or no memory for a larger table) is an
    /// `INTERNAL_ERROR` that leaves the master unchanged. Room made and not
    /// used is the next insert's.
    pub fn reserve_insert(&mut self) -> Result<Room> {
        let room = self
            .objects
            .try_reserve_one()
            .and_then(|()| self.index.try_reserve(1, None));
        room.map(|()| Room(())).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("this shard cannot hold another object: {e}"),
            )
        })
    }

    /// Stores a new object of `tenant` whose key hashes to `hash`, in the
    /// room `room` made; returns its slot. The caller has checked that its
    /// key is absent. In a slot used before, the object's `pin_version`
    /// goes on from the slot's last object's (the arena carries it).
    pub fn insert(&mut self, room: Room, tenant: &str, hash: u64, mut obj: Object) -> u32 {
        let Room(()) = room;
        obj.set_tenant(self.tenants.acquire(tenant));
        let slot = self
            .objects
            .insert(obj)
            .expect("reserve_insert made room for the record");
        debug_assert_eq!(self.hash_of(self.objects.get(slot).unwrap()), hash);
        // Growing the table places every entry from the hash bits it keeps:
        // no record is read.
        self.index.insert(hash, slot);
        slot
    }

    /// Removes and returns the object in `slot`, which hashes to `hash`.
    fn take_slot(&mut self, hash: u64, slot: u32) -> Option<Object> {
        if !self.index.remove(hash, slot) {
            return None;
        }
        let obj = self.objects.remove(slot)?;
        self.tenants.release(obj.tenant());
        Some(obj)
    }

    /// The arena slot of the record stored under `k`.
    #[inline]
    pub fn slot_of_key(&self, hash: u64, k: Key<'_>) -> Option<u32> {
        self.slot_of(hash, k)
    }

    /// Removes and returns the object in `slot`, whose key hashes to
    /// `hash`: [`take`](Self::take) for a caller that holds the slot (the
    /// index entry is found by slot number, no key is compared).
    #[inline]
    pub fn take_at(&mut self, hash: u64, slot: u32) -> Option<Object> {
        self.take_slot(hash, slot)
    }

    /// Removes and returns the object stored under `k`.
    pub fn take(&mut self, hash: u64, k: Key<'_>) -> Option<Object> {
        let slot = self.slot_of(hash, k)?;
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
        let Some(slot) = self.slot_of(hash, k) else {
            return Ok(None);
        };
        pred(self.objects.get(slot).expect("indexed slot holds a record"))?;
        Ok(self.take_slot(hash, slot))
    }

    /// How many objects the hash index holds before it must grow.
    pub fn capacity(&self) -> usize {
        self.index.capacity()
    }

    /// Bytes of the index and the arena that lie in a committed region
    /// (`commit_presized`).
    pub fn region_bytes(&self) -> usize {
        self.index.region_bytes() + self.objects.region_bytes()
    }

    /// Objects stored.
    #[inline]
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Every object, in arena order (sequential in memory, not hash order).
    pub fn iter(&self) -> impl Iterator<Item = &Object> + '_ {
        self.objects.iter().map(|(_, o)| o)
    }

    /// Every object with its slot, in arena order.
    pub fn iter_slots(&self) -> impl Iterator<Item = (u32, &Object)> + '_ {
        self.objects.iter()
    }

    /// Calls `f` with the slot and record of every object among the
    /// `max_slots` arena slots from `from` on, in slot order (sequential in
    /// memory); returns the slot to go on from, `None` at the end (see
    /// [`Arena::scan`]). A caller that lets go of the shard lock between
    /// slices must expect the arena to have changed when it comes back.
    #[inline]
    pub fn scan_slots(
        &self,
        from: u32,
        max_slots: usize,
        f: impl FnMut(u32, &Object),
    ) -> Option<u32> {
        self.objects.scan(from, max_slots, f)
    }

    /// The arena, the index, the tenant table and the writes in flight
    /// agree: every record is indexed once under its hash and the index
    /// names no other slot; each live tenant id counts its records; each
    /// write in flight names a record whose current write it is.
    pub fn check_index(&self) -> Result<(), String> {
        self.objects.check()?;
        if self.index.len() != self.objects.len() {
            return Err(format!(
                "index holds {} slots for {} records",
                self.index.len(),
                self.objects.len()
            ));
        }
        let mut users: HashMap<u32, u64> = HashMap::new();
        for (slot, o) in self.objects.iter() {
            if self.index.find(self.hash_of(o), |s| s == slot).is_none() {
                return Err(format!("{:?} (slot {slot}) is not indexed", o.key_str()));
            }
            let default = o.tenant() == crate::tenants::DEFAULT_TENANT_ID;
            if o.in_tenant(crate::tenants::DEFAULT_TENANT_ID) != default {
                return Err(format!(
                    "{:?}: tenant flag disagrees with its id",
                    o.key_str()
                ));
            }
            if !default {
                *users.entry(o.tenant()).or_default() += 1;
            }
        }
        let live: HashMap<u32, u64> = self.tenants.users().collect();
        if live != users {
            return Err(format!(
                "tenant table counts {live:?}, records use {users:?}"
            ));
        }
        for (token, w) in self.in_flight.iter() {
            match self.objects.get(w.slot) {
                Some(o) if o.write_token == token => {}
                _ => return Err(format!("write {token} names no record writing it")),
            }
        }
        Ok(())
    }
}

/// The hash of a record's key, from its stored bytes.
#[inline]
fn hash_of(hasher: &KeyHasher, tenants: &Tenants, obj: &Object) -> u64 {
    hasher.hash_bytes(tenants.name(obj.tenant()).as_bytes(), obj.key_bytes())
}

/// The tenant and key of `obj`, whose tenant id is one of `tenants`.
#[inline]
fn key_of<'a>(tenants: &'a Tenants, obj: &'a Object) -> Key<'a> {
    Key {
        tenant: tenants.name(obj.tenant()),
        key: obj.key_str(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{scoped, KeyHasher};
    use crate::object::{NewRecord, Replicas};

    // `reserved_bytes` is exactly what presized shards carve from a region
    // (so a region sized with it holds every shard's table whole), and
    // every presized table lies in it.
    #[cfg(target_os = "linux")]
    #[test]
    fn presized_shards_carve_exactly_their_reserved_bytes() {
        let hasher = KeyHasher::new(None);
        for n in [1, 7, 100, 1000, 1024, 1025, 4097, 30_000] {
            let bytes = ShardState::reserved_bytes(n);
            let region = Region::map_committed(3 * bytes).unwrap();
            let shards: Vec<ShardState> = (0..3)
                .map(|_| ShardState::with_capacity(hasher.clone(), n, Some(&region)).unwrap())
                .collect();
            // The last array's end is not rounded up to a line.
            let carved = region.carved();
            assert!(
                carved <= 3 * bytes && carved > 3 * bytes - 64,
                "n = {n}: {carved}"
            );
            for st in &shards {
                assert!(st.capacity() >= n);
                // Each array's bytes, before rounding to whole lines.
                assert!(st.region_bytes() <= bytes && st.region_bytes() + 64 * 40 > bytes);
            }
        }
    }

    fn object(k: Key<'_>, seq: u64) -> Object {
        Object::new(NewRecord {
            key: k.key,
            size: 1,
            writer: 1,
            put_start: 0,
            seq,
            write_token: seq + 100,
            lease: 0,
            committed: None,
            replicas: Replicas::new(),
            group: None,
            hard_pin: false,
        })
    }

    fn put(st: &mut ShardState, h: &KeyHasher, k: Key<'_>, seq: u64) -> u32 {
        let room = st.reserve_insert().unwrap();
        st.insert(room, k.tenant, h.hash(k), object(k, seq))
    }

    #[test]
    fn lookups_find_the_record_by_key_sequence_and_token() {
        let h = KeyHasher::new(None);
        let mut st = ShardState::new(h.clone());
        let names: Vec<String> = (0..3000).map(|i| format!("k{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            put(&mut st, &h, Key::new(n), i as u64);
        }
        st.check_index().unwrap();
        assert_eq!(st.len(), names.len());
        for (i, n) in names.iter().enumerate() {
            let k = Key::new(n);
            let hash = h.hash(k);
            assert_eq!(st.find(hash, k).unwrap().seq, i as u64);
            assert_eq!(st.find_scoped(hash, &scoped(k)).unwrap().seq, i as u64);
            assert_eq!(st.key_of(st.find_by_seq(hash, i as u64).unwrap()), k);
            assert!(st.find_by_seq(hash, i as u64 + 1).is_none());
            st.find_mut(hash, k).unwrap().size = 7;
            assert_eq!(st.find_by_seq(hash, i as u64).unwrap().size, 7);
        }
        // Another tenant's key with the same name is another key.
        let other = Key::scoped("t", "k1");
        assert!(st.find(h.hash(other), other).is_none());
        assert_eq!(st.iter().count(), names.len());
    }

    #[test]
    fn a_handle_resolves_until_its_object_is_erased() {
        let h = KeyHasher::new(None);
        let mut st = ShardState::new(h.clone());
        let (a, b) = (Key::new("a"), Key::new("b"));
        put(&mut st, &h, a, 1);
        let ra = st.locate(h.hash(a), a, 3).unwrap();
        assert_eq!(ra.shard, 3);
        assert_eq!(st.get(ra).unwrap().seq, 1);
        st.get_mut(ra).unwrap().size = 9;
        assert_eq!(st.find(h.hash(a), a).unwrap().size, 9);
        let taken = st.take(h.hash(a), a).unwrap();
        assert_eq!(taken.seq, 1);
        assert!(st.get(ra).is_none());
        assert!(st.locate(h.hash(a), a, 3).is_none());
        // The slot is reused by the next object; the old handle stays dead.
        put(&mut st, &h, b, 2);
        let rb = st.locate(h.hash(b), b, 3).unwrap();
        assert_eq!(rb.slot, ra.slot);
        assert_ne!(rb.seq, ra.seq);
        assert!(st.get(ra).is_none());
        assert!(st.get_mut(ra).is_none());
        assert_eq!(st.get(rb).unwrap().seq, 2);
        st.check_index().unwrap();
    }

    #[test]
    fn take_if_leaves_a_refused_object_in_place() {
        let h = KeyHasher::new(None);
        let mut st = ShardState::new(h.clone());
        let k = Key::new("k");
        put(&mut st, &h, k, 1);
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
        let h = KeyHasher::new(None);
        let mut st = ShardState::new(h.clone());
        let mut live = std::collections::BTreeSet::new();
        for wave in 0..6u64 {
            for i in 0..1500u64 {
                let n = format!("k{}", (i * 7 + wave * 311) % 2500);
                let k = Key::new(&n);
                let hash = h.hash(k);
                if live.remove(&n) {
                    assert!(st.take(hash, k).is_some());
                } else {
                    assert!(st.find(hash, k).is_none());
                    put(&mut st, &h, k, wave * 10_000 + i);
                    live.insert(n);
                }
            }
            st.check_index().unwrap();
            assert_eq!(st.len(), live.len());
        }
        let mut seen: Vec<String> = st.iter().map(|o| o.key_str().to_owned()).collect();
        seen.sort();
        assert_eq!(seen, live.into_iter().collect::<Vec<_>>());
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::key::KeyHasher;
    use crate::object::{NewRecord, Replicas, INLINE_KEY_BYTES};
    use crate::tenants::DEFAULT_TENANT_ID;
    use crate::types::DEFAULT_TENANT;

    fn put(st: &mut ShardState, h: &KeyHasher, k: Key<'_>, seq: u64) {
        let room = st.reserve_insert().unwrap();
        st.insert(
            room,
            k.tenant,
            h.hash(k),
            Object::new(NewRecord {
                key: k.key,
                size: 1,
                writer: 1,
                put_start: 0,
                seq,
                write_token: seq,
                lease: 0,
                committed: None,
                replicas: Replicas::new(),
                group: None,
                hard_pin: seq % 2 == 0,
            }),
        );
    }

    #[test]
    fn short_long_and_tenant_scoped_keys_round_trip() {
        // Keys at, below and above the inline limit, in several tenants, and
        // the same names in other tenants: each found only as itself.
        let h = KeyHasher::new(None);
        let mut st = ShardState::new(h.clone());
        let long = "x".repeat(INLINE_KEY_BYTES + 1);
        let edge = "y".repeat(INLINE_KEY_BYTES);
        let nul = "k\0with nul";
        let names = ["a", edge.as_str(), long.as_str(), nul, "é-ü"];
        let tenants = [DEFAULT_TENANT, "t1", "a/b", "t\u{e9}"];
        let mut seq = 0;
        for t in tenants {
            for n in names {
                put(&mut st, &h, Key::scoped(t, n), seq);
                seq += 1;
            }
        }
        st.check_index().unwrap();
        seq = 0;
        for t in tenants {
            for n in names {
                let k = Key::scoped(t, n);
                let o = st.find(h.hash(k), k).unwrap();
                assert_eq!(o.seq, seq);
                assert_eq!(st.key_of(o), k);
                assert_eq!(o.key_bytes(), n.as_bytes());
                assert_eq!(o.hard_pin(), seq % 2 == 0);
                assert_eq!(o.tenant() == DEFAULT_TENANT_ID, t == DEFAULT_TENANT);
                assert_eq!(o.in_tenant(DEFAULT_TENANT_ID), t == DEFAULT_TENANT);
                // The hash recomputed from the stored tenant id and key is
                // the key's: the record is found by sequence, and by no
                // other key's hash.
                assert_eq!(st.hash_of(o), h.hash(k));
                assert_eq!(
                    st.find_by_seq(h.hash(k), seq).map(|o| st.key_of(o)),
                    Some(k)
                );
                assert!(st.find_by_seq(h.hash(Key::new("other")), seq).is_none());
                seq += 1;
            }
        }
        // ("a/b", "c") and ("a", "b/c") stay apart; a prefix is not the key.
        let k = Key::scoped("a", "b/c");
        put(&mut st, &h, k, 99);
        let other = Key::scoped("a/b", "c");
        assert!(st.find(h.hash(other), other).is_none());
        let prefix = Key::scoped("t1", &long[..INLINE_KEY_BYTES]);
        assert!(st.find(h.hash(prefix), prefix).is_none());
        let unknown = Key::scoped("nobody", "a");
        assert!(st.find(h.hash(unknown), unknown).is_none());
        st.check_index().unwrap();
    }

    #[test]
    fn a_tenant_id_is_freed_with_its_last_record() {
        let h = KeyHasher::new(None);
        let mut st = ShardState::new(h.clone());
        let (a1, a2) = (Key::scoped("ta", "1"), Key::scoped("ta", "2"));
        put(&mut st, &h, a1, 1);
        put(&mut st, &h, a2, 2);
        let id = st.find(h.hash(a1), a1).unwrap().tenant();
        assert_eq!(st.tenants.users().collect::<Vec<_>>(), vec![(id, 2)]);
        st.take(h.hash(a1), a1).unwrap();
        st.check_index().unwrap();
        assert_eq!(st.tenants.lookup("ta"), Some(id));
        assert!(st
            .take_if(h.hash(a2), a2, |_| Ok::<(), ()>(()))
            .unwrap()
            .is_some());
        assert_eq!(st.tenants.lookup("ta"), None);
        assert!(st.find(h.hash(a2), a2).is_none());
        // The freed id goes to the next tenant; the old tenant's keys stay absent.
        let b = Key::scoped("tb", "1");
        put(&mut st, &h, b, 3);
        assert_eq!(st.find(h.hash(b), b).unwrap().tenant(), id);
        assert!(st.find(h.hash(a1), a1).is_none());
        st.check_index().unwrap();
    }
}
