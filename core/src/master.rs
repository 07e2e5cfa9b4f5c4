//! The metadata master: state, lock order and the helpers every operation
//! shares. Operations live in `ops/`, eviction, cleanup and snapshots in
//! their own modules; all are `impl MasterCore` blocks.
//!
//! # Lock order
//!
//! Locks are always taken in this order, never backwards:
//!
//! 0. the quiesce gate (`quiesce.rs`: the maintenance thread around a tick,
//!    a test holding a guard) — held with no other lock;
//!    then the role's apply mutex (`standby.rs`: a journal apply, a
//!    restore, a promote, a standby's capture), then `segment_changes` (a
//!    mount, an unmount; with the journal on, a restore and a capture too);
//! 1. metadata shard locks, several only in ascending index order;
//! 2. the group domain (a group-shard mutex, then a group's member list),
//!    then the group-retention registry (`retention.rs`);
//! 3. the segment table `RwLock`;
//! 4. one segment's allocator mutex;
//! 5. a deadline-index mutex (the objects' or the retention index's) — last: nothing is acquired while it is held,
//!    and cleanup releases it before it takes any shard lock. The journal's
//!    lock (a spin lock, `memory::SpinLock`) sits at this level too, never
//!    held with an index mutex: records are appended under the lock(s) of
//!    the change they record.
//!
//! The read path (Get/Exist) takes one shard read lock (a batch: the read
//! locks of one chunk's shards, ascending) and touches only atomics
//! (lease); it never reads or writes soft-pin state. Batch Remove holds the
//! write locks of one chunk's shards, ascending, while it removes.
//!
//! # Restore and background work
//!
//! A restore installs a new state while it holds every shard write lock
//! (`snapshot/restore.rs`), and in that critical section the state
//! [`generation`](MasterCore::generation) moves on. Cleanup and eviction
//! gather their work without shard locks (due index entries, eviction
//! candidates and group member lists), so each captures the generation the
//! work came from and, under the shard lock where it acts, drops the work
//! if the generation moved: nothing planned on a replaced state ever touches
//! the restored one. Every gauge change is made under the shard lock of the
//! state change it accounts for, so a restore, which sets the gauges from
//! the state it installs, never sees half of one.
//!
//! # Nothing master-wide on a per-key path
//!
//! The gauges a put or remove moves (keys, soft-pin keys, discarded bytes)
//! are kept per shard ([`ShardState::keys`], [`ShardState::discarded_bytes`],
//! [`Shard::soft_pin_keys`]) and summed when read (`metrics.rs`), and the
//! shard locks are cache-line padded, so two writers on different shards
//! share no written line but the id counters below. Those stay master-wide:
//! the exact replica-id, write-token and creation-sequence counters are
//! persisted in every snapshot (docs/CONTRACT.md §6), a rejected write gives
//! its replica ids back so it leaves them unchanged (§3), and the creation
//! sequence orders eviction across shards (§5); per-shard id blocks would
//! change what a snapshot records.

use crate::clock::{Clock, Instant, MAX_INSTANT};
use crate::config::MasterConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::group::Groups;
use crate::journal::Journal;
use crate::key::{self, KeyHasher};
use crate::maintenance::{Maintenance, Wakeup};
use crate::memory::Region;
use crate::metrics::Metrics;
use crate::object::{Object, Replica, Replicas, Role};
use crate::object_ref::ObjectRef;
use crate::quiesce::Quiesce;
use crate::segment::{BlockId, BufferOwner, SegmentTable};
use crate::shard::{Discarded, PendingFree, Shard, ShardState};
use crate::soft_pin::index::{DeadlineIndex, Entry, PinTarget};
use crate::soft_pin::state::{Delta, IndexOp};
use crate::types::{ClientId, Key, Pool, ReplicaStatus, SegmentId, WriteConfig};
use parking_lot::{Mutex, RwLock};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// A metadata master. Dropping it stops its maintenance thread promptly.
///
/// All operations are `&self` and may be called from any number of threads
/// (`Master: Send + Sync`); see [`MasterCore`] for the operations.
pub struct Master {
    core: Arc<MasterCore>,
    maintenance: Option<Maintenance>,
}

impl Master {
    /// Builds a master; fails with `INVALID_PARAMS` on a bad configuration,
    /// `INTERNAL_ERROR` when the system will not start the maintenance
    /// thread the configuration asks for.
    pub fn new(config: MasterConfig) -> Result<Master> {
        config.validate()?;
        let core = Arc::new(MasterCore::new(config)?);
        let maintenance = Maintenance::start(&core)?;
        Ok(Master { core, maintenance })
    }
}

impl Deref for Master {
    type Target = MasterCore;
    fn deref(&self) -> &MasterCore {
        &self.core
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        if let Some(m) = self.maintenance.take() {
            m.stop();
        }
    }
}

/// The state and operations of a master (reached through [`Master`]).
pub struct MasterCore {
    pub(crate) config: MasterConfig,
    pub(crate) clock: Clock,
    pub(crate) hasher: KeyHasher,
    pub(crate) shards: Box<[Shard]>,
    pub(crate) segments: RwLock<SegmentTable>,
    pub(crate) groups: Groups,
    pub(crate) index: DeadlineIndex,
    pub(crate) retention: crate::retention::Retention,
    pub(crate) metrics: Metrics,
    pub(crate) next_replica_id: AtomicU64,
    pub(crate) next_token: AtomicU64,
    pub(crate) next_seq: AtomicU64,
    pub(crate) wakeup: Wakeup,
    pub(crate) quiesce: Quiesce,
    /// Standby or primary, and the applied journal sequence (`standby.rs`).
    pub(crate) role: crate::standby::Role,
    /// The change journal (docs/CONTRACT.md §12); `None` when
    /// `journal_capacity_bytes` is 0, and then nothing is recorded.
    pub(crate) journal: Option<Journal>,
    /// Serialises mounts and unmounts, and with the journal on restores
    /// and captures too (lock order: after the quiesce gate, before any
    /// shard lock). A mount waits for a running unmount to drop every
    /// replica on its segments, so a segment mounted again (the same name,
    /// or another over the same bytes) is never readable beside replicas of
    /// the one it replaces; and the `SegmentUnmounted` an unmount appends
    /// last is never overtaken by a mount of the same name or by a restore.
    pub(crate) segment_changes: Mutex<()>,
    /// Unmounts running with the journal on, from taking their segments
    /// out of the table to the last shard they drop replicas in: while one
    /// runs, records of an object leave out its replicas on those segments
    /// before it reaches the object's shard, so an End recording only the
    /// ids it completed checks them first (`record_ended`).
    pub(crate) unmounts_running: AtomicUsize,
    /// Eviction's candidate buffer and lock-hold gauge, kept between runs.
    pub(crate) eviction: crate::eviction::EvictionScratch,
    #[cfg(feature = "test-hooks")]
    pub(crate) race_hooks: crate::quiesce::RaceHooks,
}

/// Largest batch of due group-retention entries a cleanup cycle pops, in
/// one hold of the retention index's mutex (docs/CONTRACT.md §11; soft pins
/// use [`PIN_CLEANUP_BATCH`]): one entry per group, so 128 keeps a hold far
/// under 1 ms.
pub const CLEANUP_BATCH: usize = 128;

/// Largest batch of due soft-pin entries a cleanup cycle expires at once
/// (taken out of the index in holds of at most
/// [`POP_PER_HOLD`](crate::soft_pin::index::POP_PER_HOLD) entries): large
/// enough that a wave over 1024 shards finds several entries per shard to
/// share one read lock and have their records loaded together.
pub const PIN_CLEANUP_BATCH: usize = 4096;

/// Most entries of a cleanup batch handled under one shard read lock: a
/// batch whose entries fall in few shards releases and retakes the lock,
/// so writers of that shard wait tens of microseconds at most.
pub const PIN_CLEANUP_PER_LOCK: usize = 512;

/// Ids a master keeps in reserve below `MAX_INSTANT`
/// (`MasterCore::check_ids_left`): more than every operation in flight at
/// once can take between its check and its issue (a batch Start of 10^6
/// keys with the most replicas takes ~2^31).
pub const ID_RESERVE: u64 = 1 << 48;

impl MasterCore {
    fn new(config: MasterConfig) -> Result<Self> {
        let clock = Clock::new(config.clock.clone())?;
        let journal = config.journal_capacity()?.map(Journal::new).transpose()?;
        let hasher = KeyHasher::new(config.seed);
        let shards = Self::empty_shards(&config, &hasher)?
            .into_iter()
            .map(Shard::new)
            .collect();
        let block_region = Self::block_region(&config);
        let seed = Self::placement_seed(config.seed);
        Ok(MasterCore {
            groups: Groups::new(64),
            role: crate::standby::Role::new(config.standby),
            config,
            clock,
            hasher,
            shards,
            segments: RwLock::new(SegmentTable::new(seed).with_block_region(block_region)),
            index: DeadlineIndex::new(),
            retention: crate::retention::Retention::new(),
            metrics: Metrics::default(),
            next_replica_id: AtomicU64::new(1),
            next_token: AtomicU64::new(1),
            next_seq: AtomicU64::new(1),
            wakeup: Wakeup::default(),
            quiesce: Quiesce::default(),
            journal,
            segment_changes: Mutex::new(()),
            unmounts_running: AtomicUsize::new(0),
            eviction: Default::default(),
            #[cfg(feature = "test-hooks")]
            race_hooks: Default::default(),
        })
    }

    /// The segment table's placement seed: from `seed` when the
    /// configuration fixes one (a different value than the key hasher
    /// takes from it; a restore's table starts from it again), else
    /// random. Never 0 (xorshift's fixed point).
    pub(crate) fn placement_seed(seed: Option<u64>) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = match seed {
            Some(seed) => foldhash::quality::FixedState::with_seed(seed).build_hasher(),
            None => foldhash::quality::RandomState::default().build_hasher(),
        };
        h.write_u64(0x6d6f6f6e63616b65);
        h.finish() | 1
    }

    /// The empty shard states of a master presized for `expected_objects`
    /// (docs/CONTRACT.md §9), for a new master and for a restore to stage.
    /// With `commit_presized` every shard's presized table is carved from
    /// one region mapped for them now, resident and advised for huge pages
    /// (made on the heap instead if the system gives no such mapping).
    /// `INVALID_PARAMS` if a shard's share is out of bounds or its table
    /// cannot be allocated.
    pub(crate) fn empty_shards(
        config: &MasterConfig,
        hasher: &KeyHasher,
    ) -> Result<Vec<ShardState>> {
        let per_shard = config.objects_per_shard()?;
        let region = (config.commit_presized && per_shard > 0)
            .then(|| {
                let bytes =
                    ShardState::reserved_bytes(per_shard).checked_mul(config.shard_count)?;
                Region::map_committed(bytes)
            })
            .flatten();
        (0..config.shard_count)
            .map(|_| Self::empty_shard(config, hasher, per_shard, region.as_ref()))
            .collect()
    }

    /// With `commit_presized`, the region a master's (or a restore's)
    /// segment table carves block slots from: one slot per expected object
    /// (docs/CONTRACT.md §9).
    pub(crate) fn block_region(config: &MasterConfig) -> Option<Arc<Region>> {
        let expected = usize::try_from(config.expected_objects).ok()?;
        if !config.commit_presized || expected == 0 {
            return None;
        }
        SegmentTable::block_region(expected)
    }

    fn empty_shard(
        config: &MasterConfig,
        hasher: &KeyHasher,
        per_shard: usize,
        region: Option<&Arc<Region>>,
    ) -> Result<ShardState> {
        let mut st =
            ShardState::with_capacity(hasher.clone(), per_shard, region).map_err(|why| {
                Error::invalid(format!(
                    "expected_objects {}: cannot presize a table of {per_shard} objects for each \
                 of the {} shards: {why}",
                    config.expected_objects, config.shard_count
                ))
            })?;
        // A standby commits its presized records at once, so applying
        // never waits on a first touch (docs/CONTRACT.md §9); what lies
        // in a region is resident already.
        if config.standby {
            st.prefault();
        }
        Ok(st)
    }

    /// The configuration this master was built with.
    pub fn config(&self) -> &MasterConfig {
        &self.config
    }

    /// The master's current instant, on its timeline: monotonic, and
    /// unaffected by wall-clock steps (docs/CONTRACT.md §1).
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// The wall clock now, in ms since the Unix epoch. No lifetime depends
    /// on it; it is what the skew is measured against and what a snapshot
    /// records beside its capture instant.
    pub fn wall_time(&self) -> Instant {
        self.clock.wall()
    }

    /// `timeline − wall` in ms (the `master_clock_skew_ms` metric).
    pub fn clock_skew_ms(&self) -> i64 {
        self.clock.skew()
    }

    /// Sets a manual clock's wall apart from its timeline: a simulated wall
    /// step that, by design, changes no lifetime (only the skew and the wall
    /// recorded in snapshots). `CLOCK_UNSUPPORTED` on a system-clock master.
    /// A primary with a journal records the new skew (a `Timeline` record).
    pub fn set_wall_time(&self, wall: Instant) -> Result<()> {
        self.clock.set_wall(wall)?;
        self.record_timeline();
        Ok(())
    }

    /// Sets the manual clock (monotonic). `CLOCK_UNSUPPORTED` on a
    /// system-clock master or when moving backwards.
    pub fn set_time(&self, to: Instant) -> Result<()> {
        self.clock.set(to)
    }

    /// Advances the manual clock; returns the new instant.
    pub fn advance_time(&self, by_ms: u64) -> Result<Instant> {
        self.clock.advance(by_ms)
    }

    // ----- shared helpers -------------------------------------------------

    /// The generation of the master state: moves on each time a restore
    /// installs a state, and only then. It is the deadline index's epoch,
    /// which the install moves by replacing the index while it holds every
    /// shard write lock (and nothing else replaces or clears this master's
    /// index), so a caller holding any shard lock reads a value that cannot
    /// change before it releases that lock; a cleanup batch compares it with
    /// the epoch its entries were popped under
    /// ([`PopOutcome::epoch`](crate::soft_pin::PopOutcome::epoch)).
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.index.epoch()
    }

    #[inline]
    pub(crate) fn locate(&self, k: Key<'_>) -> (u64, usize) {
        let h = self.hasher.hash(k);
        (h, key::shard_of(h, self.shards.len()))
    }

    #[inline]
    pub(crate) fn shard_index_of(&self, hash: u64) -> usize {
        key::shard_of(hash, self.shards.len())
    }

    /// Refuses an operation that would issue ids (replica ids, write
    /// tokens, creation sequences) while any of the three counters is
    /// within [`ID_RESERVE`] of `MAX_INSTANT`: `UNAVAILABLE_IN_CURRENT_STATUS`,
    /// before anything is changed. A snapshot's counters may be as high as
    /// `MAX_INSTANT` (docs/CONTRACT.md §6) and a journal record naming an id
    /// at or above it is refused by every standby (§12.3), so a master
    /// restored from a snapshot whose counters are near the limit serves
    /// what it holds but starts no more writes or tasks; organically, a
    /// counter needs 2^63 − 2^48 operations to get there.
    pub(crate) fn check_ids_left(&self) -> Result<()> {
        for (what, counter) in [
            ("replica id", &self.next_replica_id),
            ("write token", &self.next_token),
            ("creation sequence", &self.next_seq),
        ] {
            let next = counter.load(Ordering::Relaxed);
            if next > MAX_INSTANT - ID_RESERVE {
                return Err(Error::new(
                    ErrorKind::UnavailableInCurrentStatus,
                    format!(
                        "this master has no {what}s left to issue: the next is {next}, within \
                         {ID_RESERVE} of {MAX_INSTANT} (it was restored from a snapshot whose \
                         counters were near the limit); it starts no more writes or tasks"
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn replica_ids(&self, n: usize) -> u64 {
        self.next_replica_id.fetch_add(n as u64, Ordering::Relaxed)
    }

    /// Gives back the `n` replica ids from `first` that a failed allocation
    /// reserved, so the rejection leaves the persisted counter unchanged
    /// (docs/CONTRACT.md §3: every rejection happens before any side effect). Only
    /// done when no other operation took ids since; otherwise the gap stays
    /// (harmless: ids remain unique).
    ///
    /// With the journal on, a gap left behind is recorded (a `Counters`
    /// record), so a standby's counter moves past it too.
    pub(crate) fn return_replica_ids(&self, first: u64, n: usize) {
        if n == 0 {
            return;
        }
        let returned = self
            .next_replica_id
            .compare_exchange(
                first + n as u64,
                first,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok();
        if !returned {
            self.record_counters(first + n as u64);
        }
    }

    pub(crate) fn new_token(&self) -> u64 {
        self.next_token.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn new_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Applies a soft-pin transition's side effects to `obj`, whose
    /// committed deadline the caller has already set to the transition's
    /// outcome. Called with the shard write lock held (the index mutex comes
    /// last in the lock order), so the index never disagrees with the
    /// metadata outside a cleanup batch. A registration bumps the object's
    /// `pin_version`, which makes every earlier entry of it stale; the
    /// caller runs [`settle_index`](Self::settle_index) once it has
    /// released the shard lock. `at` is the record's handle.
    pub(crate) fn apply_delta(&self, obj: &mut Object, at: ObjectRef, delta: Delta) {
        match delta.index {
            IndexOp::None => {}
            IndexOp::Register(d) => self.register_pin(obj, at, d, delta.gauge > 0),
            IndexOp::Unregister => self.index.unregister(1),
        }
        if delta.gauge != 0 {
            self.shards[at.shard as usize]
                .soft_pin_keys
                .fetch_add(delta.gauge, Ordering::Relaxed);
        }
    }

    /// Registers `obj`'s committed deadline `deadline` under a new version
    /// (`fresh`: the object had no registration); the entry names the
    /// record by its handle `at`. Shard write lock held.
    pub(crate) fn register_pin(
        &self,
        obj: &mut Object,
        at: ObjectRef,
        deadline: Instant,
        fresh: bool,
    ) {
        obj.pin_version = obj.pin_version.wrapping_add(1);
        self.index.register(
            PinTarget::new(at.shard, at.slot),
            obj.pin_version,
            deadline,
            fresh,
        );
    }

    /// A committed deadline disappeared (cleared by a compare-and-swap
    /// under a shard read lock, or dropped): its gauge and registration go.
    /// The entry is stale from then on, through the record. `shard` is the
    /// object's: its gauge goes down (the caller holds that shard's lock).
    pub(crate) fn pin_dropped(&self, shard: usize) {
        self.index.unregister(1);
        self.shards[shard]
            .soft_pin_keys
            .fetch_sub(1, Ordering::Relaxed);
    }

    /// Drops an object's committed deadline (if any) with its gauge and
    /// index effects; `shard` is the object's.
    pub(crate) fn drop_committed(&self, obj: &Object, shard: usize) {
        if obj.committed().is_some() {
            obj.set_committed(None);
            self.pin_dropped(shard);
        }
    }

    /// Runs the deadline-index rebuild the last index change asked for, if
    /// any (docs/CONTRACT.md §4.8), and the retention index's
    /// ([`settle_retention`](Self::settle_retention)). The rebuild checks
    /// entries against the records under shard read locks, so the caller
    /// must hold no lock at all; operations that push entries call it on
    /// their way out, cleanup after its pops.
    pub(crate) fn settle_index(&self) {
        self.settle_pins();
        self.settle_retention();
    }

    /// The soft-pin half of [`settle_index`](Self::settle_index), for an
    /// operation that can drop pins but changes no retention: every
    /// removal, eviction, unmount, revoke, a task's end, the sweep, a
    /// PutStart replacing a stale write and promote.
    pub(crate) fn settle_pins(&self) {
        if self.index.rebuild_wanted() {
            self.index
                .rebuild(&mut |entries: &mut Vec<Entry>| self.retain_valid_entries(entries));
        }
    }

    /// Keeps the entries whose object exists with the entry's version and
    /// deadline (what cleanup would clear) and drops the rest, which can
    /// never turn valid again. Takes each shard's read lock for at most
    /// `VALIDATE_RUN` entries at a time; no other lock is held.
    fn retain_valid_entries(&self, entries: &mut Vec<Entry>) {
        /// Entries checked per shard-lock hold.
        const VALIDATE_RUN: usize = 1024;
        // By shard, then slot: each run reads its arena front to back.
        entries.sort_unstable_by_key(|e| (e.target.shard(), e.target.slot()));
        let (mut read, mut kept) = (0, 0);
        while read < entries.len() {
            let si = entries[read].target.shard();
            let Some(shard) = self.shards.get(si as usize) else {
                // Names no shard of this master: never valid (a master
                // makes no such entry).
                read += 1;
                continue;
            };
            let st = shard.state.read();
            let end = entries.len().min(read + VALIDATE_RUN);
            while read < end && entries[read].target.shard() == si {
                let e = entries[read];
                read += 1;
                if entry_is_valid(&st, &e) {
                    entries[kept] = e;
                    kept += 1;
                }
            }
        }
        entries.truncate(kept);
    }

    /// Allocates the buffers of a write per the shape rules of docs/CONTRACT.md §3.
    /// On failure nothing stays allocated and an eviction is requested.
    pub(crate) fn allocate_write(
        &self,
        hash: u64,
        size: u64,
        cfg: &WriteConfig,
        exclude: &[SegmentId],
    ) -> Result<Replicas> {
        let mem = cfg.memory_replicas as usize;
        let nof = cfg.nof_ssd_replicas as usize;
        let first = self.replica_ids(mem + nof);
        let table = self.segments.read();
        let mut placed = Replicas::new();
        // A segment belongs to one pool and `place` keeps the replicas of one
        // call on distinct segments, so `exclude` is all either pool needs.
        for (pool, count, offset) in [(Pool::Memory, mem, 0), (Pool::NofSsd, nof, mem)] {
            if count == 0 {
                continue;
            }
            let owner = BufferOwner::object(hash);
            let got = table.place(pool, count, size, &cfg.preferred_segments, exclude, owner);
            for (i, p) in got.into_iter().enumerate() {
                placed.push(Replica {
                    id: first + (offset + i) as u64,
                    addr: p.address,
                    segment: p.segment,
                    block: p.block,
                    kind: pool.replica_kind(),
                    status: ReplicaStatus::Processing,
                    role: Role::Write,
                });
            }
        }
        let got_mem = placed
            .iter()
            .filter(|r| r.kind == crate::ReplicaKind::Memory)
            .count();
        let got_nof = placed.len() - got_mem;
        let enough = if nof == 0 {
            got_mem >= 1
        } else if mem == 1 && nof == 1 {
            !placed.is_empty()
        } else {
            got_mem == mem && got_nof == nof
        };
        if enough {
            // Ids reserved for replicas that did not fit stay a gap in the
            // counter, which no object record shows: record it.
            if placed.len() < mem + nof {
                self.record_counters(first + (mem + nof) as u64);
            }
            return Ok(placed);
        }
        // Why, per pool that came up short: nothing mounted, or no room.
        let why: Vec<String> = [(Pool::Memory, mem, got_mem), (Pool::NofSsd, nof, got_nof)]
            .into_iter()
            .filter(|&(_, wanted, got)| got < wanted)
            .map(|(pool, wanted, got)| {
                let name = match pool {
                    Pool::Memory => "MEMORY",
                    Pool::NofSsd => "NOF_SSD",
                };
                match table.iter().filter(|s| s.pool == pool).count() {
                    0 => format!("no segment is mounted in pool {name}"),
                    n if got == 0 => format!("no {name} segment has room ({n} mounted)"),
                    n => format!(
                        "only {got} of {wanted} {name} replicas fit on the {n} mounted \
                         segment(s), one replica per segment"
                    ),
                }
            })
            .collect();
        for r in &placed {
            free_in(&table, r, size);
        }
        drop(table);
        self.return_replica_ids(first, mem + nof);
        self.metrics
            .put_start_failures
            .fetch_add(1, Ordering::Relaxed);
        self.wakeup.request_eviction();
        Err(Error::new(
            ErrorKind::NoAvailableHandle,
            format!(
                "cannot place {mem} MEMORY + {nof} NOF_SSD replica(s) of {size} bytes \
                 (placed {got_mem} + {got_nof}): {}",
                why.join("; ")
            ),
        ))
    }

    /// Frees buffers now (revoke, remove, eviction) — with the journal on,
    /// once the operation's record is appended: they wait in `st`'s
    /// `pending_frees` (the caller's shard) until its
    /// [`record_key`](Self::record_key) frees them (append before free).
    pub(crate) fn free_now<'a>(
        &self,
        st: &mut ShardState,
        replicas: impl IntoIterator<Item = &'a Replica>,
        size: u64,
    ) {
        if self.journal.is_some() {
            st.pending_frees
                .extend(
                    replicas
                        .into_iter()
                        .filter(|r| r.has_buffer())
                        .map(|r| PendingFree {
                            segment: r.segment,
                            addr: r.addr,
                            block: r.block,
                            len: size,
                        }),
                );
            return;
        }
        let mut buffers = replicas.into_iter().filter(|r| r.has_buffer()).peekable();
        // Nothing to free (an object whose last replica was just evicted):
        // no segment-table lock.
        if buffers.peek().is_none() {
            return;
        }
        let table = self.segments.read();
        for r in buffers {
            free_in(&table, r, size);
        }
    }

    /// Sends buffers to the shard's discarded list until `release_at`.
    pub(crate) fn discard<'a>(
        &self,
        st: &mut ShardState,
        replicas: impl IntoIterator<Item = &'a Replica>,
        size: u64,
        release_at: Instant,
    ) {
        for r in replicas {
            if r.has_buffer() {
                st.discarded.push(Discarded {
                    segment: r.segment,
                    addr: r.addr,
                    block: r.block,
                    len: size,
                    release_at,
                    replica: r.id,
                });
                st.discarded_bytes += size as i64;
            }
        }
    }

    /// Erases an object under its shard's write lock: buffers freed now
    /// (`release_at == None`) or discarded, committed deadline dropped
    /// (gauge −1, unregistered), write-in-flight entry and group
    /// membership removed, key count −1.
    pub(crate) fn erase(
        &self,
        st: &mut ShardState,
        shard: usize,
        hash: u64,
        k: Key<'_>,
        release_at: Option<Instant>,
    ) -> Option<Object> {
        let obj = st.take(hash, k)?;
        self.retire(st, shard, &obj, k, release_at);
        Some(obj)
    }

    /// [`erase`](Self::erase) of the object with creation sequence `seq`
    /// among those hashing to `hash`, for a caller that holds no key.
    pub(crate) fn erase_seq(
        &self,
        st: &mut ShardState,
        shard: usize,
        hash: u64,
        seq: u64,
        release_at: Option<Instant>,
    ) -> Option<Object> {
        let scoped = key::scoped(st.key_of(st.find_by_seq(hash, seq)?));
        self.erase(st, shard, hash, key::split(&scoped), release_at)
    }

    /// The rest of [`erase`](Self::erase) for an object (stored under `k`)
    /// the caller already took out of its shard (one lookup instead of two).
    pub(crate) fn retire(
        &self,
        st: &mut ShardState,
        shard: usize,
        obj: &Object,
        k: Key<'_>,
        release_at: Option<Instant>,
    ) {
        debug_assert_eq!(self.shard_index_of(self.hasher.hash(k)), shard);
        self.retire_record(st, shard, obj, release_at);
        if let Some(g) = obj.group() {
            self.groups.leave(&self.hasher, g, &key::scoped(k));
        }
    }

    /// [`retire`](Self::retire) of an object of no group, whose key is
    /// therefore not needed (an eviction that copied none).
    pub(crate) fn retire_ungrouped(
        &self,
        st: &mut ShardState,
        shard: usize,
        obj: &Object,
        release_at: Option<Instant>,
    ) {
        debug_assert!(
            obj.group().is_none(),
            "a group member needs its key to leave"
        );
        self.retire_record(st, shard, obj, release_at);
    }

    /// What retiring does apart from leaving the object's group.
    fn retire_record(
        &self,
        st: &mut ShardState,
        shard: usize,
        obj: &Object,
        release_at: Option<Instant>,
    ) {
        match release_at {
            None => self.free_now(st, &obj.replicas, obj.size),
            Some(at) => self.discard(st, &obj.replicas, obj.size, at),
        }
        self.drop_committed(obj, shard);
        st.in_flight.end(obj.write_token);
        st.keys -= 1;
    }

    pub(crate) fn check_writer(obj: &Object, client: ClientId, token: Option<u64>) -> Result<()> {
        if obj.writer != client {
            return Err(Error::new(
                ErrorKind::IllegalClient,
                format!(
                    "client {client} is not the writer of this object (writer {})",
                    obj.writer
                ),
            ));
        }
        if let Some(t) = token {
            if t != obj.write_token {
                return Err(Error::new(
                    ErrorKind::StaleWriteToken,
                    format!(
                        "write token {t} is not the current write's ({})",
                        obj.write_token
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Frees a replica's buffer of `len` bytes if its segment is still mounted
/// (an unmounted segment's buffers went with it).
pub(crate) fn free_in(table: &SegmentTable, r: &Replica, len: u64) {
    free_block(table, r.segment, r.block, r.addr, len);
}

/// Frees the buffer `block` at `addr` if `segment` is still mounted.
pub(crate) fn free_block(
    table: &SegmentTable,
    segment: SegmentId,
    block: BlockId,
    addr: u64,
    len: u64,
) {
    if let Some(seg) = table.get(segment) {
        let freed = seg.free_later(block, addr, len);
        debug_assert!(
            freed.is_ok(),
            "freeing {addr:#x}+{len} (block {}) on segment {segment}: {freed:?}",
            block.index()
        );
    }
}

/// Whether index entry `e` is the latest registration of an object in `st`
/// (the shard it names): the slot it names holds a record that carries the
/// entry's version and still has the entry's deadline committed.
#[inline]
pub(crate) fn entry_is_valid(st: &ShardState, e: &Entry) -> bool {
    st.slot(e.target.slot())
        .is_some_and(|o| o.pin_version == e.version && o.committed() == Some(e.deadline))
}
