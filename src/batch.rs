//! Batch forms through the C ABI: Put/Upsert Start, End, Revoke, Exist,
//! GetReplicaList and Remove over many keys of one tenant. Keys are given as
//! `(const char *const *keys, const size_t *key_lens, size_t count)`.
//!
//! Every batch call writes `out_statuses[i]` (`count` entries) for each key
//! and returns `MOONCAKE_META_OK` only when every key succeeded. When the
//! batch as a whole is refused (a bad argument, a NULL master, a bad shared
//! configuration or tenant, too small a shared array) nothing is done and
//! every `out_statuses[i]` holds that one code; a malformed key fails on
//! its own; otherwise keys are processed in
//! order as single calls, each key's outputs are written, and the call
//! returns the status of the first key that failed, with `*err` saying
//! `keys[i]: <that key's message> (F of N keys failed)`. A panic inside the
//! library during the batch returns PANIC with every `out_statuses[i]`
//! PANIC too: which keys were processed before it is unknown, and the
//! master is poisoned. So, unless `out_statuses` itself is NULL with
//! `count > 0` (NULL_ARGUMENT, nothing written), `out_statuses` is always
//! the per-key truth, and a key is OK only if it succeeded.

// The C signatures are flat by design (no structs of pointers).
#![allow(clippy::too_many_arguments)]

use super::boundary;
use super::error::mooncake_meta_error;
use super::handle;
use super::input::{self, bool01, Index, Out};
use super::master::mooncake_meta_master;
use super::replica::{mooncake_meta_replica, too_small, ReplicaArray};
use super::status::{code_of, mooncake_meta_status, MOONCAKE_META_OK, MOONCAKE_META_PANIC};
use super::write::{requested, selector};
use super::write_config::{check, mooncake_meta_write_config, read_extended};
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use mooncake_meta_core::types::{validate_name, Key, StartedWrite, DEFAULT_TENANT};
use mooncake_meta_core::Bounded;
use mooncake_meta_core::Master;
use std::fmt::Display;
use std::marker::PhantomData;
use std::mem::size_of;
use std::os::raw::{c_char, c_int};

/// `count` elements at `ptr`: `(NULL, 0)` is empty, `(NULL, n > 0)` is
/// `NULL_ARGUMENT`.
///
/// # Safety
/// A non-NULL `ptr` must be valid for reading `count` elements for `'a`.
pub(crate) unsafe fn array<'a, T>(
    ptr: *const T,
    count: usize,
    arg: impl Display,
) -> Result<&'a [T]> {
    if !check_array(ptr, count, "keys", arg)? {
        return Ok(&[]);
    }
    // SAFETY: non-NULL, bounded, validity (initialized elements) promised
    // by the caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) })
}

/// The checks of [`array`] without making a slice of the elements (an
/// output array may hold uninitialized memory, which no slice may cover):
/// `Ok(false)` for `(NULL, 0)`, `Ok(true)` for a non-NULL `ptr` whose
/// `count` elements fit in `isize::MAX` bytes, `NULL_ARGUMENT` for `(NULL,
/// n > 0)` (naming the batch's `count` `items`).
pub(crate) fn check_array<T>(
    ptr: *const T,
    count: usize,
    items: &str,
    arg: impl Display,
) -> Result<bool> {
    if ptr.is_null() {
        return if count == 0 {
            Ok(false)
        } else {
            Err(Error::new(
                ErrorKind::NullArgument,
                format!("{arg} is NULL but the batch has {count} {items}"),
            ))
        };
    }
    if count > isize::MAX as usize / size_of::<T>().max(1) {
        return Err(Error::invalid(format!("{arg}: count {count} is too large")));
    }
    Ok(true)
}

/// A caller-owned output array of one entry per key (or per group),
/// written element by element through its pointer: the caller may hand
/// in uninitialized memory (`malloc`), so no slice is ever made of it.
pub(crate) struct OutArray<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<T: Copy> OutArray<'_, T> {
    /// An array of `len` entries at `ptr` (`items` names what the batch
    /// has one entry per, for the NULL message).
    ///
    /// # Safety
    /// A non-NULL `ptr` must be valid for writing `len` elements.
    pub(crate) unsafe fn new(ptr: *mut T, len: usize, items: &str, arg: &str) -> Result<Self> {
        check_array(ptr.cast_const(), len, items, arg)?;
        Ok(OutArray {
            ptr,
            len,
            _borrow: PhantomData,
        })
    }

    pub(crate) fn set(&self, i: usize, v: T) {
        assert!(i < self.len, "batch output index {i} out of {}", self.len);
        // SAFETY: in bounds; validity promised at `new`.
        unsafe { self.ptr.add(i).write(v) }
    }

    fn fill(&self, v: T) {
        (0..self.len).for_each(|i| self.set(i, v));
    }
}

/// The keys of a batch, all in `tenant` (`(NULL, 0)` = the default tenant).
/// A bad tenant or key array (a NULL key with a length, or a length past
/// `PTRDIFF_MAX`, among them) refuses the whole batch; a key that is empty
/// or not UTF-8 fails on its own, as a single call on it would (see
/// [`BatchKeys`]).
///
/// # Safety
/// Pointers NULL or valid as documented for the batch functions.
unsafe fn parse_keys<'a>(
    tenant: *const c_char,
    tenant_len: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
) -> Result<BatchKeys<'a>> {
    // SAFETY (whole body): forwarded from the caller.
    let tenant = unsafe { input::string(tenant, tenant_len, "tenant") }?;
    let tenant = if tenant.is_empty() {
        DEFAULT_TENANT
    } else {
        tenant
    };
    validate_name("tenant", tenant)?;
    let ptrs = unsafe { array(keys, count, "keys") }?;
    let lens = unsafe { array(key_lens, count, "key_lens") }?;
    let mut bad = Vec::new();
    let mut keys = Vec::with_capacity(ptrs.len());
    for (i, (&p, &len)) in ptrs.iter().zip(lens).enumerate() {
        let key = match unsafe { input::string(p, len, Index("keys", i)) } {
            Ok("") => Err(Error::invalid(format!("keys[{i}] is empty"))),
            Ok(key) => Ok(key),
            Err(e) if e.kind() == ErrorKind::InvalidUtf8 => Err(e),
            // A NULL key with a length, or one longer than any buffer, is
            // a bad argument.
            Err(e) => return Err(e),
        };
        keys.push(Key {
            tenant,
            key: key.unwrap_or_else(|e| {
                bad.push((i, e));
                ""
            }),
        });
    }
    Ok(BatchKeys { keys, bad })
}

/// A batch's keys as [`parse_keys`] read them. A key that is empty or not
/// UTF-8 goes to the core as the empty key, which the core refuses for that
/// key alone (`INVALID_PARAMS`, nothing done, like a single call on it),
/// and [`run`](Self::run) then gives it its own error (`INVALID_PARAMS`,
/// or `INVALID_UTF8` naming the key); the other keys are processed.
struct BatchKeys<'a> {
    keys: Vec<Key<'a>>,
    bad: Vec<(usize, Error)>,
}

impl<'a> BatchKeys<'a> {
    /// Runs a batch's `body` over the keys; each bad key's result is its
    /// own error.
    fn run(
        self,
        body: impl FnOnce(Vec<Key<'a>>) -> Result<Vec<Result<()>>>,
    ) -> Result<Vec<Result<()>>> {
        let mut results = body(self.keys)?;
        for (i, e) in self.bad {
            results[i] = Err(e);
        }
        Ok(results)
    }
}

/// Runs a batch: checks `out_statuses`, borrows the master, runs `body`
/// (which writes the per-key outputs and returns the per-key results), then
/// writes the statuses and reports the first failure, as the module doc
/// says. An `Err` from `body` refuses the whole batch; a panic leaves every
/// status PANIC.
///
/// # Safety
/// `m` NULL or a live master; `out_statuses` NULL or valid for writing
/// `count` entries; `err` NULL or writable.
pub(crate) unsafe fn batch(
    function: &'static str,
    m: *const mooncake_meta_master,
    count: usize,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
    body: impl FnOnce(&Master) -> Result<Vec<Result<()>>>,
) -> mooncake_meta_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        boundary::call(function, err, || {
            let statuses = OutArray::new(out_statuses, count, "keys", "out_statuses")?;
            // Until the body has returned, every key's outcome is unknown:
            // a panic from here on (caught by `boundary::call`) leaves
            // each status PANIC, never a zero that reads as OK.
            statuses.fill(MOONCAKE_META_PANIC);
            let results = handle::borrow::<mooncake_meta_master>(m, "master")
                .and_then(|master| master.with(body));
            let results = match results {
                Ok(r) => r,
                Err(e) => {
                    statuses.fill(code_of(e.kind()));
                    return Err(e);
                }
            };
            assert_eq!(results.len(), count, "one result per key");
            let mut first: Option<(usize, &Error)> = None;
            let mut failed = 0;
            for (i, r) in results.iter().enumerate() {
                match r {
                    Ok(()) => statuses.set(i, MOONCAKE_META_OK),
                    Err(e) => {
                        statuses.set(i, code_of(e.kind()));
                        failed += 1;
                        first.get_or_insert((i, e));
                    }
                }
            }
            match first {
                None => Ok(()),
                Some((i, e)) => Err(Error::new(
                    e.kind(),
                    format!(
                        "keys[{i}]: {} ({failed} of {count} keys failed)",
                        e.message()
                    ),
                )),
            }
        })
    }
}

/// Which batch Start.
#[derive(Clone, Copy)]
enum Start {
    Put,
    Upsert,
}

/// The body of both batch Starts.
///
/// # Safety
/// Pointers valid as documented for `mooncake_meta_batch_put_start`.
unsafe fn batch_start(
    master: &Master,
    which: Start,
    client: u64,
    ks: Vec<Key<'_>>,
    sizes: *const u64,
    cfg: *const mooncake_meta_write_config,
    out_replicas: *mut mooncake_meta_replica,
    replicas_cap: usize,
    out_replica_counts: *mut usize,
    out_tokens: *mut u64,
) -> Result<Vec<Result<()>>> {
    let count = ks.len();
    // SAFETY (whole body): forwarded from the caller.
    let sizes = unsafe { array(sizes, count, "sizes") }?;
    let cfg = unsafe { read_extended(cfg, "cfg") }?;
    let out = unsafe { ReplicaArray::new(out_replicas, replicas_cap, "out_replicas") }?;
    let counts = unsafe { OutArray::new(out_replica_counts, count, "keys", "out_replica_counts") }?;
    let tokens = unsafe { OutArray::new(out_tokens, count, "keys", "out_tokens") }?;
    // A bad shared configuration refuses every key (docs/CONTRACT.md §3).
    check(&cfg, "cfg")?;
    cfg.soft_pin
        .resolve(master.config())
        .map_err(|e| Error::new(e.kind(), format!("cfg: {}", e.message())))?;
    let stride = requested(&cfg);
    let needed = count.checked_mul(stride).ok_or_else(|| {
        Error::invalid(format!("{count} keys x {stride} replicas overflow size_t"))
    })?;
    // Nothing runs against a buffer too small for its answers: a standby
    // refuses every key as UNAVAILABLE_IN_CURRENT_STATUS (docs/CONTRACT.md
    // §12.3) whatever the room given, a primary answers BUFFER_TOO_SMALL.
    // Were a standby's batch let through to the core's own role check, a
    // promote in between would start keys whose answers do not fit.
    if needed > replicas_cap {
        master.ensure_primary()?;
        return Err(too_small("out_replicas", needed, replicas_cap));
    }
    let started: Vec<Result<Bounded<StartedWrite>>> = match which {
        Start::Put => master
            .batch_put_start(client, &ks, sizes, &cfg)
            .into_iter()
            .map(|r| r.map(Bounded::Fits))
            .collect(),
        Start::Upsert => ks
            .iter()
            .zip(sizes)
            .map(|(k, &size)| master.upsert_start_bounded(client, *k, size, &cfg, stride))
            .collect(),
    };
    Ok(started
        .into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Ok(Bounded::Fits(w)) => {
                out.write(i * stride, &w.replicas);
                counts.set(i, w.replicas.len());
                tokens.set(i, w.token);
                Ok(())
            }
            Ok(Bounded::TooSmall(n)) => {
                counts.set(i, n);
                tokens.set(i, 0);
                Err(too_small("the key's share of out_replicas", n, stride))
            }
            Err(e) => {
                counts.set(i, 0);
                tokens.set(i, 0);
                Err(e)
            }
        })
        .collect())
}

/// PutStart for each of `count` keys of one tenant, with one shared
/// extended configuration `cfg` (NULL = defaults) and per-key sizes
/// `sizes[i]`.
///
/// Replica layout: let `stride = cfg.memory_replicas + cfg.nof_ssd_replicas`
/// (1 for NULL). `out_replicas` has `replicas_cap >= count * stride`
/// entries (else the whole batch is refused: `MOONCAKE_META_BUFFER_TOO_SMALL`,
/// or on a standby `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`; counts
/// and tokens are then not written); key
/// `i`'s staged replicas are `out_replicas[i * stride ..][0 ..
/// out_replica_counts[i]]`, its write token `out_tokens[i]`. A key that
/// fails gets count 0 and token 0, and its replica slots are not written.
/// A bad shared configuration (e.g. a TTL above the master's maximum)
/// refuses every key.
///
/// Statuses, for every batch function: `out_statuses[i]` is written for
/// every key, and the call returns `MOONCAKE_META_OK` only when every key
/// succeeded. When the batch as a whole is refused (a bad argument or
/// shared configuration, a bad tenant, a NULL master, too small a shared
/// array) nothing is done and every `out_statuses[i]` holds that one code.
/// A key that is empty (`MOONCAKE_META_INVALID_PARAMS`) or not UTF-8
/// (`MOONCAKE_META_INVALID_UTF8`) fails on its own, as a single call on it
/// would, and the other keys are processed.
/// Otherwise the keys are processed in order as single calls (a repeated
/// key sees the earlier entry's effect), each key's outputs are written,
/// and the call returns the status of the first key that failed, `*err`
/// reading `keys[i]: <its message> (F of N keys failed)`. A panic inside
/// the library returns PANIC with every status PANIC (which keys it had
/// processed is unknown; the master is poisoned). Only a NULL
/// `out_statuses` with `count > 0` (NULL_ARGUMENT) leaves the statuses
/// unwritten. `count == 0` with valid arguments is an empty batch: OK.
///
/// Ownership: nothing is transferred; every array is owned by the caller.
/// Thread safety: may be called concurrently with any call but `_free`;
/// keys are processed one by one, not atomically.
///
/// # Safety
/// `m` NULL or a live master; `tenant` NULL or valid for `tenant_len`
/// bytes; `keys`, `key_lens`, `sizes` NULL (count 0) or valid for reading
/// `count` entries, each `keys[i]` valid for `key_lens[i]` bytes; `cfg`
/// NULL or a readable extended config; `out_replicas` NULL or valid for
/// writing `replicas_cap` replicas; `out_replica_counts`, `out_tokens`,
/// `out_statuses` valid for writing `count` entries; `err` NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_batch_put_start(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    sizes: *const u64,
    cfg: *const mooncake_meta_write_config,
    out_replicas: *mut mooncake_meta_replica,
    replicas_cap: usize,
    out_replica_counts: *mut usize,
    out_tokens: *mut u64,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        batch(
            "mooncake_meta_batch_put_start",
            m,
            count,
            out_statuses,
            err,
            |master| {
                parse_keys(tenant, tenant_len, keys, key_lens, count)?.run(|ks| {
                    batch_start(
                        master,
                        Start::Put,
                        client,
                        ks,
                        sizes,
                        cfg,
                        out_replicas,
                        replicas_cap,
                        out_replica_counts,
                        out_tokens,
                    )
                })
            },
        )
    }
}

/// UpsertStart for each key, laid out exactly as
/// `mooncake_meta_batch_put_start`. An in-place upsert (same size) returns
/// the object's existing MEMORY/NOF_SSD replicas; if they outnumber
/// `stride`, that key alone fails with `MOONCAKE_META_BUFFER_TOO_SMALL`,
/// `out_replica_counts[i]` = the count needed, and nothing is done to it
/// (retry it with `mooncake_meta_upsert_start`).
///
/// Ownership: nothing is transferred; every array is owned by the caller.
/// Thread safety: may be called concurrently with any call but `_free`;
/// keys are processed one by one, not atomically.
///
/// # Safety
/// As `mooncake_meta_batch_put_start`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_batch_upsert_start(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    sizes: *const u64,
    cfg: *const mooncake_meta_write_config,
    out_replicas: *mut mooncake_meta_replica,
    replicas_cap: usize,
    out_replica_counts: *mut usize,
    out_tokens: *mut u64,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        batch(
            "mooncake_meta_batch_upsert_start",
            m,
            count,
            out_statuses,
            err,
            |master| {
                parse_keys(tenant, tenant_len, keys, key_lens, count)?.run(|ks| {
                    batch_start(
                        master,
                        Start::Upsert,
                        client,
                        ks,
                        sizes,
                        cfg,
                        out_replicas,
                        replicas_cap,
                        out_replica_counts,
                        out_tokens,
                    )
                })
            },
        )
    }
}

/// Which batch End/Revoke.
#[derive(Clone, Copy)]
enum Finish {
    End,
    Revoke,
}

/// The body of both batch End/Revoke.
///
/// # Safety
/// `tokens` NULL or valid for reading `ks.len()` entries.
unsafe fn batch_finish(
    master: &Master,
    which: Finish,
    client: u64,
    ks: Vec<Key<'_>>,
    raw_selector: u32,
    tokens: *const u64,
) -> Result<Vec<Result<()>>> {
    let sel = selector(raw_selector)?;
    // NULL tokens: no key names a token.
    let tokens = if tokens.is_null() {
        None
    } else {
        // SAFETY: forwarded from the caller.
        Some(unsafe { array(tokens, ks.len(), "tokens") }?)
    };
    Ok(match which {
        Finish::End => master.batch_put_end(client, &ks, sel, tokens),
        Finish::Revoke => master.batch_put_revoke(client, &ks, sel, tokens),
    })
}

/// PutEnd (= UpsertEnd) for each key with one `selector`
/// (`MOONCAKE_META_SELECT_*`). `tokens` is NULL (no key names a token) or
/// `count` entries where 0 names none. Statuses and `*err` as
/// `mooncake_meta_batch_put_start` says for every batch.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`;
/// keys are processed one by one, not atomically.
///
/// # Safety
/// `m` NULL or a live master; `tenant` NULL or valid for `tenant_len`
/// bytes; `keys`, `key_lens` NULL (count 0) or valid for reading `count`
/// entries, each `keys[i]` valid for `key_lens[i]` bytes; `tokens` NULL or
/// valid for reading `count` entries; `out_statuses` valid for writing
/// `count` entries; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_batch_put_end(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    selector: u32,
    tokens: *const u64,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        batch(
            "mooncake_meta_batch_put_end",
            m,
            count,
            out_statuses,
            err,
            |master| {
                parse_keys(tenant, tenant_len, keys, key_lens, count)?
                    .run(|ks| batch_finish(master, Finish::End, client, ks, selector, tokens))
            },
        )
    }
}

/// PutRevoke (= UpsertRevoke) for each key; arguments as
/// `mooncake_meta_batch_put_end`.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`;
/// keys are processed one by one, not atomically.
///
/// # Safety
/// As `mooncake_meta_batch_put_end`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_batch_put_revoke(
    m: *const mooncake_meta_master,
    client: u64,
    tenant: *const c_char,
    tenant_len: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    selector: u32,
    tokens: *const u64,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        batch(
            "mooncake_meta_batch_put_revoke",
            m,
            count,
            out_statuses,
            err,
            |master| {
                parse_keys(tenant, tenant_len, keys, key_lens, count)?
                    .run(|ks| batch_finish(master, Finish::Revoke, client, ks, selector, tokens))
            },
        )
    }
}

/// Exist for each key: `out_exists[i]` = 1 if key `i` has a readable
/// replica (and its read lease is granted), else 0. Statuses and `*err` as
/// `mooncake_meta_batch_put_start` says for every batch.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_batch_put_end` (without `tokens`), and `out_exists`
/// valid for writing `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_batch_exist(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    out_exists: *mut u8,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        batch(
            "mooncake_meta_batch_exist",
            m,
            count,
            out_statuses,
            err,
            |master| {
                parse_keys(tenant, tenant_len, keys, key_lens, count)?.run(|ks| {
                    let exists = OutArray::new(out_exists, count, "keys", "out_exists")?;
                    Ok(master
                        .batch_exist(&ks)
                        .into_iter()
                        .enumerate()
                        .map(|(i, r)| {
                            exists.set(i, u8::from(*r.as_ref().unwrap_or(&false)));
                            r.map(drop)
                        })
                        .collect())
                })
            },
        )
    }
}

/// GetReplicaList for each key into one flat array: key `i`'s readable
/// replicas are `out_replicas[off_i .. off_i + out_replica_counts[i]]`
/// where `off_i` = the sum of the counts of the keys before it whose status
/// is OK (a failed key's count is not part of the layout); `*out_len` = the
/// total written. Each key that succeeds gets its read lease.
///
/// Capacity: if the keys' readable replicas outnumber `cap`, the whole batch
/// is `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len` = the total needed,
/// no lease granted and nothing else written but the statuses (all
/// BUFFER_TOO_SMALL); pass `(NULL, 0)` to ask for the total. Should a key
/// gain replicas between that check and its read (a concurrent write), that
/// key alone fails with BUFFER_TOO_SMALL, its count = its need, no lease.
/// A failed key has count 0 (missing -> OBJECT_NOT_FOUND, nothing readable ->
/// REPLICA_IS_NOT_READY). Statuses and `*err` as `mooncake_meta_batch_put_start`
/// says for every batch.
///
/// Ownership: nothing is transferred; every array is owned by the caller.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// As `mooncake_meta_batch_put_end` (without `tokens`); `out_replicas` NULL
/// or valid for writing `cap` replicas; `out_replica_counts` valid for
/// writing `count` entries; `out_len` valid for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_batch_get_replica_list(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    out_replicas: *mut mooncake_meta_replica,
    cap: usize,
    out_replica_counts: *mut usize,
    out_len: *mut usize,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        batch(
            "mooncake_meta_batch_get_replica_list",
            m,
            count,
            out_statuses,
            err,
            |master| {
                parse_keys(tenant, tenant_len, keys, key_lens, count)?.run(|ks| {
                    let out = ReplicaArray::new(out_replicas, cap, "out_replicas")?;
                    let counts =
                        OutArray::new(out_replica_counts, count, "keys", "out_replica_counts")?;
                    let out_len = Out::new(out_len, "out_len")?;
                    // Counts can only grow by a concurrent write, so a key
                    // counted here can still overflow below: the core batch
                    // gives each key what the keys before it left of `cap`.
                    let needed = master
                        .batch_readable_count(&ks)
                        .into_iter()
                        .try_fold(0usize, usize::checked_add)
                        .unwrap_or(usize::MAX);
                    if needed > cap {
                        out_len.write(needed);
                        return Err(too_small("out_replicas", needed, cap));
                    }
                    let mut at = 0;
                    let results = master
                        .batch_get_replica_list_bounded(&ks, cap)
                        .into_iter()
                        .enumerate()
                        .map(|(i, r)| match r {
                            Ok(Bounded::Fits(v)) => {
                                out.write(at, &v);
                                counts.set(i, v.len());
                                at += v.len();
                                Ok(())
                            }
                            Ok(Bounded::TooSmall(n)) => {
                                counts.set(i, n);
                                Err(too_small("out_replicas", at + n, cap))
                            }
                            Err(e) => {
                                counts.set(i, 0);
                                Err(e)
                            }
                        })
                        .collect();
                    out_len.write(at);
                    Ok(results)
                })
            },
        )
    }
}

/// Remove for each key; `force` must be 0 or 1 (checked for the whole
/// batch). Statuses and `*err` as `mooncake_meta_batch_put_start`
/// says for every batch.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`;
/// keys are processed one by one, not atomically.
///
/// # Safety
/// As `mooncake_meta_batch_put_end` (without `tokens`).
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_batch_remove(
    m: *const mooncake_meta_master,
    tenant: *const c_char,
    tenant_len: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    force: c_int,
    out_statuses: *mut i32,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        batch(
            "mooncake_meta_batch_remove",
            m,
            count,
            out_statuses,
            err,
            |master| {
                parse_keys(tenant, tenant_len, keys, key_lens, count)?.run(|ks| {
                    let force = bool01(force, "force")?;
                    Ok(master.batch_remove(&ks, force))
                })
            },
        )
    }
}
