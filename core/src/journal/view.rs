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
//! and corrupted batches.
//!
//! [`decode_batch_prefix`]: super::codec::decode_batch_prefix

use super::codec::{
    decode_prefix_with, fail, parse_record, At, Reader, DISCARDED_MIN, HEADER_LEN, REPLICA_MIN,
    STARTED_MIN,
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

/// Decodes the batch at the start of `bytes` as views, with
/// [`decode_batch_view_prefix`]'s checks and messages, appending each
/// record whose sequence is at least `keep_from` to `out` with its
/// sequence, instead of collecting the batch's records: its first
/// sequence, record count and length in bytes. On an error some records
/// may have been appended already; the caller drops them (the batch is
/// corrupt). Lets a caller decode several batches into one list, keeping
/// only the records it has not seen, with one parse of each; each view is
/// built straight into its place in `out` rather than moved there through
/// the calls that parse it (a view is a few hundred bytes).
pub fn decode_batch_views_into<'a>(
    bytes: &'a [u8],
    keep_from: u64,
    out: &mut Vec<(u64, RecordView<'a>)>,
) -> Result<(u64, usize, usize)> {
    let (first_seq, records, used) = decode_prefix_with(bytes, |r, seq| {
        let start = r.position();
        let kind = parse_kind(r, seq)?;
        if seq >= keep_from {
            out.push((
                seq,
                RecordView {
                    bytes: r.bytes_from(start),
                    kind,
                },
            ));
        }
        Ok(())
    })?;
    Ok((first_seq, records.len(), used))
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

#[inline]
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
        Some(tag @ (3 | 4 | 11 | 12)) => {
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
