//! Offset allocator for one segment: best-fit placement over `0..capacity`
//! with free-range coalescing, and the owner of every allocated block kept
//! in the block itself. Allocated blocks sit in a slab (`blocks.rs`) named
//! by the [`BlockId`] the caller keeps, free ranges (holes) in another
//! (`holes.rs`), and each block and hole knows its two neighbours
//! (`adjacent.rs`): a free merges with the holes beside it in O(1), with no
//! search by address, and a placement takes the front of the shortest hole
//! that fits, found among the lengths holes have. Only `reserve` finds
//! holes by address, through an index that lives while reserves are made.
//!
//! A free's merge touches lines nothing else has loaded (the block's slot,
//! its neighbours', the lists of the holes it grows), each found through
//! the one before. `free_later` takes a free's bytes off at once and
//! merges it later with up to `DEFERRED` others, those lines loaded for
//! all of them together first; every other call merges what is waiting
//! before it reads or changes anything, so no caller can tell a deferred
//! free from one made at once.

use super::adjacent::{Adjacent, Side};
use super::blocks::Blocks;
pub use super::blocks::{Block, BlockId};
use super::holes::Holes;
use crate::memory::Region;
use smallvec::SmallVec;
use std::sync::Arc;

/// Frees [`free_later`](OffsetAllocator::free_later) accepted and has not
/// merged into the holes yet, at most: they are merged together when the
/// list is full, and before anything reads or changes the blocks or holes.
const DEFERRED: usize = 32;

/// Why a call was refused. A refused call changes nothing. (A deferred
/// free, [`OffsetAllocator::free_later`], is checked in full only when it
/// merges: one a release build accepted and the merge refuses had its
/// bytes off `allocated_bytes` until then.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocError {
    /// The range does not lie inside `0..capacity` (or its end overflows).
    OutOfRange,
    /// `reserve`: the range is not inside a single free range.
    Overlap,
    /// The range is empty.
    ZeroLength,
    /// `free`/`set_owner`/`free_later`: the id names no allocated block with
    /// exactly this offset and length (never handed out, already freed, or
    /// the block at that slot has another range: a wrong length or a stale
    /// id); for `free_later` also a length above the bytes allocated.
    UnknownBlock,
    /// `allocate`/`reserve`: the allocator already holds as many blocks as
    /// it can name (about 2.1 billion; fewer in tests).
    TooManyBlocks,
}

/// Free-space bookkeeping of one segment plus its allocated blocks, each
/// tagged with an owner of the caller's type `O` (see `Segment`). Blocks and
/// holes tile `0..capacity`; two holes are never neighbours.
#[derive(Debug, Clone)]
pub struct OffsetAllocator<O> {
    capacity: u64,
    /// Bytes allocated, the deferred frees' already taken off.
    allocated: u64,
    blocks: Blocks<O>,
    holes: Holes,
    /// Frees accepted by `free_later` and not merged yet: (block, offset,
    /// length). Their blocks are still in `blocks`, their bytes no longer in
    /// `allocated`.
    deferred: SmallVec<[(BlockId, u64, u64); DEFERRED]>,
}

impl<O: Copy> OffsetAllocator<O> {
    /// An allocator with the whole `0..capacity` free.
    pub fn new(capacity: u64) -> Self {
        Self::with_blocks(capacity, Blocks::new())
    }

    /// As [`new`](Self::new), its block slots carved from `region` while it
    /// has room (`commit_presized`).
    pub(crate) fn in_region(capacity: u64, region: Option<Arc<Region>>) -> Self {
        Self::with_blocks(capacity, Blocks::in_region(region))
    }

    /// Bytes a region holds for the slots of `blocks` blocks.
    pub fn reserved_bytes(blocks: usize) -> usize {
        Blocks::<O>::reserved_bytes(blocks)
    }

    /// As [`new`](Self::new), holding at most `limit` blocks at once (tests
    /// reach the limit with it).
    #[cfg(test)]
    pub(crate) fn with_block_limit(capacity: u64, limit: u32) -> Self {
        Self::with_blocks(capacity, Blocks::with_limit(limit))
    }

    fn with_blocks(capacity: u64, blocks: Blocks<O>) -> Self {
        let mut holes = Holes::new();
        if capacity > 0 {
            holes.add(0, capacity, Adjacent::EDGE, Adjacent::EDGE);
        }
        OffsetAllocator {
            capacity,
            allocated: 0,
            blocks,
            holes,
            deferred: SmallVec::new(),
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn allocated_bytes(&self) -> u64 {
        self.allocated
    }

    /// Bytes of the block slots that lie in a region.
    pub fn region_bytes(&self) -> usize {
        self.blocks.region_bytes()
    }

    pub fn free_bytes(&self) -> u64 {
        self.capacity - self.allocated
    }

    /// Length of the largest free range (0 when full): the biggest `allocate`
    /// that can succeed.
    pub fn largest_free(&mut self) -> u64 {
        self.settle();
        self.holes.largest()
    }

    /// Number of free ranges; a fragmentation measure.
    pub fn free_range_count(&mut self) -> usize {
        self.settle();
        self.holes.count()
    }

    /// Number of allocated blocks.
    pub fn block_count(&mut self) -> usize {
        self.settle();
        self.blocks.len()
    }

    /// Allocates `len` bytes for `owner` at the front of a shortest free
    /// range that fits (any of equally short ones) and returns the offset
    /// and the block's id; `None` if
    /// `len` is 0, no free range is large enough or the allocator holds the
    /// most blocks it can name. Best fit keeps large holes intact for large
    /// objects.
    pub fn allocate(&mut self, len: u64, owner: O) -> Option<(u64, BlockId)> {
        self.settle();
        if len == 0 || !self.blocks.has_room() {
            return None;
        }
        let h = self.holes.best_fit(len)?;
        self.holes.forget_addresses();
        let hole = self.holes.get(h);
        let rest = hole.len - len;
        let right = if rest > 0 {
            Adjacent::hole(h)
        } else {
            hole.right
        };
        let block = Block {
            offset: hole.start,
            len,
            owner,
        };
        let id = self.blocks.insert(block, hole.left, right)?;
        let me = Adjacent::block(id.index());
        self.point_right(hole.left, me);
        if rest > 0 {
            self.holes.resize(h, hole.start + len, rest);
            self.holes.set_left(h, me);
        } else {
            self.holes.remove(h);
            self.point_left(hole.right, me);
        }
        self.allocated += len;
        Some((hole.start, id))
    }

    /// Frees the block `id`, which must be allocated at exactly
    /// `offset..offset+len`, merging its range with free neighbours, and
    /// returns its owner. Refused, with nothing changed, if the range is
    /// empty (`ZeroLength`) or not inside the segment (`OutOfRange`), or if
    /// `id` names no block with that range (`UnknownBlock`: a double free,
    /// a wrong length, an offset inside or outside the block).
    pub fn free(&mut self, id: BlockId, offset: u64, len: u64) -> Result<O, AllocError> {
        self.settle();
        self.check_range(offset, len)?;
        let owner = self.merge(id, offset, len)?;
        self.allocated -= len;
        Ok(owner)
    }

    /// Frees the block `id` at `offset..offset+len` as [`free`](Self::free)
    /// does, later: the bytes leave `allocated_bytes` now, and the block
    /// merges into the holes with the other deferred frees when
    /// `DEFERRED` (32) are waiting or before the next call that reads or
    /// changes blocks or holes, the misses of all of them overlapped (their
    /// lines are loaded together first). What every other call
    /// sees is what freeing at once would have left. The range is checked
    /// now (`ZeroLength`, `OutOfRange`, and `UnknownBlock` for more bytes
    /// than are allocated). That the block is there with exactly this
    /// range, and not freed already, is checked now by a debug build (as
    /// `free` does) and by a release build only when it merges, which
    /// would read the line the deferral saves: a free the merge refuses
    /// (a caller's bug) gives its bytes back to `allocated_bytes` and
    /// changes nothing else.
    pub fn free_later(&mut self, id: BlockId, offset: u64, len: u64) -> Result<(), AllocError> {
        self.check_range(offset, len)?;
        #[cfg(debug_assertions)]
        {
            let there = self
                .blocks
                .get(id)
                .is_some_and(|b| b.offset == offset && b.len == len);
            if !there || self.deferred.iter().any(|d| d.0 == id) {
                return Err(AllocError::UnknownBlock);
            }
        }
        self.allocated = self
            .allocated
            .checked_sub(len)
            .ok_or(AllocError::UnknownBlock)?;
        self.deferred.push((id, offset, len));
        if self.deferred.len() == DEFERRED {
            self.settle();
        }
        Ok(())
    }

    /// Merges the deferred frees (see [`free_later`](Self::free_later)),
    /// their blocks' lines loaded together first. Every call that reads or
    /// changes blocks or holes does this first; a caller that reads
    /// `allocated_bytes` after such a call sees any bytes a refused free
    /// gave back.
    pub(crate) fn settle(&mut self) {
        if self.deferred.is_empty() {
            return;
        }
        let frees = std::mem::take(&mut self.deferred);
        self.prefetch_frees(frees.iter().map(|f| f.0));
        let mut refused = 0usize;
        for (id, offset, len) in frees {
            if self.merge(id, offset, len).is_err() {
                self.allocated += len;
                refused += 1;
            }
        }
        // Only a release build gets here with a bad free (a debug build
        // refuses it in `free_later`); all the others merged first.
        debug_assert_eq!(refused, 0, "deferred frees that named no block");
    }

    /// The structural half of a free: the block `id`, which must be at
    /// exactly `offset..offset+len`, leaves the slab and its range merges
    /// with the holes beside it. `allocated` is the caller's.
    fn merge(&mut self, id: BlockId, offset: u64, len: u64) -> Result<O, AllocError> {
        let (block, left, right) = self
            .blocks
            .with_sides(id)
            .filter(|(b, _, _)| b.offset == offset && b.len == len)
            .ok_or(AllocError::UnknownBlock)?;
        match (left.as_hole(), right.as_hole()) {
            (None, None) => {
                let h = self.holes.add(offset, len, left, right);
                self.point_right(left, Adjacent::hole(h));
                self.point_left(right, Adjacent::hole(h));
            }
            (Some(l), None) => {
                let lh = self.holes.get(l);
                self.holes.resize(l, lh.start, lh.len + len);
                self.holes.set_right(l, right);
                self.point_left(right, Adjacent::hole(l));
            }
            (None, Some(r)) => {
                let rh = self.holes.get(r);
                self.holes.resize(r, offset, rh.len + len);
                self.holes.set_left(r, left);
                self.point_right(left, Adjacent::hole(r));
            }
            (Some(l), Some(r)) => {
                // The right hole absorbs the block and the left hole: its
                // end, the address index's key, stays.
                let (lh, rh) = (self.holes.get(l), self.holes.get(r));
                self.holes.remove(l);
                self.holes.resize(r, lh.start, lh.len + len + rh.len);
                self.holes.set_left(r, lh.left);
                self.point_right(lh.left, Adjacent::hole(r));
            }
        }
        self.blocks.remove(id);
        Ok(block.owner)
    }

    /// Marks exactly `offset..offset+len` allocated for `owner` and returns
    /// the block's id (snapshot restore rebuilds allocators from the
    /// surviving buffers; a standby places what its primary placed). The
    /// range must lie inside one free range, else `Overlap`; nothing
    /// changes on error.
    pub fn reserve(&mut self, offset: u64, len: u64, owner: O) -> Result<BlockId, AllocError> {
        self.settle();
        let end = self.check_range(offset, len)?;
        let h = self
            .holes
            .containing(offset, end)
            .ok_or(AllocError::Overlap)?;
        let hole = self.holes.get(h);
        let block = Block { offset, len, owner };
        let id = self
            .blocks
            .insert(block, Adjacent::EDGE, Adjacent::EDGE)
            .ok_or(AllocError::TooManyBlocks)?;
        let me = Adjacent::block(id.index());
        let (front, back) = (offset - hole.start, hole.end() - end);
        // What is left of the hole: the back piece keeps the hole (and its
        // end, the address index's key); a front piece alone keeps it too,
        // and a front piece beside a back piece is a new hole.
        let left = match (front > 0, back > 0) {
            (true, true) => {
                let f = self.holes.add(hole.start, front, hole.left, me);
                self.point_right(hole.left, Adjacent::hole(f));
                Adjacent::hole(f)
            }
            (true, false) => {
                self.holes.resize(h, hole.start, front);
                self.holes.set_right(h, me);
                Adjacent::hole(h)
            }
            (false, _) => {
                self.point_right(hole.left, me);
                hole.left
            }
        };
        let right = if back > 0 {
            self.holes.resize(h, end, back);
            self.holes.set_left(h, me);
            Adjacent::hole(h)
        } else {
            if front == 0 {
                self.holes.remove(h);
            }
            self.point_left(hole.right, me);
            hole.right
        };
        self.blocks.set_sides(id, left, right);
        self.allocated += len;
        Ok(id)
    }

    /// Starts loading what freeing each of `blocks` reads and writes, in
    /// three passes that each wait at most for the loads the one before
    /// started: the blocks' slots; then their neighbours (a block's slot or
    /// a hole's); then the neighbours in their lists of the holes the
    /// frees grow. Frees that follow find those lines in the cache instead
    /// of missing on them one after another. Changes nothing.
    fn prefetch_frees(&self, blocks: impl Iterator<Item = BlockId> + Clone) {
        for b in blocks.clone() {
            self.blocks.prefetch(b.index());
        }
        for b in blocks.clone() {
            let Some((_, left, right)) = self.blocks.with_sides(b) else {
                continue;
            };
            for side in [left, right] {
                match side.side() {
                    Side::Block(n) => self.blocks.prefetch(n),
                    Side::Hole(h) => self.holes.prefetch(h),
                    Side::Edge => {}
                }
            }
        }
        for b in blocks {
            let Some((_, left, right)) = self.blocks.with_sides(b) else {
                continue;
            };
            for h in [left, right].into_iter().filter_map(Adjacent::as_hole) {
                self.holes.prefetch_links(h);
            }
        }
    }

    /// The block `id`, if it is allocated and starts at `offset`.
    pub fn block(&mut self, id: BlockId, offset: u64) -> Result<Block<O>, AllocError> {
        self.settle();
        self.blocks
            .get(id)
            .filter(|b| b.offset == offset)
            .ok_or(AllocError::UnknownBlock)
    }

    /// Re-points the block `id` starting at `offset` to `owner`;
    /// `UnknownBlock` (and no change) if there is no such block.
    pub fn set_owner(&mut self, id: BlockId, offset: u64, owner: O) -> Result<(), AllocError> {
        self.block(id, offset)?;
        self.blocks.set_owner(id, owner);
        Ok(())
    }

    /// Every allocated block with its id, in no particular order. O(the
    /// most blocks held at once).
    pub fn blocks(&mut self) -> impl Iterator<Item = (BlockId, Block<O>)> + '_ {
        self.settle();
        self.blocks.iter()
    }

    /// Free ranges as `(offset, len)`, ascending by offset. O(F log F) for
    /// F free ranges: for snapshots, checks and tests, not a per-key path.
    pub fn free_ranges(&mut self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.settle();
        let mut v: Vec<(u64, u64)> = self.holes.iter().collect();
        v.sort_unstable();
        v.into_iter()
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

    /// Panics unless the blocks and holes tile `0..capacity` in the order
    /// their sides say, no two holes are neighbours, and the holes' own
    /// lists and index agree with them.
    #[cfg(test)]
    pub(crate) fn check(&mut self) {
        self.settle();
        self.holes.check();
        // (offset, len, this range as a side, its left side, its right side)
        let mut ranges: Vec<(u64, u64, Adjacent, Adjacent, Adjacent)> = self
            .blocks
            .iter()
            .map(|(id, b)| {
                let (l, r) = self.blocks.sides(id).expect("listed");
                (b.offset, b.len, Adjacent::block(id.index()), l, r)
            })
            .chain(
                self.holes
                    .each()
                    .map(|(i, h)| (h.start, h.len, Adjacent::hole(i), h.left, h.right)),
            )
            .collect();
        ranges.sort_unstable_by_key(|r| r.0);
        let mut at = 0u64;
        let mut prev = Adjacent::EDGE;
        for (i, &(o, len, me, l, r)) in ranges.iter().enumerate() {
            assert_eq!(o, at, "ranges tile the segment");
            assert_eq!(l, prev, "left side of the range at {o}");
            let next = ranges.get(i + 1).map_or(Adjacent::EDGE, |n| n.2);
            assert_eq!(r, next, "right side of the range at {o}");
            assert!(
                !(me.as_hole().is_some() && next.as_hole().is_some()),
                "two holes side by side at {o}"
            );
            at = o + len;
            prev = me;
        }
        assert_eq!(at, self.capacity, "ranges reach the end");
    }

    /// Makes the range on side `of` (the left neighbour of something) name
    /// `to` as its right neighbour.
    fn point_right(&mut self, of: Adjacent, to: Adjacent) {
        match of.side() {
            Side::Block(b) => self.blocks.set_right(b, to),
            Side::Hole(h) => self.holes.set_right(h, to),
            Side::Edge => {}
        }
    }

    /// As [`point_right`](Self::point_right), for a right neighbour.
    fn point_left(&mut self, of: Adjacent, to: Adjacent) {
        match of.side() {
            Side::Block(b) => self.blocks.set_left(b, to),
            Side::Hole(h) => self.holes.set_left(h, to),
            Side::Edge => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    type Alloc = OffsetAllocator<u64>;

    /// The free ranges, after checking the allocator's structure.
    fn ranges(a: &mut Alloc) -> Vec<(u64, u64)> {
        a.check();
        a.free_ranges().collect()
    }

    /// Allocated blocks as `(offset, len, owner)`, ascending by offset.
    fn blocks(a: &mut Alloc) -> Vec<(u64, u64, u64)> {
        let mut v: Vec<_> = a
            .blocks()
            .map(|(_, b)| (b.offset, b.len, b.owner))
            .collect();
        v.sort_unstable();
        v
    }

    fn alloc(a: &mut Alloc, len: u64, owner: u64) -> (u64, BlockId) {
        a.allocate(len, owner).expect("room")
    }

    /// Project requirement: fragmentation is real (a large allocation fails
    /// while plenty of bytes are free) and freeing everything coalesces back
    /// into one range.
    #[test]
    fn fragmentation_then_full_coalescing() {
        const N: u64 = 1000;
        const BUF: u64 = 4096;
        let mut a = Alloc::new(N * BUF);
        let placed: Vec<(u64, BlockId)> = (0..N).map(|i| alloc(&mut a, BUF, i)).collect();
        assert_eq!(a.allocated_bytes(), N * BUF);
        assert_eq!(a.free_range_count(), 0);
        assert_eq!(a.block_count(), N as usize);
        assert_eq!(a.allocate(1, 0), None);

        for (i, &(o, id)) in placed.iter().enumerate().step_by(2) {
            assert_eq!(a.free(id, o, BUF), Ok(i as u64));
        }
        assert_eq!(a.free_bytes(), N / 2 * BUF);
        assert_eq!(a.free_range_count(), (N / 2) as usize);
        assert_eq!(a.largest_free(), BUF);
        // Half the segment is free, but no single hole holds BUF + 1 bytes.
        assert_eq!(a.allocate(BUF + 1, 0), None);
        assert_eq!(a.allocated_bytes(), N / 2 * BUF);
        assert_eq!(a.block_count(), (N / 2) as usize);

        for &(o, id) in placed.iter().skip(1).step_by(2) {
            a.free(id, o, BUF).unwrap();
        }
        assert_eq!(ranges(&mut a), vec![(0, N * BUF)]);
        assert_eq!(a.allocated_bytes(), 0);
        assert_eq!(a.largest_free(), N * BUF);
        assert_eq!(a.block_count(), 0);
    }

    /// Warming the frees of any blocks (allocated, freed since, never
    /// handed out, beside holes, blocks and the segment's edges) changes
    /// nothing; the frees that follow coalesce as without it.
    #[test]
    fn prefetching_frees_changes_nothing() {
        const BUF: u64 = 64;
        let mut a = Alloc::new(64 * BUF);
        let placed: Vec<(u64, BlockId)> = (0..64).map(|i| alloc(&mut a, BUF, i)).collect();
        for &(o, id) in placed.iter().step_by(3) {
            a.free(id, o, BUF).unwrap();
        }
        let (before, held) = (ranges(&mut a), blocks(&mut a));
        let mut ids: Vec<BlockId> = placed.iter().map(|p| p.1).collect();
        ids.push(BlockId::NONE);
        // An id past every slot this allocator has handed out.
        let mut other = Alloc::new(100 * BUF);
        ids.push(
            (0..100)
                .map(|i| alloc(&mut other, BUF, i).1)
                .last()
                .unwrap(),
        );
        a.prefetch_frees(ids.iter().copied());
        assert_eq!((ranges(&mut a), blocks(&mut a)), (before, held));
        for (i, &(o, id)) in placed.iter().enumerate().filter(|(i, _)| i % 3 != 0) {
            a.prefetch_frees([id].into_iter());
            assert_eq!(a.free(id, o, BUF), Ok(i as u64));
        }
        assert_eq!(ranges(&mut a), vec![(0, 64 * BUF)]);
        assert!(blocks(&mut a).is_empty());
    }

    #[test]
    fn free_merges_with_left_neighbour() {
        let mut a = Alloc::new(300);
        let x = alloc(&mut a, 100, 1);
        let y = alloc(&mut a, 100, 2);
        let _z = alloc(&mut a, 100, 3);
        a.free(x.1, x.0, 100).unwrap();
        a.free(y.1, y.0, 100).unwrap();
        assert_eq!(ranges(&mut a), vec![(0, 200)]);
        assert_eq!(blocks(&mut a), vec![(200, 100, 3)]);
    }

    #[test]
    fn free_merges_with_right_neighbour() {
        let mut a = Alloc::new(300);
        let _x = alloc(&mut a, 100, 1);
        let y = alloc(&mut a, 100, 2);
        let z = alloc(&mut a, 100, 3);
        a.free(z.1, z.0, 100).unwrap();
        a.free(y.1, y.0, 100).unwrap();
        assert_eq!(ranges(&mut a), vec![(100, 200)]);
        assert_eq!(blocks(&mut a), vec![(0, 100, 1)]);
    }

    #[test]
    fn free_merges_with_both_neighbours() {
        let mut a = Alloc::new(300);
        let x = alloc(&mut a, 100, 1);
        let y = alloc(&mut a, 100, 2);
        let z = alloc(&mut a, 100, 3);
        a.free(x.1, x.0, 100).unwrap();
        a.free(z.1, z.0, 100).unwrap();
        assert_eq!(a.free_range_count(), 2);
        assert_eq!(blocks(&mut a), vec![(100, 100, 2)]);
        assert_eq!(a.free(y.1, y.0, 100), Ok(2));
        assert_eq!(ranges(&mut a), vec![(0, 300)]);
        assert_eq!(a.largest_free(), 300);
        assert!(blocks(&mut a).is_empty());
    }

    #[test]
    fn free_without_free_neighbours_adds_a_range() {
        let mut a = Alloc::new(300);
        let _x = alloc(&mut a, 100, 1);
        let y = alloc(&mut a, 100, 2);
        let _z = alloc(&mut a, 100, 3);
        a.free(y.1, y.0, 100).unwrap();
        assert_eq!(ranges(&mut a), vec![(100, 100)]);
        assert_eq!(blocks(&mut a), vec![(0, 100, 1), (200, 100, 3)]);
    }

    /// The owner-in-block rule: a free checks the id, the offset and the
    /// length against the recorded block and refuses anything else.
    #[test]
    fn double_free_wrong_length_and_bad_ranges_are_rejected_without_change() {
        let mut a = Alloc::new(1000);
        let x = alloc(&mut a, 100, 1);
        let y = alloc(&mut a, 100, 2);
        a.free(x.1, x.0, 100).unwrap();
        let before = (ranges(&mut a), a.allocated_bytes(), blocks(&mut a));
        assert_eq!(a.free(x.1, x.0, 100), Err(AllocError::UnknownBlock)); // double free
        assert_eq!(a.free(y.1, y.0, 50), Err(AllocError::UnknownBlock)); // too short
        assert_eq!(a.free(y.1, y.0, 200), Err(AllocError::UnknownBlock)); // too long
        assert_eq!(a.free(y.1, y.0 + 10, 10), Err(AllocError::UnknownBlock)); // inside
        assert_eq!(a.free(x.1, y.0, 100), Err(AllocError::UnknownBlock)); // other id
        assert_eq!(
            a.free(BlockId::NONE, y.0, 100),
            Err(AllocError::UnknownBlock)
        );
        assert_eq!(a.free(y.1, y.0, 0), Err(AllocError::ZeroLength));
        assert_eq!(a.free(y.1, 990, 20), Err(AllocError::OutOfRange));
        assert_eq!(a.free(y.1, u64::MAX, 2), Err(AllocError::OutOfRange));
        assert_eq!(a.set_owner(x.1, x.0, 9), Err(AllocError::UnknownBlock));
        assert_eq!(a.set_owner(y.1, y.0 + 1, 9), Err(AllocError::UnknownBlock));
        assert_eq!(
            (ranges(&mut a), a.allocated_bytes(), blocks(&mut a)),
            before
        );
        assert_eq!(a.free(y.1, y.0, 100), Ok(2));
        assert_eq!(ranges(&mut a), vec![(0, 1000)]);
    }

    /// A freed slot is reused by the next block; the stale id then names
    /// the new block only with the new block's exact range, and owners
    /// follow their blocks through reuse and coalescing.
    #[test]
    fn reused_slots_keep_owners_apart() {
        let mut a = Alloc::new(1000);
        let x = alloc(&mut a, 100, 10);
        let y = alloc(&mut a, 100, 20);
        a.free(x.1, x.0, 100).unwrap();
        let z = alloc(&mut a, 50, 30); // best fit: the 100-byte hole at 0
        assert_eq!(z.1, x.1, "the vacant slot is reused");
        assert_eq!(z.0, 0);
        assert_eq!(a.free(x.1, x.0, 100), Err(AllocError::UnknownBlock));
        assert_eq!(a.block(z.1, 0).unwrap().owner, 30);
        assert_eq!(blocks(&mut a), vec![(0, 50, 30), (100, 100, 20)]);
        a.set_owner(y.1, y.0, 21).unwrap();
        assert_eq!(a.free(y.1, y.0, 100), Ok(21)); // merges with [50,100) and the tail
        assert_eq!(ranges(&mut a), vec![(50, 950)]);
        assert_eq!(a.free(z.1, 0, 50), Ok(30));
        assert_eq!(ranges(&mut a), vec![(0, 1000)]);
        assert_eq!(a.block_count(), 0);
    }

    /// Deferred frees leave every observer seeing what frees made at once
    /// leave: two allocators run the same random allocations, reserves and
    /// frees (one freeing at once, the other mostly with `free_later`, its
    /// merges waiting, and sometimes with `free`), in stretches that mostly
    /// allocate and stretches that mostly free (so the waiting list fills),
    /// and every read made straight after a step — a block (live or just
    /// freed), all blocks, the free ranges, the largest one, the counts —
    /// agrees, as do the placements and the bytes allocated.
    #[test]
    fn deferred_frees_are_seen_as_frees_made_at_once() {
        use crate::test_rng::XorShift;
        const CAP: u64 = 1 << 16;
        let listed = |a: &mut Alloc| {
            let mut v: Vec<_> = a
                .blocks()
                .map(|(id, b)| (b.offset, b.len, b.owner, id))
                .collect();
            v.sort_unstable();
            v
        };
        let mut filled = 0usize;
        for seed in 1..=20u64 {
            let mut rng = XorShift(seed);
            let (mut now, mut later) = (Alloc::new(CAP), Alloc::new(CAP));
            // (offset, length, owner, the two allocators' ids)
            let mut held: Vec<(u64, u64, u64, BlockId, BlockId)> = Vec::new();
            let mut freed: Vec<(u64, u64, u64, BlockId, BlockId)> = Vec::new();
            for step in 0..3_000u64 {
                let ctx = format!("seed {seed} step {step}");
                let freeing = (step / 300) % 2 == 1;
                let roll = rng.below(8);
                if (freeing || roll >= 6) && !held.is_empty() {
                    let i = rng.below(held.len() as u64) as usize;
                    let (o, len, owner, x, y) = held.swap_remove(i);
                    assert_eq!(now.free(x, o, len), Ok(owner), "{ctx}");
                    if rng.below(48) == 0 {
                        assert_eq!(later.free(y, o, len), Ok(owner), "{ctx}");
                    } else {
                        assert_eq!(later.free_later(y, o, len), Ok(()), "{ctx}");
                        filled += usize::from(later.deferred.len() == DEFERRED - 1);
                    }
                    freed.push((o, len, owner, x, y));
                } else if rng.below(5) == 0 {
                    let (o, len) = (16 * rng.below(CAP / 16), 16);
                    let a = now.reserve(o, len, step);
                    let b = later.reserve(o, len, step);
                    assert_eq!(a, b, "{ctx}");
                    if let Ok(x) = a {
                        held.push((o, len, step, x, x));
                    }
                } else {
                    let len = 16 * (1 + rng.below(8));
                    let a = now.allocate(len, step);
                    assert_eq!(a, later.allocate(len, step), "{ctx}");
                    if let Some((o, x)) = a {
                        held.push((o, len, step, x, x));
                    }
                }
                assert_eq!(now.allocated_bytes(), later.allocated_bytes(), "{ctx}");
                match rng.below(if freeing { 96 } else { 12 }) {
                    0 => assert_eq!(listed(&mut now), listed(&mut later), "{ctx}"),
                    1 => assert_eq!(
                        now.free_ranges().collect::<Vec<_>>(),
                        later.free_ranges().collect::<Vec<_>>(),
                        "{ctx}"
                    ),
                    2 => assert_eq!(now.largest_free(), later.largest_free(), "{ctx}"),
                    3 => assert_eq!(now.block_count(), later.block_count(), "{ctx}"),
                    4 => assert_eq!(now.free_range_count(), later.free_range_count(), "{ctx}"),
                    5 if !freed.is_empty() => {
                        // A block freed (maybe still waiting to merge) is
                        // gone for both, unless its slot holds a new block.
                        let &(o, _, _, x, y) = &freed[rng.below(freed.len() as u64) as usize];
                        assert_eq!(now.block(x, o), later.block(y, o), "{ctx}");
                    }
                    6 if !held.is_empty() => {
                        let &(o, _, owner, x, y) = &held[rng.below(held.len() as u64) as usize];
                        assert_eq!(now.block(x, o), later.block(y, o), "{ctx}");
                        assert_eq!(now.set_owner(x, o, owner), Ok(()), "{ctx}");
                        assert_eq!(later.set_owner(y, o, owner), Ok(()), "{ctx}");
                    }
                    _ => {}
                }
            }
            now.check();
            later.check();
            assert_eq!(listed(&mut now), listed(&mut later), "seed {seed}");
        }
        assert!(filled >= 10, "the waiting list filled {filled} times");
    }

    /// A deferred free is refused at once, changing nothing, when its range
    /// is empty or outside the segment or has more bytes than are
    /// allocated; accepted ones count as free at once and merge when
    /// `DEFERRED` are waiting.
    #[test]
    fn deferred_frees_check_their_range_and_merge_in_groups() {
        const BUF: u64 = 64;
        let n = 2 * DEFERRED as u64;
        let mut a = Alloc::new(n * BUF);
        let placed: Vec<(u64, BlockId)> = (0..n).map(|i| alloc(&mut a, BUF, i)).collect();
        let (o, id) = placed[0];
        assert_eq!(a.free_later(id, o, 0), Err(AllocError::ZeroLength));
        assert_eq!(a.free_later(id, n * BUF, BUF), Err(AllocError::OutOfRange));
        assert_eq!(a.free_later(id, u64::MAX, BUF), Err(AllocError::OutOfRange));
        assert_eq!(
            a.free_later(id, 0, n * BUF + 1),
            Err(AllocError::OutOfRange)
        );
        assert_eq!(a.allocated_bytes(), n * BUF);
        assert!(a.deferred.is_empty());
        for (i, &(o, id)) in placed.iter().enumerate().step_by(2) {
            a.free_later(id, o, BUF).unwrap();
            assert_eq!(a.allocated_bytes(), n * BUF - (i as u64 / 2 + 1) * BUF);
        }
        // n / 2 = DEFERRED frees: merged when the list filled.
        assert!(a.deferred.is_empty());
        assert_eq!(a.free_range_count(), DEFERRED);
        a.free_later(placed[1].1, placed[1].0, BUF).unwrap();
        assert_eq!(a.deferred.len(), 1);
        // Any reader merges first.
        assert_eq!(a.free_range_count(), DEFERRED - 1);
        assert!(a.deferred.is_empty());
        assert_eq!(a.block_count(), n as usize / 2 - 1);
        // More bytes than are allocated cannot be a block of this allocator.
        let left = a.allocated_bytes();
        assert_eq!(
            a.free_later(placed[3].1, placed[3].0, left + BUF),
            Err(AllocError::UnknownBlock)
        );
        assert_eq!(a.allocated_bytes(), left);
        ranges(&mut a);
    }

    /// In a release build, a deferred free that names no block (a caller's
    /// bug; debug builds panic) gives its bytes back when it merges and
    /// changes nothing else.
    #[cfg(not(debug_assertions))]
    #[test]
    fn a_deferred_free_of_no_block_changes_nothing_when_it_merges() {
        let mut a = Alloc::new(1000);
        let (o, id) = alloc(&mut a, 100, 1);
        let _ = alloc(&mut a, 100, 2);
        a.free_later(id, o, 100).unwrap();
        a.free_later(id, o, 100).unwrap(); // the same block twice
        assert_eq!(a.allocated_bytes(), 0);
        assert_eq!(ranges(&mut a), vec![(0, 100), (200, 800)]);
        assert_eq!(a.allocated_bytes(), 100);
        assert_eq!(blocks(&mut a), vec![(100, 100, 2)]);
    }

    #[test]
    fn reserve_carves_exact_ranges() {
        let mut a = Alloc::new(1000);
        let r = a.reserve(100, 50, 1).unwrap();
        assert_eq!(ranges(&mut a), vec![(0, 100), (150, 850)]);
        a.reserve(0, 100, 2).unwrap(); // front of a range
        a.reserve(900, 100, 3).unwrap(); // back of a range
        assert_eq!(ranges(&mut a), vec![(150, 750)]);
        assert_eq!(a.allocated_bytes(), 250);
        assert_eq!(
            blocks(&mut a),
            vec![(0, 100, 2), (100, 50, 1), (900, 100, 3)]
        );

        let before = (ranges(&mut a), blocks(&mut a));
        assert_eq!(a.reserve(120, 40, 4), Err(AllocError::Overlap)); // starts inside allocated
        assert_eq!(a.reserve(850, 100, 4), Err(AllocError::Overlap)); // ends inside allocated
        assert_eq!(a.reserve(100, 50, 4), Err(AllocError::Overlap)); // already reserved
        assert_eq!(a.reserve(500, 0, 4), Err(AllocError::ZeroLength));
        assert_eq!(a.reserve(999, 2, 4), Err(AllocError::OutOfRange));
        assert_eq!((ranges(&mut a), blocks(&mut a)), before);
        a.reserve(150, 750, 5).unwrap(); // a whole range
        assert_eq!(a.free_range_count(), 0);
        assert_eq!(a.free_bytes(), 0);
        assert_eq!(a.free(r, 100, 50), Ok(1));
        assert_eq!(ranges(&mut a), vec![(100, 50)]);
    }

    #[test]
    fn sequential_reservations_at_the_front_keep_one_range() {
        // A standby reserving what its primary allocated front to back: the
        // one free range shrinks from the front, in both orders.
        let mut a = Alloc::new(1000);
        for i in 0..10 {
            a.reserve(i * 100, 60, i).unwrap();
            assert_eq!(ranges(&mut a), vec![(i * 100 + 60, 1000 - i * 100 - 60)]);
            assert_eq!(a.largest_free(), 1000 - i * 100 - 60);
            if i < 9 {
                // Then the gap behind it: the front piece of the range.
                a.reserve(i * 100 + 60, 40, 100 + i).unwrap();
                assert_eq!(a.free_range_count(), 1);
            }
        }
        assert_eq!(a.free_bytes(), 40);
        assert_eq!(ranges(&mut a), vec![(960, 40)]);

        // Carving the middle of the last range leaves its front and back.
        a.reserve(970, 10, 7).unwrap();
        assert_eq!(ranges(&mut a), vec![(960, 10), (980, 20)]);
        assert_eq!(a.largest_free(), 20);
        assert_eq!(a.allocate(15, 8).map(|(o, _)| o), Some(980));
    }

    #[test]
    fn the_block_limit_refuses_without_change() {
        let mut a = Alloc::with_block_limit(1000, 2);
        let x = alloc(&mut a, 10, 1);
        a.reserve(500, 10, 2).unwrap();
        let before = (ranges(&mut a), blocks(&mut a), a.allocated_bytes());
        assert_eq!(a.allocate(10, 3), None);
        assert_eq!(a.reserve(600, 10, 3), Err(AllocError::TooManyBlocks));
        assert_eq!(
            (ranges(&mut a), blocks(&mut a), a.allocated_bytes()),
            before
        );
        a.free(x.1, x.0, 10).unwrap();
        // Room again, in x's slot; best fit picks the 490-byte hole at 510.
        assert_eq!(a.allocate(10, 3), Some((510, x.1)));
    }

    #[test]
    fn allocate_picks_a_smallest_fitting_hole() {
        let mut a = Alloc::new(1000);
        // Holes: [0,300) len 300, [400,450) len 50, [500,560) len 60,
        // [600,660) len 60, [700,1000) len 300.
        a.reserve(300, 100, 0).unwrap();
        a.reserve(450, 50, 0).unwrap();
        a.reserve(560, 40, 0).unwrap();
        a.reserve(660, 40, 0).unwrap();
        let at = |a: &mut Alloc, len| a.allocate(len, 0).map(|(o, _)| o);
        // The 60-holes tie: one, then the other.
        let first = at(&mut a, 55).unwrap();
        assert!([500, 600].contains(&first), "{first}");
        assert_eq!(at(&mut a, 55), Some(1100 - first));
        assert_eq!(at(&mut a, 50), Some(400)); // exact fit
                                               // The 300-holes tie; the 250 then goes to the other one.
        let big = at(&mut a, 100).unwrap();
        assert!([0, 700].contains(&big), "{big}");
        assert_eq!(at(&mut a, 250), Some(700 - big));
        assert_eq!(at(&mut a, 201), None);
        assert_eq!(at(&mut a, 0), None);
        assert_eq!(a.largest_free(), 200);
        assert_eq!(a.free_range_count(), 4);
    }

    /// Equally long holes are reused, and a free merges with its neighbours
    /// whatever the order of frees.
    #[test]
    fn equal_holes_are_reused_and_merge_in_any_order() {
        let mut a = Alloc::new(10 * 100);
        let placed: Vec<(u64, BlockId)> = (0..10).map(|i| alloc(&mut a, 100, i)).collect();
        for &i in &[2usize, 6, 4] {
            a.free(placed[i].1, placed[i].0, 100).unwrap();
        }
        assert_eq!(ranges(&mut a), vec![(200, 100), (400, 100), (600, 100)]);
        let (o, id) = a.allocate(100, 20).unwrap();
        assert!([200, 400, 600].contains(&o), "{o}");
        a.free(id, o, 100).unwrap();
        // Take [400, 500) for the rest of the test.
        assert_eq!(a.reserve(400, 100, 20).map(|_| ()), Ok(()));
        a.free(placed[3].1, 300, 100).unwrap(); // merges left only
        assert_eq!(ranges(&mut a), vec![(200, 200), (600, 100)]);
        a.free(placed[5].1, 500, 100).unwrap(); // merges right only
        assert_eq!(ranges(&mut a), vec![(200, 200), (500, 200)]);
        for &i in &[0usize, 1, 7, 8, 9] {
            a.free(placed[i].1, placed[i].0, 100).unwrap();
        }
        assert_eq!(ranges(&mut a), vec![(0, 400), (500, 500)]);
        assert_eq!(a.free_range_count(), 2);
        assert_eq!(a.largest_free(), 500);
    }

    /// A standby reserves what its primary placed, in commit order, which
    /// need not be placement order; the allocator then frees by id and
    /// places by best fit again (a promote), dropping the address index.
    #[test]
    fn reserves_out_of_order_then_best_fit_again() {
        let mut a = Alloc::new(1000);
        let ids: Vec<BlockId> = [3u64, 1, 0, 2, 5, 4]
            .iter()
            .map(|&i| a.reserve(i * 100, 100, i).unwrap())
            .collect();
        assert_eq!(ranges(&mut a), vec![(600, 400)]);
        assert!(a.holes.has_address_index(), "out-of-order reserves use it");
        a.free(ids[1], 100, 100).unwrap();
        a.free(ids[3], 200, 100).unwrap();
        assert_eq!(ranges(&mut a), vec![(100, 200), (600, 400)]);
        assert_eq!(a.reserve(150, 100, 9).map(|_| ()), Ok(()));
        assert_eq!(ranges(&mut a), vec![(100, 50), (250, 50), (600, 400)]);
        assert_eq!(a.allocate(50, 10).map(|p| p.0), Some(250));
        assert!(
            !a.holes.has_address_index(),
            "a best-fit placement drops it"
        );
        assert_eq!(a.allocate(50, 11).map(|p| p.0), Some(100));
        // The index is rebuilt for the next reserve.
        assert_eq!(a.reserve(950, 50, 12).map(|_| ()), Ok(()));
        assert_eq!(a.reserve(940, 20, 13), Err(AllocError::Overlap));
        assert_eq!(ranges(&mut a), vec![(600, 350)]);
    }

    #[test]
    fn allocate_edge_cases() {
        let mut empty = Alloc::new(0);
        assert_eq!(empty.allocate(1, 0), None);
        assert_eq!(empty.largest_free(), 0);
        assert_eq!(empty.free(BlockId::NONE, 0, 1), Err(AllocError::OutOfRange));

        let mut a = Alloc::new(u64::MAX);
        let (o, id) = alloc(&mut a, u64::MAX, 7);
        assert_eq!(o, 0);
        assert_eq!(a.free_bytes(), 0);
        assert_eq!(a.free(id, 0, u64::MAX), Ok(7));
        assert_eq!(a.largest_free(), u64::MAX);
        assert_eq!(alloc(&mut a, u64::MAX - 1, 8).0, 0);
        assert_eq!(ranges(&mut a), vec![(u64::MAX - 1, 1)]);
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

    /// The reference model: the owner of every byte (None = free).
    fn model_ranges(bytes: &[Option<u64>]) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_some() {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_none() {
                i += 1;
            }
            out.push((start as u64, (i - start) as u64));
        }
        out
    }

    /// Random allocate / free / reserve / set_owner sequences against a
    /// byte-map model plus the model's own list of blocks. The model decides
    /// every expected outcome (best fit: a shortest hole that fits; refusals, the owner a free
    /// returns), and after each step the free ranges must match the byte
    /// map (so they never overlap and are never adjacent), the allocator's
    /// blocks must be exactly the model's (offset, length, owner), and every
    /// block's bytes must carry its owner in the byte map.
    #[test]
    fn randomized_against_byte_map_model() {
        const CAP: usize = 1024;
        for seed in 1..=24u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut a = Alloc::new(CAP as u64);
            let mut bytes: Vec<Option<u64>> = vec![None; CAP];
            // id -> (offset, len, owner) of every live block.
            let mut live: BTreeMap<BlockId, (u64, u64, u64)> = BTreeMap::new();
            // Ids seen at some point, live or not: stale ids get reused.
            let mut seen: Vec<BlockId> = Vec::new();
            let mut next_owner = 1u64;
            for step in 0..1500 {
                let holes = model_ranges(&bytes);
                let ctx = format!("seed {seed} step {step}");
                match rng.below(12) {
                    0..=4 => {
                        let len = 1 + rng.below(96);
                        // Best fit: the start of one of the shortest holes
                        // that fit (ties are the allocator's to break).
                        let shortest = holes.iter().map(|&(_, l)| l).filter(|&l| l >= len).min();
                        let owner = next_owner;
                        next_owner += 1;
                        let got = a.allocate(len, owner);
                        match (got, shortest) {
                            (None, None) => {}
                            (Some((o, _)), Some(s)) => assert!(
                                holes.contains(&(o, s)),
                                "{ctx} allocate {len}: {o} is not the start of a hole of {s}"
                            ),
                            other => panic!("{ctx} allocate {len}: {other:?}"),
                        }
                        if let Some((o, id)) = got {
                            assert!(!live.contains_key(&id), "{ctx}: id {id:?} handed out twice");
                            bytes[o as usize..(o + len) as usize].fill(Some(owner));
                            live.insert(id, (o, len, owner));
                            seen.push(id);
                        }
                    }
                    5..=7 if !live.is_empty() => {
                        let k = rng.below(live.len() as u64) as usize;
                        let (&id, &(o, len, owner)) = live.iter().nth(k).unwrap();
                        assert_eq!(a.free(id, o, len), Ok(owner), "{ctx} free {id:?}");
                        bytes[o as usize..(o + len) as usize].fill(None);
                        live.remove(&id);
                    }
                    8 => {
                        // A seen (maybe stale) or made-up id with an
                        // arbitrary range, sometimes out of bounds or empty,
                        // sometimes the id's own range or a near miss.
                        let id = if seen.is_empty() || rng.below(4) == 0 {
                            BlockId::NONE
                        } else {
                            seen[rng.below(seen.len() as u64) as usize]
                        };
                        let (o, len) = match (live.get(&id), rng.below(3)) {
                            (Some(&(o, l, _)), 0) => (o, l),
                            (Some(&(o, l, _)), 1) => (o, l + rng.below(3) - 1),
                            _ => (rng.below(CAP as u64 + 16), rng.below(64)),
                        };
                        let expected = if len == 0 {
                            Err(AllocError::ZeroLength)
                        } else if o + len > CAP as u64 {
                            Err(AllocError::OutOfRange)
                        } else {
                            match live.get(&id) {
                                Some(&(lo, ll, owner)) if (lo, ll) == (o, len) => Ok(owner),
                                _ => Err(AllocError::UnknownBlock),
                            }
                        };
                        assert_eq!(a.free(id, o, len), expected, "{ctx} free {id:?} {o}+{len}");
                        if expected.is_ok() {
                            bytes[o as usize..(o + len) as usize].fill(None);
                            live.remove(&id);
                        }
                    }
                    9 if !live.is_empty() => {
                        let k = rng.below(live.len() as u64) as usize;
                        let (&id, &(o, len, _)) = live.iter().nth(k).unwrap();
                        let owner = next_owner;
                        next_owner += 1;
                        a.set_owner(id, o, owner).unwrap();
                        bytes[o as usize..(o + len) as usize].fill(Some(owner));
                        live.insert(id, (o, len, owner));
                    }
                    _ => {
                        let o = rng.below(CAP as u64 + 16);
                        let len = rng.below(64);
                        let expected = if len == 0 {
                            Err(AllocError::ZeroLength)
                        } else if o + len > CAP as u64 {
                            Err(AllocError::OutOfRange)
                        } else if bytes[o as usize..(o + len) as usize]
                            .iter()
                            .all(Option::is_none)
                        {
                            Ok(())
                        } else {
                            Err(AllocError::Overlap)
                        };
                        let owner = next_owner;
                        next_owner += 1;
                        let res = a.reserve(o, len, owner);
                        assert_eq!(res.map(|_| ()), expected, "{ctx} reserve {o}+{len}");
                        if let Ok(id) = res {
                            assert!(!live.contains_key(&id), "{ctx}: id {id:?} handed out twice");
                            bytes[o as usize..(o + len) as usize].fill(Some(owner));
                            live.insert(id, (o, len, owner));
                            seen.push(id);
                        }
                    }
                }
                let model = model_ranges(&bytes);
                assert_eq!(ranges(&mut a), model, "{ctx}");
                a.check();
                let used = bytes.iter().filter(|b| b.is_some()).count() as u64;
                assert_eq!(a.allocated_bytes(), used, "{ctx}");
                assert_eq!(a.free_bytes(), CAP as u64 - used, "{ctx}");
                assert_eq!(a.free_range_count(), model.len(), "{ctx}");
                assert_eq!(
                    a.largest_free(),
                    model.iter().map(|&(_, l)| l).max().unwrap_or(0),
                    "{ctx}"
                );
                let got: BTreeMap<BlockId, (u64, u64, u64)> = a
                    .blocks()
                    .map(|(id, b)| (id, (b.offset, b.len, b.owner)))
                    .collect();
                assert_eq!(got, live, "{ctx}");
                assert_eq!(a.block_count(), live.len(), "{ctx}");
                for &(o, len, owner) in live.values() {
                    assert!(
                        bytes[o as usize..(o + len) as usize]
                            .iter()
                            .all(|&b| b == Some(owner)),
                        "{ctx}: block {o}+{len} is not all owner {owner}"
                    );
                }
            }
        }
    }

    // An exact model of the documented placement rule,
    // capacities up to u64::MAX, and reserve/allocate interleavings that
    // build and drop the address index.

    /// Free ranges `start -> (len, stamp)`, where the stamp orders the
    /// moments holes got their current length (kept for the diagnostics of
    /// a failure; best fit may take any of the shortest holes).
    #[derive(Clone, Debug, PartialEq)]
    struct Model {
        cap: u64,
        holes: BTreeMap<u64, (u64, u64)>,
        /// offset -> (len, owner, id)
        blocks: BTreeMap<u64, (u64, u64, BlockId)>,
        stamp: u64,
    }

    impl Model {
        fn new(cap: u64) -> Self {
            let mut m = Model {
                cap,
                holes: BTreeMap::new(),
                blocks: BTreeMap::new(),
                stamp: 0,
            };
            if cap > 0 {
                m.put_hole(0, cap);
            }
            m
        }
        fn put_hole(&mut self, start: u64, len: u64) {
            self.stamp += 1;
            self.holes.insert(start, (len, self.stamp));
        }
        /// The length of the holes best fit may choose: the shortest that
        /// fit.
        fn best_fit(&self, len: u64) -> Option<u64> {
            self.holes
                .values()
                .map(|&(l, _)| l)
                .filter(|&l| l >= len)
                .min()
        }
        /// Places `len` bytes at `o`, the start of a hole.
        fn allocate(&mut self, o: u64, len: u64, owner: u64, id: BlockId) -> u64 {
            let (hl, _) = self.holes.remove(&o).unwrap();
            if hl > len {
                self.put_hole(o + len, hl - len);
            }
            self.blocks.insert(o, (len, owner, id));
            o
        }
        /// The hole containing `o..o+len`, if any.
        fn containing(&self, o: u64, len: u64) -> Option<(u64, u64)> {
            let (&s, &(l, _)) = self.holes.range(..=o).next_back()?;
            // s <= o; contained iff o + len <= s + l (no overflow: both <= cap)
            (o + len <= s + l).then_some((s, l))
        }
        fn reserve(&mut self, o: u64, len: u64, owner: u64, id: BlockId) {
            let (s, l) = self.containing(o, len).unwrap();
            self.holes.remove(&s);
            if o > s {
                self.put_hole(s, o - s);
            }
            if o + len < s + l {
                self.put_hole(o + len, s + l - (o + len));
            }
            self.blocks.insert(o, (len, owner, id));
        }
        fn free(&mut self, o: u64) -> u64 {
            let (len, owner, _) = self.blocks.remove(&o).unwrap();
            let mut start = o;
            let mut end = o + len;
            if let Some((&ls, &(ll, _))) = self.holes.range(..o).next_back() {
                if ls + ll == o {
                    self.holes.remove(&ls);
                    start = ls;
                }
            }
            if let Some(&(rl, _)) = self.holes.get(&end) {
                self.holes.remove(&end);
                end += rl;
            }
            self.put_hole(start, end - start);
            owner
        }
        fn allocated(&self) -> u64 {
            self.blocks.values().map(|b| b.0).sum()
        }
    }

    /// Everything observable, checked after every step.
    fn agree(a: &mut Alloc, m: &Model, ctx: &str) {
        a.check();
        let want: Vec<(u64, u64)> = m.holes.iter().map(|(&o, &(l, _))| (o, l)).collect();
        let got: Vec<(u64, u64)> = a.free_ranges().collect();
        assert_eq!(got, want, "{ctx}: free ranges");
        let mut got_blocks: Vec<(u64, u64, u64, BlockId)> = a
            .blocks()
            .map(|(id, b)| (b.offset, b.len, b.owner, id))
            .collect();
        got_blocks.sort_unstable();
        let want_blocks: Vec<(u64, u64, u64, BlockId)> = m
            .blocks
            .iter()
            .map(|(&o, &(l, w, id))| (o, l, w, id))
            .collect();
        assert_eq!(got_blocks, want_blocks, "{ctx}: blocks");
        assert_eq!(a.allocated_bytes(), m.allocated(), "{ctx}");
        assert_eq!(a.free_bytes(), m.cap - m.allocated(), "{ctx}");
        assert_eq!(a.free_range_count(), m.holes.len(), "{ctx}");
        assert_eq!(a.block_count(), m.blocks.len(), "{ctx}");
        assert_eq!(
            a.largest_free(),
            m.holes.values().map(|h| h.0).max().unwrap_or(0),
            "{ctx}"
        );
    }

    /// A length for a probe: small, a random share of some hole, a hole's
    /// exact length, one more than it, or something enormous.
    fn probe_len(rng: &mut Rng, m: &Model) -> u64 {
        let hole = if m.holes.is_empty() {
            None
        } else {
            let k = rng.below(m.holes.len() as u64) as usize;
            m.holes.values().nth(k).map(|h| h.0)
        };
        match (rng.below(8), hole) {
            (0, _) | (_, None) => 1 + rng.below(16),
            (1 | 2, Some(l)) => 1 + rng.below(l),
            (3 | 4, Some(l)) => l,
            (5, Some(l)) => l.saturating_add(1),
            (6, Some(l)) => 1 + rng.below(l.min(64)),
            _ => u64::MAX - rng.below(4),
        }
    }

    /// A range for `reserve`: inside some hole (its front, its back, its
    /// middle, all of it), across a hole's edge, inside a block, or out of
    /// the segment / overflowing.
    fn probe_range(rng: &mut Rng, m: &Model) -> (u64, u64) {
        let pick = |rng: &mut Rng, map_len: usize| rng.below(map_len.max(1) as u64) as usize;
        match rng.below(10) {
            0..=5 if !m.holes.is_empty() => {
                let k = pick(rng, m.holes.len());
                let (&s, &(l, _)) = m.holes.iter().nth(k).unwrap();
                let len = match rng.below(4) {
                    0 => l,
                    1 => 1,
                    _ => 1 + rng.below(l),
                };
                let o = match rng.below(3) {
                    0 => s,
                    1 => s + (l - len),
                    _ => s + rng.below(l - len + 1),
                };
                (o, len)
            }
            6 if !m.holes.is_empty() => {
                // Straddles the end of a hole (or runs past capacity).
                let k = pick(rng, m.holes.len());
                let (&s, &(l, _)) = m.holes.iter().nth(k).unwrap();
                (s + l - 1, 2)
            }
            7 if !m.blocks.is_empty() => {
                let k = pick(rng, m.blocks.len());
                let (&o, &(l, _, _)) = m.blocks.iter().nth(k).unwrap();
                (o + rng.below(l), 1)
            }
            8 => (m.cap.wrapping_sub(rng.below(3)), 1 + rng.below(3)),
            _ => (u64::MAX - rng.below(3), rng.below(4)),
        }
    }

    fn expected_reserve(m: &Model, o: u64, len: u64) -> Result<(), AllocError> {
        if len == 0 {
            return Err(AllocError::ZeroLength);
        }
        match o.checked_add(len) {
            Some(end) if end <= m.cap => {}
            _ => return Err(AllocError::OutOfRange),
        }
        m.containing(o, len).map(|_| ()).ok_or(AllocError::Overlap)
    }

    fn exact_model_run(cap: u64, limit: u32, seeds: std::ops::RangeInclusive<u64>, steps: usize) {
        for seed in seeds {
            let mut rng = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
            let mut a = Alloc::with_block_limit(cap, limit);
            let mut m = Model::new(cap);
            // Phases: mostly-reserve (a standby) and mostly-allocate (a
            // primary), so the address index is built, kept and dropped.
            let mut reserve_weight = 6u64;
            for step in 0..steps {
                if step % 97 == 0 {
                    reserve_weight = rng.below(10);
                }
                let ctx = format!("cap {cap} limit {limit} seed {seed} step {step}");
                // Each step's owner is its own.
                let owner = step as u64 + 1;
                let r = rng.below(20);
                if r < reserve_weight {
                    let (o, len) = probe_range(&mut rng, &m);
                    let mut want = expected_reserve(&m, o, len);
                    if want.is_ok() && m.blocks.len() >= limit as usize {
                        want = Err(AllocError::TooManyBlocks);
                    }
                    let got = a.reserve(o, len, owner);
                    assert_eq!(got.map(|_| ()), want, "{ctx}: reserve {o}+{len}");
                    if let Ok(id) = got {
                        m.reserve(o, len, owner, id);
                    }
                } else if r < 12 {
                    let len = probe_len(&mut rng, &m);
                    let fits = m.best_fit(len);
                    let room = m.blocks.len() < limit as usize;
                    let got = a.allocate(len, owner);
                    match (got, fits) {
                        (Some((o, id)), Some(want)) if room => {
                            assert_eq!(
                                m.holes.get(&o).map(|h| h.0),
                                Some(want),
                                "{ctx}: allocate {len} at {o}: not a shortest fitting hole"
                            );
                            assert_eq!(m.allocate(o, len, owner, id), o);
                        }
                        (None, None) => {}
                        (None, Some(_)) if !room => {}
                        other => panic!("{ctx}: allocate {len}: {other:?} (room {room})"),
                    }
                } else if r < 18 && !m.blocks.is_empty() {
                    let k = rng.below(m.blocks.len() as u64) as usize;
                    let (&o, &(len, w, id)) = m.blocks.iter().nth(k).unwrap();
                    // A near miss first: refused, nothing changes.
                    let before = m.clone();
                    let bad = match rng.below(3) {
                        0 => a.free(id, o, len.wrapping_add(1)),
                        1 => a.free(id, o.wrapping_add(1), len),
                        _ => a.free(id, o, len - 1),
                    };
                    assert!(bad.is_err(), "{ctx}: near-miss free {bad:?}");
                    assert_eq!(m, before);
                    agree(&mut a, &m, &ctx);
                    assert_eq!(a.free(id, o, len), Ok(w), "{ctx}: free {o}+{len}");
                    assert_eq!(m.free(o), w);
                } else if !m.blocks.is_empty() {
                    let k = rng.below(m.blocks.len() as u64) as usize;
                    let (&o, &(len, _, id)) = m.blocks.iter().nth(k).unwrap();
                    a.set_owner(id, o, owner).unwrap();
                    m.blocks.insert(o, (len, owner, id));
                }
                agree(&mut a, &m, &ctx);
            }
            // Free everything, in a random order: one hole again.
            while !m.blocks.is_empty() {
                let k = rng.below(m.blocks.len() as u64) as usize;
                let (&o, &(len, w, id)) = m.blocks.iter().nth(k).unwrap();
                assert_eq!(a.free(id, o, len), Ok(w));
                m.free(o);
                agree(&mut a, &m, &format!("cap {cap} seed {seed} drain"));
            }
            let whole: Vec<(u64, u64)> = if cap > 0 { vec![(0, cap)] } else { vec![] };
            assert_eq!(a.free_ranges().collect::<Vec<_>>(), whole);
        }
    }

    /// Exact placement (the contract's tie rule included), every refusal,
    /// and the structure, at capacities up to u64::MAX.
    #[test]
    fn exact_model_small_capacity() {
        exact_model_run(4096, u32::MAX, 1..=6, 1500);
    }

    #[test]
    fn exact_model_huge_capacities() {
        for cap in [u64::MAX, u64::MAX - 1, 1 << 63, (1 << 40) + 7] {
            exact_model_run(cap, u32::MAX, 1..=3, 1200);
        }
    }

    #[test]
    fn exact_model_at_the_block_limit() {
        // Few blocks: reserve and allocate keep hitting TooManyBlocks with
        // and without the address index.
        for limit in [1u32, 2, 5] {
            exact_model_run(1 << 20, limit, 1..=4, 800);
            exact_model_run(u64::MAX, limit, 5..=6, 800);
        }
    }

    /// `reserve` refused for the block limit after its lookup built the
    /// address index: the blocks and holes are as before, and the index
    /// it left behind is exact (later reserves use it).
    #[test]
    fn too_many_blocks_after_the_index_was_built() {
        let mut a = Alloc::with_block_limit(1000, 2);
        let x = a.allocate(100, 1).unwrap();
        let y = a.allocate(100, 2).unwrap();
        a.free(x.1, x.0, 100).unwrap();
        assert!(!a.holes.has_address_index());
        a.reserve(500, 10, 3).unwrap(); // builds the index (not the hint)
        assert!(a.holes.has_address_index());
        let before = (ranges(&mut a), blocks(&mut a), a.allocated_bytes());
        assert_eq!(a.reserve(0, 10, 4), Err(AllocError::TooManyBlocks));
        assert_eq!(a.reserve(700, 10, 4), Err(AllocError::TooManyBlocks));
        assert_eq!(
            (ranges(&mut a), blocks(&mut a), a.allocated_bytes()),
            before
        );
        a.free(y.1, y.0, 100).unwrap(); // merges [0,100) + [100,200) + [200,500)
        a.check();
        assert_eq!(ranges(&mut a), vec![(0, 500), (510, 490)]);
        assert_eq!(a.reserve(450, 50, 5).map(|_| ()), Ok(()));
        assert_eq!(ranges(&mut a), vec![(0, 450), (510, 490)]);
    }

    /// The `last` hint names a slot whose hole was merged away and whose
    /// slot now holds another hole: a reserve in the old range is refused,
    /// one in the new hole is placed, and neither trusts a stale hint.
    #[test]
    fn reserve_hint_survives_slot_reuse() {
        let mut a = Alloc::new(1000);
        let b1 = a.reserve(100, 100, 1).unwrap(); // hint: hole [200,1000)
        let b2 = a.reserve(0, 50, 2).unwrap(); // via index: hole [50,100); hint = it
        assert_eq!(ranges(&mut a), vec![(50, 50), (200, 800)]);
        // The hinted hole [50,100) merges into [50,1000) (kept in the
        // right hole's slot); its own slot becomes vacant.
        a.free(b1, 100, 100).unwrap();
        assert_eq!(ranges(&mut a), vec![(50, 950)]);
        // A best fit drops the index; the vacant slot is reused by the
        // next new hole.
        let (o, c) = a.allocate(950, 3).unwrap();
        assert_eq!(o, 50);
        a.free(b2, 0, 50).unwrap(); // a new hole [0,50) in the vacated slot
        assert_eq!(ranges(&mut a), vec![(0, 50)]);
        a.check();
        assert_eq!(a.reserve(60, 10, 4), Err(AllocError::Overlap));
        assert_eq!(a.reserve(10, 10, 5).map(|_| ()), Ok(()));
        a.free(c, 50, 950).unwrap();
        assert_eq!(ranges(&mut a), vec![(0, 10), (20, 980)]);
        a.check();
    }

    /// The whole of `0..u64::MAX`, carved at both ends and in the middle
    /// by reserve, then by allocate, then freed back in every order.
    #[test]
    fn u64_max_capacity_edges() {
        let mut a = Alloc::new(u64::MAX);
        let top = a.reserve(u64::MAX - 1, 1, 1).unwrap(); // last byte
        let low = a.reserve(0, 1, 2).unwrap();
        assert_eq!(ranges(&mut a), vec![(1, u64::MAX - 2)]);
        assert_eq!(a.reserve(u64::MAX - 1, 1, 3), Err(AllocError::Overlap));
        assert_eq!(a.reserve(u64::MAX - 2, 2, 3), Err(AllocError::Overlap));
        assert_eq!(a.reserve(u64::MAX, 1, 3), Err(AllocError::OutOfRange));
        let mid = a.reserve(1 << 63, 1 << 62, 3).unwrap();
        let (o, big) = a.allocate((1 << 63) - 1, 4).unwrap();
        assert_eq!(o, 1);
        assert_eq!(
            ranges(&mut a),
            vec![(
                (1 << 63) + (1 << 62),
                u64::MAX - 1 - ((1 << 63) + (1 << 62))
            )]
        );
        let rest = u64::MAX - 1 - ((1 << 63) + (1 << 62));
        let (o2, tail) = a.allocate(rest, 5).unwrap();
        assert_eq!(o2, (1 << 63) + (1 << 62));
        assert_eq!(a.free_bytes(), 0);
        assert_eq!(a.allocate(1, 6), None);
        a.check();
        a.free(mid, 1 << 63, 1 << 62).unwrap();
        a.free(top, u64::MAX - 1, 1).unwrap();
        a.free(low, 0, 1).unwrap();
        a.free(tail, o2, rest).unwrap();
        assert_eq!(
            ranges(&mut a),
            vec![(0, 1), ((1 << 63) - 1 + 1, u64::MAX - (1 << 63))]
        );
        a.reserve(u64::MAX - 5, 5, 7).unwrap(); // through the index
        a.free(big, 1, (1 << 63) - 1).unwrap();
        assert_eq!(ranges(&mut a), vec![(0, u64::MAX - 5)]);
        a.check();
    }

    /// Every hole index and every block index must be nameable by an
    /// `Adjacent`, whose hole tags cover `0..MAX_INDEX` only: with
    /// MAX_BLOCKS blocks a segment can hold MAX_BLOCKS + 1 holes (one
    /// before, between and after every block), whose last index would be
    /// MAX_INDEX, which `Adjacent::hole` maps onto `Adjacent::EDGE`.
    #[test]
    fn hole_indexes_fit_an_adjacent() {
        use super::super::adjacent::MAX_INDEX;
        use super::super::blocks::MAX_BLOCKS;
        let most_holes = u64::from(MAX_BLOCKS) + 1;
        let last_hole_index = most_holes - 1;
        assert!(
            last_hole_index < u64::from(MAX_INDEX),
            "hole index {last_hole_index} is not below MAX_INDEX {MAX_INDEX}"
        );
    }
}
