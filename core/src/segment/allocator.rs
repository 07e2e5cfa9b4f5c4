//! Offset allocator for one segment: best-fit placement over `0..capacity`
//! with free-range coalescing. Free ranges are kept in two ordered trees (by
//! offset for merging, by `(len, offset)` for best fit), so every call is O(log n).

use std::collections::{BTreeMap, BTreeSet};

/// Why a `free` or `reserve` was refused. A refused call changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocError {
    /// The range does not lie inside `0..capacity` (or its end overflows).
    OutOfRange,
    /// `free`: the range overlaps a free range (double free).
    /// `reserve`: the range is not inside a single free range.
    Overlap,
    /// The range is empty.
    ZeroLength,
}

/// Free-space bookkeeping of one segment. It knows only free ranges; which
/// allocated range belongs to whom is the caller's business (see `Segment`).
#[derive(Debug, Clone)]
pub struct OffsetAllocator {
    capacity: u64,
    allocated: u64,
    /// Free ranges: offset -> len. Disjoint and never adjacent (always merged).
    by_offset: BTreeMap<u64, u64>,
    /// The same ranges as `(len, offset)`: the first entry at or after
    /// `(len, 0)` is the smallest hole that fits, lowest offset on ties.
    by_size: BTreeSet<(u64, u64)>,
}

impl OffsetAllocator {
    /// An allocator with the whole `0..capacity` free.
    pub fn new(capacity: u64) -> Self {
        let mut a = OffsetAllocator {
            capacity,
            allocated: 0,
            by_offset: BTreeMap::new(),
            by_size: BTreeSet::new(),
        };
        if capacity > 0 {
            a.insert_free(0, capacity);
        }
        a
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn allocated_bytes(&self) -> u64 {
        self.allocated
    }

    pub fn free_bytes(&self) -> u64 {
        self.capacity - self.allocated
    }

    /// Length of the largest free range (0 when full): the biggest `allocate`
    /// that can succeed.
    pub fn largest_free(&self) -> u64 {
        self.by_size.last().map_or(0, |&(len, _)| len)
    }

    /// Number of free ranges; a fragmentation measure.
    pub fn free_range_count(&self) -> usize {
        self.by_offset.len()
    }

    /// Allocates `len` bytes from the smallest free range that fits (lowest
    /// offset on ties) and returns the offset; `None` if `len` is 0 or no
    /// free range is large enough. Best fit keeps large holes intact for
    /// large objects.
    pub fn allocate(&mut self, len: u64) -> Option<u64> {
        if len == 0 {
            return None;
        }
        let &(hole_len, offset) = self.by_size.range((len, 0)..).next()?;
        self.remove_free(offset, hole_len);
        // Take the front of the hole so the remainder keeps its right neighbour
        // (an allocated range, since free ranges are never adjacent).
        if hole_len > len {
            self.insert_free(offset + len, hole_len - len);
        }
        self.allocated += len;
        Some(offset)
    }

    /// Returns `offset..offset+len` to the free space, merging with free
    /// neighbours. Refused, with nothing changed, if the range is empty, not
    /// inside the segment, or overlaps any free range (a double free).
    pub fn free(&mut self, offset: u64, len: u64) -> Result<(), AllocError> {
        let end = self.check_range(offset, len)?;
        // Free ranges are disjoint and sorted, so the only candidate for an
        // overlap is the last free range starting before `end`.
        let left = self
            .by_offset
            .range(..end)
            .next_back()
            .map(|(&o, &l)| (o, l));
        if let Some((o, l)) = left {
            if o + l > offset {
                return Err(AllocError::Overlap);
            }
        }
        let mut start = offset;
        let mut new_len = len;
        if let Some((o, l)) = left {
            if o + l == offset {
                self.remove_free(o, l);
                start = o;
                new_len += l;
            }
        }
        if let Some(&r) = self.by_offset.get(&end) {
            self.remove_free(end, r);
            new_len += r;
        }
        self.insert_free(start, new_len);
        self.allocated -= len;
        Ok(())
    }

    /// Marks exactly `offset..offset+len` allocated (snapshot restore rebuilds
    /// allocators from the surviving buffers). The range must lie inside one
    /// free range, else `Overlap`; nothing changes on error.
    pub fn reserve(&mut self, offset: u64, len: u64) -> Result<(), AllocError> {
        let end = self.check_range(offset, len)?;
        let (o, l) = self
            .by_offset
            .range(..=offset)
            .next_back()
            .map(|(&o, &l)| (o, l))
            .ok_or(AllocError::Overlap)?;
        if o + l < end {
            return Err(AllocError::Overlap);
        }
        self.remove_free(o, l);
        if o < offset {
            self.insert_free(o, offset - o);
        }
        if end < o + l {
            self.insert_free(end, o + l - end);
        }
        self.allocated += len;
        Ok(())
    }

    /// Free ranges as `(offset, len)`, ascending by offset.
    pub fn free_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.by_offset.iter().map(|(&o, &l)| (o, l))
    }

    /// Validates a caller-supplied range and returns its end.
    fn check_range(&self, offset: u64, len: u64) -> Result<u64, AllocError> {
        if len == 0 {
            return Err(AllocError::ZeroLength);
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.capacity => Ok(end),
            _ => Err(AllocError::OutOfRange),
        }
    }

    fn insert_free(&mut self, offset: u64, len: u64) {
        self.by_offset.insert(offset, len);
        self.by_size.insert((len, offset));
    }

    fn remove_free(&mut self, offset: u64, len: u64) {
        self.by_offset.remove(&offset);
        self.by_size.remove(&(len, offset));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(a: &OffsetAllocator) -> Vec<(u64, u64)> {
        a.free_ranges().collect()
    }

    /// Project requirement: fragmentation is real (a large allocation fails
    /// while plenty of bytes are free) and freeing everything coalesces back
    /// into one range.
    #[test]
    fn fragmentation_then_full_coalescing() {
        const N: u64 = 1000;
        const BUF: u64 = 4096;
        let mut a = OffsetAllocator::new(N * BUF);
        let offsets: Vec<u64> = (0..N).map(|_| a.allocate(BUF).unwrap()).collect();
        assert_eq!(a.allocated_bytes(), N * BUF);
        assert_eq!(a.free_range_count(), 0);
        assert_eq!(a.allocate(1), None);

        for &o in offsets.iter().step_by(2) {
            a.free(o, BUF).unwrap();
        }
        assert_eq!(a.free_bytes(), N / 2 * BUF);
        assert_eq!(a.free_range_count(), (N / 2) as usize);
        assert_eq!(a.largest_free(), BUF);
        // Half the segment is free, but no single hole holds BUF + 1 bytes.
        assert_eq!(a.allocate(BUF + 1), None);
        assert_eq!(a.allocated_bytes(), N / 2 * BUF);

        for &o in offsets.iter().skip(1).step_by(2) {
            a.free(o, BUF).unwrap();
        }
        assert_eq!(ranges(&a), vec![(0, N * BUF)]);
        assert_eq!(a.allocated_bytes(), 0);
        assert_eq!(a.largest_free(), N * BUF);
    }

    #[test]
    fn free_merges_with_left_neighbour() {
        let mut a = OffsetAllocator::new(300);
        let x = a.allocate(100).unwrap();
        let y = a.allocate(100).unwrap();
        let _z = a.allocate(100).unwrap();
        a.free(x, 100).unwrap();
        a.free(y, 100).unwrap();
        assert_eq!(ranges(&a), vec![(0, 200)]);
    }

    #[test]
    fn free_merges_with_right_neighbour() {
        let mut a = OffsetAllocator::new(300);
        let _x = a.allocate(100).unwrap();
        let y = a.allocate(100).unwrap();
        let z = a.allocate(100).unwrap();
        a.free(z, 100).unwrap();
        a.free(y, 100).unwrap();
        assert_eq!(ranges(&a), vec![(100, 200)]);
    }

    #[test]
    fn free_merges_with_both_neighbours() {
        let mut a = OffsetAllocator::new(300);
        let x = a.allocate(100).unwrap();
        let y = a.allocate(100).unwrap();
        let z = a.allocate(100).unwrap();
        a.free(x, 100).unwrap();
        a.free(z, 100).unwrap();
        assert_eq!(a.free_range_count(), 2);
        a.free(y, 100).unwrap();
        assert_eq!(ranges(&a), vec![(0, 300)]);
        assert_eq!(a.largest_free(), 300);
    }

    #[test]
    fn free_without_free_neighbours_adds_a_range() {
        let mut a = OffsetAllocator::new(300);
        let _x = a.allocate(100).unwrap();
        let y = a.allocate(100).unwrap();
        let _z = a.allocate(100).unwrap();
        a.free(y, 100).unwrap();
        assert_eq!(ranges(&a), vec![(100, 100)]);
    }

    #[test]
    fn double_free_and_bad_ranges_are_rejected_without_change() {
        let mut a = OffsetAllocator::new(1000);
        let x = a.allocate(100).unwrap();
        let y = a.allocate(100).unwrap();
        a.free(x, 100).unwrap();
        let before = (ranges(&a), a.allocated_bytes());
        assert_eq!(a.free(x, 100), Err(AllocError::Overlap));
        // Partial overlaps on either side of a free range.
        assert_eq!(a.free(50, 100), Err(AllocError::Overlap));
        assert_eq!(a.free(y + 50, 100), Err(AllocError::Overlap)); // runs into the tail hole
        assert_eq!(a.free(y, 0), Err(AllocError::ZeroLength));
        assert_eq!(a.free(990, 20), Err(AllocError::OutOfRange));
        assert_eq!(a.free(u64::MAX, 2), Err(AllocError::OutOfRange));
        assert_eq!((ranges(&a), a.allocated_bytes()), before);
        a.free(y, 100).unwrap();
        assert_eq!(ranges(&a), vec![(0, 1000)]);
    }

    #[test]
    fn reserve_carves_exact_ranges() {
        let mut a = OffsetAllocator::new(1000);
        a.reserve(100, 50).unwrap();
        assert_eq!(ranges(&a), vec![(0, 100), (150, 850)]);
        a.reserve(0, 100).unwrap(); // front of a range
        a.reserve(900, 100).unwrap(); // back of a range
        assert_eq!(ranges(&a), vec![(150, 750)]);
        assert_eq!(a.allocated_bytes(), 250);

        let before = ranges(&a);
        assert_eq!(a.reserve(120, 40), Err(AllocError::Overlap)); // starts inside allocated
        assert_eq!(a.reserve(850, 100), Err(AllocError::Overlap)); // ends inside allocated
        assert_eq!(a.reserve(100, 50), Err(AllocError::Overlap)); // already reserved
        assert_eq!(a.reserve(500, 0), Err(AllocError::ZeroLength));
        assert_eq!(a.reserve(999, 2), Err(AllocError::OutOfRange));
        assert_eq!(ranges(&a), before);
        a.reserve(150, 750).unwrap(); // a whole range
        assert_eq!(a.free_range_count(), 0);
        assert_eq!(a.free_bytes(), 0);
    }

    #[test]
    fn allocate_picks_smallest_fitting_hole_lowest_offset_on_ties() {
        let mut a = OffsetAllocator::new(1000);
        // Holes: [0,300) len 300, [400,450) len 50, [500,560) len 60,
        // [600,660) len 60, [700,1000) len 300.
        a.reserve(300, 100).unwrap();
        a.reserve(450, 50).unwrap();
        a.reserve(560, 40).unwrap();
        a.reserve(660, 40).unwrap();
        assert_eq!(a.allocate(55), Some(500)); // 60-holes tie; lower offset wins
        assert_eq!(a.allocate(55), Some(600));
        assert_eq!(a.allocate(50), Some(400)); // exact fit
        assert_eq!(a.allocate(100), Some(0)); // 300-holes tie
        assert_eq!(a.allocate(250), Some(700)); // 200 left at 100 is too small
        assert_eq!(a.allocate(201), None);
        assert_eq!(a.allocate(0), None);
    }

    #[test]
    fn allocate_edge_cases() {
        let mut empty = OffsetAllocator::new(0);
        assert_eq!(empty.allocate(1), None);
        assert_eq!(empty.largest_free(), 0);
        assert_eq!(empty.free(0, 1), Err(AllocError::OutOfRange));

        let mut a = OffsetAllocator::new(u64::MAX);
        assert_eq!(a.allocate(u64::MAX), Some(0));
        assert_eq!(a.free_bytes(), 0);
        a.free(0, u64::MAX).unwrap();
        assert_eq!(a.largest_free(), u64::MAX);
        assert_eq!(a.allocate(u64::MAX - 1), Some(0));
        assert_eq!(ranges(&a), vec![(u64::MAX - 1, 1)]);
    }

    /// xorshift64: deterministic and dependency-free.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// The reference model: one bool per byte (true = allocated).
    fn model_ranges(bits: &[bool]) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < bits.len() {
            if bits[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < bits.len() && !bits[i] {
                i += 1;
            }
            out.push((start as u64, (i - start) as u64));
        }
        out
    }

    /// Random allocate / free / reserve sequences against the byte-map model.
    /// The model decides every expected outcome (including best-fit offsets
    /// and refusals), and the full free-range list must match after each
    /// step, which also proves ranges never overlap and are never adjacent.
    #[test]
    fn randomized_against_bitmap_model() {
        const CAP: usize = 1024;
        for seed in 1..=24u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut a = OffsetAllocator::new(CAP as u64);
            let mut bits = vec![false; CAP];
            // Allocations handed out; may go stale after random frees, which is
            // fine: the model, not this list, decides what should happen.
            let mut live: Vec<(u64, u64)> = Vec::new();
            for step in 0..1500 {
                let holes = model_ranges(&bits);
                match rng.below(10) {
                    0..=4 => {
                        let len = 1 + rng.below(96);
                        let expected = holes
                            .iter()
                            .filter(|&&(_, l)| l >= len)
                            .min_by_key(|&&(o, l)| (l, o))
                            .map(|&(o, _)| o);
                        let got = a.allocate(len);
                        assert_eq!(got, expected, "seed {seed} step {step} allocate {len}");
                        if let Some(o) = got {
                            bits[o as usize..(o + len) as usize].fill(true);
                            live.push((o, len));
                        }
                    }
                    5..=7 if !live.is_empty() => {
                        let (o, len) = live.swap_remove(rng.below(live.len() as u64) as usize);
                        check_free(&mut a, &mut bits, o, len, seed, step);
                    }
                    8 => {
                        // Arbitrary ranges, sometimes out of bounds or empty.
                        let o = rng.below(CAP as u64 + 16);
                        let len = rng.below(64);
                        check_free(&mut a, &mut bits, o, len, seed, step);
                    }
                    _ => {
                        let o = rng.below(CAP as u64 + 16);
                        let len = rng.below(64);
                        let res = a.reserve(o, len);
                        let expected = expected_result(&bits, o, len, false);
                        assert_eq!(res, expected, "seed {seed} step {step} reserve {o}+{len}");
                        if res.is_ok() {
                            bits[o as usize..(o + len) as usize].fill(true);
                            live.push((o, len));
                        }
                    }
                }
                let model = model_ranges(&bits);
                assert_eq!(ranges(&a), model, "seed {seed} step {step}");
                let used = bits.iter().filter(|&&b| b).count() as u64;
                assert_eq!(a.allocated_bytes(), used);
                assert_eq!(a.free_bytes(), CAP as u64 - used);
                assert_eq!(a.free_range_count(), model.len());
                assert_eq!(
                    a.largest_free(),
                    model.iter().map(|&(_, l)| l).max().unwrap_or(0)
                );
            }
        }
    }

    /// What `free` (want_allocated) or `reserve` (!want_allocated) must
    /// answer for a range, according to the model.
    fn expected_result(
        bits: &[bool],
        o: u64,
        len: u64,
        want_allocated: bool,
    ) -> Result<(), AllocError> {
        if len == 0 {
            return Err(AllocError::ZeroLength);
        }
        if o + len > bits.len() as u64 {
            return Err(AllocError::OutOfRange);
        }
        if bits[o as usize..(o + len) as usize]
            .iter()
            .all(|&b| b == want_allocated)
        {
            Ok(())
        } else {
            Err(AllocError::Overlap)
        }
    }

    fn check_free(
        a: &mut OffsetAllocator,
        bits: &mut [bool],
        o: u64,
        len: u64,
        seed: u64,
        step: usize,
    ) {
        let expected = expected_result(bits, o, len, true);
        assert_eq!(
            a.free(o, len),
            expected,
            "seed {seed} step {step} free {o}+{len}"
        );
        if expected.is_ok() {
            bits[o as usize..(o + len) as usize].fill(false);
        }
    }
}
