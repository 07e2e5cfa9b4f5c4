//! Group retention through the C ABI (docs/CONTRACT.md "Group retention"):
//! retain groups for a fixed lifetime, release them, read a group's
//! deadline. Groups are given as `(const char *const *groups, const size_t
//! *group_lens, size_t count)` in one tenant (`(NULL, 0)` or an empty
//! tenant = the default tenant); `(NULL, NULL, 0)` is an empty batch.
//!
//! A retain or release ends in one of three ways, as a batch does
//! (docs/CONTRACT.md section 3, "Batch forms"):
//! - a bad shared argument (a tenant that is not UTF-8 or that the core
//!   refuses, a TTL of 0 or above `max_group_retention_ttl_ms`): every
//!   `out_statuses[i]` is that one code (`MOONCAKE_META_INVALID_PARAMS`,
//!   or `MOONCAKE_META_INVALID_UTF8` for the tenant's bytes), every
//!   `out_deadlines[i]` 0, and the call returns that code with the
//!   refusal's message; nothing changes;
//! - an argument the library cannot use (a NULL master, a NULL array or id
//!   with a non-zero count or length) or a standby
//!   (`MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`) refuses the call: it
//!   returns that code with a message, changes nothing and writes no
//!   output array;
//! - otherwise it returns `MOONCAKE_META_OK` and writes one status per
//!   group (`out_statuses[i]`: `MOONCAKE_META_OK`,
//!   `MOONCAKE_META_INVALID_PARAMS` for an empty or NUL-containing id,
//!   `MOONCAKE_META_INVALID_UTF8` for one that is not UTF-8,
//!   `MOONCAKE_META_GROUP_RETENTION_FULL` for a new group while
//!   `max_retained_groups` groups are retained).

// The C signatures are flat by design (no structs of pointers).
#![allow(clippy::too_many_arguments)]

use super::batch::{array, OutArray};
use super::error::mooncake_meta_error;
use super::input::{self, Index, Out};
use super::master::{mooncake_meta_master, with_master};
use super::status::{code_of, mooncake_meta_status, MOONCAKE_META_OK};
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use mooncake_meta_core::types::DEFAULT_TENANT;
use mooncake_meta_core::Master;
use std::os::raw::{c_char, c_int};

/// The tenant of a call: `(NULL, 0)` or empty = the default tenant.
///
/// # Safety
/// A non-NULL `tenant` must be valid for reading `tenant_len` bytes.
unsafe fn tenant_of<'a>(tenant: *const c_char, tenant_len: usize) -> Result<&'a str> {
    // SAFETY: forwarded from the caller.
    let t = unsafe { input::string(tenant, tenant_len, "tenant") }?;
    Ok(if t.is_empty() { DEFAULT_TENANT } else { t })
}

/// The group ids of a call, and those that are not UTF-8.
struct GroupIds<'a> {
    /// One per group; an id that is not UTF-8 stands as the empty id,
    /// which the core fails on its own and changes nothing for.
    ids: Vec<&'a str>,
    /// The ids that are not UTF-8: each group's result is its error.
    bad: Vec<(usize, Error)>,
}

impl GroupIds<'_> {
    /// `results` with each id that is not UTF-8 failed on its own
    /// (`INVALID_UTF8`), as a batch's malformed key is.
    fn fail_bad<T>(self, mut results: Vec<Result<T>>) -> Vec<Result<T>> {
        for (i, e) in self.bad {
            results[i] = Err(e);
        }
        results
    }
}

/// The group ids of a call. A NULL array with a non-zero count or a NULL
/// id with a non-zero length refuses the call, naming `groups[i]`; an id
/// that is not UTF-8 fails only its own group (`INVALID_UTF8`), and empty
/// ids are left to the per-group result.
///
/// # Safety
/// Non-NULL arrays valid for `count` elements, each id valid for its length.
unsafe fn group_ids<'a>(
    groups: *const *const c_char,
    group_lens: *const usize,
    count: usize,
) -> Result<GroupIds<'a>> {
    // SAFETY (whole body): forwarded from the caller.
    let ptrs = unsafe { array(groups, count, "groups") }?;
    let lens = unsafe { array(group_lens, count, "group_lens") }?;
    let mut out = GroupIds {
        ids: Vec::with_capacity(count),
        bad: Vec::new(),
    };
    for (i, (&p, &len)) in ptrs.iter().zip(lens).enumerate() {
        match unsafe { input::string(p, len, Index("groups", i)) } {
            Ok(id) => out.ids.push(id),
            Err(e) if e.kind() == ErrorKind::InvalidUtf8 => {
                out.ids.push("");
                out.bad.push((i, e));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Refuses every group for a bad shared argument: its code into each
/// status and 0 into each deadline (a retain's); returns the refusal.
fn refuse_each(
    e: Error,
    statuses: &OutArray<'_, i32>,
    deadlines: Option<&OutArray<'_, u64>>,
    count: usize,
) -> Error {
    for i in 0..count {
        statuses.set(i, code_of(e.kind()));
        if let Some(d) = deadlines {
            d.set(i, 0);
        }
    }
    e
}

/// The tenant of a retain or release, checked in the order the core
/// checks a call: the arrays the library cannot use (a NULL tenant with a
/// length, NULL group arrays: `ids` already parsed) refuse the call, then
/// the role (a standby refuses the whole call), then the shared arguments:
/// a tenant that is not UTF-8 refuses every group ([`refuse_each`]), as
/// `shared` (the core's check of the tenant and the TTL) does.
///
/// # Safety
/// As [`tenant_of`].
unsafe fn shared_tenant<'a>(
    master: &Master,
    tenant: *const c_char,
    tenant_len: usize,
    shared: impl FnOnce(&str) -> Result<()>,
    statuses: &OutArray<'_, i32>,
    deadlines: Option<&OutArray<'_, u64>>,
    count: usize,
) -> Result<&'a str> {
    // SAFETY: forwarded from the caller.
    let tenant = match unsafe { tenant_of(tenant, tenant_len) } {
        Err(e) if e.kind() != ErrorKind::InvalidUtf8 => return Err(e),
        t => t,
    };
    master.ensure_primary()?;
    tenant
        .and_then(|t| shared(t).map(|()| t))
        .map_err(|e| refuse_each(e, statuses, deadlines, count))
}

fn status_of<T>(r: &Result<T>) -> i32 {
    match r {
        Ok(_) => MOONCAKE_META_OK,
        Err(e) => code_of(e.kind()),
    }
}

/// Retains each of the `count` groups of `tenant` for `ttl_ms`
/// milliseconds: a group's deadline becomes `max(its active deadline, now +
/// ttl_ms)` (saturating at `MAX_INSTANT`; an expired deadline counts as
/// none), so a repeat extends and never shortens. The deadline is the
/// group's own: no member's soft pin changes, and no read, write or member
/// operation moves it. Groups need no member, before or after.
///
/// On `MOONCAKE_META_OK`, `out_statuses[i]` is group i's status and
/// `out_deadlines[i]` its deadline after the call (0 when its status is
/// not OK). A bad shared argument (TTL 0 or above
/// `max_group_retention_ttl_ms`, a bad tenant) returns
/// `MOONCAKE_META_INVALID_PARAMS` (a tenant that is not UTF-8:
/// `MOONCAKE_META_INVALID_UTF8`) with that code in every `out_statuses[i]`
/// and 0 in every `out_deadlines[i]`; an id that is not UTF-8 fails only
/// its own group (`MOONCAKE_META_INVALID_UTF8`, deadline 0); any other
/// failure (a NULL master, a NULL array or id with a non-zero count or
/// length, a standby) refuses the whole call with neither array written.
/// Either way nothing changed.
///
/// Ownership: nothing is transferred; the arrays are the caller's.
/// Thread safety: may be called concurrently with any call but `_free`;
/// the groups of one call are retained under one lock, in order.
///
/// # Safety
/// `m` NULL or a live master; `tenant` NULL or valid for `tenant_len`
/// bytes; `groups` and `group_lens` NULL (only with `count` 0) or valid for
/// `count` elements, each id valid for its length; `out_statuses` and
/// `out_deadlines` NULL (only with `count` 0) or valid for writing `count`
/// elements; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_retain_groups(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    groups: *const *const c_char,
    group_lens: *const usize,
    count: usize,
    ttl_ms: u64,
    out_statuses: *mut i32,
    out_deadlines: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_retain_groups", m, err, |master| {
            let statuses = OutArray::new(out_statuses, count, "groups", "out_statuses")?;
            let deadlines = OutArray::new(out_deadlines, count, "groups", "out_deadlines")?;
            let ids = group_ids(groups, group_lens, count)?;
            let tenant = shared_tenant(
                master,
                tenant,
                tenant_len,
                |t| master.group_retention_shared_check(t, Some(ttl_ms)),
                &statuses,
                Some(&deadlines),
                count,
            )?;
            let results = master.retain_groups(tenant, &ids.ids, ttl_ms)?;
            for (i, r) in ids.fail_bad(results).iter().enumerate() {
                statuses.set(i, status_of(r));
                deadlines.set(i, *r.as_ref().unwrap_or(&0));
            }
            Ok(())
        })
    }
}

/// Ends the retention of each of the `count` groups of `tenant` now.
/// Releasing a group with no stored deadline is OK and changes nothing; one
/// whose deadline has passed but is still stored is normalised as cleanup
/// would (the retained-group gauge -1, a group-released journal record).
///
/// On `MOONCAKE_META_OK`, `out_statuses[i]` is group i's status
/// (`MOONCAKE_META_INVALID_PARAMS` for an empty or NUL-containing id,
/// `MOONCAKE_META_INVALID_UTF8` for one that is not UTF-8). A
/// bad tenant returns `MOONCAKE_META_INVALID_PARAMS` (not UTF-8:
/// `MOONCAKE_META_INVALID_UTF8`) with that code in every `out_statuses[i]`;
/// any other failure refuses the whole call as for a retain, with
/// `out_statuses` not written. Either way nothing changed.
///
/// Ownership: nothing is transferred; the array is the caller's.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_retain_groups` (without `out_deadlines`).
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_release_groups(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    groups: *const *const c_char,
    group_lens: *const usize,
    count: usize,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_release_groups", m, err, |master| {
            let statuses = OutArray::new(out_statuses, count, "groups", "out_statuses")?;
            let ids = group_ids(groups, group_lens, count)?;
            let tenant = shared_tenant(
                master,
                tenant,
                tenant_len,
                |t| master.group_retention_shared_check(t, None),
                &statuses,
                None,
                count,
            )?;
            let results = master.release_groups(tenant, &ids.ids)?;
            for (i, r) in ids.fail_bad(results).iter().enumerate() {
                statuses.set(i, status_of(r));
            }
            Ok(())
        })
    }
}

/// A group's active retention deadline: `*out_has` = 1 and `*out_deadline`
/// = the deadline, or `*out_has` = 0 and `*out_deadline` = 0 when the group
/// is not retained or its deadline has passed. An empty or NUL-containing
/// group id is `MOONCAKE_META_INVALID_PARAMS`. Changes nothing.
///
/// Ownership: nothing is transferred; strings are only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `tenant`/`group` NULL or valid for their
/// lengths; `out_has` valid for writing an `int`, `out_deadline` for a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_group_retention_deadline(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    group: *const c_char,
    group_len: usize,
    out_has: *mut c_int,
    out_deadline: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_group_retention_deadline", m, err, |master| {
            let tenant = tenant_of(tenant, tenant_len)?;
            let group = input::string(group, group_len, "group")?;
            let has = Out::new(out_has, "out_has")?;
            let deadline = Out::new(out_deadline, "out_deadline")?;
            let d = master.group_retention_deadline(tenant, group)?;
            has.write(d.is_some() as c_int);
            deadline.write(d.unwrap_or(0));
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::master::{mooncake_meta_master_free, mooncake_meta_master_new};
    use crate::status::{
        MOONCAKE_META_GROUP_RETENTION_FULL, MOONCAKE_META_INVALID_PARAMS,
        MOONCAKE_META_INVALID_UTF8, MOONCAKE_META_NULL_ARGUMENT,
    };
    use std::ptr;

    fn master() -> *mut mooncake_meta_master {
        let mut cfg = ptr::null_mut();
        let mut m = ptr::null_mut();
        unsafe {
            assert_eq!(
                crate::config::mooncake_meta_config_new(&mut cfg, ptr::null_mut()),
                0
            );
            crate::config::mooncake_meta_config_set_manual_clock(cfg, 1_000, ptr::null_mut());
            crate::config::mooncake_meta_config_set_max_retained_groups(cfg, 2, ptr::null_mut());
            assert_eq!(mooncake_meta_master_new(cfg, &mut m, ptr::null_mut()), 0);
            crate::config::mooncake_meta_config_free(cfg);
        }
        m
    }

    fn retain(m: *mut mooncake_meta_master, ids: &[&[u8]], ttl: u64) -> (i32, Vec<i32>, Vec<u64>) {
        let ptrs: Vec<*const c_char> = ids.iter().map(|s| s.as_ptr().cast()).collect();
        let lens: Vec<usize> = ids.iter().map(|s| s.len()).collect();
        let mut st = vec![7; ids.len()];
        let mut dl = vec![7; ids.len()];
        let rc = unsafe {
            mooncake_meta_retain_groups(
                m,
                ptr::null(),
                0,
                ptrs.as_ptr(),
                lens.as_ptr(),
                ids.len(),
                ttl,
                st.as_mut_ptr(),
                dl.as_mut_ptr(),
                ptr::null_mut(),
            )
        };
        (rc, st, dl)
    }

    #[test]
    fn per_group_statuses_and_the_shared_refusal_are_written() {
        let m = master();
        let (rc, st, dl) = retain(m, &[b"a", b"", b"b", b"c"], 500);
        assert_eq!(rc, MOONCAKE_META_OK);
        assert_eq!(
            st,
            [
                MOONCAKE_META_OK,
                MOONCAKE_META_INVALID_PARAMS,
                MOONCAKE_META_OK,
                MOONCAKE_META_GROUP_RETENTION_FULL
            ]
        );
        assert_eq!(dl, [1_500, 0, 1_500, 0]);
        // A bad shared TTL refuses every group, changing nothing.
        let (rc, st, dl) = retain(m, &[b"a", b"d"], 0);
        assert_eq!(rc, MOONCAKE_META_INVALID_PARAMS);
        assert_eq!(st, [MOONCAKE_META_INVALID_PARAMS; 2]);
        assert_eq!(dl, [0, 0]);
        // An id that is not UTF-8 fails alone; "a" extends.
        let (rc, st, dl) = retain(m, &[b"a", b"\xff"], 10);
        assert_eq!(rc, MOONCAKE_META_OK);
        assert_eq!(st, [MOONCAKE_META_OK, MOONCAKE_META_INVALID_UTF8]);
        assert_eq!(dl, [1_500, 0]);
        let core = unsafe { crate::master::master_ref(m) };
        assert_eq!(core.retained_group_count(), 2);
        core.check_invariants().unwrap();
        unsafe { mooncake_meta_master_free(m) };
    }

    #[test]
    fn null_arrays_are_an_empty_batch_only_with_count_zero() {
        let m = master();
        unsafe {
            let rc = mooncake_meta_retain_groups(
                m,
                ptr::null(),
                0,
                ptr::null(),
                ptr::null(),
                0,
                10,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            );
            assert_eq!(rc, MOONCAKE_META_OK);
            let rc = mooncake_meta_release_groups(
                m,
                ptr::null(),
                0,
                ptr::null(),
                ptr::null(),
                1,
                ptr::null_mut(),
                ptr::null_mut(),
            );
            assert_eq!(rc, MOONCAKE_META_NULL_ARGUMENT);
            let mut has = 9;
            let mut d = 9;
            let g = b"g";
            let rc = mooncake_meta_group_retention_deadline(
                m,
                ptr::null(),
                0,
                g.as_ptr().cast(),
                1,
                &mut has,
                &mut d,
                ptr::null_mut(),
            );
            assert_eq!((rc, has, d), (MOONCAKE_META_OK, 0, 0));
            mooncake_meta_master_free(m);
        }
    }
}
