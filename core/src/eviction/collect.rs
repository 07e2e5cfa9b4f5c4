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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Arena slots a collection visits under one shard read lock. A slot costs
/// tens of nanoseconds at most (two cache lines of a sequential stream, and
/// for a few objects a compare-and-swap, a group's lease and a retention
/// lookup), so a hold stays well under a millisecond however large the
/// shard; re-taking the lock costs nothing next to the slice.
const SCAN_SLICE: usize = 4096;

/// One candidate, 24 bytes: the collection writes one per candidate it
/// keeps and the order partitions and sorts them, so its size is its cost.
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
///
/// `list` holds the protected candidates up to `cuts[PROTECTED]` in the
/// order and the unprotected ones up to `cuts[UNPROTECTED]` (all of a side
/// whose cut is `None`): the ones after a cut were dropped, and
/// [`MasterCore::read_rest`] reads them again if a pass gets that far.
pub(super) struct Candidates {
    pub(super) list: Vec<Candidate>,
    pub(super) generation: u64,
    /// How many of the candidates read are protected (`PINNED`), kept or not.
    pub(super) pinned: u64,
    pub(super) cuts: [Option<Key>; 2],
    /// What reading the rest needs.
    pub(super) rest: Rest,
}

/// The side of the order unprotected candidates are kept and dropped on
/// (an index of [`Candidates::cuts`]).
pub(super) const UNPROTECTED: usize = 0;
/// The side of protected (`PINNED`) candidates.
pub(super) const PROTECTED: usize = 1;

/// A candidate's place in the order, (lease, creation sequence).
pub(super) type Key = (Instant, u64);

/// What a run needs to read the candidates it dropped: how many to keep at
/// a time, and the object sequence each slice of the first reading was
/// read at (objects created since are not candidates of the run, and a
/// later reading leaves them out).
pub(super) struct Rest {
    /// How many candidates of each side the next reading of it keeps:
    /// the collection's `keep`, doubled by each reading, so a run whose
    /// candidates keep failing their checks reads the objects again a
    /// number of times logarithmic in how far its passes go.
    keep: [usize; 2],
    /// Whether the run keeps protected candidates at all (only a run that
    /// may evict them does).
    protected_kept: bool,
    generation: u64,
    /// `(shard, slice start, next object sequence)` of every slice of the
    /// first reading, in reading order.
    bounds: Vec<(u32, u32, u64)>,
}

/// The candidates of one side a reading keeps, at most `keep` of the
/// order's first beyond any it was asked to skip: a reading holds at most
/// twice `keep` plus a slice of them, however many objects it reads.
struct Kept {
    list: Vec<Candidate>,
    keep: usize,
    /// Candidates of this side after this key were dropped.
    cut: Option<Key>,
}

impl Kept {
    fn new(list: Vec<Candidate>, keep: usize) -> Self {
        Kept {
            list,
            keep,
            cut: None,
        }
    }

    /// Whether a candidate at `key` is still inside what is kept.
    #[inline]
    fn wants(&self, key: Key) -> bool {
        self.cut.is_none_or(|c| key <= c)
    }

    /// Between two slices (no lock held): once the list holds twice
    /// `keep`, only the first `keep` of the order stay, and the cut moves
    /// to the last of them. Keys are unique, so exactly `keep` stay.
    fn trim(&mut self) {
        if self.list.len() < self.keep.saturating_mul(2) {
            return;
        }
        let last = self.keep - 1;
        self.list.select_nth_unstable_by_key(last, Candidate::key);
        self.cut = Some(self.list[last].key());
        self.list.truncate(self.keep);
    }
}

/// What eviction keeps between runs: the candidate buffers (unprotected
/// and protected), so a run writes its candidates into pages already
/// faulted in (a fresh buffer costs a page fault per 170 candidates, as
/// much as the scan of their records), the longest shard read-lock hold of
/// a collection slice, and the split of the last run.
///
/// A buffer is bounded: a run leaves it empty with room for at most its
/// own candidates plus a quarter plus [`KEEP_SLACK`] (24 bytes each), and
/// never more than [`KEEP_MAX_BYTES`], shrinking it otherwise, so an idle
/// master holds at most 32 MiB for them (a master whose runs see more
/// candidates than that pays the page faults of the rest on each run,
/// rather than holding 24-30 bytes per object between runs). Two runs at
/// once (the maintenance thread and a caller) do not wait for each other:
/// the second one to start uses buffers of its own, and the larger ones
/// are kept.
#[derive(Default)]
pub(crate) struct EvictionScratch {
    buffers: [Mutex<Vec<Candidate>>; 2],
    pub(super) longest_hold: LongestHold,
    /// The wall time of the last run's collection, first sort and passes
    /// (ns), for the benchmark's split of a run.
    pub(super) last_phases_ns: [AtomicU64; 3],
    /// Candidates of each side a reading keeps, when a test sets it (0: by
    /// the run's goal).
    keep_override: AtomicUsize,
}

/// The scratch buffer the protected candidates are read into, and the
/// unprotected ones kept appended at the end: the run's order.
const ORDER: usize = 0;
/// The scratch buffer unprotected candidates are read into.
const UNPROTECTED_BUFFER: usize = 1;

/// Candidates' room a buffer may keep beyond its run's candidates and a
/// quarter.
const KEEP_SLACK: usize = 4096;

/// The most a kept candidate buffer may hold between runs.
const KEEP_MAX_BYTES: usize = 16 << 20;

/// The fewest candidates of each side a reading keeps: a master with
/// fewer never drops one.
pub(super) const MIN_KEEP: usize = 4096;

impl EvictionScratch {
    fn take(&self, which: usize) -> Vec<Candidate> {
        self.buffers[which]
            .try_lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    }

    fn give_back_to(&self, which: usize, mut list: Vec<Candidate>) {
        let keep = list
            .len()
            .saturating_add(list.len() / 4)
            .saturating_add(KEEP_SLACK)
            .min(KEEP_MAX_BYTES / std::mem::size_of::<Candidate>());
        list.clear();
        if list.capacity() > keep {
            list.shrink_to(keep);
        }
        if let Some(mut b) = self.buffers[which].try_lock() {
            if list.capacity() > b.capacity() {
                *b = list;
            }
        }
    }

    /// The run's order, for the next run.
    pub(super) fn give_back(&self, list: Vec<Candidate>) {
        self.give_back_to(ORDER, list);
    }

    pub(super) fn record_phases(&self, phases: [std::time::Duration; 3]) {
        for (slot, d) in self.last_phases_ns.iter().zip(phases) {
            slot.store(
                u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
    }

    /// How many candidates of each side a reading keeps for a run that
    /// evicts at most `need` objects: a pass takes them in order until
    /// `need` are evicted, so `need`, an eighth more for those that fail
    /// their checks at eviction time, and a window.
    pub(super) fn keep_for(&self, need: u64) -> usize {
        match self.keep_override.load(Ordering::Relaxed) {
            0 => usize::try_from(need)
                .unwrap_or(usize::MAX)
                .saturating_add(usize::try_from(need / 8).unwrap_or(usize::MAX))
                .saturating_add(super::evict::WINDOW)
                .max(MIN_KEEP),
            n => n,
        }
    }

    /// Makes every reading keep `n` candidates of each side (`None`: by
    /// the run's goal, at least [`MIN_KEEP`]), so tests reach the
    /// re-reading with few objects.
    pub(super) fn set_keep(&self, n: Option<usize>) {
        self.keep_override
            .store(n.map_or(0, |n| n.max(1)), Ordering::Relaxed);
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

/// Which reading of a run: the first (which counts the base and the
/// candidates and records the slices' bounds) or a later one, of the
/// candidates of one side after `after` among the objects the first
/// reading saw.
enum Reading<'a> {
    First {
        bounds: &'a mut Vec<(u32, u32, u64)>,
        /// Whether protected candidates are kept (else only counted).
        protected: bool,
    },
    Rest {
        side: usize,
        after: Key,
        /// Also read: candidates on the other side now, after `after` and
        /// up to this key (`Some(None)`: every one after `after`), the
        /// part of the other side the order holds whole. An object that
        /// crossed over since the first reading is found there (one that
        /// did not is held already).
        other_upto: Option<Option<Key>>,
        bounds: &'a [(u32, u32, u64)],
        generation: u64,
    },
}

impl MasterCore {
    /// Counts the base and the candidates, normalises the expired deadlines
    /// of the candidates and returns them, walking each shard's arena in
    /// slot order, [`SCAN_SLICE`] slots per read-lock hold. Of the
    /// unprotected candidates, and of the protected ones when `protected`
    /// (a run that may evict them), it keeps the first `keep` of the order
    /// (at most twice that and a slice while reading).
    pub(super) fn collect_candidates(
        &self,
        now: Instant,
        keep: usize,
        protected: bool,
        report: &mut EvictionReport,
    ) -> Candidates {
        // The protected candidates kept are read into the order's buffer,
        // the unprotected ones into their own and appended at the end.
        let mut kept = [
            Kept::new(self.eviction.take(UNPROTECTED_BUFFER), keep),
            Kept::new(self.eviction.take(ORDER), keep),
        ];
        let mut bounds = Vec::new();
        let (generation, pinned) = self.read_candidates(
            now,
            Reading::First {
                bounds: &mut bounds,
                protected,
            },
            &mut kept,
            report,
        );
        let [unprotected_kept, protected_kept] = kept;
        let mut list = protected_kept.list;
        list.extend_from_slice(&unprotected_kept.list);
        self.eviction
            .give_back_to(UNPROTECTED_BUFFER, unprotected_kept.list);
        Candidates {
            list,
            generation,
            pinned,
            cuts: [unprotected_kept.cut, protected_kept.cut],
            rest: Rest {
                keep: [keep; 2],
                protected_kept: protected,
                generation,
                bounds,
            },
        }
    }

    /// Reads again the candidates of `side` the run's first reading
    /// dropped, those after `after` in the order (at most twice as many as
    /// the last reading of the side kept; the new cut says where the ones
    /// kept end), with the candidates on the other side now between
    /// `after` and `other_cut` (the other side's cut; `None`: all after
    /// `after`) when the order holds that side, so that an object that
    /// crossed sides since the first reading is not lost (the order keeps
    /// one copy of each object, [`Ordered::resume`]). Objects created since
    /// the first reading read their slice are left out; expired deadlines
    /// are normalised as the first reading does. Nothing once a restore has
    /// replaced the run's state.
    ///
    /// [`Ordered::resume`]: super::order::Ordered::resume
    pub(super) fn read_rest(
        &self,
        now: Instant,
        side: usize,
        after: Key,
        other_cut: Option<Key>,
        rest: &mut Rest,
        report: &mut EvictionReport,
    ) -> (Vec<Candidate>, Option<Key>) {
        let keep = rest.keep[side].saturating_mul(2);
        rest.keep[side] = keep;
        // The other side's candidates read lie in the part of the order
        // held whole: they are not cut back.
        let mut kept = [UNPROTECTED, PROTECTED]
            .map(|s| Kept::new(Vec::new(), if s == side { keep } else { usize::MAX }));
        let other_held = side == PROTECTED || rest.protected_kept;
        let (generation, _) = self.read_candidates(
            now,
            Reading::Rest {
                side,
                after,
                other_upto: other_held.then_some(other_cut),
                bounds: &rest.bounds,
                generation: rest.generation,
            },
            &mut kept,
            report,
        );
        if generation != rest.generation {
            return (Vec::new(), None);
        }
        let cut = kept[side].cut;
        let [mut unprotected, protected] = kept;
        unprotected.list.extend_from_slice(&protected.list);
        (unprotected.list, cut)
    }

    /// One reading of every shard (see [`Self::collect_candidates`] and
    /// [`Self::read_rest`]) into `kept`, by side. Returns the state
    /// generation it read and how many protected candidates it read. A
    /// first reading that sees the generation move starts again on the new
    /// state; a later one stops there (it reads only the run's).
    fn read_candidates(
        &self,
        now: Instant,
        mut reading: Reading<'_>,
        kept: &mut [Kept; 2],
        report: &mut EvictionReport,
    ) -> (u64, u64) {
        let (first, only, sides) = match reading {
            Reading::First { protected, .. } => (true, None, [true, protected]),
            Reading::Rest {
                side,
                generation,
                other_upto,
                ..
            } => (
                false,
                Some(generation),
                [
                    side == UNPROTECTED || other_upto.is_some(),
                    side == PROTECTED || other_upto.is_some(),
                ],
            ),
        };
        let mut pinned_seen = 0u64;
        let any_retained = self.metrics.retained_groups.load(Ordering::Relaxed) > 0;
        let mut seen: Option<u64> = None;
        // Where the next slice's bound is among a later reading's bounds.
        let mut bound_at = 0usize;
        'collect: loop {
            for (si, shard) in self.shards.iter().enumerate() {
                debug_assert!(si as u32 <= SHARD_MASK);
                let mut from = Some(0u32);
                while let Some(at) = from {
                    // Room for a whole slice, made before the lock is taken:
                    // growing a buffer of millions of candidates (a remap of
                    // its pages) would otherwise happen under the lock.
                    for (k, _) in kept.iter_mut().zip(sides).filter(|(_, on)| *on) {
                        k.list.reserve(SCAN_SLICE);
                        fault_in(&mut k.list);
                    }
                    if let Reading::First { bounds, .. } = &mut reading {
                        bounds.reserve(1);
                    }
                    let st = shard.state.read();
                    let held = HoldTimer::start();
                    let generation = self.generation();
                    if only.is_some_and(|g| g != generation) {
                        return (generation, 0);
                    }
                    if seen.is_some_and(|g| g != generation) {
                        // A restore installed a new state since the last
                        // slice: what was collected names the old one.
                        drop(st);
                        for k in kept.iter_mut() {
                            k.list.clear();
                            k.cut = None;
                        }
                        pinned_seen = 0;
                        report.base = 0;
                        report.candidates = 0;
                        if let Reading::First { bounds, .. } = &mut reading {
                            bounds.clear();
                        }
                        seen = None;
                        continue 'collect;
                    }
                    seen = Some(generation);
                    // Objects of this slice with a sequence from here on
                    // were created after the first reading read it.
                    let seq_bound = match &mut reading {
                        Reading::First { bounds, .. } => {
                            bounds.push((si as u32, at, self.next_seq.load(Ordering::Acquire)));
                            u64::MAX
                        }
                        Reading::Rest { bounds, .. } => {
                            while bounds
                                .get(bound_at)
                                .is_some_and(|&(s, a, _)| (s, a) < (si as u32, at))
                            {
                                bound_at += 1;
                            }
                            match bounds.get(bound_at) {
                                Some(&(s, a, b)) if (s, a) == (si as u32, at) => b,
                                // Slots the first reading did not read.
                                _ => 0,
                            }
                        }
                    };
                    // What a later reading takes: its side after `after`,
                    // the other side after `after` up to `other_upto`.
                    let rest = match reading {
                        Reading::First { .. } => None,
                        Reading::Rest {
                            side,
                            after,
                            other_upto,
                            ..
                        } => Some((side, after, other_upto.flatten())),
                    };
                    // Lock order: the registry comes after the shards.
                    let retained = any_retained.then(|| self.retention.map.read());
                    from = st.scan_slots(at, SCAN_SLICE, |slot, obj| {
                        if obj.seq >= seq_bound
                            || obj.hard_pin()
                            || obj.evictable_memory().next().is_none()
                        {
                            return;
                        }
                        report.base += first as u64;
                        let lease = obj.effective_lease();
                        if now < lease {
                            return;
                        }
                        report.candidates += first as u64;
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
                        let protected = is_active(obj.committed(), now)
                            || group.is_some_and(|g| {
                                retained
                                    .as_ref()
                                    .is_some_and(|r| retention_active(r, &g.id, now))
                            });
                        pinned_seen += protected as u64;
                        let side = if protected { PROTECTED } else { UNPROTECTED };
                        let key = (lease, obj.seq);
                        let k = &mut kept[side];
                        let taken = sides[side]
                            && k.wants(key)
                            && rest.is_none_or(|(read, after, other_upto)| {
                                key > after && (side == read || other_upto.is_none_or(|u| key <= u))
                            });
                        if !taken {
                            return;
                        }
                        let mut c = Candidate {
                            lease,
                            seq: obj.seq,
                            slot,
                            meta: si as u32,
                        };
                        c.set(PINNED, protected);
                        c.set(GROUPED, group.is_some());
                        k.list.push(c);
                    });
                    drop(retained);
                    let held_ns = held.elapsed_ns();
                    drop(st);
                    self.eviction.longest_hold.record(held_ns);
                    for k in kept.iter_mut() {
                        k.trim();
                    }
                    #[cfg(feature = "test-hooks")]
                    if let Some(next) = from {
                        self.race_point(crate::quiesce::RacePoint::EvictionSlice {
                            shard: si,
                            next_slot: next,
                        });
                    }
                }
            }
            return (seen.unwrap_or_else(|| self.generation()), pinned_seen);
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
            let mut v = scratch.take(ORDER);
            v.reserve(room);
            v.extend((0..n as u64).map(|s| cand(0, s)));
            scratch.give_back(v);
        };
        run(10_000, 100_000);
        let kept = scratch.buffers[ORDER].lock().capacity();
        assert!(kept >= 10_000, "kept {kept}");
        assert!(kept <= 10_000 + 2_500 + KEEP_SLACK, "kept {kept}");
        assert!(scratch.buffers[ORDER].lock().is_empty());
        // A smaller run reuses it, then leaves only what it needed.
        run(100, 0);
        assert!(scratch.buffers[ORDER].lock().capacity() <= 100 + 25 + KEEP_SLACK);
        // Taking leaves nothing behind: a run at the same time gets a
        // buffer of its own, and the larger one is kept.
        let held = scratch.take(ORDER);
        assert_eq!(scratch.take(ORDER).capacity(), 0);
        scratch.give_back(held);
        // However large a run, what stays between runs is capped.
        let cap = KEEP_MAX_BYTES / std::mem::size_of::<Candidate>();
        run(cap + 10_000, 0);
        let kept = scratch.buffers[ORDER].lock().capacity();
        assert!(kept <= cap, "kept {kept} > cap {cap}");
    }
}
