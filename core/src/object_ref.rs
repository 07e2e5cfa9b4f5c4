//! A handle to one object record: its shard, its slot in that shard's arena
//! and the slot's generation when the handle was taken. It stays valid while
//! the object lives; once the object is erased (and its slot maybe reused)
//! it resolves to nothing, so a holder never reaches another object.

/// Handle to an object record (see the module docs). Cheap to copy and to
/// store; resolve it with [`ShardState::get`](crate::shard::ShardState::get)
/// on shard `shard` under that shard's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ObjectRef {
    pub shard: u32,
    pub slot: u32,
    pub gen: u32,
}
