//! Removal through the C ABI: one key, every key, or the keys matching a
//! regular expression. Soft and hard pins never block removal; a live read
//! lease does unless `force` is 1. Buffers are freed at once.

use super::error::mooncake_meta_error;
use super::input::{self, bool01};
use super::master::{key, mooncake_meta_master, with_master};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::Result;
use mooncake_meta_core::types::DEFAULT_TENANT;
use mooncake_meta_core::Master;
use std::os::raw::{c_char, c_int};

/// Writes `n` to an optional count out-pointer.
///
/// # Safety
/// `out` must be NULL or valid for writing a `uint64_t`.
unsafe fn write_count(out: *mut u64, n: u64) {
    if !out.is_null() {
        // SAFETY: per the contract.
        unsafe { out.write(n) };
    }
}

/// Removes one object. `force` must be 0 or 1 (1 ignores a live read
/// lease). Checked in order: missing -> `MOONCAKE_META_OBJECT_NOT_FOUND`; a
/// replica not COMPLETE (a write's in flight, or a copy's, move's or
/// promotion's PROCESSING target) -> `MOONCAKE_META_REPLICA_IS_NOT_READY`
/// (even forced); a copy, move or promotion running whose replicas are all
/// COMPLETE (its targets gone with an unmount) ->
/// `MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK` (even forced); live lease,
/// not forced -> `MOONCAKE_META_OBJECT_HAS_LEASE`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_remove(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    force: c_int,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_remove", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let force = bool01(force, "force")?;
            master.remove(k, force)
        })
    }
}

/// Removes every removable object of every tenant (objects the single
/// remove would refuse are skipped silently); the number removed goes to
/// `*out_removed` when it is not NULL. `force` must be 0 or 1. On a
/// standby it removes nothing and returns `MOONCAKE_META_OK` with 0 (a
/// standby changes only by the journal it applies; docs/CONTRACT.md section 12.3).
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`;
/// objects written meanwhile may or may not be removed.
///
/// # Safety
/// `m` NULL or a live master; `out_removed` NULL or valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_remove_all(
    m: *const mooncake_meta_master,
    force: c_int,
    out_removed: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_remove_all", m, err, |master| {
            let force = bool01(force, "force")?;
            write_count(out_removed, master.remove_all(force));
            Ok(())
        })
    }
}

/// What the RemoveByRegex calls share once the tenant is read (`None`:
/// every tenant): the pattern, `force`, the removal and its count.
///
/// # Safety
/// `pattern` NULL or valid for `pattern_len` bytes; `out_removed` NULL or
/// valid for writing a `uint64_t`.
unsafe fn remove_matching(
    master: &Master,
    tenant: Option<&str>,
    pattern: *const c_char,
    pattern_len: usize,
    force: c_int,
    out_removed: *mut u64,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let pattern = unsafe { input::string(pattern, pattern_len, "pattern") }?;
    let force = bool01(force, "force")?;
    let n = master.remove_by_regex(tenant, pattern, force)?;
    // SAFETY: forwarded from the caller.
    unsafe { write_count(out_removed, n) };
    Ok(())
}

/// Removes the removable objects whose key matches `pattern` (UTF-8, Rust
/// `regex` syntax, unanchored: use `^...$` for a whole-key match) in
/// `tenant`, or in every tenant when `tenant_len` is 0 (`tenant` may then
/// be NULL). The number removed goes to `*out_removed` when it is not NULL.
/// A bad or oversized pattern (longer than 4096 bytes, or compiling past
/// the regex size limit) is `MOONCAKE_META_INVALID_PARAMS`; `force` must
/// be 0 or 1. Keys are matched under each shard's read lock, and removed
/// under its write lock if still removable.
///
/// Kept as 0.1.0 shipped it: here `(NULL, 0)` means every tenant, where
/// every other call reads it as the default tenant. New code says which
/// it means: `mooncake_meta_remove_by_regex_in_tenant` (one tenant, the
/// default for `(NULL, 0)`) or `mooncake_meta_remove_by_regex_all_tenants`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`pattern` NULL or valid for their
/// lengths; `out_removed` NULL or valid for writing a `uint64_t`; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_remove_by_regex(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    pattern: *const c_char,
    pattern_len: usize,
    force: c_int,
    out_removed: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_remove_by_regex", m, err, |master| {
            let tenant = input::string(tenant, tenant_len, "tenant")?;
            let tenant = (!tenant.is_empty()).then_some(tenant);
            remove_matching(master, tenant, pattern, pattern_len, force, out_removed)
        })
    }
}

/// Removes the removable objects of one tenant whose key matches `pattern`:
/// `mooncake_meta_remove_by_regex` with `tenant` read as every other call
/// reads it, `(NULL, 0)` being the default tenant (never every tenant; that
/// is `mooncake_meta_remove_by_regex_all_tenants`). The number removed goes
/// to `*out_removed` when it is not NULL. A tenant or pattern that is not
/// UTF-8 is `MOONCAKE_META_INVALID_UTF8`; a bad tenant name, a bad or
/// oversized pattern (longer than 4096 bytes, or compiling past the regex
/// size limit) or a `force` other than 0 or 1 is
/// `MOONCAKE_META_INVALID_PARAMS`; nothing is removed then. On a standby
/// it removes nothing and returns
/// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`, as
/// `mooncake_meta_remove_by_regex` does.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`pattern` NULL or valid for their
/// lengths; `out_removed` NULL or valid for writing a `uint64_t`; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_remove_by_regex_in_tenant(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    pattern: *const c_char,
    pattern_len: usize,
    force: c_int,
    out_removed: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master(
            "mooncake_meta_remove_by_regex_in_tenant",
            m,
            err,
            |master| {
                let tenant = input::string(tenant, tenant_len, "tenant")?;
                let tenant = if tenant.is_empty() {
                    DEFAULT_TENANT
                } else {
                    tenant
                };
                remove_matching(
                    master,
                    Some(tenant),
                    pattern,
                    pattern_len,
                    force,
                    out_removed,
                )
            },
        )
    }
}

/// Removes the removable objects of every tenant whose key matches
/// `pattern` (UTF-8, Rust `regex` syntax, unanchored). The number removed
/// goes to `*out_removed` when it is not NULL. A pattern that is not UTF-8
/// is `MOONCAKE_META_INVALID_UTF8`; a bad or oversized pattern (longer than
/// 4096 bytes, or compiling past the regex size limit) or a `force` other
/// than 0 or 1 is `MOONCAKE_META_INVALID_PARAMS`; nothing is removed then.
/// On a standby it removes nothing and returns
/// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`, as
/// `mooncake_meta_remove_by_regex` does.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `pattern` NULL or valid for `pattern_len`
/// bytes; `out_removed` NULL or valid for writing a `uint64_t`; `err` NULL
/// or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_remove_by_regex_all_tenants(
    m: *const mooncake_meta_master,
    pattern: *const c_char,
    pattern_len: usize,
    force: c_int,
    out_removed: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master(
            "mooncake_meta_remove_by_regex_all_tenants",
            m,
            err,
            |master| remove_matching(master, None, pattern, pattern_len, force, out_removed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_go_only_to_non_null_pointers() {
        let mut n = 0u64;
        unsafe {
            write_count(&mut n, 5);
            write_count(std::ptr::null_mut(), 6);
        }
        assert_eq!(n, 5);
    }
}
