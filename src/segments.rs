//! Segments through the C ABI: mount, unmount (one segment or all of a
//! client's, with a size-versioned report of what went), and the name of a
//! segment id.

use super::error::mooncake_meta_error;
use super::input::{self, Field, Out};
use super::master::{mooncake_meta_master, with_master};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use mooncake_meta_core::types::{Pool, SegmentSpec};
use mooncake_meta_core::UnmountReport;
use std::marker::PhantomData;
use std::mem::{offset_of, size_of};
use std::os::raw::c_char;
use std::ptr;

/// `pool` of `mooncake_meta_mount_segment`: the memory pool.
pub const MOONCAKE_META_POOL_MEMORY: u32 = 0;
/// `pool` of `mooncake_meta_mount_segment`: the second pool (NOF_SSD).
pub const MOONCAKE_META_POOL_NOF_SSD: u32 = 1;

/// The most bytes that may be mounted at once, both pools together
/// (`INT64_MAX`); a mount that would pass it is
/// `MOONCAKE_META_INVALID_PARAMS`.
pub const MOONCAKE_META_MAX_MOUNTED_BYTES: u64 = 9_223_372_036_854_775_807;
const _: () = assert!(MOONCAKE_META_MAX_MOUNTED_BYTES == mooncake_meta_core::MAX_MOUNTED_BYTES);

const _: () = {
    assert!(Pool::Memory as u32 == MOONCAKE_META_POOL_MEMORY);
    assert!(Pool::NofSsd as u32 == MOONCAKE_META_POOL_NOF_SSD);
};

/// What an unmount dropped. Size-versioned and append-only: set
/// `struct_size = sizeof(mooncake_meta_unmount_report)` before the call;
/// the library writes `min(struct_size, its own size)` bytes (fields a newer
/// header adds are left untouched by an older library) and never changes
/// `struct_size`. A `struct_size` below the first version's (24), above
/// 4096 (taken for an uninitialised field, not a future version), or not a
/// multiple of 8 (no version's `sizeof`: the library would write part of a
/// field) is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED`, checked before
/// anything is unmounted.
///
/// Ownership: owned by the caller; the library only writes it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct mooncake_meta_unmount_report {
    /// Size in bytes of the caller's struct; set by the caller, read only.
    pub struct_size: u32,
    /// Always 0.
    pub reserved: u32,
    /// Replicas that lived on the unmounted segment(s).
    pub replicas_dropped: u64,
    /// Objects erased because no replica was left.
    pub objects_erased: u64,
}

/// Bytes of the first released layout.
const UNMOUNT_REPORT_V1_SIZE: usize =
    offset_of!(mooncake_meta_unmount_report, objects_erased) + size_of::<u64>();
const _: () = assert!(UNMOUNT_REPORT_V1_SIZE == 24);

/// An optional size-versioned output struct (`struct_size` first), checked
/// before the call acts and written by [`SizedOut::write`] only on success.
pub(crate) struct SizedOut<'a, T> {
    ptr: Option<ptr::NonNull<T>>,
    size: usize,
    _borrow: PhantomData<&'a mut T>,
}

impl<T> SizedOut<'_, T> {
    /// NULL -> an output nobody wants; else the caller's `struct_size` (the
    /// first `u32`) must pass [`crate::sized_out::check_size`], as every
    /// size-versioned struct's.
    ///
    /// # Safety
    /// A non-NULL `ptr` must be valid for reading a `u32` and for writing
    /// `struct_size` bytes.
    pub(crate) unsafe fn optional(ptr: *mut T, v1: usize, arg: &str) -> Result<Self> {
        let Some(nn) = ptr::NonNull::new(ptr) else {
            return Ok(SizedOut {
                ptr: None,
                size: 0,
                _borrow: PhantomData,
            });
        };
        // SAFETY: every version starts with the caller-set u32 struct_size.
        let size = unsafe { ptr.cast::<u32>().read() } as usize;
        crate::sized_out::check_size::<T>(size, v1, Field(arg, "struct_size"))?;
        Ok(SizedOut {
            ptr: Some(nn),
            size,
            _borrow: PhantomData,
        })
    }

    /// Copies the first `min(struct_size, size_of::<T>())` bytes of `value`
    /// (whose own `struct_size` must be the caller's, so it is unchanged).
    pub(crate) fn write(self, value: T) {
        if let Some(p) = self.ptr {
            let n = self.size.min(size_of::<T>());
            // SAFETY: the caller declared `struct_size` writable bytes, and
            // `value` is plain old data of at least `n` bytes.
            unsafe {
                ptr::copy_nonoverlapping(
                    ptr::addr_of!(value).cast::<u8>(),
                    p.as_ptr().cast::<u8>(),
                    n,
                )
            };
        }
    }

    fn caller_size(&self) -> u32 {
        self.size as u32
    }
}

fn report(out: SizedOut<'_, mooncake_meta_unmount_report>, r: UnmountReport) {
    let struct_size = out.caller_size();
    out.write(mooncake_meta_unmount_report {
        struct_size,
        reserved: 0,
        replicas_dropped: r.replicas_dropped,
        objects_erased: r.objects_erased,
    });
}

/// Mounts a segment of `size` bytes at `base`, owned by `client`, in pool
/// `pool` (`MOONCAKE_META_POOL_*`; another value is
/// `MOONCAKE_META_INVALID_PARAMS`), and writes its id to `*out_segment_id`.
/// `name` is UTF-8, non-empty and NUL-free. Mounting an identical segment
/// again is OK (same id); the same name with another base, size, pool or
/// owner is `MOONCAKE_META_SEGMENT_ALREADY_EXISTS`; a range over bytes of a
/// segment `client` has mounted in the same pool is
/// `MOONCAKE_META_INVALID_PARAMS`. A mount made while an unmount runs
/// waits for it.
///
/// Ownership: nothing is transferred; `name` is copied.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `name` NULL or valid for `name_len` bytes;
/// `out_segment_id` valid for writing a `uint32_t`; `err` NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_mount_segment(
    m: *const mooncake_meta_master,
    client: u64,
    name: *const c_char,
    name_len: usize,
    base: u64,
    size: u64,
    pool: u32,
    out_segment_id: *mut u32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_mount_segment", m, err, |master| {
            let name = input::string(name, name_len, "name")?;
            let pool = Pool::from_raw(pool).ok_or_else(|| {
                Error::invalid(format!(
                    "pool must be MOONCAKE_META_POOL_MEMORY (0) or MOONCAKE_META_POOL_NOF_SSD (1), got {pool}"
                ))
            })?;
            let out = Out::new(out_segment_id, "out_segment_id")?;
            let spec = SegmentSpec {
                name: name.to_owned(),
                base,
                size,
                pool,
            };
            out.write(master.mount_segment(client, &spec)?);
            Ok(())
        })
    }
}

/// Unmounts the segment `name` owned by `client`: every replica on it is
/// dropped and objects left without a replica are erased. Unknown name ->
/// `MOONCAKE_META_SEGMENT_NOT_FOUND`; another owner ->
/// `MOONCAKE_META_ILLEGAL_CLIENT`. When `out_report` is not NULL it
/// receives the counts (see `mooncake_meta_unmount_report`).
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `name` NULL or valid for `name_len` bytes;
/// `out_report` NULL or valid for writing its `struct_size` bytes; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_unmount_segment(
    m: *const mooncake_meta_master,
    client: u64,
    name: *const c_char,
    name_len: usize,
    out_report: *mut mooncake_meta_unmount_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_unmount_segment", m, err, |master| {
            let name = input::string(name, name_len, "name")?;
            let out = SizedOut::optional(out_report, UNMOUNT_REPORT_V1_SIZE, "out_report")?;
            report(out, master.unmount_segment(client, name)?);
            Ok(())
        })
    }
}

/// Unmounts every segment owned by `client` (none is OK: zero counts).
/// When `out_report` is not NULL it receives the summed counts.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out_report` NULL or valid for writing its
/// `struct_size` bytes; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_unmount_client(
    m: *const mooncake_meta_master,
    client: u64,
    out_report: *mut mooncake_meta_unmount_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_unmount_client", m, err, |master| {
            let out = SizedOut::optional(out_report, UNMOUNT_REPORT_V1_SIZE, "out_report")?;
            report(out, master.unmount_client(client)?);
            Ok(())
        })
    }
}

/// Copies the name of mounted segment `segment_id` into `buf`: its length
/// in bytes goes to `*out_len`; the `*out_len` bytes are written, followed
/// by a NUL when `cap > *out_len` (names never contain NUL, so with
/// `cap >= *out_len + 1` the result is a C string). `cap < *out_len` is
/// `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len` = the length and `buf`
/// untouched; pass `(NULL, 0)` to ask for the length. Unknown id ->
/// `MOONCAKE_META_SEGMENT_NOT_FOUND`.
///
/// Ownership: `buf` is owned by the caller.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `buf` NULL or valid for writing `cap` bytes;
/// `out_len` valid for writing a `size_t`; `err` NULL or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_segment_name(
    m: *const mooncake_meta_master,
    segment_id: u32,
    buf: *mut c_char,
    cap: usize,
    out_len: *mut usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_segment_name", m, err, |master| {
            crate::bytes::check_buffer_args(buf.cast(), cap, out_len, "buf")?;
            let out_len = Out::new(out_len, "out_len")?;
            let name = master.segment_name(segment_id).ok_or_else(|| {
                Error::new(
                    ErrorKind::SegmentNotFound,
                    format!("no segment with id {segment_id} is mounted"),
                )
            })?;
            let n = name.len();
            out_len.write(n);
            if cap < n {
                return Err(Error::new(
                    ErrorKind::BufferTooSmall,
                    format!("buf has room for {cap} bytes but the name has {n}"),
                ));
            }
            if n > 0 {
                ptr::copy_nonoverlapping(name.as_ptr(), buf.cast::<u8>(), n);
            }
            if cap > n {
                buf.add(n).write(0);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_out_writes_only_the_callers_prefix() {
        // An older caller that knows only struct_size and reserved (8 bytes)
        // is rejected; a v1 caller gets every field.
        let mut r = mooncake_meta_unmount_report {
            struct_size: 8,
            reserved: 0,
            replicas_dropped: 0,
            objects_erased: 0,
        };
        let e = unsafe { SizedOut::optional(&mut r, UNMOUNT_REPORT_V1_SIZE, "out_report") }
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::StructSizeUnsupported);
        assert!(
            e.message().contains("struct_size 8 is below"),
            "{}",
            e.message()
        );
        // Between two fields' ends: no version's sizeof.
        r.struct_size = 28;
        let e = unsafe { SizedOut::optional(&mut r, UNMOUNT_REPORT_V1_SIZE, "out_report") }
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::StructSizeUnsupported);
        r.struct_size = 24;
        let out =
            unsafe { SizedOut::optional(&mut r, UNMOUNT_REPORT_V1_SIZE, "out_report") }.unwrap();
        report(
            out,
            UnmountReport {
                replicas_dropped: 3,
                objects_erased: 2,
            },
        );
        assert_eq!(
            (r.struct_size, r.replicas_dropped, r.objects_erased),
            (24, 3, 2)
        );
    }

    /// A newer caller's struct: ours plus a field this library does not know.
    #[repr(C)]
    struct Newer {
        base: mooncake_meta_unmount_report,
        future: u64,
    }

    #[test]
    fn sized_out_leaves_a_newer_callers_tail_alone() {
        let mut n = Newer {
            base: mooncake_meta_unmount_report {
                struct_size: size_of::<Newer>() as u32,
                reserved: 0,
                replicas_dropped: 0,
                objects_erased: 0,
            },
            future: 77,
        };
        let out = unsafe { SizedOut::optional(&mut n.base, UNMOUNT_REPORT_V1_SIZE, "r") }.unwrap();
        report(
            out,
            UnmountReport {
                replicas_dropped: 1,
                objects_erased: 1,
            },
        );
        assert_eq!(n.base.struct_size as usize, size_of::<Newer>());
        assert_eq!((n.base.replicas_dropped, n.future), (1, 77));
    }
}
