//! The journal's byte format: self-delimiting, versioned, checksummed
//! batches of consecutive records. [`encode_batch`] writes one,
//! [`decode_batch`] parses exactly one, [`decode_batch_prefix`] parses the
//! first of a concatenation and says where the next starts.
//!
//! Hand-written for the reasons the snapshot codec gives (a fixed,
//! documented layout that stays readable for ever, one accepted encoding per
//! value, every count checked against the remaining input before anything
//! is allocated for it, messages naming the record, field and byte).
//!
//! # Layout (all integers little-endian)
//!
//! ```text
//! header (40 bytes)
//!   magic        [u8; 8]  MAGIC
//!   version      u32      FORMAT_VERSION
//!   flags        u32      must be 0
//!   first_seq    u64      sequence of the first record, >= 1
//!   count        u32      records in the batch, >= 1; the last sequence,
//!                         first_seq + count - 1, is at most MAX_SEQ
//!   payload_len  u64      exact number of payload bytes after the header
//!   crc32        u32      CRC-32 (IEEE) of header bytes 0..36, then the payload
//! payload: `count` records, each a tag u8 (1..=13, Record::tag; 1..=10 in
//! a version 1 batch, 1..=11 in a version 2 one, 1..=12 in a version 3
//! one) + its fields:
//!   1 SegmentMounted     owner u64, name name, pool u8 (0 memory, 1 NOF_SSD),
//!                        base u64, size u64
//!   2 SegmentUnmounted   owner u64, name name
//!   3 ObjectSet          image, discarded vec<discarded>
//!   4 ObjectErased       key, discarded vec<discarded>
//!   5 DiscardReleased    at instant, buffers vec<buffer>
//!   6 GroupRetained      tenant name, group name, deadline instant
//!   7 GroupReleased      tenant name, group name
//!   8 RetentionExpired   tenant name, group name, deadline instant
//!   9 Counters           next_replica_id u64, next_write_token u64,
//!                        next_object_seq u64
//!  10 Reset              image blob (a snapshot, docs/CONTRACT.md section 6)
//!  11 ObjectEnded        key, write_token u64, at instant,
//!                        completed vec<u64> (replica ids, strictly
//!                        increasing), commit opt<opt<deadline>>,
//!                        write_over bool (version 2 on)
//!  12 ObjectStarted      key, size u64, writer u64, put_start instant,
//!                        seq u64, write_token u64, hard_pin bool,
//!                        group opt<name>, pending intent,
//!                        replicas vec<started> (ids strictly increasing)
//!                        (version 3 on)
//!  13 Timeline           skew_ms i64 (version 4 on)
//! image     = key, size u64, writer u64, put_start instant, lease instant,
//!             seq u64, write_token u64, hard_pin bool, group opt<name>,
//!             committed opt<deadline>, in_flight opt<opt<intent>>,
//!             task opt<task>, replicas vec<replica> (ids strictly
//!             increasing)
//! task      = u8 0 copy + source u64 + targets vec<u64>
//!           | u8 1 move + source u64 + target u64
//!           | u8 2 promotion + target u64
//! replica   = id u64, status u8 (0 PROCESSING, 1 COMPLETE),
//!             role u8 (0 write, 1 task target), placement tag u8, then
//!               0 memory / 1 NOF_SSD: segment name, address u64
//!               2 local disk:         client u64
//! started   = id u64, placement tag u8, then as in replica (a Start's
//!             replica: PROCESSING, role write, neither spelled)
//! key       = tenant name, key str (non-empty)
//! buffer    = segment name, address u64, len u64
//! discarded = buffer, release_at instant
//! intent    = u8 0 preserve | 1 enable + ttl u64 | 2 disable (a ttl of 0
//!             is a valid intent: it commits ordinary cache, as disable)
//! str = u32 byte length + UTF-8; name = str, non-empty, no NUL;
//! blob = u64 byte length + bytes; vec<T> = u32 count + T...;
//! opt<T> = u8 0 | u8 1 + T; bool = u8 0 | 1;
//! instant = u64 <= MAX_INSTANT; deadline = instant, not 0 (a committed
//! soft-pin deadline: 0 is no deadline, never a committed one);
//! i64 = 8 bytes, two's complement (every value has its one spelling; a
//! standby refuses a skew beyond +-MAX_INSTANT on apply, not the codec).
//! ```
//!
//! Every field is fixed-width or length-prefixed and every tag, bool and
//! enum byte has one accepted spelling, so a batch has exactly one encoding
//! per format version: whatever [`decode_batch`] accepts in the current
//! version ([`FORMAT_VERSION`]), [`encode_batch`] gives back byte for byte.
//! Version 2 added tag 11, version 3 tag 12 and version 4 tag 13; an older
//! batch still decodes, to the same records it always did, and a tag its
//! version does not have is an unknown tag in it. [`encode_batch`] writes
//! those records in the current version (another version field, so other
//! bytes: a version 1 to 3 batch does not come back byte for byte from it);
//! [`encode_batch_as`] with the batch's own version gives it back. A new
//! layout gets a new version number and the decoder keeps reading every
//! older one (a fixture test holds it to that).

use super::record::*;
use crate::clock::{Instant, MAX_INSTANT};
use crate::error::{Error, ErrorKind, Result};
use crate::soft_pin::SoftPinIntent;
use crate::types::Pool;
use std::borrow::Cow;
use std::fmt;

/// First eight bytes of every batch (the snapshot's trick: a non-ASCII
/// first byte and a trailing newline catch 7-bit and line-ending mangling).
pub const MAGIC: [u8; 8] = *b"\x89MCJRNL\n";

/// The layout documented above.
pub const FORMAT_VERSION: u32 = 4;

/// The first layout with [`Record::ObjectEnded`] (tag 11).
pub const ENDED_VERSION: u32 = 2;

/// The first layout with [`Record::ObjectStarted`] (tag 12).
pub const STARTED_VERSION: u32 = 3;

/// The first layout with [`Record::Timeline`] (tag 13).
pub const TIMELINE_VERSION: u32 = 4;

/// The highest record tag layout `version` (a version this build reads)
/// has.
pub const fn last_tag(version: u32) -> u8 {
    if version >= TIMELINE_VERSION {
        13
    } else if version >= STARTED_VERSION {
        12
    } else if version >= ENDED_VERSION {
        11
    } else {
        10
    }
}

/// The oldest layout this build reads.
pub const OLDEST_VERSION: u32 = 1;

/// Bytes before the payload.
pub const HEADER_LEN: usize = 40;

/// The last sequence a record can have. `u64::MAX` is never one, so "the
/// sequence after the last record" always exists (a journal's next
/// sequence, a consumer's resume point).
pub const MAX_SEQ: u64 = u64::MAX - 1;

/// Header bytes the checksum covers (everything before the checksum).
const CRC_COVERED: usize = 36;

// Smallest encoding of each element, to reject counts the remaining input
// cannot hold before allocating for them.
const STR_MIN: usize = 4;
// tag + two strings (GroupReleased), tag + a blob length (Reset) or tag +
// an i64 (Timeline): the smallest records.
const RECORD_MIN: usize = 1 + 2 * STR_MIN;
pub(super) const REPLICA_MIN: usize = 8 + 1 + 1 + 1 + 8;
pub(super) const STARTED_MIN: usize = 8 + 1 + 8;
const BUFFER_MIN: usize = STR_MIN + 8 + 8;
pub(super) const DISCARDED_MIN: usize = BUFFER_MIN + 8;

pub(super) fn fail(message: impl Into<Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::DeserializeFail, message)
}

/// [`fail`] out of line: the cursor's checks are inlined into every field
/// read, and their messages are formatted only on the (cold) failure path.
#[cold]
#[inline(never)]
fn cold(message: fmt::Arguments<'_>) -> Error {
    fail(message.to_string())
}

// The hot checks' failures, each out of line and given its `At` by value,
// so the fast path never materialises an `At` in memory for a message (the
// profile showed the copy stalling every field read).

#[cold]
#[inline(never)]
fn truncated(at: At, offset: usize, n: usize, left: usize) -> Error {
    cold(format_args!(
        "truncated in {at} at byte {offset}: need {n} bytes, {left} left"
    ))
}

#[cold]
#[inline(never)]
fn beyond_max_instant(at: At, offset: usize, v: u64) -> Error {
    cold(format_args!(
        "{at} at byte {offset}: instant {v} is beyond MAX_INSTANT ({MAX_INSTANT})"
    ))
}

#[cold]
#[inline(never)]
fn zero_deadline(at: At, offset: usize) -> Error {
    cold(format_args!(
        "{at} at byte {offset}: a committed deadline of 0 (a master commits an instant \
         after the End's, and 0 is no deadline)"
    ))
}

#[cold]
#[inline(never)]
fn bad_byte(at: At, offset: usize, b: u8, max: u8) -> Error {
    cold(format_args!(
        "bad byte {b} in {at} at byte {offset} (expected 0..={max})"
    ))
}

#[cold]
#[inline(never)]
fn too_many(at: At, offset: usize, n: u32, left: usize, min_size: usize) -> Error {
    cold(format_args!(
        "{at} at byte {offset} claims {n} elements but only {left} bytes follow (each \
         takes at least {min_size})"
    ))
}

#[cold]
#[inline(never)]
fn not_utf8(at: At, start: usize, e: std::str::Utf8Error) -> Error {
    cold(format_args!("{at} at byte {start} is not UTF-8: {e}"))
}

#[cold]
#[inline(never)]
fn bad_name(at: At, start: usize) -> Error {
    cold(format_args!(
        "{at} at byte {start}: a name must be non-empty and free of NUL"
    ))
}

#[cold]
#[inline(never)]
fn unknown_tag(tag: u8, seq: u64, offset: usize, known: usize) -> Error {
    cold(format_args!(
        "unknown record tag {tag} for sequence {seq} at byte {offset} (this build knows \
         1..={known} in this batch's version)"
    ))
}

#[cold]
#[inline(never)]
fn empty_key(at: At, start: usize) -> Error {
    cold(format_args!("{at} at byte {start}: empty key"))
}

/// A decoded batch: consecutive records from `first_seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub first_seq: u64,
    pub records: Vec<Record>,
}

impl Batch {
    /// Sequence of the last record (a decoded batch has at least one, and
    /// its span never passes [`MAX_SEQ`]).
    pub fn last_seq(&self) -> u64 {
        self.first_seq
            .saturating_add((self.records.len() as u64).saturating_sub(1))
    }
}

/// What a batch header says, checked against the input but without parsing
/// or checksumming the payload ([`peek_header`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub version: u32,
    pub first_seq: u64,
    pub count: u32,
    /// Header plus payload: where the next batch of a concatenation starts.
    pub total_len: usize,
}

// ---------------------------------------------------------------- encoding

/// Encodes one record's bytes (tag and fields) onto `out`. This is what the
/// journal stores per record and what a batch's payload concatenates.
///
/// # Panics
/// Only if a string or list is longer than `u32::MAX` (no master makes one:
/// names are at most `u32::MAX` bytes, replica lists a few thousand).
pub fn encode_record(rec: &Record, out: &mut Vec<u8>) {
    let mut w = Writer(out);
    w.u8(rec.tag());
    match rec {
        Record::SegmentMounted {
            owner,
            name,
            pool,
            base,
            size,
        } => {
            w.u64(*owner);
            w.str(name);
            w.u8(*pool as u8);
            w.u64(*base);
            w.u64(*size);
        }
        Record::SegmentUnmounted { owner, name } => {
            w.u64(*owner);
            w.str(name);
        }
        Record::ObjectSet { image, discarded } => {
            w.image(image);
            w.vec(discarded, Writer::discarded);
        }
        Record::ObjectErased { key, discarded } => {
            w.key(key);
            w.vec(discarded, Writer::discarded);
        }
        Record::DiscardReleased { at, buffers } => {
            w.u64(*at);
            w.vec(buffers, Writer::buffer);
        }
        Record::GroupRetained {
            tenant,
            group,
            deadline,
        }
        | Record::RetentionExpired {
            tenant,
            group,
            deadline,
        } => {
            w.str(tenant);
            w.str(group);
            w.u64(*deadline);
        }
        Record::GroupReleased { tenant, group } => {
            w.str(tenant);
            w.str(group);
        }
        Record::Counters {
            next_replica_id,
            next_write_token,
            next_object_seq,
        } => {
            w.u64(*next_replica_id);
            w.u64(*next_write_token);
            w.u64(*next_object_seq);
        }
        Record::Reset { image } => {
            w.u64(image.len() as u64);
            w.0.extend_from_slice(image);
        }
        Record::ObjectEnded {
            key,
            write_token,
            at,
            completed,
            commit,
            write_over,
        } => {
            w.key(key);
            w.u64(*write_token);
            w.u64(*at);
            w.vec(completed, |w, id| w.u64(*id));
            w.opt(commit.as_ref(), |w, c| w.opt(c.as_ref(), |w, d| w.u64(*d)));
            w.bool(*write_over);
        }
        Record::ObjectStarted {
            key,
            size,
            writer,
            put_start,
            seq,
            write_token,
            hard_pin,
            group,
            pending,
            replicas,
        } => {
            w.key(key);
            w.u64(*size);
            w.u64(*writer);
            w.u64(*put_start);
            w.u64(*seq);
            w.u64(*write_token);
            w.bool(*hard_pin);
            w.opt(group.as_ref(), |w, g| w.str(g));
            w.intent(*pending);
            w.vec(replicas, |w, r| {
                w.u64(r.id);
                w.placement(&r.place);
            });
        }
        Record::Timeline { skew_ms } => w.i64(*skew_ms),
    }
}

/// The encoded size of one record (what the journal charges for it).
pub fn encoded_len(rec: &Record) -> usize {
    let mut v = Vec::new();
    encode_record(rec, &mut v);
    v.len()
}

/// Encodes `records` as one batch starting at sequence `first_seq`.
/// `INVALID_PARAMS` for an empty batch, sequence 0, more than `u32::MAX`
/// records, or sequences that would pass [`MAX_SEQ`].
pub fn encode_batch(first_seq: u64, records: &[Record]) -> Result<Vec<u8>> {
    encode_batch_as(FORMAT_VERSION, first_seq, records)
}

/// [`encode_batch`] in layout `version` ([`OLDEST_VERSION`] to
/// [`FORMAT_VERSION`]), for a consumer that still reads only an older
/// layout. `INVALID_PARAMS` as [`encode_batch`], for a version this build
/// does not write, or for a record the version has no tag for
/// ([`Record::ObjectEnded`] before version 2, [`Record::ObjectStarted`]
/// before version 3, [`Record::Timeline`] before version 4).
pub fn encode_batch_as(version: u32, first_seq: u64, records: &[Record]) -> Result<Vec<u8>> {
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(Error::invalid(format!(
            "journal format version {version} is not one this build writes ({OLDEST_VERSION} \
             to {FORMAT_VERSION})"
        )));
    }
    check_span(first_seq, records.len()).map_err(Error::invalid)?;
    if let Some((i, r)) = records
        .iter()
        .enumerate()
        .find(|(_, r)| r.tag() > last_tag(version))
    {
        let since = match r.tag() {
            11 => ENDED_VERSION,
            12 => STARTED_VERSION,
            _ => TIMELINE_VERSION,
        };
        return Err(Error::invalid(format!(
            "record {i} is {} {}, which format {version} has no tag for (format {since} on)",
            if r.name().starts_with(['A', 'E', 'I', 'O', 'U']) {
                "an"
            } else {
                "a"
            },
            r.name()
        )));
    }
    let mut out = vec![0u8; HEADER_LEN];
    for r in records {
        encode_record(r, &mut out);
    }
    seal_as(version, &mut out, first_seq, records.len() as u32);
    Ok(out)
}

/// Why `(first_seq, count)` cannot head a batch, if it cannot.
fn check_span(first_seq: u64, count: usize) -> std::result::Result<(), String> {
    if first_seq == 0 {
        return Err("sequence numbers start at 1; a batch cannot start at 0".into());
    }
    if count == 0 {
        return Err("a batch holds at least one record".into());
    }
    let Ok(n) = u32::try_from(count) else {
        return Err(format!(
            "{count} records exceed the {} a batch can hold",
            u32::MAX
        ));
    };
    if first_seq > MAX_SEQ - (u64::from(n) - 1) {
        return Err(format!(
            "{n} records from sequence {first_seq} would pass the last sequence {MAX_SEQ}"
        ));
    }
    Ok(())
}

/// Writes the header of the batch whose payload already follows it in
/// `out` (`out[HEADER_LEN..]`), checksum included, in format `version`.
/// The caller has checked the span (`check_span`).
fn seal_as(version: u32, out: &mut [u8], first_seq: u64, count: u32) {
    debug_assert!(out.len() >= HEADER_LEN);
    let (header, payload) = out.split_at_mut(HEADER_LEN);
    let mut sealer = Sealer::with_version(version, first_seq, count, payload.len() as u64);
    sealer.payload(payload);
    header.copy_from_slice(&sealer.header());
}

/// The header of a batch being sealed whose payload the caller hands in
/// piece by piece, in order (the checksum covers the header's fields, then
/// the payload), for a batch written where its bytes cannot be read back.
pub(crate) struct Sealer {
    header: [u8; HEADER_LEN],
    crc: crc32fast::Hasher,
}

impl Sealer {
    /// A batch of the current format: `count` records from `first_seq`,
    /// `payload_len` bytes of them. The caller has checked the span
    /// (`check_span`).
    pub(crate) fn new(first_seq: u64, count: u32, payload_len: u64) -> Sealer {
        Sealer::with_version(FORMAT_VERSION, first_seq, count, payload_len)
    }

    fn with_version(version: u32, first_seq: u64, count: u32, payload_len: u64) -> Sealer {
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(&MAGIC);
        header[8..12].copy_from_slice(&version.to_le_bytes());
        header[12..16].copy_from_slice(&0u32.to_le_bytes());
        header[16..24].copy_from_slice(&first_seq.to_le_bytes());
        header[24..28].copy_from_slice(&count.to_le_bytes());
        header[28..36].copy_from_slice(&payload_len.to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header[..CRC_COVERED]);
        Sealer { header, crc }
    }

    /// The next bytes of the payload.
    pub(crate) fn payload(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
    }

    /// The header, checksum included, of the payload handed in.
    pub(crate) fn header(self) -> [u8; HEADER_LEN] {
        let mut header = self.header;
        header[CRC_COVERED..].copy_from_slice(&self.crc.finalize().to_le_bytes());
        header
    }
}

fn checksum(header: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(payload);
    h.finalize()
}

/// The encoding of a soft-pin intent: its first `n` bytes.
fn intent_bytes(i: SoftPinIntent) -> ([u8; 9], usize) {
    let mut b = [0u8; 9];
    match i {
        SoftPinIntent::Preserve => (b, 1),
        SoftPinIntent::Enable { ttl_ms } => {
            b[0] = 1;
            b[1..].copy_from_slice(&ttl_ms.to_le_bytes());
            (b, 9)
        }
        SoftPinIntent::Disable => {
            b[0] = 2;
            (b, 1)
        }
    }
}

/// Writes encoded fields, in the layout [`Writer`] appends them, into a
/// slice measured for them (the recorder writes straight into the
/// journal's memory, `capture.rs`): each field fills the front of what is
/// left. Writing past the end panics (the slice was measured wrong);
/// [`left`](Self::left) says what is unwritten.
pub(crate) struct SliceWriter<'a>(&'a mut [u8]);

impl<'a> SliceWriter<'a> {
    pub(crate) fn new(out: &'a mut [u8]) -> SliceWriter<'a> {
        SliceWriter(out)
    }
    /// Bytes not written yet.
    pub(crate) fn left(&self) -> usize {
        self.0.len()
    }
    #[inline]
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        let (head, rest) = std::mem::take(&mut self.0).split_at_mut(b.len());
        head.copy_from_slice(b);
        self.0 = rest;
    }
    #[inline]
    pub(crate) fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    #[inline]
    pub(crate) fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    #[inline]
    pub(crate) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    #[inline]
    pub(crate) fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }
    /// A string the caller measured (its length fits the u32 prefix: every
    /// key and name a master holds is validated far below that).
    #[inline]
    pub(crate) fn str(&mut self, s: &str) {
        self.str_bytes(s.as_bytes());
    }
    /// [`str`](Self::str) of the bytes of a string (a key as the master
    /// stores it, known to be UTF-8, not checked again).
    #[inline]
    pub(crate) fn str_bytes(&mut self, s: &[u8]) {
        let n = u32::try_from(s.len()).expect("journal strings are validated short");
        self.u32(n);
        self.bytes(s);
    }
    pub(crate) fn intent(&mut self, i: SoftPinIntent) {
        let (bytes, n) = intent_bytes(i);
        self.bytes(&bytes[..n]);
    }
}

/// Appends encoded fields to a buffer.
pub(crate) struct Writer<'a>(pub(crate) &'a mut Vec<u8>);

impl Writer<'_> {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }
    fn len32(&mut self, n: usize, what: &str) {
        let n = u32::try_from(n).unwrap_or_else(|_| {
            panic!("journal {what} of {n} exceeds u32::MAX; no master produces one")
        });
        self.u32(n);
    }
    pub(crate) fn str(&mut self, s: &str) {
        self.len32(s.len(), "string");
        self.0.extend_from_slice(s.as_bytes());
    }
    pub(crate) fn key(&mut self, k: &RecordKey) {
        self.str(&k.tenant);
        self.str(&k.key);
    }
    fn opt<T>(&mut self, v: Option<&T>, f: impl FnOnce(&mut Self, &T)) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                f(self, v);
            }
        }
    }
    fn vec<T>(&mut self, xs: &[T], f: impl Fn(&mut Self, &T)) {
        self.len32(xs.len(), "list");
        for x in xs {
            f(self, x);
        }
    }
    pub(crate) fn intent(&mut self, i: SoftPinIntent) {
        let (bytes, n) = intent_bytes(i);
        self.0.extend_from_slice(&bytes[..n]);
    }
    fn image(&mut self, o: &ObjectImage) {
        self.key(&o.key);
        self.u64(o.size);
        self.u64(o.writer);
        self.u64(o.put_start);
        self.u64(o.lease);
        self.u64(o.seq);
        self.u64(o.write_token);
        self.bool(o.hard_pin);
        self.opt(o.group.as_ref(), |w, g| w.str(g));
        self.opt(o.committed.as_ref(), |w, d| w.u64(*d));
        self.opt(o.in_flight.as_ref(), |w, f| {
            w.opt(f.pending.as_ref(), |w, i| w.intent(*i))
        });
        self.opt(o.task.as_ref(), Writer::task);
        self.vec(&o.replicas, Writer::replica);
    }
    fn task(&mut self, t: &TaskImage) {
        match t {
            TaskImage::Copy { source, targets } => {
                self.u8(0);
                self.u64(*source);
                self.vec(targets, |w, id| w.u64(*id));
            }
            TaskImage::Move { source, target } => {
                self.u8(1);
                self.u64(*source);
                self.u64(*target);
            }
            TaskImage::Promotion { target } => {
                self.u8(2);
                self.u64(*target);
            }
        }
    }
    fn replica(&mut self, r: &ReplicaImage) {
        self.u64(r.id);
        self.u8(r.status as u8);
        self.u8(match r.role {
            ReplicaRole::Write => 0,
            ReplicaRole::TaskTarget => 1,
        });
        self.placement(&r.place);
    }
    fn placement(&mut self, p: &Placement) {
        match p {
            Placement::Memory { segment, address } => {
                self.u8(0);
                self.str(segment);
                self.u64(*address);
            }
            Placement::NofSsd { segment, address } => {
                self.u8(1);
                self.str(segment);
                self.u64(*address);
            }
            Placement::LocalDisk { client } => {
                self.u8(2);
                self.u64(*client);
            }
        }
    }
    pub(crate) fn buffer(&mut self, b: &BufferRef) {
        self.str(&b.segment);
        self.u64(b.address);
        self.u64(b.len);
    }
    pub(crate) fn discarded(&mut self, d: &DiscardedBuffer) {
        self.buffer(&d.buffer);
        self.u64(d.release_at);
    }
}

// ---------------------------------------------------------------- decoding

/// Decodes exactly one batch: `bytes` must hold it and nothing else.
/// Anything that is not what [`encode_batch`] produces fails with
/// `DESERIALIZE_FAIL` and a message naming the record, field and byte.
pub fn decode_batch(bytes: &[u8]) -> Result<Batch> {
    let (batch, used) = decode_batch_prefix(bytes)?;
    if used != bytes.len() {
        return Err(fail(format!(
            "{} trailing bytes after the {used}-byte batch",
            bytes.len() - used
        )));
    }
    Ok(batch)
}

/// Decodes the batch at the start of `bytes` (a concatenation of batches,
/// as a consumer stores them) and returns it with its length in bytes.
pub fn decode_batch_prefix(bytes: &[u8]) -> Result<(Batch, usize)> {
    let (first_seq, records, used) = decode_prefix_with(bytes, parse_record)?;
    Ok((Batch { first_seq, records }, used))
}

/// The batch framing shared by the owned decoder and the borrowed one
/// (`view.rs`): header, checksum, record count and trailing bytes checked
/// the same way whatever `parse` builds of each record. Returns the first
/// sequence, the records and the batch's length in bytes.
pub(super) fn decode_prefix_with<'a, T>(
    bytes: &'a [u8],
    mut parse: impl FnMut(&mut Reader<'a>, u64) -> Result<T>,
) -> Result<(u64, Vec<T>, usize)> {
    let h = peek_header(bytes)?;
    let stored = u32::from_le_bytes([bytes[36], bytes[37], bytes[38], bytes[39]]);
    let payload = &bytes[HEADER_LEN..h.total_len];
    let computed = checksum(&bytes[..CRC_COVERED], payload);
    if stored != computed {
        return Err(fail(format!(
            "batch checksum mismatch: header says {stored:08x}, header and payload hash to \
             {computed:08x}"
        )));
    }
    let mut r = Reader::new(payload);
    // Every record takes at least RECORD_MIN bytes: a count the payload
    // cannot hold is refused before the list is allocated.
    let count = h.count as usize;
    if count > payload.len() / RECORD_MIN {
        return Err(fail(format!(
            "batch header claims {count} records but its payload has only {} bytes \
             (each record takes at least {RECORD_MIN})",
            payload.len()
        )));
    }
    // Reserved for at most 1024 up front and grown as records parse: a
    // record's decoded value is many times its smallest encoding, so a
    // crafted count must not reserve memory the records never fill.
    let mut records = Vec::with_capacity(count.min(1024));
    let last = last_tag(h.version);
    for i in 0..count {
        let seq = h.first_seq + i as u64;
        // A tag of a later layout is unknown in this batch's (tags past
        // every layout's are refused by the parser, with the same message).
        if let Some(tag @ 11..=13) = r.peek() {
            if tag > last {
                return Err(unknown_tag(tag, seq, r.offset(), usize::from(last)));
            }
        }
        records.push(parse(&mut r, seq)?);
    }
    if r.remaining() != 0 {
        return Err(fail(format!(
            "{} trailing bytes inside the payload after the last record, at byte {}",
            r.remaining(),
            r.offset()
        )));
    }
    Ok((h.first_seq, records, h.total_len))
}

/// Checks a batch header (magic, version, flags, sequence span, length
/// against the input) and says what it declares; the payload is neither
/// checksummed nor parsed. Lets a consumer skip through stored batches.
pub fn peek_header(bytes: &[u8]) -> Result<BatchHeader> {
    let Some(header) = bytes.first_chunk::<HEADER_LEN>() else {
        return Err(fail(format!(
            "truncated batch header: {} of {HEADER_LEN} bytes",
            bytes.len()
        )));
    };
    let u32_at = |i: usize| {
        let mut a = [0u8; 4];
        a.copy_from_slice(&header[i..i + 4]);
        u32::from_le_bytes(a)
    };
    let u64_at = |i: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&header[i..i + 8]);
        u64::from_le_bytes(a)
    };
    if header[..8] != MAGIC {
        return Err(fail(format!(
            "bad magic {:02x?}: not a mooncake_meta journal batch",
            &header[..8]
        )));
    }
    let version = u32_at(8);
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(fail(format!(
            "unsupported journal format version {version} (this build reads \
             {OLDEST_VERSION} to {FORMAT_VERSION})"
        )));
    }
    let flags = u32_at(12);
    if flags != 0 {
        return Err(fail(format!(
            "unknown batch header flags {flags:#x} (must be 0)"
        )));
    }
    let first_seq = u64_at(16);
    let count = u32_at(24);
    check_span(first_seq, count as usize).map_err(|m| fail(format!("bad batch header: {m}")))?;
    let declared = u64_at(28);
    let present = (bytes.len() - HEADER_LEN) as u64;
    if declared > present {
        return Err(fail(format!(
            "truncated batch: header declares {declared} payload bytes, {present} present"
        )));
    }
    Ok(BatchHeader {
        version,
        first_seq,
        count,
        // declared <= present, which is a usize.
        total_len: HEADER_LEN + declared as usize,
    })
}

/// Decodes one record's bytes (what [`encode_record`] writes), all of
/// them: for checks of the recorder's direct encoding.
pub(crate) fn decode_record(bytes: &[u8]) -> Result<Record> {
    let mut r = Reader::new(bytes);
    let rec = parse_record(&mut r, 1)?;
    if r.remaining() != 0 {
        return Err(fail(format!("{} bytes after the record", r.remaining())));
    }
    Ok(rec)
}

pub(super) fn parse_record(r: &mut Reader, seq: u64) -> Result<Record> {
    let tag_at = r.offset();
    let [tag] = r.array(At::new(seq, "record", "tag"))?;
    let Some(&name) = tag
        .checked_sub(1)
        .and_then(|i| Record::NAMES.get(usize::from(i)))
    else {
        return Err(unknown_tag(tag, seq, tag_at, Record::NAMES.len()));
    };
    let at = |field| At::new(seq, name, field);
    Ok(match tag {
        1 => Record::SegmentMounted {
            owner: r.u64(at("owner"))?,
            name: r.name(at("name"))?,
            pool: match r.byte_upto(1, at("pool"))? {
                0 => Pool::Memory,
                _ => Pool::NofSsd,
            },
            base: r.u64(at("base"))?,
            size: r.u64(at("size"))?,
        },
        2 => Record::SegmentUnmounted {
            owner: r.u64(at("owner"))?,
            name: r.name(at("name"))?,
        },
        // The object records have one parser, the borrowed one, whose
        // views become owned records here.
        3 | 4 | 11 | 12 => super::view::object_record(r, tag, seq)?.to_record(),
        5 => Record::DiscardReleased {
            at: r.instant(at("at"))?,
            buffers: r.vec(BUFFER_MIN, at("buffers"), |r, a| r.buffer(a))?,
        },
        6 => Record::GroupRetained {
            tenant: r.name(at("tenant"))?,
            group: r.name(at("group"))?,
            deadline: r.instant(at("deadline"))?,
        },
        7 => Record::GroupReleased {
            tenant: r.name(at("tenant"))?,
            group: r.name(at("group"))?,
        },
        8 => Record::RetentionExpired {
            tenant: r.name(at("tenant"))?,
            group: r.name(at("group"))?,
            deadline: r.instant(at("deadline"))?,
        },
        9 => Record::Counters {
            next_replica_id: r.u64(at("next_replica_id"))?,
            next_write_token: r.u64(at("next_write_token"))?,
            next_object_seq: r.u64(at("next_object_seq"))?,
        },
        10 => Record::Reset {
            image: r.blob(at("image"))?,
        },
        13 => Record::Timeline {
            skew_ms: r.i64(at("skew_ms"))?,
        },
        _ => unreachable!("tag {tag} was checked against Record::NAMES"),
    })
}

/// The record and field being read, for error messages; formatted only
/// when something fails.
#[derive(Clone, Copy)]
pub(super) struct At {
    seq: u64,
    record: &'static str,
    field: &'static str,
}

impl At {
    pub(super) fn new(seq: u64, record: &'static str, field: &'static str) -> Self {
        At { seq, record, field }
    }
    pub(super) fn field(self, field: &'static str) -> Self {
        At { field, ..self }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({})", self.record, self.seq, self.field)
    }
}

/// A cursor over a payload that never reads past it and never trusts a
/// count further than the remaining bytes can back.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// The next byte, not consumed.
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// Payload position (for [`bytes_from`](Self::bytes_from)).
    #[inline]
    pub(super) fn position(&self) -> usize {
        self.pos
    }

    /// The bytes read since payload position `start`.
    #[inline]
    pub(super) fn bytes_from(&self, start: usize) -> &'a [u8] {
        &self.buf[start..self.pos]
    }

    #[inline]
    pub(super) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Position in the batch (header included), the number a hex dump shows.
    #[inline]
    pub(super) fn offset(&self) -> usize {
        HEADER_LEN + self.pos
    }

    #[inline(always)]
    pub(super) fn take(&mut self, n: usize, at: At) -> Result<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        if rest.len() < n {
            return Err(truncated(at, self.offset(), n, rest.len()));
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    #[inline(always)]
    pub(super) fn array<const N: usize>(&mut self, at: At) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, at)?);
        Ok(a)
    }

    #[inline(always)]
    pub(super) fn u32(&mut self, at: At) -> Result<u32> {
        self.array(at).map(u32::from_le_bytes)
    }

    #[inline(always)]
    pub(super) fn u64(&mut self, at: At) -> Result<u64> {
        self.array(at).map(u64::from_le_bytes)
    }

    /// A signed 64-bit value (every bit pattern is one value).
    #[inline(always)]
    pub(super) fn i64(&mut self, at: At) -> Result<i64> {
        self.array(at).map(i64::from_le_bytes)
    }

    #[inline(always)]
    pub(super) fn instant(&mut self, at: At) -> Result<Instant> {
        let v = self.u64(at)?;
        if v > MAX_INSTANT {
            return Err(beyond_max_instant(at, self.offset() - 8, v));
        }
        Ok(v)
    }

    /// A tag, bool or enum byte; anything above `max` has no meaning and
    /// would break canonicity.
    #[inline(always)]
    pub(super) fn byte_upto(&mut self, max: u8, at: At) -> Result<u8> {
        let [b] = self.array(at)?;
        if b > max {
            return Err(bad_byte(at, self.offset() - 1, b, max));
        }
        Ok(b)
    }

    #[inline(always)]
    pub(super) fn bool(&mut self, at: At) -> Result<bool> {
        Ok(self.byte_upto(1, at)? == 1)
    }

    /// A u32 count of elements taking at least `min_size` bytes each,
    /// refused when the remaining bytes cannot hold them.
    #[inline(always)]
    pub(super) fn count(&mut self, min_size: usize, at: At) -> Result<usize> {
        let n = self.u32(at)?;
        let left = self.remaining();
        if u64::from(n) > (left / min_size) as u64 {
            return Err(too_many(at, self.offset() - 4, n, left, min_size));
        }
        Ok(n as usize)
    }

    pub(super) fn vec<T>(
        &mut self,
        min_size: usize,
        at: At,
        mut f: impl FnMut(&mut Self, At) -> Result<T>,
    ) -> Result<Vec<T>> {
        let n = self.count(min_size, at)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(f(self, at)?);
        }
        Ok(out)
    }

    /// An End's completed replica ids: strictly increasing (one order, so
    /// one encoding per set).
    #[inline]
    pub(super) fn completed(&mut self, at: At) -> Result<smallvec::SmallVec<[u64; 2]>> {
        let n = self.count(8, at)?;
        let mut out = smallvec::SmallVec::<[u64; 2]>::with_capacity(n);
        for _ in 0..n {
            let start = self.offset();
            let id = self.u64(at)?;
            if let Some(&prev) = out.last() {
                if id <= prev {
                    return Err(cold(format_args!(
                        "{at} at byte {start}: replica id {id} follows {prev}; ids must be \
                         strictly increasing"
                    )));
                }
            }
            out.push(id);
        }
        Ok(out)
    }

    /// An End's commit outcome: opt<opt<deadline>>.
    #[inline]
    pub(super) fn commit(&mut self, at: At) -> Result<Option<Option<Instant>>> {
        self.opt(at, |r, a| {
            r.opt(a.field("commit deadline"), |r, a| r.deadline(a))
        })
    }

    /// A committed soft-pin deadline: an instant other than 0. A master
    /// commits an End's instant plus a TTL of at least 1 ms, and stores 0
    /// as "no deadline" (`object::NO_DEADLINE`): a record's 0 would
    /// register and count a pin for an object that then has none.
    #[inline(always)]
    pub(super) fn deadline(&mut self, at: At) -> Result<Instant> {
        let v = self.instant(at)?;
        if v == 0 {
            return Err(zero_deadline(at, self.offset() - 8));
        }
        Ok(v)
    }

    pub(super) fn ids(&mut self, at: At) -> Result<Vec<u64>> {
        self.vec(8, at, |r, a| r.u64(a))
    }

    #[inline(always)]
    pub(super) fn opt<T>(
        &mut self,
        at: At,
        f: impl FnOnce(&mut Self, At) -> Result<T>,
    ) -> Result<Option<T>> {
        match self.byte_upto(1, at)? {
            0 => Ok(None),
            _ => f(self, at).map(Some),
        }
    }

    /// A string, borrowed from the payload.
    #[inline(always)]
    pub(super) fn str_ref(&mut self, at: At) -> Result<&'a str> {
        let len = self.u32(at)? as usize;
        let start = self.offset();
        let bytes = self.take(len, at)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err(not_utf8(at, start, e)),
        }
    }

    /// A tenant, group or segment name: non-empty, no NUL.
    pub(super) fn name(&mut self, at: At) -> Result<String> {
        self.name_ref(at).map(str::to_owned)
    }

    /// A name borrowed from the payload (what [`name`](Self::name) copies).
    #[inline(always)]
    pub(super) fn name_ref(&mut self, at: At) -> Result<&'a str> {
        let start = self.offset();
        let s = self.str_ref(at)?;
        if s.is_empty() || s.contains('\0') {
            return Err(bad_name(at, start));
        }
        Ok(s)
    }

    /// A key borrowed from the payload: (tenant, key).
    #[inline(always)]
    pub(super) fn key_ref(&mut self, at: At) -> Result<(&'a str, &'a str)> {
        let tenant = self.name_ref(at.field("key tenant"))?;
        let start = self.offset();
        let key = self.str_ref(at)?;
        if key.is_empty() {
            return Err(empty_key(at, start));
        }
        Ok((tenant, key))
    }

    pub(super) fn blob(&mut self, at: At) -> Result<Vec<u8>> {
        let len = self.u64(at)?;
        let left = self.remaining();
        if len > left as u64 {
            return Err(cold(format_args!(
                "{at} at byte {} claims {len} bytes but only {left} follow",
                self.offset() - 8
            )));
        }
        Ok(self.take(len as usize, at)?.to_vec())
    }

    #[inline]
    pub(super) fn intent(&mut self, at: At) -> Result<SoftPinIntent> {
        Ok(match self.byte_upto(2, at)? {
            0 => SoftPinIntent::Preserve,
            1 => SoftPinIntent::Enable {
                ttl_ms: self.u64(at.field("pending ttl_ms"))?,
            },
            _ => SoftPinIntent::Disable,
        })
    }

    pub(super) fn task(&mut self, at: At) -> Result<TaskImage> {
        Ok(match self.byte_upto(2, at.field("task kind"))? {
            0 => TaskImage::Copy {
                source: self.u64(at.field("task source"))?,
                targets: self.ids(at.field("task targets"))?,
            },
            1 => TaskImage::Move {
                source: self.u64(at.field("task source"))?,
                target: self.u64(at.field("task target"))?,
            },
            _ => TaskImage::Promotion {
                target: self.u64(at.field("task target"))?,
            },
        })
    }

    pub(super) fn buffer(&mut self, at: At) -> Result<BufferRef> {
        Ok(BufferRef {
            segment: self.name(at.field("segment"))?,
            address: self.u64(at.field("address"))?,
            len: self.u64(at.field("len"))?,
        })
    }
}

/// Unchecked-message reads for the put pair's records (`view.rs`, its
/// fast path): each accepts exactly what the read of the same name above
/// accepts, and gives `None` where that one gives an error, with no
/// message. The caller then goes back to the record's start
/// ([`rewind`](Reader::rewind)) and parses it again with the reads above,
/// which say what is wrong. A `None` is small enough to stay in registers,
/// where the `Result` of the reads above (an [`Error`] is 32 bytes) goes
/// through the stack: a borrowed string written there as two words and
/// read back as one waited for the store to land (a failed store
/// forwarding) at every string of every record.
impl<'a> Reader<'a> {
    /// Back to payload position `pos` (one this reader was at).
    #[inline(always)]
    pub(super) fn rewind(&mut self, pos: usize) {
        debug_assert!(pos <= self.pos);
        self.pos = pos;
    }

    #[inline(always)]
    pub(super) fn try_array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let a = *self.buf.get(self.pos..)?.first_chunk::<N>()?;
        self.pos += N;
        Some(a)
    }

    #[inline(always)]
    pub(super) fn try_u32(&mut self) -> Option<u32> {
        self.try_array().map(u32::from_le_bytes)
    }

    #[inline(always)]
    pub(super) fn try_u64(&mut self) -> Option<u64> {
        self.try_array().map(u64::from_le_bytes)
    }

    /// [`instant`](Self::instant).
    #[inline(always)]
    pub(super) fn try_instant(&mut self) -> Option<Instant> {
        self.try_u64().filter(|&v| v <= MAX_INSTANT)
    }

    /// [`deadline`](Self::deadline).
    #[inline(always)]
    pub(super) fn try_deadline(&mut self) -> Option<Instant> {
        self.try_instant().filter(|&v| v != 0)
    }

    /// [`byte_upto`](Self::byte_upto).
    #[inline(always)]
    pub(super) fn try_byte_upto(&mut self, max: u8) -> Option<u8> {
        let [b] = self.try_array()?;
        (b <= max).then_some(b)
    }

    /// [`bool`](Self::bool).
    #[inline(always)]
    pub(super) fn try_bool(&mut self) -> Option<bool> {
        self.try_byte_upto(1).map(|b| b == 1)
    }

    /// [`count`](Self::count).
    #[inline(always)]
    pub(super) fn try_count(&mut self, min_size: usize) -> Option<usize> {
        let n = self.try_u32()?;
        (u64::from(n) <= (self.remaining() / min_size) as u64).then_some(n as usize)
    }

    /// [`str_ref`](Self::str_ref).
    #[inline(always)]
    pub(super) fn try_str(&mut self) -> Option<&'a str> {
        let len = self.try_u32()? as usize;
        let bytes = self.buf.get(self.pos..)?.get(..len)?;
        let s = std::str::from_utf8(bytes).ok()?;
        self.pos += len;
        Some(s)
    }

    /// [`name_ref`](Self::name_ref).
    #[inline(always)]
    pub(super) fn try_name(&mut self) -> Option<&'a str> {
        self.try_str()
            .filter(|s| !s.is_empty() && !s.as_bytes().contains(&0))
    }

    /// [`key_ref`](Self::key_ref).
    #[inline(always)]
    pub(super) fn try_key(&mut self) -> Option<(&'a str, &'a str)> {
        let tenant = self.try_name()?;
        let key = self.try_str().filter(|k| !k.is_empty())?;
        Some((tenant, key))
    }

    /// [`intent`](Self::intent).
    #[inline(always)]
    pub(super) fn try_intent(&mut self) -> Option<SoftPinIntent> {
        Some(match self.try_byte_upto(2)? {
            0 => SoftPinIntent::Preserve,
            1 => SoftPinIntent::Enable {
                ttl_ms: self.try_u64()?,
            },
            _ => SoftPinIntent::Disable,
        })
    }
}
