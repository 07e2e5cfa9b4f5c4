//! The snapshot image: a plain, owned description of everything a snapshot
//! persists (docs/CONTRACT.md §6). The master captures into it and restores from
//! it; the codec turns it into bytes and back. Nothing here knows about
//! locks, shards or allocators.

pub use crate::journal::record::TaskImage;
pub use crate::soft_pin::SoftPinIntent;

/// Everything one snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SnapshotImage {
    /// When the snapshot was taken (master clock); orders restore candidates.
    pub created_at: u64,
    /// The wall clock when `created_at` was read (format 2 on); restore
    /// shifts every stored instant by the change in skew since then
    /// (docs/CONTRACT.md §6). `None` for format-1 snapshots, and possibly
    /// for formats 3 to 5, which store it as optional (format 2 always has
    /// one); an image without one restores verbatim.
    pub wall_at_capture: Option<u64>,
    /// The last change-journal sequence the snapshot includes
    /// (docs/CONTRACT.md §12; format 4 on): a standby restored from it
    /// resumes at the next record. 0 = none (no journal, or nothing
    /// recorded yet), and then the image is encoded in an older format.
    pub journal_seq: u64,
    /// Next replica id the master would hand out; every stored id is below it.
    pub next_replica_id: u64,
    /// Next write token the master would hand out.
    pub next_write_token: u64,
    /// Next object creation sequence (eviction tie-break); every stored seq is below it.
    pub next_object_seq: u64,
    /// Mounted segments, sorted by name.
    pub segments: Vec<SegmentRecord>,
    /// Groups with their shared lease, sorted by (tenant, name).
    pub groups: Vec<GroupRecord>,
    /// Committed group retention deadlines, sorted by (tenant, group)
    /// (format 3 on; groups without members included). Independent of
    /// `groups`: a retention may name a group that has no member.
    pub retention: Vec<RetentionRecord>,
    /// Objects, sorted by (tenant, key).
    pub objects: Vec<ObjectRecord>,
    /// Writes in flight, sorted by (tenant, key) (format 5 on): one per
    /// object whose write (its `write_token`) is in flight, with the
    /// pending soft-pin intent. The write's replicas are the object's
    /// PROCESSING replicas that are not a target of its task.
    pub in_flight: Vec<InFlightRecord>,
    /// Running copy / move / promotion tasks, sorted by (tenant, key)
    /// (format 5 on). A replica is a task target iff its id is one of its
    /// object's task targets.
    pub tasks: Vec<TaskRecord>,
    /// Discarded buffers waiting for their release instant, sorted by
    /// (segment, address) (format 5 on).
    pub discarded: Vec<DiscardedRecord>,
}

impl SnapshotImage {
    /// Whether the image holds state only format 5 can store: a write in
    /// flight, a running task or a discarded buffer.
    pub fn has_live_state(&self) -> bool {
        !(self.in_flight.is_empty() && self.tasks.is_empty() && self.discarded.is_empty())
    }
}

/// The write in flight of the object under (tenant, key): its token is the
/// object's `write_token`, its writer and start instant the object's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlightRecord {
    pub tenant: String,
    pub key: String,
    /// The soft-pin intent while still pending (its TTL resolved, as the
    /// request stored it); `None` once the commit rule consumed it.
    pub pending: Option<SoftPinIntent>,
}

/// The task running on the object under (tenant, key), by replica ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub tenant: String,
    pub key: String,
    pub task: TaskImage,
}

/// A buffer no replica owns any more, held allocated until `release_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscardedRecord {
    pub segment: String,
    /// Absolute address in the segment.
    pub address: u64,
    pub len: u64,
    pub release_at: u64,
    /// The id of the replica the buffer was (its discarded entry keeps
    /// it).
    pub replica: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRecord {
    pub name: String,
    pub owner: u64,
    /// 0 = memory, 1 = NOF_SSD.
    pub pool: u8,
    pub base: u64,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRecord {
    pub tenant: String,
    pub name: String,
    pub lease: u64,
}

/// One group's committed retention deadline (saturated values included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionRecord {
    pub tenant: String,
    pub group: String,
    pub deadline: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRecord {
    pub tenant: String,
    pub key: String,
    pub writer: u64,
    pub size: u64,
    pub put_start: u64,
    pub lease: u64,
    /// Committed soft-pin deadline, saturated values included.
    pub soft_pin_deadline: Option<u64>,
    pub hard_pin: bool,
    pub group: Option<String>,
    /// Creation sequence (eviction tie-break).
    pub seq: u64,
    /// Token of the object's latest write.
    pub write_token: u64,
    /// Sorted by id.
    pub replicas: Vec<ReplicaRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaRecord {
    pub id: u64,
    /// 0 = MEMORY, 1 = NOF_SSD, 2 = LOCAL_DISK.
    pub kind: u8,
    /// 0 = PROCESSING, 1 = COMPLETE.
    pub status: u8,
    pub location: LocationRecord,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocationRecord {
    /// `len` bytes at absolute `address` in the named segment
    /// (`base <= address` and `address + len <= base + size`).
    Buffer {
        segment: String,
        address: u64,
        len: u64,
    },
    /// A local-disk file held by `client`.
    LocalDisk { client: u64 },
}
