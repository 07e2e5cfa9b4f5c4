//! The master configuration handle: `_new` gives the documented defaults
//! (docs/CONTRACT.md §9), one setter per field, `_validate` to check early. Setters
//! reject only values the field cannot hold; the rules between fields are
//! checked by `MasterConfig::validate`, at master creation or `_validate`.

use super::boundary;
use super::error::mooncake_meta_error;
use super::handle::{self, Opaque};
use super::input::{self, Out};
use super::status::mooncake_meta_status;
use mooncake_meta_core::clock::{Clock, ClockSource};
use mooncake_meta_core::config::MasterConfig;
use mooncake_meta_core::error::{Error, Result};
use parking_lot::Mutex;
use std::os::raw::c_int;

/// The largest TTL, timeout or interval a configuration may hold, in
/// milliseconds (`INT64_MAX`, the value of `MAX_INSTANT`). The setters store
/// any value; `mooncake_meta_config_validate` and master creation refuse a
/// duration above this with `MOONCAKE_META_INVALID_PARAMS` naming the
/// setting. Every instant the master computes saturates at `INT64_MAX`.
pub const MOONCAKE_META_MAX_DURATION_MS: u64 = 9_223_372_036_854_775_807;
const _: () = assert!(MOONCAKE_META_MAX_DURATION_MS == mooncake_meta_core::MAX_DURATION_MS);

/// The largest `expected_objects` a configuration may hold (2^32). The
/// setter stores any value; `mooncake_meta_config_validate` and master
/// creation refuse a larger one with `MOONCAKE_META_INVALID_PARAMS` naming
/// `expected_objects`.
pub const MOONCAKE_META_MAX_EXPECTED_OBJECTS: u64 = 4_294_967_296;
const _: () =
    assert!(MOONCAKE_META_MAX_EXPECTED_OBJECTS == mooncake_meta_core::MAX_EXPECTED_OBJECTS);

/// The largest `journal_capacity_bytes` a configuration may hold (2^40,
/// 1 TiB). The setter stores any value; `mooncake_meta_config_validate` and
/// master creation refuse a larger one with `MOONCAKE_META_INVALID_PARAMS`
/// naming `journal_capacity_bytes`.
pub const MOONCAKE_META_MAX_JOURNAL_CAPACITY_BYTES: u64 = 1_099_511_627_776;
const _: () = assert!(
    MOONCAKE_META_MAX_JOURNAL_CAPACITY_BYTES == mooncake_meta_core::MAX_JOURNAL_CAPACITY_BYTES
);

/// A master configuration under construction. Opaque; created by
/// `mooncake_meta_config_new`, released by `mooncake_meta_config_free`.
/// Internally locked: setters may race without corrupting it (the last
/// write to a field wins).
pub struct mooncake_meta_config {
    _private: [u8; 0],
}

impl Opaque for mooncake_meta_config {
    type Inner = Mutex<MasterConfig>;
    const C_NAME: &'static str = "mooncake_meta_config";
    const FREE: &'static str = "mooncake_meta_config_free";
}

/// A copy of the configuration behind `cfg`, for functions that build from
/// it (master creation). Not validated.
///
/// # Safety
/// `cfg` must be NULL or a live `mooncake_meta_config`.
pub(crate) unsafe fn read(cfg: *const mooncake_meta_config, arg: &str) -> Result<MasterConfig> {
    // SAFETY: forwarded.
    Ok(unsafe { handle::borrow(cfg, arg) }?.with(|c| c.lock().clone()))
}

/// Every check master creation makes on a configuration.
pub(crate) fn validate(config: &MasterConfig) -> Result<()> {
    config.validate()?;
    Clock::new(config.clock.clone()).map(drop)
}

/// Runs one setter under the boundary with the config locked.
///
/// # Safety
/// As every setter: `cfg` NULL or live, `err` NULL or writable.
unsafe fn update(
    function: &'static str,
    cfg: *mut mooncake_meta_config,
    err: *mut *mut mooncake_meta_error,
    set: impl FnOnce(&mut MasterConfig) -> Result<()>,
) -> mooncake_meta_status {
    // SAFETY: forwarded from the exported function's contract.
    unsafe {
        boundary::with_handle(function, cfg.cast_const(), "cfg", err, |c| {
            set(&mut c.lock())
        })
    }
}

/// Creates a configuration holding the documented defaults (system clock,
/// background tasks on).
///
/// Ownership: on success `*out_cfg` is a new handle owned by the caller, to
/// be released with `mooncake_meta_config_free`; on failure `*out_cfg` is
/// not written.
/// Thread safety: may be called from any thread.
///
/// # Safety
/// `out_cfg` must be valid for writing one pointer; `err` must be NULL or
/// valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_new(
    out_cfg: *mut *mut mooncake_meta_config,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::call("mooncake_meta_config_new", err, || {
            let out = Out::new(out_cfg, "out_cfg")?;
            out.write(handle::into_raw(Mutex::new(MasterConfig::default())));
            Ok(())
        })
    }
}

/// Releases a configuration. `mooncake_meta_config_free(NULL)` does nothing;
/// a configuration poisoned by a panic may (and should) still be freed.
/// A master created from it keeps its own copy.
///
/// Ownership: takes ownership of `cfg`; it is invalid afterwards.
/// Thread safety: no other thread may use `cfg` concurrently.
///
/// # Safety
/// `cfg` must be NULL or a configuration from `mooncake_meta_config_new`
/// not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_free(cfg: *mut mooncake_meta_config) {
    // SAFETY: the caller upholds the documented contract.
    boundary::guard((), || unsafe { handle::free(cfg) })
}

/// Checks the configuration as master creation will (docs/CONTRACT.md section 9): default
/// soft-pin TTL <= maximum, ratios in range, release timeout > discard
/// timeout, shard count in [1, 2^20], expected objects at most
/// `MOONCAKE_META_MAX_EXPECTED_OBJECTS`, manual clock start below
/// `MAX_INSTANT`. `MOONCAKE_META_INVALID_PARAMS` names the bad field.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_validate(
    cfg: *const mooncake_meta_config,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::call("mooncake_meta_config_validate", err, || {
            validate(&read(cfg, "cfg")?)
        })
    }
}

/// Sets the read lease that Get and Exist grant, in milliseconds
/// (default 10000).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_default_kv_lease_ttl_ms(
    cfg: *mut mooncake_meta_config,
    ttl_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_default_kv_lease_ttl_ms",
            cfg,
            err,
            |c| {
                c.default_kv_lease_ttl_ms = ttl_ms;
                Ok(())
            },
        )
    }
}

/// Sets the soft-pin TTL of a write that asks for ENABLE without a TTL, in
/// milliseconds (default 1800000); must not exceed the maximum.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(
    cfg: *mut mooncake_meta_config,
    ttl_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_default_kv_soft_pin_ttl_ms",
            cfg,
            err,
            |c| {
                c.default_kv_soft_pin_ttl_ms = ttl_ms;
                Ok(())
            },
        )
    }
}

/// Sets the largest soft-pin TTL a write may request, in milliseconds
/// (default 86400000).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(
    cfg: *mut mooncake_meta_config,
    ttl_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_max_kv_soft_pin_ttl_ms",
            cfg,
            err,
            |c| {
                c.max_kv_soft_pin_ttl_ms = ttl_ms;
                Ok(())
            },
        )
    }
}

/// Sets whether eviction's second pass may take actively soft-pinned
/// objects: 1 (default) or 0. Any other value is
/// `MOONCAKE_META_INVALID_PARAMS` and leaves the field unchanged.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_allow_evict_soft_pinned_objects(
    cfg: *mut mooncake_meta_config,
    allow: c_int,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_allow_evict_soft_pinned_objects",
            cfg,
            err,
            |c| {
                c.allow_evict_soft_pinned_objects = input::bool01(allow, "allow")?;
                Ok(())
            },
        )
    }
}

/// Sets the fraction of the eviction base evicted per run (default 0.05;
/// valid range [0, 1], checked at validation).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_eviction_ratio(
    cfg: *mut mooncake_meta_config,
    ratio: f64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update("mooncake_meta_config_set_eviction_ratio", cfg, err, |c| {
            c.eviction_ratio = ratio;
            Ok(())
        })
    }
}

/// Sets the memory usage above which eviction runs (default 0.90; valid
/// range (0, 1], checked at validation).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_eviction_high_watermark_ratio(
    cfg: *mut mooncake_meta_config,
    ratio: f64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_eviction_high_watermark_ratio",
            cfg,
            err,
            |c| {
                c.eviction_high_watermark_ratio = ratio;
                Ok(())
            },
        )
    }
}

/// Sets how long a write stays young (blocking a PutStart on its key), in
/// milliseconds (default 30000).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_put_start_discard_timeout_ms(
    cfg: *mut mooncake_meta_config,
    timeout_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_put_start_discard_timeout_ms",
            cfg,
            err,
            |c| {
                c.put_start_discard_timeout_ms = timeout_ms;
                Ok(())
            },
        )
    }
}

/// Sets how long discarded buffers are held, and after which stale writes
/// are swept, in milliseconds (default 600000; must exceed the discard
/// timeout).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_put_start_release_timeout_ms(
    cfg: *mut mooncake_meta_config,
    timeout_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_put_start_release_timeout_ms",
            cfg,
            err,
            |c| {
                c.put_start_release_timeout_ms = timeout_ms;
                Ok(())
            },
        )
    }
}

/// Sets the period of the soft-pin expiration cleanup, in milliseconds
/// (default 1000; 0 = no background cleanup).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_soft_pin_cleanup_interval_ms(
    cfg: *mut mooncake_meta_config,
    interval_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_soft_pin_cleanup_interval_ms",
            cfg,
            err,
            |c| {
                c.soft_pin_cleanup_interval_ms = interval_ms;
                Ok(())
            },
        )
    }
}

/// Sets the period of the eviction check, in milliseconds (default 10;
/// 0 = no background eviction).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_eviction_check_interval_ms(
    cfg: *mut mooncake_meta_config,
    interval_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_eviction_check_interval_ms",
            cfg,
            err,
            |c| {
                c.eviction_check_interval_ms = interval_ms;
                Ok(())
            },
        )
    }
}

/// Sets the period of the stale-write sweep and discarded-buffer release,
/// in milliseconds (default 1000; 0 = no background sweep).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_sweep_interval_ms(
    cfg: *mut mooncake_meta_config,
    interval_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_sweep_interval_ms",
            cfg,
            err,
            |c| {
                c.sweep_interval_ms = interval_ms;
                Ok(())
            },
        )
    }
}

/// Sets the largest TTL `mooncake_meta_retain_groups` accepts, in
/// milliseconds (default 86400000; must be > 0, checked at validation).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_max_group_retention_ttl_ms(
    cfg: *mut mooncake_meta_config,
    ttl_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_max_group_retention_ttl_ms",
            cfg,
            err,
            |c| {
                c.max_group_retention_ttl_ms = ttl_ms;
                Ok(())
            },
        )
    }
}

/// Sets how many groups may be actively retained at once (default 65536;
/// must be >= 1, checked at validation). A count the platform's `size_t`
/// cannot hold is `MOONCAKE_META_INVALID_PARAMS`.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_max_retained_groups(
    cfg: *mut mooncake_meta_config,
    max_groups: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_max_retained_groups",
            cfg,
            err,
            |c| {
                c.max_retained_groups = usize::try_from(max_groups).map_err(|_| {
                    Error::invalid(format!(
                        "max_retained_groups {max_groups} does not fit in size_t"
                    ))
                })?;
                Ok(())
            },
        )
    }
}

/// Sets the number of metadata shards (default 1024; valid range
/// [1, 1048576], checked at validation). A count the platform's `size_t`
/// cannot hold is `MOONCAKE_META_INVALID_PARAMS`.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_shard_count(
    cfg: *mut mooncake_meta_config,
    shard_count: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update("mooncake_meta_config_set_shard_count", cfg, err, |c| {
            c.shard_count = usize::try_from(shard_count).map_err(|_| {
                Error::invalid(format!("shard_count {shard_count} does not fit in size_t"))
            })?;
            Ok(())
        })
    }
}

/// Sets how many objects (all tenants) the master expects to hold; 0 (the
/// default) = no presizing. Master creation then pre-sizes every shard's
/// object table for ceil(expected_objects / shard_count) objects, so
/// filling it up to that many never rehashes a table; more objects than
/// expected are fine. At most `MOONCAKE_META_MAX_EXPECTED_OBJECTS`, and
/// at most 3 * 2^30 objects per shard, checked at validation; creation
/// fails with
/// `MOONCAKE_META_INVALID_PARAMS` if the tables cannot be allocated.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_expected_objects(
    cfg: *mut mooncake_meta_config,
    expected_objects: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update("mooncake_meta_config_set_expected_objects", cfg, err, |c| {
            c.expected_objects = expected_objects;
            Ok(())
        })
    }
}

/// With `expected_objects` > 0, makes the master allocate every shard's
/// presized table (the records' arena and the hash index), and the segment
/// allocators' bookkeeping for that many buffers, at creation, in mappings
/// advised for transparent huge pages, and make all of it
/// resident then (`commit_presized` = 1), or leave presized tables on the
/// heap, resident as they are written (0, the default). The master then
/// holds that memory from its creation, and a first write into a presized
/// table never waits on a page fault (docs/CONTRACT.md section 9). Huge
/// pages are a request: a kernel that declines them backs the mapping with
/// base pages, still resident at creation; a system that cannot give the
/// mapping, or refuses to populate it, leaves the master presized as with
/// 0, silently.
/// A restore stages its state the same way, in a second mapping while the
/// first is still held. Without `expected_objects` it does nothing. Any
/// other value is `MOONCAKE_META_INVALID_PARAMS`.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_commit_presized(
    cfg: *mut mooncake_meta_config,
    commit_presized: c_int,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update("mooncake_meta_config_set_commit_presized", cfg, err, |c| {
            c.commit_presized = input::bool01(commit_presized, "commit_presized")?;
            Ok(())
        })
    }
}

/// Sets how many bytes the change journal may hold (docs/CONTRACT.md
/// section 12); 0 (the default) = no journal. With a journal the master
/// records every change to its state, in commit order, for a standby to
/// apply; when the consumer falls behind and the journal is full, the
/// oldest unreleased records are dropped (and reading them is
/// `MOONCAKE_META_JOURNAL_OVERRUN`), never a client call. At most
/// `MOONCAKE_META_MAX_JOURNAL_CAPACITY_BYTES`, checked at validation.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_journal_capacity_bytes(
    cfg: *mut mooncake_meta_config,
    journal_capacity_bytes: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update(
            "mooncake_meta_config_set_journal_capacity_bytes",
            cfg,
            err,
            |c| {
                c.journal_capacity_bytes = journal_capacity_bytes;
                Ok(())
            },
        )
    }
}

/// Makes the master a standby (`standby` = 1) or a primary (0, the
/// default). A standby rejects client operations with
/// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`, runs no maintenance and
/// changes only by `mooncake_meta_journal_apply` and restore, until
/// `mooncake_meta_promote` (docs/CONTRACT.md section 12). Any other value
/// is `MOONCAKE_META_INVALID_PARAMS`.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_standby(
    cfg: *mut mooncake_meta_config,
    standby: c_int,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update("mooncake_meta_config_set_standby", cfg, err, |c| {
            c.standby = input::bool01(standby, "standby")?;
            Ok(())
        })
    }
}

/// Makes the master read a manual clock that starts at `start_ms`
/// (milliseconds since the Unix epoch) and moves only when set or advanced;
/// the start must be below `MAX_INSTANT` (2^63 - 1), checked at validation.
/// For deterministic tests, also set the three intervals to 0.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_manual_clock(
    cfg: *mut mooncake_meta_config,
    start_ms: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update("mooncake_meta_config_set_manual_clock", cfg, err, |c| {
            c.clock = ClockSource::Manual { start_ms };
            Ok(())
        })
    }
}

/// Makes the master read the system clock (the default): its timeline,
/// anchored to the operating system's real-time clock when the master is
/// created and then advanced by the monotonic clock, so a wall-clock step
/// moves no instant (docs/CONTRACT.md section 1).
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_system_clock(
    cfg: *mut mooncake_meta_config,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update("mooncake_meta_config_set_system_clock", cfg, err, |c| {
            c.clock = ClockSource::System;
            Ok(())
        })
    }
}

/// Fixes the master's seed (any value): its key hashing (which shard and
/// slot a key takes) and the segment choice of its placements then repeat
/// from run to run, so a randomized test that failed replays exactly. It
/// changes no outcome docs/CONTRACT.md states, only which of the allowed
/// placements a write gets. Without it (the default) every master draws a
/// random seed; leave it so in service, since a client that knows the seed
/// can aim its keys at one shard.
///
/// Ownership: `cfg` stays owned by the caller.
/// Thread safety: may run concurrently with any call on `cfg` but `_free`.
///
/// # Safety
/// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_config_set_seed(
    cfg: *mut mooncake_meta_config,
    seed: u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        update("mooncake_meta_config_set_seed", cfg, err, |c| {
            c.seed = Some(seed);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{mooncake_meta_error_free, mooncake_meta_error_message};
    use crate::status::{
        MOONCAKE_META_INVALID_PARAMS, MOONCAKE_META_NULL_ARGUMENT, MOONCAKE_META_OK,
    };
    use mooncake_meta_core::clock::MAX_INSTANT;
    use mooncake_meta_core::error::ErrorKind;
    use std::ffi::CStr;
    use std::ptr;

    fn new_config() -> *mut mooncake_meta_config {
        let mut cfg = ptr::null_mut();
        assert_eq!(
            unsafe { mooncake_meta_config_new(&mut cfg, ptr::null_mut()) },
            MOONCAKE_META_OK
        );
        cfg
    }

    fn take_message(err: *mut mooncake_meta_error) -> String {
        let m = unsafe { CStr::from_ptr(mooncake_meta_error_message(err)) }
            .to_str()
            .unwrap()
            .to_owned();
        unsafe { mooncake_meta_error_free(err) };
        m
    }

    // §9: a new handle holds exactly the documented defaults.
    #[test]
    fn new_config_holds_the_defaults() {
        let cfg = new_config();
        unsafe {
            assert_eq!(read(cfg, "cfg").unwrap(), MasterConfig::default());
            mooncake_meta_config_free(cfg);
        }
    }

    #[test]
    fn setters_reach_every_field() {
        let cfg = new_config();
        let e = ptr::null_mut();
        unsafe {
            assert_eq!(
                mooncake_meta_config_set_default_kv_lease_ttl_ms(cfg, 1, e),
                0
            );
            assert_eq!(
                mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(cfg, 2, e),
                0
            );
            assert_eq!(
                mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(cfg, 3, e),
                0
            );
            assert_eq!(
                mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 0, e),
                0
            );
            assert_eq!(mooncake_meta_config_set_eviction_ratio(cfg, 0.25, e), 0);
            assert_eq!(
                mooncake_meta_config_set_eviction_high_watermark_ratio(cfg, 0.5, e),
                0
            );
            assert_eq!(
                mooncake_meta_config_set_put_start_discard_timeout_ms(cfg, 4, e),
                0
            );
            assert_eq!(
                mooncake_meta_config_set_put_start_release_timeout_ms(cfg, 5, e),
                0
            );
            assert_eq!(
                mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 6, e),
                0
            );
            assert_eq!(
                mooncake_meta_config_set_eviction_check_interval_ms(cfg, 7, e),
                0
            );
            assert_eq!(mooncake_meta_config_set_sweep_interval_ms(cfg, 8, e), 0);
            assert_eq!(mooncake_meta_config_set_shard_count(cfg, 9, e), 0);
            assert_eq!(mooncake_meta_config_set_expected_objects(cfg, 13, e), 0);
            assert_eq!(mooncake_meta_config_set_commit_presized(cfg, 1, e), 0);
            assert_eq!(
                mooncake_meta_config_set_max_group_retention_ttl_ms(cfg, 11, e),
                0
            );
            assert_eq!(mooncake_meta_config_set_max_retained_groups(cfg, 12, e), 0);
            assert_eq!(mooncake_meta_config_set_manual_clock(cfg, 10, e), 0);
            assert_eq!(
                mooncake_meta_config_set_journal_capacity_bytes(cfg, 14, e),
                0
            );
            assert_eq!(mooncake_meta_config_set_standby(cfg, 1, e), 0);
            assert_eq!(mooncake_meta_config_set_seed(cfg, 15, e), 0);
            let want = MasterConfig {
                default_kv_lease_ttl_ms: 1,
                default_kv_soft_pin_ttl_ms: 2,
                max_kv_soft_pin_ttl_ms: 3,
                allow_evict_soft_pinned_objects: false,
                eviction_ratio: 0.25,
                eviction_high_watermark_ratio: 0.5,
                put_start_discard_timeout_ms: 4,
                put_start_release_timeout_ms: 5,
                max_group_retention_ttl_ms: 11,
                max_retained_groups: 12,
                soft_pin_cleanup_interval_ms: 6,
                eviction_check_interval_ms: 7,
                sweep_interval_ms: 8,
                shard_count: 9,
                expected_objects: 13,
                commit_presized: true,
                journal_capacity_bytes: 14,
                clock: ClockSource::Manual { start_ms: 10 },
                standby: true,
                seed: Some(15),
            };
            assert_eq!(read(cfg, "cfg").unwrap(), want);
            assert_eq!(mooncake_meta_config_validate(cfg, e), 0);
            assert_eq!(mooncake_meta_config_set_system_clock(cfg, e), 0);
            assert_eq!(read(cfg, "cfg").unwrap().clock, ClockSource::System);
            mooncake_meta_config_free(cfg);
        }
    }

    #[test]
    fn non_boolean_standby_is_rejected_and_leaves_the_field() {
        let cfg = new_config();
        let mut err = ptr::null_mut();
        unsafe {
            let st = mooncake_meta_config_set_standby(cfg, -1, &mut err);
            assert_eq!(st, MOONCAKE_META_INVALID_PARAMS);
            assert_eq!(
                take_message(err),
                "mooncake_meta_config_set_standby: standby must be 0 or 1, got -1"
            );
            assert!(!read(cfg, "cfg").unwrap().standby);
            mooncake_meta_config_free(cfg);
        }
    }

    #[test]
    fn non_boolean_commit_presized_is_rejected_and_leaves_the_field() {
        for (bad, set_first) in [(2, false), (-1, true)] {
            let cfg = new_config();
            let mut err = ptr::null_mut();
            unsafe {
                if set_first {
                    assert_eq!(
                        mooncake_meta_config_set_commit_presized(cfg, 1, ptr::null_mut()),
                        MOONCAKE_META_OK
                    );
                }
                let st = mooncake_meta_config_set_commit_presized(cfg, bad, &mut err);
                assert_eq!(st, MOONCAKE_META_INVALID_PARAMS);
                assert_eq!(
                    take_message(err),
                    format!(
                        "mooncake_meta_config_set_commit_presized: commit_presized must be 0 or 1, got {bad}"
                    )
                );
                assert_eq!(read(cfg, "cfg").unwrap().commit_presized, set_first);
                mooncake_meta_config_free(cfg);
            }
        }
    }

    #[test]
    fn non_boolean_allow_is_rejected_and_leaves_the_field() {
        let cfg = new_config();
        let mut err = ptr::null_mut();
        unsafe {
            let st = mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 2, &mut err);
            assert_eq!(st, MOONCAKE_META_INVALID_PARAMS);
            assert_eq!(
                take_message(err),
                "mooncake_meta_config_set_allow_evict_soft_pinned_objects: allow must be 0 or 1, got 2"
            );
            assert!(read(cfg, "cfg").unwrap().allow_evict_soft_pinned_objects);
            mooncake_meta_config_free(cfg);
        }
    }

    // §3/§9: validation happens at creation (or _validate), not in setters.
    #[test]
    fn rules_between_fields_are_checked_by_validate() {
        type Setter = fn(*mut mooncake_meta_config) -> mooncake_meta_status;
        let cases: [(&str, Setter); 7] = [
            ("default_kv_soft_pin_ttl", |c| unsafe {
                mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(c, 86_400_001, ptr::null_mut())
            }),
            ("eviction_ratio", |c| unsafe {
                mooncake_meta_config_set_eviction_ratio(c, f64::NAN, ptr::null_mut())
            }),
            ("shard_count", |c| unsafe {
                mooncake_meta_config_set_shard_count(c, 0, ptr::null_mut())
            }),
            ("expected_objects", |c| unsafe {
                mooncake_meta_config_set_expected_objects(
                    c,
                    MOONCAKE_META_MAX_EXPECTED_OBJECTS + 1,
                    ptr::null_mut(),
                )
            }),
            ("max_group_retention_ttl", |c| unsafe {
                mooncake_meta_config_set_max_group_retention_ttl_ms(c, 0, ptr::null_mut())
            }),
            ("max_retained_groups", |c| unsafe {
                mooncake_meta_config_set_max_retained_groups(c, 0, ptr::null_mut())
            }),
            ("MAX_INSTANT", |c| unsafe {
                mooncake_meta_config_set_manual_clock(c, MAX_INSTANT, ptr::null_mut())
            }),
        ];
        for (field, set) in cases {
            let cfg = new_config();
            assert_eq!(set(cfg), MOONCAKE_META_OK, "{field}: setters accept");
            let mut err = ptr::null_mut();
            unsafe {
                assert_eq!(
                    mooncake_meta_config_validate(cfg, &mut err),
                    MOONCAKE_META_INVALID_PARAMS
                );
                let msg = take_message(err);
                assert!(msg.contains(field), "{field} not named in {msg:?}");
                mooncake_meta_config_free(cfg);
            }
        }
    }

    #[test]
    fn null_config_is_a_null_argument() {
        let mut err = ptr::null_mut();
        unsafe {
            let st = mooncake_meta_config_set_eviction_ratio(ptr::null_mut(), 0.1, &mut err);
            assert_eq!(st, MOONCAKE_META_NULL_ARGUMENT);
            assert_eq!(
                take_message(err),
                "mooncake_meta_config_set_eviction_ratio: cfg is NULL (expected a mooncake_meta_config)"
            );
            let st = mooncake_meta_config_set_commit_presized(ptr::null_mut(), 1, &mut err);
            assert_eq!(st, MOONCAKE_META_NULL_ARGUMENT);
            assert_eq!(
                take_message(err),
                "mooncake_meta_config_set_commit_presized: cfg is NULL (expected a mooncake_meta_config)"
            );
            assert_eq!(
                mooncake_meta_config_new(ptr::null_mut(), ptr::null_mut()),
                MOONCAKE_META_NULL_ARGUMENT
            );
            mooncake_meta_config_free(ptr::null_mut());
            assert_eq!(
                read(ptr::null(), "cfg").unwrap_err().kind(),
                ErrorKind::NullArgument
            );
        }
    }
}
