//! What a deadline-index entry names: the object whose soft pin it may expire. The index treats
//! it as opaque (copied in, handed back by a pop); only the master resolves it against a shard.

/// Identity of one object record: its key hash (which also picks its shard) and its creation
/// sequence, unique per object creation (`Object::seq`). Records have no stable handle yet, so
/// the pair is what finds the object again without its key: `ShardState::find_by_seq`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PinTarget {
    pub hash: u64,
    pub seq: u64,
}
