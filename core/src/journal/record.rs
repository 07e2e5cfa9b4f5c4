//! The journal's records: one per state change of a master, **by outcome**.
//! A record carries what the primary decided (placements, addresses,
//! replica ids, tokens, sequences, instants, deadlines), never the request
//! that led to it, so a standby applying it never re-decides anything
//! (docs/CONTRACT.md section 12).
//!
//! # Conventions
//!
//! - **Keys** are `(tenant, key)` pairs ([`RecordKey`]); group retention
//!   names `(tenant, group)`.
//! - **Segments are named**, never numbered: a segment id is a per-master
//!   dense number that a standby restored from a snapshot may assign
//!   differently, while a name is unique among mounted segments on every
//!   master that mounted the same segments.
//! - **Shards are never named**: the key hash (and so the shard and the
//!   discarded list a buffer waits in) is seeded per master.
//! - **Buffers** of an object's replicas are `size` bytes (the object's
//!   size), so a placement records its address only.
//! - What follows mechanically from the state the record applies to is not
//!   repeated (an unmount's victims, the gauge and index effects of a
//!   deadline change, the pending rule), but a count or flag of it is kept
//!   where cheap, so the apply side can check it reached the same outcome
//!   and report a divergence instead of drifting.
//! - **Not recorded**: read-lease grants (Get, Exist, group lease refresh),
//!   reads of any kind, rejected calls (every rejection happens before any
//!   side effect) and calls that change nothing (re-mounting an identical
//!   segment, a repeated End, releasing a group that is not retained).

use crate::clock::Instant;
use crate::soft_pin::SoftPinIntent;
use crate::types::{ClientId, Pool};

/// An object key: tenant and key within it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey {
    pub tenant: String,
    pub key: String,
}

impl RecordKey {
    pub fn new(tenant: impl Into<String>, key: impl Into<String>) -> Self {
        RecordKey {
            tenant: tenant.into(),
            key: key.into(),
        }
    }
}

/// Where a replica was placed, its kind included (a buffer's kind is its
/// segment's pool).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Placement {
    /// A MEMORY replica: the object's size in bytes at absolute `address`
    /// of the named memory segment.
    Memory { segment: String, address: u64 },
    /// A NOF_SSD replica on the named second-pool segment.
    NofSsd { segment: String, address: u64 },
    /// A LOCAL_DISK replica held by `client`.
    LocalDisk { client: ClientId },
}

/// A replica the primary created, with the id it handed out.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlacedReplica {
    pub id: u64,
    pub place: Placement,
}

/// A buffer by location: `len` bytes at `address` of the named segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BufferRef {
    pub segment: String,
    pub address: u64,
    pub len: u64,
}

/// A buffer no replica owns any more, held allocated until `release_at`
/// (then freed by a [`Record::DiscardReleased`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DiscardedBuffer {
    pub buffer: BufferRef,
    pub release_at: Instant,
}

/// Which Start produced a [`WriteStarted`], i.e. what happened to the
/// object that held the key before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartKind {
    /// PutStart of an absent key: a new object.
    Put,
    /// PutStart replacing a stale write with nothing COMPLETE: the old
    /// object is erased (its buffers discarded, its deadline dropped, its
    /// group left after the new object joined) and a new one created.
    PutReplacingStale,
    /// UpsertStart of an absent key (case A): a new object.
    UpsertAbsent,
    /// UpsertStart where nothing COMPLETE survived preemption (case A on a
    /// present object): the object is rewritten in place (lease and group
    /// kept), its old replicas discarded.
    UpsertReplace,
    /// UpsertStart with another size (case C): as `UpsertReplace`, the new
    /// buffers having been allocated first.
    UpsertResize,
}

/// A Start that placed new replicas (PutStart; UpsertStart cases A and C).
/// After applying it the object under `key` has exactly these fields, its
/// replicas are `replicas` (PROCESSING, of this write) and nothing else,
/// and `discarded` lists the buffers of the replicas it replaced.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WriteStarted {
    pub key: RecordKey,
    pub kind: StartKind,
    pub size: u64,
    pub writer: ClientId,
    pub token: u64,
    /// The Start's instant (`put_start`).
    pub put_start: Instant,
    /// The object's creation sequence (eviction's tie-break by age).
    pub seq: u64,
    /// The object's hard pin after the Start (case C ORs it in).
    pub hard_pin: bool,
    /// The object's group after the Start.
    pub group: Option<String>,
    /// The write's soft-pin intent (its TTL resolved), committed or not at
    /// its first End.
    pub pending: SoftPinIntent,
    /// The committed deadline after the Start: an unexpired deadline carried
    /// by cases A-on-present and C, otherwise none.
    pub committed: Option<Instant>,
    pub replicas: Vec<PlacedReplica>,
    pub discarded: Vec<DiscardedBuffer>,
}

/// What the first End of a write did to the committed deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndCommit {
    /// The commit rule did not fire (the object already had a COMPLETE
    /// replica, or this End completed none of the eligible replicas):
    /// pending stays unless the write is over.
    NotFired,
    /// The commit rule fired: pending is consumed and the committed
    /// deadline becomes this (none clears it).
    Committed(Option<Instant>),
}

/// The kind of a copy, move or promotion task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskKind {
    Copy,
    Move,
    Promotion,
}

/// The object add_local_disk_replica created when the key was absent
/// (writer: the replica's client; no group, no pin, no hard pin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CreatedObject {
    pub put_start: Instant,
    pub seq: u64,
    pub token: u64,
}

/// One state change of a master.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Record {
    /// A new segment (re-mounting an identical one changes nothing).
    SegmentMounted {
        owner: ClientId,
        name: String,
        pool: Pool,
        base: u64,
        size: u64,
    },
    /// A segment went: every replica on it dropped, objects left without a
    /// replica erased, the pending rule re-applied, and the discarded
    /// buffers on it forgotten. The counts are the primary's, for checking.
    SegmentUnmounted {
        owner: ClientId,
        name: String,
        replicas_dropped: u64,
        objects_erased: u64,
    },
    /// PutStart, or UpsertStart case A or C.
    WriteStarted(Box<WriteStarted>),
    /// UpsertStart case B (same size, in place): the writer, token, start
    /// instant and pending intent change; the replicas `reopened` (the
    /// surviving MEMORY/NOF_SSD ones, same ids) go back to PROCESSING as
    /// this write's, every other replica is removed (the preempted write's
    /// buffers are `discarded`; old LOCAL_DISK replicas have none); size,
    /// sequence, hard pin, group and committed deadline stay.
    WriteReopened {
        key: RecordKey,
        writer: ClientId,
        token: u64,
        put_start: Instant,
        pending: SoftPinIntent,
        reopened: Vec<u64>,
        discarded: Vec<DiscardedBuffer>,
    },
    /// An End with a write in flight: the replicas `completed` become
    /// COMPLETE, the commit rule's outcome is `commit`, the lease is raised
    /// to `at` (the End's instant), and the write is over when no replica of
    /// it is left PROCESSING.
    WriteEnded {
        key: RecordKey,
        token: u64,
        at: Instant,
        completed: Vec<u64>,
        commit: EndCommit,
    },
    /// A Revoke: the replicas `revoked` are freed now, the pending rule is
    /// re-applied, and the object is erased when `object_erased`.
    WriteRevoked {
        key: RecordKey,
        token: u64,
        revoked: Vec<u64>,
        object_erased: bool,
    },
    /// The stale-write sweep took the write `token`: its PROCESSING
    /// replicas `removed` go, their buffers `discarded`; pending is cleared;
    /// the object is erased when `object_erased`.
    WriteSwept {
        key: RecordKey,
        token: u64,
        removed: Vec<u64>,
        discarded: Vec<DiscardedBuffer>,
        object_erased: bool,
    },
    /// Discarded buffers whose release instant was `<= at` were freed.
    DiscardReleased {
        at: Instant,
        buffers: Vec<BufferRef>,
    },
    /// A copy started from replica `source` to PROCESSING task targets.
    CopyStarted {
        key: RecordKey,
        source: u64,
        targets: Vec<PlacedReplica>,
    },
    /// A move started from replica `source` to a PROCESSING task target.
    MoveStarted {
        key: RecordKey,
        source: u64,
        target: PlacedReplica,
    },
    /// A promotion staged a PROCESSING memory replica.
    PromotionStarted {
        key: RecordKey,
        target: PlacedReplica,
    },
    /// A task succeeded: its targets are COMPLETE ordinary replicas; a
    /// move's source is removed and its buffer `discarded`.
    TaskCompleted {
        key: RecordKey,
        task: TaskKind,
        discarded: Vec<DiscardedBuffer>,
    },
    /// A task was revoked, or failed because a replica it used is gone: the
    /// targets still present (`freed`) are freed now, the task is cleared,
    /// and the object is erased when `object_erased`.
    TaskAbandoned {
        key: RecordKey,
        task: TaskKind,
        freed: Vec<u64>,
        object_erased: bool,
    },
    /// add_local_disk_replica added a COMPLETE LOCAL_DISK replica (a repeat
    /// for the same client changes nothing); `created` when the key was
    /// absent and the object was created with it.
    LocalDiskAdded {
        key: RecordKey,
        replica_id: u64,
        client: ClientId,
        size: u64,
        created: Option<CreatedObject>,
    },
    /// An object was removed (Remove, RemoveAll, RemoveByRegex, batch
    /// Remove): its buffers freed now, its deadline dropped, its group left.
    Removed { key: RecordKey },
    /// Eviction freed the MEMORY replicas `freed`; the object is erased when
    /// `object_erased`. A group eviction is one record per member.
    Evicted {
        key: RecordKey,
        freed: Vec<u64>,
        object_erased: bool,
    },
    /// An eviction run normalised an expired committed deadline: cleared if
    /// it still equals `deadline`.
    PinNormalised { key: RecordKey, deadline: Instant },
    /// Cleanup expired a committed deadline: cleared if it still equals
    /// `deadline`.
    PinExpired { key: RecordKey, deadline: Instant },
    /// A group's retention deadline became `deadline`.
    GroupRetained {
        tenant: String,
        group: String,
        deadline: Instant,
    },
    /// A group's retention ended (release).
    GroupReleased { tenant: String, group: String },
    /// A group's retention deadline expired: cleared if it still equals
    /// `deadline`.
    RetentionExpired {
        tenant: String,
        group: String,
        deadline: Instant,
    },
    /// The per-instance counters moved without another recorded change
    /// (ids a failed allocation reserved and could not give back): the
    /// standby raises its counters to these values, so its snapshot's
    /// counters match the primary's.
    Counters {
        next_replica_id: u64,
        next_write_token: u64,
        next_object_seq: u64,
    },
    /// A restore replaced the whole state. `image` is a snapshot (the
    /// snapshot format of docs/CONTRACT.md section 6) of the state the
    /// restore **installed**, survival rules already applied and instants
    /// already shifted: the apply side replaces its state with it verbatim
    /// and re-decides nothing. A consumer that cannot hold it (it may be
    /// larger than the journal; the journal then drops it and the reader
    /// gets JOURNAL_OVERRUN) resyncs from a fresh snapshot instead.
    Reset { image: Vec<u8> },
}

impl Record {
    /// Every record's name, in tag order (for messages and tests).
    pub const NAMES: [&'static str; 23] = [
        "SegmentMounted",
        "SegmentUnmounted",
        "WriteStarted",
        "WriteReopened",
        "WriteEnded",
        "WriteRevoked",
        "WriteSwept",
        "DiscardReleased",
        "CopyStarted",
        "MoveStarted",
        "PromotionStarted",
        "TaskCompleted",
        "TaskAbandoned",
        "LocalDiskAdded",
        "Removed",
        "Evicted",
        "PinNormalised",
        "PinExpired",
        "GroupRetained",
        "GroupReleased",
        "RetentionExpired",
        "Counters",
        "Reset",
    ];

    /// The record's tag in the encoding: its 1-based position in
    /// [`Record::NAMES`]. Stable for ever; 0 is never a tag.
    pub fn tag(&self) -> u8 {
        match self {
            Record::SegmentMounted { .. } => 1,
            Record::SegmentUnmounted { .. } => 2,
            Record::WriteStarted(_) => 3,
            Record::WriteReopened { .. } => 4,
            Record::WriteEnded { .. } => 5,
            Record::WriteRevoked { .. } => 6,
            Record::WriteSwept { .. } => 7,
            Record::DiscardReleased { .. } => 8,
            Record::CopyStarted { .. } => 9,
            Record::MoveStarted { .. } => 10,
            Record::PromotionStarted { .. } => 11,
            Record::TaskCompleted { .. } => 12,
            Record::TaskAbandoned { .. } => 13,
            Record::LocalDiskAdded { .. } => 14,
            Record::Removed { .. } => 15,
            Record::Evicted { .. } => 16,
            Record::PinNormalised { .. } => 17,
            Record::PinExpired { .. } => 18,
            Record::GroupRetained { .. } => 19,
            Record::GroupReleased { .. } => 20,
            Record::RetentionExpired { .. } => 21,
            Record::Counters { .. } => 22,
            Record::Reset { .. } => 23,
        }
    }

    /// The record's name (`"WriteStarted"`).
    pub fn name(&self) -> &'static str {
        Record::NAMES[usize::from(self.tag() - 1)]
    }
}
