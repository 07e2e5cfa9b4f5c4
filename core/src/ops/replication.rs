//! Copy and Move: targets allocated on named segments, the source busy while
//! the task runs, one task per key. Never soft-pin activation points.

use crate::error::{Error, ErrorKind, Result};
use crate::master::{free_in, MasterCore};
use crate::object::{Object, Replica, Role, Task};
use crate::ops::Bounded;
use crate::segment::BufferOwner;
use crate::shard::ShardState;
use crate::types::{Key, ReplicaDescriptor, ReplicaKind, ReplicaStatus, SegmentId};

fn no_task() -> Error {
    Error::new(
        ErrorKind::ObjectNoReplicationTask,
        "no such task runs on this key",
    )
}

fn gone() -> Error {
    Error::new(
        ErrorKind::ReplicaIsGone,
        "the task's source or target replica is gone (segment unmounted)",
    )
}

pub(crate) fn has_task_error() -> Error {
    Error::new(
        ErrorKind::ObjectHasReplicationTask,
        "a copy, move or promotion is already running on this key",
    )
}

impl MasterCore {
    /// Allocates one task target per named segment (distinct from the
    /// object's current segments; `hash` is its key's). All or nothing.
    /// `TooSmall(names.len())` when that is more than `max`, after every
    /// check and before anything is allocated.
    fn allocate_targets(
        &self,
        obj: &Object,
        hash: u64,
        names: &[&str],
        max: usize,
    ) -> Result<Bounded<Vec<Replica>>> {
        let table = self.segments.read();
        let mut segs = Vec::with_capacity(names.len());
        // The segments holding a buffer of the object or taken by an
        // earlier target: one set, so many targets cost linear time under
        // the locks held here, not quadratic.
        let mut taken: std::collections::HashSet<SegmentId> = obj
            .replicas
            .iter()
            .filter(|r| r.has_buffer())
            .map(|r| r.segment)
            .collect();
        for name in names {
            let seg = table.by_name(name).cloned().ok_or_else(|| {
                Error::new(
                    ErrorKind::SegmentNotFound,
                    format!("segment '{name}' is not mounted"),
                )
            })?;
            if !taken.insert(seg.id) {
                return Err(Error::invalid(format!(
                    "segment '{name}' already holds a replica of this object"
                )));
            }
            segs.push(seg);
        }
        self.check_ids_left()?;
        if segs.len() > max {
            return Ok(Bounded::TooSmall(segs.len()));
        }
        let first = self.replica_ids(segs.len());
        let mut out: Vec<Replica> = Vec::with_capacity(segs.len());
        for (i, seg) in segs.iter().enumerate() {
            let id = first + i as u64;
            let owner = BufferOwner::object(hash);
            match seg.allocate(obj.size, owner) {
                Some((addr, block)) => out.push(Replica {
                    id,
                    addr,
                    segment: seg.id,
                    block,
                    kind: seg.pool.replica_kind(),
                    status: ReplicaStatus::Processing,
                    role: Role::TaskTarget,
                }),
                None => {
                    for r in &out {
                        free_in(&table, r, obj.size);
                    }
                    drop(table);
                    self.return_replica_ids(first, segs.len());
                    self.wakeup.request_eviction();
                    return Err(Error::new(
                        ErrorKind::NoAvailableHandle,
                        format!("segment '{}' has no room for {} bytes", seg.name, obj.size),
                    ));
                }
            }
        }
        Ok(Bounded::Fits(out))
    }

    /// Removes task targets that still exist (freeing them) and clears the
    /// task; erases the object if nothing is left.
    fn abandon_task(&self, st: &mut ShardState, si: usize, hash: u64, k: Key<'_>) {
        let obj = st.find_mut(hash, k).expect("object is locked");
        let task = obj.set_task(None);
        let staged =
            |r: &Replica| r.role == Role::TaskTarget && r.status == ReplicaStatus::Processing;
        // Collected, then dropped in one pass (a copy may have very many:
        // no list is rebuilt per replica).
        let targets: Vec<Replica> = obj.replicas.iter().filter(|r| staged(r)).copied().collect();
        obj.replicas.retain(|r| !staged(r));
        debug_assert!(task.is_some());
        let size = obj.size;
        let empty = obj.replicas.is_empty();
        self.free_now(st, &targets, size);
        if empty {
            self.erase(st, si, hash, k, None);
        }
    }

    /// Starts copying a key's data to the named segments; returns the
    /// PROCESSING targets.
    pub fn copy_start(&self, k: Key<'_>, targets: &[&str]) -> Result<Vec<ReplicaDescriptor>> {
        match self.copy_start_bounded(k, targets, usize::MAX)? {
            Bounded::Fits(out) => Ok(out),
            Bounded::TooSmall(n) => Err(Error::new(
                ErrorKind::Internal,
                format!("copy_start: {n} targets are more than usize::MAX"),
            )),
        }
    }

    /// [`copy_start`](Self::copy_start) for a caller with room for `max`
    /// targets: `TooSmall(n)` (nothing changed) when the copy would stage
    /// `n > max` of them, after every other check (a standby, the key, the
    /// task, the segments, the ids) and before anything is allocated.
    pub fn copy_start_bounded(
        &self,
        k: Key<'_>,
        targets: &[&str],
        max: usize,
    ) -> Result<Bounded<Vec<ReplicaDescriptor>>> {
        self.ensure_primary()?;
        k.validate()?;
        if targets.is_empty() {
            return Err(Error::invalid("copy needs at least one target segment"));
        }
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let obj = st.find_mut(hash, k).ok_or_else(Error::not_found)?;
        if obj.task().is_some() {
            return Err(has_task_error());
        }
        let source = source_replica(obj, None)?;
        let staged = match self.allocate_targets(obj, hash, targets, max)? {
            Bounded::Fits(staged) => staged,
            Bounded::TooSmall(n) => return Ok(Bounded::TooSmall(n)),
        };
        let out = staged.iter().map(|r| r.descriptor(obj.size)).collect();
        // The targets' ids are one run from the counter, above every id the
        // object holds: the targets are strictly increasing, and so are
        // the replicas with them appended (`Task::Copy`, `Object::replicas`).
        obj.set_task(Some(Task::Copy {
            source,
            targets: staged.iter().map(|r| r.id).collect(),
        }));
        obj.replicas.extend(staged);
        let mark = st.discarded.len();
        self.record_key(&mut st, hash, k, mark);
        Ok(Bounded::Fits(out))
    }

    /// Completes a copy: its targets become COMPLETE.
    pub fn copy_end(&self, k: Key<'_>) -> Result<()> {
        self.ensure_primary()?;
        self.finish_task(k, |t| matches!(t, Task::Copy { .. }), true)
    }

    /// Abandons a copy: its targets are freed.
    pub fn copy_revoke(&self, k: Key<'_>) -> Result<()> {
        self.ensure_primary()?;
        self.finish_task(k, |t| matches!(t, Task::Copy { .. }), false)
    }

    /// Starts moving the key's replica on `from` to segment `to`.
    pub fn move_start(&self, k: Key<'_>, from: &str, to: &str) -> Result<ReplicaDescriptor> {
        self.ensure_primary()?;
        k.validate()?;
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let obj = st.find_mut(hash, k).ok_or_else(Error::not_found)?;
        if obj.task().is_some() {
            return Err(has_task_error());
        }
        let from_id = self
            .segments
            .read()
            .by_name(from)
            .map(|s| s.id)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::SegmentNotFound,
                    format!("segment '{from}' is not mounted"),
                )
            })?;
        let source = source_replica(obj, Some(from_id))?;
        // One target: room for it is never short.
        let Bounded::Fits(mut staged) = self.allocate_targets(obj, hash, &[to], 1)? else {
            return Err(Error::new(
                ErrorKind::Internal,
                "move_start: one target did not fit in one",
            ));
        };
        let target = staged.pop().expect("one target");
        obj.set_task(Some(Task::Move {
            source,
            target: target.id,
        }));
        let d = target.descriptor(obj.size);
        obj.replicas.push(target);
        let mark = st.discarded.len();
        self.record_key(&mut st, hash, k, mark);
        Ok(d)
    }

    /// Completes a move: the target becomes COMPLETE, the source is
    /// discarded (held until the release instant).
    pub fn move_end(&self, k: Key<'_>) -> Result<()> {
        self.ensure_primary()?;
        self.finish_task(k, |t| matches!(t, Task::Move { .. }), true)
    }

    /// Abandons a move: the target is freed, the source stays.
    pub fn move_revoke(&self, k: Key<'_>) -> Result<()> {
        self.ensure_primary()?;
        self.finish_task(k, |t| matches!(t, Task::Move { .. }), false)
    }

    pub(crate) fn finish_task(
        &self,
        k: Key<'_>,
        kind: impl Fn(&Task) -> bool,
        success: bool,
    ) -> Result<()> {
        let result = self.finish_task_locked(k, kind, success);
        // An object the task left with nothing is erased, its pin with it
        // (§4.8).
        self.settle_pins();
        result
    }

    fn finish_task_locked(
        &self,
        k: Key<'_>,
        kind: impl Fn(&Task) -> bool,
        success: bool,
    ) -> Result<()> {
        k.validate()?;
        let now = self.clock.now();
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let mark = st.discarded.len();
        let obj = st.find_mut(hash, k).ok_or_else(Error::not_found)?;
        let task = match obj.task() {
            Some(t) if kind(t) => t.clone(),
            _ => return Err(no_task()),
        };
        if !success {
            self.abandon_task(&mut st, si, hash, k);
            self.record_key(&mut st, hash, k, mark);
            return Ok(());
        }
        // Replicas are strictly increasing by id, and so are a copy's
        // targets (`Object::replicas`, `Task::Copy`): a binary search per
        // id, and one merge walk for a copy's targets, however many.
        let present = |id: u64| obj.replicas.binary_search_by_key(&id, |r| r.id).is_ok();
        let intact = match &task {
            Task::Copy { source, targets } => present(*source) && holds_all(&obj.replicas, targets),
            Task::Move { source, target } => present(*source) && present(*target),
            Task::Promotion { target } => present(*target),
        };
        if !intact {
            // Refused, but the task is gone all the same: recorded.
            self.abandon_task(&mut st, si, hash, k);
            self.record_key(&mut st, hash, k, mark);
            return Err(gone());
        }
        obj.set_task(None);
        // `uses` is a binary search in a copy's targets: O(replicas × log
        // targets).
        for r in obj.replicas.iter_mut() {
            if r.role == Role::TaskTarget && task.uses(r.id) {
                r.status = ReplicaStatus::Complete;
                // Once complete, a target is an ordinary replica.
                r.role = Role::Write;
            }
        }
        if let Task::Move { source, .. } = task {
            let pos = obj
                .replicas
                .iter()
                .position(|r| r.id == source)
                .expect("source present");
            let src = obj.replicas.remove(pos);
            let size = obj.size;
            let release_at =
                crate::clock::saturating_deadline(now, self.config.put_start_release_timeout_ms);
            self.discard(&mut st, [&src], size, release_at);
        }
        self.record_key(&mut st, hash, k, mark);
        Ok(())
    }
}

/// Whether `replicas` holds every id of `ids`, both strictly increasing
/// (by id): one merge walk, O(replicas + ids).
fn holds_all(replicas: &[Replica], ids: &[u64]) -> bool {
    let mut held = replicas.iter().map(|r| r.id);
    // Each id consumes the replicas below it and itself: the next id,
    // larger, starts past it.
    ids.iter()
        .all(|&id| held.by_ref().find(|&r| r >= id) == Some(id))
}

/// The COMPLETE buffer replica a task reads from (MEMORY preferred), on
/// `segment` when given.
fn source_replica(obj: &Object, segment: Option<crate::types::SegmentId>) -> Result<u64> {
    let mut candidates: Vec<&Replica> = obj
        .replicas
        .iter()
        .filter(|r| r.is_complete() && r.has_buffer() && segment.is_none_or(|s| r.segment == s))
        .collect();
    candidates.sort_by_key(|r| (r.kind != ReplicaKind::Memory, r.id));
    match candidates.first() {
        Some(r) => Ok(r.id),
        None if segment.is_some() => Err(Error::new(
            ErrorKind::ReplicaNotFound,
            "no COMPLETE replica of this object on the source segment",
        )),
        None if obj.replicas.iter().any(|r| !r.is_complete()) => Err(Error::new(
            ErrorKind::ReplicaIsNotReady,
            "the object has no COMPLETE buffer replica yet",
        )),
        None => Err(Error::new(
            ErrorKind::ReplicaNotFound,
            "the object has no buffer replica to read from",
        )),
    }
}
