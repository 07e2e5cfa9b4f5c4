//! Soft-pin expiration cleanup (docs/CONTRACT.md §4.8): pop due index entries in
//! bounded batches (a wave's rest taken in one pass over the detached heap,
//! [`DeadlineIndex::take_due`](crate::soft_pin::index::DeadlineIndex::take_due)),
//! group each batch by shard, take each affected shard's
//! read lock once per at most [`PIN_CLEANUP_PER_LOCK`] entries, reach each entry's record by its arena slot (no hash
//! probe, no key) and clear the committed deadline only if the entry is the
//! record's latest registration (same `pin_version`, which a slot carries
//! on from one record to the next) and the
//! deadline still equals the popped one (compare-and-swap). Entries failing
//! either check are stale and dropped. Cost O(due · log heap); nothing due →
//! no shard touched.
//!
//! A restore may install a new state between a pop and the shard lock
//! (cleanup holds no lock across the two). Each batch therefore carries the
//! index epoch it was popped under and acts on a shard only while the
//! master's [generation](MasterCore::generation) still equals it, checked
//! under that shard's lock, where no restore can run; a batch from a
//! replaced index is dropped as stale (its registrations went with that
//! index, and the pins it names belong to the state the restore replaced).
//! The gauge is decremented under the same shard lock as the clears it
//! counts, so the restore's gauge reset never lands between the two.
//!
//! The same cycle then drains the group-retention index (`retention.rs`);
//! its figures are not part of [`CleanupStats`], which counts soft pins.

use crate::clock::Instant;
use crate::master::{MasterCore, PIN_CLEANUP_BATCH, PIN_CLEANUP_PER_LOCK};
use crate::object::NO_DEADLINE;
use crate::soft_pin::index::Entry;
use std::sync::atomic::Ordering;

/// What one cleanup cycle did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanupStats {
    /// Heap entries popped (valid + stale).
    pub popped: u64,
    /// Popped entries that no longer matched the latest registration, or
    /// that came from an index a restore replaced before they were applied.
    pub stale_dropped: u64,
    /// Soft pins cleared.
    pub expired: u64,
    /// Index-lock holds that took due entries out: pop holds (at most
    /// [`POP_PER_HOLD`](crate::soft_pin::index::POP_PER_HOLD) entries each,
    /// several to a batch of [`PIN_CLEANUP_BATCH`]), and one per wave taken
    /// in one pass (its entries were not popped one by one, so `popped`
    /// may exceed `batches × POP_PER_HOLD`).
    pub batches: u64,
    /// Shard read locks taken (one per affected shard per batch, again
    /// after every [`PIN_CLEANUP_PER_LOCK`] entries of one shard).
    pub shards_touched: u64,
    /// Longest deadline-index mutex hold seen by this master so far, rebuilds included (ns;
    /// of the registrations, one hold in
    /// [`REGISTER_TIMED_EVERY`](crate::soft_pin::index::REGISTER_TIMED_EVERY) is timed, and
    /// every one that starts a heap chunk).
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
        if self.is_standby() {
            return CleanupStats::default();
        }
        let started = std::time::Instant::now();
        let mut stats = CleanupStats::default();
        // pop_due sizes it on the first due entries; nothing due, no allocation.
        let mut batch: Vec<Entry> = Vec::new();
        // Entries popped since the last pass: what the next pass's cost is
        // measured against (a pass must not be paid for twice).
        let mut since_pass = 0usize;
        loop {
            batch.clear();
            let out = self.index.pop_due(at, PIN_CLEANUP_BATCH, &mut batch);
            since_pass += out.popped;
            stats.popped += out.popped as u64;
            stats.batches += out.holds as u64;
            if !batch.is_empty() {
                stats.expired += self.expire_batch(&mut batch, out.epoch, &mut stats);
            }
            if !out.more_due {
                break;
            }
            // A wave: once this cycle has popped a share of the heap, the rest of
            // what is due comes out in one pass outside the index mutex, a
            // chunk of the heap at a time, checked as popped entries are.
            let took = self.index.take_due(at, since_pass, &mut |epoch, due| {
                stats.popped += due.len() as u64;
                for part in due.chunks_mut(PIN_CLEANUP_BATCH) {
                    let expired = self.expire_batch(part, epoch, &mut stats);
                    stats.expired += expired;
                }
            });
            if took {
                stats.batches += 1;
                since_pass = 0;
            }
        }
        // Pops and clears shrink heap and registrations; a rebuild they call
        // for runs here, with no lock held.
        self.settle_index();
        // Group retention deadlines expire in the same cycle, through their
        // own index (same batches, same exact-deadline rule).
        self.cleanup_retention_at(at);
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
        stats
    }

    /// Clears the popped deadlines still in place, if the batch (popped
    /// under index `epoch`) is from the current state; the one helper that
    /// takes shard locks for cleanup (and counts them). Returns the pins
    /// cleared; the other entries count as stale (and so do all entries of
    /// a replaced index).
    fn expire_batch(&self, batch: &mut [Entry], epoch: u64, stats: &mut CleanupStats) -> u64 {
        let shard_of = |e: &Entry| e.target.shard() as usize;
        batch.sort_unstable_by_key(shard_of);
        let (total, mut seen, mut expired) = (batch.len(), 0, 0);
        let mut groups = batch
            .chunk_by(|a, b| shard_of(a) == shard_of(b))
            .flat_map(|group| group.chunks(PIN_CLEANUP_PER_LOCK))
            .peekable();
        while let Some(group) = groups.next() {
            #[cfg(feature = "test-hooks")]
            self.race_point(crate::quiesce::RacePoint::CleanupShard { entries_done: seen });
            // The next group's shard (lock word and counters) loads while this one works.
            if let Some(next) = groups.peek() {
                let shard = &self.shards[shard_of(&next[0])];
                crate::memory::prefetch(&shard.state);
                crate::memory::prefetch(&shard.soft_pin_keys);
            }
            let st = self.shards[shard_of(&group[0])].state.read();
            // The group's records load together, not one miss after another.
            for e in group {
                st.prefetch_slot(e.target.slot());
            }
            stats.shards_touched += 1;
            // Under a shard lock the generation cannot move (restore holds
            // every shard write lock). Once it has moved it never comes
            // back, so the rest of the batch is stale too.
            if self.generation() != epoch {
                stats.stale_dropped += (total - seen) as u64;
                break;
            }
            seen += group.len();
            let mut cleared = 0usize;
            for e in group {
                let Some(obj) = st.slot(e.target.slot()) else {
                    continue; // the object is gone (its slot freed)
                };
                // The version tells the latest registration from an earlier
                // one with the same deadline (re-enabled in the same
                // instant), and from one of an erased record whose slot was
                // reused (the slot carries its versions on); the
                // exact-deadline CAS keeps an entry from
                // clearing a pin dropped or re-enabled since, and settles a
                // race with eviction's normalisation (one of the two wins).
                // `pin_version` only changes under the write lock.
                if obj.pin_version == e.version
                    && obj
                        .soft_pin
                        .compare_exchange(
                            e.deadline,
                            NO_DEADLINE,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_ok()
                {
                    cleared += 1;
                    self.record_read_locked(&st, obj);
                }
            }
            stats.stale_dropped += (group.len() - cleared) as u64;
            // Same critical section as the clears: a restore (which sets
            // gauge and registrations from the state it installs) cannot
            // come in between.
            if cleared > 0 {
                self.shards[shard_of(&group[0])]
                    .soft_pin_keys
                    .fetch_sub(cleared as i64, Ordering::Relaxed);
                self.index.unregister(cleared);
            }
            expired += cleared as u64;
        }
        expired
    }

    /// The most due entries one deadline-index mutex hold of a cleanup
    /// popped since the master started or the last
    /// [`debug_reset_cleanup_pops_per_hold`](Self::debug_reset_cleanup_pops_per_hold):
    /// at most [`POP_PER_HOLD`](crate::soft_pin::index::POP_PER_HOLD), the
    /// structural bound of a pop hold that no machine load can move (unlike
    /// [`CleanupStats::longest_index_hold_ns`]).
    #[doc(hidden)]
    pub fn debug_cleanup_most_pops_per_hold(&self) -> usize {
        self.index.most_popped_in_a_hold()
    }

    /// Resets [`debug_cleanup_most_pops_per_hold`](Self::debug_cleanup_most_pops_per_hold).
    #[doc(hidden)]
    pub fn debug_reset_cleanup_pops_per_hold(&self) {
        self.index.reset_most_popped_in_a_hold();
    }
}

#[cfg(test)]
mod tests {
    use crate::object_ref::ObjectRef;
    use crate::soft_pin::index::{Entry, PinTarget};
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

    /// The handle and pin version of the record stored under `key`.
    fn handle(m: &MasterCore, key: &str) -> (ObjectRef, u32) {
        let (hash, si) = m.locate(Key::new(key));
        let st = m.shards[si].state.read();
        let at = st.locate(hash, Key::new(key), si as u32).unwrap();
        (at, st.get(at).unwrap().pin_version)
    }

    #[test]
    fn an_entry_of_a_freed_slot_never_clears_the_pin_of_the_record_reusing_it() {
        // §4.8: an entry names a record by (shard, slot) and version. The record is removed and
        // the key written again with the same TTL at the same instant: the new record reuses the
        // slot (most recently freed first) with the same deadline, and only its version tells the
        // old entry from the new registration: the slot carried the old record's version on.
        let m = master();
        put(&m, "k", SoftPinRequest::enable_for(1_000));
        let d = 2_000;
        let (old, version) = handle(&m, "k");
        m.remove(Key::new("k"), true).unwrap();
        put(&m, "k", SoftPinRequest::enable_for(1_000));
        let (new, new_version) = handle(&m, "k");
        assert_eq!(
            (new.shard, new.slot),
            (old.shard, old.slot),
            "the slot is reused"
        );
        assert_eq!(
            (new_version, m.soft_pin_deadline(Key::new("k")).unwrap()),
            (version.wrapping_add(2), Some(d)),
            "the removal and the new registration each moved the version on"
        );
        // The old entry alone, as a pop would hand it to cleanup.
        let mut batch = [Entry {
            deadline: d,
            target: PinTarget::new(old.shard, old.slot),
            version,
        }];
        let mut stats = CleanupStats::default();
        assert_eq!(m.expire_batch(&mut batch, m.generation(), &mut stats), 0);
        assert_eq!((stats.stale_dropped, stats.shards_touched), (1, 1));
        assert_eq!(m.soft_pin_deadline(Key::new("k")).unwrap(), Some(d));
        assert_eq!(m.metrics().soft_pin_key_count, 1);
        m.check_invariants().unwrap();
        // The cycle pops both entries: the new one expires the pin, the old one is stale.
        let st = m.run_cleanup_at(d);
        assert_eq!((st.popped, st.stale_dropped, st.expired), (2, 1, 1));
        assert_eq!(m.soft_pin_deadline(Key::new("k")).unwrap(), None);
        m.check_invariants().unwrap();
    }
}
