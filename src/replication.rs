//! Copy, move, promotion and LOCAL_DISK replicas through the C ABI. None of
//! them is a soft-pin activation point. One task (copy, move or promotion)
//! runs per key at a time; its Start stages PROCESSING targets that its End
//! completes and its Revoke frees.

// The C signatures are flat by design (no structs of pointers).
#![allow(clippy::too_many_arguments)]

use super::error::mooncake_meta_error;
use super::input::{self, bool01, Out};
use super::master::{key, mooncake_meta_master, with_master};
use super::replica::{mooncake_meta_replica, write_bounded, ReplicaArray};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::Result;
use mooncake_meta_core::types::Key;
use mooncake_meta_core::Master;
use std::os::raw::{c_char, c_int};

/// Which task an End/Revoke finishes.
#[derive(Clone, Copy)]
enum Task {
    CopyEnd,
    CopyRevoke,
    MoveEnd,
    MoveRevoke,
}

fn finish(master: &Master, k: Key<'_>, which: Task) -> Result<()> {
    match which {
        Task::CopyEnd => master.copy_end(k),
        Task::CopyRevoke => master.copy_revoke(k),
        Task::MoveEnd => master.move_end(k),
        Task::MoveRevoke => master.move_revoke(k),
    }
}

/// Starts copying a key's data to each of the `segment_count` named
/// segments (NUL-terminated UTF-8 names, at least one, none already holding
/// a replica of the object). The PROCESSING targets go to
/// `out_replicas[0 .. *out_len]`, one per segment in order. `cap <
/// segment_count` is `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len` =
/// `segment_count`, after the checks of the request and before anything is
/// allocated (nothing changed). Errors:
/// UNAVAILABLE_IN_CURRENT_STATUS on a standby, OBJECT_NOT_FOUND, OBJECT_HAS_REPLICATION_TASK, REPLICA_IS_NOT_READY or
/// REPLICA_NOT_FOUND (no COMPLETE buffer replica to read), SEGMENT_NOT_FOUND,
/// INVALID_PARAMS (a segment named twice or already holding a replica),
/// NO_AVAILABLE_HANDLE (no room; nothing is allocated),
/// UNAVAILABLE_IN_CURRENT_STATUS (a master out of ids, docs/CONTRACT.md
/// section 6).
///
/// Ownership: nothing is transferred; names are only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `segments` NULL (count 0) or valid for reading `segment_count`
/// pointers to NUL-terminated strings; `out_replicas` NULL or valid for
/// writing `cap` replicas; `out_len` valid for writing a `size_t`; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_copy_start(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    segments: *const *const c_char,
    segment_count: usize,
    out_replicas: *mut mooncake_meta_replica,
    cap: usize,
    out_len: *mut usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_copy_start", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let targets = input::c_str_array(segments, segment_count, "segments")?;
            let out = ReplicaArray::new(out_replicas, cap, "out_replicas")?;
            let out_len = Out::new(out_len, "out_len")?;
            // BUFFER_TOO_SMALL after the request's checks (a standby, the key,
            // the task, the segments), nothing changed.
            write_bounded(
                &out,
                out_len,
                master.copy_start_bounded(k, &targets, cap)?,
                "out_replicas",
            )
        })
    }
}

/// Completes the key's copy: its targets become COMPLETE. No copy running
/// -> `MOONCAKE_META_OBJECT_NO_REPLICATION_TASK`; the source or a target
/// gone (segment unmounted) -> `MOONCAKE_META_REPLICA_IS_GONE` (the copy is
/// abandoned, surviving targets freed).
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_copy_end(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_copy_end", m, err, |master| {
            finish(
                master,
                key(tenant, tenant_len, key_ptr, key_len)?,
                Task::CopyEnd,
            )
        })
    }
}

/// Abandons the key's copy: its targets are freed. No copy running ->
/// `MOONCAKE_META_OBJECT_NO_REPLICATION_TASK`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_copy_end`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_copy_revoke(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_copy_revoke", m, err, |master| {
            finish(
                master,
                key(tenant, tenant_len, key_ptr, key_len)?,
                Task::CopyRevoke,
            )
        })
    }
}

/// Starts moving the key's COMPLETE replica on segment `from` to segment
/// `to` (UTF-8 names given as pointer and length); the PROCESSING target
/// goes to `*out_replica`. No COMPLETE replica on `from` ->
/// `MOONCAKE_META_REPLICA_NOT_FOUND`; otherwise errors as
/// `mooncake_meta_copy_start`.
///
/// Ownership: nothing is transferred; names are only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr`/`from`/`to` NULL or valid
/// for their lengths; `out_replica` valid for writing one replica; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_move_start(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    from: *const c_char,
    from_len: usize,
    to: *const c_char,
    to_len: usize,
    out_replica: *mut mooncake_meta_replica,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_move_start", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let from = input::string(from, from_len, "from")?;
            let to = input::string(to, to_len, "to")?;
            let out = Out::new(out_replica, "out_replica")?;
            out.write((&master.move_start(k, from, to)?).into());
            Ok(())
        })
    }
}

/// Completes the key's move: the target becomes COMPLETE and the source is
/// let go (its buffer is held until the release timeout). Errors as
/// `mooncake_meta_copy_end`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_copy_end`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_move_end(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_move_end", m, err, |master| {
            finish(
                master,
                key(tenant, tenant_len, key_ptr, key_len)?,
                Task::MoveEnd,
            )
        })
    }
}

/// Abandons the key's move: the target is freed, the source stays. No
/// move running -> `MOONCAKE_META_OBJECT_NO_REPLICATION_TASK`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_copy_end`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_move_revoke(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_move_revoke", m, err, |master| {
            finish(
                master,
                key(tenant, tenant_len, key_ptr, key_len)?,
                Task::MoveRevoke,
            )
        })
    }
}

/// Starts promoting an object from its COMPLETE LOCAL_DISK replica back
/// into memory: a PROCESSING memory replica is staged (on the first of the
/// `preferred_count` preferred segments with room, else anywhere) and goes
/// to `*out_replica`. No COMPLETE LOCAL_DISK replica ->
/// `MOONCAKE_META_REPLICA_NOT_FOUND`; a memory replica already there, or
/// a master out of ids (docs/CONTRACT.md section 6) ->
/// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`; a task running ->
/// `MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK`; no room ->
/// `MOONCAKE_META_NO_AVAILABLE_HANDLE`.
///
/// Ownership: nothing is transferred; names are only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `preferred` NULL (count 0) or valid for reading
/// `preferred_count` pointers to NUL-terminated strings; `out_replica`
/// valid for writing one replica; `err` NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_promotion_start(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    preferred: *const *const c_char,
    preferred_count: usize,
    out_replica: *mut mooncake_meta_replica,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_promotion_start", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let preferred: Vec<String> =
                input::c_str_array(preferred, preferred_count, "preferred")?
                    .into_iter()
                    .map(str::to_owned)
                    .collect();
            let out = Out::new(out_replica, "out_replica")?;
            out.write((&master.promotion_start(k, &preferred)?).into());
            Ok(())
        })
    }
}

/// Ends the key's promotion: `success` 1 completes the staged memory
/// replica, 0 frees it (any other value is `MOONCAKE_META_INVALID_PARAMS`).
/// No promotion running -> `MOONCAKE_META_OBJECT_NO_REPLICATION_TASK`; the
/// staged replica gone (its segment unmounted) -> with `success` 1
/// `MOONCAKE_META_REPLICA_IS_GONE`, with 0 OK (what it would free is gone
/// already).
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_copy_end`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_promotion_end(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    success: c_int,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_promotion_end", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            master.promotion_end(k, bool01(success, "success")?)
        })
    }
}

/// Registers a COMPLETE LOCAL_DISK replica of `size` bytes held by
/// `client`, creating the object if it is absent; the replica goes to
/// `*out_replica`. Idempotent per client (the same replica again). Size
/// 0 or not the object's size -> `MOONCAKE_META_INVALID_PARAMS`; a write in
/// flight, or a master out of ids (docs/CONTRACT.md section 6) ->
/// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `out_replica` valid for writing one replica; `err` NULL or
/// valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_add_local_disk_replica(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    size: u64,
    out_replica: *mut mooncake_meta_replica,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_add_local_disk_replica", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let out = Out::new(out_replica, "out_replica")?;
            out.write((&master.add_local_disk_replica(client, k, size)?).into());
            Ok(())
        })
    }
}
