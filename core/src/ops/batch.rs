//! Batch forms. A bad shared request (soft-pin request, mismatched array
//! lengths) fails every key with INVALID_PARAMS and changes nothing;
//! otherwise every key gets the result its single call would have had, in
//! input order, and a repeated key sees the earlier entry's effect.
//!
//! Exist, GetReplicaList and Remove work in chunks of [`CHUNK`] keys: every
//! key of a chunk is hashed first, the chunk's shards are locked once each
//! in ascending index order (the lock order of `master.rs`), the cache is
//! warmed for all the chunk's lookups in passes of independent loads (see
//! [`warm`]), every key is looked up, and only then are the results made
//! (leases granted, objects removed) in input order. So the cache misses of
//! a chunk's keys overlap instead of forming one chain per key, and no
//! atomic update (which orders the loads around it) sits between them.

use super::put::validate_write;
use super::read::readable_in;
use super::read::Bounded;
use crate::error::{Error, Result};
use crate::master::MasterCore;
use crate::object::Object;
use crate::shard::ShardState;
use crate::types::{ClientId, Key, ReplicaDescriptor, ReplicaSelector, StartedWrite, WriteConfig};
use smallvec::SmallVec;

/// Keys a batch locks and resolves at once. Bounds how long a batch holds
/// its shard locks (one chunk's work, a few microseconds) however many keys
/// it has, and sizes the per-chunk arrays, which live on the stack.
const CHUNK: usize = 64;

/// One chunk, hashed and sorted: the shards it touches (ascending, each
/// once) and, for each key, its hash and the position of its shard in that
/// list. Invalid keys get no shard; their error is kept for their result.
struct Plan {
    hash: [u64; CHUNK],
    slot: [u8; CHUNK],
    shards: SmallVec<[usize; CHUNK]>,
    /// Positions of the valid keys, in input order.
    live: SmallVec<[u8; CHUNK]>,
    /// Errors of the invalid keys, in input order.
    invalid: SmallVec<[(u8, Error); 2]>,
}

impl Plan {
    /// The result of the key at `j` when it is invalid.
    fn invalid_at(&self, j: usize) -> Option<&Error> {
        self.invalid
            .iter()
            .find(|(at, _)| usize::from(*at) == j)
            .map(|(_, e)| e)
    }
}

/// Warms the cache for the lookups of a chunk's valid keys in passes that
/// wait for nothing: the index bucket of every key is prefetched, then each
/// bucket (arrived or on its way) is read and its candidate record's lines
/// prefetched (`memory.rs`). Each lookup alone is a chain of two cache misses (bucket, record); done
/// this way the misses of all keys of a pass are in flight together.
/// Returns nothing: it only makes the lookups that follow hit the cache.
fn warm(plan: &Plan, states: &[&ShardState]) {
    for &j in &plan.live {
        let j = usize::from(j);
        states[usize::from(plan.slot[j])].prefetch_bucket(plan.hash[j]);
    }
    for &j in &plan.live {
        let j = usize::from(j);
        states[usize::from(plan.slot[j])].prefetch_candidate(plan.hash[j]);
    }
}

/// Finds every valid key of a chunk in the shard states its plan locked
/// (`states[slot]`), after [`warm`]ing the cache: `found[j]` is key `j`'s
/// object (`None`: missing or invalid). No lease is granted here: an atomic
/// update orders the loads around it, which would take the misses of the
/// following keys one at a time.
fn resolve<'s>(
    plan: &Plan,
    keys: &[Key<'_>],
    states: &[&'s ShardState],
    found: &mut [Option<&'s Object>; CHUNK],
) {
    warm(plan, states);
    for &j in &plan.live {
        let j = usize::from(j);
        found[j] = states[usize::from(plan.slot[j])].find(plan.hash[j], keys[j]);
    }
}

const _: () = assert!(CHUNK <= 256, "positions and slots are u8");

fn all_fail<T>(n: usize, e: Error) -> Vec<Result<T>> {
    (0..n).map(|_| Err(e.clone())).collect()
}

fn check_tokens(keys: usize, tokens: Option<&[u64]>) -> Result<()> {
    match tokens {
        Some(t) if t.len() != keys => Err(Error::invalid(format!(
            "{} tokens for {keys} keys",
            t.len()
        ))),
        _ => Ok(()),
    }
}

/// Token `i` of a batch; 0 means "no token" (as in C).
fn token_at(tokens: Option<&[u64]>, i: usize) -> Option<u64> {
    tokens.map(|t| t[i]).filter(|&t| t != 0)
}

impl MasterCore {
    fn batch_start(
        &self,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
        one: impl Fn(Key<'_>, u64) -> Result<StartedWrite>,
    ) -> Vec<Result<StartedWrite>> {
        if keys.len() != sizes.len() {
            let e = Error::invalid(format!("{} keys but {} sizes", keys.len(), sizes.len()));
            return all_fail(keys.len(), e);
        }
        if let Err(e) = cfg
            .check_replica_counts()
            .and_then(|()| cfg.soft_pin.resolve(&self.config).map(|_| ()))
        {
            return all_fail(keys.len(), e);
        }
        keys.iter().zip(sizes).map(|(k, &s)| one(*k, s)).collect()
    }

    /// PutStart for each key with one shared configuration.
    pub fn batch_put_start(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
    ) -> Vec<Result<StartedWrite>> {
        if let Some(r) = self.reject_batch(keys.len()) {
            return r;
        }
        self.batch_start(keys, sizes, cfg, |k, s| self.put_start(client, k, s, cfg))
    }

    /// UpsertStart for each key with one shared configuration.
    pub fn batch_upsert_start(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
    ) -> Vec<Result<StartedWrite>> {
        if let Some(r) = self.reject_batch(keys.len()) {
            return r;
        }
        self.batch_start(keys, sizes, cfg, |k, s| {
            self.upsert_start(client, k, s, cfg)
        })
    }

    /// PutEnd (= UpsertEnd) for each key; `tokens[i] == 0` means no token.
    pub fn batch_put_end(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sel: ReplicaSelector,
        tokens: Option<&[u64]>,
    ) -> Vec<Result<()>> {
        if let Some(r) = self.reject_batch(keys.len()) {
            return r;
        }
        if let Err(e) = check_tokens(keys.len(), tokens) {
            return all_fail(keys.len(), e);
        }
        keys.iter()
            .enumerate()
            .map(|(i, k)| self.put_end(client, *k, sel, token_at(tokens, i)))
            .collect()
    }

    /// PutRevoke (= UpsertRevoke) for each key; `tokens[i] == 0` means no token.
    pub fn batch_put_revoke(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sel: ReplicaSelector,
        tokens: Option<&[u64]>,
    ) -> Vec<Result<()>> {
        if let Some(r) = self.reject_batch(keys.len()) {
            return r;
        }
        if let Err(e) = check_tokens(keys.len(), tokens) {
            return all_fail(keys.len(), e);
        }
        keys.iter()
            .enumerate()
            .map(|(i, k)| self.put_revoke(client, *k, sel, token_at(tokens, i)))
            .collect()
    }

    /// GetReplicaList for each key (each that succeeds gets its lease).
    pub fn batch_get_replica_list(&self, keys: &[Key<'_>]) -> Vec<Result<Vec<ReplicaDescriptor>>> {
        if let Some(r) = self.reject_batch(keys.len()) {
            return r;
        }
        self.batch_read(keys, |found, now| {
            let mut out = Vec::with_capacity(1);
            self.read_into(found, || now, &mut out).map(|()| out)
        })
    }

    /// GetReplicaList for each key into a shared capacity of `cap`
    /// replicas, as the loop of
    /// [`get_replica_list_bounded`](Self::get_replica_list_bounded) over
    /// the keys in order, each given what the keys before it left:
    /// `cap` minus the replicas of the earlier keys that fitted. A key that
    /// does not fit is `TooSmall(its count)` and gets no lease.
    pub fn batch_get_replica_list_bounded(
        &self,
        keys: &[Key<'_>],
        cap: usize,
    ) -> Vec<Result<Bounded<Vec<ReplicaDescriptor>>>> {
        if let Some(r) = self.reject_batch(keys.len()) {
            return r;
        }
        let mut left = cap;
        self.batch_read(keys, |found, now| {
            let r = self.read_bounded(found, left, || now);
            if let Ok(Bounded::Fits(v)) = &r {
                left -= v.len();
            }
            r
        })
    }

    /// [`readable_count`](Self::readable_count) for each key (0 for a
    /// missing or invalid key); grants nothing.
    pub fn batch_readable_count(&self, keys: &[Key<'_>]) -> Vec<usize> {
        if self.is_standby() {
            return vec![0; keys.len()];
        }
        self.batch_read(keys, |found, _| Ok(readable_in(found)))
            .into_iter()
            .map(|r| r.unwrap_or(0))
            .collect()
    }

    /// Exist for each key (each that has a readable replica gets its lease).
    pub fn batch_exist(&self, keys: &[Key<'_>]) -> Vec<Result<bool>> {
        if let Some(r) = self.reject_batch(keys.len()) {
            return r;
        }
        self.batch_read(keys, |found, now| Ok(self.exist_in(found, || now)))
    }

    /// The read batches: per chunk, every valid key is resolved under its
    /// shard's read lock (all of the chunk's shards held, ascending), then
    /// `each(found, now)` runs for the keys in input order, still under
    /// those locks, with the instant read once for the chunk. Leases are
    /// granted in that second pass, so the atomic updates do not sit between
    /// the loads of the first. An invalid key gets its validation error.
    fn batch_read<T>(
        &self,
        keys: &[Key<'_>],
        mut each: impl FnMut(Option<&Object>, crate::clock::Instant) -> Result<T>,
    ) -> Vec<Result<T>> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(CHUNK) {
            let plan = self.plan(chunk);
            let guards: SmallVec<[_; CHUNK]> = plan
                .shards
                .iter()
                .map(|&si| self.shards[si].state.read())
                .collect();
            let states: SmallVec<[&ShardState; CHUNK]> = guards.iter().map(|g| &**g).collect();
            let mut found = [None; CHUNK];
            resolve(&plan, chunk, &states, &mut found);
            let now = self.clock.now();
            for (j, f) in found.iter().take(chunk.len()).enumerate() {
                out.push(match plan.invalid_at(j) {
                    Some(e) => Err(e.clone()),
                    None => each(*f, now),
                });
            }
        }
        out
    }

    /// Remove for each key. Per chunk, the chunk's shards are write-locked
    /// together (ascending) and the keys removed in input order, so a
    /// repeated key finds itself gone; the objects taken out are dropped
    /// after the locks are released.
    pub fn batch_remove(&self, keys: &[Key<'_>], force: bool) -> Vec<Result<()>> {
        if let Some(r) = self.reject_batch(keys.len()) {
            return r;
        }
        let mut out = Vec::with_capacity(keys.len());
        let mut taken: Vec<Object> = Vec::new();
        for chunk in keys.chunks(CHUNK) {
            let plan = self.plan(chunk);
            let now = self.clock.now();
            let mut guards: SmallVec<[_; CHUNK]> = plan
                .shards
                .iter()
                .map(|&si| self.shards[si].state.write())
                .collect();
            // Warm the cache for every key first, without effects: the
            // removals below (atomic updates, allocator locks) then find
            // their objects in cache. Removing an entry moves no other, so
            // the lines stay those the removals use.
            {
                let states: SmallVec<[&ShardState; CHUNK]> = guards.iter().map(|g| &**g).collect();
                warm(&plan, &states);
                Self::warm_removals(&plan, chunk, &states);
            }
            for (j, k) in chunk.iter().enumerate() {
                if let Some(e) = plan.invalid_at(j) {
                    out.push(Err(e.clone()));
                    continue;
                }
                let g = usize::from(plan.slot[j]);
                let r =
                    self.remove_in(&mut guards[g], plan.shards[g], plan.hash[j], *k, now, force);
                out.push(r.map(|(obj, _)| taken.push(obj)));
            }
            drop(guards);
            // The objects' own allocations are freed outside the shard locks.
            taken.clear();
        }
        self.settle_pins();
        out
    }

    /// The third warming pass of a batch Remove, after [`warm`]: each key's
    /// record found (its lines are in the cache or on their way) and the
    /// arena line its removal writes started loading. (The buffers' frees
    /// are merged in groups by their allocators, which load what those
    /// touch together: `OffsetAllocator::free_later`.)
    fn warm_removals(plan: &Plan, chunk: &[Key<'_>], states: &[&ShardState]) {
        for &j in &plan.live {
            let j = usize::from(j);
            let st = states[usize::from(plan.slot[j])];
            if let Some(slot) = st.slot_of_key(plan.hash[j], chunk[j]) {
                st.prefetch_removal(slot);
            }
        }
    }

    /// Hashes a chunk of at most [`CHUNK`] keys and sorts them by shard.
    fn plan(&self, chunk: &[Key<'_>]) -> Plan {
        debug_assert!(chunk.len() <= CHUNK);
        let mut plan = Plan {
            hash: [0; CHUNK],
            slot: [0; CHUNK],
            shards: SmallVec::new(),
            live: SmallVec::new(),
            invalid: SmallVec::new(),
        };
        // (shard << 8 | position): sorting orders by shard, then input order.
        let mut order: SmallVec<[u64; CHUNK]> = SmallVec::new();
        for (j, k) in chunk.iter().enumerate() {
            // `j < CHUNK <= 256`, so the position fits a u8.
            let at = j as u8;
            match k.validate() {
                Ok(()) => {
                    let (hash, si) = self.locate(*k);
                    // The shard's lock word and the state a lookup starts
                    // from (index and arena headers): on their way while
                    // the rest of the chunk is hashed, so taking the locks
                    // below does not wait for one miss after another.
                    crate::memory::prefetch_all(&self.shards[si]);
                    plan.hash[j] = hash;
                    plan.live.push(at);
                    order.push((si as u64) << 8 | u64::from(at));
                }
                Err(e) => plan.invalid.push((at, e)),
            }
        }
        order.sort_unstable();
        for o in order {
            let si = (o >> 8) as usize;
            if plan.shards.last() != Some(&si) {
                plan.shards.push(si);
            }
            // At most CHUNK distinct shards, so the slot fits a u8.
            plan.slot[(o & 0xFF) as usize] = (plan.shards.len() - 1) as u8;
        }
        plan
    }

    /// Validates a write request exactly as a Start would, without effects.
    pub fn validate_write_request(&self, k: Key<'_>, size: u64, cfg: &WriteConfig) -> Result<()> {
        self.ensure_primary()?;
        validate_write(self, k, size, cfg).map(|_| ())
    }
}
