//! Plain value types shared by the master's operations: clients, keys,
//! replica kinds and states, segment specs, replica descriptors and the
//! write configuration.

use crate::error::{Error, Result};
use crate::soft_pin::SoftPinRequest;

/// A client (writer / segment owner). Upstream uses a UUID; here any u64.
pub type ClientId = u64;

/// The tenant used when a caller names none.
pub const DEFAULT_TENANT: &str = "default";

/// A tenant-scoped object key borrowed from the caller. Tenants may not
/// contain NUL, which is what keeps `("a/b","c")` and `("a","b/c")` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key<'a> {
    pub tenant: &'a str,
    pub key: &'a str,
}

impl<'a> Key<'a> {
    /// A key in the default tenant.
    pub const fn new(key: &'a str) -> Self {
        Key {
            tenant: DEFAULT_TENANT,
            key,
        }
    }

    pub const fn scoped(tenant: &'a str, key: &'a str) -> Self {
        Key { tenant, key }
    }

    /// Rejects empty keys and tenants, tenants containing NUL, and either
    /// longer than [`MAX_NAME_BYTES`].
    pub fn validate(&self) -> Result<()> {
        if self.key.is_empty() {
            return Err(Error::invalid("key must not be empty"));
        }
        check_length("key", self.key.len())?;
        validate_name("tenant", self.tenant)
    }
}

impl<'a> From<&'a str> for Key<'a> {
    fn from(key: &'a str) -> Self {
        Key::new(key)
    }
}

/// The longest key, tenant, group or segment name, in bytes. A snapshot
/// stores each with a 32-bit length, so a longer one would make the
/// master's state impossible to snapshot.
pub const MAX_NAME_BYTES: usize = u32::MAX as usize;

fn check_length(what: &str, len: usize) -> Result<()> {
    if len > MAX_NAME_BYTES {
        return Err(Error::invalid(format!(
            "{what} is {len} bytes long; at most {MAX_NAME_BYTES} are allowed"
        )));
    }
    Ok(())
}

/// Names (tenants, groups, segments) are non-empty, NUL-free and at most
/// [`MAX_NAME_BYTES`] long.
pub fn validate_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(format!("{what} must not be empty")));
    }
    check_length(what, name.len())?;
    if name.contains('\0') {
        return Err(Error::invalid(format!("{what} must not contain NUL")));
    }
    Ok(())
}

/// Where a replica lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ReplicaKind {
    /// A buffer in a memory segment.
    Memory = 0,
    /// A buffer in a second-pool segment (upstream NOF_SSD).
    NofSsd = 1,
    /// A file on a client's local disk; source of promotion.
    LocalDisk = 2,
}

impl ReplicaKind {
    pub fn from_raw(v: u32) -> Option<Self> {
        match v {
            0 => Some(ReplicaKind::Memory),
            1 => Some(ReplicaKind::NofSsd),
            2 => Some(ReplicaKind::LocalDisk),
            _ => None,
        }
    }
}

/// Whether a replica's data is written yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReplicaStatus {
    Processing = 0,
    Complete = 1,
}

/// Which replicas an End or Revoke targets. `All` is MEMORY ∪ NOF_SSD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReplicaSelector {
    Memory = 0,
    NofSsd = 1,
    All = 2,
}

impl ReplicaSelector {
    pub fn from_raw(v: u32) -> Option<Self> {
        match v {
            0 => Some(ReplicaSelector::Memory),
            1 => Some(ReplicaSelector::NofSsd),
            2 => Some(ReplicaSelector::All),
            _ => None,
        }
    }

    #[inline]
    pub fn matches(self, kind: ReplicaKind) -> bool {
        match self {
            ReplicaSelector::Memory => kind == ReplicaKind::Memory,
            ReplicaSelector::NofSsd => kind == ReplicaKind::NofSsd,
            ReplicaSelector::All => kind != ReplicaKind::LocalDisk,
        }
    }
}

/// The pool a segment belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Pool {
    Memory = 0,
    NofSsd = 1,
}

impl Pool {
    pub fn from_raw(v: u32) -> Option<Self> {
        match v {
            0 => Some(Pool::Memory),
            1 => Some(Pool::NofSsd),
            _ => None,
        }
    }

    pub fn replica_kind(self) -> ReplicaKind {
        match self {
            Pool::Memory => ReplicaKind::Memory,
            Pool::NofSsd => ReplicaKind::NofSsd,
        }
    }
}

/// Dense per-master segment number (stable while the segment is mounted).
pub type SegmentId = u32;

/// A segment a client mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentSpec {
    pub name: String,
    pub base: u64,
    pub size: u64,
    pub pool: Pool,
}

/// Where a replica's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// `size` bytes at `address` inside segment `segment`.
    Buffer {
        segment: SegmentId,
        address: u64,
        size: u64,
    },
    /// A file held by the client that registered it.
    LocalDisk { client: ClientId, size: u64 },
}

/// One replica as the master reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplicaDescriptor {
    pub id: u64,
    pub kind: ReplicaKind,
    pub status: ReplicaStatus,
    pub location: Location,
}

/// The write configuration of Put/Upsert (upstream `ReplicateConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteConfig {
    /// MEMORY replicas to allocate, at most [`MAX_REPLICAS_PER_POOL`].
    pub memory_replicas: u32,
    /// Second-pool (NOF_SSD) replicas to allocate, at most
    /// [`MAX_REPLICAS_PER_POOL`].
    pub nof_ssd_replicas: u32,
    /// Never evicted. Taken from the request by a PutStart and by an
    /// Upsert's case A (a new object, or one whose write was preempted with
    /// nothing COMPLETE left: it can clear a hard pin); kept by case B (in
    /// place); OR-ed in by case C (another size, or the same size when only
    /// LOCAL_DISK replicas are COMPLETE). docs/CONTRACT.md §3.
    pub hard_pin: bool,
    /// Segments to try first, in order.
    pub preferred_segments: Vec<String>,
    /// The explicit soft-pin action and optional request TTL.
    pub soft_pin: SoftPinRequest,
    /// Group to join; fixed at creation. `None` on an Upsert of an existing
    /// object keeps its group; naming another is `INVALID_PARAMS`.
    pub group: Option<String>,
}

impl Default for WriteConfig {
    fn default() -> Self {
        WriteConfig {
            memory_replicas: 1,
            nof_ssd_replicas: 0,
            hard_pin: false,
            preferred_segments: Vec::new(),
            soft_pin: SoftPinRequest::default(),
            group: None,
        }
    }
}

/// The most bytes that may be mounted at once, both pools together
/// (`INT64_MAX`): every byte gauge the master keeps (capacity, allocated,
/// discarded) then fits a signed 64-bit counter and never wraps.
pub const MAX_MOUNTED_BYTES: u64 = i64::MAX as u64;

/// The most replicas one write may request in each pool. Replicas of one
/// object go to distinct segments, so a request is only meaningful up to the
/// segments a pool can hold; the bound keeps a caller-supplied count from
/// sizing an allocation (or reserving ids) unchecked.
pub const MAX_REPLICAS_PER_POOL: u32 = 1024;

impl WriteConfig {
    /// The replica-count rules of a write request: at least one replica in
    /// all, at most [`MAX_REPLICAS_PER_POOL`] per pool (`INVALID_PARAMS`
    /// naming the field).
    pub fn check_replica_counts(&self) -> Result<()> {
        for (field, n) in [
            ("memory_replicas", self.memory_replicas),
            ("nof_ssd_replicas", self.nof_ssd_replicas),
        ] {
            if n > MAX_REPLICAS_PER_POOL {
                return Err(Error::invalid(format!(
                    "{field} {n} exceeds the maximum of {MAX_REPLICAS_PER_POOL} replicas per pool"
                )));
            }
        }
        if self.memory_replicas == 0 && self.nof_ssd_replicas == 0 {
            return Err(Error::invalid(
                "no replicas requested: at least one replica is needed",
            ));
        }
        Ok(())
    }

    pub fn with_soft_pin(mut self, req: SoftPinRequest) -> Self {
        self.soft_pin = req;
        self
    }

    pub fn with_group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }
}

/// What a Start returns: the staged replicas and the write's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedWrite {
    pub replicas: Vec<ReplicaDescriptor>,
    pub token: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn names_longer_than_a_snapshot_can_hold_are_invalid_params() {
        // A snapshot stores each name with a u32 length.
        let e = check_length("group", MAX_NAME_BYTES + 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert_eq!(
            e.message(),
            "group is 4294967296 bytes long; at most 4294967295 are allowed"
        );
        check_length("group", MAX_NAME_BYTES).unwrap();
    }
}
