//! A borrowed decoding of journal batches, for the apply path: the object
//! records (the bulk of any journal) are read into views whose keys and
//! names point into the input and whose replica and discarded lists are
//! inline, so decoding a batch allocates nothing per object record. The
//! other records, rare, decode into owned [`Record`]s.
//!
//! The view decoder accepts exactly what [`decode_batch_prefix`] accepts,
//! with the same messages: both share the batch framing, the cursor and its
//! checks, and the object records have one parser, this module's
//! (`object_record`): the owned decoder turns its views into records with
//! [`RecordView::to_record`]. A test compares the two decoders on random
//! and corrupted batches. The put pair's records (ObjectStarted,
//! ObjectEnded) take a fast path first (`pair_record`: the same fields
//! through reads that say only "no" — `Reader::try_u64` and the others in
//! `codec.rs` — and the checked parse of the same bytes whenever it says
//! no, so the checked parse gives every message); `standby_view_window.rs`
//! holds it to the owned decoder, field by field.
//!
//! [`decode_batch_prefix`]: super::codec::decode_batch_prefix

use super::codec::{
    decode_prefix_with, fail, parse_record, peek_header, At, Reader, DISCARDED_MIN, HEADER_LEN,
    REPLICA_MIN, STARTED_MIN,
};
use super::record::*;
use crate::clock::Instant;
use crate::error::Result;
use crate::types::{ClientId, ReplicaStatus};
use smallvec::SmallVec;

/// A decoded batch whose object records borrow from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchView<'a> {
    pub first_seq: u64,
    pub records: Vec<RecordView<'a>>,
}

/// One record: an object record as a view, any other owned. `bytes` is the
/// record's encoding (tag and fields), as the journal stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView<'a> {
    pub bytes: &'a [u8],
    pub kind: KindView<'a>,
}

/// What a [`RecordView`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindView<'a> {
    /// [`Record::ObjectSet`].
    ObjectSet {
        image: ImageView<'a>,
        discarded: Discards<'a>,
    },
    /// [`Record::ObjectErased`].
    ObjectErased {
        key: KeyView<'a>,
        discarded: Discards<'a>,
    },
    /// [`Record::ObjectEnded`]; the ids inline (an End completes one or
    /// two replicas).
    ObjectEnded {
        key: KeyView<'a>,
        write_token: u64,
        at: Instant,
        completed: SmallVec<[u64; 2]>,
        commit: Option<Option<Instant>>,
        write_over: bool,
    },
    /// [`Record::ObjectStarted`], as the image of the ObjectSet it stands
    /// for ([`Record::expand_start`]; no discarded buffers): applied as
    /// that ObjectSet.
    ObjectStarted { image: ImageView<'a> },
    /// Every other record.
    Other(Record),
}

/// A record's discarded buffers (an object record lists none or one).
pub type Discards<'a> = SmallVec<[DiscardedView<'a>; 1]>;

/// [`RecordKey`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyView<'a> {
    pub tenant: &'a str,
    pub key: &'a str,
}

/// [`ObjectImage`], borrowed; one replica inline (most objects have one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageView<'a> {
    pub key: KeyView<'a>,
    pub size: u64,
    pub writer: ClientId,
    pub put_start: Instant,
    pub lease: Instant,
    pub seq: u64,
    pub write_token: u64,
    pub hard_pin: bool,
    pub group: Option<&'a str>,
    pub committed: Option<Instant>,
    pub in_flight: Option<InFlightImage>,
    /// Owned: rare; boxed, so the views of the records without one (all
    /// but a few) are smaller.
    pub task: Option<Box<TaskImage>>,
    /// Sorted by id, ids distinct (checked by the decoder).
    pub replicas: SmallVec<[ReplicaView<'a>; 1]>,
}

/// [`ReplicaImage`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaView<'a> {
    pub id: u64,
    pub status: ReplicaStatus,
    pub role: ReplicaRole,
    pub place: PlacementView<'a>,
}

/// [`Placement`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementView<'a> {
    Memory { segment: &'a str, address: u64 },
    NofSsd { segment: &'a str, address: u64 },
    LocalDisk { client: ClientId },
}

/// [`DiscardedBuffer`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscardedView<'a> {
    pub segment: &'a str,
    pub address: u64,
    pub len: u64,
    pub release_at: Instant,
}

/// Decodes the batch at the start of `bytes` as views, with its length in
/// bytes: [`decode_batch_prefix`](super::codec::decode_batch_prefix)'s
/// checks and messages.
pub fn decode_batch_view_prefix(bytes: &[u8]) -> Result<(BatchView<'_>, usize)> {
    let (first_seq, records, used) = decode_prefix_with(bytes, parse_record_view)?;
    Ok((BatchView { first_seq, records }, used))
}

/// Checks the batch at the start of `bytes` as
/// [`decode_batch_view_prefix`] does, keeping nothing: its first sequence,
/// record count and length in bytes. [`RecordViews`] then reads the checked
/// batch one record at a time, so applying a batch holds one decoded
/// record at a time, not all of them.
pub fn check_batch_prefix(bytes: &[u8]) -> Result<(u64, usize, usize)> {
    let (first_seq, records, used) =
        decode_prefix_with(bytes, |r, seq| parse_record_view(r, seq).map(|_| ()))?;
    Ok((first_seq, records.len(), used))
}

/// What [`check_batch_views`] found of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchChecked {
    pub first_seq: u64,
    pub count: usize,
    /// The batch's length in bytes.
    pub len: usize,
    /// The first record to keep that `out` had no room for: its sequence
    /// and its position in the batch's payload, where
    /// [`InputViews::resume`] goes on.
    pub left_out: Option<(u64, usize)>,
}

/// Checks the batch at the start of `bytes` as
/// [`decode_batch_view_prefix`] does (its checks and messages), handing
/// each record whose sequence is at least `keep_from` to `each`, with its
/// sequence, and keeping the first of them in `out` while it holds fewer
/// than `limit` (each view built straight into its place in `out` rather
/// than moved there through the calls that parse it: a view is a few
/// hundred bytes); the others are dropped once `each` has seen them. On
/// an error `each` may have seen, and `out` received, some of the batch's
/// records already (the batch is corrupt). Lets a caller check a whole
/// input in one parse of each record, holding no more than `limit` views,
/// and decode the records left out again later ([`InputViews`]).
pub fn check_batch_views<'a>(
    bytes: &'a [u8],
    keep_from: u64,
    out: &mut Vec<(u64, RecordView<'a>)>,
    limit: usize,
    mut each: impl FnMut(u64, &RecordView<'a>),
) -> Result<BatchChecked> {
    let mut left_out = None;
    let (first_seq, records, len) = decode_prefix_with(bytes, |r, seq| {
        let start = r.position();
        if seq < keep_from {
            parse_kind(r, seq)?;
        } else if out.len() < limit {
            push_view(r, seq, out)?;
            let (seq, view) = out.last().expect("pushed just now");
            each(*seq, view);
        } else {
            left_out = left_out.or(Some((seq, start)));
            each(seq, &parse_record_view(r, seq)?);
        }
        Ok(())
    })?;
    Ok(BatchChecked {
        first_seq,
        count: records.len(),
        len,
        left_out,
    })
}

/// The records of batches back to back, each checked before by
/// [`check_batch_views`] or [`check_batch_prefix`] (a batch not checked
/// may give an error, and then nothing more), decoded again a chunk at a
/// time ([`fill`](Self::fill)): the records whose sequence is at least the
/// one to keep from, which each record kept raises past itself, so the
/// records of a batch that repeats earlier ones are skipped (a batch all
/// of whose records are is not even parsed).
pub struct InputViews<'a> {
    /// The batches not begun.
    rest: &'a [u8],
    /// The payload of the batch being read, from its next record on.
    r: Reader<'a>,
    /// That record's sequence.
    seq: u64,
    /// Records of that batch not read.
    left: usize,
    /// Records below this sequence are skipped.
    keep_from: u64,
}

impl<'a> InputViews<'a> {
    /// Over the batches of `bytes`, keeping the records from sequence
    /// `keep_from` on.
    pub fn new(bytes: &'a [u8], keep_from: u64) -> Self {
        InputViews {
            rest: bytes,
            r: Reader::new(&[]),
            seq: 0,
            left: 0,
            keep_from,
        }
    }

    /// Over the batches of `bytes` from record `seq` of the first on, at
    /// position `pos` of its payload (what [`check_batch_views`] left out),
    /// keeping the records from `seq` on.
    pub fn resume(bytes: &'a [u8], seq: u64, pos: usize) -> Result<Self> {
        let h = peek_header(bytes)?;
        let done = seq
            .checked_sub(h.first_seq)
            .and_then(|d| usize::try_from(d).ok())
            .filter(|&d| d < h.count as usize);
        let payload = &bytes[HEADER_LEN..h.total_len];
        let (Some(done), Some(from)) = (done, payload.get(pos..)) else {
            return Err(fail(format!(
                "record {seq} at payload position {pos} is not in the batch of records {} \
                 to {} ({} payload bytes)",
                h.first_seq,
                h.first_seq + u64::from(h.count),
                payload.len()
            )));
        };
        Ok(InputViews {
            rest: &bytes[h.total_len..],
            r: Reader::new(from),
            seq,
            left: h.count as usize - done,
            keep_from: seq,
        })
    }

    /// Appends the next records kept to `out` (with their sequences) until
    /// it holds `limit`, or the input ends: whether records may be left.
    /// Each view is built straight into its place in `out` rather than
    /// moved there through the calls that parse it (a view is a few hundred
    /// bytes).
    pub fn fill(&mut self, out: &mut Vec<(u64, RecordView<'a>)>, limit: usize) -> Result<bool> {
        while out.len() < limit {
            if self.left == 0 {
                if self.rest.is_empty() {
                    return Ok(false);
                }
                let h = match peek_header(self.rest) {
                    Ok(h) => h,
                    Err(e) => {
                        self.rest = &[];
                        return Err(e);
                    }
                };
                let (batch, rest) = self.rest.split_at(h.total_len);
                self.rest = rest;
                let count = h.count as usize;
                if h.first_seq.saturating_add(count as u64) > self.keep_from {
                    self.r = Reader::new(&batch[HEADER_LEN..]);
                    (self.seq, self.left) = (h.first_seq, count);
                }
                continue;
            }
            let seq = self.seq;
            let parsed = if seq >= self.keep_from {
                push_view(&mut self.r, seq, out)
            } else {
                parse_kind(&mut self.r, seq).map(drop)
            };
            if let Err(e) = parsed {
                (self.left, self.rest) = (0, &[]);
                return Err(e);
            }
            self.left -= 1;
            self.seq += 1;
            self.keep_from = self.keep_from.max(seq + 1);
        }
        Ok(self.left > 0 || !self.rest.is_empty())
    }
}

/// The records of a batch, decoded one at a time, with their sequences.
pub struct RecordViews<'a> {
    r: Reader<'a>,
    seq: u64,
    left: usize,
}

impl<'a> RecordViews<'a> {
    /// Over the batch that starts `bytes` (checked by
    /// [`check_batch_prefix`], which gives `first_seq` and `count`; a batch
    /// not checked may yield an error).
    pub fn new(bytes: &'a [u8], first_seq: u64, count: usize) -> Self {
        let payload = bytes.get(HEADER_LEN..).unwrap_or_default();
        RecordViews {
            r: Reader::new(payload),
            seq: first_seq,
            left: count,
        }
    }
}

impl<'a> Iterator for RecordViews<'a> {
    type Item = Result<(u64, RecordView<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let seq = self.seq;
        match parse_record_view(&mut self.r, seq) {
            Ok(v) => {
                self.left -= 1;
                self.seq += 1;
                Some(Ok((seq, v)))
            }
            Err(e) => {
                self.left = 0;
                Some(Err(e))
            }
        }
    }
}

/// Parses the record at the reader (sequence `seq`) onto the end of `out`.
#[inline(always)]
fn push_view<'a>(r: &mut Reader<'a>, seq: u64, out: &mut Vec<(u64, RecordView<'a>)>) -> Result<()> {
    out.push((seq, parse_record_view(r, seq)?));
    Ok(())
}

#[inline(always)]
fn parse_record_view<'a>(r: &mut Reader<'a>, seq: u64) -> Result<RecordView<'a>> {
    let start = r.position();
    let kind = parse_kind(r, seq)?;
    Ok(RecordView {
        bytes: r.bytes_from(start),
        kind,
    })
}

/// The record at the reader, tag included, as a [`KindView`].
#[inline(always)]
fn parse_kind<'a>(r: &mut Reader<'a>, seq: u64) -> Result<KindView<'a>> {
    Ok(match r.peek() {
        // A put pair's records, the bulk of a journal: the fast path, and
        // the checked parse of the same bytes when it finds anything amiss
        // (the checked parse then says what).
        Some(tag @ (11 | 12)) => {
            let start = r.position();
            match pair_record(r, tag) {
                Some(kind) => kind,
                None => {
                    r.rewind(start);
                    r.array::<1>(At::new(seq, "record", "tag"))?;
                    object_record(r, tag, seq)?
                }
            }
        }
        Some(tag @ (3 | 4)) => {
            r.array::<1>(At::new(seq, "record", "tag"))?;
            object_record(r, tag, seq)?
        }
        // Tag errors included: the owned parser reads the tag itself.
        _ => KindView::Other(parse_record(r, seq)?),
    })
}

/// The fields of an object record whose tag (3, 4, 11 or 12) was just read:
/// the one parser of object records (the owned decoder reads them here too
/// and turns the views into records).
#[inline]
pub(super) fn object_record<'a>(r: &mut Reader<'a>, tag: u8, seq: u64) -> Result<KindView<'a>> {
    let name = Record::NAMES[usize::from(tag - 1)];
    let at = |field| At::new(seq, name, field);
    Ok(match tag {
        3 => KindView::ObjectSet {
            image: image(r, at("image"))?,
            discarded: discards(r, at("discarded"))?,
        },
        4 => KindView::ObjectErased {
            key: key(r, at("key"))?,
            discarded: discards(r, at("discarded"))?,
        },
        12 => KindView::ObjectStarted {
            image: started(r, seq)?,
        },
        _ => KindView::ObjectEnded {
            key: key(r, at("key"))?,
            write_token: r.u64(at("write_token"))?,
            at: r.instant(at("at"))?,
            completed: r.completed(at("completed"))?,
            commit: r.commit(at("commit"))?,
            write_over: r.bool(at("write_over"))?,
        },
    })
}

/// The fast path of [`object_record`] for an ObjectEnded (tag 11) or an
/// ObjectStarted (tag 12) at the reader, tag included: the same view from
/// the same bytes, through the reads that give `None` instead of an error
/// (`codec.rs`, `Reader::try_u64` and the others, each accepting exactly
/// what its checked twin accepts); `None` wherever [`object_record`]
/// would refuse the record, and the reader then somewhere inside it.
/// Built from values in registers, where the checked parse passes each
/// field's `Result` through the stack (about half of a put pair's
/// decoding time).
#[inline(always)]
fn pair_record<'a>(r: &mut Reader<'a>, tag: u8) -> Option<KindView<'a>> {
    r.try_array::<1>()?;
    let (tenant, key) = r.try_key()?;
    let key = KeyView { tenant, key };
    if tag == 11 {
        let write_token = r.try_u64()?;
        let at = r.try_instant()?;
        let n = r.try_count(8)?;
        let mut completed = SmallVec::<[u64; 2]>::with_capacity(n);
        for _ in 0..n {
            let id = r.try_u64()?;
            if completed.last().is_some_and(|&prev| id <= prev) {
                return None;
            }
            completed.push(id);
        }
        let commit = match r.try_byte_upto(1)? {
            0 => None,
            _ => Some(match r.try_byte_upto(1)? {
                0 => None,
                _ => Some(r.try_deadline()?),
            }),
        };
        let write_over = r.try_bool()?;
        return Some(KindView::ObjectEnded {
            key,
            write_token,
            at,
            completed,
            commit,
            write_over,
        });
    }
    let size = r.try_u64()?;
    let writer = r.try_u64()?;
    let put_start = r.try_instant()?;
    let seq = r.try_u64()?;
    let write_token = r.try_u64()?;
    let hard_pin = r.try_bool()?;
    let group = match r.try_byte_upto(1)? {
        0 => None,
        _ => Some(r.try_name()?),
    };
    let pending = r.try_intent()?;
    let n = r.try_count(STARTED_MIN)?;
    let mut replicas: SmallVec<[ReplicaView<'a>; 1]> = SmallVec::with_capacity(n);
    for _ in 0..n {
        let id = r.try_u64()?;
        if replicas.last().is_some_and(|prev| id <= prev.id) {
            return None;
        }
        let place = match r.try_byte_upto(2)? {
            0 => PlacementView::Memory {
                segment: r.try_name()?,
                address: r.try_u64()?,
            },
            1 => PlacementView::NofSsd {
                segment: r.try_name()?,
                address: r.try_u64()?,
            },
            _ => PlacementView::LocalDisk {
                client: r.try_u64()?,
            },
        };
        replicas.push(ReplicaView {
            id,
            status: ReplicaStatus::Processing,
            role: ReplicaRole::Write,
            place,
        });
    }
    Some(KindView::ObjectStarted {
        image: ImageView {
            key,
            size,
            writer,
            put_start,
            lease: 0,
            seq,
            write_token,
            hard_pin,
            group,
            committed: None,
            in_flight: Some(InFlightImage {
                pending: Some(pending),
            }),
            task: None,
            replicas,
        },
    })
}

#[inline]
fn key<'a>(r: &mut Reader<'a>, at: At) -> Result<KeyView<'a>> {
    let (tenant, key) = r.key_ref(at)?;
    Ok(KeyView { tenant, key })
}

#[inline]
fn image<'a>(r: &mut Reader<'a>, at: At) -> Result<ImageView<'a>> {
    Ok(ImageView {
        key: key(r, at.field("key"))?,
        size: r.u64(at.field("size"))?,
        writer: r.u64(at.field("writer"))?,
        put_start: r.instant(at.field("put_start"))?,
        lease: r.instant(at.field("lease"))?,
        seq: r.u64(at.field("seq"))?,
        write_token: r.u64(at.field("write_token"))?,
        hard_pin: r.bool(at.field("hard_pin"))?,
        group: r.opt(at.field("group"), |r, a| r.name_ref(a))?,
        committed: r.opt(at.field("committed"), |r, a| r.deadline(a))?,
        in_flight: r.opt(at.field("in_flight"), |r, a| {
            Ok(InFlightImage {
                pending: r.opt(a.field("pending"), |r, a| r.intent(a))?,
            })
        })?,
        task: r.opt(at.field("task"), |r, a| r.task(a).map(Box::new))?,
        replicas: replicas(r, at.field("replicas"))?,
    })
}

/// An ObjectStarted's fields, as the image of the ObjectSet it stands for.
#[inline]
fn started<'a>(r: &mut Reader<'a>, seq: u64) -> Result<ImageView<'a>> {
    let at = |field| At::new(seq, "ObjectStarted", field);
    Ok(ImageView {
        key: key(r, at("key"))?,
        size: r.u64(at("size"))?,
        writer: r.u64(at("writer"))?,
        put_start: r.instant(at("put_start"))?,
        lease: 0,
        seq: r.u64(at("seq"))?,
        write_token: r.u64(at("write_token"))?,
        hard_pin: r.bool(at("hard_pin"))?,
        group: r.opt(at("group"), |r, a| r.name_ref(a))?,
        committed: None,
        in_flight: Some(InFlightImage {
            pending: Some(r.intent(at("pending"))?),
        }),
        task: None,
        replicas: started_replicas(r, at("replicas"))?,
    })
}

/// A Start's replicas: id and placement, PROCESSING with role write.
#[inline]
fn started_replicas<'a>(r: &mut Reader<'a>, at: At) -> Result<SmallVec<[ReplicaView<'a>; 1]>> {
    let n = r.count(STARTED_MIN, at)?;
    let mut out: SmallVec<[ReplicaView<'a>; 1]> = SmallVec::with_capacity(n);
    for _ in 0..n {
        let start = r.offset();
        let id = r.u64(at)?;
        if let Some(prev) = out.last() {
            if id <= prev.id {
                return Err(fail(format!(
                    "{at} at byte {start}: replica id {id} follows {}; ids must be strictly \
                     increasing",
                    prev.id
                )));
            }
        }
        out.push(ReplicaView {
            id,
            status: ReplicaStatus::Processing,
            role: ReplicaRole::Write,
            place: placement(r, at)?,
        });
    }
    Ok(out)
}

#[inline]
fn replicas<'a>(r: &mut Reader<'a>, at: At) -> Result<SmallVec<[ReplicaView<'a>; 1]>> {
    let n = r.count(REPLICA_MIN, at)?;
    let mut out: SmallVec<[ReplicaView<'a>; 1]> = SmallVec::with_capacity(n);
    for _ in 0..n {
        let start = r.offset();
        let v = replica(r, at)?;
        if let Some(prev) = out.last() {
            if v.id <= prev.id {
                return Err(fail(format!(
                    "{at} at byte {start}: replica id {} follows {}; ids must be \
                     strictly increasing",
                    v.id, prev.id
                )));
            }
        }
        out.push(v);
    }
    Ok(out)
}

#[inline]
fn replica<'a>(r: &mut Reader<'a>, at: At) -> Result<ReplicaView<'a>> {
    let id = r.u64(at)?;
    let status = match r.byte_upto(1, at.field("replica status"))? {
        0 => ReplicaStatus::Processing,
        _ => ReplicaStatus::Complete,
    };
    let role = match r.byte_upto(1, at.field("replica role"))? {
        0 => ReplicaRole::Write,
        _ => ReplicaRole::TaskTarget,
    };
    Ok(ReplicaView {
        id,
        status,
        role,
        place: placement(r, at)?,
    })
}

/// A placement tag and what follows it.
#[inline]
fn placement<'a>(r: &mut Reader<'a>, at: At) -> Result<PlacementView<'a>> {
    Ok(match r.byte_upto(2, at.field("placement tag"))? {
        0 => PlacementView::Memory {
            segment: r.name_ref(at.field("segment"))?,
            address: r.u64(at.field("address"))?,
        },
        1 => PlacementView::NofSsd {
            segment: r.name_ref(at.field("segment"))?,
            address: r.u64(at.field("address"))?,
        },
        _ => PlacementView::LocalDisk {
            client: r.u64(at.field("client"))?,
        },
    })
}

#[inline]
fn discards<'a>(r: &mut Reader<'a>, at: At) -> Result<Discards<'a>> {
    let n = r.count(DISCARDED_MIN, at)?;
    let mut out = Discards::with_capacity(n);
    for _ in 0..n {
        out.push(DiscardedView {
            segment: r.name_ref(at.field("segment"))?,
            address: r.u64(at.field("address"))?,
            len: r.u64(at.field("len"))?,
            release_at: r.instant(at.field("release_at"))?,
        });
    }
    Ok(out)
}

impl RecordView<'_> {
    /// The record's name (`"ObjectSet"`).
    pub fn name(&self) -> &'static str {
        match &self.kind {
            KindView::ObjectSet { .. } => "ObjectSet",
            KindView::ObjectErased { .. } => "ObjectErased",
            KindView::ObjectEnded { .. } => "ObjectEnded",
            KindView::ObjectStarted { .. } => "ObjectStarted",
            KindView::Other(rec) => rec.name(),
        }
    }

    /// The owned record (what the owned decoder gives for the same bytes).
    pub fn to_record(&self) -> Record {
        self.kind.to_record()
    }
}

impl KindView<'_> {
    /// The owned record.
    pub fn to_record(&self) -> Record {
        match self {
            KindView::ObjectSet { image, discarded } => Record::ObjectSet {
                image: Box::new(image.to_image()),
                discarded: discarded.iter().map(DiscardedView::to_discarded).collect(),
            },
            KindView::ObjectErased { key, discarded } => Record::ObjectErased {
                key: key.to_key(),
                discarded: discarded.iter().map(DiscardedView::to_discarded).collect(),
            },
            KindView::ObjectEnded {
                key,
                write_token,
                at,
                completed,
                commit,
                write_over,
            } => Record::ObjectEnded {
                key: key.to_key(),
                write_token: *write_token,
                at: *at,
                completed: completed.to_vec(),
                commit: *commit,
                write_over: *write_over,
            },
            KindView::ObjectStarted { image } => Record::ObjectStarted {
                key: image.key.to_key(),
                size: image.size,
                writer: image.writer,
                put_start: image.put_start,
                seq: image.seq,
                write_token: image.write_token,
                hard_pin: image.hard_pin,
                group: image.group.map(str::to_owned),
                // The decoder sets both (`started`).
                pending: image
                    .in_flight
                    .and_then(|f| f.pending)
                    .unwrap_or(crate::soft_pin::SoftPinIntent::Preserve),
                replicas: image
                    .replicas
                    .iter()
                    .map(|r| StartedReplica {
                        id: r.id,
                        place: r.to_replica().place,
                    })
                    .collect(),
            },
            KindView::Other(rec) => rec.clone(),
        }
    }
}

impl KeyView<'_> {
    pub fn to_key(&self) -> RecordKey {
        RecordKey::new(self.tenant, self.key)
    }
}

impl ImageView<'_> {
    pub fn to_image(&self) -> ObjectImage {
        ObjectImage {
            key: self.key.to_key(),
            size: self.size,
            writer: self.writer,
            put_start: self.put_start,
            lease: self.lease,
            seq: self.seq,
            write_token: self.write_token,
            hard_pin: self.hard_pin,
            group: self.group.map(str::to_owned),
            committed: self.committed,
            in_flight: self.in_flight,
            task: self.task.as_deref().cloned(),
            replicas: self.replicas.iter().map(ReplicaView::to_replica).collect(),
        }
    }
}

impl ReplicaView<'_> {
    pub fn to_replica(&self) -> ReplicaImage {
        ReplicaImage {
            id: self.id,
            status: self.status,
            role: self.role,
            place: match self.place {
                PlacementView::Memory { segment, address } => Placement::Memory {
                    segment: segment.to_owned(),
                    address,
                },
                PlacementView::NofSsd { segment, address } => Placement::NofSsd {
                    segment: segment.to_owned(),
                    address,
                },
                PlacementView::LocalDisk { client } => Placement::LocalDisk { client },
            },
        }
    }
}

impl DiscardedView<'_> {
    pub fn to_discarded(&self) -> DiscardedBuffer {
        DiscardedBuffer {
            buffer: BufferRef {
                segment: self.segment.to_owned(),
                address: self.address,
                len: self.len,
            },
            release_at: self.release_at,
        }
    }
}
