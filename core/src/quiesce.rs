//! A test hook that parks the maintenance thread between tasks. While a
//! [`QuiesceGuard`] is held no eviction, cleanup batch, sweep or release runs
//! in the background, so a caller that has also paused its own threads sees
//! the quiescent state [`MasterCore::check_invariants`] is exact for.

use crate::master::MasterCore;
use parking_lot::{Mutex, MutexGuard};

/// The gate the maintenance thread holds while it runs a tick's tasks.
/// Lock order: taken before every other lock (nothing is held when the
/// maintenance thread or a quiescing caller takes it).
#[derive(Default)]
pub(crate) struct Quiesce {
    gate: Mutex<()>,
}

impl Quiesce {
    /// Held by the maintenance thread around one tick's tasks.
    pub(crate) fn enter(&self) -> MutexGuard<'_, ()> {
        self.gate.lock()
    }
}

/// Keeps the maintenance thread parked until dropped (see
/// [`MasterCore::quiesce`]).
#[must_use = "the maintenance thread resumes as soon as the guard is dropped"]
pub struct QuiesceGuard<'a> {
    _gate: MutexGuard<'a, ()>,
}

impl MasterCore {
    /// Waits for the maintenance thread to finish its current task, then
    /// keeps it from starting another until the guard is dropped. For tests
    /// that check invariants on a master with background work on: operations
    /// called by other threads still run, so the caller must pause those
    /// itself. Calling [`run_maintenance_tick`](Self::run_maintenance_tick)
    /// or any operation while holding the guard is fine; taking a second
    /// guard on the same thread deadlocks.
    #[doc(hidden)]
    pub fn quiesce(&self) -> QuiesceGuard<'_> {
        QuiesceGuard {
            _gate: self.quiesce.enter(),
        }
    }
}

/// Where background work (and the journal's recording) calls the race hook
/// (feature `test-hooks`), so a test can run an operation, typically a
/// restore, at an exact point of it.
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RacePoint {
    /// A cleanup batch was popped and is about to take the lock of its next
    /// shard, after `entries_done` of its entries (0 = its first shard). No
    /// lock is held.
    CleanupShard { entries_done: usize },
    /// An eviction run collected its candidates and is about to evict. No
    /// lock is held.
    EvictionCollected,
    /// An operation changed an object and is about to append its journal
    /// record (and then free what it freed). The object's shard write lock
    /// **is** held: the hook may run operations on keys of other shards
    /// only ([`MasterCore::debug_shard_of`]).
    BeforeRecord,
    /// An eviction run's collection let go of shard `shard`'s read lock
    /// between two slices of its arena and goes on from `next_slot` under
    /// the lock taken again. No lock is held.
    EvictionSlice { shard: usize, next_slot: u32 },
    /// An eviction pass is about to take the locks of its next window of
    /// single objects, the run having evicted `evicted` objects so far. No
    /// lock is held.
    EvictionWindow { evicted: u64 },
    /// An eviction pass is about to take the shard locks of a group's
    /// members to evaluate it (and evict it whole if every member passes).
    /// No lock is held.
    EvictionGroup,
    /// An unmount took its segments out of the table and is about to take
    /// the write lock of shard `shard` to drop the replicas it holds on
    /// them. No shard lock is held; the segment-change lock is (a mount
    /// waits for the unmount).
    UnmountShard { shard: usize },
    /// A retention cleanup popped a batch of due retentions (their index
    /// registrations consumed) and is about to take the registry's lock to
    /// clear them. No lock is held.
    RetentionPopped,
    /// A retention-index rebuild is about to start: after a retain, a
    /// release, a cleanup cycle or a standby's journal apply. No lock is
    /// held but, on a standby applying its journal, the apply mutex.
    RetentionRebuild,
}

/// The hook a test installs (see [`MasterCore::debug_set_race_hook`]).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub type RaceHook = std::sync::Arc<dyn Fn(&MasterCore, RacePoint) + Send + Sync>;

#[cfg(feature = "test-hooks")]
#[derive(Default)]
pub(crate) struct RaceHooks {
    hook: Mutex<Option<RaceHook>>,
}

#[cfg(feature = "test-hooks")]
impl MasterCore {
    /// Calls the race hook, if a test installed one. No lock may be held
    /// (but see [`RacePoint::BeforeRecord`]).
    pub(crate) fn race_point(&self, point: RacePoint) {
        let hook = self.race_hooks.hook.lock().clone();
        if let Some(hook) = hook {
            hook(self, point);
        }
    }

    /// Test hook (feature `test-hooks`): `hook` runs at every
    /// [`RacePoint`] of cleanup and eviction, on the thread doing that work,
    /// with no lock held, so it may call any operation (a restore, say);
    /// `None` removes it.
    #[doc(hidden)]
    pub fn debug_set_race_hook(&self, hook: Option<RaceHook>) {
        *self.race_hooks.hook.lock() = hook;
    }

    /// Test hook (feature `test-hooks`): the shard `k` lives in.
    #[doc(hidden)]
    pub fn debug_shard_of(&self, k: crate::Key<'_>) -> usize {
        self.locate(k).1
    }
}
