//! Standby mode (docs/CONTRACT.md section 12.3): a master built with
//! `MasterConfig::standby` serves no client operation and runs no
//! maintenance; its state changes only by applying a primary's journal
//! ([`apply_journal`](MasterCore::apply_journal)) or by a restore, until
//! [`promote`](MasterCore::promote) makes it a primary. Its clock takes the
//! primary's skew from every image it installs and every `Timeline`
//! record it applies, so its instants are read on the primary's timeline;
//! it records no skew of its own (a wall set on it is recorded, if it
//! still stands, at its first maintenance tick once promoted).
//!
//! # The gate
//!
//! Every client operation that reads or changes objects, segments or group
//! retention starts with [`MasterCore::ensure_primary`] (one line), which
//! on a standby is `UNAVAILABLE_IN_CURRENT_STATUS` naming the standby. The
//! few operations that return no `Result` answer as if nothing were stored
//! (documented on each). Snapshots, metrics, the clock, restore, apply and
//! the test-only inspection helpers stay allowed.
//!
//! # Role changes
//!
//! The role flips once, standby to primary, in `promote`, under the apply
//! mutex (so no apply runs across it) and after the recovery leases are in
//! place, so the first client operation a promoted master serves already
//! sees them. An operation that read the role as standby was rejected and
//! did nothing; one that reads it as primary runs on the promoted state.

use crate::clock::saturating_deadline;
use crate::error::{Error, ErrorKind, Result};
use crate::journal::apply::ApplyScratch;
use crate::master::MasterCore;
use crate::types::SegmentId;
use hashbrown::HashMap;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A master's role and, on a standby, how far it has applied the journal.
pub(crate) struct Role {
    standby: AtomicBool,
    /// The last journal sequence applied (or installed by a restore); 0 =
    /// none. Written only under `apply`.
    applied_seq: AtomicU64,
    /// The state came from a snapshot of format 1 to 4 restored on this
    /// standby, which may lack discarded buffers and writes in flight (an
    /// older library's did not store them): a record erasing an object it
    /// does not have, or releasing a discarded buffer it does not hold, is
    /// skipped rather than refused (the primary's state before the
    /// snapshot explains it). A format-5 snapshot is exact and does not set
    /// it; a reset record, which carries a whole state, ends it.
    lenient: AtomicBool,
    /// Serialises apply, restore and promote; holds what apply keeps
    /// between calls.
    pub(crate) apply: Mutex<ApplyScratch>,
    /// On a standby: the shard whose discarded list holds each buffer
    /// (segment id, address) that apply discarded, so a discard-release
    /// record finds its buffers without scanning every shard (this
    /// master's shards are not the primary's). Taken last, held briefly.
    pub(crate) discard_home: Mutex<HashMap<(SegmentId, u64), usize>>,
}

impl Role {
    pub(crate) fn new(standby: bool) -> Role {
        Role {
            standby: AtomicBool::new(standby),
            applied_seq: AtomicU64::new(0),
            lenient: AtomicBool::new(false),
            apply: Mutex::new(ApplyScratch::default()),
            discard_home: Mutex::new(HashMap::new()),
        }
    }

    #[inline]
    pub(crate) fn is_standby(&self) -> bool {
        self.standby.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn applied_seq(&self) -> u64 {
        self.applied_seq.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn lenient(&self) -> bool {
        self.lenient.load(Ordering::Acquire)
    }

    /// Apply mutex held.
    pub(crate) fn set_lenient(&self, on: bool) {
        self.lenient.store(on, Ordering::Release);
    }

    /// Apply mutex held.
    pub(crate) fn set_applied_seq(&self, seq: u64) {
        self.applied_seq.store(seq, Ordering::Release);
    }
}

/// The error every client operation gets on a standby.
pub(crate) fn standby_error() -> Error {
    Error::new(
        ErrorKind::UnavailableInCurrentStatus,
        "this master is a standby: it serves no client operation until it is promoted \
         (it changes only by applying a primary's journal)",
    )
}

/// What a promotion did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromoteReport {
    /// Readable objects whose lease was raised to the recovery lease
    /// (`now + default_kv_lease_ttl`).
    pub objects_leased: u64,
    /// Writes in flight taken over by the new primary (their End and
    /// Revoke calls now succeed here).
    pub writes_in_flight: u64,
    /// The last journal sequence the standby had applied.
    pub applied_seq: u64,
}

impl MasterCore {
    /// `UNAVAILABLE_IN_CURRENT_STATUS` on a standby: the answer every
    /// client operation gets there, its first line (docs/CONTRACT.md
    /// section 12.3); `Ok` on a primary. A caller that checks the role
    /// before work of its own (the C ABI's batch Starts, before they size
    /// their answers) gets the same error the operation would give.
    #[inline]
    pub fn ensure_primary(&self) -> Result<()> {
        if self.role.is_standby() {
            Err(standby_error())
        } else {
            Ok(())
        }
    }

    /// [`ensure_primary`](Self::ensure_primary) for a batch call: on a
    /// standby, one standby error per key.
    #[inline]
    pub(crate) fn reject_batch<T>(&self, n: usize) -> Option<Vec<Result<T>>> {
        self.role
            .is_standby()
            .then(|| (0..n).map(|_| Err(standby_error())).collect())
    }

    /// Whether this master is a standby (docs/CONTRACT.md section 12.3).
    pub fn is_standby(&self) -> bool {
        self.role.is_standby()
    }

    /// The last journal sequence this master applied, or that the snapshot
    /// a restore installed on it included; 0 = none. The next record it
    /// accepts is `applied_seq() + 1`. On a primary it stays what it was at
    /// promotion.
    pub fn applied_seq(&self) -> u64 {
        self.role.applied_seq()
    }

    /// Makes a standby a primary (docs/CONTRACT.md section 12.3): every
    /// readable object gets `lease = max(lease, now + default_kv_lease_ttl)`
    /// (a recovery lease: reads were not journaled), the maintenance thread
    /// starts working at its next tick, and writes in flight continue
    /// (their End and Revoke calls succeed on the promoted master, and their
    /// pending soft-pin intents commit by the usual rule). An object left
    /// with no replica (mid-unmount) is erased, as the unmount would have.
    /// `UNAVAILABLE_IN_CURRENT_STATUS` on a primary.
    pub fn promote(&self) -> Result<PromoteReport> {
        let _apply = self.role.apply.lock();
        if !self.role.is_standby() {
            return Err(Error::new(
                ErrorKind::UnavailableInCurrentStatus,
                "promote: this master is already a primary",
            ));
        }
        let mut report = PromoteReport {
            applied_seq: self.role.applied_seq(),
            ..PromoteReport::default()
        };
        // The numbering goes on after the last record applied. First, as
        // the one step that can fail: a refused promote changes nothing.
        if let Some(j) = &self.journal {
            j.continue_at(report.applied_seq.saturating_add(1))?;
        }
        // One pass over the objects, shard by shard: every readable one
        // gets the recovery lease, and an object with no replica is erased.
        // A standby holds one between two records of an unmount that drops a
        // client's segments one by one (the primary records the object after
        // one segment's pass and erases it at the last); promoted there, this
        // master erases it as that pass would have, recording the erasure
        // under its own numbering.
        let until = saturating_deadline(self.clock.now(), self.config.default_kv_lease_ttl_ms);
        for (si, shard) in self.shards.iter().enumerate() {
            let mut st = shard.state.write();
            let mut bare: Vec<(u64, u64)> = Vec::new();
            for obj in st.iter() {
                if obj.has_complete() {
                    obj.lease.fetch_max(until, Ordering::AcqRel);
                    report.objects_leased += 1;
                } else if obj.replicas.is_empty() {
                    bare.push((st.hash_of(obj), obj.seq));
                }
            }
            for (hash, seq) in bare {
                let mark = st.discarded.len();
                let scoped =
                    crate::key::scoped(st.key_of(st.find_by_seq(hash, seq).expect("listed above")));
                let k = crate::key::split(&scoped);
                self.erase(&mut st, si, hash, k, None);
                self.record_key(&mut st, hash, k, mark);
            }
            report.writes_in_flight += st.in_flight.len() as u64;
        }
        // Admission keeps the retentions at or below the larger of this
        // master's limit and what it holds now (its primary's, §11).
        {
            let map = self.retention.map.read();
            let held = crate::retention::active_count(&map, self.clock.now());
            self.retention
                .held_at_promote
                .store(held, Ordering::Relaxed);
        }
        // Only apply uses the discarded buffers' homes.
        *self.role.discard_home.lock() = HashMap::new();
        self.role.standby.store(false, Ordering::Release);
        // The maintenance thread may be asleep for a long interval; it
        // reads the role at every tick, so wake it to check the memory
        // watermark at once (an unforced check: eviction runs only above
        // it, §5; a forced one would evict a share of what the primary
        // kept).
        self.wakeup.request_check();
        // Pins of objects erased above no longer count (§4.8).
        self.settle_pins();
        Ok(report)
    }
}
