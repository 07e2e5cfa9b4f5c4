//! A handle to one object record: its shard, its slot in that shard's arena
//! and the object's creation sequence, unique among the objects of a state
//! (a replacing write takes a new one). It stays valid while the object
//! lives in the slot; once the object is erased or replaced (and its slot
//! maybe reused) it resolves to nothing, so a holder never reaches another
//! object. A restore installs a new state: handles are held within one
//! state (one operation, or one run of a standby's apply).

/// Handle to an object record (see the module docs). Cheap to copy and to
/// store; resolve it with [`ShardState::get`](crate::shard::ShardState::get)
/// on shard `shard` under that shard's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ObjectRef {
    pub shard: u32,
    pub slot: u32,
    pub seq: u64,
}

impl ObjectRef {
    /// Whether `obj`, found in this handle's slot, is the object it names.
    #[inline]
    pub fn names(&self, obj: &crate::object::Object) -> bool {
        obj.seq == self.seq
    }
}
