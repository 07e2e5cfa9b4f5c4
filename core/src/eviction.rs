//! Memory eviction (docs/CONTRACT.md §5, soft-pin parts §4.7). Candidates are
//! collected holding one shard read lock at a time, ordered by (lease,
//! creation sequence), then evicted one object (or one whole group) at a
//! time. An object is *protected* when its own soft pin is active or its
//! group's retention is active, each evaluated as `now < deadline` at
//! eviction time: the first pass skips protected objects, the second takes
//! unprotected ones first and protected ones only when
//! `allow_evict_soft_pinned_objects`. Expired soft-pin deadlines of examined
//! candidates are normalised on the way (retention deadlines are left to
//! cleanup: they are not the objects').
//!
//! Candidates and group member lists are gathered without holding the
//! locks eviction later acts under, and a restore may install a new state in
//! between. The candidates of a run share one state
//! [generation](MasterCore::generation), read under every shard lock they
//! were seen under; eviction acts on one only while the generation is
//! unchanged, checked under the shard locks it evicts under (where no
//! restore can run). A group's member list is read
//! again under its members' shard locks, so a group is always evicted as it
//! is then: a candidate from a replaced state never splits a restored group.
//!
//! The collection walks each shard's arena in slot order (sequential in
//! memory), [`SCAN_SLICE`] slots per read-lock hold, so no hold grows with
//! the shard. A candidate is 24 bytes (sort key, slot, shard and flags);
//! the order is produced lazily by [`Ordered`]. All candidates of a run
//! come from one state generation: a restore seen between two slices
//! restarts the collection on the new state (see [`Candidates`]).

use crate::clock::Instant;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::key;
use crate::master::MasterCore;
use crate::object::{Object, NO_DEADLINE};
use crate::retention::retention_active;
use crate::shard::ShardState;
use crate::soft_pin::state::is_active;
use crate::types::{Key, Pool, ReplicaKind};
use hashbrown::HashMap;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant as WallInstant;

/// What one eviction run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EvictionReport {
    /// Non-hard-pinned objects with an evictable memory replica.
    pub base: u64,
    /// Base objects whose lease was not live.
    pub candidates: u64,
    /// Objects whose memory replicas were freed.
    pub evicted: u64,
    pub evicted_bytes: u64,
    /// Of `evicted`, those taken by the second pass while protected (own
    /// soft pin active, or group retention active).
    pub evicted_pinned: u64,
    /// Discarded buffers released by this run (credited to the second pass).
    pub discarded_released: u64,
    /// Expired deadlines cleared while examining candidates.
    pub normalised: u64,
}

/// Arena slots a collection visits under one shard read lock. A slot costs
/// tens of nanoseconds at most (two cache lines of a sequential stream, and
/// for a few objects a compare-and-swap, a group's lease and a retention
/// lookup), so a hold stays well under a millisecond however large the
/// shard; re-taking the lock costs nothing next to the slice.
const SCAN_SLICE: usize = 4096;

/// One candidate, 24 bytes: the collection writes one per candidate and
/// the order partitions and sorts them, so its size is its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Candidate {
    /// The effective lease, read once at collection.
    lease: Instant,
    /// The creation sequence: unique within a state generation, so with the
    /// slot it names this object and not a rewrite of it (a replacing
    /// Upsert takes a new sequence), and it breaks every lease tie.
    seq: u64,
    /// The record's arena slot in its shard. No slot generation is kept:
    /// the record found there is this object exactly when its sequence is
    /// `seq` (and the state generation is the run's).
    slot: u32,
    /// The shard index (below [`SHARD_MASK`]) and the `PINNED`, `GROUPED`
    /// and `DONE` flags.
    meta: u32,
}
const _: () = assert!(std::mem::size_of::<Candidate>() == 24);

/// Shard indexes are below 2^20 (`MasterConfig::validate` bounds
/// `shard_count`), well inside the low bits of `Candidate::meta`.
const SHARD_MASK: u32 = (1 << 24) - 1;
/// Protected when collected: own soft pin or group retention active.
const PINNED: u32 = 1 << 29;
/// In a group: the pass reads the group from the record (fixed at its
/// creation) when it reaches the candidate.
const GROUPED: u32 = 1 << 30;
/// Dealt with by an earlier step of this run.
const DONE: u32 = 1 << 31;

impl Candidate {
    #[inline]
    fn shard(&self) -> usize {
        (self.meta & SHARD_MASK) as usize
    }

    #[inline]
    fn has(&self, flag: u32) -> bool {
        self.meta & flag != 0
    }

    #[inline]
    fn set(&mut self, flag: u32, on: bool) {
        if on {
            self.meta |= flag;
        } else {
            self.meta &= !flag;
        }
    }

    #[inline]
    fn key(&self) -> (Instant, u64) {
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
struct Candidates {
    list: Vec<Candidate>,
    generation: u64,
    /// How many are protected (`PINNED`).
    pinned: usize,
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
    longest_hold_ns: AtomicU64,
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

    fn give_back(&self, mut list: Vec<Candidate>) {
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

    fn record_hold(&self, held: std::time::Duration) {
        let ns = u64::try_from(held.as_nanos()).unwrap_or(u64::MAX);
        if ns > self.longest_hold_ns.load(Ordering::Relaxed) {
            self.longest_hold_ns.fetch_max(ns, Ordering::Relaxed);
        }
    }
}

/// What [`MasterCore::evict_group`] did.
enum GroupOutcome {
    /// The group's members were evicted (members, bytes, pinned members);
    /// `(0, 0, 0)` when some member failed this pass's checks (none went).
    Evicted(u64, u64, u64),
    /// The candidate came from a state a restore replaced: nothing done.
    Obsolete,
}

/// The groups a run has dealt with, by address, each held by an `Arc`
/// while it is in the set: a group evicted whole is freed with its last
/// member, and a group created after it could otherwise take its address.
#[derive(Default)]
struct GroupsDone(HashMap<*const Group, Arc<Group>>);

impl GroupsDone {
    /// Adds `g`; false if it was there already.
    fn insert(&mut self, g: &Arc<Group>) -> bool {
        match self.0.entry(Arc::as_ptr(g)) {
            hashbrown::hash_map::Entry::Occupied(_) => false,
            hashbrown::hash_map::Entry::Vacant(v) => {
                v.insert(Arc::clone(g));
                true
            }
        }
    }

    fn remove(&mut self, g: &Arc<Group>) {
        self.0.remove(&Arc::as_ptr(g));
    }
}

/// How often a group eviction re-reads a member list that changed while it
/// took the members' shard locks, before leaving the group for a later pass.
const GROUP_LOCK_ATTEMPTS: usize = 4;

enum Pass {
    First,
    Second { take_pinned: bool },
}

/// `ceil(base × ratio)` as the contract means it, for ratios written in
/// decimal: a product a few ulps above an integer (100 × 0.07 =
/// 7.000000000000001 in binary floating point) counts as that integer, so
/// such a ratio does not evict one object too many.
fn ceil_count(base: u64, ratio: f64) -> u64 {
    let x = base as f64 * ratio;
    let nearest = x.round();
    if (x - nearest).abs() <= nearest * 4.0 * f64::EPSILON {
        nearest as u64
    } else {
        x.ceil() as u64
    }
}

fn ratio_ok(r: f64) -> bool {
    (0.0..=1.0).contains(&r)
}

impl MasterCore {
    /// Runs the trigger of §5: evicts when memory usage is above the high
    /// watermark (or `force`, after an allocation failure, when
    /// `eviction_ratio > 0`). Returns the report if it ran.
    pub fn evict_if_needed(&self, force: bool) -> Option<EvictionReport> {
        self.ensure_primary().ok()?;
        let (cap, used) = {
            let t = self.segments.read();
            (t.capacity(Pool::Memory), t.allocated(Pool::Memory))
        };
        if cap == 0 {
            return None;
        }
        let used = used as f64 / cap as f64;
        let hwm = self.config.eviction_high_watermark_ratio;
        let ratio = self.config.eviction_ratio;
        if !(used > hwm || (force && ratio > 0.0)) {
            return None;
        }
        let target = ratio.max(used - hwm + ratio).min(1.0);
        let lower = (target / 2.0).max(used - hwm).clamp(0.0, 1.0);
        self.run_eviction(target, lower).ok()
    }

    /// One deterministic eviction run with explicit target and lowerbound
    /// ratios of the eviction base.
    pub fn run_eviction(&self, target: f64, lowerbound: f64) -> Result<EvictionReport> {
        self.ensure_primary()?;
        if !ratio_ok(target) || !ratio_ok(lowerbound) {
            return Err(Error::invalid(format!(
                "eviction ratios must be in [0, 1] (target {target}, lowerbound {lowerbound})"
            )));
        }
        let now = self.clock.now();
        self.metrics
            .eviction_attempts
            .fetch_add(1, Ordering::Relaxed);
        let mut report = EvictionReport {
            discarded_released: self.release_discarded_at(now),
            ..Default::default()
        };
        let Candidates {
            list,
            generation,
            pinned,
        } = self.collect_candidates(now, &mut report);
        #[cfg(feature = "test-hooks")]
        self.race_point(crate::quiesce::RacePoint::EvictionCollected);
        let target_n = ceil_count(report.base, target);
        let lower_n = ceil_count(report.base, lowerbound);
        // The first pass skips protected candidates: to evict `need` it reads
        // about need / (share of unprotected candidates) of the order.
        let need = target_n.max(lower_n);
        let unpinned = (list.len() - pinned) as u64;
        let reads = match unpinned {
            0 => need,
            u => (u128::from(need) * list.len() as u128 / u128::from(u)) as u64,
        };
        let mut cands = Ordered::new(list, usize::try_from(reads).unwrap_or(usize::MAX));

        let mut groups_done = GroupsDone::default();
        self.pass(
            &mut cands,
            generation,
            &mut groups_done,
            Pass::First,
            now,
            target_n,
            &mut report,
        );
        let credited = report.evicted + report.discarded_released;
        if credited < lower_n {
            let goal = report.evicted + (lower_n - credited);
            self.pass(
                &mut cands,
                generation,
                &mut groups_done,
                Pass::Second { take_pinned: false },
                now,
                goal,
                &mut report,
            );
            if self.config.allow_evict_soft_pinned_objects {
                self.pass(
                    &mut cands,
                    generation,
                    &mut groups_done,
                    Pass::Second { take_pinned: true },
                    now,
                    goal,
                    &mut report,
                );
            }
        }
        self.eviction.give_back(cands.into_inner());
        let m = &self.metrics;
        if report.evicted > 0 {
            m.eviction_successes.fetch_add(1, Ordering::Relaxed);
        }
        m.evicted_keys.fetch_add(report.evicted, Ordering::Relaxed);
        m.evicted_bytes
            .fetch_add(report.evicted_bytes, Ordering::Relaxed);
        Ok(report)
    }

    /// Counts the base and the candidates, normalises the expired deadlines
    /// of the candidates and returns them, in arena order, walking each
    /// shard [`SCAN_SLICE`] slots per read-lock hold.
    fn collect_candidates(&self, now: Instant, report: &mut EvictionReport) -> Candidates {
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
                    let st = shard.state.read();
                    let held = WallInstant::now();
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
                    let held = held.elapsed();
                    drop(st);
                    self.eviction.record_hold(held);
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

    #[allow(clippy::too_many_arguments)]
    fn pass(
        &self,
        cands: &mut Ordered,
        generation: u64,
        groups_done: &mut GroupsDone,
        pass: Pass,
        now: Instant,
        goal: u64,
        report: &mut EvictionReport,
    ) {
        let allow_pinned = matches!(pass, Pass::Second { take_pinned: true });
        for i in 0..cands.len() {
            if report.evicted >= goal {
                return;
            }
            let c = cands.at(i);
            // The first pass and the unpinned half of the second skip active
            // pins; the pinned half (only with allow_evict_soft_pinned_objects)
            // takes what is left, pinned or not (a group with a pinned member
            // only goes then).
            if c.has(DONE) || (c.has(PINNED) && !allow_pinned) {
                continue;
            }
            let si = c.shard();
            if c.has(GROUPED) {
                // The group the record names: fixed at its creation, so the
                // one it had when collected while the record is still there
                // in the run's state. A record gone since went with its
                // whole group, or the state was replaced.
                let group = {
                    let st = self.shards[si].state.read();
                    if self.generation() != generation {
                        None
                    } else {
                        st.slot(c.slot)
                            .filter(|o| o.seq == c.seq)
                            .and_then(|o| o.group().cloned())
                    }
                };
                let Some(g) = group else {
                    c.set(DONE, true);
                    continue;
                };
                if !groups_done.insert(&g) {
                    c.set(DONE, true);
                    continue;
                }
                c.set(DONE, true);
                let GroupOutcome::Evicted(n, bytes, pinned) =
                    self.evict_group(&g, generation, now, allow_pinned)
                else {
                    // Its group was replaced too: no candidate of it is current.
                    continue;
                };
                report.evicted += n;
                report.evicted_bytes += bytes;
                report.evicted_pinned += pinned;
                if n == 0 {
                    // The group stays whole; a later pass may take it.
                    groups_done.remove(&g);
                    c.set(DONE, false);
                }
                continue;
            }
            let mut st = self.shards[si].state.write();
            // A restored object keeps its sequence but maybe not its group:
            // only a candidate of the current state may be evicted alone.
            if self.generation() != generation {
                c.set(DONE, true);
                continue;
            }
            let Some(obj) = st.slot(c.slot).filter(|o| o.seq == c.seq) else {
                c.set(DONE, true);
                continue;
            };
            if !evictable(obj, now, allow_pinned) {
                continue;
            }
            c.set(DONE, true);
            let pinned = is_active(obj.committed(), now);
            let (hash, scoped) = (st.hash_of(obj), key::scoped(st.key_of(obj)));
            let bytes = self.evict_object(&mut st, si, c.slot, hash, key::split(&scoped));
            report.evicted += 1;
            report.evicted_bytes += bytes;
            report.evicted_pinned += pinned as u64;
        }
    }

    /// Frees an object's evictable memory replicas; erases it if nothing is
    /// left. Returns the bytes freed. The object is the one in arena `slot`
    /// of the locked shard `st` (stored under `k`, hashing to `hash`): the
    /// caller found it there, so nothing looks it up by key again.
    fn evict_object(
        &self,
        st: &mut ShardState,
        si: usize,
        slot: u32,
        hash: u64,
        k: Key<'_>,
    ) -> u64 {
        let obj = st.slot_mut(slot).expect("object is locked");
        // Inline for one replica: no allocation in the usual case.
        let victims: crate::object::Replicas = obj.evictable_memory().copied().collect();
        let (freed, kept): (crate::object::Replicas, crate::object::Replicas) =
            std::mem::take(&mut obj.replicas)
                .into_iter()
                .partition(|r| victims.iter().any(|v| v.id == r.id));
        obj.replicas = kept;
        let (size, empty) = (obj.size, obj.replicas.is_empty());
        self.free_now(st, &freed, size);
        if empty {
            // What `erase` does, from the slot (one index probe, by slot).
            let gone = st.take_at(hash, slot).expect("object is locked");
            self.retire(st, si, &gone, k, None);
        }
        let mark = st.discarded.len();
        self.record_key(st, hash, k, mark);
        size * freed.len() as u64
    }

    /// All-or-none group eviction: every member must pass this pass's
    /// per-object checks, or no member goes. `generation` is the state the
    /// candidate naming `g` was seen in.
    fn evict_group(
        &self,
        g: &Arc<Group>,
        generation: u64,
        now: Instant,
        allow_pinned: bool,
    ) -> GroupOutcome {
        for _ in 0..GROUP_LOCK_ATTEMPTS {
            // Members join and leave under their own shard's lock, so the
            // list read here can be out of date by the time those locks are
            // held; it is read again under them below.
            let mut keys: Vec<Box<str>> = g.members.lock().clone();
            keys.sort_unstable();
            let mut located: Vec<(usize, u64, &str)> = keys
                .iter()
                .map(|k| {
                    let h = self.hasher.hash_scoped(k);
                    (self.shard_index_of(h), h, &**k)
                })
                .collect();
            located.sort_unstable();
            let mut shard_ids: Vec<usize> = located.iter().map(|m| m.0).collect();
            shard_ids.dedup();
            // Ascending shard order, as the lock order requires.
            let mut guards: Vec<_> = shard_ids
                .iter()
                .map(|&s| (s, self.shards[s].state.write()))
                .collect();
            if self.generation() != generation {
                return GroupOutcome::Obsolete;
            }
            let unchanged = {
                let members = g.members.lock();
                let mut now_keys: Vec<&str> = members.iter().map(|k| &**k).collect();
                now_keys.sort_unstable();
                now_keys.into_iter().eq(keys.iter().map(|k| &**k))
            };
            if !unchanged {
                continue;
            }
            // Evaluated now, under the members' locks: a retain since the
            // candidates were collected protects the group from here on.
            let retained = retention_active(&self.retention.map.read(), &g.id, now);
            if retained && !allow_pinned {
                return GroupOutcome::Evicted(0, 0, 0);
            }
            let all_pass = located.iter().all(|(s, h, k)| {
                let st = &guards.iter().find(|(i, _)| i == s).expect("locked").1;
                st.find_scoped(*h, k).is_some_and(|o| {
                    o.group().is_some_and(|og| Arc::ptr_eq(og, g))
                        && !o.hard_pin()
                        && !o.lease_live(now)
                        && (allow_pinned || !is_active(o.committed(), now))
                })
            });
            if !all_pass {
                return GroupOutcome::Evicted(0, 0, 0);
            }
            let (mut n, mut bytes, mut pinned) = (0, 0, 0);
            for (s, h, k) in &located {
                let st = &mut guards.iter_mut().find(|(i, _)| i == s).expect("locked").1;
                let Some(slot) = st.slot_of_key(*h, key::split(k)) else {
                    continue;
                };
                let obj = st.slot(slot).expect("a found slot holds a record");
                if obj.evictable_memory().next().is_none() {
                    continue;
                }
                pinned += (retained || is_active(obj.committed(), now)) as u64;
                bytes += self.evict_object(st, *s, slot, *h, key::split(k));
                n += 1;
            }
            return GroupOutcome::Evicted(n, bytes, pinned);
        }
        // The membership kept changing: the group stays whole this pass.
        GroupOutcome::Evicted(0, 0, 0)
    }
}

impl MasterCore {
    /// Longest hold of a shard read lock by an eviction collection slice
    /// since the master started or the last
    /// [`debug_reset_eviction_hold`](Self::debug_reset_eviction_hold).
    #[doc(hidden)]
    pub fn debug_eviction_longest_hold_ns(&self) -> u64 {
        self.eviction.longest_hold_ns.load(Ordering::Relaxed)
    }

    /// Resets [`debug_eviction_longest_hold_ns`](Self::debug_eviction_longest_hold_ns).
    #[doc(hidden)]
    pub fn debug_reset_eviction_hold(&self) {
        self.eviction.longest_hold_ns.store(0, Ordering::Relaxed);
    }
}

/// Candidates in (lease, creation sequence) order, sorted only as far as a
/// pass reads: a run usually stops after a few percent of them, so the rest
/// is only partitioned (`select_nth_unstable`), never sorted. Sequences are
/// unique, so the order is exactly that of a full sort.
struct Ordered {
    cands: Vec<Candidate>,
    /// `cands[..sorted]` is the sorted prefix of the total order.
    sorted: usize,
    /// Size of the first chunk to sort.
    first: usize,
}

impl Ordered {
    fn new(cands: Vec<Candidate>, expected: usize) -> Self {
        Ordered {
            cands,
            sorted: 0,
            // An eighth over the estimate: a run that reads a little
            // further than expected (a group that stays, a lease renewed)
            // does not pay for a second partition of the rest.
            first: expected.saturating_add(expected / 8).max(1024),
        }
    }

    fn len(&self) -> usize {
        self.cands.len()
    }

    /// The candidates' buffer, for the next run.
    fn into_inner(self) -> Vec<Candidate> {
        self.cands
    }

    /// The `i`-th candidate in order; sorts the next chunk (doubling) when
    /// `i` is past the sorted prefix.
    fn at(&mut self, i: usize) -> &mut Candidate {
        while i >= self.sorted {
            let rest = &mut self.cands[self.sorted..];
            let chunk = self.sorted.max(self.first).min(rest.len());
            if chunk < rest.len() {
                rest.select_nth_unstable_by_key(chunk, Candidate::key);
            }
            rest[..chunk].sort_unstable_by_key(Candidate::key);
            self.sorted += chunk;
        }
        &mut self.cands[i]
    }
}

fn evictable(obj: &Object, now: Instant, allow_pinned: bool) -> bool {
    !obj.hard_pin()
        && !obj.lease_live(now)
        && obj.replicas.iter().any(|r| r.kind == ReplicaKind::Memory)
        && obj.evictable_memory().next().is_some()
        && (allow_pinned || !is_active(obj.committed(), now))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(lease: Instant, seq: u64) -> Candidate {
        Candidate {
            lease,
            seq,
            slot: seq as u32,
            meta: 0,
        }
    }

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

    #[test]
    fn lazily_ordered_candidates_follow_the_full_sort() {
        // §5: eviction order is (effective lease, creation sequence), however far a pass reads.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (n, expected) in [(0, 0), (1, 5), (5_000, 10), (5_000, 4_000), (20_000, 1)] {
            let cands: Vec<Candidate> = (0..n as u64).map(|s| cand(next() % 50, s)).collect();
            let mut want: Vec<(Instant, u64)> = cands.iter().map(|c| (c.lease, c.seq)).collect();
            want.sort_unstable();
            let mut lazy = Ordered::new(cands, expected);
            let got: Vec<(Instant, u64)> = (0..lazy.len())
                .map(|i| {
                    let c = lazy.at(i);
                    (c.lease, c.seq)
                })
                .collect();
            assert_eq!(got, want, "n={n} expected={expected}");
            // A later pass starts again from the front and reads the same order.
            if n > 0 {
                assert_eq!((lazy.at(0).lease, lazy.at(0).seq), want[0]);
            }
        }
    }
}
