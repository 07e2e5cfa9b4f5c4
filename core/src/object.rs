//! Object metadata and replicas as stored in a shard. Fields read under the
//! shard *read* lock and changed there (read lease, committed soft-pin
//! deadline) are atomics; everything else changes under the write lock.

use crate::clock::{saturating_deadline, Instant, MAX_INSTANT};
use crate::group::Group;
use crate::key::ScopedKey;
use crate::segment::BlockId;
use crate::soft_pin::{PinTarget, SoftPinIntent};
use crate::types::{
    ClientId, Location, ReplicaDescriptor, ReplicaKind, ReplicaSelector, ReplicaStatus, SegmentId,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Stored in the committed-deadline atomic when there is none (a committed
/// deadline is always `end_instant + ttl` with `ttl > 0`, so never 0).
pub(crate) const NO_DEADLINE: u64 = 0;

/// Why a replica exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Written by a Put/Upsert. While PROCESSING it belongs to the write in
    /// flight and is eligible for that write's soft-pin commit.
    Write,
    /// Target of a copy, move or promotion; only its task completes it.
    TaskTarget,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Replica {
    pub id: u64,
    /// Absolute address for buffers; the client id for LOCAL_DISK.
    pub addr: u64,
    /// `u32::MAX` for LOCAL_DISK.
    pub segment: SegmentId,
    /// The buffer's block in its segment (freeing it needs no address
    /// lookup); `BlockId::NONE` for LOCAL_DISK.
    pub block: BlockId,
    pub kind: ReplicaKind,
    pub status: ReplicaStatus,
    pub role: Role,
}

pub(crate) const LOCAL_DISK_SEGMENT: SegmentId = SegmentId::MAX;

impl Replica {
    #[inline]
    pub fn is_complete(&self) -> bool {
        self.status == ReplicaStatus::Complete
    }

    /// PROCESSING and part of the write in flight (pending's eligible set).
    #[inline]
    pub fn is_write_processing(&self) -> bool {
        self.status == ReplicaStatus::Processing && self.role == Role::Write
    }

    #[inline]
    pub fn has_buffer(&self) -> bool {
        self.kind != ReplicaKind::LocalDisk
    }

    pub fn descriptor(&self, size: u64) -> ReplicaDescriptor {
        let location = if self.kind == ReplicaKind::LocalDisk {
            Location::LocalDisk {
                client: self.addr,
                size,
            }
        } else {
            Location::Buffer {
                segment: self.segment,
                address: self.addr,
                size,
            }
        };
        ReplicaDescriptor {
            id: self.id,
            kind: self.kind,
            status: self.status,
            location,
        }
    }
}

/// An object's replicas: one lives inline in the object (no allocation, and
/// a read touches no other cache line); more spill to the heap.
pub(crate) type Replicas = smallvec::SmallVec<[Replica; 1]>;

/// A copy, move or promotion in progress on the key (one per key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Task {
    Copy { source: u64, targets: Vec<u64> },
    Move { source: u64, target: u64 },
    Promotion { target: u64 },
}

impl Task {
    /// Replicas the task uses: they are busy (not evictable, not removable).
    pub fn uses(&self, replica: u64) -> bool {
        match self {
            Task::Copy { source, targets } => *source == replica || targets.contains(&replica),
            Task::Move { source, target } => *source == replica || *target == replica,
            Task::Promotion { target } => *target == replica,
        }
    }
}

pub(crate) struct Object {
    pub key: ScopedKey,
    pub hash: u64,
    pub size: u64,
    pub writer: ClientId,
    pub put_start: Instant,
    /// Creation sequence: eviction's tie-break by age.
    pub seq: u64,
    /// Token of the latest Start on this key.
    pub write_token: u64,
    /// Read lease (instant); raised with `fetch_max` under the read lock.
    pub lease: AtomicU64,
    /// Committed soft-pin deadline or [`NO_DEADLINE`].
    pub soft_pin: AtomicU64,
    /// Version of the latest deadline-index registration, bumped (wrapping) by each one
    /// (docs/CONTRACT.md §4.8): an index entry is valid only while it carries this version and
    /// `soft_pin` still holds its deadline. Changed under the write lock only.
    pub pin_version: u32,
    pub replicas: Replicas,
    /// Soft-pin intent of the write in flight (docs/CONTRACT.md §4.4).
    pub pending: Option<SoftPinIntent>,
    pub group: Option<Arc<Group>>,
    pub hard_pin: bool,
    pub task: Option<Box<Task>>,
}

impl Object {
    #[inline]
    pub fn committed(&self) -> Option<Instant> {
        match self.soft_pin.load(Ordering::Acquire) {
            NO_DEADLINE => None,
            d => Some(d),
        }
    }

    /// The identity deadline-index entries name this object by.
    #[inline]
    pub fn pin_target(&self) -> PinTarget {
        PinTarget {
            hash: self.hash,
            seq: self.seq,
        }
    }

    #[inline]
    pub fn set_committed(&self, deadline: Option<Instant>) {
        self.soft_pin
            .store(deadline.unwrap_or(NO_DEADLINE), Ordering::Release);
    }

    /// The lease that protects the object: its own or its group's.
    #[inline]
    pub fn effective_lease(&self) -> Instant {
        let own = self.lease.load(Ordering::Acquire);
        match &self.group {
            Some(g) => own.max(g.lease.load(Ordering::Acquire)),
            None => own,
        }
    }

    #[inline]
    pub fn lease_live(&self, now: Instant) -> bool {
        now < self.effective_lease()
    }

    /// Grants a read lease of `ttl_ms` from `now` (saturated at
    /// `MAX_INSTANT`): the group's shared lease for a grouped object.
    #[inline]
    pub fn grant_lease(&self, now: Instant, ttl_ms: u64) {
        let until = saturating_deadline(now, ttl_ms);
        match &self.group {
            Some(g) => raise(&g.lease, until),
            None => raise(&self.lease, until),
        }
    }

    #[inline]
    pub fn has_complete(&self) -> bool {
        self.replicas.iter().any(Replica::is_complete)
    }

    #[inline]
    pub fn write_in_flight(&self) -> bool {
        self.replicas.iter().any(Replica::is_write_processing)
    }

    pub fn is_busy(&self, replica: u64) -> bool {
        self.task.as_ref().is_some_and(|t| t.uses(replica))
    }

    /// COMPLETE, non-busy MEMORY replicas: what eviction may free.
    pub fn evictable_memory(&self) -> impl Iterator<Item = &Replica> + '_ {
        self.replicas.iter().filter(move |r| {
            r.kind == ReplicaKind::Memory && r.is_complete() && !self.is_busy(r.id)
        })
    }

    pub fn targeted(&self, sel: ReplicaSelector) -> impl Iterator<Item = &Replica> + '_ {
        self.replicas
            .iter()
            .filter(move |r| r.role == Role::Write && sel.matches(r.kind))
    }

    /// Pending rule (§4.4): pending survives only while an eligible replica
    /// of the write in flight can still complete.
    pub fn apply_pending_rule(&mut self) {
        if self.pending.is_some() && !self.write_in_flight() {
            self.pending = None;
        }
    }

    pub fn readable(&self) -> impl Iterator<Item = &Replica> + '_ {
        self.replicas.iter().filter(|r| r.is_complete())
    }
}

/// `fetch_max` that skips the read-modify-write when `to` would not raise
/// the value: readers of a hot object in the same millisecond then share its
/// cache line instead of bouncing it between cores with locked RMWs. Same
/// effect as `fetch_max` (a lease only moves forward), just cheaper when
/// nothing changes.
#[inline]
pub(crate) fn raise(lease: &AtomicU64, to: Instant) {
    // A stored instant never passes MAX_INSTANT, whatever the caller computed.
    let to = to.min(MAX_INSTANT);
    if lease.load(Ordering::Acquire) < to {
        lease.fetch_max(to, Ordering::AcqRel);
    }
}
