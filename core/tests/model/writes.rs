//! Reference model, writes: PutStart, UpsertStart (cases A/B/C, preemption,
//! carry), End with the commit rule, Revoke with the pending rule, and
//! add_local_disk_replica.

use super::*;

enum Case {
    Absent,
    Replace,
    InPlace,
    Resize,
}

impl Model {
    // ----- writes ---------------------------------------------------------

    pub fn put_start(
        &mut self,
        client: u64,
        k: usize,
        size: u64,
        cfg: &Cfg,
        real: &Real<StartedWrite>,
    ) -> Res {
        let intent = match self.validate(size, cfg) {
            Ok(i) => i,
            Err(e) => return expect_err(real, e),
        };
        let now = self.now;
        let replace = match self.objs.get(&k) {
            Some(o) if o.has_complete() || now <= o.put_start.saturating_add(DISCARD) => {
                return expect_err(real, ErrorKind::ObjectAlreadyExists)
            }
            Some(o) if o.task.is_some() => {
                hit(|| "put_start: a task's target alone holds the key".into());
                return expect_err(real, ErrorKind::ObjectHasReplicationTask);
            }
            Some(_) => true,
            None => false,
        };
        let plan = match self.plan_write(cfg.mem, cfg.nof, size, PREFERRED[cfg.preferred]) {
            Ok(p) => p,
            Err(e) => return expect_err(real, e),
        };
        let w = expect_ok(real)?;
        let reps = self.accept(&plan, size, &w.replicas, false)?;
        // A stale write with nothing COMPLETE is replaced; nothing carried.
        // The replacement joins its group before the stale write leaves it,
        // so a group it shares keeps its lease even when the stale write
        // was its last member.
        let group = GROUPS[cfg.group].map(str::to_owned);
        if replace {
            hit(|| "put_start: stale write replaced".into());
            let kept = group
                .as_ref()
                .and_then(|g| self.glease.get(&Self::group_key(k, g)).copied());
            self.erase(k, Some(now + RELEASE))?;
            if let (Some(g), Some(lease)) = (&group, kept) {
                hit(|| "put_start: replacement keeps the group lease".into());
                self.glease.insert(Self::group_key(k, g), lease);
            }
        }
        self.fresh_token(w.token)?;
        let seq = self.new_seq();
        self.create(
            k,
            Obj {
                size,
                writer: client,
                put_start: now,
                seq,
                token: Some(w.token),
                lease: 0,
                committed: None,
                pending: Some(intent),
                reps,
                group,
                hard_pin: cfg.hard_pin,
                task: None,
            },
        );
        Ok(())
    }

    pub fn upsert_start(
        &mut self,
        client: u64,
        k: usize,
        size: u64,
        cfg: &Cfg,
        real: &Real<StartedWrite>,
    ) -> Res {
        let intent = match self.validate(size, cfg) {
            Ok(i) => i,
            Err(e) => return expect_err(real, e),
        };
        let now = self.now;
        let release_at = now.saturating_add(RELEASE);
        let case = match self.objs.get(&k) {
            None => Case::Absent,
            Some(o) => {
                // Naming no group keeps the object's; naming another is refused.
                if GROUPS[cfg.group].is_some_and(|g| o.group.as_deref() != Some(g)) {
                    return expect_err(real, ErrorKind::InvalidParams);
                }
                if o.task.is_some() {
                    return expect_err(real, ErrorKind::ObjectHasReplicationTask);
                }
                // What a case B would write in place: COMPLETE MEMORY/NOF_SSD.
                let in_place = o
                    .reps
                    .iter()
                    .any(|r| r.complete && r.kind != ReplicaKind::LocalDisk);
                if !o.has_complete() {
                    Case::Replace
                } else if o.size == size && in_place {
                    Case::InPlace
                } else {
                    Case::Resize
                }
            }
        };
        let plan = match case {
            Case::InPlace => None,
            _ => match self.plan_write(cfg.mem, cfg.nof, size, PREFERRED[cfg.preferred]) {
                Ok(p) => Some(p),
                Err(e) => return expect_err(real, e),
            },
        };
        let w = expect_ok(real)?;
        self.fresh_token(w.token)?;
        hit(|| {
            let o = self.objs.get(&k);
            let preempts = o.is_some_and(Obj::write_in_flight);
            let c = match case {
                Case::Absent => "A (absent)",
                Case::Replace => "A (nothing COMPLETE survives preemption)",
                Case::InPlace => "B (same size)",
                Case::Resize if o.is_some_and(|o| o.size == size) => "C (local-disk only)",
                Case::Resize => "C (other size)",
            };
            format!(
                "upsert case {c}{}",
                if preempts { ", preempting" } else { "" }
            )
        });
        match case {
            Case::Absent => {
                let reps = self.accept(plan.as_ref().unwrap(), size, &w.replicas, false)?;
                let seq = self.new_seq();
                self.create(
                    k,
                    Obj {
                        size,
                        writer: client,
                        put_start: now,
                        seq,
                        token: Some(w.token),
                        lease: 0,
                        committed: None,
                        pending: Some(intent),
                        reps,
                        group: GROUPS[cfg.group].map(str::to_owned),
                        hard_pin: cfg.hard_pin,
                        task: None,
                    },
                );
            }
            Case::InPlace => {
                let o = self.objs.get_mut(&k).unwrap();
                let (preempted, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
                    .into_iter()
                    .partition(Rep::write_processing);
                // Same ids back to PROCESSING; old LOCAL_DISK copies are stale.
                o.reps = kept
                    .into_iter()
                    .filter(|r| r.kind != ReplicaKind::LocalDisk)
                    .map(|r| Rep {
                        complete: false,
                        target: false,
                        ..r
                    })
                    .collect();
                o.writer = client;
                o.put_start = now;
                o.token = Some(w.token);
                o.pending = Some(intent);
                let size = o.size;
                let mut expected: Vec<(u64, ReplicaKind, Loc)> =
                    o.reps.iter().map(|r| (r.id, r.kind, r.loc)).collect();
                expected.sort_by_key(|e| e.0);
                let mut got: Vec<(u64, ReplicaKind, Loc)> = Vec::new();
                for d in &w.replicas {
                    if d.status != ReplicaStatus::Processing {
                        return Err(format!("case B replica not PROCESSING: {d:?}"));
                    }
                    got.push((d.id, d.kind, loc_of(d)));
                }
                got.sort_by_key(|e| e.0);
                if got != expected {
                    return Err(format!("case B replicas {got:?}, predicted {expected:?}"));
                }
                self.discard_reps(&preempted, size, release_at);
            }
            Case::Replace | Case::Resize => {
                let fresh = self.accept(plan.as_ref().unwrap(), size, &w.replicas, false)?;
                let seq = self.new_seq();
                let o = self.objs.get_mut(&k).unwrap();
                let old = std::mem::replace(&mut o.reps, fresh);
                let old_size = o.size;
                hit(|| match o.committed {
                    None => "carry: nothing committed".into(),
                    Some(d) if now < d => "carry: unexpired deadline carried".into(),
                    Some(_) => "carry: expired deadline dropped".into(),
                });
                o.committed = carry(o.committed, now);
                if matches!(case, Case::Resize) {
                    o.hard_pin |= cfg.hard_pin;
                } else {
                    o.hard_pin = cfg.hard_pin;
                }
                o.size = size;
                o.writer = client;
                o.put_start = now;
                o.token = Some(w.token);
                o.seq = seq;
                o.pending = Some(intent);
                self.discard_reps(&old, old_size, release_at);
            }
        }
        Ok(())
    }

    fn writer_checks(&self, client: u64, k: usize, tok: Option<u64>) -> Result<(), ErrorKind> {
        let o = self.objs.get(&k).ok_or(ErrorKind::ObjectNotFound)?;
        if o.writer != client {
            return Err(ErrorKind::IllegalClient);
        }
        match tok {
            Some(t) if Some(t) != o.token => Err(ErrorKind::StaleWriteToken),
            _ => Ok(()),
        }
    }

    pub fn end(
        &mut self,
        client: u64,
        k: usize,
        sel: ReplicaSelector,
        tok: Option<u64>,
        real: &Real<()>,
    ) -> Res {
        if let Err(e) = self.writer_checks(client, k, tok) {
            return expect_err(real, e);
        }
        let now = self.now;
        let o = self.objs.get_mut(&k).unwrap();
        if !o.write_in_flight() {
            // With nothing of a write PROCESSING, every replica a write made
            // is COMPLETE: the End is an OK no-op unless it selects a task's
            // PROCESSING target (INVALID_WRITE).
            if o.reps.iter().any(|r| !r.target && !r.complete) {
                return Err("model: a write replica is PROCESSING with no write in flight".into());
            }
            if o.reps
                .iter()
                .any(|r| sel_matches(sel, r.kind) && !r.complete)
            {
                return expect_err(real, ErrorKind::InvalidWrite);
            }
            return expect_ok(real).map(|_| ());
        }
        let had_complete = o.has_complete();
        let mut completed = 0;
        for r in o.reps.iter_mut() {
            if r.write_processing() && sel_matches(sel, r.kind) {
                r.complete = true;
                completed += 1;
            }
        }
        // Only the End that makes the object readable commits, once.
        if !had_complete && completed > 0 {
            if let Some(intent) = o.pending.take() {
                hit(|| {
                    let before = match o.committed {
                        None => "none",
                        Some(d) if now < d => "active",
                        Some(_) => "expired",
                    };
                    let intent = match intent {
                        Intent::Enable(0) => "ENABLE(0)".to_owned(),
                        Intent::Enable(t)
                            if t == MAX_INSTANT || now.saturating_add(t) >= MAX_INSTANT =>
                        {
                            "ENABLE(saturating)".to_owned()
                        }
                        Intent::Enable(_) => "ENABLE(ttl>0)".to_owned(),
                        i => format!("{i:?}"),
                    };
                    format!("commit cell: {before} x {intent}")
                });
                o.committed = commit(o.committed, intent, now);
            }
        }
        o.lease = o.lease.max(now);
        o.pending_rule();
        hit(|| match (completed, had_complete, o.write_in_flight()) {
            (0, _, _) => "end: completed nothing".into(),
            (_, true, _) => "end: later End of the same write (no refresh)".into(),
            (_, false, true) => "end: first End, write still in flight".into(),
            (_, false, false) => "end: first End completes the write".into(),
        });
        expect_ok(real).map(|_| ())
    }

    pub fn revoke(
        &mut self,
        client: u64,
        k: usize,
        sel: ReplicaSelector,
        tok: Option<u64>,
        real: &Real<()>,
    ) -> Res {
        if let Err(e) = self.writer_checks(client, k, tok) {
            return expect_err(real, e);
        }
        let o = self.objs.get_mut(&k).unwrap();
        if !o.write_in_flight()
            || o.reps
                .iter()
                .any(|r| !r.target && sel_matches(sel, r.kind) && r.complete)
        {
            return expect_err(real, ErrorKind::InvalidWrite);
        }
        let (revoked, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
            .into_iter()
            .partition(|r| r.write_processing() && sel_matches(sel, r.kind));
        o.reps = kept;
        o.pending_rule();
        hit(|| match (o.reps.is_empty(), o.pending.is_some()) {
            (true, _) => "revoke: object erased".into(),
            (false, true) => "revoke: partial, pending kept".into(),
            (false, false) => "revoke: pending cleared, object kept".into(),
        });
        let (size, empty) = (o.size, o.reps.is_empty());
        self.free_reps(&revoked, size)?;
        if empty {
            self.erase(k, None)?;
        }
        expect_ok(real).map(|_| ())
    }

    pub fn add_local_disk(
        &mut self,
        client: u64,
        k: usize,
        size: u64,
        real: &Real<ReplicaDescriptor>,
    ) -> Res {
        if size == 0 {
            return expect_err(real, ErrorKind::InvalidParams);
        }
        let check_desc = |d: &ReplicaDescriptor| -> Res {
            let ok = d.kind == ReplicaKind::LocalDisk
                && d.status == ReplicaStatus::Complete
                && d.location == Location::LocalDisk { client, size };
            if ok {
                Ok(())
            } else {
                Err(format!("local-disk replica {d:?}"))
            }
        };
        if let Some(o) = self.objs.get(&k) {
            if o.size != size {
                return expect_err(real, ErrorKind::InvalidParams);
            }
            if o.write_in_flight() {
                return expect_err(real, ErrorKind::UnavailableInCurrentStatus);
            }
            let d = *expect_ok(real)?;
            check_desc(&d)?;
            if let Some(r) = o.reps.iter().find(|r| r.loc == (Loc::Disk { client })) {
                // Idempotent per client.
                if r.id != d.id {
                    return Err(format!(
                        "re-adding returned {d:?}, expected replica {}",
                        r.id
                    ));
                }
                return Ok(());
            }
            self.fresh_replica_id(d.id)?;
            self.objs.get_mut(&k).unwrap().reps.push(Rep {
                id: d.id,
                kind: ReplicaKind::LocalDisk,
                complete: true,
                target: false,
                loc: Loc::Disk { client },
            });
            return Ok(());
        }
        let d = *expect_ok(real)?;
        check_desc(&d)?;
        self.fresh_replica_id(d.id)?;
        let seq = self.new_seq();
        self.create(
            k,
            Obj {
                size,
                writer: client,
                put_start: self.now,
                seq,
                token: None,
                lease: 0,
                committed: None,
                pending: None,
                reps: vec![Rep {
                    id: d.id,
                    kind: ReplicaKind::LocalDisk,
                    complete: true,
                    target: false,
                    loc: Loc::Disk { client },
                }],
                group: None,
                hard_pin: false,
                task: None,
            },
        );
        Ok(())
    }
}
