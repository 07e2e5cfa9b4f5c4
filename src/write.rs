//! Writes through the C ABI: Put and Upsert Start (extended and legacy
//! configuration), End and Revoke. A Start fills a caller-owned replica
//! array under the BUFFER_TOO_SMALL convention and returns the write token
//! that End/Revoke may name (0 = no token).

// The C signatures are flat by design (no structs of pointers).
#![allow(clippy::too_many_arguments)]

use super::error::mooncake_meta_error;
use super::input::Out;
use super::legacy_config::{mooncake_meta_replicate_config, read_legacy};
use super::master::{key, mooncake_meta_master, with_master};
use super::replica::{mooncake_meta_replica, require, too_small, ReplicaArray};
use super::status::mooncake_meta_status;
use super::write_config::{mooncake_meta_write_config, read_extended};
use mooncake_meta_core::error::{Error, Result};
use mooncake_meta_core::types::{ClientId, ReplicaSelector, WriteConfig};
use mooncake_meta_core::Bounded;
use mooncake_meta_core::Master;
use std::os::raw::c_char;

/// `selector` of End/Revoke: the MEMORY replicas of the write.
pub const MOONCAKE_META_SELECT_MEMORY: u32 = 0;
/// `selector` of End/Revoke: the NOF_SSD replicas of the write.
pub const MOONCAKE_META_SELECT_NOF_SSD: u32 = 1;
/// `selector` of End/Revoke: MEMORY and NOF_SSD replicas.
pub const MOONCAKE_META_SELECT_ALL: u32 = 2;

const _: () = {
    assert!(ReplicaSelector::Memory as u32 == MOONCAKE_META_SELECT_MEMORY);
    assert!(ReplicaSelector::NofSsd as u32 == MOONCAKE_META_SELECT_NOF_SSD);
    assert!(ReplicaSelector::All as u32 == MOONCAKE_META_SELECT_ALL);
};

/// A raw `selector` argument.
pub(crate) fn selector(raw: u32) -> Result<ReplicaSelector> {
    ReplicaSelector::from_raw(raw).ok_or_else(|| {
        Error::invalid(format!(
            "selector must be MOONCAKE_META_SELECT_MEMORY (0), _NOF_SSD (1) or _ALL (2), got {raw}"
        ))
    })
}

/// A raw write token: 0 means none.
pub(crate) fn token(raw: u64) -> Option<u64> {
    (raw != 0).then_some(raw)
}

/// Replicas a write configuration asks for: the capacity a Start needs.
pub(crate) fn requested(cfg: &WriteConfig) -> usize {
    cfg.memory_replicas as usize + cfg.nof_ssd_replicas as usize
}

/// Which Start.
#[derive(Clone, Copy)]
enum Start {
    Put,
    Upsert,
}

/// The raw arguments every Start shares.
struct StartArgs {
    client: ClientId,
    tenant: *const c_char,
    tenant_len: usize,
    key: *const c_char,
    key_len: usize,
    size: u64,
    out_replicas: *mut mooncake_meta_replica,
    cap: usize,
    out_len: *mut usize,
    out_token: *mut u64,
}

/// The body of every Start, after the configuration is read.
///
/// # Safety
/// The pointers in `a` obey the exported functions' contracts.
unsafe fn start(
    master: &Master,
    which: Start,
    a: StartArgs,
    cfg: impl FnOnce() -> Result<WriteConfig>,
) -> Result<()> {
    // SAFETY (whole body): forwarded from the caller.
    let k = unsafe { key(a.tenant, a.tenant_len, a.key, a.key_len) }?;
    let cfg = cfg()?;
    let out = unsafe { ReplicaArray::new(a.out_replicas, a.cap, "out_replicas") }?;
    let out_len = unsafe { Out::new(a.out_len, "out_len") }?;
    let out_token = if a.out_token.is_null() {
        None
    } else {
        Some(unsafe { Out::new(a.out_token, "out_token") }?)
    };
    let (started, out_len) = match which {
        Start::Put => {
            master.validate_write_request(k, a.size, &cfg)?;
            let out_len = require(&out, out_len, requested(&cfg), "out_replicas")?;
            (master.put_start(a.client, k, a.size, &cfg)?, out_len)
        }
        Start::Upsert => match master.upsert_start_bounded(a.client, k, a.size, &cfg, a.cap)? {
            Bounded::Fits(w) => (w, out_len),
            Bounded::TooSmall(n) => {
                out_len.write(n);
                return Err(too_small("out_replicas", n, a.cap));
            }
        },
    };
    out.write(0, &started.replicas);
    out_len.write(started.replicas.len());
    if let Some(t) = out_token {
        t.write(started.token);
    }
    Ok(())
}

/// Starts writing a new object (upstream PutStart) with the extended
/// configuration `cfg` (NULL = defaults: one memory replica, PRESERVE).
/// The staged PROCESSING replicas go to `out_replicas[0 .. *out_len]` and
/// the write token to `*out_token` (when not NULL; never 0).
///
/// `cap` must be at least the replicas requested (`memory_replicas +
/// nof_ssd_replicas`), else `MOONCAKE_META_BUFFER_TOO_SMALL` with
/// `*out_len` = that count and nothing done; the request is validated
/// first, so a bad one gets its own code. Fewer replicas than requested may
/// be placed (memory-only writes are best effort). An object with a
/// COMPLETE replica, or a young write of the key, is
/// `MOONCAKE_META_OBJECT_ALREADY_EXISTS`; one that a copy, move or
/// promotion still holds is `MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK`;
/// no room is `MOONCAKE_META_NO_AVAILABLE_HANDLE`; a master out of ids
/// (docs/CONTRACT.md section 6) is `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`.
///
/// Ownership: nothing is transferred; `cfg` and the key are only read
/// during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `cfg` NULL or a readable config of `cfg->struct_size` bytes;
/// `out_replicas` NULL or valid for writing `cap` replicas; `out_len` valid
/// for writing a `size_t`; `out_token` NULL or valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_put_start(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    size: u64,
    cfg: *const mooncake_meta_write_config,
    out_replicas: *mut mooncake_meta_replica,
    cap: usize,
    out_len: *mut usize,
    out_token: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    let a = StartArgs {
        client,
        tenant,
        tenant_len,
        key: key_ptr,
        key_len,
        size,
        out_replicas,
        cap,
        out_len,
        out_token,
    };
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_put_start", m, err, |master| {
            start(master, Start::Put, a, || read_extended(cfg, "cfg"))
        })
    }
}

/// `mooncake_meta_put_start` with the legacy configuration (upstream
/// `mooncake_replicate_config`; NULL = defaults): `replica_num` memory
/// replicas, `with_soft_pin != 0` = ENABLE with the master's default TTL,
/// `0` = PRESERVE. `cap` must be at least `replica_num`.
///
/// Ownership: nothing is transferred; `cfg` and the key are only read
/// during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_put_start`, with `cfg` NULL or a readable legacy
/// config.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_put_start_legacy(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    size: u64,
    cfg: *const mooncake_meta_replicate_config,
    out_replicas: *mut mooncake_meta_replica,
    cap: usize,
    out_len: *mut usize,
    out_token: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    let a = StartArgs {
        client,
        tenant,
        tenant_len,
        key: key_ptr,
        key_len,
        size,
        out_replicas,
        cap,
        out_len,
        out_token,
    };
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_put_start_legacy", m, err, |master| {
            start(master, Start::Put, a, || read_legacy(cfg, "cfg"))
        })
    }
}

/// Starts an upsert (upstream UpsertStart) with the extended configuration
/// `cfg` (NULL = defaults): absent key -> as PutStart; same size -> in place
/// (the object's MEMORY/NOF_SSD replicas, back to PROCESSING with the same
/// ids; requested counts ignored); other size -> new replicas, allocated
/// before the old ones are let go. Leases never block it. A NULL `cfg.group`
/// keeps an existing object's group; naming another group than the
/// object's (or one for an ungrouped object) is `MOONCAKE_META_INVALID_PARAMS`;
/// a master out of ids (docs/CONTRACT.md section 6) is
/// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`.
///
/// `cap` must be at least the replicas requested and, for an in-place
/// write, at least the object's MEMORY/NOF_SSD replicas (copies may have
/// added some); otherwise `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len`
/// = the larger count, after every other check and before any effect.
///
/// Ownership: nothing is transferred; `cfg` and the key are only read
/// during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_put_start`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_upsert_start(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    size: u64,
    cfg: *const mooncake_meta_write_config,
    out_replicas: *mut mooncake_meta_replica,
    cap: usize,
    out_len: *mut usize,
    out_token: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    let a = StartArgs {
        client,
        tenant,
        tenant_len,
        key: key_ptr,
        key_len,
        size,
        out_replicas,
        cap,
        out_len,
        out_token,
    };
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_upsert_start", m, err, |master| {
            start(master, Start::Upsert, a, || read_extended(cfg, "cfg"))
        })
    }
}

/// `mooncake_meta_upsert_start` with the legacy configuration (NULL =
/// defaults). `with_soft_pin = 0` is PRESERVE: an upsert of a soft-pinned
/// object keeps its unexpired deadline.
///
/// Ownership: nothing is transferred; `cfg` and the key are only read
/// during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_put_start_legacy`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_upsert_start_legacy(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    size: u64,
    cfg: *const mooncake_meta_replicate_config,
    out_replicas: *mut mooncake_meta_replica,
    cap: usize,
    out_len: *mut usize,
    out_token: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    let a = StartArgs {
        client,
        tenant,
        tenant_len,
        key: key_ptr,
        key_len,
        size,
        out_replicas,
        cap,
        out_len,
        out_token,
    };
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_upsert_start_legacy", m, err, |master| {
            start(master, Start::Upsert, a, || read_legacy(cfg, "cfg"))
        })
    }
}

/// Which End/Revoke.
#[derive(Clone, Copy)]
enum Finish {
    End,
    Revoke,
}

/// The body of every End/Revoke.
///
/// # Safety
/// Key pointers valid for their lengths (or NULL with length 0).
unsafe fn finish(
    master: &Master,
    which: Finish,
    client: ClientId,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    raw_selector: u32,
    raw_token: u64,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let k = unsafe { key(tenant, tenant_len, key_ptr, key_len) }?;
    let sel = selector(raw_selector)?;
    match which {
        Finish::End => master.put_end(client, k, sel, token(raw_token)),
        Finish::Revoke => master.put_revoke(client, k, sel, token(raw_token)),
    }
}

/// Completes the selected PROCESSING replicas of the write in flight
/// (upstream PutEnd). `selector` is a `MOONCAKE_META_SELECT_*` value;
/// `token` is the Start's write token, or 0 to name none (a non-zero token
/// that is not the current write's is `MOONCAKE_META_STALE_WRITE_TOKEN`).
/// The End that first makes the object readable commits its soft pin.
/// Errors in order: OBJECT_NOT_FOUND, ILLEGAL_CLIENT (not the writer),
/// STALE_WRITE_TOKEN. With no write in flight every replica a write made is
/// COMPLETE, so the End is an OK no-op, unless a replica of the selected
/// kinds is not COMPLETE (a copy, move or promotion target, which the End
/// never completes): MOONCAKE_META_INVALID_WRITE.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_put_end(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    selector: u32,
    token: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_put_end", m, err, |master| {
            finish(
                master,
                Finish::End,
                client,
                tenant,
                tenant_len,
                key_ptr,
                key_len,
                selector,
                token,
            )
        })
    }
}

/// Abandons the selected PROCESSING replicas of the write in flight
/// (upstream PutRevoke); their buffers are freed at once and the object is
/// erased when no replica is left. Arguments and the first three errors as
/// `mooncake_meta_put_end`; no write in flight, or a selected replica not
/// PROCESSING, is `MOONCAKE_META_INVALID_WRITE`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_put_end`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_put_revoke(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    selector: u32,
    token: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_put_revoke", m, err, |master| {
            finish(
                master,
                Finish::Revoke,
                client,
                tenant,
                tenant_len,
                key_ptr,
                key_len,
                selector,
                token,
            )
        })
    }
}

/// Ends an upsert: exactly `mooncake_meta_put_end`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_put_end`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_upsert_end(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    selector: u32,
    token: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_upsert_end", m, err, |master| {
            finish(
                master,
                Finish::End,
                client,
                tenant,
                tenant_len,
                key_ptr,
                key_len,
                selector,
                token,
            )
        })
    }
}

/// Revokes an upsert: exactly `mooncake_meta_put_revoke`. Revoking an
/// in-place write erases the object and its soft-pin deadline.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_put_end`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_upsert_revoke(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    selector: u32,
    token: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_upsert_revoke", m, err, |master| {
            finish(
                master,
                Finish::Revoke,
                client,
                tenant,
                tenant_len,
                key_ptr,
                key_len,
                selector,
                token,
            )
        })
    }
}
