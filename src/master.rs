//! The master handle: creation from a configuration, release, the manual
//! clock, and the key-argument convention shared by every key-taking call
//! (`tenant`/`tenant_len`, `key`/`key_len`; a `(NULL, 0)` tenant is the
//! default tenant).

use super::boundary;
use super::config::{self, mooncake_meta_config};
use super::error::mooncake_meta_error;
use super::handle::{self, Opaque};
use super::input::{self, Out};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::Result;
use mooncake_meta_core::types::{Key, DEFAULT_TENANT};
use mooncake_meta_core::{Master, MasterConfig};
use std::os::raw::c_char;

/// An opaque metadata master. Create with `mooncake_meta_master_new`,
/// release with `mooncake_meta_master_free`. Every operation may be called
/// concurrently from any number of threads, except `_free`, which must not
/// race any other call on the same master.
pub struct mooncake_meta_master {
    _private: [u8; 0],
}

impl Opaque for mooncake_meta_master {
    type Inner = Master;
    const C_NAME: &'static str = "mooncake_meta_master";
    const FREE: &'static str = "mooncake_meta_master_free";
}

/// Runs `f` on the master behind `m` inside the panic boundary (NULL →
/// `NULL_ARGUMENT`, poisoned → `PANIC`; a panic poisons the master).
///
/// # Safety
/// `m` must be NULL or a live master; `err` NULL or writable.
pub(crate) unsafe fn with_master(
    function: &'static str,
    m: *const mooncake_meta_master,
    err: *mut *mut mooncake_meta_error,
    f: impl FnOnce(&Master) -> Result<()>,
) -> mooncake_meta_status {
    // SAFETY: forwarded from the caller.
    unsafe { boundary::with_handle(function, m, "master", err, f) }
}

/// The master behind a live handle, for Rust tests that drive the C ABI and
/// then inspect state the C ABI does not expose. Not part of the C ABI.
///
/// # Safety
/// `m` must be a live, non-NULL master from `mooncake_meta_master_new`, not
/// freed while the reference is in use.
#[doc(hidden)]
pub unsafe fn master_ref<'a>(m: *const mooncake_meta_master) -> &'a Master {
    // SAFETY: forwarded; handles of this type point at a `Handle<Master>`.
    let master: *const Master = unsafe { handle::borrow::<mooncake_meta_master>(m, "master") }
        .expect("master_ref: NULL or poisoned master")
        .with(std::ptr::from_ref);
    // SAFETY: the master lives as long as the handle, which the caller
    // keeps alive; the guard only polices poisoning.
    unsafe { &*master }
}

/// Reads the key arguments of a key-taking call. Both strings are UTF-8
/// given as `(ptr, len)`; a `(NULL, 0)` tenant means the default tenant.
///
/// # Safety
/// Non-NULL pointers must be valid for reading their lengths.
pub(crate) unsafe fn key<'a>(
    tenant: *const c_char,
    tenant_len: usize,
    key: *const c_char,
    key_len: usize,
) -> Result<Key<'a>> {
    // SAFETY: forwarded from the caller.
    let tenant = unsafe { input::string(tenant, tenant_len, "tenant")? };
    let key = unsafe { input::string(key, key_len, "key")? };
    let k = Key {
        tenant: if tenant.is_empty() {
            DEFAULT_TENANT
        } else {
            tenant
        },
        key,
    };
    k.validate()?;
    Ok(k)
}

/// Creates a master from `cfg` (NULL = the documented defaults: system
/// clock, background tasks on). The configuration is copied; `cfg` may be
/// freed or reused afterwards. A configuration the master would misbehave
/// under (e.g. default soft-pin TTL above the maximum) is
/// `MOONCAKE_META_INVALID_PARAMS`; a system that will not start the
/// maintenance thread the configuration asks for is
/// `MOONCAKE_META_INTERNAL_ERROR` (no master).
///
/// Ownership: on success `*out_master` is a new master owned by the caller,
/// released with `mooncake_meta_master_free`; on failure it is not written.
/// Thread safety: may be called from any thread.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `out_master` must be valid
/// for writing one pointer; `err` must be NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_master_new(
    cfg: *const mooncake_meta_config,
    out_master: *mut *mut mooncake_meta_master,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::call("mooncake_meta_master_new", err, || {
            let out = Out::new(out_master, "out_master")?;
            let config = if cfg.is_null() {
                MasterConfig::default()
            } else {
                config::read(cfg, "cfg")?
            };
            let master = Master::new(config)?;
            out.write(handle::into_raw::<mooncake_meta_master>(master));
            Ok(())
        })
    }
}

/// Releases a master and stops its maintenance thread (promptly, whatever
/// the intervals). `mooncake_meta_master_free(NULL)` does nothing; a master
/// poisoned by a panic may (and should) still be freed.
///
/// Ownership: takes ownership of `m`; it and every pointer into it are
/// invalid afterwards.
/// Thread safety: no other call on `m` may run concurrently or later.
///
/// # Safety
/// `m` must be NULL or a master from `mooncake_meta_master_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_master_free(m: *mut mooncake_meta_master) {
    // SAFETY: the caller upholds the documented contract.
    boundary::guard((), || unsafe { handle::free(m) })
}

/// Writes the master's current instant to `*out_now`: milliseconds on its
/// timeline, which is anchored to the Unix epoch when the master is created
/// and then advanced by a monotonic clock, so it never goes backwards (but
/// on a standby taking its primary's timeline with an image it installs,
/// docs/CONTRACT.md section 12.3) and a wall-clock step moves no deadline. Every instant of this API (deadlines,
/// leases, `run_cleanup_at`, snapshots' `created_at`) is on this timeline.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` must be NULL or a live master; `out_now` valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_master_now(
    m: *const mooncake_meta_master,
    out_now: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_master_now", m, err, |master| {
            Out::new(out_now, "out_now")?.write(master.now());
            Ok(())
        })
    }
}

/// Sets a manual clock to `to_ms`. Moving it backwards, or calling this on
/// a system-clock master, is `MOONCAKE_META_CLOCK_UNSUPPORTED`; reaching
/// `INT64_MAX` is `MOONCAKE_META_INVALID_PARAMS`. The clock is unchanged on
/// failure.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` must be NULL or a live master; `err` NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_master_set_time(
    m: *const mooncake_meta_master,
    to_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_master_set_time", m, err, |master| {
            master.set_time(to_ms)
        })
    }
}

/// Writes the wall clock now (milliseconds since the Unix epoch) to
/// `*out_wall`. No lifetime depends on it: it is what the skew
/// (`clock_skew_ms` in the metrics) is measured against and what a snapshot
/// records beside its capture instant. For a manual clock it is the
/// timeline unless set apart with `mooncake_meta_master_set_wall_time`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` must be NULL or a live master; `out_wall` valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_master_wall_time(
    m: *const mooncake_meta_master,
    out_wall: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_master_wall_time", m, err, |master| {
            Out::new(out_wall, "out_wall")?.write(master.wall_time());
            Ok(())
        })
    }
}

/// Sets a manual clock's wall apart from its timeline, as a wall-clock step
/// would: the timeline, and so every lease, soft pin and write timeout, is
/// unchanged; the skew becomes `now - wall_ms` and snapshots record the new
/// wall. The wall then keeps that distance as the clock advances. A
/// system-clock master is `MOONCAKE_META_CLOCK_UNSUPPORTED` (its wall is the
/// operating system's); `wall_ms >= INT64_MAX` is
/// `MOONCAKE_META_INVALID_PARAMS`. Nothing changes on failure.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` must be NULL or a live master; `err` NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_master_set_wall_time(
    m: *const mooncake_meta_master,
    wall_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_master_set_wall_time", m, err, |master| {
            master.set_wall_time(wall_ms)
        })
    }
}

/// Advances a manual clock by `by_ms`; the new instant goes to `*out_now`
/// when `out_now` is not NULL. Errors as `mooncake_meta_master_set_time`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` must be NULL or a live master; `out_now` NULL or valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_master_advance_time(
    m: *const mooncake_meta_master,
    by_ms: u64,
    out_now: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_master_advance_time", m, err, |master| {
            let now = master.advance_time(by_ms)?;
            if !out_now.is_null() {
                out_now.write(now);
            }
            Ok(())
        })
    }
}
