//! Reads: GetReplicaList, Exist, key count and key listing. They grant the
//! ordinary read lease and nothing else: they never read, extend,
//! reactivate or normalise soft-pin state (docs/CONTRACT.md §4.6).

use crate::clock::Instant;
use crate::error::{Error, ErrorKind, Result};
use crate::master::MasterCore;
use crate::object::Object;
use crate::types::{Key, ReplicaDescriptor};

/// The outcome of a read or write into a caller's fixed-size array (the C
/// ABI's BUFFER_TOO_SMALL convention): either the result, or how many
/// entries it needs, decided before any side effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounded<T> {
    Fits(T),
    TooSmall(usize),
}

/// One page of a key listing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyPage {
    /// Keys in ascending byte order.
    pub keys: Vec<String>,
    /// Pass as `after` to get the next page; `None` at the end.
    pub next: Option<String>,
}

fn not_ready() -> Error {
    Error::new(
        ErrorKind::ReplicaIsNotReady,
        "no replica of this object is readable yet",
    )
}

/// How many replicas of the object a lookup found are readable (0 when
/// missing).
#[inline]
pub(super) fn readable_in(found: Option<&Object>) -> usize {
    found.map_or(0, |obj| obj.readable().count())
}

impl MasterCore {
    /// The readable replicas of a key; grants the read lease.
    pub fn get_replica_list(&self, k: Key<'_>) -> Result<Vec<ReplicaDescriptor>> {
        self.ensure_primary()?;
        let mut out = Vec::with_capacity(1);
        self.get_replica_list_into(k, &mut out)?;
        Ok(out)
    }

    /// As [`get_replica_list`](Self::get_replica_list), appending to `out`
    /// (no allocation when `out` has room).
    pub fn get_replica_list_into(
        &self,
        k: Key<'_>,
        out: &mut Vec<ReplicaDescriptor>,
    ) -> Result<()> {
        self.ensure_primary()?;
        k.validate()?;
        let (hash, si) = self.locate(k);
        let st = self.shards[si].state.read();
        self.read_into(st.find(hash, k), || self.clock.now(), out)
    }

    /// GetReplicaList on the object a lookup found (`None`: missing), with
    /// its shard lock held: the single and the batch form share it, so they
    /// cannot disagree.
    pub(super) fn read_into(
        &self,
        found: Option<&Object>,
        now: impl FnOnce() -> Instant,
        out: &mut Vec<ReplicaDescriptor>,
    ) -> Result<()> {
        let obj = found.ok_or_else(Error::not_found)?;
        let before = out.len();
        out.extend(obj.readable().map(|r| r.descriptor(obj.size)));
        if out.len() == before {
            return Err(not_ready());
        }
        obj.grant_lease(now(), self.config.default_kv_lease_ttl_ms);
        Ok(())
    }

    /// As [`get_replica_list`](Self::get_replica_list) when at most `max`
    /// replicas are readable; otherwise `TooSmall(count)` and no lease.
    pub fn get_replica_list_bounded(
        &self,
        k: Key<'_>,
        max: usize,
    ) -> Result<Bounded<Vec<ReplicaDescriptor>>> {
        self.ensure_primary()?;
        k.validate()?;
        let (hash, si) = self.locate(k);
        let st = self.shards[si].state.read();
        self.read_bounded(st.find(hash, k), max, || self.clock.now())
    }

    /// [`get_replica_list_bounded`](Self::get_replica_list_bounded) on the
    /// object a lookup found, with its shard lock held (shared with the
    /// batch form).
    pub(super) fn read_bounded(
        &self,
        found: Option<&Object>,
        max: usize,
        now: impl FnOnce() -> Instant,
    ) -> Result<Bounded<Vec<ReplicaDescriptor>>> {
        let obj = found.ok_or_else(Error::not_found)?;
        let readable = obj.readable().count();
        if readable == 0 {
            return Err(not_ready());
        }
        if readable > max {
            return Ok(Bounded::TooSmall(readable));
        }
        let out = obj.readable().map(|r| r.descriptor(obj.size)).collect();
        obj.grant_lease(now(), self.config.default_kv_lease_ttl_ms);
        Ok(Bounded::Fits(out))
    }

    /// How many replicas of a key are readable now (0 when the key is
    /// missing); grants nothing.
    pub fn readable_count(&self, k: Key<'_>) -> usize {
        if self.is_standby() {
            return 0;
        }
        if k.validate().is_err() {
            return 0;
        }
        let (hash, si) = self.locate(k);
        let st = self.shards[si].state.read();
        readable_in(st.find(hash, k))
    }

    /// Whether a key has a readable replica; grants the read lease if so.
    pub fn exist(&self, k: Key<'_>) -> Result<bool> {
        self.ensure_primary()?;
        k.validate()?;
        let (hash, si) = self.locate(k);
        let st = self.shards[si].state.read();
        Ok(self.exist_in(st.find(hash, k), || self.clock.now()))
    }

    /// Exist on the object a lookup found, with its shard lock held (shared
    /// with the batch form).
    #[inline]
    pub(super) fn exist_in(&self, found: Option<&Object>, now: impl FnOnce() -> Instant) -> bool {
        match found {
            Some(obj) if obj.has_complete() => {
                obj.grant_lease(now(), self.config.default_kv_lease_ttl_ms);
                true
            }
            _ => false,
        }
    }

    /// Number of objects (all tenants).
    pub fn key_count(&self) -> u64 {
        self.shard_gauges().keys.max(0) as u64
    }

    /// Lists keys of `tenant` starting with `prefix`, strictly after `after`,
    /// at most `limit` (0 = no limit), in ascending order.
    pub fn list_keys(
        &self,
        tenant: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<KeyPage> {
        self.ensure_primary()?;
        crate::types::validate_name("tenant", tenant)?;
        // A page of `limit` keys keeps the `limit + 1` smallest matches
        // (one more says whether a next page exists) in a max-heap, so a
        // page costs memory for what it returns, not for every key after
        // the cursor; a key is copied only if it beats the largest kept.
        let keep = if limit == 0 {
            usize::MAX
        } else {
            limit.saturating_add(1)
        };
        let mut kept: std::collections::BinaryHeap<String> = std::collections::BinaryHeap::new();
        for shard in self.shards.iter() {
            let st = shard.state.read();
            // Records compare as tenant id and key bytes (str order is byte
            // order); only the keys kept are turned back into strings.
            let Some(id) = st.tenant_id(tenant) else {
                continue;
            };
            for obj in st.iter() {
                let k = obj.key_bytes();
                if !(obj.in_tenant(id)
                    && k.starts_with(prefix.as_bytes())
                    && after.is_none_or(|a| k > a.as_bytes()))
                {
                    continue;
                }
                if kept.len() < keep {
                    kept.push(obj.key_str().to_owned());
                } else if kept.peek().is_some_and(|top| k < top.as_bytes()) {
                    kept.pop();
                    kept.push(obj.key_str().to_owned());
                }
            }
        }
        let mut keys = kept.into_sorted_vec();
        let next = if limit > 0 && keys.len() > limit {
            keys.truncate(limit);
            keys.last().cloned()
        } else {
            None
        };
        Ok(KeyPage { keys, next })
    }
}
