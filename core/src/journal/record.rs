//! The journal's records: one per state change of a master, **by outcome**.
//! Every change to an object is recorded as the object's whole state after
//! the change ([`ObjectImage`]), except an End, recorded as what it changed
//! ([`Record::ObjectEnded`]), and a Start that created a new key, recorded
//! as what it decided ([`Record::ObjectStarted`], a compact spelling of the
//! ObjectSet it stands for): the ids, addresses, tokens and instants the
//! primary chose, never the request that led to it, so a standby installs
//! any such record the same way and re-decides nothing (docs/CONTRACT.md
//! section 12). One record is of the clock, not the state:
//! [`Record::Timeline`], the primary's skew after its wall was stepped, so
//! a standby reads the instants of the records on the primary's timeline.
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
//! - **Buffers** are identified across records by `(segment name,
//!   address)`; a replica's buffer is its object's size in bytes.
//! - **Freeing**: the buffers the previous state of a key held that its new
//!   state ([`Record::ObjectSet`]) or its erasure ([`Record::ObjectErased`])
//!   no longer holds are freed, except the ones the record lists as
//!   discarded, which wait on the discarded list until their release
//!   instant ([`Record::DiscardReleased`] frees them).
//! - **Not recorded**: read-lease grants (Get, Exist, group lease refresh),
//!   reads of any kind, rejected calls (every rejection happens before any
//!   side effect) and calls that change nothing (re-mounting an identical
//!   segment, a repeated End, releasing a group that is not retained).

use crate::clock::Instant;
use crate::soft_pin::SoftPinIntent;
use crate::types::{ClientId, Pool, ReplicaStatus};

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

/// Why a replica exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplicaRole {
    /// Written by a Put/Upsert (while PROCESSING, part of the write in
    /// flight).
    Write,
    /// Target of a copy, move or promotion; only its task completes it.
    TaskTarget,
}

/// One replica of an object, as it stands.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReplicaImage {
    pub id: u64,
    pub status: ReplicaStatus,
    pub role: ReplicaRole,
    pub place: Placement,
}

/// The copy, move or promotion in progress on the key, by replica ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskImage {
    Copy { source: u64, targets: Vec<u64> },
    Move { source: u64, target: u64 },
    Promotion { target: u64 },
}

impl TaskImage {
    /// Every replica id the task names: its source, if it has one, then
    /// its targets (whether its object still holds them or not).
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        let (source, targets): (Option<u64>, &[u64]) = match self {
            TaskImage::Copy { source, targets } => (Some(*source), targets),
            TaskImage::Move { source, target } => (Some(*source), std::slice::from_ref(target)),
            TaskImage::Promotion { target } => (None, std::slice::from_ref(target)),
        };
        source.into_iter().chain(targets.iter().copied())
    }
}

/// The object's write in flight (its token is the object's `write_token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InFlightImage {
    /// The write's soft-pin intent while still pending (its TTL resolved);
    /// `None` once consumed by the commit rule.
    pub pending: Option<SoftPinIntent>,
}

/// One replica a Start of a new key placed: PROCESSING, role write.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StartedReplica {
    pub id: u64,
    pub place: Placement,
}

/// An object's whole state: its record, its write in flight and its rare
/// part (group, task), with segments by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectImage {
    pub key: RecordKey,
    pub size: u64,
    pub writer: ClientId,
    /// The instant of the latest Start on the key.
    pub put_start: Instant,
    /// The object's own read lease as it stands (recorded, but the
    /// equivalence of a standby's state ignores leases: read-lease grants
    /// are not recorded).
    pub lease: Instant,
    /// Creation sequence (eviction's tie-break by age).
    pub seq: u64,
    /// Token of the latest Start on the key.
    pub write_token: u64,
    pub hard_pin: bool,
    pub group: Option<String>,
    /// The committed soft-pin deadline (never 0: a master stores 0 as no
    /// deadline, and the codec refuses a committed deadline of 0).
    pub committed: Option<Instant>,
    /// `Some` iff a write is in flight (the shard's in-flight table holds
    /// `write_token`).
    pub in_flight: Option<InFlightImage>,
    pub task: Option<TaskImage>,
    /// Sorted by id, ids distinct.
    pub replicas: Vec<ReplicaImage>,
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
    /// A segment went. Appended last by an unmount, after one
    /// [`ObjectSet`](Record::ObjectSet) or [`ObjectErased`](Record::ObjectErased)
    /// per object that lost a replica on it: it drops the segment and the
    /// discarded buffers still on it.
    SegmentUnmounted { owner: ClientId, name: String },
    /// The object under `image.key` is now exactly `image` (created if
    /// absent). Buffers the key's previous state held and `image` no longer
    /// holds are freed, except those in `discarded`, which go to the
    /// discarded list with their release instants.
    ObjectSet {
        image: Box<ObjectImage>,
        discarded: Vec<DiscardedBuffer>,
    },
    /// The object under `key` is gone (remove, eviction, revoke, sweep,
    /// unmount...): its buffers are freed except those in `discarded`, its
    /// deadline dropped, its group left.
    ObjectErased {
        key: RecordKey,
        discarded: Vec<DiscardedBuffer>,
    },
    /// These discarded buffers were freed by a release pass at `at` (one
    /// record per shard per pass).
    DiscardReleased {
        at: Instant,
        buffers: Vec<BufferRef>,
    },
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
    /// (ids a failed operation reserved and could not give back): the
    /// standby raises each of its counters to at least these values, so
    /// its snapshot's counters match the primary's.
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
    /// An End (PutEnd/UpsertEnd, single or batch) that completed replicas
    /// of the write `write_token` of the object under `key`, by outcome:
    /// the replicas `completed` (ids strictly increasing; each was
    /// PROCESSING of that write) are now COMPLETE; the lease is raised to
    /// at least `at` (the End's instant); `commit` is the commit rule's
    /// outcome (`None`: it did not fire; `Some(d)`: it fired, consuming the
    /// write's pending intent, and the committed deadline is now `d`, which
    /// is never `Some(0)`); and
    /// `write_over` says the write in flight ended. An End frees and
    /// discards nothing. Format 2.
    ObjectEnded {
        key: RecordKey,
        write_token: u64,
        at: Instant,
        completed: Vec<u64>,
        commit: Option<Option<Instant>>,
        write_over: bool,
    },
    /// A Start (PutStart/UpsertStart, single or batch) that created the
    /// key, which had no object: exactly the [`ObjectSet`](Record::ObjectSet)
    /// [`Record::expand_start`] gives, with no discarded buffers, of the
    /// image whose lease is 0, which has no committed deadline and no task,
    /// whose write in flight (token `write_token`) holds `pending` as its
    /// intent, and whose replicas (ids strictly increasing) are all
    /// PROCESSING with role write. Applied as that ObjectSet. Format 3.
    ObjectStarted {
        key: RecordKey,
        size: u64,
        writer: ClientId,
        put_start: Instant,
        seq: u64,
        write_token: u64,
        hard_pin: bool,
        group: Option<String>,
        pending: SoftPinIntent,
        /// Sorted by id, ids distinct.
        replicas: Vec<StartedReplica>,
    },
    /// The primary's skew (`timeline − wall` in ms, `Clock::skew`) moved
    /// to `skew_ms` since it last recorded one (a wall step; on a system
    /// clock, a move of more than the 1 ms a wall read in whole ms can
    /// jitter by): every instant of a later record is on a timeline that
    /// reads the wall plus `skew_ms`. A standby takes that skew (as it
    /// takes an image's: docs/CONTRACT.md section 12.1), so, promoted, it judges the
    /// primary's leases and deadlines as the primary would. Changes no
    /// state but the clock. Format 4.
    Timeline { skew_ms: i64 },
}

impl Record {
    /// Every record's name, in tag order (for messages and tests).
    pub const NAMES: [&'static str; 13] = [
        "SegmentMounted",
        "SegmentUnmounted",
        "ObjectSet",
        "ObjectErased",
        "DiscardReleased",
        "GroupRetained",
        "GroupReleased",
        "RetentionExpired",
        "Counters",
        "Reset",
        "ObjectEnded",
        "ObjectStarted",
        "Timeline",
    ];

    /// The record's tag in the encoding: its 1-based position in
    /// [`Record::NAMES`]. Stable for ever; 0 is never a tag.
    pub fn tag(&self) -> u8 {
        match self {
            Record::SegmentMounted { .. } => 1,
            Record::SegmentUnmounted { .. } => 2,
            Record::ObjectSet { .. } => 3,
            Record::ObjectErased { .. } => 4,
            Record::DiscardReleased { .. } => 5,
            Record::GroupRetained { .. } => 6,
            Record::GroupReleased { .. } => 7,
            Record::RetentionExpired { .. } => 8,
            Record::Counters { .. } => 9,
            Record::Reset { .. } => 10,
            Record::ObjectEnded { .. } => 11,
            Record::ObjectStarted { .. } => 12,
            Record::Timeline { .. } => 13,
        }
    }

    /// The record in its long spelling: an [`ObjectStarted`](Record::ObjectStarted)
    /// becomes the [`ObjectSet`](Record::ObjectSet) it stands for (applying
    /// either changes a master the same way); any other record is itself.
    pub fn expand_start(self) -> Record {
        match self {
            Record::ObjectStarted {
                key,
                size,
                writer,
                put_start,
                seq,
                write_token,
                hard_pin,
                group,
                pending,
                replicas,
            } => Record::ObjectSet {
                image: Box::new(ObjectImage {
                    key,
                    size,
                    writer,
                    put_start,
                    lease: 0,
                    seq,
                    write_token,
                    hard_pin,
                    group,
                    committed: None,
                    in_flight: Some(InFlightImage {
                        pending: Some(pending),
                    }),
                    task: None,
                    replicas: replicas
                        .into_iter()
                        .map(|r| ReplicaImage {
                            id: r.id,
                            status: ReplicaStatus::Processing,
                            role: ReplicaRole::Write,
                            place: r.place,
                        })
                        .collect(),
                }),
                discarded: Vec::new(),
            },
            other => other,
        }
    }

    /// The record's name (`"ObjectSet"`).
    pub fn name(&self) -> &'static str {
        Record::NAMES[usize::from(self.tag() - 1)]
    }
}
