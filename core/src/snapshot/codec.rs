//! The snapshot file format, versions 1 to 5: [`encode`] turns a [`SnapshotImage`]
//! into canonical bytes, [`decode`] parses and [`validate`]s them, and
//! [`peek_created_at`] reads just enough to order restore candidates.
//!
//! **Why hand-written.** The format is a persistence contract that must stay
//! loadable for ever and must reject everything that is not exactly what
//! [`encode`] would produce (`encode(decode(b)) == b`). A serde format
//! (bincode, postcard, …) ties the bytes to a crate version and to our struct
//! definitions, accepts several encodings of the same value in some formats,
//! and in older releases pre-allocates from untrusted length prefixes. The
//! layout here is small and flat, so ~150 lines of reader/writer give us a
//! fixed, documented byte layout, every count checked against the remaining
//! input (minimum element size × count) *before* any allocation, error
//! messages that say which record and field broke at which byte, and
//! single-pass encoding into one exactly pre-sized buffer.
//!
//! # Layout (all integers little-endian)
//!
//! ```text
//! header (28 bytes)
//!   magic        [u8; 8]   MAGIC
//!   version      u32       FORMAT_VERSION
//!   flags        u32       must be 0
//!   payload_len  u64       exact number of bytes after the header
//!   crc32        u32       CRC-32 (IEEE) of the payload
//! payload
//!   created_at, next_replica_id, next_write_token, next_object_seq   u64 ×4
//!   wall_at_capture u64   (version 2: the wall clock when created_at was
//!                          read; version 1 has no such field; versions 3
//!                          to 5 store it as opt<u64>)
//!   journal_seq u64       (versions 4 and 5; the last change-journal
//!                          sequence the snapshot includes, >= 1 in
//!                          version 4, 0 = none in version 5)
//!   segment count u64, segments  strictly sorted by name
//!     name str, owner u64, pool u8 (0 memory, 1 NOF_SSD), base u64, size u64
//!   group count u64, groups      strictly sorted by (tenant, name)
//!     tenant str, name str, lease u64
//!   retention count u64, retention deadlines   (versions 3 to 5; in
//!                          version 3 at least one) strictly sorted by
//!                          (tenant, group)
//!     tenant str, group str, deadline u64
//!   object count u64, objects    strictly sorted by (tenant, key)
//!     tenant str, key str, writer u64, size u64, put_start u64, lease u64,
//!     soft_pin_deadline opt<u64>, hard_pin bool, group opt<str>, seq u64,
//!     write_token u64, replica count u32, replicas  strictly sorted by id
//!       id u64, kind u8 (0 MEMORY, 1 NOF_SSD, 2 LOCAL_DISK),
//!       status u8 (0 PROCESSING, 1 COMPLETE), location tag u8, then
//!         tag 0 buffer:     segment str, address u64, len u64
//!         tag 1 local disk: client u64
//!   (version 5 only; at least one of the three lists is not empty)
//!   in-flight count u64, writes in flight   strictly sorted by (tenant, key)
//!     tenant str, key str, pending opt<intent>
//!   task count u64, tasks                   strictly sorted by (tenant, key)
//!     tenant str, key str, task
//!   discarded count u64, discarded buffers  strictly sorted by
//!                                           (segment, address)
//!     segment str, address u64, len u64, release_at u64, replica u64
//! intent = u8 0 preserve | 1 enable + ttl_ms u64 | 2 disable
//! task = u8 0 copy + source u64 + target count u32 + targets u64...
//!      | u8 1 move + source u64 + target u64 | u8 2 promotion + target u64
//! str = u32 byte length + UTF-8 bytes; opt<T> = tag u8 0 | tag 1 + T;
//! bool = u8 0 | 1.
//! ```
//!
//! Every field is fixed-width or length-prefixed and every tag, bool and
//! enum byte has exactly one accepted spelling, so together with the strict
//! ordering rules (checked by [`validate`]) each image has exactly one
//! encoding.

use super::image::{
    DiscardedRecord, GroupRecord, InFlightRecord, LocationRecord, ObjectRecord, RetentionRecord,
    SegmentRecord, SnapshotImage, SoftPinIntent, TaskImage, TaskRecord,
};
use crate::clock::MAX_INSTANT;
use crate::error::{Error, ErrorKind, Result};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

/// First eight bytes of every snapshot file. The non-ASCII first byte and
/// the trailing newline (PNG's trick) catch 7-bit and line-ending mangling.
pub const MAGIC: [u8; 8] = *b"\x89MCMETA\n";

/// The layout documented above. A new layout gets a new number and
/// [`decode`] keeps reading every older one. An image is encoded in the
/// oldest version that holds it: with a write in flight, a task or a
/// discarded buffer in this one, otherwise with a journal sequence in
/// [`FORMAT_VERSION_4`], otherwise with retention deadlines in
/// [`FORMAT_VERSION_3`], otherwise with a wall record in
/// [`FORMAT_VERSION_2`], otherwise in [`FORMAT_VERSION_1`], so
/// `encode(decode(b)) == b` for every version.
pub const FORMAT_VERSION: u32 = 5;

/// Format 3 plus the last journal sequence (at least 1) and a retention
/// list that may be empty; no writes in flight, tasks or discarded buffers.
pub const FORMAT_VERSION_4: u32 = 4;

/// Format 2 plus group retention deadlines (at least one) and an optional
/// wall record; no journal sequence.
pub const FORMAT_VERSION_3: u32 = 3;

/// Format 1 plus the wall clock at capture; no retention deadlines.
pub const FORMAT_VERSION_2: u32 = 2;

/// The first layout: no wall-clock record, so its instants restore verbatim.
/// An image without `wall_at_capture` and without retention deadlines is
/// encoded in it.
pub const FORMAT_VERSION_1: u32 = 1;

/// Bytes before the payload.
pub const HEADER_LEN: usize = 28;

// Smallest encoding of each element, used to reject counts the remaining
// input cannot possibly hold before allocating anything for them.
const STR_MIN: usize = 4;
const COUNTERS_LEN: usize = 4 * 8;
const SEGMENT_MIN: usize = STR_MIN + 8 + 1 + 8 + 8;
const GROUP_MIN: usize = 2 * STR_MIN + 8;
const RETENTION_MIN: usize = 2 * STR_MIN + 8;
const OBJECT_MIN: usize = 2 * STR_MIN + 4 * 8 + 1 + 1 + 1 + 2 * 8 + 4;
const REPLICA_FIXED: usize = 8 + 1 + 1 + 1;
const LOCAL_DISK_LEN: usize = 8;
const REPLICA_MIN: usize = REPLICA_FIXED + LOCAL_DISK_LEN;

const IN_FLIGHT_MIN: usize = 2 * STR_MIN + 1;
const TASK_MIN: usize = 2 * STR_MIN + 1 + 8;
const DISCARDED_MIN: usize = STR_MIN + 4 * 8;

const TAG_BUFFER: u8 = 0;
const TAG_LOCAL_DISK: u8 = 1;

pub(crate) fn fail(message: impl Into<Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::DeserializeFail, message)
}

// ---------------------------------------------------------------- encoding

/// The version `image` is encoded in: the oldest that holds it.
pub fn version_of(image: &SnapshotImage) -> u32 {
    if image.has_live_state() {
        FORMAT_VERSION
    } else if image.journal_seq != 0 {
        FORMAT_VERSION_4
    } else if !image.retention.is_empty() {
        FORMAT_VERSION_3
    } else if image.wall_at_capture.is_some() {
        FORMAT_VERSION_2
    } else {
        FORMAT_VERSION_1
    }
}

/// Serialises `image` canonically. The output is a pure function of the
/// image; it is the only encoding [`decode`] accepts when the image passes
/// [`validate`] (which encode does not call: capturing code validates in its
/// tests, restore validates on the way in).
///
/// # Panics
/// Only if a string or an object's replica list is longer than `u32::MAX`,
/// which [`validate`] rejects and no master can produce.
pub fn encode(image: &SnapshotImage) -> Vec<u8> {
    let payload_len = encoded_payload_len(image);
    let mut w = Writer(Vec::with_capacity(HEADER_LEN + payload_len));
    w.0.extend_from_slice(&MAGIC);
    let version = version_of(image);
    w.u32(version);
    w.u32(0);
    w.u64(payload_len as u64);
    w.u32(0); // checksum, patched below once the payload is written

    for v in [
        image.created_at,
        image.next_replica_id,
        image.next_write_token,
        image.next_object_seq,
    ] {
        w.u64(v);
    }
    match (version, image.wall_at_capture) {
        (FORMAT_VERSION_3.., None) => w.u8(0),
        (FORMAT_VERSION_3.., Some(wall)) => {
            w.u8(1);
            w.u64(wall);
        }
        (_, Some(wall)) => w.u64(wall),
        (_, None) => {}
    }
    if version >= FORMAT_VERSION_4 {
        w.u64(image.journal_seq);
    }
    w.u64(image.segments.len() as u64);
    for s in &image.segments {
        w.str(&s.name);
        w.u64(s.owner);
        w.u8(s.pool);
        w.u64(s.base);
        w.u64(s.size);
    }
    w.u64(image.groups.len() as u64);
    for g in &image.groups {
        w.str(&g.tenant);
        w.str(&g.name);
        w.u64(g.lease);
    }
    if version >= FORMAT_VERSION_3 {
        w.u64(image.retention.len() as u64);
        for r in &image.retention {
            w.str(&r.tenant);
            w.str(&r.group);
            w.u64(r.deadline);
        }
    }
    w.u64(image.objects.len() as u64);
    for o in &image.objects {
        encode_object(&mut w, o);
    }
    if version == FORMAT_VERSION {
        encode_live_state(&mut w, image);
    }

    let mut out = w.0;
    debug_assert_eq!(out.len(), HEADER_LEN + payload_len);
    let crc = crc32fast::hash(&out[HEADER_LEN..]);
    out[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    out
}

fn encode_object(w: &mut Writer, o: &ObjectRecord) {
    w.str(&o.tenant);
    w.str(&o.key);
    w.u64(o.writer);
    w.u64(o.size);
    w.u64(o.put_start);
    w.u64(o.lease);
    match o.soft_pin_deadline {
        None => w.u8(0),
        Some(d) => {
            w.u8(1);
            w.u64(d);
        }
    }
    w.u8(u8::from(o.hard_pin));
    match &o.group {
        None => w.u8(0),
        Some(g) => {
            w.u8(1);
            w.str(g);
        }
    }
    w.u64(o.seq);
    w.u64(o.write_token);
    w.u32(len_u32(o.replicas.len(), "replica list"));
    for r in &o.replicas {
        w.u64(r.id);
        w.u8(r.kind);
        w.u8(r.status);
        match &r.location {
            LocationRecord::Buffer {
                segment,
                address,
                len,
            } => {
                w.u8(TAG_BUFFER);
                w.str(segment);
                w.u64(*address);
                w.u64(*len);
            }
            LocationRecord::LocalDisk { client } => {
                w.u8(TAG_LOCAL_DISK);
                w.u64(*client);
            }
        }
    }
}

fn encode_live_state(w: &mut Writer, image: &SnapshotImage) {
    w.u64(image.in_flight.len() as u64);
    for f in &image.in_flight {
        w.str(&f.tenant);
        w.str(&f.key);
        match f.pending {
            None => w.u8(0),
            Some(i) => {
                w.u8(1);
                w.intent(i);
            }
        }
    }
    w.u64(image.tasks.len() as u64);
    for t in &image.tasks {
        w.str(&t.tenant);
        w.str(&t.key);
        match &t.task {
            TaskImage::Copy { source, targets } => {
                w.u8(0);
                w.u64(*source);
                w.u32(len_u32(targets.len(), "copy target list"));
                for id in targets {
                    w.u64(*id);
                }
            }
            TaskImage::Move { source, target } => {
                w.u8(1);
                w.u64(*source);
                w.u64(*target);
            }
            TaskImage::Promotion { target } => {
                w.u8(2);
                w.u64(*target);
            }
        }
    }
    w.u64(image.discarded.len() as u64);
    for d in &image.discarded {
        w.str(&d.segment);
        w.u64(d.address);
        w.u64(d.len);
        w.u64(d.release_at);
        w.u64(d.replica);
    }
}

fn live_state_len(image: &SnapshotImage) -> usize {
    let mut n = 3 * 8;
    for f in &image.in_flight {
        n += IN_FLIGHT_MIN + f.tenant.len() + f.key.len();
        n += match f.pending {
            None => 0,
            Some(SoftPinIntent::Enable { .. }) => 1 + 8,
            Some(_) => 1,
        };
    }
    for t in &image.tasks {
        n += 2 * STR_MIN + t.tenant.len() + t.key.len() + 1;
        n += match &t.task {
            TaskImage::Copy { targets, .. } => 8 + 4 + 8 * targets.len(),
            TaskImage::Move { .. } => 16,
            TaskImage::Promotion { .. } => 8,
        };
    }
    n += image
        .discarded
        .iter()
        .map(|d| DISCARDED_MIN + d.segment.len())
        .sum::<usize>();
    n
}

/// Exact payload size, so encoding never reallocates (10^6 objects ≈ 100 MB).
fn encoded_payload_len(image: &SnapshotImage) -> usize {
    let version = version_of(image);
    let mut n = COUNTERS_LEN
        + 3 * 8
        + match (version, image.wall_at_capture) {
            (FORMAT_VERSION_3.., w) => 1 + w.map_or(0, |_| 8),
            (_, Some(_)) => 8,
            (_, None) => 0,
        };
    if version >= FORMAT_VERSION_4 {
        n += 8;
    }
    if version == FORMAT_VERSION {
        n += live_state_len(image);
    }
    if version >= FORMAT_VERSION_3 {
        n += 8 + image
            .retention
            .iter()
            .map(|r| RETENTION_MIN + r.tenant.len() + r.group.len())
            .sum::<usize>();
    }
    n += image
        .segments
        .iter()
        .map(|s| SEGMENT_MIN + s.name.len())
        .sum::<usize>();
    n += image
        .groups
        .iter()
        .map(|g| GROUP_MIN + g.tenant.len() + g.name.len())
        .sum::<usize>();
    for o in &image.objects {
        n += OBJECT_MIN + o.tenant.len() + o.key.len();
        n += o.soft_pin_deadline.map_or(0, |_| 8);
        n += o.group.as_ref().map_or(0, |g| STR_MIN + g.len());
        for r in &o.replicas {
            n += REPLICA_FIXED
                + match &r.location {
                    LocationRecord::Buffer { segment, .. } => STR_MIN + segment.len() + 16,
                    LocationRecord::LocalDisk { .. } => LOCAL_DISK_LEN,
                };
        }
    }
    n
}

fn len_u32(len: usize, what: &str) -> u32 {
    u32::try_from(len).unwrap_or_else(|_| {
        panic!("snapshot {what} of {len} exceeds u32::MAX; validate rejects it")
    })
}

struct Writer(Vec<u8>);

impl Writer {
    #[inline]
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    #[inline]
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn intent(&mut self, i: SoftPinIntent) {
        match i {
            SoftPinIntent::Preserve => self.u8(0),
            SoftPinIntent::Enable { ttl_ms } => {
                self.u8(1);
                self.u64(ttl_ms);
            }
            SoftPinIntent::Disable => self.u8(2),
        }
    }
    #[inline]
    fn str(&mut self, s: &str) {
        self.u32(len_u32(s.len(), "string"));
        self.0.extend_from_slice(s.as_bytes());
    }
}

// ---------------------------------------------------------------- decoding

/// Parses a snapshot and checks it with [`validate`]. Anything that is not
/// exactly what [`encode`] produces for a valid image fails with
/// `DESERIALIZE_FAIL` and a message naming the record, field and byte.
pub fn decode(bytes: &[u8]) -> Result<SnapshotImage> {
    let (version, payload) = check_frame(bytes)?;
    let image = parse_payload(payload, version)?;
    validate(&image)?;
    Ok(image)
}

/// The creation instant of a snapshot, after checking magic, version, flags,
/// length and checksum, without parsing the records: restore uses it to try
/// candidates newest first and only fully decodes the ones it tries.
pub fn peek_created_at(bytes: &[u8]) -> Result<u64> {
    let (_, payload) = check_frame(bytes)?;
    check_created_at(Reader::new(payload).u64(At::new(Item::Counters, "created_at"))?)
}

/// A creation instant as a snapshot may state it: at most `MAX_INSTANT`.
pub fn check_created_at(created_at: u64) -> Result<u64> {
    if created_at > MAX_INSTANT {
        return Err(fail(format!(
            "created_at {created_at} is beyond MAX_INSTANT ({MAX_INSTANT})"
        )));
    }
    Ok(created_at)
}

/// Checks the header against the whole input and returns the format
/// version and the payload.
fn check_frame(bytes: &[u8]) -> Result<(u32, &[u8])> {
    let Some((header, payload)) = bytes.split_first_chunk::<HEADER_LEN>() else {
        return Err(fail(format!(
            "truncated header: {} of {HEADER_LEN} bytes",
            bytes.len()
        )));
    };
    let (version, stored) = check_header(header, payload.len() as u64)?;
    let computed = crc32fast::hash(payload);
    if stored != computed {
        return Err(fail(format!(
            "payload checksum mismatch: header says {stored:08x}, payload hashes to {computed:08x}"
        )));
    }
    Ok((version, payload))
}

/// Checks a header (magic, version, flags) and that it declares exactly
/// `payload_len` bytes after it; returns the format version and the stored
/// checksum. [`super::file::load`] checks a file's header so before it
/// reads the rest, so a file that is no snapshot costs no more than its
/// header.
pub fn check_header(header: &[u8; HEADER_LEN], payload_len: u64) -> Result<(u32, u32)> {
    let u32_at =
        |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    if header[..8] != MAGIC {
        return Err(fail(format!(
            "bad magic {:02x?}: not a mooncake_meta snapshot",
            &header[..8]
        )));
    }
    let version = u32_at(8);
    if !(FORMAT_VERSION_1..=FORMAT_VERSION).contains(&version) {
        return Err(fail(format!(
            "unsupported snapshot format version {version} (this build reads {FORMAT_VERSION_1} to {FORMAT_VERSION})"
        )));
    }
    let flags = u32_at(12);
    if flags != 0 {
        return Err(fail(format!("unknown header flags {flags:#x} (must be 0)")));
    }
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&header[16..24]);
    let declared = u64::from_le_bytes(len_bytes);
    match declared.cmp(&payload_len) {
        Ordering::Greater => {
            return Err(fail(format!(
                "truncated payload: header declares {declared} bytes, {payload_len} present"
            )))
        }
        Ordering::Less => {
            return Err(fail(format!(
                "{} trailing bytes after the {declared}-byte payload",
                payload_len - declared
            )))
        }
        Ordering::Equal => {}
    }
    Ok((version, u32_at(24)))
}

fn parse_payload(payload: &[u8], version: u32) -> Result<SnapshotImage> {
    let mut r = Reader::new(payload);
    let c = Item::Counters;
    let created_at = r.u64(At::new(c, "created_at"))?;
    let next_replica_id = r.u64(At::new(c, "next_replica_id"))?;
    let next_write_token = r.u64(At::new(c, "next_write_token"))?;
    let next_object_seq = r.u64(At::new(c, "next_object_seq"))?;
    let wall_at_capture = match version {
        FORMAT_VERSION_1 => None,
        FORMAT_VERSION_2 => Some(r.u64(At::new(c, "wall_at_capture"))?),
        _ => match r.byte_upto(1, At::new(c, "wall_at_capture tag"))? {
            0 => None,
            _ => Some(r.u64(At::new(c, "wall_at_capture"))?),
        },
    };
    let journal_seq = if version >= FORMAT_VERSION_4 {
        let seq = r.u64(At::new(c, "journal_seq"))?;
        if seq == 0 && version == FORMAT_VERSION_4 {
            return Err(fail(format!(
                "format {FORMAT_VERSION_4} snapshot with journal_seq 0, at byte {}: such an image \
                 is encoded as format {FORMAT_VERSION_1}, {FORMAT_VERSION_2} or {FORMAT_VERSION_3}",
                r.offset() - 8
            )));
        }
        seq
    } else {
        0
    };

    let n = r.count_u64(SEGMENT_MIN, At::new(Item::List("segment"), "count"))?;
    let mut segments = Vec::with_capacity(n);
    for i in 0..n {
        let it = Item::Segment(i);
        segments.push(SegmentRecord {
            name: r.string(it, "name")?,
            owner: r.u64(At::new(it, "owner"))?,
            pool: r.byte_upto(1, At::new(it, "pool"))?,
            base: r.u64(At::new(it, "base"))?,
            size: r.u64(At::new(it, "size"))?,
        });
    }

    let n = r.count_u64(GROUP_MIN, At::new(Item::List("group"), "count"))?;
    let mut groups = Vec::with_capacity(n);
    for i in 0..n {
        let it = Item::Group(i);
        groups.push(GroupRecord {
            tenant: r.string(it, "tenant")?,
            name: r.string(it, "name")?,
            lease: r.u64(At::new(it, "lease"))?,
        });
    }

    let mut retention = Vec::new();
    if version >= FORMAT_VERSION_3 {
        let at = At::new(Item::List("retention"), "count");
        let n = r.count_u64(RETENTION_MIN, at)?;
        if n == 0 && version == FORMAT_VERSION_3 {
            return Err(fail(format!(
                "format {FORMAT_VERSION_3} snapshot without retention deadlines, at byte {}: \
                 such an image is encoded as format {FORMAT_VERSION_1} or {FORMAT_VERSION_2}",
                r.offset() - 8
            )));
        }
        retention.reserve_exact(n);
        for i in 0..n {
            let it = Item::Retention(i);
            retention.push(RetentionRecord {
                tenant: r.string(it, "tenant")?,
                group: r.string(it, "group")?,
                deadline: r.u64(At::new(it, "deadline"))?,
            });
        }
    }

    let n = r.count_u64(OBJECT_MIN, At::new(Item::List("object"), "count"))?;
    let mut objects = Vec::with_capacity(n);
    for i in 0..n {
        objects.push(parse_object(&mut r, i)?);
    }
    let (in_flight, tasks, discarded) = if version == FORMAT_VERSION {
        parse_live_state(&mut r)?
    } else {
        Default::default()
    };

    if r.remaining() != 0 {
        let after = if version == FORMAT_VERSION {
            "the last discarded buffer"
        } else {
            "the last object"
        };
        return Err(fail(format!(
            "{} trailing bytes inside the payload after {after}, at byte {}",
            r.remaining(),
            r.offset()
        )));
    }
    Ok(SnapshotImage {
        created_at,
        wall_at_capture,
        journal_seq,
        next_replica_id,
        next_write_token,
        next_object_seq,
        segments,
        groups,
        retention,
        objects,
        in_flight,
        tasks,
        discarded,
    })
}

type LiveState = (Vec<InFlightRecord>, Vec<TaskRecord>, Vec<DiscardedRecord>);

/// The three format-5 lists after the objects; at least one is not empty
/// (an image without any is encoded in an older format).
fn parse_live_state(r: &mut Reader) -> Result<LiveState> {
    let start = r.offset();
    let n = r.count_u64(IN_FLIGHT_MIN, At::new(Item::List("in-flight"), "count"))?;
    let mut in_flight = Vec::with_capacity(n);
    for i in 0..n {
        let it = Item::InFlight(i);
        let tenant = r.string(it, "tenant")?;
        let key = r.string(it, "key")?;
        let pending = match r.byte_upto(1, At::new(it, "pending tag"))? {
            0 => None,
            _ => Some(r.intent(At::new(it, "pending"))?),
        };
        in_flight.push(InFlightRecord {
            tenant,
            key,
            pending,
        });
    }
    let n = r.count_u64(TASK_MIN, At::new(Item::List("task"), "count"))?;
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let it = Item::Task(i);
        let tenant = r.string(it, "tenant")?;
        let key = r.string(it, "key")?;
        let task = match r.byte_upto(2, At::new(it, "task kind"))? {
            0 => {
                let source = r.u64(At::new(it, "source"))?;
                let m = r.count_u32(8, At::new(it, "target count"))?;
                let mut targets = Vec::with_capacity(m);
                for _ in 0..m {
                    targets.push(r.u64(At::new(it, "target"))?);
                }
                TaskImage::Copy { source, targets }
            }
            1 => TaskImage::Move {
                source: r.u64(At::new(it, "source"))?,
                target: r.u64(At::new(it, "target"))?,
            },
            _ => TaskImage::Promotion {
                target: r.u64(At::new(it, "target"))?,
            },
        };
        tasks.push(TaskRecord { tenant, key, task });
    }
    let n = r.count_u64(DISCARDED_MIN, At::new(Item::List("discarded"), "count"))?;
    let mut discarded = Vec::with_capacity(n);
    for i in 0..n {
        let it = Item::Discarded(i);
        discarded.push(DiscardedRecord {
            segment: r.string(it, "segment")?,
            address: r.u64(At::new(it, "address"))?,
            len: r.u64(At::new(it, "len"))?,
            release_at: r.u64(At::new(it, "release_at"))?,
            replica: r.u64(At::new(it, "replica"))?,
        });
    }
    if in_flight.is_empty() && tasks.is_empty() && discarded.is_empty() {
        return Err(fail(format!(
            "format {FORMAT_VERSION} snapshot without writes in flight, tasks or discarded \
             buffers, at byte {start}: such an image is encoded in an older format"
        )));
    }
    Ok((in_flight, tasks, discarded))
}

fn parse_object(r: &mut Reader, i: usize) -> Result<ObjectRecord> {
    let it = Item::Object(i);
    let tenant = r.string(it, "tenant")?;
    let key = r.string(it, "key")?;
    let writer = r.u64(At::new(it, "writer"))?;
    let size = r.u64(At::new(it, "size"))?;
    let put_start = r.u64(At::new(it, "put_start"))?;
    let lease = r.u64(At::new(it, "lease"))?;
    let soft_pin_deadline = match r.byte_upto(1, At::new(it, "soft_pin_deadline tag"))? {
        0 => None,
        _ => Some(r.u64(At::new(it, "soft_pin_deadline"))?),
    };
    let hard_pin = r.byte_upto(1, At::new(it, "hard_pin"))? == 1;
    let group = match r.byte_upto(1, At::new(it, "group tag"))? {
        0 => None,
        _ => Some(r.string(it, "group")?),
    };
    let seq = r.u64(At::new(it, "seq"))?;
    let write_token = r.u64(At::new(it, "write_token"))?;
    let n = r.count_u32(REPLICA_MIN, At::new(it, "replica count"))?;
    let mut replicas = Vec::with_capacity(n);
    for j in 0..n {
        let it = Item::Replica(i, j);
        let id = r.u64(At::new(it, "id"))?;
        let kind = r.byte_upto(2, At::new(it, "kind"))?;
        let status = r.byte_upto(1, At::new(it, "status"))?;
        let location = match r.byte_upto(1, At::new(it, "location tag"))? {
            TAG_BUFFER => LocationRecord::Buffer {
                segment: r.string(it, "segment")?,
                address: r.u64(At::new(it, "address"))?,
                len: r.u64(At::new(it, "len"))?,
            },
            _ => LocationRecord::LocalDisk {
                client: r.u64(At::new(it, "client"))?,
            },
        };
        replicas.push(super::image::ReplicaRecord {
            id,
            kind,
            status,
            location,
        });
    }
    Ok(ObjectRecord {
        tenant,
        key,
        writer,
        size,
        put_start,
        lease,
        soft_pin_deadline,
        hard_pin,
        group,
        seq,
        write_token,
        replicas,
    })
}

/// The record being read, for error messages.
#[derive(Clone, Copy)]
enum Item {
    Counters,
    List(&'static str),
    Segment(usize),
    Group(usize),
    Retention(usize),
    Object(usize),
    Replica(usize, usize),
    InFlight(usize),
    Task(usize),
    Discarded(usize),
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Counters => f.write_str("counters"),
            Item::List(what) => write!(f, "{what} list"),
            Item::Segment(i) => write!(f, "segment {i}"),
            Item::Group(i) => write!(f, "group {i}"),
            Item::Retention(i) => write!(f, "retention {i}"),
            Item::Object(i) => write!(f, "object {i}"),
            Item::Replica(i, j) => write!(f, "object {i} replica {j}"),
            Item::InFlight(i) => write!(f, "write in flight {i}"),
            Item::Task(i) => write!(f, "task {i}"),
            Item::Discarded(i) => write!(f, "discarded buffer {i}"),
        }
    }
}

/// Record and field being read; formatted only when something fails, so the
/// happy path carries two words and no allocation.
#[derive(Clone, Copy)]
struct At {
    item: Item,
    field: &'static str,
    part: &'static str,
}

impl At {
    fn new(item: Item, field: &'static str) -> Self {
        At {
            item,
            field,
            part: "",
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}{})", self.item, self.field, self.part)
    }
}

/// A cursor over the payload that never reads past it and never trusts a
/// count further than the remaining bytes can back.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Position in the file (header included), the number a hex dump shows.
    fn offset(&self) -> usize {
        HEADER_LEN + self.pos
    }

    fn take(&mut self, n: usize, at: At) -> Result<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        if rest.len() < n {
            return Err(fail(format!(
                "truncated in {at} at byte {}: need {n} bytes, {} left",
                self.offset(),
                rest.len()
            )));
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    fn array<const N: usize>(&mut self, at: At) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, at)?);
        Ok(a)
    }

    fn u32(&mut self, at: At) -> Result<u32> {
        self.array(at).map(u32::from_le_bytes)
    }

    fn u64(&mut self, at: At) -> Result<u64> {
        self.array(at).map(u64::from_le_bytes)
    }

    /// A tag, bool or enum byte; anything above `max` has no meaning and
    /// would break canonicity.
    fn byte_upto(&mut self, max: u8, at: At) -> Result<u8> {
        let [b] = self.array(at)?;
        if b > max {
            return Err(fail(format!(
                "bad byte {b} in {at} at byte {} (expected 0..={max})",
                self.offset() - 1
            )));
        }
        Ok(b)
    }

    fn intent(&mut self, at: At) -> Result<SoftPinIntent> {
        Ok(match self.byte_upto(2, at)? {
            0 => SoftPinIntent::Preserve,
            1 => SoftPinIntent::Enable {
                ttl_ms: self.u64(at)?,
            },
            _ => SoftPinIntent::Disable,
        })
    }

    fn count_u64(&mut self, min_size: usize, at: At) -> Result<usize> {
        let n = self.u64(at)?;
        self.check_count(n, 8, min_size, at)
    }

    fn count_u32(&mut self, min_size: usize, at: At) -> Result<usize> {
        let n = self.u32(at)?;
        self.check_count(u64::from(n), 4, min_size, at)
    }

    /// Rejects a count the remaining bytes cannot hold, before anything is
    /// allocated for it (`n × min_size <= remaining`, without overflow).
    fn check_count(&self, n: u64, width: usize, min_size: usize, at: At) -> Result<usize> {
        let left = self.remaining();
        if n > (left / min_size) as u64 {
            return Err(fail(format!(
                "{at} at byte {} claims {n} elements but only {left} bytes follow \
                 (each takes at least {min_size})",
                self.offset() - width
            )));
        }
        Ok(n as usize)
    }

    /// A length-prefixed UTF-8 string; the one copy is into the owned result.
    fn string(&mut self, item: Item, field: &'static str) -> Result<String> {
        let len = self.u32(At {
            item,
            field,
            part: " length",
        })?;
        let start = self.offset();
        let bytes = self.take(
            len as usize,
            At {
                item,
                field,
                part: " bytes",
            },
        )?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(e) => Err(fail(format!(
                "{} at byte {start} is not UTF-8: {e}",
                At::new(item, field)
            ))),
        }
    }
}

// -------------------------------------------------------------- validation

pub use super::validate::validate;
