//! Test-only entry points, compiled only with the `test-hooks` feature, so
//! the C tests can show what a panic at the boundary looks like. They are
//! excluded from the public header (cbindgen.toml) and declared for the C
//! tests by `c_tests/test_hooks.h`; the symbol check asserts that the default
//! build does not export them.

use super::boundary;
use super::config::mooncake_meta_config;
use super::error::mooncake_meta_error;
use super::master::{mooncake_meta_master, with_master};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::Result;

/// Panics inside `with_master`, while `m` is borrowed: returns
/// `MOONCAKE_META_PANIC` with a message containing "deliberate test panic",
/// and poisons `m`, so every later call on it returns `MOONCAKE_META_PANIC`
/// and only `mooncake_meta_master_free` still works. A NULL `m` is
/// `MOONCAKE_META_NULL_ARGUMENT` (nothing panics).
///
/// Ownership: `m` stays owned by the caller; on failure `*err` is a new
/// error owned by the caller.
/// Thread safety: as any master operation.
///
/// # Safety
/// `m` must be NULL or a live master; `err` must be NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_test_panic(
    m: *const mooncake_meta_master,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_test_panic", m, err, |_| -> Result<()> {
            panic!("deliberate test panic")
        })
    }
}

/// Panics while `cfg` is borrowed, which poisons it: this and every later
/// call on `cfg` return `MOONCAKE_META_PANIC`, and only
/// `mooncake_meta_config_free` still works.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: as any config setter.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_test_panic_with_config(
    cfg: *mut mooncake_meta_config,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::with_handle(
            "mooncake_meta_test_panic_with_config",
            cfg.cast_const(),
            "cfg",
            err,
            |_| -> Result<()> { panic!("deliberate test panic holding the config") },
        )
    }
}

/// A batch call of `count` keys whose body panics once the master is
/// borrowed, after the library has checked `out_statuses`: returns
/// `MOONCAKE_META_PANIC`, leaves every `out_statuses[i]` PANIC (no key
/// reads as OK), and poisons `m` as [`mooncake_meta_test_panic`] does.
/// Arguments are checked as every batch call checks them (NULL `m`:
/// `MOONCAKE_META_NULL_ARGUMENT` in every status, nothing panics).
///
/// Ownership: `m` stays owned by the caller; on failure `*err` is a new
/// error owned by the caller.
/// Thread safety: as any master operation.
///
/// # Safety
/// `m` must be NULL or a live master; `out_statuses` NULL or valid for
/// writing `count` entries; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_test_panic_in_batch(
    m: *const mooncake_meta_master,
    count: usize,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        super::batch::batch(
            "mooncake_meta_test_panic_in_batch",
            m,
            count,
            out_statuses,
            err,
            |_| -> Result<Vec<Result<()>>> { panic!("deliberate test panic in a batch") },
        )
    }
}
