//! Reads through the C ABI: Exist, GetReplicaList, key count and listing
//! (a library-owned, immutable page of keys). They grant the ordinary read
//! lease and never touch soft-pin state.

// The C signatures are flat by design (no structs of pointers).
#![allow(clippy::too_many_arguments)]

use super::boundary;
use super::error::mooncake_meta_error;
use super::handle::{self, Opaque};
use super::input::{self, Out};
use super::master::{key, mooncake_meta_master, with_master};
use super::replica::{mooncake_meta_replica, write_bounded, ReplicaArray};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::Error;
use mooncake_meta_core::types::DEFAULT_TENANT;
use mooncake_meta_core::KeyPage;
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

/// Copies the readable (COMPLETE) replicas of a key into
/// `out_replicas[0 .. *out_len]` and grants the read lease. Missing key ->
/// `MOONCAKE_META_OBJECT_NOT_FOUND`; nothing readable ->
/// `MOONCAKE_META_REPLICA_IS_NOT_READY` (no lease). More readable replicas
/// than `cap` -> `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len` = their
/// number, nothing else written and **no lease granted**; pass `(NULL, 0)`
/// to ask for the count. Never touches soft-pin state.
///
/// Ownership: nothing is transferred; `out_replicas` is owned by the caller.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
/// lengths; `out_replicas` NULL or valid for writing `cap` replicas;
/// `out_len` valid for writing a `size_t`; `err` NULL or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_get_replica_list(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    key_ptr: *const c_char,
    key_len: usize,
    out_replicas: *mut mooncake_meta_replica,
    cap: usize,
    out_len: *mut usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_get_replica_list", m, err, |master| {
            let k = key(tenant, tenant_len, key_ptr, key_len)?;
            let out = ReplicaArray::new(out_replicas, cap, "out_replicas")?;
            let out_len = Out::new(out_len, "out_len")?;
            write_bounded(
                &out,
                out_len,
                master.get_replica_list_bounded(k, cap)?,
                "out_replicas",
            )
        })
    }
}

/// Writes the number of objects (all tenants, readable or not) to
/// `*out_count`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out_count` valid for writing a `uint64_t`;
/// `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_key_count(
    m: *const mooncake_meta_master,
    out_count: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_key_count", m, err, |master| {
            Out::new(out_count, "out_count")?.write(master.key_count());
            Ok(())
        })
    }
}

/// One page of a key listing, owned by the library: read it with
/// `mooncake_meta_key_list_len`, `_get` and `_next_cursor`, release it with
/// `mooncake_meta_key_list_free`. Immutable: any number of threads may read
/// it at once.
pub struct mooncake_meta_key_list {
    _private: [u8; 0],
}

/// The keys of a page, each followed by a NUL, in one buffer.
pub(crate) struct KeyList {
    data: Vec<u8>,
    /// Start of each key in `data`.
    starts: Vec<usize>,
    /// The cursor for the next page, NUL-terminated; `None` at the end.
    next: Option<Vec<u8>>,
}

impl Opaque for mooncake_meta_key_list {
    type Inner = KeyList;
    const C_NAME: &'static str = "mooncake_meta_key_list";
    const FREE: &'static str = "mooncake_meta_key_list_free";
}

fn with_nul(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

impl KeyList {
    fn new(page: KeyPage) -> Self {
        let total = page.keys.iter().map(|k| k.len() + 1).sum();
        let mut data = Vec::with_capacity(total);
        let mut starts = Vec::with_capacity(page.keys.len());
        for k in &page.keys {
            starts.push(data.len());
            data.extend_from_slice(k.as_bytes());
            data.push(0);
        }
        KeyList {
            data,
            starts,
            next: page.next.as_deref().map(with_nul),
        }
    }

    /// Key `i` without its NUL.
    fn get(&self, i: usize) -> Option<&[u8]> {
        let start = *self.starts.get(i)?;
        let end = self.starts.get(i + 1).copied().unwrap_or(self.data.len()) - 1;
        Some(&self.data[start..end])
    }
}

/// Lists the keys of `tenant` (`(NULL, 0)` = the default tenant) that start
/// with `prefix` (`(NULL, 0)` = every key) and sort strictly after `after`
/// (`(NULL, 0)` = from the first), in ascending byte order, at most `limit`
/// of them (0 = no limit). On success `*out_list` is a new list.
/// Continue a listing by passing the list's next cursor as `after`.
///
/// Ownership: on success the caller owns `*out_list` and releases it with
/// `mooncake_meta_key_list_free`; on failure it is not written.
/// Thread safety: may be called concurrently with any call but `_free`; the
/// page is a consistent view of each shard, not of the whole master.
///
/// # Safety
/// `m` NULL or a live master; each string NULL or valid for its length;
/// `out_list` valid for writing one pointer; `err` NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_list_keys(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    prefix: *const c_char,
    prefix_len: usize,
    after: *const c_char,
    after_len: usize,
    limit: usize,
    out_list: *mut *mut mooncake_meta_key_list,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_list_keys", m, err, |master| {
            let tenant = input::string(tenant, tenant_len, "tenant")?;
            let tenant = if tenant.is_empty() {
                DEFAULT_TENANT
            } else {
                tenant
            };
            let prefix = input::string(prefix, prefix_len, "prefix")?;
            let after = input::string(after, after_len, "after")?;
            let out = Out::new(out_list, "out_list")?;
            let after = (!after.is_empty()).then_some(after);
            let page = master.list_keys(tenant, prefix, after, limit)?;
            out.write(handle::into_raw::<mooncake_meta_key_list>(KeyList::new(
                page,
            )));
            Ok(())
        })
    }
}

/// The number of keys in `list`; 0 for NULL.
///
/// Ownership: `list` stays owned by the caller.
/// Thread safety: may be called concurrently with any call on `list` but
/// `_free`.
///
/// # Safety
/// `list` must be NULL or a live key list.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_key_list_len(list: *const mooncake_meta_key_list) -> usize {
    // SAFETY: the caller upholds the documented contract.
    boundary::guard(0, || unsafe {
        handle::borrow(list, "list").map_or(0, |l| l.with(|l| l.starts.len()))
    })
}

/// Points `*out_ptr`/`*out_len` at key `index` of `list` (UTF-8, `*out_len`
/// bytes, followed by a NUL so a key without an embedded NUL is also a C
/// string). `index >= len` is `MOONCAKE_META_INVALID_PARAMS`.
///
/// Ownership: the bytes belong to `list` and stay valid until
/// `mooncake_meta_key_list_free(list)`; do not free them.
/// Thread safety: may be called concurrently with any call on `list` but
/// `_free`.
///
/// # Safety
/// `list` NULL or a live key list; `out_ptr` valid for writing a pointer;
/// `out_len` valid for writing a `size_t`; `err` NULL or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_key_list_get(
    list: *const mooncake_meta_key_list,
    index: usize,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::with_handle("mooncake_meta_key_list_get", list, "list", err, |l| {
            let (out_ptr, out_len) = (Out::new(out_ptr, "out_ptr")?, Out::new(out_len, "out_len")?);
            let key = l.get(index).ok_or_else(|| {
                Error::invalid(format!(
                    "index {index} is out of range (the list has {} keys)",
                    l.starts.len()
                ))
            })?;
            out_ptr.write(key.as_ptr().cast());
            out_len.write(key.len());
            Ok(())
        })
    }
}

/// The cursor for the page after `list`: `*out_has_next` = 1 and
/// `*out_ptr`/`*out_len` = the cursor (NUL-terminated) to pass as `after`,
/// or, when `list` is the last page, `*out_has_next` = 0, `*out_ptr` = NULL
/// and `*out_len` = 0. Only a listing with a `limit` has a next page.
///
/// Ownership: the cursor belongs to `list` and stays valid until
/// `mooncake_meta_key_list_free(list)`; do not free it.
/// Thread safety: may be called concurrently with any call on `list` but
/// `_free`.
///
/// # Safety
/// `list` NULL or a live key list; `out_has_next` valid for writing an
/// `int`; `out_ptr` valid for writing a pointer; `out_len` valid for
/// writing a `size_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_key_list_next_cursor(
    list: *const mooncake_meta_key_list,
    out_has_next: *mut c_int,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::with_handle(
            "mooncake_meta_key_list_next_cursor",
            list,
            "list",
            err,
            |l| {
                let has_next = Out::new(out_has_next, "out_has_next")?;
                let (out_ptr, out_len) =
                    (Out::new(out_ptr, "out_ptr")?, Out::new(out_len, "out_len")?);
                match &l.next {
                    Some(c) => {
                        has_next.write(1);
                        out_ptr.write(c.as_ptr().cast());
                        out_len.write(c.len() - 1);
                    }
                    None => {
                        has_next.write(0);
                        out_ptr.write(std::ptr::null());
                        out_len.write(0);
                    }
                }
                Ok(())
            },
        )
    }
}

/// Releases a key list. `mooncake_meta_key_list_free(NULL)` does nothing.
///
/// Ownership: takes ownership of `list`; it and every key or cursor pointer
/// obtained from it are invalid afterwards.
/// Thread safety: no other call on `list` may run concurrently or later.
///
/// # Safety
/// `list` must be NULL or a list from `mooncake_meta_list_keys` not yet
/// freed.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_key_list_free(list: *mut mooncake_meta_key_list) {
    // SAFETY: the caller upholds the documented contract.
    boundary::guard((), || unsafe { handle::free(list) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_list_keeps_keys_and_cursor_nul_terminated() {
        let l = KeyList::new(KeyPage {
            keys: vec!["a".into(), "".into(), "xyz".into()],
            next: Some("xyz".into()),
        });
        assert_eq!(l.get(0), Some(&b"a"[..]));
        assert_eq!(l.get(1), Some(&b""[..]));
        assert_eq!(l.get(2), Some(&b"xyz"[..]));
        assert_eq!(l.get(3), None);
        assert_eq!(l.data, b"a\0\0xyz\0");
        assert_eq!(l.next.as_deref(), Some(&b"xyz\0"[..]));
        let empty = KeyList::new(KeyPage::default());
        assert_eq!((empty.get(0), empty.next.as_deref()), (None, None));
    }
}
