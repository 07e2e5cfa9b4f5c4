//! Metrics through the C ABI (docs/CONTRACT.md §10): every scalar as a plain
//! size-versioned struct, and the Prometheus text (which also carries the
//! per-segment usage) as a library-owned buffer or copied into the caller's.

use super::bytes::{self, mooncake_meta_bytes};
use super::error::mooncake_meta_error;
use super::input::Out;
use super::master::{mooncake_meta_master, with_master};
use super::sized_out::{size_versioned, SizedOut};
use super::status::mooncake_meta_status;
use mooncake_meta_core::MetricsSnapshot;
use std::os::raw::c_char;

/// Every scalar metric of one master. Size-versioned output: set
/// `struct_size = sizeof(mooncake_meta_metrics_snapshot)` before calling
/// `mooncake_meta_metrics`; the library fills `min(struct_size, its size)`
/// bytes and sets `struct_size` to that. Fields are only ever appended.
/// Each value is read atomically; the set is not one atomic cut. Counters
/// (`*_total` in Prometheus) start at 0 when the master is created and
/// only grow: they are not part of a snapshot, and a restore keeps them.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct mooncake_meta_metrics_snapshot {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Objects stored (`master_key_count`).
    pub key_count: u64,
    /// Objects with a committed soft-pin deadline, expired-but-not-yet-
    /// normalised ones included (`master_soft_pin_key_count`).
    pub soft_pin_key_count: u64,
    /// Capacity of the memory segments.
    pub memory_capacity_bytes: u64,
    /// Bytes allocated in memory segments (discarded buffers included).
    pub memory_allocated_bytes: u64,
    /// Capacity of the second-pool (NOF_SSD) segments.
    pub nof_ssd_capacity_bytes: u64,
    /// Bytes allocated in second-pool segments.
    pub nof_ssd_allocated_bytes: u64,
    /// Discarded buffers waiting for their release instant, in bytes.
    pub discarded_staging_bytes: u64,
    /// Starts rejected with NO_AVAILABLE_HANDLE.
    pub put_start_failures: u64,
    /// Eviction runs.
    pub eviction_attempts: u64,
    /// Eviction runs that freed something.
    pub eviction_successes: u64,
    /// Objects evicted.
    pub evicted_keys: u64,
    /// Bytes evicted.
    pub evicted_bytes: u64,
    /// Soft-pin cleanup cycles.
    pub cleanup_cycles: u64,
    /// Index entries popped by cleanup (valid and stale).
    pub cleanup_popped: u64,
    /// Popped entries dropped as stale.
    pub cleanup_stale_dropped: u64,
    /// Soft pins expired by cleanup.
    pub cleanup_expired: u64,
    /// Duration of the last cleanup cycle, in ns.
    pub cleanup_last_duration_ns: u64,
    /// Longest deadline-index lock hold, in ns (registrations are sampled: one hold in 32, and every one that starts a heap chunk).
    pub cleanup_longest_hold_ns: u64,
    /// Deadline heap entries, stale ones included.
    pub index_heap_size: u64,
    /// Live deadline registrations.
    pub index_live_registrations: u64,
    /// Maintenance tasks that panicked (caught; the thread goes on).
    pub maintenance_task_panics: u64,
    /// Stale writes swept.
    pub swept_writes: u64,
    /// Mounted segments (their usage is in the Prometheus text).
    pub segment_count: u64,
    /// Version 2: the master's timeline minus the wall clock,
    /// in ms (`master_clock_skew_ms`). A wall-clock step moves this, never a
    /// lifetime.
    pub clock_skew_ms: i64,
    /// Version 3: groups with a committed retention deadline
    /// (`master_retained_group_count`; converges to the actively retained
    /// ones within one cleanup interval).
    pub retained_group_count: u64,
    /// Version 4: change-journal records appended
    /// (`master_journal_records_appended_total`; every journal figure is 0 with
    /// the journal off, docs/CONTRACT.md section 12).
    pub journal_records_appended: u64,
    /// Version 4: bytes the journal holds (`master_journal_bytes_held`).
    pub journal_bytes_held: u64,
    /// Version 4: records dropped unreleased: the journal full, a record
    /// larger than its capacity, or a journaling standby's numbering moved
    /// (`master_journal_records_dropped_total`).
    pub journal_records_dropped: u64,
    /// Version 4: sequence of the last record appended
    /// (`master_journal_last_seq`).
    pub journal_last_seq: u64,
    /// Version 4: highest sequence the consumer released
    /// (`master_journal_released_seq`).
    pub journal_released_seq: u64,
    /// Version 4: 1 on a standby, 0 on a primary (`master_standby`).
    pub standby: u64,
    /// Version 4: the last journal sequence applied or installed by a
    /// restore (`master_journal_applied_seq`; 0 = none).
    pub journal_applied_seq: u64,
}
// Version 1: 8 + 23 * 8 = 192 bytes on every target; frozen. Version 2
// appends clock_skew_ms (200 bytes), version 3 retained_group_count (208),
// version 4 the seven journal and standby figures (264).
size_versioned!(mooncake_meta_metrics_snapshot, v1_size = 192);

impl From<MetricsSnapshot> for mooncake_meta_metrics_snapshot {
    fn from(s: MetricsSnapshot) -> Self {
        mooncake_meta_metrics_snapshot {
            struct_size: 0,
            reserved0: 0,
            key_count: s.key_count,
            soft_pin_key_count: s.soft_pin_key_count,
            memory_capacity_bytes: s.memory_capacity_bytes,
            memory_allocated_bytes: s.memory_allocated_bytes,
            nof_ssd_capacity_bytes: s.nof_ssd_capacity_bytes,
            nof_ssd_allocated_bytes: s.nof_ssd_allocated_bytes,
            discarded_staging_bytes: s.discarded_staging_bytes,
            put_start_failures: s.put_start_failures,
            eviction_attempts: s.eviction_attempts,
            eviction_successes: s.eviction_successes,
            evicted_keys: s.evicted_keys,
            evicted_bytes: s.evicted_bytes,
            cleanup_cycles: s.cleanup_cycles,
            cleanup_popped: s.cleanup_popped,
            cleanup_stale_dropped: s.cleanup_stale_dropped,
            cleanup_expired: s.cleanup_expired,
            cleanup_last_duration_ns: s.cleanup_last_duration_ns,
            cleanup_longest_hold_ns: s.cleanup_longest_hold_ns,
            index_heap_size: s.index_heap_size,
            index_live_registrations: s.index_live_registrations,
            maintenance_task_panics: s.maintenance_task_panics,
            swept_writes: s.swept_writes,
            segment_count: s.segments.len() as u64,
            clock_skew_ms: s.clock_skew_ms,
            retained_group_count: s.retained_group_count,
            journal_records_appended: s.journal_records_appended,
            journal_bytes_held: s.journal_bytes_held,
            journal_records_dropped: s.journal_records_dropped,
            journal_last_seq: s.journal_last_seq,
            journal_released_seq: s.journal_released_seq,
            standby: u64::from(s.standby),
            journal_applied_seq: s.journal_applied_seq,
        }
    }
}

/// Fills `*out` with every scalar metric of the master. A bad
/// `out->struct_size` is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED`.
///
/// Ownership: nothing is transferred; `*out` is the caller's.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out` valid for reading its first `uint32_t`
/// and writing `out->struct_size` bytes; `err` NULL or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_metrics(
    m: *const mooncake_meta_master,
    out: *mut mooncake_meta_metrics_snapshot,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_metrics", m, err, |master| {
            let out = SizedOut::new(out, "out")?;
            out.write(master.metrics().into());
            Ok(())
        })
    }
}

/// The metrics as Prometheus text exposition (format 0.0.4), upstream-style
/// names, per-segment capacity and usage included, in a new buffer at
/// `*out`.
///
/// Ownership: on success `*out` is a new buffer owned by the caller, to be
/// released with `mooncake_meta_bytes_free`; on failure it is not written.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out` valid for writing one pointer; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_metrics_prometheus(
    m: *const mooncake_meta_master,
    out: *mut *mut mooncake_meta_bytes,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_metrics_prometheus", m, err, |master| {
            let out = Out::new(out, "out")?;
            bytes::give(out, master.metrics_prometheus().into_bytes());
            Ok(())
        })
    }
}

/// The Prometheus text of `mooncake_meta_metrics_prometheus`, copied into
/// the caller's `buf` of `cap` bytes, without a terminating NUL;
/// `*out_len` = its length. If it does not fit: `MOONCAKE_META_BUFFER_TOO_SMALL`,
/// `*out_len` = the length needed, `buf` untouched. `(NULL, 0)` asks for the
/// length. Metrics move, so the text may have grown by the next call: retry
/// with some headroom.
///
/// Ownership: nothing is transferred; `buf` is the caller's.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `buf` NULL (only with `cap == 0`) or valid
/// for writing `cap` bytes; `out_len` valid for writing a `size_t`; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_metrics_prometheus_into(
    m: *const mooncake_meta_master,
    buf: *mut c_char,
    cap: usize,
    out_len: *mut usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_metrics_prometheus_into", m, err, |master| {
            bytes::check_buffer_args(buf.cast(), cap, out_len, "buf")?;
            let text = master.metrics_prometheus();
            bytes::copy_out(text.as_bytes(), buf.cast(), cap, out_len, "buf")
        })
    }
}
