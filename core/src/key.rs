//! Tenant-scoped keys in their owned form, `tenant \0 key` in one
//! allocation (group members, deadline-index registrations, snapshots;
//! object records store a tenant id and the key bytes instead). Tenants are
//! NUL-free, so the first NUL separates the parts and `("a/b","c")` can
//! never equal `("a","b/c")`. Hashing writes the same byte sequence for a
//! borrowed [`Key`] and an owned one, so lookups never allocate.

use crate::types::Key;
use std::hash::{BuildHasher, Hasher};

/// The owned form of a key: `tenant \0 key`.
pub(crate) type ScopedKey = Box<str>;

pub(crate) fn scoped(key: Key<'_>) -> ScopedKey {
    let mut s = String::with_capacity(key.tenant.len() + 1 + key.key.len());
    s.push_str(key.tenant);
    s.push('\0');
    s.push_str(key.key);
    s.into_boxed_str()
}

/// Splits a stored key back into its parts.
pub(crate) fn split(scoped: &str) -> Key<'_> {
    match scoped.split_once('\0') {
        Some((tenant, key)) => Key { tenant, key },
        None => Key {
            tenant: "",
            key: scoped,
        },
    }
}

/// The per-master key hasher: same value for a [`Key`] and its stored
/// form. Its seed is random unless the master's configuration fixes it
/// ([`MasterConfig::seed`](crate::MasterConfig::seed)).
#[derive(Clone)]
pub(crate) struct KeyHasher(foldhash::quality::SeedableRandomState);

impl KeyHasher {
    /// A hasher seeded by `seed`, or randomly for `None`.
    pub(crate) fn new(seed: Option<u64>) -> Self {
        use foldhash::quality::SeedableRandomState;
        KeyHasher(match seed {
            Some(seed) => {
                SeedableRandomState::with_seed(seed, foldhash::SharedSeed::global_fixed())
            }
            None => SeedableRandomState::random(),
        })
    }

    #[inline]
    pub(crate) fn hash(&self, key: Key<'_>) -> u64 {
        self.hash_bytes(key.tenant.as_bytes(), key.key.as_bytes())
    }

    /// [`hash`](Self::hash) of a key given as bytes (a stored record's),
    /// so rehashing a record needs no UTF-8 check of its key.
    #[inline]
    pub(crate) fn hash_bytes(&self, tenant: &[u8], key: &[u8]) -> u64 {
        let mut h = self.0.build_hasher();
        h.write(tenant);
        h.write_u8(0);
        h.write(key);
        h.finish()
    }

    #[inline]
    pub(crate) fn hash_scoped(&self, scoped: &str) -> u64 {
        self.hash(split(scoped))
    }

    /// Hash of a discarded buffer restored from a snapshot, by its segment
    /// and address (a separate domain from keys): the snapshot does not
    /// know the key the buffer came from, and the hash only has to pick
    /// the shard that lists the buffer, the one its block records.
    pub(crate) fn hash_buffer(&self, segment: &str, address: u64) -> u64 {
        let mut h = self.0.build_hasher();
        h.write_u8(2);
        h.write(segment.as_bytes());
        h.write_u8(0);
        h.write_u64(address);
        h.finish()
    }

    /// Hash of a group name within a tenant (a separate domain from keys).
    pub(crate) fn hash_group(&self, tenant: &str, group: &str) -> u64 {
        let mut h = self.0.build_hasher();
        h.write_u8(1);
        h.write(tenant.as_bytes());
        h.write_u8(0);
        h.write(group.as_bytes());
        h.finish()
    }
}

/// Shard of a hash. Uses bits 32..56, which a shard's index
/// (`slot_index.rs`: the low 32 bits) does not use, so all keys of one
/// shard still spread over that shard's table. Those 24 bits are mapped
/// onto `0..shard_count` by multiply-and-shift rather than `%`: as uniform
/// (shard_count <= 2^20), without a 64-bit division on every operation.
#[inline]
pub(crate) fn shard_of(hash: u64, shard_count: usize) -> usize {
    ((((hash >> 32) & 0x00FF_FFFF) * shard_count as u64) >> 24) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_scoped_keys_cannot_collide() {
        let a = scoped(Key::scoped("a/b", "c"));
        let b = scoped(Key::scoped("a", "b/c"));
        assert_ne!(a, b);
        assert_eq!(split(&a), Key::scoped("a/b", "c"));
        assert_eq!(split(&b), Key::scoped("a", "b/c"));
        let h = KeyHasher::new(None);
        assert_eq!(h.hash(Key::scoped("a/b", "c")), h.hash_scoped(&a));
        assert_ne!(
            h.hash(Key::scoped("a/b", "c")),
            h.hash(Key::scoped("a", "b/c"))
        );
    }

    #[test]
    fn shard_of_stays_in_range_and_spreads_evenly() {
        // Every hash maps inside 0..shard_count, for any allowed count, and keys spread.
        let h = KeyHasher::new(None);
        for count in [1usize, 3, 1000, 1024, 1 << 20] {
            for x in [0u64, u64::MAX, 0x00FF_FFFF_0000_0000, 0x0000_0000_FFFF_FFFF] {
                assert!(shard_of(x, count) < count);
            }
        }
        let mut per_shard = [0u32; 16];
        for i in 0..16_000 {
            per_shard[shard_of(h.hash(Key::new(&format!("k{i}"))), 16)] += 1;
        }
        assert!(
            per_shard.iter().all(|&c| (800..1200).contains(&c)),
            "{per_shard:?}"
        );
    }

    #[test]
    fn keys_may_contain_nul_but_tenants_split_first() {
        let s = scoped(Key::scoped("t", "k\0x"));
        assert_eq!(split(&s), Key::scoped("t", "k\0x"));
    }
}
