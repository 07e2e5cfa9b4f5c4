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
//! between. Each candidate carries the state [generation](MasterCore::generation)
//! read under the shard lock it was seen under; eviction acts on it only
//! while the generation is unchanged, checked under the shard locks it
//! evicts under (where no restore can run). A group's member list is read
//! again under its members' shard locks, so a group is always evicted as it
//! is then: a candidate from a replaced state never splits a restored group.

use crate::clock::Instant;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::key;
use crate::master::MasterCore;
use crate::object::{Object, NO_DEADLINE};
use crate::object_ref::ObjectRef;
use crate::retention::retention_active;
use crate::shard::ShardState;
use crate::soft_pin::state::is_active;
use crate::types::{Key, Pool, ReplicaKind};
use hashbrown::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

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

#[derive(Clone)]
struct Candidate {
    lease: Instant,
    /// The creation sequence: with `at`, names this object and not a
    /// rewrite of it (a replacing Upsert takes a new sequence).
    seq: u64,
    /// The record, by handle (12 bytes, against a 16-byte hash and shard
    /// pair), so that with the generation a candidate still packs into 48
    /// bytes: the candidate vector is sorted and walked once per pass, and
    /// its size is its cost.
    at: ObjectRef,
    /// Protected: own soft pin or group retention active.
    pinned: bool,
    group: Option<Arc<Group>>,
    /// The state generation the candidate was seen in.
    generation: u64,
}
const _: () = assert!(std::mem::size_of::<Candidate>() <= 48);

/// What [`MasterCore::evict_group`] did.
enum GroupOutcome {
    /// The group's members were evicted (members, bytes, pinned members);
    /// `(0, 0, 0)` when some member failed this pass's checks (none went).
    Evicted(u64, u64, u64),
    /// The candidate came from a state a restore replaced: nothing done.
    Obsolete,
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
        let cands = self.collect_candidates(now, &mut report);
        #[cfg(feature = "test-hooks")]
        self.race_point(crate::quiesce::RacePoint::EvictionCollected);
        let target_n = ceil_count(report.base, target);
        let lower_n = ceil_count(report.base, lowerbound);
        let mut cands = Ordered::new(cands, target_n.max(lower_n) as usize);

        let mut done = vec![false; cands.len()];
        let mut groups_done: HashSet<*const Group> = HashSet::new();
        self.pass(
            &mut cands,
            &mut done,
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
                &mut done,
                &mut groups_done,
                Pass::Second { take_pinned: false },
                now,
                goal,
                &mut report,
            );
            if self.config.allow_evict_soft_pinned_objects {
                self.pass(
                    &mut cands,
                    &mut done,
                    &mut groups_done,
                    Pass::Second { take_pinned: true },
                    now,
                    goal,
                    &mut report,
                );
            }
        }
        let m = &self.metrics;
        if report.evicted > 0 {
            m.eviction_successes.fetch_add(1, Ordering::Relaxed);
        }
        m.evicted_keys.fetch_add(report.evicted, Ordering::Relaxed);
        m.evicted_bytes
            .fetch_add(report.evicted_bytes, Ordering::Relaxed);
        Ok(report)
    }

    fn collect_candidates(&self, now: Instant, report: &mut EvictionReport) -> Vec<Candidate> {
        let mut out = Vec::new();
        let any_retained = self.metrics.retained_groups.load(Ordering::Relaxed) > 0;
        for (si, shard) in self.shards.iter().enumerate() {
            let st = shard.state.read();
            let generation = self.generation();
            // Lock order: the registry comes after the shards.
            let retained = any_retained.then(|| self.retention.map.read());
            for (slot, gen, obj) in st.iter_slots() {
                if obj.hard_pin() || obj.evictable_memory().next().is_none() {
                    continue;
                }
                report.base += 1;
                if obj.lease_live(now) {
                    continue;
                }
                report.candidates += 1;
                // Normalise an expired deadline (CAS: cleanup may race us).
                let d = obj.soft_pin.load(Ordering::Acquire);
                if d != NO_DEADLINE
                    && now >= d
                    && obj
                        .soft_pin
                        .compare_exchange(d, NO_DEADLINE, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                {
                    self.pin_dropped(si);
                    report.normalised += 1;
                    self.record_read_locked(&st, obj);
                }
                out.push(Candidate {
                    lease: obj.effective_lease(),
                    seq: obj.seq,
                    at: ObjectRef {
                        shard: si as u32,
                        slot,
                        gen,
                    },
                    pinned: is_active(obj.committed(), now)
                        || obj.group().is_some_and(|g| {
                            retained
                                .as_ref()
                                .is_some_and(|r| retention_active(r, &g.id, now))
                        }),
                    group: obj.group().cloned(),
                    generation,
                });
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn pass(
        &self,
        cands: &mut Ordered,
        done: &mut [bool],
        groups_done: &mut HashSet<*const Group>,
        pass: Pass,
        now: Instant,
        goal: u64,
        report: &mut EvictionReport,
    ) {
        let allow_pinned = matches!(pass, Pass::Second { take_pinned: true });
        for (i, done) in done.iter_mut().enumerate() {
            if report.evicted >= goal {
                return;
            }
            let c = cands.at(i);
            // The first pass and the unpinned half of the second skip active
            // pins; the pinned half (only with allow_evict_soft_pinned_objects)
            // takes what is left, pinned or not (a group with a pinned member
            // only goes then).
            if *done || (c.pinned && !allow_pinned) {
                continue;
            }
            if let Some(g) = &c.group {
                if !groups_done.insert(Arc::as_ptr(g)) {
                    *done = true;
                    continue;
                }
                *done = true;
                let GroupOutcome::Evicted(n, bytes, pinned) =
                    self.evict_group(g, c.generation, now, allow_pinned)
                else {
                    // Its group was replaced too: no candidate of it is current.
                    continue;
                };
                report.evicted += n;
                report.evicted_bytes += bytes;
                report.evicted_pinned += pinned;
                if n == 0 {
                    // The group stays whole; a later pass may take it.
                    groups_done.remove(&Arc::as_ptr(g));
                    *done = false;
                }
                continue;
            }
            let si = c.at.shard as usize;
            let mut st = self.shards[si].state.write();
            // A restored object keeps its sequence but maybe not its group:
            // only a candidate of the current state may be evicted alone.
            if self.generation() != c.generation {
                *done = true;
                continue;
            }
            let Some(obj) = st.get(c.at).filter(|o| o.seq == c.seq) else {
                *done = true;
                continue;
            };
            if !evictable(obj, now, allow_pinned) {
                continue;
            }
            *done = true;
            let pinned = is_active(obj.committed(), now);
            let (hash, scoped) = (st.hash_of(obj), key::scoped(st.key_of(obj)));
            let bytes = self.evict_object(&mut st, si, hash, key::split(&scoped));
            report.evicted += 1;
            report.evicted_bytes += bytes;
            report.evicted_pinned += pinned as u64;
        }
    }

    /// Frees an object's evictable memory replicas; erases it if nothing is
    /// left. Returns the bytes freed.
    fn evict_object(&self, st: &mut ShardState, si: usize, hash: u64, k: Key<'_>) -> u64 {
        let obj = st.find_mut(hash, k).expect("object is locked");
        let victims: Vec<u64> = obj.evictable_memory().map(|r| r.id).collect();
        let (freed, kept): (crate::object::Replicas, crate::object::Replicas) =
            std::mem::take(&mut obj.replicas)
                .into_iter()
                .partition(|r| victims.contains(&r.id));
        obj.replicas = kept;
        let (size, empty) = (obj.size, obj.replicas.is_empty());
        self.free_now(st, &freed, size);
        if empty {
            self.erase(st, si, hash, k, None);
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
                let Some(obj) = st.find_scoped(*h, k) else {
                    continue;
                };
                if obj.evictable_memory().next().is_none() {
                    continue;
                }
                pinned += (retained || is_active(obj.committed(), now)) as u64;
                bytes += self.evict_object(st, *s, *h, key::split(k));
                n += 1;
            }
            return GroupOutcome::Evicted(n, bytes, pinned);
        }
        // The membership kept changing: the group stays whole this pass.
        GroupOutcome::Evicted(0, 0, 0)
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
            first: expected.saturating_mul(2).max(1024),
        }
    }

    fn len(&self) -> usize {
        self.cands.len()
    }

    /// The `i`-th candidate in order; sorts the next chunk (doubling) when
    /// `i` is past the sorted prefix.
    fn at(&mut self, i: usize) -> &Candidate {
        while i >= self.sorted {
            let rest = &mut self.cands[self.sorted..];
            let chunk = self.sorted.max(self.first).min(rest.len());
            let key = |c: &Candidate| (c.lease, c.seq);
            if chunk < rest.len() {
                rest.select_nth_unstable_by_key(chunk, key);
            }
            rest[..chunk].sort_unstable_by_key(key);
            self.sorted += chunk;
        }
        &self.cands[i]
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
            at: ObjectRef {
                shard: 0,
                slot: seq as u32,
                gen: 0,
            },
            pinned: false,
            group: None,
            generation: 0,
        }
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
