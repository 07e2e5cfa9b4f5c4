//! Maintenance through the C ABI, for embedders and tests that drive the
//! master themselves (background intervals 0): soft-pin expiration cleanup
//! with its statistics (docs/CONTRACT.md §4.8), eviction (§5), one whole
//! maintenance tick, the stale-write sweep and the release of discarded
//! buffers (§3.1).

use super::error::mooncake_meta_error;
use super::input::{self, Out};
use super::master::{mooncake_meta_master, with_master};
use super::sized_out::{size_versioned, SizedOut};
use super::status::mooncake_meta_status;
use mooncake_meta_core::clock::{Instant, MAX_INSTANT};
use mooncake_meta_core::error::{Error, Result};
use mooncake_meta_core::{CleanupStats, EvictionReport};
use std::os::raw::c_int;

/// What one soft-pin cleanup cycle did. Size-versioned output: set
/// `struct_size = sizeof(mooncake_meta_cleanup_stats)` before the call; the
/// library fills `min(struct_size, its size)` bytes and sets `struct_size`
/// to that. Fields are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct mooncake_meta_cleanup_stats {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Index entries popped (valid and stale).
    pub popped: u64,
    /// Popped entries dropped because a newer registration replaced them.
    pub stale_dropped: u64,
    /// Soft pins cleared.
    pub expired: u64,
    /// Index-lock holds that took due entries out: pop holds (bounded
    /// batches) and one per wave taken in one pass over the detached heap.
    pub batches: u64,
    /// Shard read locks taken (one per affected shard per batch, again after
    /// every 512 entries of one shard).
    pub shards_touched: u64,
    /// Longest deadline-index lock hold seen by this master so far, in ns (registrations are sampled: one hold in 32, and every one that starts a heap chunk).
    pub longest_index_hold_ns: u64,
    /// Wall time of the cycle on a real monotonic clock, in ns.
    pub duration_ns: u64,
}
// Version 1 is 64 bytes on every target (integers only); frozen.
size_versioned!(mooncake_meta_cleanup_stats, v1_size = 64);

impl From<CleanupStats> for mooncake_meta_cleanup_stats {
    fn from(s: CleanupStats) -> Self {
        mooncake_meta_cleanup_stats {
            struct_size: 0,
            reserved0: 0,
            popped: s.popped,
            stale_dropped: s.stale_dropped,
            expired: s.expired,
            batches: s.batches,
            shards_touched: s.shards_touched,
            longest_index_hold_ns: s.longest_index_hold_ns,
            duration_ns: s.duration_ns,
        }
    }
}

/// What one eviction run did. Size-versioned output, as
/// `mooncake_meta_cleanup_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct mooncake_meta_eviction_report {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// The eviction base: non-hard-pinned objects with an evictable memory
    /// replica (objects, not bytes).
    pub base: u64,
    /// Base objects whose lease was not live.
    pub candidates: u64,
    /// Objects whose memory replicas were freed.
    pub evicted: u64,
    /// Bytes freed by those evictions.
    pub evicted_bytes: u64,
    /// Of `evicted`, those taken by the second pass while protected (own
    /// soft pin active, or group retention active).
    pub evicted_pinned: u64,
    /// Discarded buffers released by this run.
    pub discarded_released: u64,
    /// Expired soft-pin deadlines cleared while examining candidates.
    pub normalised: u64,
}
// Version 1 is 64 bytes on every target (integers only); frozen.
size_versioned!(mooncake_meta_eviction_report, v1_size = 64);

impl From<EvictionReport> for mooncake_meta_eviction_report {
    fn from(r: EvictionReport) -> Self {
        mooncake_meta_eviction_report {
            struct_size: 0,
            reserved0: 0,
            base: r.base,
            candidates: r.candidates,
            evicted: r.evicted,
            evicted_bytes: r.evicted_bytes,
            evicted_pinned: r.evicted_pinned,
            discarded_released: r.discarded_released,
            normalised: r.normalised,
        }
    }
}

/// An instant argument of cleanup or a release pass: at most `MAX_INSTANT`
/// (docs/CONTRACT.md section 1), where a saturated deadline or release
/// instant is due. (The stale-write sweep takes any instant: its
/// comparison is strict.)
fn instant(at: u64, arg: &str) -> Result<Instant> {
    if at > MAX_INSTANT {
        return Err(Error::invalid(format!(
            "{arg} {at} is beyond MAX_INSTANT ({MAX_INSTANT})"
        )));
    }
    Ok(at)
}

/// An eviction ratio: a number in [0, 1] (NaN is not).
fn ratio(v: f64, arg: &str) -> Result<f64> {
    if !(0.0..=1.0).contains(&v) {
        return Err(Error::invalid(format!("{arg} must be in [0, 1], got {v}")));
    }
    Ok(v)
}

/// Runs one soft-pin expiration cleanup cycle at the master clock's now:
/// clears every committed deadline that is due, in bounded batches. The
/// statistics go to `*out` unless `out` is NULL. A bad `out->struct_size`
/// is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED` and nothing runs.
///
/// Ownership: nothing is transferred; `*out` is the caller's.
/// Thread safety: may be called concurrently with any call but `_free`,
/// including another cleanup (each deadline is cleared at most once).
///
/// # Safety
/// `m` NULL or a live master; `out` NULL or valid for reading its first
/// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_run_cleanup(
    m: *const mooncake_meta_master,
    out: *mut mooncake_meta_cleanup_stats,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_run_cleanup", m, err, |master| {
            let out = SizedOut::optional(out, "out")?;
            let stats = master.run_cleanup();
            if let Some(out) = out {
                out.write(stats.into());
            }
            Ok(())
        })
    }
}

/// `mooncake_meta_run_cleanup` treating `at_ms` as now (the clock does not
/// move): deadlines `<= at_ms` are due. `at_ms` above `MAX_INSTANT`
/// (`INT64_MAX`) is `MOONCAKE_META_INVALID_PARAMS`.
///
/// Ownership: nothing is transferred; `*out` is the caller's.
/// Thread safety: as `mooncake_meta_run_cleanup`.
///
/// # Safety
/// As `mooncake_meta_run_cleanup`.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_run_cleanup_at(
    m: *const mooncake_meta_master,
    at_ms: u64,
    out: *mut mooncake_meta_cleanup_stats,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_run_cleanup_at", m, err, |master| {
            let at = instant(at_ms, "at_ms")?;
            let out = SizedOut::optional(out, "out")?;
            let stats = master.run_cleanup_at(at);
            if let Some(out) = out {
                out.write(stats.into());
            }
            Ok(())
        })
    }
}

/// One deterministic eviction run (docs/CONTRACT.md section 5) at the master clock's now,
/// with explicit `target` and `lowerbound` fractions of the eviction base,
/// each in [0, 1] (NaN or out of range: `MOONCAKE_META_INVALID_PARAMS` and
/// nothing runs). The report goes to `*out` unless `out` is NULL.
///
/// Ownership: nothing is transferred; `*out` is the caller's.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out` NULL or valid for reading its first
/// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_run_eviction(
    m: *const mooncake_meta_master,
    target: f64,
    lowerbound: f64,
    out: *mut mooncake_meta_eviction_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_run_eviction", m, err, |master| {
            let target = ratio(target, "target")?;
            let lowerbound = ratio(lowerbound, "lowerbound")?;
            let out = SizedOut::optional(out, "out")?;
            let report = master.run_eviction(target, lowerbound)?;
            if let Some(out) = out {
                out.write(report.into());
            }
            Ok(())
        })
    }
}

/// The eviction trigger of docs/CONTRACT.md section 5: evicts if memory usage is above
/// the high watermark, or if `force` is 1 and `eviction_ratio > 0` (what an
/// allocation failure does), with the target and lowerbound derived from
/// the configuration. `*out_ran` = 1 if a run happened, and then its report
/// goes to `*out` unless `out` is NULL; `*out_ran` = 0 and `*out` untouched
/// otherwise. `force` must be 0 or 1. On a standby it never runs
/// (`MOONCAKE_META_OK`, `*out_ran` = 0: a standby runs no maintenance;
/// docs/CONTRACT.md section 12.3).
///
/// Ownership: nothing is transferred; `*out` is the caller's.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out_ran` valid for writing an `int`; `out`
/// NULL or valid for reading its first `uint32_t` and writing
/// `out->struct_size` bytes; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_evict_if_needed(
    m: *const mooncake_meta_master,
    force: c_int,
    out_ran: *mut c_int,
    out: *mut mooncake_meta_eviction_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_evict_if_needed", m, err, |master| {
            let force = input::bool01(force, "force")?;
            let ran = Out::new(out_ran, "out_ran")?;
            let out = SizedOut::optional(out, "out")?;
            let report = master.evict_if_needed(force);
            ran.write(report.is_some() as c_int);
            if let (Some(out), Some(report)) = (out, report) {
                out.write(report.into());
            }
            Ok(())
        })
    }
}

/// Runs every maintenance task once, in order, at the master clock's now:
/// the eviction trigger, soft-pin cleanup, the stale-write sweep and the
/// release of due discarded buffers: what the maintenance thread does when
/// every task is due. For masters whose background intervals are 0.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_run_maintenance_tick(
    m: *const mooncake_meta_master,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_run_maintenance_tick", m, err, |master| {
            master.run_maintenance_tick();
            Ok(())
        })
    }
}

/// Sweeps the writes that are stale at `at_ms` (`put_start +
/// put_start_release_timeout < at_ms`): their PROCESSING replicas are
/// discarded, their pending intent cleared, and an object left without
/// replicas is erased. The number of writes swept goes to `*out_swept`
/// unless it is NULL. Any `at_ms` is accepted: the comparison is strict,
/// so a write whose release instant saturated at `MAX_INSTANT` is swept
/// only beyond it (docs/CONTRACT.md section 1); the buffers it discards
/// are released at their own (saturated) release instant. The clock does
/// not move.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out_swept` NULL or valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_sweep_stale_writes_at(
    m: *const mooncake_meta_master,
    at_ms: u64,
    out_swept: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_sweep_stale_writes_at", m, err, |master| {
            let swept = master.sweep_stale_writes_at(at_ms);
            if !out_swept.is_null() {
                out_swept.write(swept);
            }
            Ok(())
        })
    }
}

/// Frees the discarded buffers (preempted, replaced, swept, moved away)
/// whose release instant is `<= at_ms`; they stop counting in allocated
/// bytes. The number freed goes to `*out_released` unless it is NULL.
/// `at_ms` above `MAX_INSTANT` is `MOONCAKE_META_INVALID_PARAMS`. The clock
/// does not move.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out_released` NULL or valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_release_discarded_at(
    m: *const mooncake_meta_master,
    at_ms: u64,
    out_released: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_release_discarded_at", m, err, |master| {
            let at = instant(at_ms, "at_ms")?;
            let released = master.release_discarded_at(at);
            if !out_released.is_null() {
                out_released.write(released);
            }
            Ok(())
        })
    }
}
