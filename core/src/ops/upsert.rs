//! UpsertStart: case A (absent, or nothing COMPLETE survives preemption),
//! case B (same size, in place) and case C (other size: allocate first,
//! then replace). Soft-pin carry per docs/CONTRACT.md §4.5.

use super::put::{validate_write, NewObject};
use super::read::Bounded;
use crate::error::{Error, ErrorKind, Result};
use crate::master::MasterCore;
use crate::object::Role;
use crate::soft_pin::state;
use crate::types::{
    ClientId, Key, ReplicaKind, ReplicaSelector, ReplicaStatus, StartedWrite, WriteConfig,
};

enum Case {
    /// Absent: a plain put.
    Absent,
    /// Present but nothing COMPLETE survives preemption: replaced, deadline carried.
    Replace,
    /// Same size: in place.
    InPlace,
    /// Other size: new buffers, old ones discarded, deadline carried.
    Resize,
}

impl MasterCore {
    /// Starts an upsert (upstream `UpsertStart`). Leases never block it.
    pub fn upsert_start(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &WriteConfig,
    ) -> Result<StartedWrite> {
        self.ensure_primary()?;
        match self.upsert_start_bounded(client, k, size, cfg, usize::MAX)? {
            Bounded::Fits(w) => Ok(w),
            Bounded::TooSmall(n) => unreachable!("{n} replicas exceed usize::MAX"),
        }
    }

    /// As [`upsert_start`](Self::upsert_start) for a caller with room for
    /// `max` descriptors: when the write could return more (the requested
    /// counts, or an in-place write's existing replicas if more), it is
    /// `TooSmall(that many)` after every other check and before any effect.
    pub fn upsert_start_bounded(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &WriteConfig,
        max: usize,
    ) -> Result<Bounded<StartedWrite>> {
        self.ensure_primary()?;
        let result = self.upsert_start_locked(client, k, size, cfg, max);
        // A replacement may drop an expired deadline (fewer registrations
        // may ask for a rebuild); the rebuild takes shard locks, so it runs
        // once this Start holds none.
        self.settle_index();
        result
    }

    fn upsert_start_locked(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &WriteConfig,
        max: usize,
    ) -> Result<Bounded<StartedWrite>> {
        let intent = validate_write(self, k, size, cfg)?;
        let now = self.clock.now();
        let release_at =
            crate::clock::saturating_deadline(now, self.config.put_start_release_timeout_ms);
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let mark = st.discarded.len();

        let case = match st.find(hash, k) {
            None => Case::Absent,
            Some(obj) => {
                // The group is fixed at creation: an Upsert that names no
                // group keeps the object's (the legacy configs cannot name
                // one); only naming another group is refused.
                if let Some(requested) = cfg.group.as_deref() {
                    let current = obj.group().map(|g| g.name());
                    if current != Some(requested) {
                        return Err(Error::invalid(format!(
                            "the group of an object is fixed at creation (is {current:?}, request {requested:?})"
                        )));
                    }
                }
                if obj.task().is_some() {
                    return Err(Error::new(
                        ErrorKind::ObjectHasReplicationTask,
                        "a copy, move or promotion is running on this key",
                    ));
                }
                // COMPLETE replicas survive preemption; PROCESSING write
                // replicas of the write in flight do not.
                if !obj.has_complete() {
                    Case::Replace
                } else if obj.size == size
                    && obj
                        .replicas
                        .iter()
                        .any(|r| r.is_complete() && r.has_buffer())
                {
                    // In place needs a COMPLETE MEMORY/NOF_SSD replica to
                    // rewrite: old LOCAL_DISK copies are discarded, so an
                    // object holding only those would be left empty. It
                    // gets new replicas instead, as in case C.
                    Case::InPlace
                } else {
                    Case::Resize
                }
            }
        };

        let requested = cfg.memory_replicas as usize + cfg.nof_ssd_replicas as usize;
        let needed = match case {
            // Case B returns the surviving MEMORY/NOF_SSD replicas, which
            // may outnumber the request (copies made since the write).
            Case::InPlace => st.find(hash, k).map_or(requested, |obj| {
                let kept = obj
                    .replicas
                    .iter()
                    .filter(|r| !r.is_write_processing() && r.kind != ReplicaKind::LocalDisk)
                    .count();
                kept.max(requested)
            }),
            _ => requested,
        };
        // Before the capacity answer, which comes after every other check.
        self.check_ids_left()?;
        if needed > max {
            return Ok(Bounded::TooSmall(needed));
        }
        // Room for a new key's record, before anything is allocated.
        let mut room = match case {
            Case::Absent => Some(st.reserve_insert()?),
            _ => None,
        };

        // Allocate before touching anything, so a failure leaves the old
        // object, its deadline, registration and the gauge untouched
        // [diverges: upstream erases first and loses the object].
        let fresh = match case {
            Case::InPlace => crate::object::Replicas::new(),
            _ => self.allocate_write(hash, size, cfg, &[])?,
        };
        let token = self.new_token();

        let absent = matches!(case, Case::Absent);
        let (started, slot) = match case {
            Case::Absent => {
                let descriptors = fresh.iter().map(|r| r.descriptor(size)).collect();
                let obj = self.new_object(
                    k,
                    fresh,
                    token,
                    NewObject {
                        writer: client,
                        size,
                        now,
                        hard_pin: cfg.hard_pin,
                        committed: None,
                    },
                    cfg.group.as_deref(),
                );
                let room = room.take().expect("room is made for an absent key");
                let slot = st.insert(room, k.tenant, hash, obj);
                st.in_flight.start(token, slot, Some(intent));
                st.keys += 1;
                (
                    StartedWrite {
                        replicas: descriptors,
                        token,
                    },
                    slot,
                )
            }
            Case::InPlace => {
                let (at, obj, writes) = st
                    .find_write_mut(hash, k, si as u32)
                    .expect("object is locked");
                let old_token = obj.write_token;
                // Preempt the write in flight: its PROCESSING replicas are
                // discarded, its pending intent is replaced below.
                let (preempted, mut kept): (crate::object::Replicas, crate::object::Replicas) =
                    std::mem::take(&mut obj.replicas)
                        .into_iter()
                        .partition(|r| r.is_write_processing());
                // Old LOCAL_DISK copies are stale once the value changes.
                kept.retain(|r| r.kind != ReplicaKind::LocalDisk);
                for r in kept.iter_mut() {
                    r.status = ReplicaStatus::Processing;
                    r.role = Role::Write;
                }
                obj.replicas = kept;
                obj.writer = client;
                obj.put_start = now;
                obj.write_token = token;
                let descriptors = obj.replicas.iter().map(|r| r.descriptor(size)).collect();
                writes.end(old_token);
                writes.start(token, at.slot, Some(intent));
                self.discard(&mut st, &preempted, size, release_at);
                (
                    StartedWrite {
                        replicas: descriptors,
                        token,
                    },
                    at.slot,
                )
            }
            Case::Replace | Case::Resize => {
                let (at, obj, writes) = st
                    .find_write_mut(hash, k, si as u32)
                    .expect("object is locked");
                let old = std::mem::replace(&mut obj.replicas, fresh);
                let old_size = obj.size;
                let old_token = obj.write_token;
                let (carried, delta) = state::carry(obj.committed(), now);
                obj.set_committed(carried);
                self.apply_delta(obj, at, delta);
                if matches!(case, Case::Resize) {
                    obj.set_hard_pin(obj.hard_pin() || cfg.hard_pin);
                } else {
                    obj.set_hard_pin(cfg.hard_pin);
                }
                obj.size = size;
                obj.writer = client;
                obj.put_start = now;
                obj.write_token = token;
                obj.seq = self.new_seq();
                // A carried deadline stays registered as it is: its entry
                // names the record by slot and version, which the
                // replacement keeps.
                let descriptors = obj.replicas.iter().map(|r| r.descriptor(size)).collect();
                writes.end(old_token);
                writes.start(token, at.slot, Some(intent));
                self.discard(&mut st, &old, old_size, release_at);
                (
                    StartedWrite {
                        replicas: descriptors,
                        token,
                    },
                    at.slot,
                )
            }
        };
        if absent {
            // Case A made a new key (nothing before it, nothing discarded):
            // recorded in the compact spelling of its ObjectSet.
            self.record_started(&mut st, slot, intent);
        } else {
            self.record_slot(&mut st, slot, mark);
        }
        Ok(Bounded::Fits(started))
    }

    /// Completes an upsert's replicas: identical to [`MasterCore::put_end`].
    pub fn upsert_end(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        self.ensure_primary()?;
        self.put_end(client, k, sel, token)
    }

    /// Revokes an upsert's replicas: identical to [`MasterCore::put_revoke`].
    /// Revoking a case-B write erases the object and its deadline.
    pub fn upsert_revoke(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        self.ensure_primary()?;
        self.put_revoke(client, k, sel, token)
    }
}
