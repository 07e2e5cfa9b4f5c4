//! Recording: the journal records of an operation's outcome, built from the
//! state it left ([`ObjectImage`]s, discarded buffers by segment name), and
//! the deferred frees that keep **append before free**: while the journal
//! is on, a buffer an operation frees waits in its shard's `pending_frees`
//! until the record that frees it is appended, under the same shard lock,
//! so a placement reusing it (recorded under another shard's lock) always
//! comes later in the journal (docs/CONTRACT.md §12.1).
//!
//! Nothing here runs with the journal off: every caller checks
//! `self.journal.is_some()` first, so a master without a journal builds no
//! image and defers no free.
//!
//! The clock is recorded here too: a primary's skew when it moved
//! ([`Record::Timeline`], `record_timeline`, at maintenance ticks and wall
//! sets) and a restore's Reset (`record_reset`), both under the journal's
//! timeline lock; a standby's adoption of a Timeline (`adopt_timeline`).

use super::codec::SliceWriter;
use super::record::*;
use super::ring::Journal;
use crate::master::{free_block, MasterCore};
use crate::object::{Object, Replica, Role, Task};
use crate::segment::SegmentTable;
use crate::shard::{Discarded, ShardState};
use crate::snapshot::image::SnapshotImage;
use crate::soft_pin::SoftPinIntent;
use crate::types::{Key, ReplicaKind};
use smallvec::SmallVec;
use std::sync::atomic::Ordering;

impl MasterCore {
    /// Appends `rec` (journal on). An append fails only once the sequence
    /// space (`u64::MAX - 1` records) is exhausted, which no master
    /// reaches; the change it records has happened either way, so the
    /// operation goes on.
    pub(crate) fn journal_append(&self, rec: &Record) {
        if let Some(j) = &self.journal {
            let _ = j.append(rec);
        }
    }

    /// Appends `recs` (journal on) as consecutive records in one hold of
    /// the journal's lock: a reader sees all of them or none. Nothing for
    /// an empty slice. Fails only as [`journal_append`](Self::journal_append) does.
    pub(crate) fn journal_append_all(&self, recs: &[Record]) {
        if let (Some(j), false) = (&self.journal, recs.is_empty()) {
            let _ = j.append_all(recs);
        }
    }

    /// Records what the operation holding `st` (the shard of `k`, whose
    /// hash is `hash`) left of the key: an [`Record::ObjectSet`] of the
    /// object, or an [`Record::ObjectErased`] when there is none any more,
    /// with the buffers the operation pushed onto the shard's discarded
    /// list since `discard_mark` (`st.discarded.len()` when it took the
    /// lock). Then frees the buffers the operation deferred. Journal on.
    #[inline]
    pub(crate) fn record_key(
        &self,
        st: &mut ShardState,
        hash: u64,
        k: Key<'_>,
        discard_mark: usize,
    ) {
        if self.journal.is_some() {
            self.record_key_on(st, hash, k, discard_mark);
        }
    }

    fn record_key_on(&self, st: &mut ShardState, hash: u64, k: Key<'_>, discard_mark: usize) {
        let Some(j) = &self.journal else {
            return;
        };
        #[cfg(feature = "test-hooks")]
        self.race_point(crate::quiesce::RacePoint::BeforeRecord);
        let table = self.segments.read();
        let discarded = st.discarded.get(discard_mark..).unwrap_or_default();
        let _ = match st.find(hash, k) {
            Some(obj) => ObjectSet::plan(&table, st, obj, discarded).append(self, j),
            None => j.append(&Record::ObjectErased {
                key: RecordKey::new(k.tenant, k.key),
                discarded: named_discarded(&table, discarded),
            }),
        };
        free_pending(&table, st);
    }

    /// [`record_key`](Self::record_key) of an object the operation knows
    /// is in `slot` of `st` after its change (a Start, an End): no lookup.
    #[inline]
    pub(crate) fn record_slot(&self, st: &mut ShardState, slot: u32, discard_mark: usize) {
        if self.journal.is_some() {
            self.record_slot_on(st, slot, discard_mark);
        }
    }

    fn record_slot_on(&self, st: &mut ShardState, slot: u32, discard_mark: usize) {
        self.record_in_slot(st, slot, |j, table, st, obj| {
            let discarded = st.discarded.get(discard_mark..).unwrap_or_default();
            let _ = ObjectSet::plan(table, st, obj, discarded).append(self, j);
        });
    }

    /// What every record of an object the operation left in `slot` of
    /// `st` does around its append (`append` writes the record into the
    /// journal): under the segment table's read lock (records name
    /// segments), then the frees the operation deferred (append before
    /// free). Journal on; nothing when it is off.
    #[inline]
    fn record_in_slot(
        &self,
        st: &mut ShardState,
        slot: u32,
        append: impl FnOnce(&Journal, &SegmentTable, &ShardState, &Object),
    ) {
        let Some(j) = &self.journal else {
            return;
        };
        #[cfg(feature = "test-hooks")]
        self.race_point(crate::quiesce::RacePoint::BeforeRecord);
        let table = self.segments.read();
        let obj = st
            .slot(slot)
            .expect("the operation's object is in its slot");
        append(j, &table, st, obj);
        free_pending(&table, st);
    }

    /// Records a Start that created the object in `slot` of `st` (its key
    /// had no object; it discarded nothing) as an
    /// [`Record::ObjectStarted`]: the ObjectSet [`record_slot`] would
    /// append, in the compact spelling. `pending` is the intent the Start
    /// left pending on its write in flight (no lookup in the in-flight
    /// table). Journal on.
    ///
    /// [`record_slot`]: Self::record_slot
    #[inline]
    pub(crate) fn record_started(&self, st: &mut ShardState, slot: u32, pending: SoftPinIntent) {
        if self.journal.is_some() {
            self.record_started_on(st, slot, pending);
        }
    }

    fn record_started_on(&self, st: &mut ShardState, slot: u32, pending: SoftPinIntent) {
        self.record_in_slot(st, slot, |j, table, st, obj| {
            let start = ObjectStarted::plan(table, st, obj, pending);
            if start.replicas.is_empty() {
                // An unmount took the segments of all its replicas out of
                // the table since they were placed: a Start records no write
                // without a replica of it, so the object whole, as a
                // snapshot would hold it (no replica, no write; the
                // unmount's record of it erases it), after the counters
                // (`ObjectSet::append`).
                let _ = ObjectSet::plan(table, st, obj, &[]).append(self, j);
                return;
            }
            let _ = start.append(self, j);
        });
    }

    /// Records an End that completed replicas of the object in `slot` of
    /// `st` as an [`Record::ObjectEnded`]: the replicas `completed` (ids
    /// strictly increasing) became COMPLETE, the lease was raised to at
    /// least `at`, `commit` is the commit rule's outcome and `write_over`
    /// says the write in flight ended. An End frees and discards nothing,
    /// so no free waits for this record (append before free holds), and
    /// it takes no segment-table lock unless an earlier operation left
    /// frees deferred. Journal on.
    #[inline]
    pub(crate) fn record_ended(&self, st: &mut ShardState, slot: u32, end: &Ended<'_>) {
        if self.journal.is_some() {
            self.record_ended_on(st, slot, end);
        }
    }

    fn record_ended_on(&self, st: &mut ShardState, slot: u32, end: &Ended<'_>) {
        let Some(j) = &self.journal else {
            return;
        };
        // While an unmount runs, the records of this object since it took
        // its segments out of the table left out the replicas on them
        // (§12.1), so a standby no longer holds them: an End that completed
        // one records the object whole, which leaves them out as well. An
        // unmount that took a segment out before this End's shard lock was
        // taken is still counted here unless it is over, and then it has
        // dropped this object's replicas on it already. (Checked before the
        // race point: the object set's own recording meets it once.)
        if self.unmounts_running.load(Ordering::Acquire) != 0
            && completes_on_gone_segment(&self.segments.read(), st, slot, end)
        {
            let mark = st.discarded.len();
            self.record_slot_on(st, slot, mark);
            return;
        }
        #[cfg(feature = "test-hooks")]
        self.race_point(crate::quiesce::RacePoint::BeforeRecord);
        let obj = st
            .slot(slot)
            .expect("the operation's object is in its slot");
        let (k, token) = (KeyBytes::of(st, obj), obj.write_token);
        let _ = j.append_with(object_ended_len(k, end), |out| {
            write_object_ended(&mut SliceWriter::new(out), k, token, end)
        });
        // The End freed nothing; frees an earlier operation on the shard
        // left deferred go now, after a record, as at any record.
        if !st.pending_frees.is_empty() {
            free_pending(&self.segments.read(), st);
        }
    }

    /// Records `obj` (stored in `st`) as it stands, for a change made
    /// under the shard's *read* lock (a committed deadline cleared by
    /// compare-and-swap: cleanup's expiry, eviction's normalisation), which
    /// discards and frees nothing. Journal on.
    #[inline]
    pub(crate) fn record_read_locked(&self, st: &ShardState, obj: &Object) {
        if let Some(j) = &self.journal {
            let table = self.segments.read();
            let _ = ObjectSet::plan(&table, st, obj, &[]).append(self, j);
        }
    }

    /// Records the id counters (journal on) after an operation that
    /// reserved replica ids up to `replica_end` (exclusive), a token or a
    /// sequence and failed without giving them back, so a standby's
    /// counters (and snapshot) stay equal to the primary's. The replica
    /// counter recorded is the end of the operation's own reservation, not
    /// the counter as it stands: that can include ids other operations
    /// reserved and will still give back, and a standby, which only raises
    /// its counters, would stay above the primary's. No reservation left
    /// standing ends lower, so the primary's counter never falls below
    /// `replica_end`. Tokens and sequences are never given back: recorded
    /// as they stand.
    pub(crate) fn record_counters(&self, replica_end: u64) {
        if self.journal.is_some() {
            self.journal_append(&self.counters_record(replica_end));
        }
    }

    /// Records the primary's timeline when it moved (journal on): reads
    /// the skew (`timeline − wall`, one wall read) and, if it differs from
    /// the one the journal last recorded (a Timeline record's, a Reset
    /// image's, 0 at the start: a master's skew when it is created) by
    /// more than the clock's resolution (a manual clock: any move; a
    /// system clock: more than 1 ms), appends a [`Record::Timeline`] of it. Reading, deciding and
    /// appending hold the timeline lock (`ring.rs`), so records of the skew
    /// follow the order of its readings: no older skew is recorded after a
    /// newer one. Called at every maintenance tick and after a wall set;
    /// never on a client operation's path. Nothing on a standby: it
    /// records what it applies, under its primary's numbering, and takes
    /// the primary's skew from it (a wall step of its own is recorded, if
    /// still there, at its first tick once promoted).
    pub(crate) fn record_timeline(&self) {
        let Some(j) = &self.journal else {
            return;
        };
        let mut last = j.timeline();
        if self.role.is_standby() {
            return;
        }
        let skew = self.clock.skew();
        // A move within the clock's resolution is no wall step.
        if skew.abs_diff(*last) > self.clock.skew_resolution_ms()
            && j.append(&Record::Timeline { skew_ms: skew }).is_ok()
        {
            *last = skew;
        }
    }

    /// Appends the [`Record::Reset`] of a restore's install (journal on):
    /// `capture` captures the installed state as the Reset's sequence
    /// (given) and reads the clock for its capture instant and wall. Under
    /// the timeline lock, so no Timeline record comes between the sequence
    /// taken and the Reset, nor carries a skew read before the image's
    /// after it; the journal then stands on the image's skew
    /// (`created_at − wall_at_capture`), so no Timeline record repeats it.
    pub(crate) fn record_reset(&self, capture: impl FnOnce(u64) -> SnapshotImage) {
        let Some(j) = &self.journal else {
            return;
        };
        let mut last = j.timeline();
        let image = capture(j.last_seq() + 1);
        let skew = crate::snapshot::remap::capture_skew(&image);
        let rec = Record::Reset {
            image: crate::snapshot::codec::encode(&image),
        };
        if let (Ok(_), Some(skew)) = (j.append(&rec), skew) {
            *last = skew;
        }
    }

    /// A standby takes its primary's skew from a [`Record::Timeline`]
    /// (`apply.rs`; `skew` checked already): its clock adopts it
    /// ([`Clock::adopt_skew`](crate::clock::Clock::adopt_skew), as for an
    /// image) and, journal on, its journal stands on it, as the Timeline
    /// record its apply then appends says (so, promoted, it records no
    /// Timeline until its own skew moves from it).
    pub(crate) fn adopt_timeline(&self, skew: i64) {
        let last = self.journal.as_ref().map(Journal::timeline);
        self.clock.adopt_skew(skew);
        if let Some(mut last) = last {
            *last = skew;
        }
    }

    /// The id counters as they stand, as a record.
    /// A Counters record whose replica counter is `replica_end` (see
    /// [`record_counters`](Self::record_counters)).
    fn counters_record(&self, replica_end: u64) -> Record {
        Record::Counters {
            next_replica_id: replica_end,
            next_write_token: self.next_token.load(Ordering::Acquire),
            next_object_seq: self.next_seq.load(Ordering::Acquire),
        }
    }
}

/// A buffer of a mounted segment by name; `None` once its segment is gone
/// from the table (an unmount in progress, whose `SegmentUnmounted`, still
/// to come, drops whatever was left on it).
fn buffer_ref(table: &SegmentTable, d: &Discarded) -> Option<BufferRef> {
    let seg = table.get(d.segment)?;
    Some(BufferRef {
        segment: seg.name.to_string(),
        address: d.addr,
        len: d.len,
    })
}

/// Discarded buffers by name (those of mounted segments).
fn named_discarded(table: &SegmentTable, discarded: &[Discarded]) -> Vec<DiscardedBuffer> {
    discarded
        .iter()
        .filter_map(|d| {
            Some(DiscardedBuffer {
                buffer: buffer_ref(table, d)?,
                release_at: d.release_at,
            })
        })
        .collect()
}

/// The buffers of a release pass, by name (see [`buffer_ref`]).
pub(crate) fn released_buffers(table: &SegmentTable, due: &[Discarded]) -> Vec<BufferRef> {
    due.iter().filter_map(|d| buffer_ref(table, d)).collect()
}

/// Frees the buffers `st`'s operations deferred, now that their record is
/// in the journal.
pub(crate) fn free_pending(table: &SegmentTable, st: &mut ShardState) {
    for d in st.pending_frees.drain(..) {
        free_block(table, d.segment, d.block, d.addr, d.len);
    }
}

/// The whole state of `obj` (stored in `st`), as a record value: what
/// `ObjectSet::write` encodes (the unit tests hold the two together).
#[cfg(test)]
pub(crate) fn object_image(table: &SegmentTable, st: &ShardState, obj: &Object) -> ObjectImage {
    let k = st.key_of(obj);
    let mut replicas: Vec<ReplicaImage> = obj
        .replicas
        .iter()
        .filter_map(|r| {
            let place = match r.kind {
                ReplicaKind::LocalDisk => Placement::LocalDisk { client: r.addr },
                kind => {
                    let segment = table.get(r.segment)?.name.to_string();
                    if kind == ReplicaKind::Memory {
                        Placement::Memory {
                            segment,
                            address: r.addr,
                        }
                    } else {
                        Placement::NofSsd {
                            segment,
                            address: r.addr,
                        }
                    }
                }
            };
            Some(ReplicaImage {
                id: r.id,
                status: r.status,
                role: match r.role {
                    Role::Write => ReplicaRole::Write,
                    Role::TaskTarget => ReplicaRole::TaskTarget,
                },
                place,
            })
        })
        .collect();
    replicas.sort_unstable_by_key(|r| r.id);
    ObjectImage {
        key: RecordKey::new(k.tenant, k.key),
        size: obj.size,
        writer: obj.writer,
        put_start: obj.put_start,
        lease: obj.lease.load(Ordering::Acquire),
        seq: obj.seq,
        write_token: obj.write_token,
        hard_pin: obj.hard_pin(),
        group: obj.group().map(|g| g.name().to_owned()),
        committed: obj.committed(),
        // The write while a replica of it is in the image.
        in_flight: replicas
            .iter()
            .any(|r| {
                r.status == crate::types::ReplicaStatus::Processing && r.role == ReplicaRole::Write
            })
            .then(|| st.in_flight.get(obj.write_token))
            .flatten()
            .map(|w| InFlightImage { pending: w.pending }),
        task: obj.task().map(|t| match t {
            Task::Copy { source, targets } => TaskImage::Copy {
                source: *source,
                targets: targets.clone(),
            },
            Task::Move { source, target } => TaskImage::Move {
                source: *source,
                target: *target,
            },
            Task::Promotion { target } => TaskImage::Promotion { target: *target },
        }),
        replicas,
    }
}

/// The tag of [`Record::ObjectSet`].
const OBJECT_SET: u8 = 3;

/// The tag of [`Record::ObjectEnded`].
const OBJECT_ENDED: u8 = 11;

/// The tag of [`Record::ObjectStarted`].
const OBJECT_STARTED: u8 = 12;

/// What an End did, as [`Record::ObjectEnded`] records it (the key and
/// write token come from the object).
pub(crate) struct Ended<'a> {
    pub at: crate::clock::Instant,
    /// Ids strictly increasing.
    pub completed: &'a [u64],
    pub commit: Option<Option<crate::clock::Instant>>,
    pub write_over: bool,
}

/// Whether the End `end` completed a replica of the object in `slot` of
/// `st` whose segment is no longer in `table` (an unmount running).
fn completes_on_gone_segment(
    table: &SegmentTable,
    st: &ShardState,
    slot: u32,
    end: &Ended<'_>,
) -> bool {
    st.slot(slot).is_some_and(|obj| {
        obj.replicas.iter().any(|r| {
            r.has_buffer()
                && end.completed.binary_search(&r.id).is_ok()
                && table.get(r.segment).is_none()
        })
    })
}

/// An object's tenant and key as the shard stores them (the key's bytes
/// were copied from a `str`: writing them needs no UTF-8 check).
#[derive(Clone, Copy)]
struct KeyBytes<'a> {
    tenant: &'a str,
    key: &'a [u8],
}

impl<'a> KeyBytes<'a> {
    #[inline]
    fn of(st: &'a ShardState, obj: &'a Object) -> KeyBytes<'a> {
        KeyBytes {
            tenant: st.tenant_of(obj),
            key: obj.key_bytes(),
        }
    }
}

/// Length of the encoding of `ObjectEnded { key k, _, end }`.
fn object_ended_len(k: KeyBytes<'_>, end: &Ended<'_>) -> usize {
    1 + 8
        + k.tenant.len()
        + k.key.len()
        + 8
        + 8
        + 4
        + 8 * end.completed.len()
        + 1
        + end.commit.map_or(0, |c| 1 + c.map_or(0, |_| 8))
        + 1
}

/// Writes the bytes of `ObjectEnded { key k, write_token, end }` (the
/// codec's layout), [`object_ended_len`] of them.
fn write_object_ended(w: &mut SliceWriter<'_>, k: KeyBytes<'_>, write_token: u64, end: &Ended<'_>) {
    debug_assert!(end.completed.is_sorted_by(|a, b| a < b));
    w.u8(OBJECT_ENDED);
    w.str(k.tenant);
    w.str_bytes(k.key);
    w.u64(write_token);
    w.u64(end.at);
    w.u32(end.completed.len() as u32);
    for id in end.completed {
        w.u64(*id);
    }
    match end.commit {
        None => w.u8(0),
        Some(c) => {
            w.u8(1);
            match c {
                None => w.u8(0),
                Some(d) => {
                    w.u8(1);
                    w.u64(d);
                }
            }
        }
    }
    w.bool(end.write_over);
    debug_assert_eq!(w.left(), 0, "the exact size was computed");
}

/// The bytes of `ObjectEnded { key k, write_token, end }` in `out`
/// (cleared first).
#[cfg(test)]
pub(crate) fn encode_object_ended(
    k: Key<'_>,
    write_token: u64,
    end: &Ended<'_>,
    out: &mut Vec<u8>,
) {
    let k = KeyBytes {
        tenant: k.tenant,
        key: k.key.as_bytes(),
    };
    out.clear();
    out.resize(object_ended_len(k, end), 0);
    write_object_ended(&mut SliceWriter::new(out), k, write_token, end);
}

/// A replica's buffer segment name, `None` for LOCAL_DISK; `Err` when its
/// segment is no longer in the table (an unmount in progress: the replica
/// is left out, as a snapshot leaves it out, and its unmount drops it).
fn replica_segment<'t>(table: &'t SegmentTable, r: &Replica) -> Result<Option<&'t str>, ()> {
    if r.kind == ReplicaKind::LocalDisk {
        return Ok(None);
    }
    table.get(r.segment).map(|s| Some(&*s.name)).ok_or(())
}

/// Appends an object record of `len` bytes that `write` writes, after a
/// record of the id counters of `core` when it leaves out a replica of
/// `obj` (its segment is out of the table: an unmount in progress). The
/// ids left out may be in no other record (a Start's, an Upsert's new
/// replicas), and a standby's counters, raised past every id a record
/// names, would fall behind the primary's. The replica counter recorded
/// is one past the object's highest replica id, which the primary's
/// counter is past already ([`MasterCore::record_counters`]).
#[inline]
fn append_object_record(
    core: &MasterCore,
    j: &Journal,
    obj: &Object,
    left_out: bool,
    len: usize,
    write: impl FnOnce(&mut SliceWriter<'_>),
) -> crate::error::Result<u64> {
    if left_out {
        let end = obj.replicas.iter().map(|r| r.id + 1).max().unwrap_or(0);
        j.append(&core.counters_record(end))?;
    }
    j.append_with(len, |out| write(&mut SliceWriter::new(out)))
}

/// An `ObjectSet { image of obj, discarded }` measured for writing,
/// encoded straight from the master's state (no record value is built):
/// `discarded` entries and replicas on segments gone from the table are
/// left out (an unmount in progress drops them).
struct ObjectSet<'a> {
    table: &'a SegmentTable,
    k: KeyBytes<'a>,
    obj: &'a Object,
    group: Option<&'a str>,
    in_flight: Option<&'a crate::shard::Write>,
    task: Option<&'a Task>,
    /// The replicas in id order.
    order: std::borrow::Cow<'a, [Replica]>,
    replicas: u32,
    discarded: &'a [Discarded],
    buffers: u32,
    /// A replica is left out (its segment is out of the table).
    left_out: bool,
    len: usize,
}

impl<'a> ObjectSet<'a> {
    fn plan(
        table: &'a SegmentTable,
        st: &'a ShardState,
        obj: &'a Object,
        discarded: &'a [Discarded],
    ) -> ObjectSet<'a> {
        let k = KeyBytes::of(st, obj);
        let group = obj.group().map(|g| g.name());
        let task = obj.task();
        // Replicas in id order: an object keeps them so (checked, not
        // assumed; sorting a copy only if one ever does not).
        let order = if obj.replicas.is_sorted_by_key(|r| r.id) {
            std::borrow::Cow::Borrowed(&obj.replicas[..])
        } else {
            let mut v = obj.replicas.to_vec();
            v.sort_unstable_by_key(|r| r.id);
            std::borrow::Cow::Owned(v)
        };
        let mut len = 4;
        let mut replicas = 0u32;
        let mut writing = false;
        for r in order.iter() {
            if let Ok(seg) = replica_segment(table, r) {
                replicas += 1;
                writing |= r.is_write_processing();
                len += 8 + 3 + seg.map_or(8, |name| 4 + name.len() + 8);
            }
        }
        // The write in flight while a replica of it is recorded, as a
        // snapshot captures it: an unmount in progress may have taken the
        // segments of its last PROCESSING ones out of the table, and then
        // the write ends on the unmount's record of the object. A standby
        // never holds a write with none of its replicas (§12.1).
        let in_flight = writing.then(|| st.in_flight.get(obj.write_token)).flatten();
        len += 1 + 8 + k.tenant.len() + k.key.len() + 6 * 8 + 1;
        len += 1 + group.map_or(0, |g| 4 + g.len());
        len += 1 + obj.committed().map_or(0, |_| 8);
        len += 1 + in_flight.map_or(0, |w| {
            1 + w.pending.map_or(0, |p| {
                1 + usize::from(matches!(p, SoftPinIntent::Enable { .. })) * 8
            })
        });
        len += 1 + task.map_or(0, |t| {
            1 + match t {
                Task::Copy { targets, .. } => 8 + 4 + 8 * targets.len(),
                Task::Move { .. } => 16,
                Task::Promotion { .. } => 8,
            }
        });
        len += 4;
        let mut buffers = 0u32;
        for d in discarded {
            if let Some(seg) = table.get(d.segment) {
                buffers += 1;
                len += 4 + seg.name.len() + 3 * 8;
            }
        }
        ObjectSet {
            table,
            k,
            obj,
            group,
            in_flight,
            task,
            order,
            replicas,
            discarded,
            buffers,
            left_out: (replicas as usize) < obj.replicas.len(),
            len,
        }
    }

    /// Appends it to `j`, written in place ([`append_object_record`]).
    fn append(&self, core: &MasterCore, j: &Journal) -> crate::error::Result<u64> {
        append_object_record(core, j, self.obj, self.left_out, self.len, |w| {
            self.write(w)
        })
    }

    /// Writes its bytes (the codec's layout, `codec.rs`), `self.len` of them.
    fn write(&self, w: &mut SliceWriter<'_>) {
        let (obj, k) = (self.obj, self.k);
        w.u8(OBJECT_SET);
        w.str(k.tenant);
        w.str_bytes(k.key);
        w.u64(obj.size);
        w.u64(obj.writer);
        w.u64(obj.put_start);
        w.u64(obj.lease.load(Ordering::Acquire));
        w.u64(obj.seq);
        w.u64(obj.write_token);
        w.bool(obj.hard_pin());
        match self.group {
            None => w.u8(0),
            Some(g) => {
                w.u8(1);
                w.str(g);
            }
        }
        match obj.committed() {
            None => w.u8(0),
            Some(d) => {
                w.u8(1);
                w.u64(d);
            }
        }
        match self.in_flight {
            None => w.u8(0),
            Some(f) => {
                w.u8(1);
                match f.pending {
                    None => w.u8(0),
                    Some(p) => {
                        w.u8(1);
                        w.intent(p);
                    }
                }
            }
        }
        match self.task {
            None => w.u8(0),
            Some(t) => {
                w.u8(1);
                match t {
                    Task::Copy { source, targets } => {
                        w.u8(0);
                        w.u64(*source);
                        w.u32(targets.len() as u32);
                        for id in targets {
                            w.u64(*id);
                        }
                    }
                    Task::Move { source, target } => {
                        w.u8(1);
                        w.u64(*source);
                        w.u64(*target);
                    }
                    Task::Promotion { target } => {
                        w.u8(2);
                        w.u64(*target);
                    }
                }
            }
        }
        w.u32(self.replicas);
        for r in self.order.iter() {
            let Ok(seg) = replica_segment(self.table, r) else {
                continue;
            };
            w.u64(r.id);
            w.u8(r.status as u8);
            w.u8(match r.role {
                Role::Write => 0,
                Role::TaskTarget => 1,
            });
            match seg {
                None => {
                    w.u8(2);
                    w.u64(r.addr);
                }
                Some(name) => {
                    w.u8(if r.kind == ReplicaKind::Memory { 0 } else { 1 });
                    w.str(name);
                    w.u64(r.addr);
                }
            }
        }
        w.u32(self.buffers);
        for d in self.discarded {
            if let Some(seg) = self.table.get(d.segment) {
                w.str(&seg.name);
                w.u64(d.addr);
                w.u64(d.len);
                w.u64(d.release_at);
            }
        }
        debug_assert_eq!(w.left(), 0, "the exact size was computed");
    }
}

/// An `ObjectStarted` of `obj`, a new key's object as its Start left it,
/// measured for writing and encoded straight from the master's state:
/// replicas on segments gone from the table are left out, as
/// [`ObjectSet`] leaves them out. Each replica's segment is looked up
/// once, when it is measured.
struct ObjectStarted<'a> {
    k: KeyBytes<'a>,
    obj: &'a Object,
    group: Option<&'a str>,
    pending: SoftPinIntent,
    /// The replicas recorded, in id order, each with its segment's name
    /// (`None`: LOCAL_DISK).
    replicas: SmallVec<[(&'a Replica, Option<&'a str>); 2]>,
    /// A replica is left out (its segment is out of the table).
    left_out: bool,
    len: usize,
}

impl<'a> ObjectStarted<'a> {
    #[inline]
    fn plan(
        table: &'a SegmentTable,
        st: &'a ShardState,
        obj: &'a Object,
        pending: SoftPinIntent,
    ) -> ObjectStarted<'a> {
        // What the record leaves unspelled, as the Start left it.
        debug_assert_eq!(obj.lease.load(Ordering::Relaxed), 0);
        debug_assert!(obj.committed().is_none() && obj.task().is_none());
        debug_assert!(obj.replicas.iter().all(|r| r.is_write_processing()));
        debug_assert_eq!(
            st.in_flight.get(obj.write_token).map(|w| w.pending),
            Some(Some(pending))
        );
        let k = KeyBytes::of(st, obj);
        let group = obj.group().map(|g| g.name());
        let mut len = 1 + 8 + k.tenant.len() + k.key.len() + 5 * 8 + 1;
        len += 1 + group.map_or(0, |g| 4 + g.len());
        len += 1 + usize::from(matches!(pending, SoftPinIntent::Enable { .. })) * 8;
        len += 4;
        // Inline up to two replicas (a write places one or two per pool); more take one
        // allocation, sized here.
        let mut replicas: SmallVec<[(&Replica, Option<&str>); 2]> =
            SmallVec::with_capacity(obj.replicas.len());
        let mut sorted = true;
        for r in obj.replicas.iter() {
            if let Ok(seg) = replica_segment(table, r) {
                len += 8 + 1 + seg.map_or(8, |name| 4 + name.len() + 8);
                sorted &= replicas.last().is_none_or(|(p, _)| p.id < r.id);
                replicas.push((r, seg));
            }
        }
        // A Start's replicas come in id order; the record's are, always.
        if !sorted {
            replicas.sort_unstable_by_key(|(r, _)| r.id);
        }
        ObjectStarted {
            k,
            obj,
            group,
            pending,
            left_out: replicas.len() < obj.replicas.len(),
            replicas,
            len,
        }
    }

    /// Appends it to `j`, written in place ([`append_object_record`]).
    #[inline]
    fn append(&self, core: &MasterCore, j: &Journal) -> crate::error::Result<u64> {
        append_object_record(core, j, self.obj, self.left_out, self.len, |w| {
            self.write(w)
        })
    }

    /// Writes its bytes (the codec's layout, `codec.rs`), `self.len` of them.
    #[inline]
    fn write(&self, w: &mut SliceWriter<'_>) {
        let (obj, k) = (self.obj, self.k);
        w.u8(OBJECT_STARTED);
        w.str(k.tenant);
        w.str_bytes(k.key);
        w.u64(obj.size);
        w.u64(obj.writer);
        w.u64(obj.put_start);
        w.u64(obj.seq);
        w.u64(obj.write_token);
        w.bool(obj.hard_pin());
        match self.group {
            None => w.u8(0),
            Some(g) => {
                w.u8(1);
                w.str(g);
            }
        }
        w.intent(self.pending);
        w.u32(self.replicas.len() as u32);
        for &(r, seg) in &self.replicas {
            w.u64(r.id);
            match seg {
                None => {
                    w.u8(2);
                    w.u64(r.addr);
                }
                Some(name) => {
                    w.u8(if r.kind == ReplicaKind::Memory { 0 } else { 1 });
                    w.str(name);
                    w.u64(r.addr);
                }
            }
        }
        debug_assert_eq!(w.left(), 0, "the exact size was computed");
    }
}

/// The bytes of `ObjectStarted` of `obj` (a new key's object as its Start
/// left it, `pending` its write's intent) in `out` (cleared first), as the
/// recorder writes them into the journal.
#[cfg(test)]
pub(crate) fn encode_object_started(
    table: &SegmentTable,
    st: &ShardState,
    obj: &Object,
    pending: SoftPinIntent,
    out: &mut Vec<u8>,
) {
    let start = ObjectStarted::plan(table, st, obj, pending);
    out.clear();
    out.resize(start.len, 0);
    start.write(&mut SliceWriter::new(out));
}

/// The bytes of `ObjectSet { image of obj, discarded }` in `out` (cleared
/// first), as the recorder writes them into the journal.
#[cfg(test)]
pub(crate) fn encode_object_set(
    table: &SegmentTable,
    st: &ShardState,
    obj: &Object,
    discarded: &[Discarded],
    out: &mut Vec<u8>,
) {
    let set = ObjectSet::plan(table, st, obj, discarded);
    out.clear();
    out.resize(set.len, 0);
    set.write(&mut SliceWriter::new(out));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::codec::{decode_batch, encode_record};
    use crate::journal::Record;
    use crate::types::{Key, Pool, ReplicaSelector, SegmentId, SegmentSpec, WriteConfig};
    use crate::{Master, MasterConfig, SoftPinRequest};

    /// A journaling master of 4 shards with two memory segments (`mem0`,
    /// `mem1`) and one NOF_SSD segment (`nof0`) of 1 MiB each.
    fn journaling_master() -> Master {
        let m = Master::new(MasterConfig {
            journal_capacity_bytes: 1 << 20,
            shard_count: 4,
            ..MasterConfig::deterministic(1_000)
        })
        .unwrap();
        for (i, (name, pool)) in [
            ("mem0", Pool::Memory),
            ("mem1", Pool::Memory),
            ("nof0", Pool::NofSsd),
        ]
        .into_iter()
        .enumerate()
        {
            let spec = SegmentSpec {
                name: name.into(),
                base: (i as u64 + 1) << 30,
                size: 1 << 20,
                pool,
            };
            m.mount_segment(1, &spec).unwrap();
        }
        m
    }

    /// The `ObjectStarted` a new key's Start records for the object whose
    /// image is `image`, its write's intent `pending`.
    fn started_record(image: &ObjectImage, pending: SoftPinIntent) -> Record {
        Record::ObjectStarted {
            key: image.key.clone(),
            size: image.size,
            writer: image.writer,
            put_start: image.put_start,
            seq: image.seq,
            write_token: image.write_token,
            hard_pin: image.hard_pin,
            group: image.group.clone(),
            pending,
            replicas: image
                .replicas
                .iter()
                .map(|r| StartedReplica {
                    id: r.id,
                    place: r.place.clone(),
                })
                .collect(),
        }
    }

    // The recorder's direct encoding is exactly the codec's encoding of the
    // object's image, for objects in every shape a master makes: in
    // flight with a pending intent, committed, grouped, hard-pinned, with
    // a copy, a move or a promotion running, LOCAL_DISK, long keys and
    // other tenants, and with discarded buffers.
    #[test]
    fn the_direct_encoding_is_the_image_encoding() {
        let m = journaling_master();
        let pinned = WriteConfig {
            nof_ssd_replicas: 1,
            hard_pin: true,
            group: Some("g".into()),
            ..WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(5_000))
        };
        let long = "k".repeat(40);
        m.put_start(1, Key::new("flight"), 64, &pinned).unwrap();
        m.put_start(1, Key::scoped("tenant-2", &long), 64, &pinned)
            .unwrap();
        m.put_end(
            1,
            Key::scoped("tenant-2", &long),
            ReplicaSelector::All,
            None,
        )
        .unwrap();
        for key in ["copy", "move", "up"] {
            m.put_start(1, Key::new(key), 32, &WriteConfig::default())
                .unwrap();
            m.put_end(1, Key::new(key), ReplicaSelector::All, None)
                .unwrap();
        }
        let seg_of = |key: &str| {
            let d = &m.get_replica_list(Key::new(key)).unwrap()[0];
            match d.location {
                crate::types::Location::Buffer { segment, .. } => m.segment_name(segment).unwrap(),
                _ => unreachable!(),
            }
        };
        let other = |s: String| if s == "mem0" { "mem1" } else { "mem0" };
        m.copy_start(Key::new("copy"), &[other(seg_of("copy"))])
            .unwrap();
        m.move_start(Key::new("move"), &seg_of("move"), other(seg_of("move")))
            .unwrap();
        m.upsert_start(1, Key::new("up"), 48, &WriteConfig::default())
            .unwrap();
        m.add_local_disk_replica(7, Key::new("disk"), 16).unwrap();
        m.promotion_start(Key::new("disk"), &[]).unwrap();
        let table = m.segments.read();
        let mut seen = 0;
        for shard in m.shards.iter() {
            let st = shard.state.read();
            for obj in st.iter() {
                let mut direct = vec![0xAA; 3];
                encode_object_set(&table, &st, obj, &st.discarded, &mut direct);
                let mut via = Vec::new();
                encode_record(
                    &Record::ObjectSet {
                        image: Box::new(object_image(&table, &st, obj)),
                        discarded: named_discarded(&table, &st.discarded),
                    },
                    &mut via,
                );
                assert_eq!(&*direct, &via[..], "{:?}", st.key_of(obj));
                seen += 1;
            }
        }
        assert_eq!(seen, 6);
        assert!(m
            .shards
            .iter()
            .any(|s| !s.state.read().discarded.is_empty()));
    }

    // The recorder's direct encoding of a new key's Start is the codec's
    // encoding of its ObjectStarted, which stands for exactly the ObjectSet
    // of the object's image: for Starts in every shape (one replica, two
    // kinds, hard-pinned, grouped, each intent, long keys, other tenants,
    // PutStart, UpsertStart case A, batch).
    #[test]
    fn the_direct_start_encoding_is_the_record_encoding() {
        use crate::journal::codec::decode_record;
        let m = journaling_master();
        let rich = WriteConfig {
            memory_replicas: 2,
            nof_ssd_replicas: 1,
            hard_pin: true,
            group: Some("g".into()),
            ..WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(5_000))
        };
        let disable = WriteConfig::default().with_soft_pin(SoftPinRequest::DISABLE);
        let long = "k".repeat(40);
        m.put_start(1, Key::new("plain"), 64, &WriteConfig::default())
            .unwrap();
        m.put_start(1, Key::scoped("tenant-2", &long), 64, &rich)
            .unwrap();
        m.upsert_start(2, Key::new("upserted"), 48, &disable)
            .unwrap();
        for r in m.batch_put_start(3, &[Key::new("b1"), Key::new("b2")], &[8, 16], &rich) {
            r.unwrap();
        }
        let table = m.segments.read();
        let mut seen = 0;
        for shard in m.shards.iter() {
            let st = shard.state.read();
            for obj in st.iter() {
                let pending = st.in_flight.get(obj.write_token).unwrap().pending.unwrap();
                let mut direct = vec![0xAA; 3];
                encode_object_started(&table, &st, obj, pending, &mut direct);
                let image = object_image(&table, &st, obj);
                let started = started_record(&image, pending);
                let mut via = Vec::new();
                encode_record(&started, &mut via);
                assert_eq!(&*direct, &via[..], "{:?}", st.key_of(obj));
                assert_eq!(decode_record(&direct).unwrap(), started);
                // Exactly the ObjectSet the Start would otherwise record.
                assert_eq!(
                    started.expand_start(),
                    Record::ObjectSet {
                        image: Box::new(image),
                        discarded: vec![],
                    }
                );
                let mut set = Vec::new();
                encode_object_set(&table, &st, obj, &[], &mut set);
                assert!(direct.len() < set.len());
                seen += 1;
            }
        }
        assert_eq!(seen, 5);
    }

    // A Start's replicas out of id order, and one on a segment no longer in
    // the table (an unmount in progress): the direct encoding leaves that
    // one out and writes the others in id order, as the object's image.
    #[test]
    fn the_direct_start_encoding_sorts_replicas_and_leaves_out_unmounted_ones() {
        let m = journaling_master();
        let three = WriteConfig {
            memory_replicas: 2,
            nof_ssd_replicas: 1,
            ..WriteConfig::default()
        };
        m.put_start(1, Key::new("three"), 64, &three).unwrap();
        let table = m.segments.read();
        let mut seen = 0;
        for shard in m.shards.iter() {
            let mut st = shard.state.write();
            let Some(slot) = st
                .iter_slots()
                .find(|(_, o)| o.replicas.len() == 3)
                .map(|(slot, _)| slot)
            else {
                continue;
            };
            let pending = {
                let obj = st.slot(slot).unwrap();
                st.in_flight.get(obj.write_token).unwrap().pending.unwrap()
            };
            let obj = st.slot_mut(slot).unwrap();
            let ids: Vec<u64> = obj.replicas.iter().map(|r| r.id).collect();
            assert!(ids.is_sorted(), "a Start's replicas come in id order");
            obj.replicas.reverse();
            let (gone, kept_segment) = (obj.replicas[1].id, obj.replicas[1].segment);
            obj.replicas[1].segment = SegmentId::MAX;
            let obj = st.slot(slot).unwrap();
            let mut direct = Vec::new();
            encode_object_started(&table, &st, obj, pending, &mut direct);
            let image = object_image(&table, &st, obj);
            let recorded: Vec<u64> = image.replicas.iter().map(|r| r.id).collect();
            let mut want: Vec<u64> = ids.iter().copied().filter(|&id| id != gone).collect();
            want.sort_unstable();
            assert_eq!(recorded, want);
            let started = started_record(&image, pending);
            let mut via = Vec::new();
            encode_record(&started, &mut via);
            assert_eq!(direct, via);
            // Put back what the master's invariants expect.
            let obj = st.slot_mut(slot).unwrap();
            obj.replicas[1].segment = kept_segment;
            obj.replicas.reverse();
            seen += 1;
        }
        assert_eq!(seen, 1);
    }

    // The recorder's direct encoding of an End is the codec's encoding of
    // its ObjectEnded, in every shape of the commit outcome.
    #[test]
    fn the_direct_end_encoding_is_the_record_encoding() {
        let long = "k".repeat(40);
        for (tenant, key) in [("default", "a"), ("tenant-2", long.as_str())] {
            for commit in [None, Some(None), Some(Some(7)), Some(Some(u64::MAX >> 2))] {
                for (ids, write_over) in
                    [(&[][..], false), (&[3u64][..], true), (&[1, 4][..], false)]
                {
                    let end = Ended {
                        at: 99,
                        completed: ids,
                        commit,
                        write_over,
                    };
                    let mut direct = vec![0xAA; 5];
                    encode_object_ended(Key::scoped(tenant, key), 12, &end, &mut direct);
                    let mut via = Vec::new();
                    encode_record(
                        &Record::ObjectEnded {
                            key: RecordKey::new(tenant, key),
                            write_token: 12,
                            at: 99,
                            completed: ids.to_vec(),
                            commit,
                            write_over,
                        },
                        &mut via,
                    );
                    assert_eq!(direct, via);
                }
            }
        }
    }

    // docs/CONTRACT.md §12.1: ids a failed operation reserved and cannot
    // give back (another operation took ids since) are recorded as the
    // counters; ids given back change nothing and are not.
    #[test]
    fn ids_a_failed_operation_cannot_give_back_are_recorded() {
        let m = Master::new(MasterConfig {
            journal_capacity_bytes: 1 << 16,
            ..MasterConfig::deterministic(0)
        })
        .unwrap();
        let first = m.replica_ids(2);
        m.return_replica_ids(first, 2);
        assert_eq!(m.journal_stats().records_appended, 0);
        let first = m.replica_ids(2);
        let other = m.replica_ids(1);
        m.return_replica_ids(first, 2);
        // The end of the failed operation's own reservation, not the
        // counter as it stands (`other + 1`): the other operation may
        // still give its id back.
        let b = decode_batch(&m.journal_read_to_vec(1).unwrap()).unwrap();
        assert_eq!(
            b.records,
            [Record::Counters {
                next_replica_id: first + 2,
                next_write_token: 1,
                next_object_seq: 1,
            }]
        );
        // It does: the primary's counter is back at first + 2, which is
        // what a standby applying the record holds.
        m.return_replica_ids(other, 1);
        assert_eq!(m.replica_ids(0), first + 2);
    }
}
