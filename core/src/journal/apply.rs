//! Applying a primary's journal on a standby (docs/CONTRACT.md section
//! 12.3). Every record is installed by its outcome: an [`ObjectSet`] makes
//! the object under its key exactly its image, an [`ObjectErased`] removes
//! it, an [`ObjectEnded`] completes the replicas an End completed, an
//! [`ObjectStarted`] is the ObjectSet it stands for, and so on; nothing is
//! re-decided, and no instant is shifted (a standby keeps the primary's
//! timeline values). A standby reads them on the primary's timeline too:
//! it takes the primary's skew from every image it installs (a Reset) and
//! from every [`Timeline`] record, the skew a primary records when its
//! wall was stepped (`Clock::adopt_skew`: a system timeline moves to read
//! the wall plus that skew; a manual clock keeps its instant and sets its
//! wall apart), and a journaling standby records it again for the
//! standbys behind it, as it records every record it applies.
//!
//! # Order and atomicity
//!
//! The whole input is checked before anything is applied: every batch
//! decoded, its sequence numbers checked and what each record to apply
//! names checked, so a corrupt batch (`DESERIALIZE_FAIL`) or a gap
//! (`INVALID_PARAMS`) applies nothing. Decoding is the borrowed one of
//! `view.rs` (it accepts exactly what the owned decoder accepts). The
//! check keeps the views of the first `WINDOW` (16 384) records to apply
//! in a window (they borrow their keys and names from the input; the
//! window's allocation is kept from one call to the next) and drops the
//! others once checked; the records are applied from the window, and
//! those it had no room for are decoded again, a window at a time, as it
//! empties. So the memory of a call is bounded whatever the number of
//! records of its input: the window, what its views hold out of line
//! (replica lists past the first, a task's targets, the fields of a
//! record that is not an object record: each in proportion to the
//! record's own bytes) and the first Reset's snapshot, decoded while
//! checking. An input of up to `WINDOW` records is parsed once; a longer
//! one's later records twice. The window is refilled only when fewer than
//! `RUN` records are left in it, so the runs (below) are the ones a list
//! of the whole input would give. Records at or below the applied
//! sequence are skipped, so re-applying a batch is a no-op.
//! Records are then applied in sequence order, one at a time; each
//! is checked against the state before it changes anything, so a record
//! that does not fit (an unknown segment, an address already taken, a
//! missing object, an image no master holds, a Reset whose snapshot
//! decodes but cannot be staged here) changes nothing, fails the call with
//! `INVALID_PARAMS` naming its sequence and kind, and leaves the applied
//! sequence just before it — the records before it stay applied.
//! `DESERIALIZE_FAIL` always means nothing of the call applied.
//!
//! # Locks
//!
//! Apply runs under the role's apply mutex (one apply at a time, never
//! across a promote) and takes the master's locks in their usual order.
//! Consecutive object records (up to `RUN`, 64) are applied as a run under
//! the write locks of every shard they touch, taken once each in ascending
//! index order before the run's first record and released after its last
//! (see `apply_run`); any other record (mount, unmount, discard release,
//! group retention, counters, reset) ends a run and is applied alone with
//! no shard lock held, so a record that depends on a mount or unmount
//! always sees it. Inside a shard lock: the segment table (read) —
//! released before the group domain is entered — and the deadline index
//! last. The index rebuild a change asks for runs after the run, with no
//! lock held. On a standby nothing else changes the state (client
//! operations and maintenance are refused), so checking under one lock
//! and changing under another never races.
//!
//! [`ObjectSet`]: Record::ObjectSet
//! [`ObjectErased`]: Record::ObjectErased
//! [`ObjectEnded`]: Record::ObjectEnded
//! [`ObjectStarted`]: Record::ObjectStarted
//! [`Timeline`]: Record::Timeline

use super::record::*;
use super::view::{
    check_batch_views, DiscardedView, ImageView, InputViews, KeyView, KindView, PlacementView,
    RecordView,
};
use crate::clock::{Instant, MAX_INSTANT};
use crate::error::{Error, ErrorKind, Result};
use crate::group::Group;
use crate::key::scoped;
use crate::master::{free_block, MasterCore};
use crate::object::{NewRecord, Object, Replica, Replicas, Role, Task, LOCAL_DISK_SEGMENT};
use crate::object_ref::ObjectRef;
use crate::retention::REGISTRY_SHARD;
use crate::segment::{BlockId, BufferOwner, Mounted, Segment};
use crate::shard::{Discarded, ShardState};
use crate::snapshot::image::SnapshotImage;
use crate::snapshot::restore::{counters_carry_on, StageMode};
use crate::task_replicas::{self, TaskReplica};
use crate::types::{Key, Pool, ReplicaKind, ReplicaStatus, SegmentId, SegmentSpec};
use hashbrown::HashMap;
use parking_lot::{Mutex, RwLockWriteGuard};
use smallvec::SmallVec;
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What an [`apply_journal`](MasterCore::apply_journal) call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApplyReport {
    /// Records applied by this call.
    pub records_applied: u64,
    /// Records at or below the applied sequence, skipped (already applied).
    pub records_skipped: u64,
    /// The applied sequence after the call.
    pub last_seq: u64,
}

/// A record that does not fit the standby's state.
fn misfit(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidParams, msg.into())
}

/// Checks what a record names that decoding alone does not: its replica
/// ids, write token and creation sequence are below `MAX_INSTANT`, and the
/// counters it sets at most that, as a snapshot's counters must be (a
/// restore refuses more: counters that carry on with plain increments
/// would wrap, handing out ids and tokens again); a Reset's snapshot
/// decodes (and so passes the snapshot's structural checks) and carries
/// such counters; a Timeline's skew is one a master can have (its
/// magnitude at most `MAX_INSTANT`: timeline and wall both lie in
/// `[0, MAX_INSTANT]`). Nothing is changed. A Reset's decoded snapshot is
/// returned, for its apply to install without decoding it again.
fn check_before_apply(rec: &RecordView<'_>) -> Result<Option<SnapshotImage>> {
    fn below(what: &str, v: u64) -> Result<()> {
        if v >= MAX_INSTANT {
            return Err(Error::new(
                ErrorKind::DeserializeFail,
                format!("{what} {v} is not below {MAX_INSTANT}: a master could not carry on"),
            ));
        }
        Ok(())
    }
    match &rec.kind {
        KindView::ObjectSet { image, .. } | KindView::ObjectStarted { image } => {
            below("creation sequence", image.seq)?;
            below("write token", image.write_token)?;
            image
                .replicas
                .iter()
                .try_for_each(|r| below("replica id", r.id))?;
            if let Some(t) = image.task.as_deref() {
                t.ids().try_for_each(|id| below("task replica id", id))?;
            }
        }
        KindView::ObjectEnded {
            write_token,
            completed,
            ..
        } => {
            below("write token", *write_token)?;
            completed
                .iter()
                .try_for_each(|&id| below("replica id", id))?;
        }
        KindView::ObjectErased { .. } => {}
        KindView::Other(Record::Counters {
            next_replica_id,
            next_write_token,
            next_object_seq,
        }) => counters_carry_on(*next_replica_id, *next_write_token, *next_object_seq)?,
        KindView::Other(Record::Timeline { skew_ms }) => {
            if skew_ms.unsigned_abs() > MAX_INSTANT {
                return Err(Error::new(
                    ErrorKind::DeserializeFail,
                    format!(
                        "skew {skew_ms} ms is beyond +-{MAX_INSTANT}: no timeline and wall \
                         within [0, MAX_INSTANT] are that far apart"
                    ),
                ));
            }
        }
        KindView::Other(Record::Reset { image }) => {
            let img = crate::snapshot::codec::decode(image)?;
            counters_carry_on(
                img.next_replica_id,
                img.next_write_token,
                img.next_object_seq,
            )?;
            return Ok(Some(img));
        }
        KindView::Other(_) => {}
    }
    Ok(None)
}

/// What [`check_input`] found of an input that may be applied.
struct Checked<'a> {
    /// Records at or below the applied sequence (skipped).
    skipped: u64,
    /// The first Reset's snapshot, decoded (an input holds one Reset as a
    /// rule: it is decoded once; a later one's is decoded again when it
    /// applies, so no more than one image waits beside the one being
    /// installed).
    first_reset: Option<Box<SnapshotImage>>,
    /// The records to apply that the window had no room for, from the
    /// first of them on, to decode again when the window has.
    left_out: Option<InputViews<'a>>,
}

/// Checks an input before anything of it applies: every batch's framing
/// (`DESERIALIZE_FAIL`), the sequence (a gap is `INVALID_PARAMS`), then
/// what each record to apply names ([`check_before_apply`],
/// `DESERIALIZE_FAIL`). One parse of each record: the first [`WINDOW`]
/// records to apply are kept in `window` (empty), the others dropped once
/// checked; a record's names are checked as it is parsed, and a refusal is
/// reported once every batch's framing and the sequence are checked
/// (either of those, wherever in the input, comes first). `applied` is the
/// applied sequence.
fn check_input<'a>(
    bytes: &'a [u8],
    applied: u64,
    window: &mut Vec<(u64, RecordView<'a>)>,
) -> Result<Checked<'a>> {
    let mut checked = Checked {
        skipped: 0,
        first_reset: None,
        left_out: None,
    };
    // The first record refused for what it names.
    let mut refused: Option<Error> = None;
    let (mut rest, mut offset, mut next) = (bytes, 0usize, applied.saturating_add(1));
    let mut batch_no = 0usize;
    while !rest.is_empty() {
        let first_reset = &mut checked.first_reset;
        let framed = check_batch_views(rest, next, window, WINDOW, |seq, rec| {
            if refused.is_some() {
                return;
            }
            match check_before_apply(rec) {
                Ok(reset) => {
                    if first_reset.is_none() {
                        *first_reset = reset.map(Box::new);
                    }
                }
                Err(e) => {
                    refused = Some(Error::new(
                        ErrorKind::DeserializeFail,
                        format!(
                            "journal record {seq} ({}): {}; nothing applied",
                            rec.name(),
                            e.message()
                        ),
                    ))
                }
            }
        });
        let batch = framed.map_err(|e| {
            Error::new(
                ErrorKind::DeserializeFail,
                format!(
                    "journal batch {batch_no} (at byte {offset} of the input): {}; \
                     nothing applied",
                    e.message()
                ),
            )
        })?;
        let (first, count) = (batch.first_seq, batch.count);
        // Sequences within a batch are consecutive: the records below
        // `next` are skipped, the rest must start at `next`.
        let skip = usize::try_from(next.saturating_sub(first)).map_or(count, |s| s.min(count));
        if skip < count && first + skip as u64 != next {
            return Err(misfit(format!(
                "journal gap: this standby has applied up to {} and needs record {next} \
                 next, but the input continues at record {first} (batch {batch_no}); \
                 nothing applied",
                next - 1
            )));
        }
        if let (None, Some((seq, pos))) = (&checked.left_out, batch.left_out) {
            let resumed = InputViews::resume(rest, seq, pos).map_err(|e| {
                Error::new(
                    ErrorKind::Internal,
                    format!("journal input: {}", e.message()),
                )
            })?;
            checked.left_out = Some(resumed);
        }
        checked.skipped += skip as u64;
        next += (count - skip) as u64;
        rest = &rest[batch.len..];
        offset += batch.len;
        batch_no += 1;
    }
    match refused {
        Some(e) => Err(e),
        None => Ok(checked),
    }
}

/// A record applied alone: a Reset comes with its decoded snapshot.
enum Other<'a> {
    Record(&'a Record),
    Reset(Box<SnapshotImage>),
}

/// The write in flight an ObjectSet installs (its token, the record's slot,
/// its pending intent), left unstarted when the next record of the run is
/// the End that ends that write (a put pair): starting it and ending it
/// under the same shard lock, with nothing in between, leaves the writes
/// in flight as they were, so neither is done. Started after all if that
/// End does not apply (the Start stays applied) or does not come.
#[derive(Clone, Copy)]
struct Deferred {
    token: u64,
    slot: u32,
    pending: Option<crate::soft_pin::SoftPinIntent>,
}

/// A buffer of the object's previous state.
#[derive(Clone, Copy)]
struct OldBuffer {
    segment: SegmentId,
    addr: u64,
    block: BlockId,
    replica: u64,
}

impl MasterCore {
    /// Applies journal batches (one, or several back to back) to this
    /// standby, in order (docs/CONTRACT.md section 12.3). See the module
    /// docs for what is checked first and what a failure leaves.
    /// `UNAVAILABLE_IN_CURRENT_STATUS` on a primary.
    pub fn apply_journal(&self, bytes: &[u8]) -> Result<ApplyReport> {
        let mut scratch = self.role.apply.lock();
        if !self.role.is_standby() {
            return Err(Error::new(
                ErrorKind::UnavailableInCurrentStatus,
                "apply_journal: this master is a primary; only a standby applies a journal",
            ));
        }
        // The window of views of the last call, empty, with its allocation.
        let mut window = recycle(std::mem::take(&mut scratch.views));
        let done = self.apply_input(bytes, &mut window);
        scratch.views = recycle(window);
        done
    }

    /// [`apply_journal`](Self::apply_journal) with the apply mutex held;
    /// `window` (empty) receives the views of the records to apply, at most
    /// [`WINDOW`] at a time.
    fn apply_input<'a>(
        &self,
        bytes: &'a [u8],
        window: &mut Vec<(u64, RecordView<'a>)>,
    ) -> Result<ApplyReport> {
        let start = self.role.applied_seq();
        // Everything is checked before anything is applied, the first
        // WINDOW records to apply kept in the window.
        let Checked {
            skipped,
            mut first_reset,
            left_out,
        } = check_input(bytes, start, window)?;
        let mut report = ApplyReport {
            records_skipped: skipped,
            last_seq: start,
            ..ApplyReport::default()
        };
        // Then the records are applied from the window: object records in
        // runs of up to RUN consecutive ones (see `apply_run`), any other
        // record alone. The records the window had no room for are decoded
        // again, a chunk at a time, into it: it is refilled when fewer
        // than RUN records are left in it, the ones left moved to its
        // front first, so each run is formed from RUN records (or all that
        // are left of the input) as over a list of the whole input: a put
        // pair split by a chunk's end still applies in one run, and the
        // runs are the same whatever the window's size.
        let (mut more, mut i) = (left_out, 0);
        loop {
            if let Some(input) = more.as_mut().filter(|_| window.len() - i < RUN) {
                window.drain(..i);
                i = 0;
                let left = input.fill(window, WINDOW).map_err(|e| {
                    Error::new(
                        ErrorKind::Internal,
                        format!(
                            "journal input checked, then not decoded again: {}; records up \
                             to {} are applied",
                            e.message(),
                            report.last_seq
                        ),
                    )
                })?;
                if !left {
                    more = None;
                }
            }
            if i == window.len() {
                break;
            }
            let n = window[i..]
                .iter()
                .take(RUN)
                .take_while(|(_, v)| !matches!(v.kind, KindView::Other(_)))
                .count();
            let applied = if n == 0 {
                let (seq, rec) = &window[i];
                let KindView::Other(other) = &rec.kind else {
                    unreachable!("a run takes every object record")
                };
                let input = match other {
                    Record::Reset { image } => match first_reset.take() {
                        Some(img) => Ok(Other::Reset(img)),
                        None => crate::snapshot::codec::decode(image)
                            .map(|img| Other::Reset(Box::new(img))),
                    },
                    other => Ok(Other::Record(other)),
                };
                input
                    .and_then(|input| self.apply_one(*seq, rec, input))
                    .map(|()| 1)
                    .map_err(|e| (0, e))
            } else {
                self.apply_run(&window[i..i + n])
            };
            // No lock is held here: run the index rebuild a change asked for.
            self.settle_index();
            // On an error the records before the failing one stay applied
            // (the applied sequence says which); the report is not returned.
            let done = applied.map_err(|(_, e)| e)?;
            report.records_applied += done as u64;
            report.last_seq = window[i + done - 1].0;
            i += done;
        }
        Ok(report)
    }

    /// Applies one record that is not an object record, with no lock held.
    fn apply_one(&self, seq: u64, rec: &RecordView, other: Other<'_>) -> Result<()> {
        // A standby with a journal records what it applies under the
        // primary's numbering (a standby of it applies the same).
        if let Some(j) = &self.journal {
            j.continue_at(seq)?;
        }
        let applied = match other {
            Other::Record(r) => self.apply_record(r),
            Other::Reset(img) => self.apply_reset(&img),
        };
        if let (Ok(()), Some(j)) = (&applied, &self.journal) {
            // A reset's install appended its own Reset already, at this
            // sequence: the same state, captured on this standby's clock,
            // which has taken the primary's skew.
            if j.last_seq() < seq {
                j.append_encoded(rec.bytes)?;
            }
        }
        applied.map_err(|e| does_not_apply(seq, rec, e))?;
        self.role.set_applied_seq(seq);
        Ok(())
    }

    /// Applies a run of consecutive object records, in order, holding the
    /// write locks of every shard they touch (taken once each, in ascending
    /// index order, as the lock order of `master.rs` requires) for the
    /// whole run: a put pair's two records, and the records of other keys
    /// between them, take no lock of their own. Before the first record is
    /// applied, the hash-index buckets of every record's key are
    /// loaded in one loop of independent loads (as a batch read warms
    /// them, `ops/batch.rs`), so the cache misses of the run's lookups
    /// overlap instead of forming one chain per record. Nothing a record
    /// does depends on a lock the run holds being free: the segment table,
    /// the group domain, the deadline index and the journal come after the
    /// shard locks in the lock order, and the records that change segments
    /// (mount, unmount) are never part of a run. How many records it
    /// applied, or that many and the error of the record after them.
    fn apply_run(&self, run: &[(u64, RecordView)]) -> std::result::Result<usize, (usize, Error)> {
        debug_assert!(run.len() <= RUN);
        // The views were decoded into a window of up to WINDOW records, and
        // the input's keys lie further back still: by now both may have
        // left the cache. One loop of independent loads over the run's
        // views and keys (nothing branches on what they read) puts their
        // misses in flight together, before the loops below need them one
        // record at a time.
        black_box(run.iter().fold(0u64, |f, (_, rec)| f ^ touch(rec)));
        // Each record's key hash and the position of its shard in `shards`
        // (None: an invalid key, refused when its turn comes).
        // A record naming the key of the record before it (a put pair's
        // End) reuses that record's hash and shard; `same` says which do,
        // so the keys are compared once.
        let mut loc: SmallVec<[Option<(u64, usize)>; RUN]> = SmallVec::new();
        let mut same: SmallVec<[bool; RUN]> = SmallVec::new();
        let mut shards: SmallVec<[usize; RUN]> = SmallVec::new();
        let mut prev: Option<&KeyView> = None;
        for (_, rec) in run {
            let rk = object_key(&rec.kind);
            let is_same = matches!((rk, prev), (Some(rk), Some(p)) if rk == p);
            let l = match loc.last() {
                Some(&l) if is_same => l,
                _ => rk.and_then(|rk| {
                    let k = Key::scoped(rk.tenant, rk.key);
                    k.validate().ok().map(|()| self.locate(k))
                }),
            };
            // A record of the key before it is on that record's shard,
            // listed already (a put pair's End: half the list to sort).
            if let (Some((_, si)), false) = (l, is_same) {
                // The shard's lock word and headers, on their way while
                // the rest of the run is located.
                crate::memory::prefetch_all(&self.shards[si]);
                shards.push(si);
            }
            loc.push(l);
            same.push(is_same);
            prev = rk;
        }
        shards.sort_unstable();
        shards.dedup();
        let at: SmallVec<[Option<(u64, u8)>; RUN]> = loc
            .iter()
            .map(|l| {
                l.map(|(h, si)| {
                    let pos = shards.binary_search(&si).expect("listed above");
                    (h, pos as u8)
                })
            })
            .collect();
        // Ascending shard order, as the lock order requires.
        let mut guards: SmallVec<[RwLockWriteGuard<ShardState>; RUN]> = shards
            .iter()
            .map(|&s| self.shards[s].state.write())
            .collect();
        // Every record's index bucket, prefetched (`memory.rs`): the loop
        // below then finds the buckets arrived or on their way.
        for a in &at {
            let Some((h, pos)) = *a else { continue };
            guards[usize::from(pos)].prefetch_bucket(h);
        }
        let mut fold = 0u64;
        for ((_, rec), a) in run.iter().zip(&at) {
            let Some((h, pos)) = *a else { continue };
            let st = &mut guards[usize::from(pos)];
            fold ^= st.candidate(h).map_or(0, ShardState::warm_slot);
            // An ObjectSet of a new key inserts into the arena: warm the
            // slot it will fill.
            if matches!(
                rec.kind,
                KindView::ObjectSet { .. } | KindView::ObjectStarted { .. }
            ) {
                fold ^= st.warm_insert();
            }
        }
        black_box(fold);
        // The last ObjectSet applied: its index in the run and its handle.
        let mut installed: Option<(usize, ObjectRef)> = None;
        // The write in flight of a put pair's Start whose End follows and
        // ends the write, not started yet (see `Deferred`), and the shard
        // position it goes to; started if anything but that End comes.
        let mut deferred: Option<(u8, Deferred)> = None;
        let applied = (|| {
            for (done, ((seq, rec), loc)) in run.iter().zip(&at).enumerate() {
                self.apply_in_run(
                    run,
                    done,
                    *seq,
                    rec,
                    *loc,
                    &same,
                    &shards,
                    &mut guards[..],
                    &mut installed,
                    &mut deferred,
                )
                .map_err(|e| (done, e))?;
            }
            Ok(run.len())
        })();
        if let Some((pos, d)) = deferred {
            guards[usize::from(pos)]
                .in_flight
                .start(d.token, d.slot, d.pending);
        }
        applied
    }

    /// Applies record `done` of `run` (`seq`, `rec`, its key's hash and
    /// shard position `loc`; `same[i]`: record `i` names the key of the
    /// record before it), for [`apply_run`](Self::apply_run), which
    /// holds the shard locks `guards` (of `shards`). `installed` is the
    /// run's last ObjectSet applied, `deferred` its write in flight, if not
    /// started yet.
    #[allow(clippy::too_many_arguments)]
    fn apply_in_run(
        &self,
        run: &[(u64, RecordView)],
        done: usize,
        seq: u64,
        rec: &RecordView,
        loc: Option<(u64, u8)>,
        same: &[bool],
        shards: &[usize],
        guards: &mut [RwLockWriteGuard<ShardState>],
        installed: &mut Option<(usize, ObjectRef)>,
        deferred: &mut Option<(u8, Deferred)>,
    ) -> Result<()> {
        // Only the End right after its Start takes the write left
        // unstarted; before any other record it is started.
        let pair_end = matches!(rec.kind, KindView::ObjectEnded { .. })
            && installed.is_some_and(|(i, _)| i + 1 == done);
        if !pair_end {
            if let Some((pos, d)) = deferred.take() {
                guards[usize::from(pos)]
                    .in_flight
                    .start(d.token, d.slot, d.pending);
            }
        }
        if let Some(j) = &self.journal {
            j.continue_at(seq)?;
        }
        {
            let applied = match loc {
                None => Err(invalid_key(&rec.kind)),
                Some((hash, pos)) => {
                    let (si, st) = (shards[usize::from(pos)], &mut *guards[usize::from(pos)]);
                    // A Start's End that ends the write comes next: the
                    // write in flight is not started (the End would end it).
                    let ends_next = |image: &ImageView| match run.get(done + 1) {
                        Some((
                            _,
                            RecordView {
                                kind:
                                    KindView::ObjectEnded {
                                        write_token,
                                        write_over: true,
                                        ..
                                    },
                                ..
                            },
                        )) => same[done + 1] && *write_token == image.write_token,
                        _ => false,
                    };
                    match &rec.kind {
                        KindView::ObjectSet { .. } | KindView::ObjectStarted { .. } => {
                            // A Start of a new key is the ObjectSet it
                            // stands for, with nothing discarded, of a key
                            // that has no object.
                            let (image, discarded, new_key) = match &rec.kind {
                                KindView::ObjectSet { image, discarded } => {
                                    (image, &discarded[..], false)
                                }
                                KindView::ObjectStarted { image } => (image, &[][..], true),
                                _ => unreachable!("matched above"),
                            };
                            let defer = ends_next(image);
                            self.apply_object_set(st, si, hash, image, discarded, new_key, defer)
                                .map(|(h, d)| {
                                    *installed = Some((done, h));
                                    *deferred = d.map(|d| (pos, d));
                                })
                        }
                        KindView::ObjectErased { key, discarded } => {
                            self.apply_erase(st, si, hash, key, discarded)
                        }
                        KindView::ObjectEnded {
                            key,
                            write_token,
                            at,
                            completed,
                            commit,
                            write_over,
                        } => {
                            // A put pair's End right after its Start: the
                            // Start's handle, no second lookup, and the
                            // write in flight the Start left unstarted.
                            let pair = installed.filter(|&(i, _)| i + 1 == done && same[done]);
                            let unstarted = deferred.take_if(|_| pair.is_some());
                            let ended = self.apply_ended(
                                st,
                                si,
                                hash,
                                key,
                                *write_token,
                                *at,
                                completed,
                                *commit,
                                *write_over,
                                pair.map(|(_, h)| h),
                                unstarted.is_some(),
                            );
                            if ended.is_err() {
                                // The Start stays applied: its write too.
                                *deferred = unstarted;
                            }
                            ended
                        }
                        KindView::Other(_) => unreachable!("runs hold object records only"),
                    }
                }
            };
            if let (Ok(()), Some(j)) = (&applied, &self.journal) {
                j.append_encoded(rec.bytes)?;
            }
            applied.map_err(|e| does_not_apply(seq, rec, e))?;
            self.role.set_applied_seq(seq);
        }
        Ok(())
    }

    /// Installs a Reset's snapshot, decoded (and checked) before the call
    /// applied anything. A snapshot that decodes and still cannot be
    /// staged here (what staging refuses beyond the snapshot's checks is
    /// this standby's: its segment ids, its memory) does not fit this
    /// standby: `INVALID_PARAMS`, the records before it applied, nothing of
    /// it. (Staging in the check phase instead would build the whole state
    /// twice, or hold a second copy of it while the records before the
    /// Reset apply; staging's own errors are `DESERIALIZE_FAIL`, which in an
    /// apply means nothing applied.)
    fn apply_reset(&self, img: &SnapshotImage) -> Result<()> {
        let (staged, _) = self.stage(img, StageMode::Verbatim).map_err(|e| {
            misfit(format!(
                "its snapshot decodes but cannot be installed here: {}",
                e.message()
            ))
        })?;
        // The primary's timeline with its state (docs/CONTRACT.md 12.1),
        // before the install, whose Reset record (a journaling standby's)
        // hands it on to the standbys behind it.
        if let Some(skew) = crate::snapshot::remap::capture_skew(img) {
            self.clock.adopt_skew(skew);
        }
        self.install(staged);
        self.role.set_lenient(false);
        Ok(())
    }

    /// Applies a record that is neither an object record nor a Reset.
    fn apply_record(&self, rec: &Record) -> Result<()> {
        match rec {
            Record::SegmentMounted {
                owner,
                name,
                pool,
                base,
                size,
            } => {
                let spec = SegmentSpec {
                    name: name.clone(),
                    base: *base,
                    size: *size,
                    pool: *pool,
                };
                match self.segments.write().mount(*owner, &spec) {
                    Ok(Mounted::New(_)) => Ok(()),
                    Ok(Mounted::Existing(_)) => {
                        Err(misfit(format!("segment {name:?} is already mounted here")))
                    }
                    Err(e) => Err(misfit(format!("segment {name:?}: {}", e.message()))),
                }
            }
            Record::SegmentUnmounted { owner, name } => self.apply_unmount(*owner, name),
            // The view decoder hands these out as views (`apply_journal`).
            Record::ObjectSet { .. }
            | Record::ObjectErased { .. }
            | Record::ObjectEnded { .. }
            | Record::ObjectStarted { .. } => Err(Error::new(
                ErrorKind::Internal,
                "object records are applied from their views (view::KindView)",
            )),
            Record::DiscardReleased { at, buffers } => self.apply_discard_released(*at, buffers),
            Record::GroupRetained {
                tenant,
                group,
                deadline,
            } => {
                let id = scoped(Key::scoped(tenant, group));
                let mut map = self.retention.map.write();
                self.retention
                    .index
                    .register(&id, REGISTRY_SHARD, *deadline);
                if map.insert(id, *deadline).is_none() {
                    self.metrics.retained_groups.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
            Record::GroupReleased { tenant, group } => {
                let id = scoped(Key::scoped(tenant, group));
                let mut map = self.retention.map.write();
                if map.remove(&id).is_none() {
                    return Err(misfit(format!(
                        "group {group:?} of tenant {tenant:?} is not retained here"
                    )));
                }
                self.retention.index.unregister(&id);
                self.metrics.retained_groups.fetch_sub(1, Ordering::Relaxed);
                Ok(())
            }
            Record::RetentionExpired {
                tenant,
                group,
                deadline,
            } => {
                let id = scoped(Key::scoped(tenant, group));
                let mut map = self.retention.map.write();
                let have = map.get(&id).copied();
                if have != Some(*deadline) {
                    return Err(misfit(format!(
                        "group {group:?} of tenant {tenant:?}: retention deadline here is \
                         {have:?}, the record expires {deadline}"
                    )));
                }
                map.remove(&id);
                self.retention.index.unregister(&id);
                self.metrics.retained_groups.fetch_sub(1, Ordering::Relaxed);
                Ok(())
            }
            Record::Counters {
                next_replica_id,
                next_write_token,
                next_object_seq,
            } => {
                self.raise_counters(*next_replica_id, *next_write_token, *next_object_seq);
                Ok(())
            }
            Record::Reset { .. } => Err(Error::new(
                ErrorKind::Internal,
                "a Reset is applied from the image its check decoded",
            )),
            // The primary's timeline from here on (its skew was checked
            // with the input).
            Record::Timeline { skew_ms } => {
                self.adopt_timeline(*skew_ms);
                Ok(())
            }
        }
    }

    /// Raises each id counter to at least the given value. On a standby
    /// only apply and restore move the counters, both under the apply
    /// mutex the caller holds, so a load and a store do (a locked
    /// read-modify-write per record cost more than the rest of an object
    /// record's install).
    fn raise_counters(&self, replica: u64, token: u64, seq: u64) {
        for (c, v) in [
            (&self.next_replica_id, replica),
            (&self.next_token, token),
            (&self.next_seq, seq),
        ] {
            if c.load(Ordering::Acquire) < v {
                c.store(v, Ordering::Release);
            }
        }
    }

    /// Installs `img` as the object under its key (created if absent;
    /// `new_key`: the record is an ObjectStarted, whose key had no object
    /// on the primary, so an object here is a divergence, refused).
    /// `st` is shard `si`, write-locked, where the key (valid) hashes to
    /// `hash`.
    #[allow(clippy::too_many_arguments)]
    fn apply_object_set(
        &self,
        st: &mut ShardState,
        si: usize,
        hash: u64,
        img: &ImageView,
        discarded: &[DiscardedView],
        new_key: bool,
        defer: bool,
    ) -> Result<(ObjectRef, Option<Deferred>)> {
        let k = Key::scoped(img.key.tenant, img.key.key);
        if new_key {
            // An ObjectStarted's image, as its decoder builds it, holds
            // nothing `check_image` refuses but a size of 0: no task, every
            // replica a PROCESSING write replica, sorted, of the write in
            // flight it holds.
            debug_assert!(img.task.is_none() && img.in_flight.is_some());
            if img.size == 0 {
                return Err(misfit(format!("object {:?}: size 0", img.key.to_key())));
            }
        } else {
            check_image(img)?;
        }
        // One lookup: the handle finds the object again without hashing.
        let at = st.locate(hash, k, si as u32);
        if new_key && at.is_some() {
            return Err(misfit(format!(
                "object {:?} already here: an ObjectStarted creates a key that has no object",
                img.key.to_key()
            )));
        }
        // Room for a new key's record, before anything changes.
        let mut room = match at {
            None => Some(st.reserve_insert()?),
            Some(_) => None,
        };
        let old = at.and_then(|r| st.get(r)).map(|o| {
            (
                old_buffers(o),
                o.size,
                o.seq,
                o.write_token,
                o.committed(),
                o.group().cloned(),
                o.pin_version,
            )
        });
        let old_bufs = old.as_ref().map_or(&[][..], |o| &o.0[..]);
        let old_size = old.as_ref().map_or(0, |o| o.1);
        // The old buffers by place: each new replica and discarded buffer
        // finds its own in O(log n), not in a scan of them all.
        let old_at = OldIndex::new(old_bufs);
        // Buffers: keep, reserve, then drop (free or discard) the rest.
        let table = self.segments.read();
        let mut kept: SmallVec<[bool; 4]> = smallvec::smallvec![false; old_bufs.len()];
        // Borrowed from the table, which outlives them: no reference count
        // moves per replica.
        let mut reserved: SmallVec<[(&Segment, u64, BlockId); 4]> = SmallVec::new();
        let mut replicas = Replicas::new();
        let placed = (|| -> Result<()> {
            for r in &img.replicas {
                let (kind, segment, addr, block) = match r.place {
                    PlacementView::LocalDisk { client } => (
                        ReplicaKind::LocalDisk,
                        LOCAL_DISK_SEGMENT,
                        client,
                        BlockId::NONE,
                    ),
                    PlacementView::Memory { segment, address }
                    | PlacementView::NofSsd { segment, address } => {
                        let pool = match r.place {
                            PlacementView::Memory { .. } => Pool::Memory,
                            _ => Pool::NofSsd,
                        };
                        let seg: &Segment = table.by_name(segment).ok_or_else(|| {
                            misfit(format!(
                                "replica {} on segment {segment:?}, which is not mounted here",
                                r.id
                            ))
                        })?;
                        if seg.pool != pool {
                            return Err(misfit(format!(
                                "replica {} is a {pool:?} replica on segment {segment:?} of \
                                 pool {:?}",
                                r.id, seg.pool
                            )));
                        }
                        let i = old_at.find(old_bufs, seg.id, address);
                        let block = match i {
                            Some(i) if !kept[i] && old_size == img.size => {
                                // Its block names the object, not the
                                // replica: a new replica id changes nothing.
                                kept[i] = true;
                                old_bufs[i].block
                            }
                            Some(_) => {
                                return Err(misfit(format!(
                                    "replica {} keeps buffer {address:#x} on {segment:?} with \
                                     size {} (held here with size {old_size}, or twice)",
                                    r.id, img.size
                                )))
                            }
                            None => {
                                let block = seg
                                    .reserve(address, img.size, BufferOwner::object(hash))
                                    .map_err(|e| {
                                        misfit(format!(
                                            "replica {} buffer {address:#x}+{} on {segment:?} \
                                             cannot be reserved here: {e:?}",
                                            r.id, img.size
                                        ))
                                    })?;
                                reserved.push((seg, address, block));
                                block
                            }
                        };
                        (pool.replica_kind(), seg.id, address, block)
                    }
                };
                replicas.push(Replica {
                    id: r.id,
                    addr,
                    segment,
                    block,
                    kind,
                    status: r.status,
                    role: match r.role {
                        ReplicaRole::Write => Role::Write,
                        ReplicaRole::TaskTarget => Role::TaskTarget,
                    },
                });
            }
            Ok(())
        })();
        let discard_at = placed.and_then(|()| match discarded {
            // Nothing discarded (every Start of a new key): every old buffer
            // not kept is freed.
            [] => Ok(smallvec::smallvec![None; old_bufs.len()]),
            _ => match_discarded(
                &table,
                old_bufs,
                &old_at,
                &kept,
                old_size,
                discarded,
                "the previous state",
            ),
        });
        let discard_at = match discard_at {
            Ok(d) => d,
            Err(e) => {
                for (seg, addr, block) in &reserved {
                    let _ = seg.free(*block, *addr, img.size);
                }
                return Err(e);
            }
        };
        drop(reserved);
        // Checked: from here on nothing fails.
        drop_buffers(
            &self.role.discard_home,
            si,
            st,
            &table,
            old_bufs,
            &kept,
            old_size,
            &discard_at,
        );
        drop(table);
        let (old_obj, same_seq) = match old {
            Some((_, _, seq, token, committed, group, version)) => {
                st.in_flight.end(token);
                (Some((committed, group, version)), seq == img.seq)
            }
            None => {
                st.keys += 1;
                (None, false)
            }
        };
        // Group: kept when unchanged, else left and joined by name.
        let old_group = old_obj.as_ref().and_then(|o| o.1.clone());
        let group: Option<Arc<Group>> = match (&old_group, img.group) {
            (Some(g), Some(name)) if g.name() == name => Some(g.clone()),
            // No group before or after (the usual case): no member name to
            // build (an allocation per record).
            (None, None) => None,
            (old_g, new_name) => {
                let member = scoped(k);
                if let Some(g) = old_g {
                    self.groups.leave(&self.hasher, g, &member);
                }
                new_name.map(|name| self.groups.join(&self.hasher, k.tenant, name, &member, 0))
            }
        };
        let mut obj = Object::new(NewRecord {
            key: k.key,
            size: img.size,
            writer: img.writer,
            put_start: img.put_start,
            seq: img.seq,
            write_token: img.write_token,
            lease: img.lease,
            committed: None,
            replicas,
            group,
            hard_pin: img.hard_pin,
        });
        obj.set_task(img.task.as_deref().map(|t| match t {
            TaskImage::Copy { source, targets } => Task::Copy {
                source: *source,
                targets: targets.clone(),
            },
            TaskImage::Move { source, target } => Task::Move {
                source: *source,
                target: *target,
            },
            TaskImage::Promotion { target } => Task::Promotion { target: *target },
        }));
        // Committed deadline through the registration path (index + gauge),
        // once the record has its handle (below). A record of another
        // creation replacing this one in its slot starts one past the old
        // record's version (as a removal and an insert would), so no entry
        // of the old one (which names the same slot) can match a
        // registration of the new one.
        let (old_committed, version) = match &old_obj {
            Some((c, _, v)) if same_seq => (*c, *v),
            Some((c, _, v)) => {
                if c.is_some() {
                    self.pin_dropped(si);
                }
                // As a removal and an insert into the slot would.
                (None, v.wrapping_add(1))
            }
            None => (None, 0),
        };
        obj.pin_version = version;
        obj.set_committed(img.committed);
        // An existing object is replaced in its slot (its key, tenant and
        // slot stay; a new creation sequence makes a new handle); a new one
        // is inserted.
        let handle = match at {
            Some(r) => {
                let held = st.get_mut(r).expect("found above");
                obj.set_tenant(held.tenant());
                *held = obj;
                // A replacing write's record has a sequence of its own.
                // (The handle is built from the image, not read back from
                // the record just written: its lines are still on their
                // way, and reading one waited for them.)
                ObjectRef { seq: img.seq, ..r }
            }
            None => {
                let room = room.take().expect("room is made for an absent key");
                let slot = st.insert(room, k.tenant, hash, obj);
                debug_assert_eq!(st.object_ref(si as u32, slot).map(|h| h.seq), Some(img.seq));
                ObjectRef {
                    shard: si as u32,
                    slot,
                    seq: img.seq,
                }
            }
        };
        let slot = handle.slot;
        if old_committed != img.committed {
            match img.committed {
                Some(d) => {
                    let placed = st.get_mut(handle).expect("placed just now");
                    self.register_pin(placed, handle, d, old_committed.is_none());
                    if old_committed.is_none() {
                        self.shards[si]
                            .soft_pin_keys
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
                None => self.pin_dropped(si),
            }
        }
        let mut unstarted = None;
        // The write in flight while a PROCESSING replica of it is in the
        // image: a record with none (earlier builds wrote one while an
        // unmount ran, leaving out the replicas on the segments it had
        // taken out of the table) installs the object with the write
        // ended, as a snapshot captured then holds it, and as the
        // unmount's own record of the object would leave it.
        if let Some(w) = img.in_flight.as_ref().filter(|_| writing(img)) {
            let write = Deferred {
                token: img.write_token,
                slot,
                pending: w.pending,
            };
            if defer {
                unstarted = Some(write);
            } else {
                st.in_flight.start(write.token, write.slot, write.pending);
            }
        }
        // Past the ids a task names too, held or not (a target an unmount
        // took): a replica a promoted standby adds must never get one of
        // them and be taken for the task's.
        let task_ids = img
            .task
            .as_deref()
            .and_then(|t| t.ids().max())
            .map_or(0, |id| id.saturating_add(1));
        self.raise_counters(
            img.replicas
                .last()
                .map_or(0, |r| r.id.saturating_add(1))
                .max(task_ids),
            img.write_token.saturating_add(1),
            img.seq.saturating_add(1),
        );
        Ok((handle, unstarted))
    }

    /// Applies an End by its outcome (docs/CONTRACT.md §12.1): the listed
    /// replicas of write `token` become COMPLETE, the lease is raised to
    /// `at`, the commit outcome goes through the registration path (index
    /// entry under the object's handle, gauge), consuming the pending
    /// intent, and the write in flight ends when `write_over`. Checked
    /// before anything changes: the object is here, its write token is
    /// `token`, every listed replica is PROCESSING of that write, and when
    /// the End ended the write no PROCESSING replica of it is left.
    /// `st`, `si` and `hash` as for [`apply_object_set`](Self::apply_object_set);
    /// `at_handle`, when given, is where the object under the key is (the
    /// record before this one installed it), so it is not looked up;
    /// `unstarted`: that record left the write in flight unstarted
    /// (`Deferred`; this End ends it), so there is no entry to change.
    #[allow(clippy::too_many_arguments)]
    fn apply_ended(
        &self,
        st: &mut ShardState,
        si: usize,
        hash: u64,
        rk: &KeyView,
        token: u64,
        at: Instant,
        completed: &[u64],
        commit: Option<Option<Instant>>,
        write_over: bool,
        at_handle: Option<ObjectRef>,
        unstarted: bool,
    ) -> Result<()> {
        let k = Key::scoped(rk.tenant, rk.key);
        let found = match at_handle {
            Some(r) => st.write_at(r),
            None => st.find_write_mut(hash, k, si as u32),
        };
        let Some((handle, obj, writes)) = found else {
            return Err(misfit(format!("no object {:?} here", rk.to_key())));
        };
        if obj.write_token != token {
            return Err(misfit(format!(
                "object {:?}: its write token here is {}, the End's is {token}",
                rk.to_key(),
                obj.write_token
            )));
        }
        // Both lists are sorted by id, strictly: `completed` by its decoder,
        // the object's replicas by the image or snapshot that installed
        // them (`check_image`, the snapshot's validation; apply changes
        // statuses only). One merge walk checks every listed replica and
        // finds a PROCESSING replica of the write the End leaves, in
        // O(replicas + completed); a second, the same walk, completes them.
        // (Were the replicas ever out of order, the walk would miss a
        // listed one and refuse the End: nothing would change.)
        debug_assert!(obj.replicas.windows(2).all(|w| w[0].id < w[1].id));
        let not_processing = |id: u64| {
            misfit(format!(
                "object {:?}: replica {id} is not a PROCESSING replica of write {token} here",
                rk.to_key()
            ))
        };
        let mut want = completed.iter().copied().peekable();
        let mut left = None;
        for r in obj.replicas.iter() {
            match want.peek() {
                Some(&id) if id < r.id => return Err(not_processing(id)),
                Some(&id) if id == r.id => {
                    if !r.is_write_processing() {
                        return Err(not_processing(id));
                    }
                    want.next();
                }
                _ => {
                    if left.is_none() && r.is_write_processing() {
                        left = Some(r.id);
                    }
                }
            }
        }
        if let Some(&id) = want.peek() {
            return Err(not_processing(id));
        }
        // The write ends when none of its replicas is PROCESSING (put.rs):
        // an End that says it ended while one is left here would leave a
        // PROCESSING write replica without its write in flight. (The
        // converse is not refused: while an unmount runs, a record leaves
        // out a write's replica on a segment it took out of the table, so
        // an End may leave the write going on the primary with no
        // PROCESSING replica of it here. The write then ends here, as a
        // snapshot of the primary captured then holds it, and as the
        // unmount's record of the object leaves it: a standby holds no
        // write without a replica of it.)
        if let (true, Some(id)) = (write_over, left) {
            return Err(misfit(format!(
                "object {:?}: the End ends write {token}, but its replica {id} is still \
                 PROCESSING here",
                rk.to_key()
            )));
        }
        // Checked: from here on nothing fails.
        let mut want = completed.iter().copied().peekable();
        for r in obj.replicas.iter_mut() {
            if want.peek() == Some(&r.id) {
                r.status = ReplicaStatus::Complete;
                want.next();
            }
        }
        // The shard's write lock is held and the object borrowed
        // exclusively: a plain store, not an atomic read-modify-write
        // (which would wait for every store before it).
        let lease = obj.lease.get_mut();
        *lease = (*lease).max(at.min(MAX_INSTANT));
        if let Some(after) = commit {
            // The commit consumed the pending intent (a standby restored
            // from a format 1-4 snapshot holds that write with none:
            // nothing to take).
            if !unstarted {
                writes.take_pending(token);
            }
            let before = obj.committed();
            obj.set_committed(after);
            if before != after {
                match after {
                    Some(d) => {
                        self.register_pin(obj, handle, d, before.is_none());
                        if before.is_none() {
                            self.shards[si]
                                .soft_pin_keys
                                .fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    None => self.pin_dropped(si),
                }
            }
        }
        if (write_over || left.is_none()) && !unstarted {
            writes.end(token);
        }
        Ok(())
    }

    /// Erases the object under `key`.
    /// `st`, `si` and `hash` as for [`apply_object_set`](Self::apply_object_set).
    fn apply_erase(
        &self,
        st: &mut ShardState,
        si: usize,
        hash: u64,
        rk: &KeyView,
        discarded: &[DiscardedView],
    ) -> Result<()> {
        let k = Key::scoped(rk.tenant, rk.key);
        let Some(o) = st.find(hash, k) else {
            if self.role.lenient() {
                return Ok(());
            }
            return Err(misfit(format!("no object {:?} here", rk.to_key())));
        };
        let (bufs, size) = (old_buffers(o), o.size);
        let table = self.segments.read();
        let kept: SmallVec<[bool; 4]> = smallvec::smallvec![false; bufs.len()];
        let discard_at = match_discarded(
            &table,
            &bufs,
            &OldIndex::new(&bufs),
            &kept,
            size,
            discarded,
            "the object",
        )?;
        drop_buffers(
            &self.role.discard_home,
            si,
            st,
            &table,
            &bufs,
            &kept,
            size,
            &discard_at,
        );
        drop(table);
        let obj = st.take(hash, k).expect("found above");
        if obj.committed().is_some() {
            self.pin_dropped(si);
        }
        st.in_flight.end(obj.write_token);
        if let Some(g) = obj.group() {
            self.groups.leave(&self.hasher, g, &scoped(k));
        }
        st.keys -= 1;
        Ok(())
    }

    /// Drops the segment and the discarded buffers still on it; every
    /// replica on it must already be gone (the per-object records come
    /// first).
    fn apply_unmount(&self, owner: u64, name: &str) -> Result<()> {
        let seg = {
            let table = self.segments.read();
            let seg = table
                .by_name(name)
                .ok_or_else(|| misfit(format!("segment {name:?} is not mounted here")))?;
            if seg.owner != owner {
                return Err(misfit(format!(
                    "segment {name:?} is owned by client {} here, not {owner}",
                    seg.owner
                )));
            }
            seg.clone()
        };
        // Grouped by shard as an unmount on a primary groups them: each
        // shard's owners in one run, each lock taken once, ascending.
        let (owners, bounds) = self.group_by_shard(seg.owners());
        let shards: Vec<usize> = (0..self.shards.len())
            .filter(|&si| bounds[si] < bounds[si + 1])
            .collect();
        for &si in &shards {
            let mut st = self.shards[si].state.write();
            for &(o, block) in &owners[bounds[si]..bounds[si + 1]] {
                let held = st
                    .find_by_block_mut(o.object_hash(), seg.id, block)
                    .and_then(|obj| obj.replica_in(seg.id, block))
                    .map(|r| r.id);
                if let Some(id) = held {
                    return Err(misfit(format!(
                        "replica {id} still lives on segment {name:?} here"
                    )));
                }
            }
        }
        self.segments
            .write()
            .unmount(owner, name)
            .map_err(|e| misfit(e.message().to_owned()))?;
        for si in shards {
            let mut st = self.shards[si].state.write();
            let gone = st.discarded.drop_segment(seg.id);
            st.discarded_bytes -= gone;
        }
        self.role
            .discard_home
            .lock()
            .retain(|&(segment, _), _| segment != seg.id);
        Ok(())
    }

    /// Frees the listed discarded buffers, wherever they wait.
    fn apply_discard_released(&self, at: Instant, buffers: &[BufferRef]) -> Result<()> {
        let mut want: HashMap<(SegmentId, u64), u64> = HashMap::with_capacity(buffers.len());
        {
            let table = self.segments.read();
            for b in buffers {
                let seg = table.by_name(&b.segment).ok_or_else(|| {
                    misfit(format!(
                        "discarded buffer {:#x} on segment {:?}, which is not mounted here",
                        b.address, b.segment
                    ))
                })?;
                if want.insert((seg.id, b.address), b.len).is_some() {
                    return Err(misfit(format!(
                        "buffer {:#x} on {:?} listed twice",
                        b.address, b.segment
                    )));
                }
            }
        }
        // Find them all first (nothing else changes a standby meanwhile):
        // each in the shard apply discarded it into.
        let mut by_shard: Vec<(usize, SegmentId, u64)> = Vec::with_capacity(want.len());
        {
            let homes = self.role.discard_home.lock();
            if self.role.lenient() {
                // Discarded before the restored snapshot: not held here.
                want.retain(|key, _| homes.contains_key(key));
            }
            for &(segment, addr) in want.keys() {
                let si = homes.get(&(segment, addr)).copied().ok_or_else(|| {
                    misfit(format!(
                        "buffer {addr:#x} on segment id {segment} is not discarded here"
                    ))
                })?;
                by_shard.push((si, segment, addr));
            }
        }
        by_shard.sort_unstable();
        let mut i = 0;
        while i < by_shard.len() {
            let si = by_shard[i].0;
            let j = i + by_shard[i..].iter().take_while(|x| x.0 == si).count();
            let st = self.shards[si].state.read();
            let found = st
                .discarded
                .iter()
                .filter(|d| d.release_at <= at && want.get(&(d.segment, d.addr)) == Some(&d.len))
                .count();
            if found != j - i {
                return Err(misfit(format!(
                    "{} of the buffers are not discarded here with a release instant at or \
                     before {at} and the recorded length",
                    j - i - found.min(j - i)
                )));
            }
            i = j;
        }
        let mut homes = self.role.discard_home.lock();
        let mut i = 0;
        while i < by_shard.len() {
            let si = by_shard[i].0;
            let j = i + by_shard[i..].iter().take_while(|x| x.0 == si).count();
            let mut st = self.shards[si].state.write();
            let due = st
                .discarded
                .take_due_where(at, |d| want.get(&(d.segment, d.addr)) == Some(&d.len));
            let table = self.segments.read();
            for d in &due {
                free_block(&table, d.segment, d.block, d.addr, d.len);
                st.discarded_bytes -= d.len as i64;
                homes.remove(&(d.segment, d.addr));
            }
            i = j;
        }
        Ok(())
    }
}

/// The image's own consistency: what an object of a primary always is, and
/// what the standby's invariants (docs/CONTRACT.md §8) and its own
/// snapshots (§6, which restore only what the snapshot checks accept) need
/// of one object. Refused, as a misfit, before anything of the record
/// applies:
///
/// - a size of 0 (a Start refuses it, a snapshot too);
/// - replicas not sorted by unique id;
/// - a PROCESSING write replica without the write in flight (its End,
///   Revoke and the stale-write sweep find a write by its in-flight entry,
///   and a snapshot lists the write of every such object). The converse is
///   not refused but installed with the write ended (`apply_object_set`):
///   earlier builds recorded one while an unmount ran (a record leaves out
///   the replicas on the segments the unmount took out of the table, a
///   write's last PROCESSING one included), and the unmount's own record
///   of the object then ended it; a recorder now leaves such a write out,
///   as a snapshot does;
/// - a task as no master holds one, by the rule a snapshot's validation
///   checks too (`task_replicas`, one merge walk of the replicas and the
///   task's targets): a copy without targets or with targets not strictly
///   increasing, a copy's or move's source among its targets; a replica the
///   task targets that is not a task target, or not a PROCESSING buffer
///   replica (a MEMORY one for a promotion); a task target the task does
///   not target (or with no task); a source the object holds that is not a
///   COMPLETE buffer replica. (A task may name a replica the object no
///   longer holds, taken by an unmount: the task then fails at its end, on
///   the standby as on the primary.)
///
/// What spans objects (unique replica ids, creation sequences and the
/// tokens of writes in flight) is not checked here: that would take an
/// index of the whole state.
fn check_image(img: &ImageView) -> Result<()> {
    let bad = |why: String| Err(misfit(format!("object {:?}: {why}", img.key.to_key())));
    if img.size == 0 {
        return bad("size 0".into());
    }
    if img.replicas.windows(2).any(|w| w[0].id >= w[1].id) {
        return bad("replicas not sorted by unique id".into());
    }
    // The task and its replicas: the rule snapshot validation checks too
    // (`task_replicas`).
    let replicas = img.replicas.iter().map(|r| TaskReplica {
        id: r.id,
        status: r.status,
        role: Some(r.role),
        kind: match r.place {
            PlacementView::Memory { .. } => ReplicaKind::Memory,
            PlacementView::NofSsd { .. } => ReplicaKind::NofSsd,
            PlacementView::LocalDisk { .. } => ReplicaKind::LocalDisk,
        },
    });
    if let Err(v) = task_replicas::check(img.task.as_deref(), replicas) {
        return bad(v.to_string());
    }
    // A write replica is no task target now (checked just above).
    if writing(img) && img.in_flight.is_none() {
        return bad("a PROCESSING write replica, but no write in flight".into());
    }
    Ok(())
}

/// Whether the image holds a PROCESSING replica of its write.
fn writing(img: &ImageView) -> bool {
    img.replicas
        .iter()
        .any(|r| r.role == ReplicaRole::Write && r.status == ReplicaStatus::Processing)
}

fn old_buffers(o: &Object) -> SmallVec<[OldBuffer; 4]> {
    o.replicas
        .iter()
        .filter(|r| r.has_buffer())
        .map(|r| OldBuffer {
            segment: r.segment,
            addr: r.addr,
            block: r.block,
            replica: r.id,
        })
        .collect()
}

/// The buffers of an object's previous state by place (segment and
/// address; no two share one, as the allocator hands each place out once):
/// a scan of a few (most objects hold one or two buffers), a sorted index
/// of more, so matching an image's replicas and discarded buffers against
/// them takes O(n log n), not O(n²).
struct OldIndex {
    /// (segment, address, position in the old buffers), sorted; empty
    /// when they are scanned.
    sorted: Vec<(SegmentId, u64, usize)>,
}

impl OldIndex {
    /// Old buffers scanned rather than indexed, at most.
    const SCAN: usize = 8;

    fn new(old: &[OldBuffer]) -> Self {
        let mut sorted = Vec::new();
        if old.len() > Self::SCAN {
            sorted.extend(old.iter().enumerate().map(|(i, b)| (b.segment, b.addr, i)));
            sorted.sort_unstable();
        }
        OldIndex { sorted }
    }

    /// The position in `old` (the buffers it was made of) of the buffer
    /// at `addr` of `segment`.
    fn find(&self, old: &[OldBuffer], segment: SegmentId, addr: u64) -> Option<usize> {
        if self.sorted.is_empty() {
            return old
                .iter()
                .position(|b| b.segment == segment && b.addr == addr);
        }
        let i = self
            .sorted
            .partition_point(|&(s, a, _)| (s, a) < (segment, addr));
        match self.sorted.get(i) {
            Some(&(s, a, at)) if (s, a) == (segment, addr) => Some(at),
            _ => None,
        }
    }
}

/// For each old buffer not kept, the release instant it is discarded until
/// (`None`: freed now); every listed discarded buffer must be one of them.
/// `old_at` is the index of `old`.
#[allow(clippy::too_many_arguments)]
fn match_discarded(
    table: &crate::segment::SegmentTable,
    old: &[OldBuffer],
    old_at: &OldIndex,
    kept: &[bool],
    size: u64,
    discarded: &[DiscardedView],
    what: &str,
) -> Result<SmallVec<[Option<Instant>; 4]>> {
    let mut at: SmallVec<[Option<Instant>; 4]> = smallvec::smallvec![None; old.len()];
    for d in discarded {
        let i = table
            .by_name(d.segment)
            .and_then(|s| old_at.find(old, s.id, d.address))
            .filter(|&i| !kept[i] && at[i].is_none());
        match i {
            Some(i) if d.len == size => at[i] = Some(d.release_at),
            _ => {
                return Err(misfit(format!(
                    "discarded buffer {:#x}+{} on {:?} is not a dropped buffer of {what} here",
                    d.address, d.len, d.segment
                )))
            }
        }
    }
    Ok(at)
}

/// Frees or discards every old buffer not kept; a discarded one's home is
/// shard `si` (`homes` is locked only for a buffer discarded).
#[allow(clippy::too_many_arguments)]
fn drop_buffers(
    homes: &Mutex<HashMap<(SegmentId, u64), usize>>,
    si: usize,
    st: &mut ShardState,
    table: &crate::segment::SegmentTable,
    old: &[OldBuffer],
    kept: &[bool],
    size: u64,
    discard_at: &[Option<Instant>],
) {
    for (i, b) in old.iter().enumerate() {
        if kept[i] {
            continue;
        }
        match discard_at[i] {
            Some(release_at) => {
                st.discarded.push(Discarded {
                    segment: b.segment,
                    addr: b.addr,
                    block: b.block,
                    len: size,
                    release_at,
                    replica: b.replica,
                });
                st.discarded_bytes += size as i64;
                homes.lock().insert((b.segment, b.addr), si);
            }
            None => free_block(table, b.segment, b.block, b.addr, size),
        }
    }
}

/// What the apply mutex keeps between calls: the window `apply_journal`
/// decodes the input's records into ([`WINDOW`] at most), empty, so a
/// standby applying chunk after chunk reuses one allocation instead of
/// growing a new one (and faulting its pages in) every call.
#[derive(Default)]
pub(crate) struct ApplyScratch {
    views: Vec<(u64, RecordView<'static>)>,
}

/// Records decoded into the window at once at most (`apply_input`): about
/// 4.5 MB of views (a view is under 300 bytes), whatever the size of the
/// input, where a list of every record of the input took about 30 times
/// the input's size (the smallest record is 9 bytes). An input of up to
/// this many records to apply is parsed once, as it is checked; a longer
/// one's records past the first this many are parsed again, a window at
/// a time, when the window has room (the check keeps none of them). At
/// least [`RUN`] records more than a run needs, so a refill (which first
/// moves the fewer than `RUN` records left to the front) happens once per
/// window.
const WINDOW: usize = 1 << 14;

const _: () = assert!(WINDOW >= 2 * RUN, "a refill moves fewer than RUN views");

/// `views`, emptied, as a window for views of another input, its
/// allocation kept (it is [`WINDOW`] views at most). (A view's type names
/// its input's lifetime, and a `SmallVec` inside makes it invariant, so
/// the list is rebuilt rather than coerced: collecting an empty `Vec`'s
/// iterator into a `Vec` of the same layout reuses its allocation.) The
/// list holds nothing, so no view outlives the input it borrowed from.
fn recycle<'x, 'y>(mut views: Vec<(u64, RecordView<'x>)>) -> Vec<(u64, RecordView<'y>)> {
    views.clear();
    debug_assert!(
        views.capacity() <= WINDOW,
        "the window is filled to WINDOW at most"
    );
    // The closure names the new element type (a `filter` could not).
    #[allow(clippy::unnecessary_filter_map)]
    views.into_iter().filter_map(|_| None).collect()
}

/// Object records applied in one run at most ([`MasterCore::apply_run`]):
/// bounds how long a run holds its shard locks, and sizes its arrays,
/// which live on the stack.
const RUN: usize = 64;

const _: () = assert!(RUN <= 256, "shard positions are u8");

/// Loads from every part of an object record's view that applying it
/// reads (and the first bytes of its key in the input), returning a value
/// made from them for `black_box`: see [`MasterCore::apply_run`].
#[inline]
fn touch(rec: &RecordView) -> u64 {
    let key = |k: &KeyView| {
        (k.tenant.len() ^ k.key.len()) as u64
            ^ u64::from(k.key.as_bytes().first().copied().unwrap_or(0))
    };
    let kind = match &rec.kind {
        KindView::ObjectSet { image, discarded } => {
            key(&image.key)
                ^ image.size
                ^ image.write_token
                ^ u64::from(image.hard_pin)
                ^ image.committed.unwrap_or(0)
                ^ u64::from(image.task.is_some())
                ^ image.replicas.first().map_or(0, |r| r.id)
                ^ discarded.len() as u64
        }
        KindView::ObjectStarted { image } => {
            key(&image.key)
                ^ image.size
                ^ image.write_token
                ^ u64::from(image.hard_pin)
                ^ image.replicas.first().map_or(0, |r| r.id)
        }
        KindView::ObjectErased { key: k, discarded } => key(k) ^ discarded.len() as u64,
        KindView::ObjectEnded {
            key: k,
            write_token,
            completed,
            write_over,
            ..
        } => key(k) ^ write_token ^ completed.len() as u64 ^ u64::from(*write_over),
        KindView::Other(_) => 0,
    };
    kind ^ rec.bytes.len() as u64
}

/// The key an object record names (`None` for any other record).
fn object_key<'v, 'a>(kind: &'v KindView<'a>) -> Option<&'v KeyView<'a>> {
    match kind {
        KindView::ObjectSet { image, .. } | KindView::ObjectStarted { image } => Some(&image.key),
        KindView::ObjectErased { key, .. } | KindView::ObjectEnded { key, .. } => Some(key),
        KindView::Other(_) => None,
    }
}

/// Why an object record's key is refused (its key does not validate).
fn invalid_key(kind: &KindView) -> Error {
    let Some(rk) = object_key(kind) else {
        return Error::new(ErrorKind::Internal, "not an object record");
    };
    let why = Key::scoped(rk.tenant, rk.key)
        .validate()
        .err()
        .map_or_else(|| "refused".to_owned(), |e| e.message().to_owned());
    misfit(format!("key {:?}: {why}", rk.to_key()))
}

/// The error of record `seq` that does not fit, naming the record and
/// what stays applied.
fn does_not_apply(seq: u64, rec: &RecordView, e: Error) -> Error {
    Error::new(
        e.kind(),
        format!(
            "journal record {seq} ({}) does not apply: {}; records up to {} are applied",
            rec.name(),
            e.message(),
            seq - 1
        ),
    )
}
