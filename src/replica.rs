//! The replica descriptor every replica-returning call fills, its kind and
//! status constants, and the caller-owned array it is written to under the
//! BUFFER_TOO_SMALL convention: `(array, capacity)` plus `size_t *out_len`;
//! too small -> `MOONCAKE_META_BUFFER_TOO_SMALL`, `*out_len` = the count
//! needed, nothing else written and no side effect.

use super::input::Out;
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use mooncake_meta_core::types::{Location, ReplicaDescriptor, ReplicaKind, ReplicaStatus};
use mooncake_meta_core::Bounded;
use std::fmt::Display;
use std::marker::PhantomData;
use std::mem::{offset_of, size_of};

/// `kind`: a buffer in a memory segment.
pub const MOONCAKE_META_REPLICA_MEMORY: u32 = 0;
/// `kind`: a buffer in a second-pool (NOF_SSD) segment.
pub const MOONCAKE_META_REPLICA_NOF_SSD: u32 = 1;
/// `kind`: a file on a client's local disk (`client` says whose).
pub const MOONCAKE_META_REPLICA_LOCAL_DISK: u32 = 2;

/// `status`: allocated, data not written yet.
pub const MOONCAKE_META_REPLICA_PROCESSING: u32 = 0;
/// `status`: data written; readable.
pub const MOONCAKE_META_REPLICA_COMPLETE: u32 = 1;

/// `segment_id` of a LOCAL_DISK replica, which lives in no segment.
pub const MOONCAKE_META_NO_SEGMENT: u32 = u32::MAX;

const _: () = {
    assert!(ReplicaKind::Memory as u32 == MOONCAKE_META_REPLICA_MEMORY);
    assert!(ReplicaKind::NofSsd as u32 == MOONCAKE_META_REPLICA_NOF_SSD);
    assert!(ReplicaKind::LocalDisk as u32 == MOONCAKE_META_REPLICA_LOCAL_DISK);
    assert!(ReplicaStatus::Processing as u32 == MOONCAKE_META_REPLICA_PROCESSING);
    assert!(ReplicaStatus::Complete as u32 == MOONCAKE_META_REPLICA_COMPLETE);
};

/// One replica as the master reports it. Fixed layout (48 bytes), never
/// extended: new information would come through a new function.
///
/// A MEMORY or NOF_SSD replica is `size` bytes at `address` in segment
/// `segment_id` (`client` is 0); a LOCAL_DISK replica is held by `client`
/// (`segment_id` is `MOONCAKE_META_NO_SEGMENT`, `address` 0).
///
/// Ownership: filled by the library into arrays the caller owns.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct mooncake_meta_replica {
    /// Replica id, unique within the master.
    pub id: u64,
    /// One of `MOONCAKE_META_REPLICA_MEMORY`, `_NOF_SSD`, `_LOCAL_DISK`.
    pub kind: u32,
    /// `MOONCAKE_META_REPLICA_PROCESSING` or `MOONCAKE_META_REPLICA_COMPLETE`.
    pub status: u32,
    /// Segment of a buffer replica; `MOONCAKE_META_NO_SEGMENT` for LOCAL_DISK.
    pub segment_id: u32,
    /// Always 0.
    pub reserved: u32,
    /// Address of a buffer replica; 0 for LOCAL_DISK.
    pub address: u64,
    /// Size of the object in bytes.
    pub size: u64,
    /// Client holding a LOCAL_DISK replica; 0 for buffer replicas.
    pub client: u64,
}

const _: () = {
    type R = mooncake_meta_replica;
    assert!(offset_of!(R, id) == 0);
    assert!(offset_of!(R, kind) == 8);
    assert!(offset_of!(R, status) == 12);
    assert!(offset_of!(R, segment_id) == 16);
    assert!(offset_of!(R, reserved) == 20);
    assert!(offset_of!(R, address) == 24);
    assert!(offset_of!(R, size) == 32);
    assert!(offset_of!(R, client) == 40);
    assert!(size_of::<R>() == 48);
};

impl From<&ReplicaDescriptor> for mooncake_meta_replica {
    fn from(d: &ReplicaDescriptor) -> Self {
        let (segment_id, address, size, client) = match d.location {
            Location::Buffer {
                segment,
                address,
                size,
            } => (segment, address, size, 0),
            Location::LocalDisk { client, size } => (MOONCAKE_META_NO_SEGMENT, 0, size, client),
        };
        mooncake_meta_replica {
            id: d.id,
            kind: d.kind as u32,
            status: d.status as u32,
            segment_id,
            reserved: 0,
            address,
            size,
            client,
        }
    }
}

/// A caller-owned array of `cap` replicas, checked up front and written
/// only by [`ReplicaArray::write`]. `(NULL, 0)` is an empty array.
pub(crate) struct ReplicaArray<'a> {
    ptr: *mut mooncake_meta_replica,
    cap: usize,
    _borrow: PhantomData<&'a mut [mooncake_meta_replica]>,
}

impl ReplicaArray<'_> {
    /// # Safety
    /// A non-NULL `ptr` must be valid for writing `cap` replicas.
    pub(crate) unsafe fn new(
        ptr: *mut mooncake_meta_replica,
        cap: usize,
        arg: impl Display,
    ) -> Result<Self> {
        if ptr.is_null() && cap > 0 {
            return Err(Error::new(
                ErrorKind::NullArgument,
                format!("{arg} is NULL but its capacity is {cap}"),
            ));
        }
        if cap > isize::MAX as usize / size_of::<mooncake_meta_replica>() {
            return Err(Error::invalid(format!(
                "{arg}: capacity {cap} is too large"
            )));
        }
        Ok(ReplicaArray {
            ptr,
            cap,
            _borrow: PhantomData,
        })
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// Writes `replicas` starting at entry `at`.
    ///
    /// # Panics
    /// If they do not fit (callers check the capacity first).
    pub(crate) fn write(&self, at: usize, replicas: &[ReplicaDescriptor]) {
        assert!(
            at.checked_add(replicas.len())
                .is_some_and(|end| end <= self.cap),
            "replica array overflow: {} at {at} with capacity {}",
            replicas.len(),
            self.cap
        );
        for (i, d) in replicas.iter().enumerate() {
            // SAFETY: in bounds (asserted above); validity promised at `new`.
            unsafe { self.ptr.add(at + i).write(d.into()) };
        }
    }
}

/// Writes a bounded answer of replicas: all of them and their number, or,
/// when `out` (named `arg`) is too small for them, only the number needed
/// to `out_len` and `BUFFER_TOO_SMALL`.
pub(crate) fn write_bounded(
    out: &ReplicaArray<'_>,
    out_len: Out<'_, usize>,
    answer: Bounded<Vec<ReplicaDescriptor>>,
    arg: impl Display,
) -> Result<()> {
    match answer {
        Bounded::Fits(replicas) => {
            out.write(0, &replicas);
            out_len.write(replicas.len());
            Ok(())
        }
        Bounded::TooSmall(n) => {
            out_len.write(n);
            Err(too_small(arg, n, out.cap))
        }
    }
}

/// `BUFFER_TOO_SMALL` for `arg`: `needed` entries, `cap` given.
pub(crate) fn too_small(arg: impl Display, needed: usize, cap: usize) -> Error {
    Error::new(
        ErrorKind::BufferTooSmall,
        format!("{arg} has room for {cap} but {needed} are needed"),
    )
}

/// The BUFFER_TOO_SMALL convention for a call that returns at most
/// `needed` replicas: if `out` is smaller, writes `needed` to `out_len` and
/// returns the error. Nothing else is written.
pub(crate) fn require<'a>(
    out: &ReplicaArray<'_>,
    out_len: Out<'a, usize>,
    needed: usize,
    arg: impl Display,
) -> Result<Out<'a, usize>> {
    if needed > out.cap() {
        out_len.write(needed);
        return Err(too_small(arg, needed, out.cap()));
    }
    Ok(out_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    fn buffer() -> ReplicaDescriptor {
        ReplicaDescriptor {
            id: 7,
            kind: ReplicaKind::NofSsd,
            status: ReplicaStatus::Complete,
            location: Location::Buffer {
                segment: 3,
                address: 0x1000,
                size: 64,
            },
        }
    }

    #[test]
    fn descriptors_translate_field_by_field() {
        let r = mooncake_meta_replica::from(&buffer());
        assert_eq!(
            r,
            mooncake_meta_replica {
                id: 7,
                kind: MOONCAKE_META_REPLICA_NOF_SSD,
                status: MOONCAKE_META_REPLICA_COMPLETE,
                segment_id: 3,
                reserved: 0,
                address: 0x1000,
                size: 64,
                client: 0,
            }
        );
        let disk = ReplicaDescriptor {
            id: 8,
            kind: ReplicaKind::LocalDisk,
            status: ReplicaStatus::Complete,
            location: Location::LocalDisk {
                client: 42,
                size: 64,
            },
        };
        let r = mooncake_meta_replica::from(&disk);
        assert_eq!(
            (r.segment_id, r.address, r.client, r.kind),
            (
                MOONCAKE_META_NO_SEGMENT,
                0,
                42,
                MOONCAKE_META_REPLICA_LOCAL_DISK
            )
        );
    }

    #[test]
    fn null_array_is_only_valid_when_empty() {
        let a = unsafe { ReplicaArray::new(ptr::null_mut(), 0, "out") }.unwrap();
        assert_eq!(a.cap(), 0);
        let e = unsafe { ReplicaArray::new(ptr::null_mut(), 2, "out") }
            .err()
            .unwrap();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::NullArgument, "out is NULL but its capacity is 2")
        );
    }

    #[test]
    fn require_reports_the_needed_count_only_when_too_small() {
        let mut slots = [mooncake_meta_replica::from(&buffer()); 2];
        let a = unsafe { ReplicaArray::new(slots.as_mut_ptr(), 2, "out") }.unwrap();
        let mut len = 99usize;
        let out_len = unsafe { Out::new(&mut len, "out_len") }.unwrap();
        let e = require(&a, out_len, 3, "out").err().unwrap();
        assert_eq!(e.kind(), ErrorKind::BufferTooSmall);
        assert_eq!(e.message(), "out has room for 2 but 3 are needed");
        assert_eq!(len, 3);
        let mut len = 99usize;
        let out_len = unsafe { Out::new(&mut len, "out_len") }.unwrap();
        assert!(require(&a, out_len, 2, "out").is_ok());
        assert_eq!(len, 99);
    }
}
