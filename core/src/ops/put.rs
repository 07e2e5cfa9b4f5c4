//! PutStart, PutEnd and PutRevoke (Upsert's End and Revoke are the same
//! operations). End is where a soft pin is committed: only by the End that
//! takes the object from zero COMPLETE replicas to at least one (§4.3).

use crate::clock::{saturating_deadline, Instant};
use crate::error::{Error, ErrorKind, Result};
use crate::journal::capture::Ended;
use crate::key;
use crate::master::MasterCore;
use crate::object::{NewRecord, Object};
use crate::soft_pin::state;
use crate::soft_pin::SoftPinIntent;
use crate::types::{ClientId, Key, ReplicaSelector, ReplicaStatus, StartedWrite, WriteConfig};
use smallvec::SmallVec;

/// Request checks shared by PutStart and UpsertStart (before any effect).
pub(crate) fn validate_write(
    core: &MasterCore,
    k: Key<'_>,
    size: u64,
    cfg: &WriteConfig,
) -> Result<SoftPinIntent> {
    k.validate()?;
    if size == 0 {
        return Err(Error::invalid("size must be positive"));
    }
    cfg.check_replica_counts()?;
    let intent = cfg.soft_pin.resolve(&core.config)?;
    if let Some(g) = &cfg.group {
        crate::types::validate_name("group", g)?;
    }
    Ok(intent)
}

pub(crate) struct NewObject {
    pub writer: ClientId,
    pub size: u64,
    pub now: Instant,
    pub hard_pin: bool,
    pub committed: Option<Instant>,
}

impl MasterCore {
    /// Starts a write of a new object (upstream `PutStart`). Returns the
    /// staged replicas and the write's token.
    pub fn put_start(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &WriteConfig,
    ) -> Result<StartedWrite> {
        self.ensure_primary()?;
        let (started, replaced) = self.put_start_locked(client, k, size, cfg)?;
        // The stale write it replaced may have held a pin, which no longer
        // counts: the index keeps its bound (§4.8), once no lock is held.
        if replaced {
            self.settle_pins();
        }
        Ok(started)
    }

    /// PutStart under the key's shard lock; also says whether it replaced a
    /// stale write.
    fn put_start_locked(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &WriteConfig,
    ) -> Result<(StartedWrite, bool)> {
        let intent = validate_write(self, k, size, cfg)?;
        let now = self.clock.now();
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        st.prefetch_insert(hash);
        let mark = st.discarded.len();
        let replace = match st.find(hash, k) {
            Some(obj) if obj.has_complete() => {
                return Err(Error::new(
                    ErrorKind::ObjectAlreadyExists,
                    "object already exists",
                ))
            }
            Some(obj)
                if now
                    <= saturating_deadline(
                        obj.put_start,
                        self.config.put_start_discard_timeout_ms,
                    ) =>
            {
                return Err(Error::new(
                    ErrorKind::ObjectAlreadyExists,
                    "a recent write of this key is still in flight",
                ))
            }
            // Nothing COMPLETE but a task's target (its source went with an
            // unmount): the task, not a stale write, holds the key, and only
            // its End or Revoke ends it.
            Some(obj) if obj.task().is_some() => {
                return Err(Error::new(
                    ErrorKind::ObjectHasReplicationTask,
                    "a copy, move or promotion is running on this key (end or revoke it first)",
                ))
            }
            Some(_) => true,
            None => false,
        };
        self.check_ids_left()?;
        let room = st.reserve_insert()?;
        let replicas = self.allocate_write(hash, size, cfg, &[])?;
        let token = self.new_token();
        let descriptors = replicas.iter().map(|r| r.descriptor(size)).collect();
        // The new object joins its group before a replaced write leaves it:
        // when the stale write is the group's last member, the group (and
        // its shared lease) lives on instead of being dropped and recreated
        // with lease 0.
        let obj = self.new_object(
            k,
            replicas,
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
        // A stale write with nothing COMPLETE is replaced: its buffers are
        // discarded and its deadline dropped (no carry, §4.5).
        if replace {
            self.erase(
                &mut st,
                si,
                hash,
                k,
                Some(saturating_deadline(
                    now,
                    self.config.put_start_release_timeout_ms,
                )),
            );
        }
        let slot = st.insert(room, k.tenant, hash, obj);
        st.in_flight.start(token, slot, Some(intent));
        st.keys += 1;
        if replace {
            self.record_slot(&mut st, slot, mark);
        } else {
            // A new key: nothing before it, nothing discarded; recorded in
            // the compact spelling of its ObjectSet.
            self.record_started(&mut st, slot, intent);
        }
        Ok((
            StartedWrite {
                replicas: descriptors,
                token,
            },
            replace,
        ))
    }

    pub(crate) fn new_object(
        &self,
        k: Key<'_>,
        replicas: crate::object::Replicas,
        token: u64,
        n: NewObject,
        group: Option<&str>,
    ) -> Object {
        let group = group.map(|g| {
            self.groups
                .join(&self.hasher, k.tenant, g, &key::scoped(k), 0)
        });
        Object::new(NewRecord {
            key: k.key,
            size: n.size,
            writer: n.writer,
            put_start: n.now,
            seq: self.new_seq(),
            write_token: token,
            lease: 0,
            committed: n.committed,
            replicas,
            group,
            hard_pin: n.hard_pin,
        })
    }

    /// Completes the targeted replicas of the write in flight (upstream
    /// `PutEnd`). The first End that makes the object readable commits the
    /// write's soft-pin intent; later Ends never refresh it.
    pub fn put_end(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        self.ensure_primary()?;
        let result = self.put_end_locked(client, k, sel, token);
        // The commit may have pushed the index over its bound; its rebuild
        // takes shard locks, so it runs once this End holds none.
        self.settle_index();
        result
    }

    fn put_end_locked(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        k.validate()?;
        let now = self.clock.now();
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let (at, obj, writes) = st
            .find_write_mut(hash, k, si as u32)
            .ok_or_else(Error::not_found)?;
        MasterCore::check_writer(obj, client, token)?;
        if !obj.write_in_flight() {
            // Every replica a write made is COMPLETE by now: an End (a
            // retry, or one naming a kind the write did not place) is an OK
            // no-op unless a replica it selects is not COMPLETE, which can
            // only be a copy's, move's or promotion's target (only its task
            // completes it): INVALID_WRITE, the contract's PutEnd row.
            return match obj
                .replicas
                .iter()
                .find(|r| sel.matches(r.kind) && !r.is_complete())
            {
                None => Ok(()),
                Some(r) => Err(Error::new(
                    ErrorKind::InvalidWrite,
                    format!(
                        "no write in flight, and replica {} it selects is a copy, move or \
                         promotion target that is not COMPLETE",
                        r.id
                    ),
                )),
            };
        }
        let had_complete = obj.has_complete();
        let recording = self.journal.is_some();
        let mut completed = 0usize;
        let mut ids: SmallVec<[u64; 4]> = SmallVec::new();
        for r in obj.replicas.iter_mut() {
            if r.is_write_processing() && sel.matches(r.kind) {
                r.status = ReplicaStatus::Complete;
                completed += 1;
                if recording {
                    ids.push(r.id);
                }
            }
        }
        // Commit rule (§4.3): only the End that takes the object from zero
        // COMPLETE replicas to some commits; pending is then gone, so later
        // and repeated Ends never refresh the deadline.
        let mut commit = None;
        if !had_complete && completed > 0 {
            if let Some(intent) = writes.take_pending(obj.write_token) {
                let (after, delta) = state::commit(obj.committed(), intent, now);
                obj.set_committed(after);
                self.apply_delta(obj, at, delta);
                commit = Some(after);
            }
        }
        crate::object::raise(&obj.lease, now);
        // The write ends when none of its replicas is PROCESSING; its
        // pending intent, if still there, goes with it (pending rule §4.4).
        let write_over = !obj.write_in_flight();
        if write_over {
            writes.end(obj.write_token);
        }
        // An End that completed nothing only raised the lease, which is
        // not recorded (leases are not part of a standby's state). One
        // that did is recorded by what it changed: an End frees nothing.
        if completed > 0 && recording {
            ids.sort_unstable();
            let end = Ended {
                at: now,
                completed: &ids,
                commit,
                write_over,
            };
            self.record_ended(&mut st, at.slot, &end);
        }
        Ok(())
    }

    /// Abandons the targeted PROCESSING replicas of the write in flight
    /// (upstream `PutRevoke`); the object goes when no replica is left.
    pub fn put_revoke(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        self.ensure_primary()?;
        let result = self.put_revoke_locked(client, k, sel, token);
        // An erased object's pin no longer counts (§4.8).
        self.settle_pins();
        result
    }

    fn put_revoke_locked(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        k.validate()?;
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let obj = st.find_mut(hash, k).ok_or_else(Error::not_found)?;
        MasterCore::check_writer(obj, client, token)?;
        if !obj.write_in_flight() {
            return Err(Error::new(
                ErrorKind::InvalidWrite,
                "no write in flight to revoke",
            ));
        }
        if obj.targeted(sel).any(|r| !r.is_write_processing()) {
            return Err(Error::new(
                ErrorKind::InvalidWrite,
                "a targeted replica is not PROCESSING",
            ));
        }
        let (revoked, kept): (crate::object::Replicas, crate::object::Replicas) = obj
            .replicas
            .iter()
            .copied()
            .partition(|r| r.is_write_processing() && sel.matches(r.kind));
        if revoked.is_empty() {
            // The selector names none of the write's replicas: nothing
            // changes, so nothing is recorded (§12.1).
            return Ok(());
        }
        obj.replicas = kept;
        let size = obj.size;
        // Partial revoke keeps pending while another eligible replica can
        // still complete (§4.4): the write, and its pending intent, end only
        // when none is left. Committed state is untouched.
        let (in_flight, empty, token_now) = (
            obj.write_in_flight(),
            obj.replicas.is_empty(),
            obj.write_token,
        );
        self.free_now(&mut st, &revoked, size);
        if !in_flight {
            st.in_flight.end(token_now);
        }
        if empty {
            self.erase(&mut st, si, hash, k, None);
        }
        let mark = st.discarded.len();
        self.record_key(&mut st, hash, k, mark);
        Ok(())
    }
}
