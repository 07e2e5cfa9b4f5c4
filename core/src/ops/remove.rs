//! Removal: Remove(key, force), RemoveAll and RemoveByRegex. Soft and hard
//! pins never block removal (docs/CONTRACT.md §3, Remove); a live lease blocks it unless
//! forced.

use crate::clock::Instant;
use crate::error::{Error, ErrorKind, Result};
use crate::key;
use crate::master::MasterCore;
use crate::object::Object;
use crate::shard::ShardState;
use crate::types::Key;

/// Largest compiled pattern accepted by RemoveByRegex.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Longest pattern RemoveByRegex parses. The compiled size limit is checked
/// only after the whole pattern is parsed and translated, which for a long
/// pattern of wide classes (`\pL` is ~680 ranges) takes memory many times
/// its length; a key pattern longer than this is not a key pattern.
pub const MAX_PATTERN_BYTES: usize = 4096;

/// The checks of Remove after OBJECT_NOT_FOUND, in order
/// (docs/CONTRACT.md section 3): a replica not COMPLETE, a write's or a
/// copy/move/promotion target (REPLICA_IS_NOT_READY), then a task whose
/// replicas are all COMPLETE, its targets gone with an unmount
/// (OBJECT_HAS_REPLICATION_TASK), and only then, for a non-forced removal,
/// a live lease. Neither of the first two can be forced.
fn removable(obj: &Object, now: u64, force: bool) -> Result<()> {
    if obj.replicas.iter().any(|r| !r.is_complete()) {
        return Err(Error::new(
            ErrorKind::ReplicaIsNotReady,
            if obj.write_in_flight() {
                "a replica of this object's write in flight is not COMPLETE"
            } else {
                "a replica of this object (a copy, move or promotion target) is not COMPLETE"
            },
        ));
    }
    if obj.task().is_some() {
        return Err(Error::new(
            ErrorKind::ObjectHasReplicationTask,
            "a copy, move or promotion is running on this key",
        ));
    }
    if !force && obj.lease_live(now) {
        return Err(Error::new(
            ErrorKind::ObjectHasLease,
            "the object's read lease is live",
        ));
    }
    Ok(())
}

impl MasterCore {
    /// Removes one object; buffers are freed at once.
    pub fn remove(&self, k: Key<'_>, force: bool) -> Result<()> {
        self.ensure_primary()?;
        k.validate()?;
        let now = self.clock.now();
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let (obj, had_pin) = self.remove_in(&mut st, si, hash, k, now, force)?;
        drop(st);
        // The object's own allocations are freed outside the shard lock.
        drop(obj);
        // A pin it held no longer counts: the index keeps its bound (§4.8).
        // Only then: the check reads index lines a random Remove has let
        // go of, ~5 % of it.
        if had_pin {
            self.settle_pins();
        }
        Ok(())
    }

    /// Remove of a validated key under its shard's write lock (`st` is
    /// shard `si`): returns the object taken out, for the caller to drop
    /// after releasing the lock, and whether it held a soft pin. Shared
    /// with the batch form.
    pub(super) fn remove_in(
        &self,
        st: &mut ShardState,
        si: usize,
        hash: u64,
        k: Key<'_>,
        now: Instant,
        force: bool,
    ) -> Result<(Object, bool)> {
        let obj = st
            .take_if(hash, k, |o| removable(o, now, force))?
            .ok_or_else(Error::not_found)?;
        let had_pin = obj.committed().is_some();
        self.retire(st, si, &obj, k, None);
        let mark = st.discarded.len();
        self.record_key(st, hash, k, mark);
        Ok((obj, had_pin))
    }

    /// Removes every removable object; returns how many went.
    pub fn remove_all(&self, force: bool) -> u64 {
        if self.is_standby() {
            return 0;
        }
        self.remove_matching(force, None, |_| true)
    }

    /// Removes the removable objects whose key (in `tenant`, or any tenant
    /// when `None`) matches `pattern` anywhere (anchor it with `^…$` for a
    /// full match). A bad or oversized pattern is `INVALID_PARAMS`.
    pub fn remove_by_regex(&self, tenant: Option<&str>, pattern: &str, force: bool) -> Result<u64> {
        self.ensure_primary()?;
        if let Some(t) = tenant {
            crate::types::validate_name("tenant", t)?;
        }
        if pattern.len() > MAX_PATTERN_BYTES {
            return Err(Error::invalid(format!(
                "pattern of {} bytes: at most {MAX_PATTERN_BYTES}",
                pattern.len()
            )));
        }
        let re = regex::RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| Error::invalid(format!("bad pattern: {e}")))?;
        Ok(self.remove_matching(force, tenant, |key| re.is_match(key)))
    }

    /// Removes the removable objects of `tenant` (every tenant for `None`)
    /// whose key satisfies `pred`. Each shard is read under its read lock,
    /// `pred` included (a pattern's match may take a while), skipping a
    /// shard that holds no key of the tenant; then, under the write lock,
    /// each object found is removed if it is still the same record (its
    /// creation sequence) and still removable.
    fn remove_matching(
        &self,
        force: bool,
        tenant: Option<&str>,
        pred: impl Fn(&str) -> bool,
    ) -> u64 {
        let mut removed = 0;
        for (si, shard) in self.shards.iter().enumerate() {
            let victims: Vec<(u64, u64, Box<str>)> = {
                let st = shard.state.read();
                let id = match tenant {
                    Some(t) => match st.tenant_id(t) {
                        Some(id) => Some(id),
                        None => continue,
                    },
                    None => None,
                };
                let now = self.clock.now();
                st.iter()
                    .filter(|o| {
                        id.is_none_or(|id| o.in_tenant(id))
                            && removable(o, now, force).is_ok()
                            && pred(o.key_str())
                    })
                    .map(|o| (st.hash_of(o), o.seq, key::scoped(st.key_of(o))))
                    .collect()
            };
            if victims.is_empty() {
                continue;
            }
            let mut st = shard.state.write();
            let now = self.clock.now();
            for (hash, seq, scoped) in victims {
                let k = key::split(&scoped);
                let still = st
                    .find(hash, k)
                    .is_some_and(|o| o.seq == seq && removable(o, now, force).is_ok());
                if !still {
                    continue;
                }
                self.erase(&mut st, si, hash, k, None);
                let mark = st.discarded.len();
                self.record_key(&mut st, hash, k, mark);
                removed += 1;
            }
        }
        self.settle_pins();
        removed
    }
}
