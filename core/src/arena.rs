//! A slab of records addressed by slot number: records live in chunks of
//! up to [`CHUNK_SLOTS`], packed, so a scan walks memory in order (slot
//! numbers follow the chunks: a chunk a presizing made short leaves the rest
//! of its numbers unused); a freed slot
//! goes on a free list and is reused. Each record carries a version
//! ([`Versioned`]) that a free slot keeps, moved on by one, in the record's
//! place, and hands to the next record stored there: versions of one slot
//! keep counting across the records it holds, so a holder that names a
//! record by slot and version (the deadline index, one entry per
//! registered pin) never matches a later record of the slot by accident,
//! short of 2^32 version changes in the slot. The version costs no memory
//! of its own: it lives in the record while there is one and in the free
//! slot's otherwise empty bytes after.

/// Slots per chunk. The first chunk grows by doubling until it holds this
/// many (so a shard with a few records reserves little); every later chunk
/// is allocated at its full size when it starts and never reallocates, so
/// growing an arena past its first chunk copies no record (the doubling
/// reallocs of every chunk were ~8 % of a put at 10^7). The last chunk a
/// presizing makes may be short: it holds the records asked for past the
/// full chunks (in whole steps of slots), and once it is full the next
/// chunk starts after it, so no record moves; the slot numbers past its
/// room are never handed out. Pages of a chunk not yet written cost no
/// memory (a region's are resident from the start, so a presizing makes
/// no more of them than it was asked for).
pub(crate) const CHUNK_SLOTS: usize = 1 << CHUNK_SHIFT;
const CHUNK_SHIFT: u32 = 10;
const CHUNK_MASK: u32 = CHUNK_SLOTS as u32 - 1;

/// Slots a presizing's last chunk is rounded up to a multiple of: a 4 KiB
/// page of 128-byte object records.
const PRESIZE_STEP: usize = 32;

/// The highest slot number an arena hands out: slot numbers are `u32`, and
/// `u32::MAX` stays free as a sentinel for callers (an arena with a short
/// presized chunk leaves some numbers below it unused).
pub(crate) const MAX_SLOTS: u32 = u32::MAX - 1;

use crate::memory::{FixedVec, Region};
use std::sync::Arc;

/// A record's version, which the arena carries from one record of a slot
/// to the next (see the module docs).
pub(crate) trait Versioned {
    fn version(&self) -> u32;
    fn set_version(&mut self, version: u32);
}

/// One slot: its record, or the version the next record stored in it
/// starts from. No larger than the record: the version sits in bytes the
/// record's layout leaves free of its own niche (checked for the object
/// record where it is defined).
enum Slot<T> {
    Full(T),
    Free(u32),
}

impl<T> Slot<T> {
    #[inline]
    fn get(&self) -> Option<&T> {
        match self {
            Slot::Full(t) => Some(t),
            Slot::Free(_) => None,
        }
    }

    #[inline]
    fn get_mut(&mut self) -> Option<&mut T> {
        match self {
            Slot::Full(t) => Some(t),
            Slot::Free(_) => None,
        }
    }
}

/// A slot's bytes cost what its record's do (the free variant's version
/// fits beside the record's niche).
pub(crate) const fn slot_bytes<T>() -> usize {
    std::mem::size_of::<Slot<T>>()
}

struct Chunk<T> {
    records: FixedVec<Slot<T>>,
}

impl<T> Chunk<T> {
    /// An empty chunk with room for `slots` records, carved from `region`
    /// while it has room, else on the heap.
    fn try_in(
        region: Option<&Arc<Region>>,
        slots: usize,
    ) -> Result<Self, std::collections::TryReserveError> {
        Ok(Chunk {
            records: FixedVec::try_in(region, slots)?,
        })
    }
}

pub(crate) struct Arena<T> {
    chunks: Vec<Chunk<T>>,
    /// Free slots, the most recently freed last (reused first: its chunk is
    /// likely warm).
    free: Vec<u32>,
    len: usize,
    /// Empty chunks made ahead of need (`expected_objects` presizing), the
    /// next one to start last: full-size ones and maybe a short last one.
    spare: Vec<Chunk<T>>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            chunks: Vec::new(),
            free: Vec::new(),
            len: 0,
            spare: Vec::new(),
        }
    }
}

#[inline]
fn split(slot: u32) -> (usize, usize) {
    ((slot >> CHUNK_SHIFT) as usize, (slot & CHUNK_MASK) as usize)
}

impl<T: Versioned> Arena<T> {
    /// Records stored.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Slots ever handed out (stored records plus free slots).
    fn slots(&self) -> usize {
        self.chunks.iter().map(|c| c.records.len()).sum()
    }

    /// Bytes of the chunks (in use or spare) that lie in a region.
    pub fn region_bytes(&self) -> usize {
        self.chunks
            .iter()
            .chain(&self.spare)
            .map(|c| c.records.region_bytes())
            .sum()
    }

    /// The slots of each chunk [`try_reserve`](Self::try_reserve) makes
    /// for `n` records, the first chunk first.
    fn reserved_chunks(n: usize) -> impl Iterator<Item = usize> {
        let n = n.min(MAX_SLOTS as usize);
        // A power of two, as the first chunk's doublings would reach: a
        // shard that gets a few more than its share then starts its next
        // chunk instead of reallocating this one (which left the old
        // block behind: 222 B per object instead of 193 at 10^6).
        let first = (n > 0).then(|| n.next_power_of_two().min(CHUNK_SLOTS));
        let full = n.saturating_sub(1) / CHUNK_SLOTS;
        // Past the first chunk, full chunks and then the rest in whole
        // steps of slots (pages of object records): a shard past its share
        // starts a chunk after that short one (nothing moves); one of a
        // full master's shards, keys spreading at random, holds its share
        // give or take a few of its square root, so half of them would
        // never write the slots a chunk rounded up to full size holds (at
        // 10^7 objects in 1024 shards, ~6 bytes an object of resident
        // region). Growing the short chunk instead would move its records
        // to the heap and give its region pages back, splitting the huge
        // pages around them (reads x0.87 at 10^7).
        let rest = n - full * CHUNK_SLOTS;
        let (middle, last) = if full == 0 {
            (0, None)
        } else {
            (
                full - 1,
                Some(rest.next_multiple_of(PRESIZE_STEP).min(CHUNK_SLOTS)),
            )
        };
        first
            .into_iter()
            .chain(std::iter::repeat_n(CHUNK_SLOTS, middle))
            .chain(last)
    }

    /// Bytes [`try_reserve`](Self::try_reserve) carves from a region for
    /// `n` records (a region is sized with it).
    pub fn reserved_bytes(n: usize) -> usize {
        Self::reserved_chunks(n)
            .map(FixedVec::<Slot<T>>::region_footprint)
            .sum()
    }

    /// Makes room for `n` records in an empty arena (`expected_objects`
    /// presizing): the chunk list, the first chunk at `n` slots rounded up
    /// to a power of two (at most `CHUNK_SLOTS`), every later chunk at its
    /// full size but the last, which holds the rest in whole pages of
    /// slots, so that the first `n` inserts allocate nothing and copy
    /// nothing. The chunks are carved from `region` while it has room
    /// (memory resident already), else made on the heap, whose pages cost
    /// memory only once written. Fails if the memory cannot be had (what
    /// was made goes when the arena does). Does nothing to an arena that
    /// has chunks already.
    pub fn try_reserve(
        &mut self,
        n: usize,
        region: Option<&Arc<Region>>,
    ) -> Result<(), std::collections::TryReserveError> {
        if !self.chunks.is_empty() || n == 0 {
            return Ok(());
        }
        let chunks = n.min(MAX_SLOTS as usize).div_ceil(CHUNK_SLOTS);
        self.chunks.try_reserve(chunks)?;
        self.spare.try_reserve_exact(chunks - 1)?;
        for (k, slots) in Self::reserved_chunks(n).enumerate() {
            let chunk = Chunk::try_in(region, slots)?;
            if k == 0 {
                self.chunks.push(chunk);
            } else {
                self.spare.push(chunk);
            }
        }
        // Started by `pop`: the chunks made first start first.
        self.spare.reverse();
        Ok(())
    }

    /// Faults in every page of the chunks made ahead of need
    /// ([`crate::memory::fault_in_spare`]: the slots stay empty), so
    /// inserts into them later do not fault their pages in (a standby
    /// presized with `expected_objects`, docs/CONTRACT.md §9). The pages
    /// become resident now; nothing observable changes. A region's memory
    /// is resident since the region was made.
    pub fn prefault(&mut self) {
        for c in self.chunks.iter_mut().chain(self.spare.iter_mut()) {
            if !c.records.in_region() {
                crate::memory::fault_in_spare(c.records.spare_capacity_mut());
            }
        }
    }

    /// Makes sure the next [`insert`](Self::insert) allocates nothing: a
    /// free slot, or room in the last chunk (a new chunk made now, or the
    /// first one grown). An error, with nothing stored changed, when every
    /// slot number is in use ([`MAX_SLOTS`]) or the memory cannot be had;
    /// a chunk made and then left unused is the next insert's.
    pub fn try_reserve_one(&mut self) -> Result<(), String> {
        // The usual case, in a few loads: a free slot, or room left in the
        // last chunk.
        if !self.free.is_empty() || self.room_in_last().is_some() {
            return Ok(());
        }
        let (next, new_chunk) = self.next_new_slot();
        if next > MAX_SLOTS as usize {
            return Err(format!("every slot number up to {MAX_SLOTS} is in use"));
        }
        let failed = |slots: usize| {
            format!(
                "allocating {} bytes of records failed",
                slots.saturating_mul(slot_bytes::<T>())
            )
        };
        if new_chunk {
            // The first chunk starts empty and doubles below; a later one
            // is made at its full size (or was made short by a presizing),
            // so its records never move.
            self.chunks.try_reserve(1).map_err(|_| failed(0))?;
            let chunk = match self.spare.pop() {
                Some(chunk) => chunk,
                None if self.chunks.is_empty() => Chunk {
                    records: FixedVec::default(),
                },
                None => Chunk::try_in(None, CHUNK_SLOTS).map_err(|_| failed(CHUNK_SLOTS))?,
            };
            self.chunks.push(chunk);
        }
        let chunk = self.chunks.last_mut().expect("a chunk with room");
        if chunk.records.len() == chunk.records.capacity() {
            // Only the first chunk gets here: double it, never past one
            // chunk (moved to the heap, if it was carved from a region).
            let want = (chunk.records.len() * 2).clamp(8, CHUNK_SLOTS);
            chunk.records.regrow(want).map_err(|_| failed(want))?;
        }
        Ok(())
    }

    /// The number of the slot the last chunk has room for next, if it has
    /// room (and the number is one an arena hands out).
    #[inline]
    fn room_in_last(&self) -> Option<usize> {
        let last = self.chunks.last()?;
        let next = ((self.chunks.len() - 1) << CHUNK_SHIFT) + last.records.len();
        (last.records.len() < last.records.capacity() && next <= MAX_SLOTS as usize).then_some(next)
    }

    /// The slot number a new slot gets, and whether it starts a chunk: a
    /// new chunk only when the last one is full (to CHUNK_SLOTS, or to the
    /// room a presizing made it with, short, past the first chunk; a
    /// presized first chunk is there, empty, before the first insert; the
    /// first chunk doubles up to CHUNK_SLOTS).
    fn next_new_slot(&self) -> (usize, bool) {
        match self.chunks.last() {
            Some(last)
                if last.records.len() < last.records.capacity()
                    || (self.chunks.len() == 1 && last.records.len() < CHUNK_SLOTS) =>
            {
                (
                    ((self.chunks.len() - 1) << CHUNK_SHIFT) + last.records.len(),
                    false,
                )
            }
            _ => (self.chunks.len() << CHUNK_SHIFT, true),
        }
    }

    /// Stores `value`; returns its slot. In a slot used before, the record
    /// takes the version the slot's last record left (one past its own);
    /// in a new slot, it keeps the version it has. `None` when every slot
    /// number is in use ([`MAX_SLOTS`]). Allocates nothing after a
    /// [`try_reserve_one`](Self::try_reserve_one) that succeeded; otherwise
    /// it makes the room the same way, and panics if the memory cannot be
    /// had.
    pub fn insert(&mut self, mut value: T) -> Option<u32> {
        if let Some(slot) = self.free.pop() {
            let (c, i) = split(slot);
            let record = &mut self.chunks[c].records[i];
            let Slot::Free(version) = *record else {
                unreachable!("a free-listed slot holds no record")
            };
            value.set_version(version);
            *record = Slot::Full(value);
            self.len += 1;
            return Some(slot);
        }
        let next = match self.room_in_last() {
            Some(next) => next,
            None => {
                if self.next_new_slot().0 > MAX_SLOTS as usize {
                    return None;
                }
                if let Err(e) = self.try_reserve_one() {
                    panic!("arena: {e}");
                }
                self.room_in_last().expect("the room was made")
            }
        };
        let chunk = self.chunks.last_mut().expect("a chunk with room");
        let pushed = chunk.records.push(Slot::Full(value)).is_ok();
        assert!(pushed, "the chunk has room (made so above)");
        self.len += 1;
        Some(next as u32)
    }

    /// Touches the memory the next [`insert`](Self::insert) writes, with no
    /// effect on what the arena holds: the slot it will fill, every cache
    /// line of it prefetched (a free one is read too; an unused one at the
    /// end of the last chunk is already allocated). A caller about to insert
    /// into several arenas warms them all first, so the cache misses of
    /// those writes are in flight together instead of one after another.
    /// Returns a value made from what it read, for the caller to fold into
    /// `std::hint::black_box`.
    ///
    /// Every line of the slot, not only its first (an object record is
    /// two): the insert's stores to a line not on its way wait in the
    /// store buffer until it fills and stalls the stores after it (a
    /// standby's apply, whose runs warm every insert's slot this way:
    /// ×1.14 put pairs/s against a placeholder written into the first line
    /// only).
    #[inline]
    pub fn warm_insert(&mut self) -> u64 {
        if let Some(&slot) = self.free.last() {
            let (c, i) = split(slot);
            let Some(chunk) = self.chunks.get(c) else {
                return 0;
            };
            let Some(record) = chunk.records.get(i) else {
                return 0;
            };
            crate::memory::prefetch_all(record);
            return match record {
                Slot::Free(version) => u64::from(*version),
                Slot::Full(_) => 1,
            };
        }
        let Some(last) = self.chunks.last_mut() else {
            return 0;
        };
        let len = last.records.len() as u64;
        if let Some(slot) = last.records.spare_capacity_mut().first() {
            crate::memory::prefetch_all(slot);
        }
        len
    }

    /// Starts loading the line the next [`insert`](Self::insert) writes
    /// its record into, without waiting for it and changing nothing (the
    /// slot reused first, or the next one of the last chunk when it has
    /// room).
    #[inline]
    pub fn prefetch_insert(&self) {
        if let Some(&slot) = self.free.last() {
            self.prefetch(slot);
        } else if let Some(last) = self.chunks.last() {
            if last.records.len() < last.records.capacity() {
                crate::memory::prefetch_ptr(last.records.as_ptr().wrapping_add(last.records.len()));
            }
        }
    }

    /// The record in `slot`, if one is stored there.
    #[inline]
    pub fn get(&self, slot: u32) -> Option<&T> {
        let (c, i) = split(slot);
        self.chunks.get(c)?.records.get(i)?.get()
    }

    /// Starts loading every cache line of `slot`'s record, without
    /// waiting for them ([`crate::memory::prefetch_all`]); nothing for a
    /// slot never handed out.
    #[inline]
    pub fn prefetch(&self, slot: u32) {
        let (c, i) = split(slot);
        if let Some(r) = self.chunks.get(c).and_then(|c| c.records.get(i)) {
            crate::memory::prefetch_all(r);
        }
    }

    /// Starts loading, without waiting, what [`remove`](Self::remove)
    /// writes besides the record: the end of the free list.
    #[inline]
    pub fn prefetch_removal(&self) {
        crate::memory::prefetch_ptr(self.free.as_ptr().wrapping_add(self.free.len()));
    }

    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut T> {
        let (c, i) = split(slot);
        self.chunks.get_mut(c)?.records.get_mut(i)?.get_mut()
    }

    /// Takes the record out of `slot`, which keeps the record's version
    /// moved on by one (wrapping) for the next record stored there, and
    /// goes on the free list.
    pub fn remove(&mut self, slot: u32) -> Option<T> {
        let (c, i) = split(slot);
        let record = self.chunks.get_mut(c)?.records.get_mut(i)?;
        let next = record.get()?.version().wrapping_add(1);
        let Slot::Full(value) = std::mem::replace(record, Slot::Free(next)) else {
            unreachable!("checked full above")
        };
        self.free.push(slot);
        self.len -= 1;
        Some(value)
    }

    /// Every stored record with its slot, in slot order (chunk by chunk,
    /// front to back).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        self.chunks.iter().enumerate().flat_map(|(c, chunk)| {
            chunk
                .records
                .iter()
                .enumerate()
                .filter_map(move |(i, r)| r.get().map(|r| (((c << CHUNK_SHIFT) + i) as u32, r)))
        })
    }

    /// Calls `f` with the slot and record of every stored record among the
    /// `max_slots` slot numbers from `from` on (free slots, and the numbers
    /// a short chunk leaves unused, included in the count),
    /// in slot order, reading each chunk's records as one slice. Returns the
    /// first slot not visited, or `None` when no slot is left past the
    /// visited ones: a caller can scan in bounded slices (letting go of a
    /// lock in between) by passing the returned slot back in.
    pub fn scan(&self, from: u32, max_slots: usize, mut f: impl FnMut(u32, &T)) -> Option<u32> {
        let mut slot = from as usize;
        let end = slot.saturating_add(max_slots);
        while slot < end {
            let (c, i) = split(slot as u32);
            let chunk = self.chunks.get(c)?;
            let len = chunk.records.len();
            if i >= len {
                // Past this chunk's records: the end, or the slot numbers a
                // short chunk never hands out, before the next chunk.
                if c + 1 < self.chunks.len() {
                    slot = (c + 1) << CHUNK_SHIFT;
                    continue;
                }
                return None;
            }
            let stop = len.min(i + (end - slot));
            for (k, r) in chunk.records[i..stop].iter().enumerate() {
                if let Slot::Full(r) = r {
                    f((slot + k) as u32, r);
                }
            }
            slot += stop - i;
            if stop == len && len < CHUNK_SLOTS {
                // A short chunk: the last one, or a presizing's short one
                // with a chunk after it.
                if c + 1 == self.chunks.len() {
                    return None;
                }
                slot = (c + 1) << CHUNK_SHIFT;
            }
        }
        // `slot` starts a chunk, or lies inside the one the scan stopped in.
        ((slot >> CHUNK_SHIFT) < self.chunks.len()).then_some(slot as u32)
    }

    /// Free slots and records agree (debug checks).
    pub fn check(&self) -> Result<(), String> {
        let stored = self
            .chunks
            .iter()
            .map(|c| c.records.iter().filter(|r| r.get().is_some()).count())
            .sum::<usize>();
        if stored != self.len {
            return Err(format!("arena counts {} records, holds {stored}", self.len));
        }
        if stored + self.free.len() != self.slots() {
            return Err(format!(
                "arena: {stored} records + {} free slots != {} slots",
                self.free.len(),
                self.slots()
            ));
        }
        // Every free-listed slot is a free slot handed out before, listed
        // once (an insert reuses it as such).
        let mut listed = std::collections::HashSet::with_capacity(self.free.len());
        for &s in &self.free {
            let (c, i) = split(s);
            match self.chunks.get(c).and_then(|c| c.records.get(i)) {
                Some(Slot::Free(_)) => {}
                Some(Slot::Full(_)) => return Err(format!("arena: free slot {s} holds a record")),
                None => return Err(format!("arena: free slot {s} was never handed out")),
            }
            if !listed.insert(s) {
                return Err(format!("arena: slot {s} is listed free twice"));
            }
        }
        // Every chunk but the first is made at its full size, except at
        // most one a presizing made short (in whole steps); the first
        // doubles to full size before a second starts; every chunk but the
        // last is full.
        let mut short = 0;
        for (c, chunk) in self.chunks.iter().enumerate() {
            let (len, cap) = (chunk.records.len(), chunk.records.capacity());
            if cap > CHUNK_SLOTS {
                return Err(format!("arena chunk {c} grew past {CHUNK_SLOTS} slots"));
            }
            let last = c + 1 == self.chunks.len();
            if !last && len != cap {
                return Err(format!("arena chunk {c} is not full but is not the last"));
            }
            if c == 0 && !last && cap != CHUNK_SLOTS {
                return Err("arena: a second chunk started before the first was full size".into());
            }
            if c > 0 && cap != CHUNK_SLOTS {
                short += 1;
                if short > 1 || cap % PRESIZE_STEP != 0 {
                    return Err(format!("arena chunk {c} was not made at its full size"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records without a version of their own (the tests of layout and
    /// growth): every one is at version 0.
    macro_rules! unversioned {
        ($($t:ty),*) => {$(
            impl Versioned for $t {
                fn version(&self) -> u32 {
                    0
                }
                fn set_version(&mut self, _: u32) {}
            }
        )*};
    }
    unversioned!(u8, u64, usize, String);

    /// A record with a version.
    #[derive(Debug, PartialEq)]
    struct V(&'static str, u32);

    impl Versioned for V {
        fn version(&self) -> u32 {
            self.1
        }
        fn set_version(&mut self, version: u32) {
            self.1 = version;
        }
    }

    #[test]
    fn a_reused_slot_carries_the_version_on() {
        let mut a = Arena::default();
        let s0 = a.insert(V("a", 7)).unwrap();
        let s1 = a.insert(V("b", 3)).unwrap();
        assert_ne!(s0, s1);
        assert_eq!(
            a.get(s0),
            Some(&V("a", 7)),
            "a new slot keeps the record's version"
        );
        a.get_mut(s0).unwrap().1 = 9; // a registration moved it on
        assert_eq!(a.remove(s0), Some(V("a", 9)));
        assert_eq!(a.remove(s0), None);
        assert_eq!(a.get(s0), None);
        let s2 = a.insert(V("c", 0)).unwrap();
        assert_eq!(s2, s0, "a freed slot is reused");
        assert_eq!(a.get(s2), Some(&V("c", 10)), "one past the last record's");
        // At the last version the count wraps: the slot is reused still.
        a.get_mut(s2).unwrap().1 = u32::MAX;
        a.remove(s2).unwrap();
        assert_eq!(a.insert(V("d", 5)).unwrap(), s0);
        assert_eq!(a.get(s0), Some(&V("d", 0)));
        assert_eq!(a.len(), 2);
        a.check().unwrap();
    }

    /// The debug check refuses a free list an insert could not trust: a
    /// slot listed twice, one holding a record, one never handed out (each
    /// with the counts still adding up, so only the entry is wrong).
    #[test]
    fn the_check_refuses_a_corrupt_free_list() {
        let mut a = Arena::default();
        let s0 = a.insert(V("a", 0)).unwrap();
        let s1 = a.insert(V("b", 0)).unwrap();
        let s2 = a.insert(V("c", 0)).unwrap();
        a.remove(s0).unwrap();
        a.remove(s2).unwrap();
        a.check().unwrap();
        let good = a.free.clone();
        for (bad, why) in [
            ([s0, s0], "listed free twice"),
            ([s0, s1], "holds a record"),
            ([s0, 5_000], "was never handed out"),
        ] {
            a.free = bad.to_vec();
            let err = a.check().unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        a.free = good;
        a.check().unwrap();
    }

    #[test]
    fn a_slot_costs_what_its_record_does() {
        assert_eq!(slot_bytes::<V>(), std::mem::size_of::<V>());
        assert_eq!(slot_bytes::<String>(), std::mem::size_of::<String>());
    }

    #[test]
    fn chunks_fill_in_order_and_never_grow_past_their_size() {
        let mut a = Arena::default();
        let n = CHUNK_SLOTS * 2 + 3;
        for i in 0..n {
            assert_eq!(a.insert(i).unwrap(), i as u32);
        }
        a.check().unwrap();
        assert_eq!(a.chunks.len(), 3);
        assert!(a.chunks.iter().all(|c| c.records.capacity() <= CHUNK_SLOTS));
        let seen: Vec<usize> = a
            .iter()
            .map(|(s, &v)| {
                assert_eq!(s as usize, v);
                v
            })
            .collect();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
        // Holes are skipped by the scan and filled before the arena grows.
        for s in [5u32, CHUNK_SLOTS as u32, n as u32 - 1] {
            a.remove(s).unwrap();
        }
        assert_eq!(a.iter().count(), n - 3);
        a.check().unwrap();
        for _ in 0..3 {
            let s = a.insert(0).unwrap();
            assert!([5, CHUNK_SLOTS as u32, n as u32 - 1].contains(&s));
        }
        assert_eq!(a.chunks.len(), 3);
        assert_eq!(a.get_mut(5).map(|v| std::mem::replace(v, 9)), Some(0));
        assert_eq!(a.get(5), Some(&9));
        a.check().unwrap();
    }

    #[test]
    fn a_scan_in_slices_visits_every_record_once_in_slot_order() {
        for n in [
            0usize,
            1,
            7,
            CHUNK_SLOTS - 1,
            CHUNK_SLOTS,
            CHUNK_SLOTS + 1,
            3 * CHUNK_SLOTS,
        ] {
            let mut a = Arena::default();
            for i in 0..n {
                a.insert(i).unwrap();
            }
            // Holes are skipped, and count towards a slice's slots.
            for s in (0..n as u32).step_by(5) {
                a.remove(s).unwrap();
            }
            let want: Vec<(u32, usize)> = a.iter().map(|(s, &v)| (s, v)).collect();
            for slice in [
                1usize,
                3,
                100,
                CHUNK_SLOTS - 1,
                CHUNK_SLOTS,
                5 * CHUNK_SLOTS,
            ] {
                let mut got = Vec::new();
                let mut from = Some(0u32);
                let mut calls = 0usize;
                while let Some(at) = from {
                    calls += 1;
                    let before = got.len();
                    from = a.scan(at, slice, |s, &v| got.push((s, v)));
                    assert!(got.len() - before <= slice, "n={n} slice={slice}");
                    if let Some(next) = from {
                        assert_eq!(next as usize, at as usize + slice, "n={n} slice={slice}");
                    }
                }
                assert_eq!(got, want, "n={n} slice={slice}");
                // No call past the end: ceil(slots / slice) calls, one for an empty arena.
                assert_eq!(calls, n.div_ceil(slice).max(1), "n={n} slice={slice}");
            }
            assert_eq!(a.scan(u32::MAX, 10, |_, _| panic!("past the end")), None);
        }
    }

    #[test]
    fn out_of_range_slots_resolve_to_nothing() {
        let mut a: Arena<u8> = Arena::default();
        assert_eq!(a.get(0), None);
        assert_eq!(a.get(u32::MAX), None);
        assert_eq!(a.get_mut(7), None);
        assert_eq!(a.remove(u32::MAX), None);
        a.insert(1).unwrap();
        assert_eq!(a.get(0), Some(&1));
        assert_eq!(a.get(1), None);
        assert_eq!(a.remove(1), None);
    }

    #[test]
    fn a_presized_arena_fills_its_first_chunk_before_a_second() {
        let mut a: Arena<u64> = Arena::default();
        a.try_reserve(3 * CHUNK_SLOTS, None).unwrap();
        for i in 0..CHUNK_SLOTS as u64 + 1 {
            let slot = a.insert(i).unwrap();
            assert_eq!(slot as u64, i);
        }
        assert_eq!(a.chunks.len(), 2);
        assert_eq!(a.chunks[0].records.capacity(), CHUNK_SLOTS);
        a.check().unwrap();
    }

    /// A presizing makes full chunks and then, past them, the rest in
    /// whole steps of [`PRESIZE_STEP`] slots.
    #[test]
    fn a_presizing_makes_no_more_slots_than_asked_past_its_full_chunks() {
        let chunks = |n| Arena::<String>::reserved_chunks(n).collect::<Vec<_>>();
        assert_eq!(PRESIZE_STEP, 32);
        assert_eq!(chunks(0), Vec::<usize>::new());
        assert_eq!(chunks(100), [128]);
        assert_eq!(chunks(CHUNK_SLOTS), [CHUNK_SLOTS]);
        assert_eq!(chunks(CHUNK_SLOTS + 1), [CHUNK_SLOTS, 32]);
        assert_eq!(chunks(2 * CHUNK_SLOTS + 5), [CHUNK_SLOTS, CHUNK_SLOTS, 32]);
        assert_eq!(chunks(2 * CHUNK_SLOTS + 33), [CHUNK_SLOTS, CHUNK_SLOTS, 64]);
        assert_eq!(chunks(3 * CHUNK_SLOTS), [CHUNK_SLOTS; 3]);
        assert_eq!(
            chunks(3 * CHUNK_SLOTS - 1),
            [CHUNK_SLOTS; 3],
            "a step short of full"
        );
        // 10^7 objects in 1024 shards: 9766 each, 9792 slots (10 240 with
        // the last chunk full).
        assert_eq!(chunks(9766).iter().sum::<usize>(), 9792);
    }

    // A presized arena carves its chunks from the region, exactly the
    // bytes `reserved_bytes` says; past its share it grows on the heap,
    // and a small first chunk doubles onto the heap, its records intact.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_presized_arena_carves_its_chunks_from_the_region_then_uses_the_heap() {
        for n in [100, 2 * CHUNK_SLOTS + 5] {
            let bytes = Arena::<String>::reserved_bytes(n);
            let region = Region::map_committed(bytes).unwrap();
            let mut a: Arena<String> = Arena::default();
            a.try_reserve(n, Some(&region)).unwrap();
            assert_eq!(region.carved(), bytes, "n = {n}");
            assert!(a
                .chunks
                .iter()
                .chain(&a.spare)
                .all(|c| c.records.in_region()));
            let total = n + CHUNK_SLOTS + 3;
            let made: Vec<*const Slot<String>> = a
                .chunks
                .iter()
                .chain(a.spare.iter().rev())
                .map(|c| c.records.as_ptr())
                .collect();
            let room: usize = Arena::<String>::reserved_chunks(n).sum();
            let mut slots = Vec::new();
            for i in 0..total {
                let slot = a.insert(i.to_string()).unwrap();
                // Slots in order; past a short last chunk's room the next
                // chunk starts at its own first slot number.
                let want = if i < room.max(CHUNK_SLOTS) || room <= CHUNK_SLOTS {
                    i
                } else {
                    i - room + room.next_multiple_of(CHUNK_SLOTS)
                };
                assert_eq!(slot as usize, want, "n = {n}, record {i}");
                slots.push(slot);
            }
            for (i, &slot) in slots.iter().enumerate() {
                assert_eq!(a.get(slot), Some(&i.to_string()));
            }
            assert_eq!(region.carved(), bytes, "nothing more is carved");
            assert!(a.chunks.last().is_some_and(|c| !c.records.in_region()));
            // No presized chunk moved (the first, short, one excepted: it
            // doubles).
            for (k, p) in made.iter().enumerate().skip(1) {
                assert_eq!(
                    a.chunks[k].records.as_ptr(),
                    *p,
                    "n = {n}, chunk {k} stayed"
                );
            }
            // Every record is scanned once, in slot order, across the gap.
            let mut seen = Vec::new();
            let mut from = Some(0);
            while let Some(at) = from {
                from = a.scan(at, 100, |s, _| seen.push(s));
            }
            assert_eq!(seen, slots, "n = {n}");
            a.check().unwrap();
        }
        assert_eq!(Arena::<u64>::reserved_bytes(0), 0);
    }

    /// A presized arena with a short last chunk, filled far past it (two
    /// more chunks), with records removed: every record is scanned once in
    /// slot order, in slices of any size and from any slot (inside the
    /// unused numbers too), and the check holds.
    #[test]
    fn a_presized_arena_with_a_short_chunk_scans_and_checks_past_it() {
        let mut a: Arena<usize> = Arena::default();
        a.try_reserve(CHUNK_SLOTS + 5, None).unwrap();
        let room: usize = Arena::<usize>::reserved_chunks(CHUNK_SLOTS + 5).sum();
        assert_eq!(room, CHUNK_SLOTS + PRESIZE_STEP);
        let total = room + 2 * CHUNK_SLOTS + 1;
        let slots: Vec<u32> = (0..total).map(|i| a.insert(i).unwrap()).collect();
        // Two full chunks and one record past the short one (a shard far
        // past its share): the check holds.
        a.check().unwrap();
        assert_eq!(a.chunks.len(), 5);
        assert_eq!(
            slots[room] as usize,
            2 * CHUNK_SLOTS,
            "the next chunk's first number"
        );
        for &s in slots.iter().step_by(7) {
            a.remove(s).unwrap();
        }
        a.check().unwrap();
        let want: Vec<(u32, usize)> = a.iter().map(|(s, &v)| (s, v)).collect();
        for slice in [1usize, 31, 100, CHUNK_SLOTS, 3 * CHUNK_SLOTS] {
            let mut got = Vec::new();
            let mut from = Some(0u32);
            while let Some(at) = from {
                from = a.scan(at, slice, |s, &v| got.push((s, v)));
                if let Some(next) = from {
                    assert!(next > at, "slice {slice}: the scan moves on");
                }
            }
            assert_eq!(got, want, "slice {slice}");
        }
        // From inside the unused numbers: the records of the next chunk on.
        let mut got = Vec::new();
        let mut from = Some((CHUNK_SLOTS + PRESIZE_STEP + 3) as u32);
        while let Some(at) = from {
            from = a.scan(at, 50, |s, &v| got.push((s, v)));
        }
        let after: Vec<(u32, usize)> = want
            .iter()
            .copied()
            .filter(|&(s, _)| s as usize >= 2 * CHUNK_SLOTS)
            .collect();
        assert_eq!(got, after);
        assert_eq!(a.chunks[1].records.capacity(), PRESIZE_STEP);
    }

    /// Prefaulting writes only past each chunk's length: the arena holds
    /// and hands out exactly what it would have, and a prefaulted empty
    /// arena (no chunks) is untouched.
    #[test]
    fn prefault_changes_nothing_the_arena_holds() {
        let mut a: Arena<String> = Arena::default();
        a.prefault();
        assert_eq!(a.slots(), 0);
        a.try_reserve(2 * CHUNK_SLOTS + 5, None).unwrap();
        let x = a.insert("x".to_string()).unwrap();
        a.prefault();
        assert_eq!((a.len(), a.slots()), (1, 1));
        assert_eq!(a.get(x).map(String::as_str), Some("x"));
        for i in 0..2 * CHUNK_SLOTS + 4 {
            let slot = a.insert(i.to_string()).unwrap();
            assert_eq!(slot as usize, i + 1);
            assert_eq!(a.get(slot), Some(&i.to_string()));
        }
        assert!(a.spare.is_empty());
        a.check().unwrap();
    }

    // Growth copies nothing past the first chunk: a record in a later
    // chunk stays where it was written however many records follow it, and
    // a presized arena's first inserts start the chunks it made, in order.
    #[test]
    fn records_past_the_first_chunk_never_move() {
        let mut a: Arena<u64> = Arena::default();
        for i in 0..CHUNK_SLOTS as u64 + 1 {
            a.insert(i).unwrap();
        }
        let at = a.get(CHUNK_SLOTS as u32).unwrap() as *const u64;
        let first = a.chunks[0].records.as_ptr();
        for i in 0..10 * CHUNK_SLOTS as u64 {
            a.insert(i).unwrap();
        }
        assert_eq!(a.get(CHUNK_SLOTS as u32).unwrap() as *const u64, at);
        assert_eq!(
            a.chunks[0].records.as_ptr(),
            first,
            "a full first chunk stays"
        );
        assert!(a.chunks[1..]
            .iter()
            .all(|c| c.records.capacity() == CHUNK_SLOTS));
        a.check().unwrap();

        let mut p: Arena<u64> = Arena::default();
        p.try_reserve(3 * CHUNK_SLOTS + 1, None).unwrap();
        assert_eq!(p.spare.len(), 3);
        let made: Vec<*const Slot<u64>> = std::iter::once(p.chunks[0].records.as_ptr())
            .chain(p.spare.iter().rev().map(|c| c.records.as_ptr()))
            .collect();
        for i in 0..3 * CHUNK_SLOTS as u64 + 1 {
            p.insert(i).unwrap();
        }
        assert!(p.spare.is_empty());
        let used: Vec<*const Slot<u64>> = p.chunks.iter().map(|c| c.records.as_ptr()).collect();
        assert_eq!(used, made, "the presized chunks, in order");
        p.check().unwrap();
        // Reserving again does nothing to an arena with chunks.
        p.try_reserve(100 * CHUNK_SLOTS, None).unwrap();
        assert!(p.spare.is_empty());
    }
}
