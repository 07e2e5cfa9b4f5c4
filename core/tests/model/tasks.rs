//! Reference model, copy / move / promotion: source choice, named targets,
//! one task per key, REPLICA_IS_GONE, abandon. Never soft-pin points.

use super::*;

impl Model {
    // ----- copy / move / promotion -----------------------------------------

    /// The COMPLETE buffer replica a task reads (MEMORY first, then lowest id).
    fn source(&self, k: usize, seg: Option<u32>) -> Result<u64, ErrorKind> {
        let o = &self.objs[&k];
        let best = o
            .reps
            .iter()
            .filter(|r| match r.loc {
                Loc::Buf { seg: s, .. } => r.complete && seg.is_none_or(|x| x == s),
                Loc::Disk { .. } => false,
            })
            .min_by_key(|r| (r.kind != ReplicaKind::Memory, r.id));
        match best {
            Some(r) => Ok(r.id),
            None if seg.is_some() => Err(ErrorKind::ReplicaNotFound),
            None if o.reps.iter().any(|r| !r.complete) => Err(ErrorKind::ReplicaIsNotReady),
            None => Err(ErrorKind::ReplicaNotFound),
        }
    }

    /// Checks named targets: mounted, not holding a replica of the object,
    /// distinct, then room on each.
    fn check_targets(&self, k: usize, names: &[&str]) -> Result<Vec<u32>, ErrorKind> {
        let o = &self.objs[&k];
        let mut ids = Vec::new();
        for name in names {
            let seg = self.seg_by_name(name).ok_or(ErrorKind::SegmentNotFound)?;
            let holds = o
                .reps
                .iter()
                .any(|r| matches!(r.loc, Loc::Buf { seg: s, .. } if s == seg.id));
            if holds || ids.contains(&seg.id) {
                return Err(ErrorKind::InvalidParams);
            }
            ids.push(seg.id);
        }
        for id in &ids {
            if !self.seg_by_id(*id).unwrap().fits(o.size) {
                return Err(ErrorKind::NoAvailableHandle);
            }
        }
        Ok(ids)
    }

    /// Occupies the staged task targets, which must be on `segs` in order.
    fn accept_targets(
        &mut self,
        k: usize,
        segs: &[u32],
        descs: &[ReplicaDescriptor],
    ) -> Result<Vec<u64>, String> {
        let size = self.objs[&k].size;
        if descs.len() != segs.len() {
            return Err(format!(
                "{} targets staged, predicted {}",
                descs.len(),
                segs.len()
            ));
        }
        let mut ids = Vec::new();
        for (d, &seg) in descs.iter().zip(segs) {
            let pool = self.seg_by_id(seg).unwrap().pool;
            match d.location {
                Location::Buffer {
                    segment,
                    address,
                    size: len,
                } if segment == seg
                    && len == size
                    && d.kind == pool_kind(pool)
                    && d.status == ReplicaStatus::Processing =>
                {
                    self.fresh_replica_id(d.id)?;
                    self.seg_by_id_mut(seg).unwrap().take(address, size)?;
                    self.objs.get_mut(&k).unwrap().reps.push(Rep {
                        id: d.id,
                        kind: d.kind,
                        complete: false,
                        target: true,
                        loc: Loc::Buf { seg, addr: address },
                    });
                    ids.push(d.id);
                }
                _ => {
                    return Err(format!(
                        "target {d:?} should be PROCESSING on segment {seg}"
                    ))
                }
            }
        }
        Ok(ids)
    }

    pub fn copy_start(
        &mut self,
        k: usize,
        names: &[&str],
        real: &Real<Vec<ReplicaDescriptor>>,
    ) -> Res {
        if names.is_empty() {
            return expect_err(real, ErrorKind::InvalidParams);
        }
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        if o.task.is_some() {
            return expect_err(real, ErrorKind::ObjectHasReplicationTask);
        }
        let source = match self.source(k, None) {
            Ok(s) => s,
            Err(e) => return expect_err(real, e),
        };
        let segs = match self.check_targets(k, names) {
            Ok(s) => s,
            Err(e) => return expect_err(real, e),
        };
        let descs = expect_ok(real)?;
        let targets = self.accept_targets(k, &segs, descs)?;
        self.objs.get_mut(&k).unwrap().task = Some(Task::Copy { source, targets });
        Ok(())
    }

    pub fn move_start(
        &mut self,
        k: usize,
        from: &str,
        to: &str,
        real: &Real<ReplicaDescriptor>,
    ) -> Res {
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        if o.task.is_some() {
            return expect_err(real, ErrorKind::ObjectHasReplicationTask);
        }
        let Some(from) = self.seg_by_name(from).map(|s| s.id) else {
            return expect_err(real, ErrorKind::SegmentNotFound);
        };
        let source = match self.source(k, Some(from)) {
            Ok(s) => s,
            Err(e) => return expect_err(real, e),
        };
        let segs = match self.check_targets(k, &[to]) {
            Ok(s) => s,
            Err(e) => return expect_err(real, e),
        };
        let d = *expect_ok(real)?;
        let target = self.accept_targets(k, &segs, &[d])?[0];
        self.objs.get_mut(&k).unwrap().task = Some(Task::Move { source, target });
        Ok(())
    }

    pub fn promotion_start(
        &mut self,
        k: usize,
        preferred: &[&str],
        real: &Real<ReplicaDescriptor>,
    ) -> Res {
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        if o.task.is_some() {
            return expect_err(real, ErrorKind::ObjectHasReplicationTask);
        }
        if !o
            .reps
            .iter()
            .any(|r| r.kind == ReplicaKind::LocalDisk && r.complete)
        {
            return expect_err(real, ErrorKind::ReplicaNotFound);
        }
        if o.reps.iter().any(|r| r.kind == ReplicaKind::Memory) {
            return expect_err(real, ErrorKind::UnavailableInCurrentStatus);
        }
        let size = o.size;
        let (placed, must) = self.plan_pool(Pool::Memory, 1, size, preferred);
        if placed == 0 {
            return expect_err(real, ErrorKind::NoAvailableHandle);
        }
        let d = *expect_ok(real)?;
        let plan = Plan {
            mem: 1,
            nof: 0,
            must,
        };
        let reps = self.accept(&plan, size, &[d], true)?;
        let o = self.objs.get_mut(&k).unwrap();
        o.task = Some(Task::Promotion { target: reps[0].id });
        o.reps.extend(reps);
        Ok(())
    }

    /// Drops the task and its PROCESSING targets; erases an emptied object.
    fn abandon(&mut self, k: usize) -> Res {
        let o = self.objs.get_mut(&k).unwrap();
        o.task = None;
        let (targets, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
            .into_iter()
            .partition(|r| r.target && !r.complete);
        o.reps = kept;
        let (size, empty) = (o.size, o.reps.is_empty());
        self.free_reps(&targets, size)?;
        if empty {
            self.erase(k, None)?;
        }
        Ok(())
    }

    /// CopyEnd/Revoke, MoveEnd/Revoke, PromotionEnd. `kind`: 0 copy, 1 move, 2 promotion.
    pub fn finish_task(&mut self, k: usize, kind: u8, success: bool, real: &Real<()>) -> Res {
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        let task = match (&o.task, kind) {
            (Some(t @ Task::Copy { .. }), 0)
            | (Some(t @ Task::Move { .. }), 1)
            | (Some(t @ Task::Promotion { .. }), 2) => t.clone(),
            _ => return expect_err(real, ErrorKind::ObjectNoReplicationTask),
        };
        let present = |id: u64| o.reps.iter().any(|r| r.id == id);
        let intact = match &task {
            Task::Copy { source, targets } => {
                present(*source) && targets.iter().all(|t| present(*t))
            }
            Task::Move { source, target } => present(*source) && present(*target),
            Task::Promotion { target } => present(*target),
        };
        if !success {
            expect_ok(real)?;
            return self.abandon(k);
        }
        if !intact {
            expect_err(real, ErrorKind::ReplicaIsGone)?;
            return self.abandon(k);
        }
        expect_ok(real)?;
        let now = self.now;
        let o = self.objs.get_mut(&k).unwrap();
        o.task = None;
        for r in o.reps.iter_mut() {
            if r.target && task.uses(r.id) {
                r.complete = true;
                r.target = false;
            }
        }
        if let Task::Move { source, .. } = task {
            let pos = o.reps.iter().position(|r| r.id == source).unwrap();
            let src = o.reps.remove(pos);
            let size = o.size;
            self.discard_reps(&[src], size, now.saturating_add(RELEASE));
        }
        Ok(())
    }
}
