//! Drives the real master and the reference model with the same operation:
//! resolves the operation's symbolic arguments (writer, token, instants)
//! from the model, calls the master, lets the model check the result and
//! apply its effects, then compares the whole observable state.

use super::compare::compare;
use super::coverage;
use super::ops::*;
use super::reference::*;
use mooncake_meta_core::*;

pub struct Harness {
    pub m: Master,
    pub model: Model,
}

fn key(k: usize) -> Key<'static> {
    Key::scoped(KEYS[k].0, KEYS[k].1)
}

impl Harness {
    pub fn new(setup: Setup) -> Result<Harness, String> {
        let start = if setup.near_max {
            MAX_INSTANT - 100_000
        } else {
            1_000_000
        };
        let model = Model::new(setup, start);
        let cfg = MasterConfig {
            default_kv_lease_ttl_ms: LEASE,
            default_kv_soft_pin_ttl_ms: DEFAULT_PIN,
            max_kv_soft_pin_ttl_ms: model.max_ttl,
            allow_evict_soft_pinned_objects: setup.allow_evict_pinned,
            eviction_ratio: setup.eviction_ratio,
            eviction_high_watermark_ratio: setup.high_watermark,
            put_start_discard_timeout_ms: DISCARD,
            put_start_release_timeout_ms: RELEASE,
            shard_count: 4,
            max_group_retention_ttl_ms: RETAIN_MAX_TTL,
            max_retained_groups: MAX_RETAINED,
            seed: Some(setup.master_seed),
            ..MasterConfig::deterministic(start)
        };
        let m = Master::new(cfg).map_err(|e| format!("Master::new: {e}"))?;
        m.debug_set_eviction_keep(setup.eviction_keep);
        let mut h = Harness { m, model };
        for slot in 0..SLOTS.len() {
            h.step(&Op::Mount { slot, variant: 0 })?;
        }
        Ok(h)
    }

    fn writer(&self, k: usize) -> u64 {
        self.model.objs.get(&k).map_or(1, |o| o.writer)
    }

    fn client(&self, who: Who, k: usize) -> u64 {
        match who {
            Who::C1 => 1,
            Who::C2 => 2,
            Who::Writer => self.writer(k),
            Who::NotWriter => 3 - self.writer(k),
        }
    }

    fn stale_token(&self, k: usize) -> u64 {
        let current = self.model.objs.get(&k).and_then(|o| o.token);
        self.model
            .tokens
            .iter()
            .copied()
            .find(|t| Some(*t) != current)
            .unwrap_or(u64::MAX)
    }

    /// Token of a single End/Revoke.
    fn token(&self, tok: Tok, k: usize) -> Option<u64> {
        match tok {
            Tok::None => None,
            Tok::Right => Some(self.model.objs.get(&k).and_then(|o| o.token).unwrap_or(1)),
            Tok::Stale => Some(self.stale_token(k)),
            Tok::Zero => Some(0),
        }
    }

    /// Token of a batch entry: 0 means none.
    fn batch_token(&self, tok: Tok, k: usize) -> u64 {
        self.token(tok, k).unwrap_or(0)
    }

    fn at(&self, at: At) -> u64 {
        let md = &self.model;
        let now = md.now;
        let obj = |k: usize| md.objs.get(&k);
        let (base, d) = match at {
            At::Now(d) => (now, d),
            At::Deadline(k, d) => (obj(k).and_then(|o| o.committed).unwrap_or(now), d),
            At::Lease(k, d) => (
                if md.objs.contains_key(&k) {
                    md.effective_lease(k)
                } else {
                    now
                },
                d,
            ),
            At::Young(k, d) => (
                obj(k).map_or(now, |o| o.put_start.saturating_add(DISCARD)),
                d,
            ),
            At::Stale(k, d) => (
                obj(k).map_or(now, |o| o.put_start.saturating_add(RELEASE)),
                d,
            ),
        };
        base.saturating_add_signed(d)
    }

    fn write_config(&self, cfg: &Cfg) -> WriteConfig {
        WriteConfig {
            memory_replicas: cfg.mem,
            nof_ssd_replicas: cfg.nof,
            hard_pin: cfg.hard_pin,
            preferred_segments: PREFERRED[cfg.preferred]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            soft_pin: cfg.pin.request(self.model.max_ttl),
            group: GROUPS[cfg.group].map(str::to_owned),
        }
    }

    /// Runs one operation on both sides, then compares the whole state.
    pub fn step(&mut self, op: &Op) -> Res {
        if let Op::Write {
            upsert,
            who,
            k,
            size,
            cfg,
            sel,
        } = *op
        {
            let start = if upsert {
                Op::UpsertStart { who, k, size, cfg }
            } else {
                Op::PutStart { who, k, size, cfg }
            };
            let client = self.client(who, k);
            self.step(&start).map_err(|e| format!("start: {e}"))?;
            let o = self.model.objs.get(&k);
            if o.is_some_and(|o| o.write_in_flight() && o.writer == client) {
                let end = Op::End {
                    upsert,
                    who: Who::Writer,
                    k,
                    sel,
                    tok: Tok::Right,
                };
                self.step(&end).map_err(|e| format!("end: {e}"))?;
            }
            return Ok(());
        }
        self.apply(op)?;
        compare(&self.m, &mut self.model)
    }

    fn apply(&mut self, op: &Op) -> Res {
        coverage::set_op(op_name(op));
        let m = &self.m;
        match op {
            Op::Write { .. } => unreachable!("split by step()"),
            Op::PutStart { who, k, size, cfg } => {
                let (c, size, wc) = (self.client(*who, *k), SIZES[*size], self.write_config(cfg));
                let r = m.put_start(c, key(*k), size, &wc);
                self.model.put_start(c, *k, size, cfg, &r)
            }
            Op::UpsertStart { who, k, size, cfg } => {
                let (c, size, wc) = (self.client(*who, *k), SIZES[*size], self.write_config(cfg));
                let r = m.upsert_start(c, key(*k), size, &wc);
                self.model.upsert_start(c, *k, size, cfg, &r)
            }
            Op::End {
                upsert,
                who,
                k,
                sel,
                tok,
            } => {
                let (c, t) = (self.client(*who, *k), self.token(*tok, *k));
                let r = if *upsert {
                    m.upsert_end(c, key(*k), *sel, t)
                } else {
                    m.put_end(c, key(*k), *sel, t)
                };
                self.model.end(c, *k, *sel, t, &r)
            }
            Op::Revoke {
                upsert,
                who,
                k,
                sel,
                tok,
            } => {
                let (c, t) = (self.client(*who, *k), self.token(*tok, *k));
                let r = if *upsert {
                    m.upsert_revoke(c, key(*k), *sel, t)
                } else {
                    m.put_revoke(c, key(*k), *sel, t)
                };
                self.model.revoke(c, *k, *sel, t, &r)
            }
            Op::Get { k } => {
                let r = m.get_replica_list(key(*k));
                self.model.get(*k, &r)
            }
            Op::Exist { k } => {
                let r = m.exist(key(*k));
                self.model.exist(*k, &r)
            }
            Op::Remove { k, force } => {
                let r = m.remove(key(*k), *force);
                self.model.remove(*k, *force, &r)
            }
            Op::RemoveAll { force } => {
                let got = m.remove_all(*force);
                let want = self.model.remove_matching(*force, |_| true)?;
                check_eq("remove_all count", got, want)
            }
            Op::RemoveRegex {
                tenant,
                pattern,
                force,
            } => {
                let (t, (pat, pred)) = (TENANTS[*tenant], PATTERNS[*pattern]);
                let r = m.remove_by_regex(t, pat, *force);
                match (t, pred) {
                    (Some(""), _) | (_, None) => expect_err(&r, ErrorKind::InvalidParams),
                    (t, Some(pred)) => {
                        let want = self.model.remove_matching(*force, |k| {
                            t.is_none_or(|t| t == KEYS[k].0) && pred(KEYS[k].1)
                        })?;
                        check_eq("remove_by_regex count", *expect_ok(&r)?, want)
                    }
                }
            }
            Op::CopyStart { k, targets } => {
                let names: Vec<&str> = targets.iter().map(|&i| SEG_NAMES[i]).collect();
                let r = m.copy_start(key(*k), &names);
                self.model.copy_start(*k, &names, &r)
            }
            Op::CopyEnd { k } => {
                let r = m.copy_end(key(*k));
                self.model.finish_task(*k, 0, true, &r)
            }
            Op::CopyRevoke { k } => {
                let r = m.copy_revoke(key(*k));
                self.model.finish_task(*k, 0, false, &r)
            }
            Op::MoveStart { k, from, to } => {
                let (from, to) = (SEG_NAMES[*from], SEG_NAMES[*to]);
                let r = m.move_start(key(*k), from, to);
                self.model.move_start(*k, from, to, &r)
            }
            Op::MoveEnd { k } => {
                let r = m.move_end(key(*k));
                self.model.finish_task(*k, 1, true, &r)
            }
            Op::MoveRevoke { k } => {
                let r = m.move_revoke(key(*k));
                self.model.finish_task(*k, 1, false, &r)
            }
            Op::PromotionStart { k, preferred } => {
                let pref: Vec<String> = PREFERRED[*preferred]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                let r = m.promotion_start(key(*k), &pref);
                self.model.promotion_start(*k, PREFERRED[*preferred], &r)
            }
            Op::PromotionEnd { k, success } => {
                let r = m.promotion_end(key(*k), *success);
                self.model.finish_task(*k, 2, *success, &r)
            }
            Op::AddLocalDisk { who, k, size } => {
                let (c, size) = (self.client(*who, *k), SIZES[*size]);
                let r = m.add_local_disk_replica(c, key(*k), size);
                self.model.add_local_disk(c, *k, size, &r)
            }
            Op::BatchStart {
                upsert,
                who,
                keys,
                sizes,
                mismatch,
                cfg,
            } => self.batch_start(*upsert, *who, keys, sizes, *mismatch, cfg),
            Op::BatchEnd {
                revoke,
                who,
                keys,
                sel,
                toks,
                mismatch,
            } => self.batch_end(*revoke, *who, keys, *sel, toks.as_deref(), *mismatch),
            Op::BatchGet { keys } => {
                let ks: Vec<Key> = keys.iter().map(|&k| key(k)).collect();
                let rs = m.batch_get_replica_list(&ks);
                check_eq("batch length", rs.len(), keys.len())?;
                for (r, &k) in rs.iter().zip(keys) {
                    self.model.get(k, r)?;
                }
                Ok(())
            }
            Op::BatchExist { keys } => {
                let ks: Vec<Key> = keys.iter().map(|&k| key(k)).collect();
                let rs = m.batch_exist(&ks);
                check_eq("batch length", rs.len(), keys.len())?;
                for (r, &k) in rs.iter().zip(keys) {
                    self.model.exist(k, r)?;
                }
                Ok(())
            }
            Op::BatchRemove { keys, force } => {
                let ks: Vec<Key> = keys.iter().map(|&k| key(k)).collect();
                let rs = m.batch_remove(&ks, *force);
                check_eq("batch length", rs.len(), keys.len())?;
                for (r, &k) in rs.iter().zip(keys) {
                    self.model.remove(k, *force, r)?;
                }
                Ok(())
            }
            Op::RetainGroups {
                tenant,
                groups,
                ttl,
            } => {
                let ids: Vec<&str> = groups.iter().map(|&g| RT_GROUPS[g]).collect();
                let r = m.retain_groups(RT_TENANTS[*tenant], &ids, *ttl);
                match self.model.retain_groups(RT_TENANTS[*tenant], &ids, *ttl) {
                    Err(kind) => expect_err(&r, kind),
                    Ok(want) => {
                        let got: Vec<Result<u64, ErrorKind>> = expect_ok(&r)?
                            .iter()
                            .map(|x| x.as_ref().copied().map_err(|e| e.kind()))
                            .collect();
                        check_eq("retain_groups results", got, want)
                    }
                }
            }
            Op::ReleaseGroups { tenant, groups } => {
                let ids: Vec<&str> = groups.iter().map(|&g| RT_GROUPS[g]).collect();
                let r = m.release_groups(RT_TENANTS[*tenant], &ids);
                match self.model.release_groups(RT_TENANTS[*tenant], &ids) {
                    Err(kind) => expect_err(&r, kind),
                    Ok(want) => {
                        let got: Vec<Result<(), ErrorKind>> = expect_ok(&r)?
                            .iter()
                            .map(|x| x.as_ref().copied().map_err(|e| e.kind()))
                            .collect();
                        check_eq("release_groups results", got, want)
                    }
                }
            }
            Op::Advance(by) => {
                let r = m.advance_time(*by);
                match self.model.now.checked_add(*by).filter(|&t| t < MAX_INSTANT) {
                    Some(t) => {
                        check_eq("advanced clock", *expect_ok(&r)?, t)?;
                        self.model.now = t;
                        Ok(())
                    }
                    None => expect_err(&r, ErrorKind::InvalidParams),
                }
            }
            Op::SetTime(at) => {
                let t = self.at(*at);
                let r = m.set_time(t);
                if t >= MAX_INSTANT {
                    expect_err(&r, ErrorKind::InvalidParams)
                } else if t < self.model.now {
                    expect_err(&r, ErrorKind::ClockUnsupported)
                } else {
                    expect_ok(&r)?;
                    self.model.now = t;
                    Ok(())
                }
            }
            Op::Sweep(at) => {
                let t = self.at(*at);
                let got = m.sweep_stale_writes_at(t);
                check_eq("swept writes", got, self.model.sweep(t)?)
            }
            Op::Release(at) => {
                let t = self.at(*at);
                let got = m.release_discarded_at(t);
                check_eq("released buffers", got, self.model.release(t)?)
            }
            Op::Cleanup(at) => {
                let t = self.at(*at);
                let stats = m.run_cleanup_at(t);
                check_eq("cleanup expired", stats.expired, self.model.cleanup(t))
            }
            Op::Evict { target, lower } => {
                let r = m.run_eviction(RATIOS[*target], RATIOS[*lower]);
                match self.model.evict(RATIOS[*target], RATIOS[*lower])? {
                    Err(kind) => expect_err(&r, kind),
                    Ok(want) => check_eq("eviction report", *expect_ok(&r)?, want),
                }
            }
            Op::EvictIfNeeded { force } => {
                let got = m.evict_if_needed(*force);
                check_eq("evict_if_needed", got, self.model.evict_if_needed(*force)?)
            }
            Op::Tick => {
                m.run_maintenance_tick();
                let now = self.model.now;
                self.model.evict_if_needed(false)?;
                self.model.cleanup(now);
                self.model.sweep(now)?;
                self.model.release(now)?;
                Ok(())
            }
            Op::Unmount { slot, owner } => {
                let name = SLOTS[*slot].name;
                let current = self
                    .model
                    .seg_by_name(name)
                    .map_or(SLOTS[*slot].client, |s| s.owner);
                let c = if *owner { current } else { 3 - current };
                let r = m.unmount_segment(c, name);
                self.model.unmount(c, name, &r)
            }
            Op::Mount { slot, variant } => {
                let s = &SLOTS[*slot];
                let (owner, size) = match variant {
                    0 => (s.client, s.size),
                    1 => (s.client, s.size + UNIT),
                    _ => (3 - s.client, s.size),
                };
                let spec = SegmentSpec {
                    name: s.name.into(),
                    base: slot_base(*slot),
                    size,
                    pool: s.pool,
                };
                let r = m.mount_segment(owner, &spec);
                self.model.mount(*slot, owner, size, &r)
            }
        }
    }

    fn batch_start(
        &mut self,
        upsert: bool,
        who: Who,
        keys: &[usize],
        sizes: &[usize],
        mismatch: bool,
        cfg: &Cfg,
    ) -> Res {
        let c = self.client(who, keys.first().copied().unwrap_or(0));
        let ks: Vec<Key> = keys.iter().map(|&k| key(k)).collect();
        let mut sz: Vec<u64> = sizes.iter().map(|&s| SIZES[s]).collect();
        if mismatch && sz.pop().is_none() {
            sz.push(UNIT);
        }
        let wc = self.write_config(cfg);
        let rs = if upsert {
            self.m.batch_upsert_start(c, &ks, &sz, &wc)
        } else {
            self.m.batch_put_start(c, &ks, &sz, &wc)
        };
        check_eq("batch length", rs.len(), keys.len())?;
        // A bad shared request fails every key with no side effect.
        if mismatch || resolve(cfg.pin, self.model.max_ttl).is_err() {
            return rs
                .iter()
                .try_for_each(|r| expect_err(r, ErrorKind::InvalidParams));
        }
        for ((r, &k), &size) in rs.iter().zip(keys).zip(&sz) {
            if upsert {
                self.model.upsert_start(c, k, size, cfg, r)?;
            } else {
                self.model.put_start(c, k, size, cfg, r)?;
            }
        }
        Ok(())
    }

    fn batch_end(
        &mut self,
        revoke: bool,
        who: Who,
        keys: &[usize],
        sel: ReplicaSelector,
        toks: Option<&[Tok]>,
        mismatch: bool,
    ) -> Res {
        let c = self.client(who, keys.first().copied().unwrap_or(0));
        let ks: Vec<Key> = keys.iter().map(|&k| key(k)).collect();
        let mut tv: Option<Vec<u64>> = toks.map(|t| {
            t.iter()
                .zip(keys)
                .map(|(&t, &k)| self.batch_token(t, k))
                .collect()
        });
        let mismatch = mismatch && tv.is_some();
        if mismatch {
            let v = tv.as_mut().unwrap();
            if v.pop().is_none() {
                v.push(1);
            }
        }
        let rs = if revoke {
            self.m.batch_put_revoke(c, &ks, sel, tv.as_deref())
        } else {
            self.m.batch_put_end(c, &ks, sel, tv.as_deref())
        };
        check_eq("batch length", rs.len(), keys.len())?;
        if mismatch {
            return rs
                .iter()
                .try_for_each(|r| expect_err(r, ErrorKind::InvalidParams));
        }
        for (i, (r, &k)) in rs.iter().zip(keys).enumerate() {
            let t = tv.as_ref().map(|v| v[i]).filter(|&t| t != 0);
            if revoke {
                self.model.revoke(c, k, sel, t, r)?;
            } else {
                self.model.end(c, k, sel, t, r)?;
            }
        }
        Ok(())
    }
}

pub fn check_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Res {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, predicted {want:?}"))
    }
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::PutStart { .. } => "PutStart",
        Op::Write { .. } => unreachable!("split by step()"),
        Op::UpsertStart { .. } => "UpsertStart",
        Op::End { upsert: false, .. } => "PutEnd",
        Op::End { upsert: true, .. } => "UpsertEnd",
        Op::Revoke { upsert: false, .. } => "PutRevoke",
        Op::Revoke { upsert: true, .. } => "UpsertRevoke",
        Op::Get { .. } => "GetReplicaList",
        Op::Exist { .. } => "Exist",
        Op::Remove { .. } => "Remove",
        Op::RemoveAll { .. } => "RemoveAll",
        Op::RemoveRegex { .. } => "RemoveByRegex",
        Op::CopyStart { .. } => "CopyStart",
        Op::CopyEnd { .. } => "CopyEnd",
        Op::CopyRevoke { .. } => "CopyRevoke",
        Op::MoveStart { .. } => "MoveStart",
        Op::MoveEnd { .. } => "MoveEnd",
        Op::MoveRevoke { .. } => "MoveRevoke",
        Op::PromotionStart { .. } => "PromotionStart",
        Op::PromotionEnd { .. } => "PromotionEnd",
        Op::AddLocalDisk { .. } => "AddLocalDiskReplica",
        Op::BatchStart { upsert: false, .. } => "BatchPutStart",
        Op::BatchStart { upsert: true, .. } => "BatchUpsertStart",
        Op::BatchEnd { revoke: false, .. } => "BatchPutEnd",
        Op::BatchEnd { revoke: true, .. } => "BatchPutRevoke",
        Op::BatchGet { .. } => "BatchGetReplicaList",
        Op::BatchExist { .. } => "BatchExist",
        Op::BatchRemove { .. } => "BatchRemove",
        Op::RetainGroups { .. } => "RetainGroups",
        Op::ReleaseGroups { .. } => "ReleaseGroups",
        Op::Advance(_) => "AdvanceTime",
        Op::SetTime(_) => "SetTime",
        Op::Sweep(_) => "SweepStaleWrites",
        Op::Release(_) => "ReleaseDiscarded",
        Op::Cleanup(_) => "RunCleanupAt",
        Op::Evict { .. } => "RunEviction",
        Op::EvictIfNeeded { .. } => "EvictIfNeeded",
        Op::Tick => "MaintenanceTick",
        Op::Unmount { .. } => "UnmountSegment",
        Op::Mount { .. } => "MountSegment",
    }
}
