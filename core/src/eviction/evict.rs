//! Evicting what the passes chose (docs/CONTRACT.md §5): single objects in
//! windows of consecutive candidates, under the write locks of the window's
//! shards held together (taken in ascending order, each once), and each
//! group whole under its members' locks.
//!
//! A window's candidates are independent (no group among them, and an
//! object's checks read only its own record), so the window checks them
//! all first and then evicts the ones that pass, in order: exactly what
//! taking them one by one would evict, with every miss of the window
//! (records, index buckets, shard headers) started by a
//! prefetch before anything waits for one of them.

use super::collect::{Candidate, DONE};
use super::order::Ordered;
use super::{evictable, EvictionReport};
use crate::clock::Instant;
use crate::group::Group;
use crate::key;
use crate::master::MasterCore;
use crate::retention::retention_active;
use crate::shard::ShardState;
use crate::soft_pin::state::is_active;
use crate::types::Key;
use hashbrown::HashMap;
use smallvec::SmallVec;
use std::sync::Arc;

/// Candidates evicted under one hold of their shards' write locks. Each
/// eviction under the locks costs a few hundred nanoseconds once its misses
/// overlap (a microsecond or two with the journal on, which builds a
/// record), so a window holds its locks far under a millisecond; and 64
/// misses in flight are more than a core can track, so a larger window
/// would overlap no more of them.
pub(super) const WINDOW: usize = 64;

/// What [`MasterCore::evict_group`] did.
pub(super) enum GroupOutcome {
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
pub(super) struct GroupsDone {
    /// Each group dealt with, and whether it stayed whole in the current
    /// pass: then it is dealt with for the rest of the pass (its members
    /// fail the same checks at later candidates: the run's instant is
    /// fixed and protections do not end within it) and taken up again by
    /// the next one.
    done: HashMap<*const Group, (Arc<Group>, bool)>,
    /// Whether a group stayed whole in the current pass.
    any_whole: bool,
}

/// What [`GroupsDone::insert`] found.
pub(super) enum GroupSeen {
    /// Not dealt with yet: the caller deals with it now.
    New,
    /// Evicted, or gone with its state, earlier in the run.
    Done,
    /// It stayed whole earlier in this pass.
    StayedWhole,
}

impl GroupsDone {
    /// Adds `g` if it was not there, and says what was there.
    pub(super) fn insert(&mut self, g: &Arc<Group>) -> GroupSeen {
        match self.done.entry(Arc::as_ptr(g)) {
            hashbrown::hash_map::Entry::Occupied(o) if o.get().1 => GroupSeen::StayedWhole,
            hashbrown::hash_map::Entry::Occupied(_) => GroupSeen::Done,
            hashbrown::hash_map::Entry::Vacant(v) => {
                v.insert((Arc::clone(g), false));
                GroupSeen::New
            }
        }
    }

    /// Marks `g`, dealt with in this pass, as one the next pass takes up
    /// again.
    fn stayed_whole(&mut self, g: &Arc<Group>) {
        if let Some(e) = self.done.get_mut(&Arc::as_ptr(g)) {
            e.1 = true;
            self.any_whole = true;
        }
    }

    /// At the start of a pass: the groups that stayed whole in the last
    /// one are not dealt with any more.
    pub(super) fn start_pass(&mut self) {
        if std::mem::take(&mut self.any_whole) {
            self.done.retain(|_, (_, whole)| !*whole);
        }
    }
}

/// How often a group eviction re-reads a member list that changed while it
/// took the members' shard locks, before leaving the group for a later pass.
const GROUP_LOCK_ATTEMPTS: usize = 4;

impl MasterCore {
    /// Evicts the candidates at `window` (positions in `cands`, in order,
    /// none of them grouped) that pass this pass's checks, under the write
    /// locks of their shards held together.
    pub(super) fn evict_window(
        &self,
        cands: &mut Ordered,
        window: &[usize],
        generation: u64,
        now: Instant,
        allow_pinned: bool,
        report: &mut EvictionReport,
    ) {
        debug_assert!(window.len() <= WINDOW);
        let mut shards: SmallVec<[usize; WINDOW]> =
            window.iter().map(|&p| cands.at(p).shard()).collect();
        shards.sort_unstable();
        shards.dedup();
        for &s in &shards {
            // The lock word and the state's headers: on their way together
            // rather than one lock's miss after another.
            crate::memory::prefetch_all(&self.shards[s]);
        }
        // Timed from the first lock (it is held while the others are taken)
        // until the last is let go: declared before the guards, it drops
        // after them, whichever way the window ends. Ascending shard
        // order, as the lock order requires.
        let _held = self.eviction.longest_hold.time();
        let mut guards: SmallVec<[_; WINDOW]> = shards
            .iter()
            .map(|&s| self.shards[s].state.write())
            .collect();
        // A restored object keeps its sequence but maybe not its group:
        // only a candidate of the current state may be evicted alone.
        if self.generation() != generation {
            for &p in window {
                cands.at(p).set(DONE, true);
            }
            return;
        }
        let guard_of = |c: &Candidate| {
            shards
                .binary_search(&c.shard())
                .expect("the window's shards are locked")
        };
        for &p in window {
            let c = *cands.at(p);
            guards[guard_of(&c)].prefetch_removal(c.slot);
        }
        // The checks, all before any eviction (each reads only its own
        // record); the hash of each one that goes, its bucket prefetched.
        let mut going: SmallVec<[(usize, usize, u64); WINDOW]> = SmallVec::new();
        for &p in window {
            let c = cands.at(p);
            let g = guard_of(c);
            let st = &guards[g];
            let Some(obj) = st.slot(c.slot).filter(|o| o.seq == c.seq) else {
                c.set(DONE, true);
                continue;
            };
            if evictable(obj, now, allow_pinned) {
                let hash = st.hash_of(obj);
                st.prefetch_bucket(hash);
                going.push((p, g, hash));
            }
        }
        for (p, g, hash) in going {
            let c = cands.at(p);
            c.set(DONE, true);
            let st = &mut guards[g];
            // Checked above; checked again, as it costs nothing now, so that
            // an object the order held twice (see `Ordered::resume`) is never
            // evicted twice.
            let Some(obj) = st
                .slot(c.slot)
                .filter(|o| o.seq == c.seq && evictable(o, now, allow_pinned))
            else {
                continue;
            };
            let pinned = is_active(obj.committed(), now);
            let bytes = self.evict_object(st, c.shard(), c.slot, hash, None);
            report.evicted += 1;
            report.evicted_bytes += bytes;
            report.evicted_pinned += pinned as u64;
        }
    }

    /// The pass's step at grouped candidate `c`: its group evicted whole if
    /// every member passes the pass's checks (and not dealt with already).
    pub(super) fn group_step(
        &self,
        c: &mut Candidate,
        generation: u64,
        groups_done: &mut GroupsDone,
        now: Instant,
        allow_pinned: bool,
        report: &mut EvictionReport,
    ) {
        // The group the record names: fixed at its creation, so the
        // one it had when collected while the record is still there
        // in the run's state. A record gone since went with its
        // whole group, or the state was replaced.
        let group = {
            let st = self.shards[c.shard()].state.read();
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
            return;
        };
        c.set(DONE, true);
        match groups_done.insert(&g) {
            GroupSeen::New => {}
            GroupSeen::Done => return,
            // Not evaluated again in this pass, but the candidate stays for
            // the next one: the member that took the group up may be gone
            // by then (removed, rewritten), and any member will do.
            GroupSeen::StayedWhole => {
                c.set(DONE, false);
                return;
            }
        }
        let GroupOutcome::Evicted(n, bytes, pinned) =
            self.evict_group(&g, generation, now, allow_pinned)
        else {
            // Its group was replaced too: no candidate of it is current.
            return;
        };
        report.evicted += n;
        report.evicted_bytes += bytes;
        report.evicted_pinned += pinned;
        if n == 0 {
            // The group stays whole; the next pass may take it (from this
            // candidate), this one does not evaluate it again at its other
            // members (each evaluation locks every member's shard).
            groups_done.stayed_whole(&g);
            c.set(DONE, false);
        }
    }

    /// Frees an object's evictable memory replicas; erases it if nothing is
    /// left. Returns the bytes freed. The object is the one in arena `slot`
    /// of the locked shard `st` (hashing to `hash`): the caller found it
    /// there, so nothing looks it up by key again. `k` is its key when the
    /// caller has it; otherwise the key is copied out of the record only if
    /// something needs it after the record may be gone — the journal's
    /// record of the eviction, or the group's member list — so evicting an
    /// object of no group with the journal off copies and allocates
    /// nothing.
    pub(super) fn evict_object(
        &self,
        st: &mut ShardState,
        si: usize,
        slot: u32,
        hash: u64,
        k: Option<Key<'_>>,
    ) -> u64 {
        let copied = match k {
            Some(_) => None,
            None => {
                let obj = st.slot(slot).expect("object is locked");
                (self.journal.is_some() || obj.group().is_some())
                    .then(|| key::scoped(st.key_of(obj)))
            }
        };
        let k = k.or_else(|| copied.as_deref().map(key::split));
        let obj = st.slot_mut(slot).expect("object is locked");
        // Inline for one replica: no allocation in the usual case.
        let victims: crate::object::Replicas = obj.evictable_memory().copied().collect();
        let freed = if victims.len() == obj.replicas.len() {
            // Every replica goes (the usual case: one memory replica).
            std::mem::take(&mut obj.replicas)
        } else {
            let (freed, kept): (crate::object::Replicas, crate::object::Replicas) =
                std::mem::take(&mut obj.replicas)
                    .into_iter()
                    .partition(|r| victims.iter().any(|v| v.id == r.id));
            obj.replicas = kept;
            freed
        };
        let (size, empty) = (obj.size, obj.replicas.is_empty());
        self.free_now(st, &freed, size);
        if empty {
            // What `erase` does, from the slot (one index probe, by slot).
            let gone = st.take_at(hash, slot).expect("object is locked");
            match k {
                Some(k) => self.retire(st, si, &gone, k, None),
                None => self.retire_ungrouped(st, si, &gone, None),
            }
        }
        if let Some(k) = k {
            let mark = st.discarded.len();
            self.record_key(st, hash, k, mark);
        }
        size * freed.len() as u64
    }

    /// All-or-none group eviction: every member must pass this pass's
    /// per-object checks, or no member goes. `generation` is the state the
    /// candidate naming `g` was seen in.
    pub(super) fn evict_group(
        &self,
        g: &Arc<Group>,
        generation: u64,
        now: Instant,
        allow_pinned: bool,
    ) -> GroupOutcome {
        for _ in 0..GROUP_LOCK_ATTEMPTS {
            #[cfg(feature = "test-hooks")]
            self.race_point(crate::quiesce::RacePoint::EvictionGroup);
            // Members join and leave under their own shard's lock, so the
            // list read here can be out of date by the time those locks are
            // held; it is read again under them below.
            let mut keys: Vec<Box<str>> = g.members.lock().keys().cloned().collect();
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
            // Timed as a window's locks are (`evict_window`).
            let _held = self.eviction.longest_hold.time();
            let mut guards: Vec<_> = shard_ids
                .iter()
                .map(|&s| (s, self.shards[s].state.write()))
                .collect();
            if self.generation() != generation {
                return GroupOutcome::Obsolete;
            }
            let unchanged = {
                let members = g.members.lock();
                let mut now_keys: Vec<&str> = members.keys().map(|k| &**k).collect();
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
                bytes += self.evict_object(st, *s, slot, *h, Some(key::split(k)));
                n += 1;
            }
            return GroupOutcome::Evicted(n, bytes, pinned);
        }
        // The membership kept changing: the group stays whole this pass.
        GroupOutcome::Evicted(0, 0, 0)
    }
}
