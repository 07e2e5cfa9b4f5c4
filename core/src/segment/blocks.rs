//! The allocated blocks of one offset allocator, each with its owner and
//! its two neighbours (`adjacent.rs`): a slab named by [`BlockId`], so a
//! caller that keeps the id frees or re-owns its block in O(1), without any
//! lookup by address, and the free finds the holes it merges with from the
//! block itself.

use super::adjacent::{Adjacent, MAX_INDEX};
use super::chunked::Chunked;
use crate::memory::Region;
use std::sync::Arc;

/// Names an allocated block of one allocator (an index into its slab). It is
/// handed out by `allocate`/`reserve` and given back with the block's offset
/// and length to `free` (or `free_later`, when its free merges), which
/// checks all three: a slot is reused after its block is freed, so a stale
/// id only ever matches a block with exactly the same range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(u32);

impl BlockId {
    /// Never names a block (a replica without a buffer carries it).
    pub const NONE: BlockId = BlockId(u32::MAX);

    /// The slab index, for diagnostics.
    pub fn index(self) -> u32 {
        self.0
    }
}

/// Blocks one allocator holds at once at most (about 2.1 billion): every
/// block's slot index, and every hole's, must be nameable by an
/// [`Adjacent`] (`0..MAX_INDEX`). `B` blocks leave up to `B + 1` holes (one
/// before, between and after them all), so `B + 1 <= MAX_INDEX`.
pub(super) const MAX_BLOCKS: u32 = MAX_INDEX - 1;

/// End of the vacant-slot list.
const NO_SLOT: u32 = u32::MAX;

/// One slab entry. `len == 0` marks a vacant slot (no block is empty), whose
/// `offset` then holds the index of the next vacant slot; `owner` and the
/// sides are left as they were, since `O` has no "nobody" value.
#[derive(Debug, Clone, Copy)]
struct Slot<O> {
    offset: u64,
    len: u64,
    owner: O,
    left: Adjacent,
    right: Adjacent,
}

/// An allocated block as the slab stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<O> {
    pub offset: u64,
    pub len: u64,
    pub owner: O,
}

/// The slab. Vacant slots form a LIFO list threaded through their `offset`,
/// so a freed slot is reused by the next block and the slab only grows to
/// the largest number of blocks the allocator has held at once.
#[derive(Debug, Clone)]
pub(super) struct Blocks<O> {
    slots: Chunked<Slot<O>>,
    /// Head of the vacant-slot list, or `NO_SLOT`.
    vacant: u32,
    /// Occupied slots.
    live: usize,
    /// Slots the slab may hold: ids are `0..limit`, so `BlockId::NONE` is
    /// never one. Lower only in tests, to reach the limit.
    limit: u32,
}

impl<O: Copy> Blocks<O> {
    pub(super) fn new() -> Self {
        Self::with_limit(MAX_BLOCKS)
    }

    /// A slab whose slots are carved from `region` while it has room.
    pub(super) fn in_region(region: Option<Arc<Region>>) -> Self {
        Blocks {
            slots: Chunked::in_region(region),
            ..Self::new()
        }
    }

    /// Bytes a region holds for `n` blocks' slots.
    pub(super) fn reserved_bytes(n: usize) -> usize {
        Chunked::<Slot<O>>::reserved_bytes(n)
    }

    pub(super) fn with_limit(limit: u32) -> Self {
        Blocks {
            slots: Chunked::new(),
            vacant: NO_SLOT,
            live: 0,
            limit: limit.min(MAX_BLOCKS),
        }
    }

    /// Bytes of the slots that lie in a region.
    pub(super) fn region_bytes(&self) -> usize {
        self.slots.region_bytes()
    }

    /// Occupied slots.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// Whether `insert` would succeed.
    pub(super) fn has_room(&self) -> bool {
        self.vacant != NO_SLOT || self.slots.len() < self.limit as usize
    }

    /// Stores a block (`len > 0`) with its sides and returns its id; `None`
    /// when the slab holds `limit` blocks.
    pub(super) fn insert(
        &mut self,
        block: Block<O>,
        left: Adjacent,
        right: Adjacent,
    ) -> Option<BlockId> {
        debug_assert!(block.len > 0, "an empty block would read as a vacant slot");
        let slot = Slot {
            offset: block.offset,
            len: block.len,
            owner: block.owner,
            left,
            right,
        };
        if self.vacant != NO_SLOT {
            let id = self.vacant;
            let s = self.slots.at_mut(id);
            // Vacant slots keep the next vacant index in `offset`; it is
            // always below NO_SLOT, as it was an index.
            let next = s.offset as u32;
            *s = slot;
            self.vacant = next;
            self.live += 1;
            return Some(BlockId(id));
        }
        if self.slots.len() >= self.limit as usize {
            return None;
        }
        let id = self.slots.push(slot);
        self.live += 1;
        Some(BlockId(id))
    }

    /// The block `id` names, if it is occupied.
    pub(super) fn get(&self, id: BlockId) -> Option<Block<O>> {
        let slot = self.occupied(id)?;
        Some(Block {
            offset: slot.offset,
            len: slot.len,
            owner: slot.owner,
        })
    }

    /// Starts loading the slot at `index` (a block's id, or a neighbour a
    /// free re-points).
    pub(super) fn prefetch(&self, index: u32) {
        self.slots.prefetch(index);
    }

    /// The sides `(left, right)` of the occupied block `id` (the
    /// allocator's invariant check and tests).
    #[cfg(test)]
    pub(super) fn sides(&self, id: BlockId) -> Option<(Adjacent, Adjacent)> {
        self.occupied(id).map(|s| (s.left, s.right))
    }

    /// The occupied block `id` with its sides `(left, right)`, in one read
    /// of its slot (what a free needs).
    pub(super) fn with_sides(&self, id: BlockId) -> Option<(Block<O>, Adjacent, Adjacent)> {
        self.occupied(id).map(|s| {
            let block = Block {
                offset: s.offset,
                len: s.len,
                owner: s.owner,
            };
            (block, s.left, s.right)
        })
    }

    /// Re-owns the occupied block `id`; `false` if it is not occupied.
    pub(super) fn set_owner(&mut self, id: BlockId, owner: O) -> bool {
        match self.slots.get_mut(id.0) {
            Some(slot) if slot.len != 0 => {
                slot.owner = owner;
                true
            }
            _ => false,
        }
    }

    /// Sets the left side of the occupied block at slab index `index` (a
    /// side some neighbour of it holds).
    pub(super) fn set_left(&mut self, index: u32, to: Adjacent) {
        let s = self.slots.at_mut(index);
        debug_assert!(s.len != 0, "a side names a vacant block slot");
        s.left = to;
    }

    /// As [`set_left`](Self::set_left), for the right side.
    pub(super) fn set_right(&mut self, index: u32, to: Adjacent) {
        let s = self.slots.at_mut(index);
        debug_assert!(s.len != 0, "a side names a vacant block slot");
        s.right = to;
    }

    /// Sets both sides of the occupied block `id`.
    pub(super) fn set_sides(&mut self, id: BlockId, left: Adjacent, right: Adjacent) {
        let s = self.slots.at_mut(id.0);
        s.left = left;
        s.right = right;
    }

    /// Vacates the occupied block `id` and returns it; `None` (and no
    /// change) if `id` names no occupied slot.
    pub(super) fn remove(&mut self, id: BlockId) -> Option<Block<O>> {
        let block = self.get(id)?;
        let head = self.vacant;
        let slot = self.slots.at_mut(id.0);
        slot.len = 0;
        slot.offset = u64::from(head);
        self.vacant = id.0;
        self.live -= 1;
        Some(block)
    }

    /// Every occupied block with its id, in slot order (not address order).
    /// O(slots): the most blocks held at once, not only the current ones.
    pub(super) fn iter(&self) -> impl Iterator<Item = (BlockId, Block<O>)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.len != 0)
            .map(|(i, s)| {
                (
                    BlockId(i as u32),
                    Block {
                        offset: s.offset,
                        len: s.len,
                        owner: s.owner,
                    },
                )
            })
    }

    fn occupied(&self, id: BlockId) -> Option<&Slot<O>> {
        self.slots.get(id.0).filter(|s| s.len != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::chunked::CHUNK;

    fn blk(offset: u64, len: u64, owner: u64) -> Block<u64> {
        Block { offset, len, owner }
    }

    fn put(b: &mut Blocks<u64>, offset: u64, len: u64, owner: u64) -> Option<BlockId> {
        b.insert(blk(offset, len, owner), Adjacent::EDGE, Adjacent::EDGE)
    }

    /// The per-buffer cost of owner and neighbour tracking: one slot, no
    /// map entry (the two sides are what makes a free O(1)). A segment's
    /// blocks record a one-word owner (`BufferOwner`, the object's key
    /// hash): 32 bytes, two slots to a cache line.
    #[test]
    fn a_slot_with_a_one_word_owner_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Slot<u64>>(), 32);
        assert_eq!(std::mem::size_of::<Slot<crate::segment::BufferOwner>>(), 32);
    }

    #[test]
    fn vacant_slots_are_reused_last_freed_first_across_chunks() {
        let mut b: Blocks<u64> = Blocks::new();
        let ids: Vec<BlockId> = (0..(CHUNK as u64 + 5))
            .map(|i| put(&mut b, i * 10, 10, i).unwrap())
            .collect();
        assert_eq!(ids[CHUNK].index(), CHUNK as u32);
        assert_eq!(b.slots.chunk_count(), 2);
        let far = ids[CHUNK + 2];
        let near = ids[3];
        assert_eq!(b.remove(near).map(|x| x.owner), Some(3));
        assert_eq!(b.remove(far).map(|x| x.owner), Some(CHUNK as u64 + 2));
        assert_eq!(b.remove(far), None);
        assert_eq!(b.get(far), None);
        assert_eq!(b.sides(far), None);
        assert!(!b.set_owner(far, 1));
        assert_eq!(b.len(), CHUNK + 3);
        assert_eq!(put(&mut b, 7, 1, 70), Some(far));
        assert_eq!(put(&mut b, 8, 1, 80), Some(near));
        assert_eq!(put(&mut b, 9, 1, 90), Some(BlockId(CHUNK as u32 + 5)));
        assert_eq!(b.get(near), Some(blk(8, 1, 80)));
        assert_eq!(b.iter().count(), CHUNK + 6);
        assert_eq!(b.get(BlockId::NONE), None);
    }

    #[test]
    fn sides_are_kept_and_changed_per_block() {
        let mut b: Blocks<u64> = Blocks::new();
        let x = b
            .insert(blk(0, 5, 1), Adjacent::EDGE, Adjacent::hole(3))
            .unwrap();
        assert_eq!(b.sides(x), Some((Adjacent::EDGE, Adjacent::hole(3))));
        b.set_left(x.index(), Adjacent::block(9));
        b.set_right(x.index(), Adjacent::EDGE);
        assert_eq!(b.sides(x), Some((Adjacent::block(9), Adjacent::EDGE)));
        b.set_sides(x, Adjacent::hole(1), Adjacent::hole(2));
        assert_eq!(b.sides(x), Some((Adjacent::hole(1), Adjacent::hole(2))));
    }

    #[test]
    fn the_limit_caps_slots_not_blocks_ever_held() {
        let mut b: Blocks<u64> = Blocks::with_limit(2);
        let x = put(&mut b, 0, 1, 0).unwrap();
        put(&mut b, 1, 1, 1).unwrap();
        assert!(!b.has_room());
        assert_eq!(put(&mut b, 2, 1, 2), None);
        b.remove(x).unwrap();
        assert!(b.has_room());
        assert_eq!(put(&mut b, 2, 1, 2), Some(x));
        assert_eq!(Blocks::<u64>::with_limit(u32::MAX).limit, MAX_BLOCKS);
    }
}
