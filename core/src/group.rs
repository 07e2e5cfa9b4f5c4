//! Groups: a shared read lease and the membership used by all-or-none
//! eviction. They live in their own domain, sharded by `hash(tenant, group)`,
//! and do not change key routing. A grouped read raises the group's lease
//! through the `Arc` the object holds: O(1), no other lock.

use crate::key::{KeyHasher, ScopedKey};
use hashbrown::HashMap;
use parking_lot::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub(crate) struct Group {
    /// `tenant \0 name`.
    pub id: ScopedKey,
    /// Shared lease: every member is protected while it is live.
    pub lease: AtomicU64,
    /// Scoped keys of the members.
    pub members: Mutex<Members>,
}

/// A group's members: each scoped key with how many records of the group
/// carry it (two for a moment while a write that replaces a stale one of
/// the same key joins before the stale one leaves). A member leaves in
/// O(1), so erasing a group of n members costs O(n), not O(n²).
#[derive(Default)]
pub(crate) struct Members(HashMap<ScopedKey, u32>);

impl Members {
    pub fn join(&mut self, member: ScopedKey) {
        *self.0.entry(member).or_insert(0) += 1;
    }

    /// One record of `member` leaves (nothing if it is not a member).
    pub fn leave(&mut self, member: &str) {
        if let Some(n) = self.0.get_mut(member) {
            *n -= 1;
            if *n == 0 {
                self.0.remove(member);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The members' scoped keys, each once, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &ScopedKey> + '_ {
        self.0.keys()
    }
}

impl Group {
    pub fn name(&self) -> &str {
        crate::key::split(&self.id).key
    }
}

/// The group domain. Lock order: after the metadata shards, before the
/// segment table.
pub(crate) struct Groups {
    shards: Vec<Mutex<HashMap<ScopedKey, Arc<Group>>>>,
}

impl Groups {
    pub fn new(count: usize) -> Self {
        Groups {
            shards: (0..count.max(1))
                .map(|_| Mutex::new(HashMap::new()))
                .collect(),
        }
    }

    fn shard(
        &self,
        hasher: &KeyHasher,
        tenant: &str,
        name: &str,
    ) -> &Mutex<HashMap<ScopedKey, Arc<Group>>> {
        let h = hasher.hash_group(tenant, name);
        &self.shards[(h as usize) % self.shards.len()]
    }

    /// Adds `member` to the group, creating it (with `lease`) if absent.
    pub fn join(
        &self,
        hasher: &KeyHasher,
        tenant: &str,
        name: &str,
        member: &str,
        lease: u64,
    ) -> Arc<Group> {
        let mut shard = self.shard(hasher, tenant, name).lock();
        let id = crate::key::scoped(crate::types::Key::scoped(tenant, name));
        let g = shard
            .entry(id.clone())
            .or_insert_with(|| {
                Arc::new(Group {
                    id,
                    lease: AtomicU64::new(lease),
                    members: Mutex::new(Members::default()),
                })
            })
            .clone();
        g.members.lock().join(member.into());
        g
    }

    /// Removes `member`; drops the group when it has no member left.
    pub fn leave(&self, hasher: &KeyHasher, group: &Group, member: &str) {
        let parts = crate::key::split(&group.id);
        let mut shard = self.shard(hasher, parts.tenant, parts.key).lock();
        let mut members = group.members.lock();
        members.leave(member);
        if members.is_empty() {
            shard.remove(&group.id);
        }
    }

    pub fn clear(&self) {
        for s in &self.shards {
            s.lock().clear();
        }
    }

    /// Installs restored groups (restore holds every shard lock).
    pub fn install(&self, hasher: &KeyHasher, groups: Vec<Arc<Group>>) {
        self.clear();
        for g in groups {
            let parts = crate::key::split(&g.id);
            let mut shard = self.shard(hasher, parts.tenant, parts.key).lock();
            shard.insert(g.id.clone(), g);
        }
    }
}
