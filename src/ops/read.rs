//! Reads: GetReplicaList, Exist, key count and key listing. They grant the
//! ordinary read lease and nothing else: they never read, extend,
//! reactivate or normalise soft-pin state (RFC "Read and eviction paths").

use crate::error::{Error, ErrorKind, Result};
use crate::key;
use crate::master::MasterCore;
use crate::types::{Key, ReplicaDescriptor};
use std::sync::atomic::Ordering;

/// One page of a key listing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyPage {
    /// Keys in ascending byte order.
    pub keys: Vec<String>,
    /// Pass as `after` to get the next page; `None` at the end.
    pub next: Option<String>,
}

impl MasterCore {
    /// The readable replicas of a key; grants the read lease.
    pub fn get_replica_list(&self, k: Key<'_>) -> Result<Vec<ReplicaDescriptor>> {
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
        k.validate()?;
        let (hash, si) = self.locate(k);
        let st = self.shards[si].state.read();
        let obj = st.find(hash, k).ok_or_else(Error::not_found)?;
        let before = out.len();
        out.extend(obj.readable().map(|r| r.descriptor(obj.size)));
        if out.len() == before {
            return Err(Error::new(
                ErrorKind::ReplicaIsNotReady,
                "no replica of this object is readable yet",
            ));
        }
        obj.grant_lease(
            self.clock
                .now()
                .saturating_add(self.config.default_kv_lease_ttl_ms),
        );
        Ok(())
    }

    /// Whether a key has a readable replica; grants the read lease if so.
    pub fn exist(&self, k: Key<'_>) -> Result<bool> {
        k.validate()?;
        let (hash, si) = self.locate(k);
        let st = self.shards[si].state.read();
        match st.find(hash, k) {
            Some(obj) if obj.has_complete() => {
                obj.grant_lease(
                    self.clock
                        .now()
                        .saturating_add(self.config.default_kv_lease_ttl_ms),
                );
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Number of objects (all tenants).
    pub fn key_count(&self) -> u64 {
        self.metrics.keys.load(Ordering::Relaxed).max(0) as u64
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
        crate::types::validate_name("tenant", tenant)?;
        let mut keys: Vec<String> = Vec::new();
        for shard in self.shards.iter() {
            let st = shard.state.read();
            for obj in st.objects.iter() {
                let k = key::split(&obj.key);
                if k.tenant == tenant
                    && k.key.starts_with(prefix)
                    && after.is_none_or(|a| k.key > a)
                {
                    keys.push(k.key.to_owned());
                }
            }
        }
        keys.sort_unstable();
        let next = if limit > 0 && keys.len() > limit {
            keys.truncate(limit);
            keys.last().cloned()
        } else {
            None
        };
        Ok(KeyPage { keys, next })
    }
}
