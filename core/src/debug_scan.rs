//! Benchmark hooks (hidden from the docs): the full-scan expiration the
//! deadline index replaces, implemented the cheapest honest way, so the
//! harness can measure what the index saves; a reset of the index's
//! longest-hold gauge so one cycle's hold can be read on its own; and the
//! shards' object-table capacities and the bytes of them in a committed
//! region, so `expected_objects` presizing and `commit_presized` can be
//! checked.

use crate::clock::Instant;
use crate::master::MasterCore;
use crate::object::NO_DEADLINE;
use std::sync::atomic::Ordering;

impl MasterCore {
    /// Walks every shard under its read lock (one acquisition per shard),
    /// loads each object's committed deadline once and clears the expired
    /// ones (`deadline <= at`) with a compare-and-swap, as a scan-based
    /// cleanup would. Returns how many it cleared and lowers the soft-pin
    /// gauge and the index's registration count by that much, under each
    /// shard's lock. The cleared pins' heap entries stay (stale) until the
    /// next `run_cleanup_at(t >= at)` pops them and drops them. A standby
    /// changes only by apply and restore: 0, nothing cleared.
    #[doc(hidden)]
    pub fn debug_scan_expired(&self, at: Instant) -> u64 {
        if self.is_standby() {
            return 0;
        }
        let mut expired = 0u64;
        for shard in self.shards.iter() {
            let st = shard.state.read();
            let mut cleared = 0u64;
            for obj in st.iter() {
                let d = obj.soft_pin.load(Ordering::Acquire);
                if d != NO_DEADLINE
                    && d <= at
                    && obj
                        .soft_pin
                        .compare_exchange(d, NO_DEADLINE, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                {
                    cleared += 1;
                    self.record_read_locked(&st, obj);
                }
            }
            // Under the same read lock as the clears, as cleanup does.
            if cleared > 0 {
                shard
                    .soft_pin_keys
                    .fetch_sub(cleared as i64, Ordering::Relaxed);
                self.index.unregister(cleared as usize);
            }
            expired += cleared;
        }
        expired
    }

    /// How many objects each shard's table holds before it must grow, in
    /// shard order (at least the shard's share of `expected_objects`).
    #[doc(hidden)]
    pub fn debug_object_capacity(&self) -> Vec<usize> {
        self.shards
            .iter()
            .map(|s| s.state.read().capacity())
            .collect()
    }

    /// Bytes of each shard's table (index and records) that lie in the
    /// region `commit_presized` maps, in shard order (0 without one).
    #[doc(hidden)]
    pub fn debug_region_bytes(&self) -> Vec<usize> {
        self.shards
            .iter()
            .map(|s| s.state.read().region_bytes())
            .collect()
    }

    /// Bytes of the segments' block slots that lie in the region
    /// `commit_presized` maps for them, in segment-id order.
    #[doc(hidden)]
    pub fn debug_block_region_bytes(&self) -> Vec<usize> {
        self.segments
            .read()
            .iter()
            .map(|s| s.region_bytes())
            .collect()
    }

    /// Resets the longest deadline-index mutex hold reported by
    /// [`CleanupStats::longest_index_hold_ns`](crate::CleanupStats), so the
    /// next cleanup reports the longest hold since this call.
    #[doc(hidden)]
    pub fn debug_reset_index_hold(&self) {
        self.index.reset_longest_hold();
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    fn master() -> Master {
        let m = Master::new(MasterConfig::deterministic(1_000)).unwrap();
        let seg = SegmentSpec {
            name: "seg0".into(),
            base: 1 << 40,
            size: 1 << 20,
            pool: Pool::Memory,
        };
        m.mount_segment(1, &seg).unwrap();
        m
    }

    fn put(m: &Master, key: &str, req: SoftPinRequest) {
        let cfg = WriteConfig::default().with_soft_pin(req);
        m.put_start(1, Key::new(key), 64, &cfg).unwrap();
        m.put_end(1, Key::new(key), ReplicaSelector::All, None)
            .unwrap();
    }

    #[test]
    fn scan_clears_exactly_the_due_deadlines_and_cleanup_then_agrees() {
        // §4.8: a pin expires when deadline <= now; the scan and the index must agree.
        let m = master();
        put(&m, "due", SoftPinRequest::enable_for(10));
        put(&m, "later", SoftPinRequest::enable_for(1_000));
        put(&m, "plain", SoftPinRequest::PRESERVE);
        assert_eq!(m.debug_scan_expired(1_010), 1);
        assert_eq!(m.soft_pin_deadline(Key::new("due")).unwrap(), None);
        assert_eq!(m.soft_pin_deadline(Key::new("later")).unwrap(), Some(2_000));
        assert_eq!(m.metrics().soft_pin_key_count, 1);
        assert_eq!(m.debug_scan_expired(1_010), 0);
        // The index still holds the cleared pin's entry: cleanup pops it, clears nothing.
        let stats = m.run_cleanup_at(1_010);
        assert_eq!((stats.popped, stats.expired), (1, 0));
        m.check_invariants().unwrap();
    }
}
