//! A shard's hash index: where each record of the shard's arena is, by
//! its key's hash, in one array of 8-byte buckets — the low 32 bits of
//! the hash and the record's slot — so that a lookup reads one cache line
//! in the common case (eight buckets a line) and compares 32 bits of hash
//! before it reads any record: a probe of a table of a million records
//! costs one miss for the bucket and one for the record it names, where a
//! table of separate control bytes and slots costs one more.
//!
//! Open addressing with linear probing from the bucket the hash's low bits
//! name. Removal shifts the following buckets back (no tombstones), so a
//! lookup ends at the first empty bucket. The table grows to twice its
//! size when it would pass three quarters full; growing places every
//! entry again from the hash bits it stores, reading no record.

/// An empty bucket.
const EMPTY: u64 = 0;

/// Fewest buckets a table that holds anything has.
const MIN_BUCKETS: usize = 8;

/// Most buckets a table has: the bucket number comes from the 32 hash
/// bits a bucket keeps.
const MAX_BUCKETS: usize = 1 << 32;

use crate::memory::{FixedVec, Region};
use std::sync::Arc;

/// Slots under their keys' hashes (several slots may share a hash; the
/// caller tells them apart by their records).
#[derive(Default)]
pub(crate) struct SlotIndex {
    /// `buckets.len()` is 0 or a power of two: hash bits (high half) and
    /// slot + 1 (low half); [`EMPTY`] where none is.
    buckets: FixedVec<u64>,
    len: usize,
}

/// The hash bits a bucket keeps.
#[inline]
fn bits(hash: u64) -> u32 {
    hash as u32
}

#[inline]
fn entry(bits: u32, slot: u32) -> u64 {
    debug_assert!(slot < u32::MAX, "slot + 1 fits the bucket");
    (u64::from(bits) << 32) | (u64::from(slot) + 1)
}

#[inline]
fn entry_bits(e: u64) -> u32 {
    (e >> 32) as u32
}

#[inline]
fn entry_slot(e: u64) -> u32 {
    (e as u32).wrapping_sub(1)
}

/// Entries a table of `buckets` holds before it grows (three quarters).
#[inline]
const fn limit(buckets: usize) -> usize {
    buckets - buckets / 4
}

/// Most entries a table indexes: three quarters of [`MAX_BUCKETS`].
pub(crate) const MAX_ENTRIES: usize = limit(MAX_BUCKETS);

impl SlotIndex {
    pub fn new() -> SlotIndex {
        SlotIndex::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Entries it holds before it must grow.
    pub fn capacity(&self) -> usize {
        limit(self.buckets.len())
    }

    /// Makes room for `more` entries beyond those held, so that the next
    /// `more` inserts do not grow the table; a new table is carved from
    /// `region` while it has room, else made on the heap. An error (the
    /// index is unchanged) when that many cannot be indexed or the memory
    /// cannot be had.
    pub fn try_reserve(&mut self, more: usize, region: Option<&Arc<Region>>) -> Result<(), String> {
        let want = self
            .len
            .checked_add(more)
            .ok_or_else(|| "index: capacity overflow".to_string())?;
        if want <= self.capacity() {
            return Ok(());
        }
        let buckets = buckets_for(want)?;
        self.rebuild(buckets, region)
    }

    /// Bytes [`try_reserve`](Self::try_reserve) of `n` entries carves from
    /// a region for an empty index (a region is sized with it); 0 when
    /// that many cannot be indexed.
    pub fn reserved_bytes(n: usize) -> usize {
        buckets_for(n).map_or(0, FixedVec::<u64>::region_footprint)
    }

    /// Bytes of the bucket array when it lies in a region, else 0.
    pub fn region_bytes(&self) -> usize {
        self.buckets.region_bytes()
    }

    /// The first slot stored under `hash` that `eq` accepts.
    #[inline]
    pub fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let mask = self.buckets.len().checked_sub(1)?;
        let b = bits(hash);
        let mut i = b as usize & mask;
        loop {
            let e = self.buckets[i];
            if e == EMPTY {
                return None;
            }
            if entry_bits(e) == b && eq(entry_slot(e)) {
                return Some(entry_slot(e));
            }
            i = (i + 1) & mask;
        }
    }

    /// Starts loading the bucket a lookup of `hash` reads first, without
    /// waiting for it ([`crate::memory::prefetch`]).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if let Some(mask) = self.buckets.len().checked_sub(1) {
            crate::memory::prefetch(&self.buckets[bits(hash) as usize & mask]);
        }
    }

    /// The first slot stored under `hash`, whatever its record: a guess
    /// for a caller warming memory (a wrong one only wastes a load).
    #[inline]
    pub fn first(&self, hash: u64) -> Option<u32> {
        self.find(hash, |_| true)
    }

    /// Stores `slot` under `hash` (the caller knows it is not stored),
    /// growing the table when it is three quarters full. Panics only when
    /// a shard would index more than three quarters of 2^32 records,
    /// which no memory holds.
    pub fn insert(&mut self, hash: u64, slot: u32) {
        if self.len >= self.capacity() {
            let buckets =
                buckets_for(self.len + 1).expect("a shard indexes fewer than 3 * 2^30 records");
            self.rebuild(buckets, None).expect("index memory");
        }
        place(&mut self.buckets, entry(bits(hash), slot));
        self.len += 1;
    }

    /// Removes `slot` stored under `hash`; false when it is not stored.
    pub fn remove(&mut self, hash: u64, slot: u32) -> bool {
        let Some(mask) = self.buckets.len().checked_sub(1) else {
            return false;
        };
        let want = entry(bits(hash), slot);
        let mut i = bits(hash) as usize & mask;
        loop {
            let e = self.buckets[i];
            if e == EMPTY {
                return false;
            }
            if e == want {
                break;
            }
            i = (i + 1) & mask;
        }
        // Shift back every following entry that may sit at `i`: one whose
        // home is not in the cyclic range (i, j].
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = self.buckets[j];
            if e == EMPTY {
                break;
            }
            let home = entry_bits(e) as usize & mask;
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(i) & mask) {
                self.buckets[i] = e;
                i = j;
            }
        }
        self.buckets[i] = EMPTY;
        self.len -= 1;
        true
    }

    /// A table of `buckets` buckets holding every entry, carved from
    /// `region` while it has room, else on the heap.
    fn rebuild(&mut self, buckets: usize, region: Option<&Arc<Region>>) -> Result<(), String> {
        // Zeroed memory (EMPTY is 0): a region's, resident already, or the
        // heap's, whose pages the system provides as buckets are first
        // written, not all at once.
        let mut fresh = FixedVec::try_zeroed(region, buckets).map_err(|_| {
            format!(
                "index: allocating {} bytes failed",
                buckets.saturating_mul(std::mem::size_of::<u64>())
            )
        })?;
        for &e in self.buckets.iter().filter(|&&e| e != EMPTY) {
            place(&mut fresh, e);
        }
        self.buckets = fresh;
        Ok(())
    }
}

/// Puts `e` in the first empty bucket from its home (there is one: the
/// table is never full).
#[inline]
fn place(buckets: &mut [u64], e: u64) {
    let mask = buckets.len() - 1;
    let mut i = entry_bits(e) as usize & mask;
    while buckets[i] != EMPTY {
        i = (i + 1) & mask;
    }
    buckets[i] = e;
}

/// Buckets of a table holding `n` entries before it grows.
fn buckets_for(n: usize) -> Result<usize, String> {
    let mut b = MIN_BUCKETS;
    while limit(b) < n {
        b = b
            .checked_mul(2)
            .filter(|&b| b <= MAX_BUCKETS)
            .ok_or_else(|| "index: capacity overflow".to_string())?;
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use crate::test_rng::XorShift;

    fn check(ix: &SlotIndex, model: &HashMap<u32, u64>) {
        assert_eq!(ix.len(), model.len());
        for (&slot, &hash) in model {
            assert_eq!(ix.find(hash, |s| s == slot), Some(slot), "slot {slot}");
        }
        assert!(ix.len() <= ix.capacity());
    }

    // Inserts, removals and growth against a model, with hashes drawn
    // from few values (long runs of equal hash bits and wrap-around at the
    // table's end) and from many.
    #[test]
    fn agrees_with_a_model_under_churn() {
        for spread in [4u64, 64, u64::MAX] {
            let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ spread);
            let mut ix = SlotIndex::new();
            let mut model: HashMap<u32, u64> = HashMap::new();
            let mut next_slot = 0u32;
            for step in 0..20_000 {
                let r = rng.next();
                if model.is_empty() || r % 3 != 0 {
                    // High bits vary freely; the low 32 (kept) by `spread`.
                    let hash =
                        (rng.next() << 32) | (rng.next() % spread.min(1 << 32)) as u32 as u64;
                    let slot = next_slot;
                    next_slot += 1;
                    ix.insert(hash, slot);
                    model.insert(slot, hash);
                } else {
                    let &slot = model.keys().nth((r as usize / 3) % model.len()).unwrap();
                    let hash = model.remove(&slot).unwrap();
                    assert!(ix.remove(hash, slot));
                    assert!(!ix.remove(hash, slot), "removed twice");
                    assert_eq!(ix.find(hash, |s| s == slot), None);
                }
                if step % 997 == 0 {
                    check(&ix, &model);
                }
            }
            check(&ix, &model);
        }
    }

    #[test]
    fn an_empty_index_finds_nothing_and_removes_nothing() {
        let mut ix = SlotIndex::new();
        assert_eq!(ix.find(7, |_| true), None);
        assert_eq!(ix.first(7), None);
        assert!(!ix.remove(7, 0));
        assert_eq!(ix.capacity(), 0);
    }

    #[test]
    fn slots_sharing_a_hash_are_told_apart_by_the_caller() {
        let mut ix = SlotIndex::new();
        for slot in 0..50 {
            ix.insert(42, slot);
        }
        for slot in 0..50 {
            assert_eq!(ix.find(42, |s| s == slot), Some(slot));
        }
        let first = ix.first(42).unwrap();
        assert!(first < 50);
        assert!(ix.remove(42, first));
        let next = ix.first(42).unwrap();
        assert!(next < 50 && next != first, "the run shifted back");
        for slot in (0..50).filter(|&s| s != first) {
            assert_eq!(ix.find(42, |s| s == slot), Some(slot));
        }
        // Another hash whose home falls in the run is still found.
        ix.insert(43, 99);
        assert_eq!(ix.find(43, |s| s == 99), Some(99));
        assert_eq!(ix.find(43, |s| s == 5), None);
    }

    #[test]
    fn reserve_presizes_and_refuses_what_cannot_be_indexed() {
        let mut ix = SlotIndex::new();
        ix.try_reserve(1000, None).unwrap();
        let cap = ix.capacity();
        assert!(cap >= 1000);
        for slot in 0..1000 {
            ix.insert(u64::from(slot).wrapping_mul(0x9E37_79B9_7F4A_7C15), slot);
        }
        assert_eq!(ix.capacity(), cap, "no growth within the reserve");
        assert!(ix.try_reserve(usize::MAX, None).is_err());
        assert!(ix.try_reserve(1 << 40, None).is_err());
        assert_eq!(ix.len(), 1000, "a refused reserve changes nothing");
        for slot in 0..1000 {
            assert_eq!(
                ix.find(u64::from(slot).wrapping_mul(0x9E37_79B9_7F4A_7C15), |s| s
                    == slot),
                Some(slot)
            );
        }
    }
}
