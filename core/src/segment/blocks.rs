//! The allocated blocks of one offset allocator, each with its owner: a slab
//! of fixed-size chunks named by [`BlockId`], so a caller that keeps the id
//! frees or re-owns its block in O(1) without any lookup by address.

/// Names an allocated block of one allocator (an index into its slab). It is
/// handed out by `allocate`/`reserve` and given back with the block's offset
/// and length to `free`, which checks all three: a slot is reused after its
/// block is freed, so a stale id only ever matches a block with exactly the
/// same range.
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

/// Slots per chunk. Chunks are allocated at their full capacity and never
/// moved, so the slab grows without ever copying the blocks it has (a
/// doubling `Vec` would copy megabytes under the segment lock) and wastes at
/// most one partly used chunk. 1024 slots of 32 bytes: 32 KiB.
const CHUNK: usize = 1024;

/// End of the vacant-slot list.
const NO_SLOT: u32 = u32::MAX;

/// One slab entry. `len == 0` marks a vacant slot (no block is empty), whose
/// `offset` then holds the index of the next vacant slot; `owner` is left
/// as it was, since `O` has no "nobody" value.
#[derive(Debug, Clone, Copy)]
struct Slot<O> {
    offset: u64,
    len: u64,
    owner: O,
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
    chunks: Vec<Vec<Slot<O>>>,
    /// Head of the vacant-slot list, or `NO_SLOT`.
    vacant: u32,
    /// Occupied slots.
    live: usize,
    /// Slots pushed so far (occupied or vacant).
    slots: usize,
    /// Slots the slab may hold: ids are `0..limit`, so `BlockId::NONE` is
    /// never one. Lower only in tests, to reach the limit.
    limit: u32,
}

impl<O: Copy> Blocks<O> {
    pub(super) fn new() -> Self {
        Self::with_limit(u32::MAX)
    }

    pub(super) fn with_limit(limit: u32) -> Self {
        Blocks {
            chunks: Vec::new(),
            vacant: NO_SLOT,
            live: 0,
            slots: 0,
            limit,
        }
    }

    /// Occupied slots.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// Whether `insert` would succeed.
    pub(super) fn has_room(&self) -> bool {
        self.vacant != NO_SLOT || self.slots < self.limit as usize
    }

    /// Stores a block (`len > 0`) and returns its id; `None` when the slab
    /// holds `limit` blocks.
    pub(super) fn insert(&mut self, offset: u64, len: u64, owner: O) -> Option<BlockId> {
        debug_assert!(len > 0, "an empty block would read as a vacant slot");
        let block = Slot { offset, len, owner };
        if self.vacant != NO_SLOT {
            let id = self.vacant;
            let slot = self.slot_mut(id);
            // Vacant slots keep the next vacant index in `offset`; it is
            // always below NO_SLOT, as it was an index.
            let next = slot.offset as u32;
            *slot = block;
            self.vacant = next;
            self.live += 1;
            return Some(BlockId(id));
        }
        let index = self.slots;
        if index >= self.limit as usize {
            return None;
        }
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        self.chunks.last_mut().expect("just ensured").push(block);
        self.slots += 1;
        self.live += 1;
        // `index < limit <= u32::MAX`: it fits.
        Some(BlockId(index as u32))
    }

    /// The block `id` names, if it is occupied.
    pub(super) fn get(&self, id: BlockId) -> Option<Block<O>> {
        let slot = self
            .chunks
            .get(id.0 as usize / CHUNK)?
            .get(id.0 as usize % CHUNK)?;
        (slot.len != 0).then_some(Block {
            offset: slot.offset,
            len: slot.len,
            owner: slot.owner,
        })
    }

    /// Re-owns the occupied block `id`; `false` if it is not occupied.
    pub(super) fn set_owner(&mut self, id: BlockId, owner: O) -> bool {
        match self
            .chunks
            .get_mut(id.0 as usize / CHUNK)
            .and_then(|c| c.get_mut(id.0 as usize % CHUNK))
        {
            Some(slot) if slot.len != 0 => {
                slot.owner = owner;
                true
            }
            _ => false,
        }
    }

    /// Vacates the occupied block `id` and returns it; `None` (and no
    /// change) if `id` names no occupied slot.
    pub(super) fn remove(&mut self, id: BlockId) -> Option<Block<O>> {
        let block = self.get(id)?;
        let head = self.vacant;
        let slot = self.slot_mut(id.0);
        slot.len = 0;
        slot.offset = u64::from(head);
        self.vacant = id.0;
        self.live -= 1;
        Some(block)
    }

    /// Every occupied block with its id, in slot order (not address order).
    /// O(slots): the most blocks held at once, not only the current ones.
    pub(super) fn iter(&self) -> impl Iterator<Item = (BlockId, Block<O>)> + '_ {
        self.chunks
            .iter()
            .flatten()
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

    /// An existing slot (occupied or vacant); only called with ids this slab
    /// handed out or threaded into its vacant list.
    fn slot_mut(&mut self, id: u32) -> &mut Slot<O> {
        &mut self.chunks[id as usize / CHUNK][id as usize % CHUNK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-buffer cost of owner tracking: one slot, no map entry.
    #[test]
    fn a_slot_with_a_two_word_owner_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Slot<[u64; 2]>>(), 32);
    }

    #[test]
    fn vacant_slots_are_reused_last_freed_first_across_chunks() {
        let mut b: Blocks<u64> = Blocks::new();
        let ids: Vec<BlockId> = (0..(CHUNK as u64 + 5))
            .map(|i| b.insert(i * 10, 10, i).unwrap())
            .collect();
        assert_eq!(ids[CHUNK].index(), CHUNK as u32);
        assert_eq!(b.chunks.len(), 2);
        let far = ids[CHUNK + 2];
        let near = ids[3];
        assert_eq!(b.remove(near).map(|x| x.owner), Some(3));
        assert_eq!(b.remove(far).map(|x| x.owner), Some(CHUNK as u64 + 2));
        assert_eq!(b.remove(far), None);
        assert_eq!(b.get(far), None);
        assert!(!b.set_owner(far, 1));
        assert_eq!(b.len(), CHUNK + 3);
        assert_eq!(b.insert(7, 1, 70), Some(far));
        assert_eq!(b.insert(8, 1, 80), Some(near));
        assert_eq!(b.insert(9, 1, 90), Some(BlockId(CHUNK as u32 + 5)));
        assert_eq!(
            b.get(near),
            Some(Block {
                offset: 8,
                len: 1,
                owner: 80
            })
        );
        assert_eq!(b.iter().count(), CHUNK + 6);
        assert_eq!(b.get(BlockId::NONE), None);
    }

    #[test]
    fn the_limit_caps_slots_not_blocks_ever_held() {
        let mut b: Blocks<u64> = Blocks::with_limit(2);
        let x = b.insert(0, 1, 0).unwrap();
        b.insert(1, 1, 1).unwrap();
        assert!(!b.has_room());
        assert_eq!(b.insert(2, 1, 2), None);
        b.remove(x).unwrap();
        assert!(b.has_room());
        assert_eq!(b.insert(2, 1, 2), Some(x));
    }
}
