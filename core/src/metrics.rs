//! Per-instance metrics (docs/CONTRACT.md §10): master-wide atomics for the
//! counters (bumped by failures and background work, never on a per-key
//! success path), per-shard gauges summed here, a plain [`MetricsSnapshot`]
//! struct, and Prometheus text with upstream-style names.

use crate::master::MasterCore;
use crate::types::Pool;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The master-wide metrics. The per-key gauges (`master_key_count`,
/// `master_soft_pin_key_count`, `master_discarded_staging_bytes`) are not
/// here: each shard keeps its share (`shard.rs`) so a put or remove writes
/// no line every shard shares, and [`MasterCore::shard_gauges`] sums them.
#[derive(Default)]
pub(crate) struct Metrics {
    /// `master_retained_group_count`: groups with a committed retention
    /// deadline. Moved by group-retention commits, under the retention
    /// registry's master-wide lock, not by per-key operations.
    pub retained_groups: AtomicI64,
    pub put_start_failures: AtomicU64,
    pub eviction_attempts: AtomicU64,
    pub eviction_successes: AtomicU64,
    pub evicted_keys: AtomicU64,
    pub evicted_bytes: AtomicU64,
    pub cleanup_cycles: AtomicU64,
    pub cleanup_popped: AtomicU64,
    pub cleanup_stale: AtomicU64,
    pub cleanup_expired: AtomicU64,
    pub cleanup_last_duration_ns: AtomicU64,
    pub maintenance_panics: AtomicU64,
    pub swept_writes: AtomicU64,
}

/// Per-segment usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentUsage {
    pub name: String,
    pub pool: Pool,
    pub capacity: u64,
    pub allocated: u64,
}

/// A consistent-enough copy of every metric (each value read atomically).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricsSnapshot {
    pub key_count: u64,
    pub soft_pin_key_count: u64,
    pub memory_capacity_bytes: u64,
    pub memory_allocated_bytes: u64,
    pub nof_ssd_capacity_bytes: u64,
    pub nof_ssd_allocated_bytes: u64,
    pub discarded_staging_bytes: u64,
    pub put_start_failures: u64,
    pub eviction_attempts: u64,
    pub eviction_successes: u64,
    pub evicted_keys: u64,
    pub evicted_bytes: u64,
    pub cleanup_cycles: u64,
    pub cleanup_popped: u64,
    pub cleanup_stale_dropped: u64,
    pub cleanup_expired: u64,
    pub cleanup_last_duration_ns: u64,
    /// Longest mutex hold of the soft-pin deadline index seen (§4.8: every
    /// timed hold, registrations sampled), cleanup or not.
    pub cleanup_longest_hold_ns: u64,
    pub index_heap_size: u64,
    pub index_live_registrations: u64,
    pub maintenance_task_panics: u64,
    pub swept_writes: u64,
    /// `timeline − wall` in ms: how far the master's instants have drifted
    /// from the wall clock (a wall step moves this, never a lifetime).
    pub clock_skew_ms: i64,
    /// Groups with a committed retention deadline (converges to the
    /// actively retained ones within one cleanup interval).
    pub retained_group_count: u64,
    /// Change-journal records appended (docs/CONTRACT.md §12); every
    /// journal figure is 0 with the journal off.
    pub journal_records_appended: u64,
    /// Bytes the journal holds (records and their bookkeeping).
    pub journal_bytes_held: u64,
    /// Records dropped unreleased: the journal full, a record larger than
    /// its capacity, or a journaling standby's numbering moved.
    pub journal_records_dropped: u64,
    /// Sequence of the last record appended.
    pub journal_last_seq: u64,
    /// Highest sequence the consumer released.
    pub journal_released_seq: u64,
    /// `master_standby`: whether the master is a standby (docs/CONTRACT.md
    /// section 12.3).
    pub standby: bool,
    /// `master_journal_applied_seq`: the last journal sequence applied (or
    /// installed by a restore); 0 = none.
    pub journal_applied_seq: u64,
    pub segments: Vec<SegmentUsage>,
}

fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

fn load_i(a: &AtomicI64) -> u64 {
    a.load(Ordering::Relaxed).max(0) as u64
}

/// The per-shard gauges summed over every shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ShardGauges {
    pub keys: i64,
    pub soft_pin_keys: i64,
    pub discarded_bytes: i64,
}

impl MasterCore {
    /// Sums the shards' gauges, each shard read under its read lock. The
    /// sum is of one state: a restore replaces every shard under all the
    /// write locks and moves the generation there, so if the generation is
    /// the same after the pass as before it, no shard was read across an
    /// install, and otherwise the pass is repeated. Between restores each
    /// shard's share is exact, and the sum is as current as one pass over
    /// the shards allows (operations on other shards may land during it).
    pub(crate) fn shard_gauges(&self) -> ShardGauges {
        loop {
            let generation = self.generation();
            let mut sum = ShardGauges::default();
            for shard in self.shards.iter() {
                let st = shard.state.read();
                sum.keys += st.keys;
                sum.discarded_bytes += st.discarded_bytes;
                sum.soft_pin_keys += shard.soft_pin_keys.load(Ordering::Relaxed);
            }
            if self.generation() == generation {
                return sum;
            }
        }
    }

    /// Every metric of this master.
    pub fn metrics(&self) -> MetricsSnapshot {
        let m = &self.metrics;
        let (segments, caps) = {
            let t = self.segments.read();
            let segs: Vec<SegmentUsage> = t
                .iter()
                .map(|s| SegmentUsage {
                    name: s.name.to_string(),
                    pool: s.pool,
                    capacity: s.size,
                    allocated: s.allocated_bytes(),
                })
                .collect();
            let caps = [
                t.capacity(Pool::Memory),
                t.allocated(Pool::Memory),
                t.capacity(Pool::NofSsd),
                t.allocated(Pool::NofSsd),
            ];
            (segs, caps)
        };
        let idx = self.index.stats();
        let gauges = self.shard_gauges();
        let journal = self.journal_stats();
        MetricsSnapshot {
            key_count: gauges.keys.max(0) as u64,
            soft_pin_key_count: gauges.soft_pin_keys.max(0) as u64,
            memory_capacity_bytes: caps[0],
            memory_allocated_bytes: caps[1],
            nof_ssd_capacity_bytes: caps[2],
            nof_ssd_allocated_bytes: caps[3],
            discarded_staging_bytes: gauges.discarded_bytes.max(0) as u64,
            put_start_failures: load(&m.put_start_failures),
            eviction_attempts: load(&m.eviction_attempts),
            eviction_successes: load(&m.eviction_successes),
            evicted_keys: load(&m.evicted_keys),
            evicted_bytes: load(&m.evicted_bytes),
            cleanup_cycles: load(&m.cleanup_cycles),
            cleanup_popped: load(&m.cleanup_popped),
            cleanup_stale_dropped: load(&m.cleanup_stale),
            cleanup_expired: load(&m.cleanup_expired),
            cleanup_last_duration_ns: load(&m.cleanup_last_duration_ns),
            // The index's own record: every timed hold (pinned puts,
            // rebuilds, pops), whether or not cleanup ever ran.
            cleanup_longest_hold_ns: idx.longest_hold_ns,
            index_heap_size: idx.heap_len as u64,
            index_live_registrations: idx.live as u64,
            maintenance_task_panics: load(&m.maintenance_panics),
            swept_writes: load(&m.swept_writes),
            clock_skew_ms: self.clock.skew(),
            retained_group_count: load_i(&m.retained_groups),
            journal_records_appended: journal.records_appended,
            journal_bytes_held: journal.bytes_held as u64,
            journal_records_dropped: journal.dropped_records,
            journal_last_seq: journal.last_seq,
            journal_released_seq: journal.released_upto,
            standby: self.is_standby(),
            journal_applied_seq: self.applied_seq(),
            segments,
        }
    }

    /// Metrics as Prometheus text exposition (format 0.0.4).
    pub fn metrics_prometheus(&self) -> String {
        let s = self.metrics();
        let mut out = String::with_capacity(4096);
        let mut put = |name: &str, kind: &str, help: &str, v: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}"
            );
        };
        put("master_key_count", "gauge", "Objects stored.", s.key_count);
        put(
            "master_soft_pin_key_count",
            "gauge",
            "Objects with a committed soft-pin deadline (converges within one cleanup interval).",
            s.soft_pin_key_count,
        );
        put(
            "master_retained_group_count",
            "gauge",
            "Groups with a committed retention deadline (converges within one cleanup interval).",
            s.retained_group_count,
        );
        put(
            "master_standby",
            "gauge",
            "1 on a standby (serves no client operation, applies a primary's journal), 0 on a primary.",
            u64::from(s.standby),
        );
        put(
            "master_journal_applied_seq",
            "gauge",
            "Last journal sequence applied (or installed by a restore); 0 = none.",
            s.journal_applied_seq,
        );
        put(
            "master_allocated_bytes",
            "gauge",
            "Bytes allocated in memory segments.",
            s.memory_allocated_bytes,
        );
        put(
            "master_total_capacity_bytes",
            "gauge",
            "Capacity of memory segments.",
            s.memory_capacity_bytes,
        );
        put(
            "master_allocated_nof_ssd_bytes",
            "gauge",
            "Bytes allocated in second-pool segments.",
            s.nof_ssd_allocated_bytes,
        );
        put(
            "master_total_nof_ssd_capacity_bytes",
            "gauge",
            "Capacity of second-pool segments.",
            s.nof_ssd_capacity_bytes,
        );
        put(
            "master_discarded_staging_bytes",
            "gauge",
            "Discarded buffers waiting for their release instant.",
            s.discarded_staging_bytes,
        );
        put(
            "master_put_start_failures_total",
            "counter",
            "Starts rejected with NO_AVAILABLE_HANDLE.",
            s.put_start_failures,
        );
        put(
            "master_eviction_attempts_total",
            "counter",
            "Eviction runs.",
            s.eviction_attempts,
        );
        put(
            "master_eviction_success_total",
            "counter",
            "Eviction runs that freed something.",
            s.eviction_successes,
        );
        put(
            "master_evicted_key_count_total",
            "counter",
            "Objects evicted.",
            s.evicted_keys,
        );
        put(
            "master_evicted_size_bytes_total",
            "counter",
            "Bytes evicted.",
            s.evicted_bytes,
        );
        put(
            "master_soft_pin_cleanup_cycles_total",
            "counter",
            "Soft-pin expiration cleanup cycles.",
            s.cleanup_cycles,
        );
        put(
            "master_soft_pin_cleanup_popped_total",
            "counter",
            "Due index entries popped.",
            s.cleanup_popped,
        );
        put(
            "master_soft_pin_cleanup_stale_total",
            "counter",
            "Popped entries dropped as stale.",
            s.cleanup_stale_dropped,
        );
        put(
            "master_soft_pin_cleanup_expired_total",
            "counter",
            "Soft pins expired by cleanup.",
            s.cleanup_expired,
        );
        put(
            "master_soft_pin_cleanup_last_duration_ns",
            "gauge",
            "Duration of the last cleanup cycle.",
            s.cleanup_last_duration_ns,
        );
        put(
            "master_soft_pin_index_longest_hold_ns",
            "gauge",
            "Longest deadline-index mutex hold (registrations sampled: one hold in 32, and every one that starts a heap chunk).",
            s.cleanup_longest_hold_ns,
        );
        put(
            "master_soft_pin_index_heap_size",
            "gauge",
            "Deadline heap entries, stale included.",
            s.index_heap_size,
        );
        put(
            "master_soft_pin_index_live_registrations",
            "gauge",
            "Live deadline registrations.",
            s.index_live_registrations,
        );
        put(
            "master_maintenance_task_panics_total",
            "counter",
            "Maintenance tasks that panicked (caught).",
            s.maintenance_task_panics,
        );
        put(
            "master_swept_writes_total",
            "counter",
            "Stale writes swept.",
            s.swept_writes,
        );
        put(
            "master_journal_records_appended_total",
            "counter",
            "Change-journal records appended.",
            s.journal_records_appended,
        );
        put(
            "master_journal_bytes_held",
            "gauge",
            "Bytes the change journal holds.",
            s.journal_bytes_held,
        );
        put(
            "master_journal_records_dropped_total",
            "counter",
            "Change-journal records dropped unreleased (the journal was full, a record was larger than its capacity, or a journaling standby's numbering moved).",
            s.journal_records_dropped,
        );
        put(
            "master_journal_last_seq",
            "gauge",
            "Sequence of the last change-journal record appended.",
            s.journal_last_seq,
        );
        put(
            "master_journal_released_seq",
            "gauge",
            "Highest change-journal sequence the consumer released.",
            s.journal_released_seq,
        );
        let _ = writeln!(
            out,
            "# HELP master_clock_skew_ms Master timeline minus the wall clock, in ms.\n\
             # TYPE master_clock_skew_ms gauge\nmaster_clock_skew_ms {}",
            s.clock_skew_ms
        );
        let _ = writeln!(out, "# HELP master_segment_capacity_bytes Capacity per segment.\n# TYPE master_segment_capacity_bytes gauge");
        for seg in &s.segments {
            let _ = writeln!(
                out,
                "master_segment_capacity_bytes{{segment=\"{}\",pool=\"{}\"}} {}",
                escape(&seg.name),
                pool_name(seg.pool),
                seg.capacity
            );
        }
        let _ = writeln!(out, "# HELP master_segment_allocated_bytes Allocated bytes per segment.\n# TYPE master_segment_allocated_bytes gauge");
        for seg in &s.segments {
            let _ = writeln!(
                out,
                "master_segment_allocated_bytes{{segment=\"{}\",pool=\"{}\"}} {}",
                escape(&seg.name),
                pool_name(seg.pool),
                seg.allocated
            );
        }
        out
    }
}

fn pool_name(p: Pool) -> &'static str {
    match p {
        Pool::Memory => "memory",
        Pool::NofSsd => "nof_ssd",
    }
}

/// Label-value escaping of the exposition format.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
