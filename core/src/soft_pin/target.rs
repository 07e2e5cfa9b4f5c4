//! What a deadline-index entry names: the object whose soft pin it may expire. The index treats
//! it as opaque (copied in, handed back by a pop); only the master resolves it against a shard.

/// The record a pin was registered for: its shard and its arena slot. Cleanup and the rebuild
/// reach the record through it directly (no hash probe, no key), under that shard's lock, and
/// tell the registration's record from any other by the entry's version: each registration moves
/// the record's `pin_version` on, and a slot hands the next record it holds the version its last
/// one reached, moved on by one, so an entry of an erased record matches no later record of the
/// slot (short of 2^32 version changes in the slot, and even then only a record whose own pin
/// has the entry's exact deadline, which that entry expires at the right instant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PinTarget {
    shard: u32,
    slot: u32,
}

impl PinTarget {
    /// The record in arena slot `slot` of shard `shard`.
    pub const fn new(shard: u32, slot: u32) -> Self {
        PinTarget { shard, slot }
    }

    /// The shard the record lives in.
    #[inline]
    pub fn shard(&self) -> u32 {
        self.shard
    }

    /// The record's slot in its shard's arena.
    #[inline]
    pub fn slot(&self) -> u32 {
        self.slot
    }
}
