//! Soft-pin expiration cleanup (docs/CONTRACT.md §4.8): pop due index entries in
//! bounded batches, group each batch by shard, take each affected shard's
//! read lock once, and clear a committed deadline only if it still equals
//! the popped one (compare-and-swap). Cost O(due · log heap); nothing due →
//! no shard touched.

use crate::clock::Instant;
use crate::master::{MasterCore, CLEANUP_BATCH};
use crate::object::NO_DEADLINE;
use crate::soft_pin::index::DueEntry;
use std::sync::atomic::Ordering;

/// What one cleanup cycle did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanupStats {
    /// Heap entries popped (valid + stale).
    pub popped: u64,
    /// Popped entries that no longer matched the latest registration.
    pub stale_dropped: u64,
    /// Soft pins cleared.
    pub expired: u64,
    /// Index-lock holds that popped entries.
    pub batches: u64,
    /// Shard read locks taken (one per affected shard per batch).
    pub shards_touched: u64,
    /// Longest deadline-index mutex hold seen by this master so far, rebuilds included (ns).
    pub longest_index_hold_ns: u64,
    /// Wall time of the cycle, real monotonic clock (ns).
    pub duration_ns: u64,
}

impl MasterCore {
    /// Runs one cleanup cycle at the master clock's now.
    pub fn run_cleanup(&self) -> CleanupStats {
        self.run_cleanup_at(self.clock.now())
    }

    /// Runs one cleanup cycle treating `at` as now (the clock is not moved).
    pub fn run_cleanup_at(&self, at: Instant) -> CleanupStats {
        let started = std::time::Instant::now();
        let mut stats = CleanupStats::default();
        // pop_due sizes it on the first due entries; nothing due, no allocation.
        let mut batch: Vec<DueEntry> = Vec::new();
        loop {
            batch.clear();
            let out = self.index.pop_due(at, CLEANUP_BATCH, &mut batch);
            stats.popped += (out.popped + out.stale) as u64;
            stats.stale_dropped += out.stale as u64;
            if out.popped + out.stale > 0 {
                stats.batches += 1;
            }
            if !batch.is_empty() {
                let expired = self.expire_batch(&mut batch, &mut stats);
                stats.expired += expired;
                if expired > 0 {
                    self.metrics
                        .soft_pin_keys
                        .fetch_sub(expired as i64, Ordering::Relaxed);
                }
            }
            if !out.more_due {
                break;
            }
        }
        // Lock-free read: stats() would take the index mutex once more.
        stats.longest_index_hold_ns = self.index.longest_hold_ns();
        stats.duration_ns = started.elapsed().as_nanos() as u64;
        let m = &self.metrics;
        m.cleanup_cycles.fetch_add(1, Ordering::Relaxed);
        if stats.popped > 0 {
            m.cleanup_popped.fetch_add(stats.popped, Ordering::Relaxed);
            m.cleanup_stale
                .fetch_add(stats.stale_dropped, Ordering::Relaxed);
            m.cleanup_expired
                .fetch_add(stats.expired, Ordering::Relaxed);
        }
        m.cleanup_last_duration_ns
            .store(stats.duration_ns, Ordering::Relaxed);
        m.cleanup_longest_hold_ns
            .store(stats.longest_index_hold_ns, Ordering::Relaxed);
        stats
    }

    /// Clears the popped deadlines still in place; the one helper that
    /// takes shard locks for cleanup (and counts them).
    fn expire_batch(&self, batch: &mut [DueEntry], stats: &mut CleanupStats) -> u64 {
        batch.sort_unstable_by_key(|e| e.shard);
        let mut expired = 0;
        for group in batch.chunk_by(|a, b| a.shard == b.shard) {
            let st = self.shards[group[0].shard as usize].state.read();
            stats.shards_touched += 1;
            for e in group {
                let hash = self.hasher.hash_scoped(&e.key);
                if let Some(obj) = st.find_scoped(hash, &e.key) {
                    // Exact-deadline CAS: an old entry never clears a pin that
                    // was re-enabled with a newer deadline.
                    if obj
                        .soft_pin
                        .compare_exchange(
                            e.deadline,
                            NO_DEADLINE,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_ok()
                    {
                        expired += 1;
                    }
                }
            }
        }
        expired
    }
}
