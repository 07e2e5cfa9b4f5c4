//! Object metadata and replicas as stored in a shard. Fields read under the
//! shard *read* lock and changed there (read lease, committed soft-pin
//! deadline) are atomics; everything else changes under the write lock.

use crate::clock::{saturating_deadline, Instant, MAX_INSTANT};
use crate::group::Group;
use crate::segment::BlockId;
use crate::tenants::{TenantId, DEFAULT_TENANT_ID};
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

    /// Whether this replica's buffer is block `block` of `segment`.
    #[inline]
    pub fn is_in(&self, segment: SegmentId, block: BlockId) -> bool {
        self.segment == segment && self.block == block
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

pub(crate) use crate::replicas::Replicas;

/// A copy, move or promotion in progress on the key (one per key).
///
/// A copy's `targets` are never empty and strictly increasing: `copy_start`
/// allocates them as one run of consecutive ids, and a snapshot's
/// validation and a journal record's `check_image` refuse any other copy;
/// `check_invariants` checks it. A copy may name very many targets (a
/// snapshot or journal can), so lookups in them are binary searches or
/// merge walks, never scans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Task {
    Copy { source: u64, targets: Vec<u64> },
    Move { source: u64, target: u64 },
    Promotion { target: u64 },
}

impl Task {
    /// Replicas the task uses: they are busy (not evictable, not removable).
    /// O(log targets) for a copy (its targets are strictly increasing).
    pub fn uses(&self, replica: u64) -> bool {
        match self {
            Task::Copy { source, targets } => {
                *source == replica || targets.binary_search(&replica).is_ok()
            }
            Task::Move { source, target } => *source == replica || *target == replica,
            Task::Promotion { target } => *target == replica,
        }
    }
}

/// Keys up to this many bytes live inline in the record; longer ones in
/// its [`Rare`] part.
pub(crate) const INLINE_KEY_BYTES: usize = 22;
/// `key_len` of a record whose key lives in its [`Rare`] part.
const LONG_KEY: u8 = u8::MAX;
const HARD_PIN: u8 = 1;
/// The rare part holds a group (fixed at creation): a read of an object
/// without one never touches the rare part.
const HAS_GROUP: u8 = 2;
/// The tenant is not the default one: a lookup in the default tenant
/// rejects the record without reading its tenant id.
const OTHER_TENANT: u8 = 4;

/// What few objects have, behind one pointer: a key longer than
/// [`INLINE_KEY_BYTES`], a group, a task.
#[derive(Default)]
struct Rare {
    long_key: Option<Box<str>>,
    group: Option<Arc<Group>>,
    task: Option<Task>,
}

impl Rare {
    fn is_empty(&self) -> bool {
        self.long_key.is_none() && self.group.is_none() && self.task.is_none()
    }
}

/// An object's record in its shard's arena: 128 bytes, aligned to a
/// 64-byte cache line, so each record is exactly two lines. The first line
/// holds what Exist compares and reads for an object of the default tenant
/// with a short key and no group — key, replicas, lease — so Exist reads
/// one line; Get also reads the size, at the start of the second line. The
/// key is stored as the shard's tenant id plus the key bytes, inline when
/// short. The key's hash is not stored: the shard recomputes it from the
/// key when it needs it (its index growing, a deadline-index entry
/// matched by sequence). The soft-pin intent of a write in flight lives in
/// the shard's in-flight table.
#[repr(C, align(64))]
pub(crate) struct Object {
    key_bytes: [u8; INLINE_KEY_BYTES],
    /// Length of the inline key, or [`LONG_KEY`].
    key_len: u8,
    flags: u8,
    /// Strictly increasing by id: ids come from one counter that only
    /// grows, a replica joins an object when its id is taken (so after all
    /// it holds), removals keep the order, and a snapshot or journal
    /// record installs replicas only in id order (both are validated so).
    /// `check_invariants` checks it.
    pub replicas: Replicas,
    /// Read lease (instant); raised with `fetch_max` under the read lock.
    pub lease: AtomicU64,
    pub size: u64,
    /// The tenant, as an id of the shard's tenant table (set on insertion;
    /// [`OTHER_TENANT`] in `flags` says whether it is not the default).
    tenant: TenantId,
    /// Version of the latest deadline-index registration, bumped (wrapping)
    /// by each one (docs/CONTRACT.md §4.8): an index entry, which names the
    /// record by shard and slot, is valid only while the slot's record
    /// carries this version and `soft_pin` still holds the entry's
    /// deadline. The arena carries it from one record of a slot to the next
    /// (moved on by one), so the entries of an erased record match no later
    /// one. Changed under the write lock only.
    pub pin_version: u32,
    /// Committed soft-pin deadline or [`NO_DEADLINE`].
    pub soft_pin: AtomicU64,
    rare: Option<Box<Rare>>,
    /// Creation sequence: eviction's tie-break by age.
    pub seq: u64,
    /// Token of the latest Start on this key.
    pub write_token: u64,
    pub writer: ClientId,
    pub put_start: Instant,
}

// The record. First line: the key with its length and flags (24), one
// inline replica (32, its buffer's block id included), lease (8). Second
// line: size (8), tenant id and pin version (4 each), committed deadline,
// rare-part pointer, sequence, token, writer, put_start (8 each).
const _: () = assert!(std::mem::size_of::<Object>() == 128);
// An arena slot costs no more than its record: a free slot keeps its next
// version in bytes beside the record's niche.
const _: () = assert!(crate::arena::slot_bytes::<Object>() == 128);

impl crate::arena::Versioned for Object {
    #[inline]
    fn version(&self) -> u32 {
        self.pin_version
    }

    #[inline]
    fn set_version(&mut self, version: u32) {
        self.pin_version = version;
    }
}
const _: () = assert!(std::mem::align_of::<Object>() == 64);
const _: () = assert!(std::mem::offset_of!(Object, lease) == 56);
const _: () = assert!(std::mem::offset_of!(Object, size) == 64);
// An optional record costs no more than the record (its niche is free).
const _: () = assert!(std::mem::size_of::<Option<Object>>() == 128);

/// What a new record holds, apart from its tenant (interned on insertion).
pub(crate) struct NewRecord<'a> {
    pub key: &'a str,
    pub size: u64,
    pub writer: ClientId,
    pub put_start: Instant,
    pub seq: u64,
    pub write_token: u64,
    pub lease: Instant,
    pub committed: Option<Instant>,
    pub replicas: Replicas,
    pub group: Option<Arc<Group>>,
    pub hard_pin: bool,
}

impl Object {
    pub fn new(n: NewRecord<'_>) -> Object {
        let mut key_bytes = [0u8; INLINE_KEY_BYTES];
        let mut flags = if n.hard_pin { HARD_PIN } else { 0 };
        if n.group.is_some() {
            flags |= HAS_GROUP;
        }
        let mut rare = Rare {
            group: n.group,
            ..Rare::default()
        };
        let key_len = if n.key.len() <= INLINE_KEY_BYTES {
            key_bytes[..n.key.len()].copy_from_slice(n.key.as_bytes());
            n.key.len() as u8
        } else {
            rare.long_key = Some(Box::from(n.key));
            LONG_KEY
        };
        Object {
            size: n.size,
            writer: n.writer,
            put_start: n.put_start,
            seq: n.seq,
            write_token: n.write_token,
            lease: AtomicU64::new(n.lease),
            soft_pin: AtomicU64::new(n.committed.unwrap_or(NO_DEADLINE)),
            pin_version: 0,
            tenant: DEFAULT_TENANT_ID,
            replicas: n.replicas,
            key_bytes,
            key_len,
            flags,
            rare: (!rare.is_empty()).then(|| Box::new(rare)),
        }
    }

    /// The record's tenant id.
    #[inline]
    pub fn tenant(&self) -> TenantId {
        self.tenant
    }

    pub fn set_tenant(&mut self, id: TenantId) {
        self.tenant = id;
        if id == DEFAULT_TENANT_ID {
            self.flags &= !OTHER_TENANT;
        } else {
            self.flags |= OTHER_TENANT;
        }
    }

    /// Whether the record belongs to tenant `id`; for the default tenant
    /// without touching the tenant id.
    #[inline]
    pub fn in_tenant(&self, id: TenantId) -> bool {
        if id == DEFAULT_TENANT_ID {
            self.flags & OTHER_TENANT == 0
        } else {
            self.tenant == id
        }
    }

    /// The key's bytes (without its tenant).
    #[inline]
    pub fn key_bytes(&self) -> &[u8] {
        match self.key_len {
            LONG_KEY => self.rare_long_key().as_bytes(),
            n => &self.key_bytes[..n as usize],
        }
    }

    fn rare_long_key(&self) -> &str {
        self.rare
            .as_ref()
            .and_then(|r| r.long_key.as_deref())
            .expect("a long key lives in the rare part")
    }

    /// The key (without its tenant), for the operations that return keys.
    pub fn key_str(&self) -> &str {
        match self.key_len {
            LONG_KEY => self.rare_long_key(),
            n => std::str::from_utf8(&self.key_bytes[..n as usize])
                .expect("an inline key is copied from a str"),
        }
    }

    #[inline]
    pub fn hard_pin(&self) -> bool {
        self.flags & HARD_PIN != 0
    }

    pub fn set_hard_pin(&mut self, on: bool) {
        if on {
            self.flags |= HARD_PIN;
        } else {
            self.flags &= !HARD_PIN;
        }
    }

    #[inline]
    pub fn group(&self) -> Option<&Arc<Group>> {
        if self.flags & HAS_GROUP == 0 {
            return None;
        }
        self.rare.as_ref()?.group.as_ref()
    }

    #[inline]
    pub fn task(&self) -> Option<&Task> {
        self.rare.as_ref()?.task.as_ref()
    }

    /// Starts (`Some`) or ends (`None`) the key's task; returns the one it
    /// replaces. The rare part goes when nothing is left in it.
    pub fn set_task(&mut self, task: Option<Task>) -> Option<Task> {
        let old = match (&mut self.rare, task) {
            (Some(r), t) => std::mem::replace(&mut r.task, t),
            (None, None) => None,
            (None, Some(t)) => {
                self.rare = Some(Box::new(Rare {
                    task: Some(t),
                    ..Rare::default()
                }));
                None
            }
        };
        if self.rare.as_ref().is_some_and(|r| r.is_empty()) {
            self.rare = None;
        }
        old
    }

    #[inline]
    pub fn committed(&self) -> Option<Instant> {
        match self.soft_pin.load(Ordering::Acquire) {
            NO_DEADLINE => None,
            d => Some(d),
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
        match self.group() {
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
        match self.group() {
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
        self.task().is_some_and(|t| t.uses(replica))
    }

    /// The replica whose buffer is block `block` of `segment`, if any.
    pub fn replica_in(&self, segment: SegmentId, block: BlockId) -> Option<&Replica> {
        self.replicas.iter().find(|r| r.is_in(segment, block))
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
