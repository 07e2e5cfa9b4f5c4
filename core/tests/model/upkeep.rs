//! Reference model, reads, removal and time-driven upkeep: Get/Exist with
//! leases, Remove/RemoveAll/Regex, the stale-write sweep, discarded-buffer
//! release, expiration cleanup, eviction (§5: passes, order, groups) and
//! segment mount/unmount.

use super::*;

impl Model {
    // ----- reads ----------------------------------------------------------

    pub fn get(&mut self, k: usize, real: &Real<Vec<ReplicaDescriptor>>) -> Res {
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        let mut want: Vec<(u64, ReplicaKind, Loc)> = o
            .reps
            .iter()
            .filter(|r| r.complete)
            .map(|r| (r.id, r.kind, r.loc))
            .collect();
        if want.is_empty() {
            return expect_err(real, ErrorKind::ReplicaIsNotReady);
        }
        want.sort_by_key(|w| w.0);
        let size = o.size;
        let list = expect_ok(real)?;
        let mut got = Vec::new();
        for d in list {
            if d.status != ReplicaStatus::Complete || location_len(d) != size {
                return Err(format!("get returned {d:?}"));
            }
            got.push((d.id, d.kind, loc_of(d)));
        }
        got.sort_by_key(|g| g.0);
        if got != want {
            return Err(format!("get returned {got:?}, predicted {want:?}"));
        }
        self.grant_lease(k);
        Ok(())
    }

    pub fn exist(&mut self, k: usize, real: &Real<bool>) -> Res {
        let readable = self.objs.get(&k).is_some_and(Obj::has_complete);
        match real {
            Ok(b) if *b == readable => {}
            other => return Err(format!("exist predicted {readable}, got {other:?}")),
        }
        coverage::result(if readable { "true" } else { "false" });
        if readable {
            self.grant_lease(k);
        }
        Ok(())
    }

    // ----- removal --------------------------------------------------------

    fn removable(&self, k: usize, force: bool) -> Result<(), ErrorKind> {
        let o = &self.objs[&k];
        // A replica not COMPLETE first (a write's or a task's target), then
        // a task (its targets gone), then the lease.
        if o.reps.iter().any(|r| !r.complete) {
            return Err(ErrorKind::ReplicaIsNotReady);
        }
        if o.task.is_some() {
            return Err(ErrorKind::ObjectHasReplicationTask);
        }
        if !force && self.lease_live(k) {
            return Err(ErrorKind::ObjectHasLease);
        }
        Ok(())
    }

    pub fn remove(&mut self, k: usize, force: bool, real: &Real<()>) -> Res {
        if !self.objs.contains_key(&k) {
            return expect_err(real, ErrorKind::ObjectNotFound);
        }
        if let Err(e) = self.removable(k, force) {
            return expect_err(real, e);
        }
        expect_ok(real)?;
        self.erase(k, None)
    }

    /// RemoveAll / RemoveByRegex: the count of removable matching keys.
    pub fn remove_matching(
        &mut self,
        force: bool,
        pred: impl Fn(usize) -> bool,
    ) -> Result<u64, String> {
        let victims: Vec<usize> = self
            .objs
            .keys()
            .copied()
            .filter(|&k| pred(k) && self.removable(k, force).is_ok())
            .collect();
        for &k in &victims {
            self.erase(k, None)?;
        }
        Ok(victims.len() as u64)
    }

    // ----- time-driven maintenance ----------------------------------------

    /// Stale-write sweep: writes with `put_start + release < at`, the sum
    /// saturated at `MAX_INSTANT` as every instant the master computes is
    /// (docs/CONTRACT.md §1): a sweep at an instant beyond it takes a write
    /// whose release instant saturated.
    pub fn sweep(&mut self, at: u64) -> Result<u64, String> {
        let released = |o: &Obj| o.put_start.saturating_add(RELEASE).min(MAX_INSTANT);
        let stale: Vec<usize> = self
            .objs
            .iter()
            .filter(|(_, o)| o.write_in_flight() && released(o) < at)
            .map(|(k, _)| *k)
            .collect();
        for &k in &stale {
            let o = self.objs.get_mut(&k).unwrap();
            let release_at = released(o);
            let (gone, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
                .into_iter()
                .partition(Rep::write_processing);
            o.reps = kept;
            o.pending_rule();
            let (size, empty) = (o.size, o.reps.is_empty());
            self.discard_reps(&gone, size, release_at);
            if empty {
                self.erase(k, None)?;
            }
            hit(|| format!("sweep: write swept, object erased {empty}"));
        }
        Ok(stale.len() as u64)
    }

    pub fn release(&mut self, at: u64) -> Result<u64, String> {
        let (due, keep): (Vec<Disc>, Vec<Disc>) = std::mem::take(&mut self.disc)
            .into_iter()
            .partition(|d| d.release_at <= at);
        self.disc = keep;
        for d in &due {
            self.free_buf(d.seg, d.addr, d.len)?;
        }
        if !due.is_empty() {
            hit(|| "release: discarded buffers freed".into());
        }
        Ok(due.len() as u64)
    }

    /// Expiration cleanup at `at`: every committed deadline `<= at` goes.
    pub fn cleanup(&mut self, at: u64) -> u64 {
        // Retention deadlines expire in the same cycle (not counted).
        self.retained.retain(|_, d| {
            if *d <= at {
                hit(|| "cleanup: retention expired".into());
            }
            *d > at
        });
        let (mut n, now) = (0, self.now);
        for o in self.objs.values_mut() {
            if o.committed.is_some_and(|d| d <= at) {
                hit(|| format!("cleanup: expired (at <= now: {})", at <= now));
                o.committed = None;
                n += 1;
            }
        }
        n
    }

    // ----- eviction -------------------------------------------------------

    pub fn evict(
        &mut self,
        target: f64,
        lower: f64,
    ) -> Result<Result<EvictionReport, ErrorKind>, String> {
        let ok = |r: f64| (0.0..=1.0).contains(&r);
        if !ok(target) || !ok(lower) {
            return Ok(Err(ErrorKind::InvalidParams));
        }
        let now = self.now;
        let mut rep = EvictionReport {
            discarded_released: self.release(now)?,
            ..Default::default()
        };
        // Candidates: base objects without a live lease; expired pins of
        // candidates are normalised on the way (§4.7).
        let mut cands: Vec<Cand> = Vec::new();
        let keys: Vec<usize> = self.objs.keys().copied().collect();
        for k in keys {
            let o = &self.objs[&k];
            if o.hard_pin || o.evictable_memory().is_empty() {
                continue;
            }
            rep.base += 1;
            if self.lease_live(k) {
                continue;
            }
            rep.candidates += 1;
            let lease = self.effective_lease(k);
            let o = self.objs.get_mut(&k).unwrap();
            if o.committed.is_some_and(|d| now >= d) {
                o.committed = None;
                rep.normalised += 1;
            }
            cands.push(Cand {
                k,
                lease,
                seq: o.seq,
                pinned: false,
                group: o.group.clone().map(|g| Self::group_key(k, &g)),
            });
            let c = cands.last_mut().unwrap();
            c.pinned = self.protected(k);
            if c.pinned && !self.active(k) {
                hit(|| "evict: candidate protected by group retention".into());
            }
        }
        cands.sort_by_key(|c| (c.lease, c.seq));
        let target_n = (rep.base as f64 * target).ceil() as u64;
        let lower_n = (rep.base as f64 * lower).ceil() as u64;
        let mut done = vec![false; cands.len()];
        let mut groups_done: BTreeSet<(String, String)> = BTreeSet::new();
        self.pass(
            &cands,
            &mut done,
            &mut groups_done,
            false,
            target_n,
            &mut rep,
        )?;
        let credited = rep.evicted + rep.discarded_released;
        if credited < lower_n {
            let goal = rep.evicted + (lower_n - credited);
            self.pass(&cands, &mut done, &mut groups_done, false, goal, &mut rep)?;
            hit(|| "evict: second pass".into());
            if self.setup.allow_evict_pinned {
                self.pass(&cands, &mut done, &mut groups_done, true, goal, &mut rep)?;
            }
        }
        hit(|| format!("evict: evicted>0 {}", rep.evicted > 0));
        if rep.evicted_pinned > 0 {
            hit(|| "evict: active pins taken".into());
        }
        if rep.normalised > 0 {
            hit(|| "evict: expired pins normalised".into());
        }
        if rep.candidates < rep.base {
            hit(|| "evict: leased objects skipped".into());
        }
        Ok(Ok(rep))
    }

    fn evictable(&self, k: usize, allow_pinned: bool) -> bool {
        let o = &self.objs[&k];
        !o.hard_pin
            && !self.lease_live(k)
            && !o.evictable_memory().is_empty()
            && (allow_pinned || !self.active(k))
    }

    fn pass(
        &mut self,
        cands: &[Cand],
        done: &mut [bool],
        groups_done: &mut BTreeSet<(String, String)>,
        allow_pinned: bool,
        goal: u64,
        rep: &mut EvictionReport,
    ) -> Res {
        for (i, c) in cands.iter().enumerate() {
            if rep.evicted >= goal {
                return Ok(());
            }
            if done[i] || (c.pinned && !allow_pinned) {
                continue;
            }
            if let Some(g) = &c.group {
                done[i] = true;
                if !groups_done.insert(g.clone()) {
                    continue;
                }
                let (n, bytes, pinned) = self.evict_group(g, allow_pinned)?;
                hit(|| format!("evict: group, members evicted>0 {}", n > 0));
                rep.evicted += n;
                rep.evicted_bytes += bytes;
                rep.evicted_pinned += pinned;
                if n == 0 {
                    groups_done.remove(g);
                    done[i] = false;
                }
                continue;
            }
            if self.objs.get(&c.k).is_none_or(|o| o.seq != c.seq) {
                done[i] = true;
                continue;
            }
            if !self.evictable(c.k, allow_pinned) {
                continue;
            }
            done[i] = true;
            rep.evicted_pinned += self.active(c.k) as u64;
            rep.evicted_bytes += self.evict_object(c.k)?;
            rep.evicted += 1;
        }
        Ok(())
    }

    /// All-or-none: every member passes the pass's checks or none goes.
    fn evict_group(
        &mut self,
        g: &(String, String),
        allow_pinned: bool,
    ) -> Result<(u64, u64, u64), String> {
        let members: Vec<usize> = self
            .objs
            .iter()
            .filter(|(k, o)| KEYS[**k].0 == g.0 && o.group.as_deref() == Some(&g.1))
            .map(|(k, _)| *k)
            .collect();
        let retained = self.retention_active(g);
        if retained && !allow_pinned {
            return Ok((0, 0, 0));
        }
        let all_pass = members.iter().all(|&k| {
            !self.objs[&k].hard_pin && !self.lease_live(k) && (allow_pinned || !self.active(k))
        });
        if !all_pass {
            return Ok((0, 0, 0));
        }
        if retained {
            hit(|| "evict: retained group taken".into());
        }
        let (mut n, mut bytes, mut pinned) = (0, 0, 0);
        for k in members {
            if self.objs[&k].evictable_memory().is_empty() {
                continue;
            }
            pinned += (retained || self.active(k)) as u64;
            bytes += self.evict_object(k)?;
            n += 1;
        }
        Ok((n, bytes, pinned))
    }

    fn evict_object(&mut self, k: usize) -> Result<u64, String> {
        let o = self.objs.get_mut(&k).unwrap();
        let victims = o.evictable_memory();
        let (freed, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
            .into_iter()
            .partition(|r| victims.contains(&r.id));
        o.reps = kept;
        let (size, empty) = (o.size, o.reps.is_empty());
        self.free_reps(&freed, size)?;
        if empty {
            self.erase(k, None)?;
        }
        Ok(size * freed.len() as u64)
    }

    pub fn memory_usage(&self) -> (u64, u64) {
        let mem = self.segs.iter().filter(|s| s.pool == Pool::Memory);
        let cap = mem.clone().map(|s| s.size).sum();
        (cap, mem.map(Seg::allocated).sum())
    }

    /// The §5 trigger.
    pub fn evict_if_needed(&mut self, force: bool) -> Result<Option<EvictionReport>, String> {
        let (cap, used) = self.memory_usage();
        if cap == 0 {
            return Ok(None);
        }
        let used = used as f64 / cap as f64;
        let hwm = self.setup.high_watermark;
        let ratio = self.setup.eviction_ratio;
        if !(used > hwm || (force && ratio > 0.0)) {
            return Ok(None);
        }
        // Both from the target before its cap.
        let target = ratio.max(used - hwm + ratio);
        let lower = (target / 2.0).max(used - hwm).clamp(0.0, 1.0);
        Ok(self.evict(target.min(1.0), lower)?.ok())
    }

    // ----- segments -------------------------------------------------------

    pub fn unmount(&mut self, client: u64, name: &str, real: &Real<UnmountReport>) -> Res {
        let Some(pos) = self.segs.iter().position(|s| s.name == name) else {
            return expect_err(real, ErrorKind::SegmentNotFound);
        };
        if self.segs[pos].owner != client {
            return expect_err(real, ErrorKind::IllegalClient);
        }
        let id = self.segs.remove(pos).id;
        let mut want = UnmountReport::default();
        let keys: Vec<usize> = self.objs.keys().copied().collect();
        for k in keys {
            let o = self.objs.get_mut(&k).unwrap();
            let before = o.reps.len();
            o.reps
                .retain(|r| !matches!(r.loc, Loc::Buf { seg, .. } if seg == id));
            want.replicas_dropped += (before - o.reps.len()) as u64;
            let had_pending = o.pending.is_some();
            o.pending_rule();
            if had_pending && o.pending.is_none() {
                hit(|| "unmount: pending cleared".into());
            }
            if o.reps.is_empty() {
                hit(|| "unmount: object erased".into());
                self.erase(k, None)?;
                want.objects_erased += 1;
            }
        }
        self.disc.retain(|d| d.seg != id);
        let got = expect_ok(real)?;
        if *got != want {
            return Err(format!("unmount reported {got:?}, predicted {want:?}"));
        }
        Ok(())
    }

    pub fn mount(&mut self, slot: usize, owner: u64, size: u64, real: &Real<u32>) -> Res {
        let s = &SLOTS[slot];
        if let Some(seg) = self.seg_by_name(s.name) {
            if seg.owner == owner && seg.size == size {
                let id = *expect_ok(real)?;
                return if id == seg.id {
                    Ok(())
                } else {
                    Err(format!(
                        "identical re-mount returned id {id}, not {}",
                        seg.id
                    ))
                };
            }
            return expect_err(real, ErrorKind::SegmentAlreadyExists);
        }
        let id = *expect_ok(real)?;
        if !self.seg_ids.insert(id) {
            return Err(format!("segment id {id} reused"));
        }
        self.segs.push(Seg {
            name: s.name,
            owner,
            pool: s.pool,
            base: slot_base(slot),
            size,
            id,
            bufs: BTreeMap::new(),
        });
        Ok(())
    }
}

struct Cand {
    k: usize,
    lease: u64,
    seq: u64,
    pinned: bool,
    group: Option<(String, String)>,
}
