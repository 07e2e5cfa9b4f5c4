//! Reads through the C ABI: Exist, GetReplicaList, key count and listing.
//! They grant the ordinary read lease and never touch soft-pin state.

use super::error::mooncake_meta_error;
use super::input::Out;
use super::master::{key, mooncake_meta_master, with_master};
use super::status::mooncake_meta_status;
use std::os::raw::{c_char, c_int};

/// Writes 1 to `*out_exists` if the key has a readable replica (and grants
/// the read lease), else 0. A `(NULL, 0)` tenant is the default tenant.
///
/// Ownership: nothing is transferred; strings are only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `out_exists` valid for writing an `int`; `err` NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_exist(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    out_exists: *mut c_int,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_exist", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let out = Out::new(out_exists, "out_exists")?;
            out.write(master.exist(k)? as c_int);
            Ok(())
        })
    }
}
