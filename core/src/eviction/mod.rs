//! Memory eviction (docs/CONTRACT.md §5, soft-pin parts §4.7). Candidates are
//! collected holding one shard read lock at a time (`collect.rs`), ordered
//! by (lease, creation sequence) (`order.rs`), then evicted in windows of
//! consecutive single objects, or one whole group at a time (`evict.rs`).
//! An object is *protected* when its own soft pin is active or its
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
//! memory), `SCAN_SLICE` slots per read-lock hold, so no hold grows with
//! the shard. A candidate is 24 bytes (sort key, slot, shard and flags);
//! the order is produced lazily by `Ordered`. All candidates of a run
//! come from one state generation: a restore seen between two slices
//! restarts the collection on the new state (see `Candidates`).
//!
//! The collection keeps, of the protected candidates and of the
//! unprotected ones apart, only as many as the run's goal can use
//! (`EvictionScratch::keep_for`), the first of the order: a run's memory
//! and its sort follow what it evicts, not the objects stored. A pass that
//! reaches the last one kept of a side it takes reads that side's dropped
//! ones again (`MasterCore::read_rest`, via `Ordered::ready` /
//! `Ordered::resume`), among the objects the first reading saw.

mod collect;
mod evict;
mod order;

use crate::clock::Instant;
use crate::error::{Error, Result};
use crate::master::MasterCore;
use crate::object::Object;
use crate::soft_pin::state::is_active;
use crate::types::{Pool, ReplicaKind};
pub(crate) use collect::EvictionScratch;
use collect::{Candidate, Candidates, Rest, DONE, GROUPED, PINNED};
use evict::{GroupsDone, WINDOW};
use order::{Ordered, Ready};
use smallvec::SmallVec;
use std::sync::atomic::Ordering;
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
        // Both from the target before it is capped at 1 (the contract's
        // formulas; a first pass cannot take more than the base anyway).
        let target = ratio.max(used - hwm + ratio);
        let lower = (target / 2.0).max(used - hwm).clamp(0.0, 1.0);
        self.run_eviction(target.min(1.0), lower).ok()
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
        let started = WallInstant::now();
        let mut report = EvictionReport {
            discarded_released: self.release_discarded_at(now),
            ..Default::default()
        };
        // The most the passes evict, from the objects stored: a pass needs
        // about that many candidates of a side it takes, so the reading
        // keeps those, not one per object.
        let stored = u64::try_from(self.shard_gauges().keys).unwrap_or(0);
        let most = ceil_count(stored, target.max(lowerbound));
        let keep = self.eviction.keep_for(most);
        let Candidates {
            list,
            generation,
            pinned,
            cuts,
            mut rest,
        } = self.collect_candidates(
            now,
            keep,
            self.config.allow_evict_soft_pinned_objects,
            &mut report,
        );
        let collected = WallInstant::now();
        #[cfg(feature = "test-hooks")]
        self.race_point(crate::quiesce::RacePoint::EvictionCollected);
        let target_n = ceil_count(report.base, target);
        let lower_n = ceil_count(report.base, lowerbound);
        // The first pass skips protected candidates: to evict `need` it reads
        // about need / (share of unprotected candidates) of the order.
        let need = target_n.max(lower_n);
        let unpinned = report.candidates.saturating_sub(pinned);
        let reads = match unpinned {
            0 => need,
            u => u64::try_from(u128::from(need) * u128::from(report.candidates) / u128::from(u))
                .unwrap_or(u64::MAX),
        };
        let mut cands = Ordered::new(list, usize::try_from(reads).unwrap_or(usize::MAX), cuts);
        if cands.len() > 0 {
            // The first chunk of the order, sorted here rather than by the
            // pass's first read, so the run's split can be timed.
            cands.at(0);
        }
        let sorted = WallInstant::now();

        let mut groups_done = GroupsDone::default();
        self.pass(
            &mut cands,
            &mut rest,
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
                &mut rest,
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
                    &mut rest,
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
        self.eviction
            .record_phases([collected - started, sorted - collected, sorted.elapsed()]);
        let m = &self.metrics;
        if report.evicted > 0 {
            m.eviction_successes.fetch_add(1, Ordering::Relaxed);
        }
        m.evicted_keys.fetch_add(report.evicted, Ordering::Relaxed);
        // Saturating: a run can evict up to MAX_MOUNTED_BYTES (2^63 - 1),
        // so two such runs would wrap a plain add and the counter would go
        // down (a Prometheus counter must not).
        let _ = m
            .evicted_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_add(report.evicted_bytes))
            });
        // Pins of evicted objects, and expired ones normalised, no longer
        // count: the index keeps its bound (§4.8).
        self.settle_pins();
        Ok(report)
    }

    /// One pass over the order: the candidates it may take, in order,
    /// until `goal` objects are evicted. Single objects go in windows of
    /// consecutive candidates ([`evict_window`](Self::evict_window)); a
    /// group ends a window and goes whole on its own
    /// ([`group_step`](Self::group_step)).
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &self,
        cands: &mut Ordered,
        rest: &mut Rest,
        generation: u64,
        groups_done: &mut GroupsDone,
        pass: Pass,
        now: Instant,
        goal: u64,
        report: &mut EvictionReport,
    ) {
        groups_done.start_pass();
        let allow_pinned = matches!(pass, Pass::Second { take_pinned: true });
        // The first pass and the unpinned half of the second skip active
        // pins; the pinned half (only with allow_evict_soft_pinned_objects)
        // takes what is left, pinned or not (a group with a pinned member
        // only goes then).
        let skipped = |c: &Candidate| c.has(DONE) || (c.has(PINNED) && !allow_pinned);
        let mut i = 0;
        let mut window: SmallVec<[usize; WINDOW]> = SmallVec::new();
        loop {
            if report.evicted >= goal || !self.reach(cands, i, allow_pinned, rest, now, report) {
                return;
            }
            let c = cands.at(i);
            if skipped(c) {
                i += 1;
                continue;
            }
            if c.has(GROUPED) {
                self.group_step(c, generation, groups_done, now, allow_pinned, report);
                i += 1;
                continue;
            }
            // The window: this candidate and the next ones the pass may
            // take up to the next group, no more than are still to evict,
            // so evicting every one of them that passes its checks is what
            // taking them one by one in order would do.
            let room = usize::try_from(goal - report.evicted)
                .unwrap_or(usize::MAX)
                .min(WINDOW);
            window.clear();
            while window.len() < room && self.reach(cands, i, allow_pinned, rest, now, report) {
                let c = cands.at(i);
                if !skipped(c) {
                    if c.has(GROUPED) {
                        break;
                    }
                    window.push(i);
                }
                i += 1;
            }
            #[cfg(feature = "test-hooks")]
            self.race_point(crate::quiesce::RacePoint::EvictionWindow {
                evicted: report.evicted,
            });
            self.evict_window(cands, &window, generation, now, allow_pinned, report);
        }
    }
}

impl MasterCore {
    /// Whether position `i` of the order can be read by a pass that takes
    /// unprotected candidates only, or `protected` ones too, reading the
    /// candidates the collection dropped first when the order reaches them
    /// (as often as it takes: each reading keeps as many as the collection
    /// did).
    fn reach(
        &self,
        cands: &mut Ordered,
        i: usize,
        protected: bool,
        rest: &mut Rest,
        now: Instant,
        report: &mut EvictionReport,
    ) -> bool {
        loop {
            match cands.ready(i, protected) {
                Ready::Yes => return true,
                Ready::End => return false,
                Ready::Behind {
                    side,
                    cut,
                    other_cut,
                } => {
                    let (more, cut) = self.read_rest(now, side, cut, other_cut, rest, report);
                    cands.resume(i, side, more, cut);
                }
            }
        }
    }

    /// Longest hold of shard locks by an eviction run (a collection slice's
    /// read lock, the write locks of a window of evictions held together,
    /// or a group's members' write locks while it is evaluated and
    /// evicted) since the master started or the last
    /// [`debug_reset_eviction_hold`](Self::debug_reset_eviction_hold).
    #[doc(hidden)]
    pub fn debug_eviction_longest_hold_ns(&self) -> u64 {
        self.eviction.longest_hold.get()
    }

    /// The wall time of the last eviction run's collection (the discarded
    /// release before it included), first sort of the order and passes,
    /// in ns.
    #[doc(hidden)]
    pub fn debug_eviction_phases_ns(&self) -> [u64; 3] {
        let p = &self.eviction.last_phases_ns;
        [0, 1, 2].map(|i| p[i].load(Ordering::Relaxed))
    }

    /// Makes the collection of an eviction run keep `n` candidates of each
    /// side, protected and unprotected (at least 1), reading the rest again
    /// when a pass gets past them; `None` restores the default (the run's
    /// goal and a little more, at least 4096). For tests of the re-reading.
    #[doc(hidden)]
    pub fn debug_set_eviction_keep(&self, n: Option<usize>) {
        self.eviction.set_keep(n);
    }

    /// Resets [`debug_eviction_longest_hold_ns`](Self::debug_eviction_longest_hold_ns).
    #[doc(hidden)]
    pub fn debug_reset_eviction_hold(&self) {
        self.eviction.longest_hold.reset();
    }
}

fn evictable(obj: &Object, now: Instant, allow_pinned: bool) -> bool {
    !obj.hard_pin()
        && !obj.lease_live(now)
        && obj.replicas.iter().any(|r| r.kind == ReplicaKind::Memory)
        && obj.evictable_memory().next().is_some()
        && (allow_pinned || !is_active(obj.committed(), now))
}
