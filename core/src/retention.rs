//! Group retention (docs/CONTRACT.md, "Group retention"): a fixed-lifetime
//! retention deadline per `(tenant, group)`, a second eviction-priority
//! source beside the objects' own soft pins.
//!
//! The registry maps the group's stored id (`tenant \0 group`) to its
//! committed deadline and exists independently of the group domain: a
//! retention may precede every member and outlive the last one, and a
//! group with neither members nor retention holds no memory anywhere. The
//! deadline is never copied into a member; eviction looks it up (`now <
//! deadline`) when it examines a grouped object, so a member that joins
//! late is protected for the group's remaining lifetime and no member
//! operation can move it. Only retain, release, expiry and restore write it.
//!
//! Expiry uses a second deadline index, the keyed flavour
//! ([`KeyedDeadlineIndex`]: entries found by the group id), with the object
//! index's contract:
//! registered when a deadline is committed, unregistered on release, popped
//! in bounded batches by the same cleanup cycle, a pop clearing a deadline
//! only if it still equals the popped one and (a cycle ahead of the clock)
//! no retain since registered it again.
//!
//! Lock order: the registry lock comes after the metadata shards and the
//! group domain and before the segment table; the retention index mutex is
//! last (nothing is taken while it is held). Every change of the registry
//! and its gauge happens under the registry's write lock, and a restore
//! replaces registry, index and gauge in one hold of it. The index never
//! rebuilds inside those holds: a rebuild an index change asks for runs in
//! [`MasterCore::settle_retention`], once the registry's lock is released
//! (eviction and restores wait for that lock while they hold shard locks).

use crate::clock::{saturating_deadline, Instant};
use crate::error::{Error, ErrorKind, Result};
use crate::journal::Record;
use crate::key::ScopedKey;
use crate::master::{MasterCore, CLEANUP_BATCH};
use crate::soft_pin::keyed::{KeyedDeadlineIndex, KeyedDue};
use crate::types::{validate_name, Key};
use hashbrown::HashMap;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Every retention index entry carries this shard: the registry is one map.
pub(crate) const REGISTRY_SHARD: u32 = 0;

/// The committed retention deadlines and their deadline index.
pub(crate) struct Retention {
    /// Group id → committed deadline (may be stored-but-expired until
    /// normalised by cleanup, a retain or a release).
    pub map: RwLock<HashMap<ScopedKey, Instant>>,
    pub index: KeyedDeadlineIndex,
    /// The groups actively retained when this master, a standby until
    /// then, was promoted (0 for a master created as a primary): a standby
    /// holds its primary's retentions whatever its own limit, and admission
    /// keeps the active count at or below the larger of the two from then
    /// on.
    pub held_at_promote: AtomicUsize,
    /// Registry entries the admission check of `retain_groups` has scanned
    /// (tests: its work per call).
    #[cfg(feature = "test-hooks")]
    pub admission_scanned: std::sync::atomic::AtomicU64,
}

impl Retention {
    pub fn new() -> Self {
        Retention {
            map: RwLock::new(HashMap::new()),
            index: KeyedDeadlineIndex::new(),
            held_at_promote: AtomicUsize::new(0),
            #[cfg(feature = "test-hooks")]
            admission_scanned: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

/// Whether a committed retention deadline protects at `now`.
#[inline]
pub(crate) fn retention_active(map: &HashMap<ScopedKey, Instant>, id: &str, now: Instant) -> bool {
    map.get(id).is_some_and(|&d| now < d)
}

/// Groups whose committed deadline protects at `now`.
pub(crate) fn active_count(map: &HashMap<ScopedKey, Instant>, now: Instant) -> usize {
    map.values().filter(|&&d| now < d).count()
}

/// What one retention cleanup pass did (folded into the cycle's statistics).
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct RetentionCleanup {
    pub popped: u64,
    pub stale: u64,
    pub expired: u64,
    pub batches: u64,
}

impl MasterCore {
    fn validate_ttl(&self, ttl_ms: u64) -> Result<()> {
        let max = self.config.max_group_retention_ttl_ms;
        if ttl_ms == 0 {
            return Err(Error::invalid("group retention ttl must be > 0 ms"));
        }
        if ttl_ms > max {
            return Err(Error::invalid(format!(
                "group retention ttl {ttl_ms} ms exceeds max_group_retention_ttl ({max} ms)"
            )));
        }
        Ok(())
    }

    /// The check of a retain's (`ttl_ms` given) or a release's (`None`)
    /// shared arguments, the tenant and the TTL: the refusal every entry of
    /// [`retain_groups`](Self::retain_groups) or
    /// [`release_groups`](Self::release_groups) gets, `INVALID_PARAMS`
    /// naming the field, or `Ok`. Reads only the configuration (not the
    /// role): the C ABI runs it after [`ensure_primary`](Self::ensure_primary)
    /// to write that refusal into every status.
    pub fn group_retention_shared_check(&self, tenant: &str, ttl_ms: Option<u64>) -> Result<()> {
        validate_name("tenant", tenant)?;
        ttl_ms.map_or(Ok(()), |ttl| self.validate_ttl(ttl))
    }

    /// Retains every group of `groups` in `tenant` for `ttl_ms`: one result
    /// per group, the group's deadline after the call.
    ///
    /// The TTL and the tenant are shared: TTL 0, a TTL above
    /// `max_group_retention_ttl_ms` or a bad tenant give every entry
    /// `INVALID_PARAMS` (the one refusal, its message naming the field) and
    /// change nothing, as a batch's bad shared request does (a standby
    /// refuses the whole call, `Err`). Per group: an empty (or NUL-
    /// containing) id → `INVALID_PARAMS`; otherwise the deadline becomes
    /// `max(active deadline, now + ttl)` (saturating; an expired deadline
    /// counts as none, so a repeat extends and never shortens). A group that
    /// is not actively retained while `max_retained_groups` groups are →
    /// `GROUP_RETENTION_FULL`; retained groups may still extend. The deadline
    /// is the group's own: no member's soft pin changes.
    pub fn retain_groups(
        &self,
        tenant: &str,
        groups: &[&str],
        ttl_ms: u64,
    ) -> Result<Vec<Result<Instant>>> {
        let out = self.retain_groups_locked(tenant, groups, ttl_ms);
        // The registry's lock is released: a rebuild the registrations (or
        // the drain) asked for runs now.
        self.settle_retention();
        out
    }

    /// [`retain_groups`](Self::retain_groups) under the registry's write
    /// lock.
    fn retain_groups_locked(
        &self,
        tenant: &str,
        groups: &[&str],
        ttl_ms: u64,
    ) -> Result<Vec<Result<Instant>>> {
        self.ensure_primary()?;
        if let Err(e) = self.group_retention_shared_check(tenant, Some(ttl_ms)) {
            return Ok(vec![Err(e); groups.len()]);
        }
        let limit = self.config.max_retained_groups;
        let mut map = self.retention.map.write();
        // Read under the registry's lock: a cleanup cycle that popped a
        // deadline before this lock was taken popped one at or before this
        // now, so a retain never commits a deadline that cycle is about to
        // clear (the cycle's compare would take it for the popped one).
        let now = self.clock.now();
        let target = saturating_deadline(now, ttl_ms);
        let mut out = Vec::with_capacity(groups.len());
        // The call's GroupRetained records, appended together (a reader of
        // the journal sees all of them or none: one call's change is one
        // run of records), and before any record a drain appends, so the
        // order is the order of the changes.
        let mut recs: Vec<Record> = Vec::new();
        // The groups active at `now`, counted once per call the first time
        // the registry looks full, then one more per group admitted: `now`
        // is fixed for the call, and once what is due at `now` is drained
        // nothing the call does ends a retention (its deadlines are later).
        let mut active_now: Option<usize> = None;
        for &g in groups {
            if let Err(e) = validate_name("group id", g) {
                out.push(Err(e));
                continue;
            }
            let id = crate::key::scoped(Key::scoped(tenant, g));
            let active = map.get(&id).copied().filter(|&d| now < d);
            if active.is_none() && map.len() >= limit {
                let count = *active_now.get_or_insert_with(|| {
                    // Expired deadlines still count as committed until
                    // normalised: normalise what is due, then count the
                    // groups that are really active (a rebuild running
                    // elsewhere may hold due entries back from the drain).
                    self.journal_append_all(&std::mem::take(&mut recs));
                    self.drain_retention_locked(&mut map, now, &mut RetentionCleanup::default());
                    #[cfg(feature = "test-hooks")]
                    self.retention
                        .admission_scanned
                        .fetch_add(map.len() as u64, Ordering::Relaxed);
                    active_count(&map, now)
                });
                if count >= limit {
                    out.push(Err(Error::new(
                        ErrorKind::GroupRetentionFull,
                        format!(
                            "cannot retain group {g:?}: {limit} groups are retained \
                             (max_retained_groups)"
                        ),
                    )));
                    continue;
                }
            }
            let deadline = active.map_or(target, |d| d.max(target));
            if map.get(&id) == Some(&deadline) {
                out.push(Ok(deadline));
                continue;
            }
            self.retention.index.register(&id, REGISTRY_SHARD, deadline);
            if self.journal.is_some() {
                recs.push(Record::GroupRetained {
                    tenant: tenant.to_owned(),
                    group: g.to_owned(),
                    deadline,
                });
            }
            if map.insert(id, deadline).is_none() {
                self.metrics.retained_groups.fetch_add(1, Ordering::Relaxed);
            }
            if active.is_none() && now < deadline {
                if let Some(count) = active_now.as_mut() {
                    *count += 1;
                }
            }
            out.push(Ok(deadline));
        }
        self.journal_append_all(&recs);
        Ok(out)
    }

    /// Ends the retention of every group of `groups` in `tenant` now: one
    /// result per group. Releasing a group with no stored deadline is OK and
    /// changes nothing; an expired deadline still stored is normalised (the
    /// gauge -1, a group-released record), as cleanup would.
    /// A bad tenant gives every entry `INVALID_PARAMS` and changes nothing
    /// (a standby refuses the whole call, `Err`); an empty id fails its
    /// entry.
    pub fn release_groups(&self, tenant: &str, groups: &[&str]) -> Result<Vec<Result<()>>> {
        let out = self.release_groups_locked(tenant, groups);
        // The registry's lock is released: a rebuild the unregistrations
        // asked for runs now.
        self.settle_retention();
        out
    }

    /// [`release_groups`](Self::release_groups) under the registry's write
    /// lock.
    fn release_groups_locked(&self, tenant: &str, groups: &[&str]) -> Result<Vec<Result<()>>> {
        self.ensure_primary()?;
        if let Err(e) = self.group_retention_shared_check(tenant, None) {
            return Ok(vec![Err(e); groups.len()]);
        }
        let mut map = self.retention.map.write();
        let mut out = Vec::with_capacity(groups.len());
        // Appended together, as in `retain_groups`.
        let mut recs: Vec<Record> = Vec::new();
        for &g in groups {
            if let Err(e) = validate_name("group id", g) {
                out.push(Err(e));
                continue;
            }
            let id = crate::key::scoped(Key::scoped(tenant, g));
            if map.remove(&id).is_some() {
                self.retention.index.unregister(&id);
                self.metrics.retained_groups.fetch_sub(1, Ordering::Relaxed);
                if self.journal.is_some() {
                    recs.push(Record::GroupReleased {
                        tenant: tenant.to_owned(),
                        group: g.to_owned(),
                    });
                }
            }
            out.push(Ok(()));
        }
        self.journal_append_all(&recs);
        Ok(out)
    }

    /// The active retention deadline of a group (`None`: not retained, or
    /// its deadline has passed). Reads change nothing.
    pub fn group_retention_deadline(&self, tenant: &str, group: &str) -> Result<Option<Instant>> {
        self.ensure_primary()?;
        validate_name("tenant", tenant)?;
        validate_name("group id", group)?;
        let now = self.clock.now();
        let id = crate::key::scoped(Key::scoped(tenant, group));
        Ok(self
            .retention
            .map
            .read()
            .get(&id)
            .copied()
            .filter(|&d| now < d))
    }

    /// Groups with a committed retention deadline (the
    /// `master_retained_group_count` gauge's value, read from the registry).
    pub fn retained_group_count(&self) -> u64 {
        self.retention.map.read().len() as u64
    }

    /// Replaces every retention deadline with `active` (restore, under every
    /// shard write lock): registry, index and gauge in one registry hold,
    /// so a cleanup batch of the replaced index is seen as stale.
    pub(crate) fn install_retention(&self, active: Vec<(String, Instant)>) {
        let mut map = self.retention.map.write();
        let mut fresh = HashMap::with_capacity(active.len());
        let mut regs = Vec::with_capacity(active.len());
        for (id, d) in active {
            regs.push((id.clone(), REGISTRY_SHARD, d));
            fresh.insert(id.into_boxed_str(), d);
        }
        self.retention.index.replace_all(regs);
        self.metrics
            .retained_groups
            .store(fresh.len() as i64, Ordering::Relaxed);
        *map = fresh;
    }

    /// Every committed retention deadline of `map` (the registry, read by
    /// the caller) as snapshot records, sorted by (tenant, group);
    /// stored-but-expired ones included (restore normalises them).
    pub(crate) fn capture_retention(
        map: &HashMap<ScopedKey, Instant>,
    ) -> Vec<crate::snapshot::image::RetentionRecord> {
        let mut out: Vec<_> = map
            .iter()
            .map(|(id, &deadline)| {
                let k = crate::key::split(id);
                crate::snapshot::image::RetentionRecord {
                    tenant: k.tenant.to_owned(),
                    group: k.key.to_owned(),
                    deadline,
                }
            })
            .collect();
        out.sort_unstable_by(|a, b| (&a.tenant, &a.group).cmp(&(&b.tenant, &b.group)));
        out
    }

    /// The retention part of a cleanup cycle at `at`: pops due entries in
    /// bounded batches and clears each deadline still equal to the popped
    /// one (and, ahead of the clock, not registered again since), under the
    /// registry's write lock.
    pub(crate) fn cleanup_retention_at(&self, at: Instant) -> RetentionCleanup {
        let mut stats = RetentionCleanup::default();
        let mut batch: Vec<KeyedDue> = Vec::new();
        // A cycle at the clock's now or before it clears only what no
        // retain since the pop can have committed again: a retain reads its
        // now under the registry's lock, after the pop, so its deadline is
        // past every popped one. Ahead
        // of the clock, a group released and retained again with the very
        // deadline popped keeps its new retention until its own
        // registration is popped, as a re-enabled soft pin does (§4.8).
        let ahead = at > self.clock.now();
        loop {
            batch.clear();
            let out = self.retention.index.pop_due(at, CLEANUP_BATCH, &mut batch);
            stats.popped += (out.popped + out.stale) as u64;
            stats.stale += out.stale as u64;
            if out.popped + out.stale > 0 {
                stats.batches += 1;
            }
            if !batch.is_empty() {
                #[cfg(feature = "test-hooks")]
                self.race_point(crate::quiesce::RacePoint::RetentionPopped);
                let mut map = self.retention.map.write();
                // A restore replaces the index under this lock: entries of
                // the replaced index name deadlines of the replaced state.
                if self.retention.index.epoch() != out.epoch {
                    stats.stale += batch.len() as u64;
                } else {
                    stats.expired += self.clear_due_locked(&mut map, &batch, ahead);
                }
            }
            if !out.more_due {
                break;
            }
        }
        // No lock is held: a rebuild the pops asked for runs now.
        self.settle_retention();
        stats
    }

    /// Runs the retention-index rebuild the last index change asked for, if
    /// any (docs/CONTRACT.md §4.8, §11). Index changes happen under the
    /// registry's write lock and never rebuild there; whoever made them
    /// calls this once that lock is released (retain, release, cleanup,
    /// and through [`settle_index`](Self::settle_index) a standby's journal
    /// apply). The rebuild takes no lock but the index mutex.
    pub(crate) fn settle_retention(&self) {
        if self.retention.index.rebuild_wanted() {
            #[cfg(feature = "test-hooks")]
            self.race_point(crate::quiesce::RacePoint::RetentionRebuild);
            self.retention.index.rebuild();
        }
    }

    /// Test hook (feature `test-hooks`): whether no thread holds the
    /// retention registry's lock (a try-lock, so it never waits).
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn debug_retention_registry_free(&self) -> bool {
        self.retention.map.try_write().is_some()
    }

    /// Test hook (feature `test-hooks`): registry entries the admission
    /// check of [`retain_groups`](Self::retain_groups) has scanned since
    /// this master was created.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn debug_retention_admission_scanned(&self) -> u64 {
        self.retention.admission_scanned.load(Ordering::Relaxed)
    }

    /// Retention-index sizes: (heap entries incl. stale, live registrations).
    #[doc(hidden)]
    pub fn retention_index_sizes(&self) -> (usize, usize) {
        let s = self.retention.index.stats();
        (s.heap_len, s.live)
    }

    /// Pops and clears what is due at `now` while the caller holds the
    /// registry's write lock (the index mutex comes after it). A rebuild the
    /// pops ask for is the caller's to run once it releases that lock.
    fn drain_retention_locked(
        &self,
        map: &mut HashMap<ScopedKey, Instant>,
        now: Instant,
        stats: &mut RetentionCleanup,
    ) {
        let mut batch = Vec::new();
        loop {
            batch.clear();
            let out = self.retention.index.pop_due(now, CLEANUP_BATCH, &mut batch);
            stats.popped += (out.popped + out.stale) as u64;
            stats.stale += out.stale as u64;
            stats.expired += self.clear_due_locked(map, &batch, false);
            if !out.more_due {
                break;
            }
        }
    }

    /// Exact-deadline compare-and-clear of popped entries (ahead of the
    /// clock, only of those no retain registered again); gauge −1 each.
    fn clear_due_locked(
        &self,
        map: &mut HashMap<ScopedKey, Instant>,
        batch: &[KeyedDue],
        ahead: bool,
    ) -> u64 {
        let mut cleared: i64 = 0;
        for e in batch {
            // Ahead of the clock, a deadline equal to the popped one may be
            // a retain's since the pop, with a registration of its own: it
            // stays, and that registration's pop clears it.
            let retained_again = || ahead && self.retention.index.registration(&e.key).is_some();
            if map.get(&*e.key) == Some(&e.deadline) && !retained_again() {
                map.remove(&*e.key);
                cleared += 1;
                if self.journal.is_some() {
                    let k = crate::key::split(&e.key);
                    self.journal_append(&Record::RetentionExpired {
                        tenant: k.tenant.to_owned(),
                        group: k.key.to_owned(),
                        deadline: e.deadline,
                    });
                }
            }
        }
        if cleared > 0 {
            self.metrics
                .retained_groups
                .fetch_sub(cleared, Ordering::Relaxed);
        }
        cleared as u64
    }

    /// Checks the retention invariants: gauge == committed deadlines,
    /// registrations ⇔ committed, active ≤ `max_retained_groups` on a
    /// primary (or what it held when promoted, if more), the index heap
    /// bounded.
    pub(crate) fn check_retention_invariants(&self) -> std::result::Result<(), String> {
        let map = self.retention.map.read();
        let regs = self.retention.index.registrations();
        let idx = self.retention.index.stats();
        let gauge = self.metrics.retained_groups.load(Ordering::Relaxed);
        if gauge != map.len() as i64 {
            return Err(format!(
                "retained-group gauge {gauge} != {} groups with a committed retention deadline",
                map.len()
            ));
        }
        if regs.len() != map.len() {
            return Err(format!(
                "{} retention registrations for {} committed retention deadlines",
                regs.len(),
                map.len()
            ));
        }
        for (k, shard, d) in &regs {
            if *shard != REGISTRY_SHARD || map.get(&**k) != Some(d) {
                return Err(format!(
                    "retention registration {k:?} ({d}) vs committed {:?}",
                    map.get(&**k)
                ));
            }
        }
        // The limit is on what a master admits: a standby installs its
        // primary's retentions (journal, verbatim restore) whatever its own
        // limit, and admission keeps a promoted one at or below the larger
        // of its limit and what it held when promoted.
        let now = self.clock.now();
        let active = active_count(&map, now);
        let bound = self
            .config
            .max_retained_groups
            .max(self.retention.held_at_promote.load(Ordering::Relaxed));
        if !self.is_standby() && active > bound {
            return Err(format!(
                "{active} actively retained groups exceed max_retained_groups ({}, or the \
                 {} held when promoted)",
                self.config.max_retained_groups,
                self.retention.held_at_promote.load(Ordering::Relaxed)
            ));
        }
        if idx.heap_len > 4096.max(2 * idx.live) {
            return Err(format!(
                "retention heap {} exceeds max(4096, 2 × {})",
                idx.heap_len, idx.live
            ));
        }
        Ok(())
    }
}
