//! Soft-pin introspection through the C ABI: a key's committed deadline and
//! pending intent, the deadline index's sizes, and the invariant check
//! (docs/CONTRACT.md §4.2, §4.8, §8). None of these changes any state.

use super::error::mooncake_meta_error;
use super::input::Out;
use super::master::{key, mooncake_meta_master, with_master};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::{Error, ErrorKind};
use std::os::raw::{c_char, c_int};

/// The committed soft-pin deadline of a key: `*out_has` = 1 and
/// `*out_deadline` = the deadline (milliseconds since the epoch; it may be
/// stored-but-expired until cleanup or eviction normalises it), or
/// `*out_has` = 0 and `*out_deadline` = 0 when none is committed. A missing
/// key is `MOONCAKE_META_OBJECT_NOT_FOUND`. Grants no lease; reads no clock.
///
/// Ownership: nothing is transferred; strings are only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `out_has` valid for writing an `int`, `out_deadline` for a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_soft_pin_deadline(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    out_has: *mut c_int,
    out_deadline: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_soft_pin_deadline", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let has = Out::new(out_has, "out_has")?;
            let deadline = Out::new(out_deadline, "out_deadline")?;
            let d = master.soft_pin_deadline(k)?;
            has.write(d.is_some() as c_int);
            deadline.write(d.unwrap_or(0));
            Ok(())
        })
    }
}

/// Writes 1 to `*out_pending` if the key's write in flight carries a soft-pin
/// intent that can still commit (docs/CONTRACT.md section 4.4), else 0. A missing key is
/// `MOONCAKE_META_OBJECT_NOT_FOUND`.
///
/// Ownership: nothing is transferred; strings are only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `out_pending` valid for writing an `int`; `err` NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_has_pending_soft_pin(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    out_pending: *mut c_int,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_has_pending_soft_pin", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let out = Out::new(out_pending, "out_pending")?;
            out.write(master.has_pending_soft_pin(k)? as c_int);
            Ok(())
        })
    }
}

/// The deadline index's sizes: `*out_heap` = heap entries (stale ones
/// included), `*out_live` = live registrations (one per object with a
/// registered deadline). docs/CONTRACT.md section 4.8 bounds the heap by
/// `max(4096, 2 * live)`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`; the
/// two numbers are read together under the index lock.
///
/// # Safety
/// `m` NULL or a live master; `out_heap` and `out_live` valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_index_sizes(
    m: *const mooncake_meta_master,
    out_heap: *mut u64,
    out_live: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_index_sizes", m, err, |master| {
            let heap = Out::new(out_heap, "out_heap")?;
            let live = Out::new(out_live, "out_live")?;
            let (h, l) = master.index_sizes();
            heap.write(h as u64);
            live.write(l as u64);
            Ok(())
        })
    }
}

/// Checks every invariant of docs/CONTRACT.md section 8 (gauge, index registrations, heap
/// bound, pending, allocated bytes, buffer overlap). A violation is
/// `MOONCAKE_META_INTERNAL_ERROR` (a library bug) whose message describes
/// it. Takes every lock, so it is meant for tests and diagnostics, not hot
/// paths.
///
/// Ownership: nothing is transferred.
/// Thread safety: safe to call concurrently with any call but `_free`, and
/// it sees one consistent cut of the master; but the answer is only
/// meaningful on a quiescent master: a cleanup cycle in flight on another
/// thread (including the maintenance thread) may be reported as a
/// violation.
///
/// # Safety
/// `m` NULL or a live master; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_check_invariants(
    m: *const mooncake_meta_master,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_check_invariants", m, err, |master| {
            master.check_invariants().map_err(|violation| {
                Error::new(
                    ErrorKind::Internal,
                    format!("invariant violated: {violation}"),
                )
            })
        })
    }
}
