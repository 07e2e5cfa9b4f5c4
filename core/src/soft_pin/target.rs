//! What a deadline-index entry names: the object whose soft pin it may expire. The index treats
//! it as opaque (copied in, handed back by a pop); only the master resolves it against a shard.

use crate::object_ref::ObjectRef;

/// Handle to one object record: its shard, its arena slot and the slot's generation when the
/// pin was registered. Cleanup and the rebuild reach the record through it directly (no hash
/// probe, no key), under that shard's lock; once the record is erased the slot's generation
/// has moved on, so the handle resolves to nothing, also after the slot is reused (an arena
/// never hands a slot out again at a generation it has used).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PinTarget(ObjectRef);

impl PinTarget {
    /// The handle of the record in arena slot `slot` of shard `shard`, at generation `gen`.
    pub const fn new(shard: u32, slot: u32, gen: u32) -> Self {
        PinTarget(ObjectRef { shard, slot, gen })
    }

    /// The shard the record lives in.
    #[inline]
    pub fn shard(&self) -> u32 {
        self.0.shard
    }

    /// The record's slot in its shard's arena.
    #[inline]
    pub fn slot(&self) -> u32 {
        self.0.slot
    }

    /// The slot's generation when the handle was taken.
    #[inline]
    pub fn generation(&self) -> u32 {
        self.0.gen
    }

    #[inline]
    pub(crate) fn object_ref(self) -> ObjectRef {
        self.0
    }
}

impl From<ObjectRef> for PinTarget {
    #[inline]
    fn from(r: ObjectRef) -> Self {
        PinTarget(r)
    }
}

impl Default for PinTarget {
    fn default() -> Self {
        PinTarget::new(0, 0, 0)
    }
}
