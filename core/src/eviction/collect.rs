//! Candidate collection (docs/CONTRACT.md §5): each shard's arena walked in
//! slot order, [`SCAN_SLICE`] slots per read-lock hold, into 24-byte
//! [`Candidate`]s, all of one state generation.

use super::EvictionReport;
use crate::clock::Instant;
use crate::hold_timer::{HoldTimer, LongestHold};
use crate::master::MasterCore;
use crate::object::NO_DEADLINE;
use crate::retention::retention_active;
use crate::soft_pin::state::is_active;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Arena slots a collection visits under one shard read lock. A slot costs
/// tens of nanoseconds at most (two cache lines of a sequential stream, and
/// for a few objects a compare-and-swap, a group's lease and a retention
/// lookup), so a hold stays well under a millisecond however large the
/// shard; re-taking the lock costs nothing next to the slice.
const SCAN_SLICE: usize = 4096;

/// One candidate, 24 bytes: the collection writes one per candidate and
/// the order partitions and sorts them, so its size is its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Candidate {
    /// The effective lease, read once at collection.
    pub(super) lease: Instant,
    /// The creation sequence: unique within a state generation, so with the
    /// slot it names this object and not a rewrite of it (a replacing
    /// Upsert takes a new sequence), and it breaks every lease tie.
    pub(super) seq: u64,
    /// The record's arena slot in its shard. No slot generation is kept:
    /// the record found there is this object exactly when its sequence is
    /// `seq` (and the state generation is the run's).
    pub(super) slot: u32,
    /// The shard index (below [`SHARD_MASK`]) and the `PINNED`, `GROUPED`
    /// and `DONE` flags.
    pub(super) meta: u32,
}
const _: () = assert!(std::mem::size_of::<Candidate>() == 24);

/// Shard indexes are below 2^20 (`MasterConfig::validate` bounds
/// `shard_count`), well inside the low bits of `Candidate::meta`.
const SHARD_MASK: u32 = (1 << 24) - 1;
/// Protected when collected: own soft pin or group retention active.
pub(super) const PINNED: u32 = 1 << 29;
/// In a group: the pass reads the group from the record (fixed at its
/// creation) when it reaches the candidate.
pub(super) const GROUPED: u32 = 1 << 30;
/// Dealt with by an earlier step of this run.
pub(super) const DONE: u32 = 1 << 31;

impl Candidate {
    #[inline]
    pub(super) fn shard(&self) -> usize {
        (self.meta & SHARD_MASK) as usize
    }

    #[inline]
    pub(super) fn has(&self, flag: u32) -> bool {
        self.meta & flag != 0
    }

    #[inline]
    pub(super) fn set(&mut self, flag: u32, on: bool) {
        if on {
            self.meta |= flag;
        } else {
            self.meta &= !flag;
        }
    }

    #[inline]
    pub(super) fn key(&self) -> (Instant, u64) {
        (self.lease, self.seq)
    }
}

/// The candidates of one run, all seen in state generation `generation`:
/// eviction acts on one only while the master's generation is still that
/// (checked under the shard locks it evicts under, where no restore runs).
/// A collection that sees the generation move between two slices starts
/// again on the new state, so no candidate of a replaced state is kept
/// (base and candidate counts restart with it; deadlines already
/// normalised stay counted, as they were cleared).
pub(super) struct Candidates {
    pub(super) list: Vec<Candidate>,
    pub(super) generation: u64,
    /// How many are protected (`PINNED`).
    pub(super) pinned: usize,
}

/// What eviction keeps between runs: the candidate buffer, so a run writes
/// its candidates into pages already faulted in (a fresh buffer costs a
/// page fault per 170 candidates, as much as the scan of their records)
/// and the longest shard read-lock hold of a collection slice.
///
/// The buffer is bounded: a run leaves it empty with room for at most its
/// own candidates plus a quarter plus [`KEEP_SLACK`] (24 bytes each), and
/// never more than [`KEEP_MAX_BYTES`], shrinking it otherwise, so an idle
/// master holds at most 16 MiB for it (a master whose runs see more
/// candidates than that pays the page faults of the rest on each run,
/// rather than holding 24-30 bytes per object between runs). Two runs at once (the maintenance thread and a caller) do
/// not wait for each other: the second one to start uses a buffer of its
/// own, and the larger of the two is kept.
#[derive(Default)]
pub(crate) struct EvictionScratch {
    buffer: Mutex<Vec<Candidate>>,
    pub(super) longest_hold: LongestHold,
    /// The wall time of the last run's collection, first sort and passes
    /// (ns), for the benchmark's split of a run.
    pub(super) last_phases_ns: [AtomicU64; 3],
}

/// Candidates' room a buffer may keep beyond its run's candidates and a
/// quarter.
const KEEP_SLACK: usize = 4096;

/// The most the kept candidate buffer may hold between runs.
const KEEP_MAX_BYTES: usize = 16 << 20;

impl EvictionScratch {
    fn take(&self) -> Vec<Candidate> {
        self.buffer
            .try_lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    }

    pub(super) fn give_back(&self, mut list: Vec<Candidate>) {
        let keep = list
            .len()
            .saturating_add(list.len() / 4)
            .saturating_add(KEEP_SLACK)
            .min(KEEP_MAX_BYTES / std::mem::size_of::<Candidate>());
        list.clear();
        if list.capacity() > keep {
            list.shrink_to(keep);
        }
        if let Some(mut b) = self.buffer.try_lock() {
            if list.capacity() > b.capacity() {
                *b = list;
            }
        }
    }

    pub(super) fn record_phases(&self, phases: [std::time::Duration; 3]) {
        for (slot, d) in self.last_phases_ns.iter().zip(phases) {
            slot.store(
                u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
    }
}

/// Candidates in a 4 KiB page.
const PER_PAGE: usize = 4096 / std::mem::size_of::<Candidate>();

/// Writes one candidate's room in each page of the next slice's room, so a
/// fresh buffer's page faults (a microsecond or two each, one per 170
/// candidates) are taken here, before the shard lock, and not by the
/// writes under it; a page already in costs one store.
fn fault_in(list: &mut Vec<Candidate>) {
    let blank = Candidate {
        lease: 0,
        seq: 0,
        slot: 0,
        meta: 0,
    };
    let room = list.spare_capacity_mut();
    let n = room.len().min(SCAN_SLICE);
    for c in room[..n].iter_mut().step_by(PER_PAGE) {
        c.write(blank);
    }
}

impl MasterCore {
    /// Counts the base and the candidates, normalises the expired deadlines
    /// of the candidates and returns them, in arena order, walking each
    /// shard [`SCAN_SLICE`] slots per read-lock hold.
    pub(super) fn collect_candidates(
        &self,
        now: Instant,
        report: &mut EvictionReport,
    ) -> Candidates {
        let any_retained = self.metrics.retained_groups.load(Ordering::Relaxed) > 0;
        let mut list = self.eviction.take();
        let mut pinned_count = 0usize;
        let mut seen: Option<u64> = None;
        'collect: loop {
            for (si, shard) in self.shards.iter().enumerate() {
                debug_assert!(si as u32 <= SHARD_MASK);
                let mut from = Some(0u32);
                while let Some(at) = from {
                    // Room for a whole slice, made before the lock is taken:
                    // growing a buffer of millions of candidates (a remap of
                    // its pages) would otherwise happen under the lock.
                    list.reserve(SCAN_SLICE);
                    fault_in(&mut list);
                    let st = shard.state.read();
                    let held = HoldTimer::start();
                    let generation = self.generation();
                    if seen.is_some_and(|g| g != generation) {
                        // A restore installed a new state since the last
                        // slice: what was collected names the old one.
                        drop(st);
                        list.clear();
                        pinned_count = 0;
                        report.base = 0;
                        report.candidates = 0;
                        seen = None;
                        continue 'collect;
                    }
                    seen = Some(generation);
                    // Lock order: the registry comes after the shards.
                    let retained = any_retained.then(|| self.retention.map.read());
                    from = st.scan_slots(at, SCAN_SLICE, |slot, obj| {
                        if obj.hard_pin() || obj.evictable_memory().next().is_none() {
                            return;
                        }
                        report.base += 1;
                        let lease = obj.effective_lease();
                        if now < lease {
                            return;
                        }
                        report.candidates += 1;
                        // Normalise an expired deadline (CAS: cleanup may race us).
                        let d = obj.soft_pin.load(Ordering::Acquire);
                        if d != NO_DEADLINE
                            && now >= d
                            && obj
                                .soft_pin
                                .compare_exchange(
                                    d,
                                    NO_DEADLINE,
                                    Ordering::AcqRel,
                                    Ordering::Acquire,
                                )
                                .is_ok()
                        {
                            self.pin_dropped(si);
                            report.normalised += 1;
                            self.record_read_locked(&st, obj);
                        }
                        let group = obj.group();
                        let pinned = is_active(obj.committed(), now)
                            || group.is_some_and(|g| {
                                retained
                                    .as_ref()
                                    .is_some_and(|r| retention_active(r, &g.id, now))
                            });
                        let mut c = Candidate {
                            lease,
                            seq: obj.seq,
                            slot,
                            meta: si as u32,
                        };
                        c.set(PINNED, pinned);
                        c.set(GROUPED, group.is_some());
                        pinned_count += pinned as usize;
                        list.push(c);
                    });
                    drop(retained);
                    let held_ns = held.elapsed_ns();
                    drop(st);
                    self.eviction.longest_hold.record(held_ns);
                    #[cfg(feature = "test-hooks")]
                    if let Some(next) = from {
                        self.race_point(crate::quiesce::RacePoint::EvictionSlice {
                            shard: si,
                            next_slot: next,
                        });
                    }
                }
            }
            let generation = seen.unwrap_or_else(|| self.generation());
            return Candidates {
                list,
                generation,
                pinned: pinned_count,
            };
        }
    }
}

/// A candidate of slot `seq` with no flags, for the tests of the
/// collection and of the order.
#[cfg(test)]
pub(super) fn cand(lease: Instant, seq: u64) -> Candidate {
    Candidate {
        lease,
        seq,
        slot: seq as u32,
        meta: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_candidate_buffer_is_bounded_by_its_last_run() {
        let scratch = EvictionScratch::default();
        let run = |n: usize, room: usize| {
            let mut v = scratch.take();
            v.reserve(room);
            v.extend((0..n as u64).map(|s| cand(0, s)));
            scratch.give_back(v);
        };
        run(10_000, 100_000);
        let kept = scratch.buffer.lock().capacity();
        assert!(kept >= 10_000, "kept {kept}");
        assert!(kept <= 10_000 + 2_500 + KEEP_SLACK, "kept {kept}");
        assert!(scratch.buffer.lock().is_empty());
        // A smaller run reuses it, then leaves only what it needed.
        run(100, 0);
        assert!(scratch.buffer.lock().capacity() <= 100 + 25 + KEEP_SLACK);
        // Taking leaves nothing behind: a run at the same time gets a
        // buffer of its own, and the larger one is kept.
        let held = scratch.take();
        assert_eq!(scratch.take().capacity(), 0);
        scratch.give_back(held);
        // However large a run, what stays between runs is capped.
        let cap = KEEP_MAX_BYTES / std::mem::size_of::<Candidate>();
        run(cap + 10_000, 0);
        let kept = scratch.buffer.lock().capacity();
        assert!(kept <= cap, "kept {kept} > cap {cap}");
    }
}
