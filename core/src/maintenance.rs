//! The one maintenance thread: eviction checks, soft-pin expiration
//! cleanup, the stale-write sweep and discarded-buffer release, each on its
//! own interval (0 = off). It sleeps on a condvar, so an allocation failure
//! wakes it at once and dropping the master stops it promptly. A panic in a
//! task is caught and counted; later ticks still run.
//!
//! Every tick of a primary with a journal (the thread's, and
//! [`run_maintenance_tick`](MasterCore::run_maintenance_tick)) first reads
//! the clock's skew once and records it if it moved (a wall step): a
//! `Timeline` record, so its standbys read the records' instants on its
//! timeline (`journal/capture.rs`, docs/CONTRACT.md section 12.1). No
//! client operation reads the wall for it.

use crate::clock::{Instant, MAX_INSTANT};
use crate::master::MasterCore;
use parking_lot::{Condvar, Mutex};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Default)]
struct WakeState {
    /// An allocation failed: the next wake-up runs a forced eviction.
    eviction_requested: bool,
    /// The next wake-up checks the watermark now (an unforced eviction
    /// check, as at its interval): a standby was promoted.
    check_requested: bool,
    stop: bool,
    /// Test hook: the next wake-up runs a task that panics.
    #[cfg(feature = "test-hooks")]
    panic_requested: bool,
}

#[cfg(feature = "test-hooks")]
fn panic_pending(w: &WakeState) -> bool {
    w.panic_requested
}

#[cfg(not(feature = "test-hooks"))]
fn panic_pending(_: &WakeState) -> bool {
    false
}

#[cfg(feature = "test-hooks")]
fn take_panic_request(w: &mut WakeState) -> bool {
    std::mem::take(&mut w.panic_requested)
}

#[cfg(not(feature = "test-hooks"))]
fn take_panic_request(_: &mut WakeState) -> bool {
    false
}

/// How operations poke the maintenance thread.
#[derive(Default)]
pub(crate) struct Wakeup {
    state: Mutex<WakeState>,
    cv: Condvar,
    /// Wake-ups the maintenance thread has handled to the end, a
    /// standby's (which do nothing) included: see
    /// [`MasterCore::debug_maintenance_ticks`].
    ticks: AtomicU64,
}

impl Wakeup {
    /// An allocation failed: evict on the next wake-up (now).
    pub fn request_eviction(&self) {
        self.state.lock().eviction_requested = true;
        self.cv.notify_one();
    }

    /// The master just became a primary: check the memory watermark now
    /// rather than at the next interval (eviction runs only above it, as
    /// at any check; nothing is forced).
    pub fn request_check(&self) {
        self.state.lock().check_requested = true;
        self.cv.notify_one();
    }
}

pub(crate) struct Maintenance {
    core: Arc<MasterCore>,
    handle: JoinHandle<()>,
}

struct Task {
    interval: Duration,
    /// `None`: the interval reaches past what `std::time::Instant` can
    /// represent, so the task never comes due (rather than panicking on the
    /// overflowing `Instant + Duration`).
    next: Option<std::time::Instant>,
}

impl Task {
    fn new(ms: u64, now: std::time::Instant) -> Option<Task> {
        (ms > 0).then(|| {
            let interval = Duration::from_millis(ms);
            Task {
                interval,
                next: now.checked_add(interval),
            }
        })
    }

    fn due(&mut self, now: std::time::Instant) -> bool {
        match self.next {
            Some(next) if now >= next => {
                self.next = now.checked_add(self.interval);
                true
            }
            _ => false,
        }
    }
}

impl Maintenance {
    /// Starts the thread, unless every interval is 0 (`None`). A thread
    /// the system will not start is `INTERNAL_ERROR`: a master without the
    /// maintenance its configuration asks for would never expire a pin,
    /// sweep or release, nor evict when an allocation fails.
    pub fn start(core: &Arc<MasterCore>) -> crate::error::Result<Option<Maintenance>> {
        let c = &core.config;
        if c.eviction_check_interval_ms == 0
            && c.soft_pin_cleanup_interval_ms == 0
            && c.sweep_interval_ms == 0
        {
            return Ok(None);
        }
        let worker = core.clone();
        let handle = std::thread::Builder::new()
            .name("mooncake-meta-maint".into())
            .spawn(move || run(&worker))
            .map_err(|e| {
                crate::error::Error::new(
                    crate::error::ErrorKind::Internal,
                    format!("the maintenance thread could not be started: {e}"),
                )
            })?;
        Ok(Some(Maintenance {
            core: core.clone(),
            handle,
        }))
    }

    pub fn stop(self) {
        self.core.wakeup.state.lock().stop = true;
        self.core.wakeup.cv.notify_all();
        let _ = self.handle.join();
    }
}

fn guarded(core: &MasterCore, f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        core.metrics
            .maintenance_panics
            .fetch_add(1, Ordering::Relaxed);
    }
}

fn run(core: &MasterCore) {
    let c = &core.config;
    let start = std::time::Instant::now();
    let mut evict = Task::new(c.eviction_check_interval_ms, start);
    let mut cleanup = Task::new(c.soft_pin_cleanup_interval_ms, start);
    let mut sweep = Task::new(c.sweep_interval_ms, start);
    loop {
        let (forced, check, inject_panic) = {
            let mut w = core.wakeup.state.lock();
            let next = [&evict, &cleanup, &sweep]
                .into_iter()
                .flatten()
                .filter_map(|t| t.next)
                .min()
                .unwrap_or_else(|| std::time::Instant::now() + Duration::from_secs(3600));
            if !w.stop && !w.eviction_requested && !w.check_requested && !panic_pending(&w) {
                core.wakeup.cv.wait_until(&mut w, next);
            }
            if w.stop {
                return;
            }
            (
                std::mem::take(&mut w.eviction_requested),
                std::mem::take(&mut w.check_requested),
                take_panic_request(&mut w),
            )
        };
        // Parked here while a test holds a quiesce guard (see quiesce.rs).
        let _gate = core.quiesce.enter();
        if inject_panic {
            guarded(core, || {
                panic!("maintenance task panic injected by a test hook")
            });
        }
        let now = std::time::Instant::now();
        let evict_due = evict.as_mut().is_some_and(|t| t.due(now));
        let cleanup_due = cleanup.as_mut().is_some_and(|t| t.due(now));
        let sweep_due = sweep.as_mut().is_some_and(|t| t.due(now));
        // A standby does nothing (its expiry, eviction and sweeps arrive
        // through the journal); the role is read at every tick, so a
        // promoted master starts working at its next one. The tasks' next
        // instants still move on, so the thread sleeps between ticks.
        if core.is_standby() {
            core.wakeup.ticks.fetch_add(1, Ordering::Release);
            continue;
        }
        guarded(core, || core.record_timeline());
        if evict_due || ((forced || check) && evict.is_some()) {
            guarded(core, || {
                core.evict_if_needed(forced);
            });
        }
        if cleanup_due {
            guarded(core, || {
                core.run_cleanup();
            });
        }
        if sweep_due {
            guarded(core, || {
                let at = core.clock.now();
                core.sweep_stale_writes_at(at);
                core.release_discarded_at(at);
            });
        }
        core.wakeup.ticks.fetch_add(1, Ordering::Release);
    }
}

impl MasterCore {
    /// Test hook (feature `test-hooks`): the maintenance thread runs a task
    /// that panics at its next wake-up (now), exercising the catch-and-count
    /// path (`maintenance_task_panics`). No effect on a master without a
    /// maintenance thread.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn debug_inject_maintenance_panic(&self) {
        self.wakeup.state.lock().panic_requested = true;
        self.wakeup.cv.notify_all();
    }

    /// Test hook: how many wake-ups the maintenance thread has handled to
    /// the end (the flags it took, the role read and every task that was
    /// due run), a standby's included; 0 without a maintenance thread. A
    /// test that sees it move by 2 past a value read after some change
    /// knows a whole tick ran after that change. Release/Acquire (the cost
    /// of a relaxed one on x86): what a tick did is visible to a caller
    /// that sees it counted.
    #[doc(hidden)]
    pub fn debug_maintenance_ticks(&self) -> u64 {
        self.wakeup.ticks.load(Ordering::Acquire)
    }

    /// Runs every maintenance task once, now, whatever the intervals:
    /// the timeline record (a moved skew, journal on), eviction check,
    /// cleanup, stale-write sweep, discarded-buffer release.
    /// For embedders and tests that drive the master deterministically.
    pub fn run_maintenance_tick(&self) {
        if self.is_standby() {
            return;
        }
        self.record_timeline();
        let now = self.clock.now();
        self.evict_if_needed(false);
        self.run_cleanup_at(now);
        self.sweep_stale_writes_at(now);
        self.release_discarded_at(now);
    }

    /// Sweeps writes whose `put_start + put_start_release_timeout < at`:
    /// their PROCESSING replicas are discarded (released at that instant),
    /// pending is cleared, and an object left without replicas is erased.
    /// Visits only writes in flight. Returns how many writes were swept.
    pub fn sweep_stale_writes_at(&self, at: Instant) -> u64 {
        if self.is_standby() {
            return 0;
        }
        let release = self.config.put_start_release_timeout_ms;
        let mut swept = 0;
        for (si, shard) in self.shards.iter().enumerate() {
            if shard.state.read().in_flight.is_empty() {
                continue;
            }
            let mut st = shard.state.write();
            let stale: Vec<(u64, u32)> = st
                .in_flight
                .iter()
                .filter(|&(t, w)| {
                    st.slot(w.slot).is_some_and(|o| {
                        o.write_token == t
                            && crate::clock::saturating_deadline(o.put_start, release) < at
                    })
                })
                .map(|(t, w)| (t, w.slot))
                .collect();
            for (token, slot) in stale {
                let mark = st.discarded.len();
                // The write and its pending intent end here (§4.4).
                st.in_flight.end(token);
                let Some(hash) = st.slot(slot).map(|o| st.hash_of(o)) else {
                    continue;
                };
                // The key, for the record once the object may be gone.
                let scoped = self
                    .journal
                    .is_some()
                    .then(|| crate::key::scoped(st.key_of(st.slot(slot).expect("read above"))));
                let obj = st.slot_mut(slot).expect("the slot was just read");
                let release_at = crate::clock::saturating_deadline(obj.put_start, release);
                let (gone, kept): (crate::object::Replicas, crate::object::Replicas) =
                    std::mem::take(&mut obj.replicas)
                        .into_iter()
                        .partition(|r| r.is_write_processing());
                obj.replicas = kept;
                let (size, empty, seq) = (obj.size, obj.replicas.is_empty(), obj.seq);
                self.discard(&mut st, &gone, size, release_at);
                if empty {
                    self.erase_seq(&mut st, si, hash, seq, None);
                }
                if let Some(scoped) = &scoped {
                    self.record_key(&mut st, hash, crate::key::split(scoped), mark);
                }
                swept += 1;
            }
        }
        self.metrics
            .swept_writes
            .fetch_add(swept, Ordering::Relaxed);
        // Pins of erased objects no longer count (§4.8).
        self.settle_pins();
        swept
    }

    /// Frees discarded buffers whose release instant is `<= at`. Returns
    /// how many were freed. Any `at` is taken: beyond `MAX_INSTANT` it is
    /// `MAX_INSTANT`, which frees the same buffers (no release instant is
    /// later) and is the instant the journal records (a standby refuses a
    /// record with a later one).
    pub fn release_discarded_at(&self, at: Instant) -> u64 {
        if self.is_standby() {
            return 0;
        }
        let at = at.min(MAX_INSTANT);
        let mut released = 0;
        for shard in self.shards.iter() {
            // O(1) a shard: the list knows its earliest release instant.
            if !shard.state.read().discarded.any_due(at) {
                continue;
            }
            let mut st = shard.state.write();
            let due = st.discarded.take_due(at);
            let table = self.segments.read();
            // Append before free: the record goes in before any of these
            // buffers can be placed again (under another shard's lock).
            if self.journal.is_some() {
                let buffers = crate::journal::capture::released_buffers(&table, &due);
                // Buffers of segments gone meanwhile are dropped by their
                // SegmentUnmounted; nothing else to say.
                if !buffers.is_empty() {
                    self.journal_append(&crate::journal::Record::DiscardReleased { at, buffers });
                }
            }
            for d in &due {
                crate::master::free_block(&table, d.segment, d.block, d.addr, d.len);
                st.discarded_bytes -= d.len as i64;
            }
            released += due.len() as u64;
        }
        released
    }
}
