//! The bounded journal buffer: records get consecutive sequence numbers as
//! they are appended, a consumer reads them from any held sequence as one
//! batch into its own buffer and releases what it has stored. The journal
//! holds at most `capacity` bytes — each record's encoded bytes plus the
//! [`RECORD_OVERHEAD`] that keeps track of it, so the bound is on memory,
//! not only on what a read copies — and when an append would pass that, the
//! oldest unreleased records are dropped and counted, and
//! reading a dropped sequence is `JOURNAL_OVERRUN` (the consumer resyncs
//! from a snapshot). Appending never fails for lack of room, so the primary
//! keeps serving whatever the consumer does.
//!
//! # Locking
//!
//! One lock guards the buffer: a spin lock released by a plain store
//! (`memory::SpinLock`), which saves each append the locked instruction a
//! `parking_lot` mutex spends to let go (bench/README.md). It is held for an
//! append or a reader's locating: a few hundred instructions, more when an
//! append starts a chunk (a spare one written over, or a new one allocated)
//! or writes a record of many kilobytes.
//! In the master's lock order (the header of `master.rs`) it comes
//! **last**, at the level of the deadline-index mutexes, and is never held
//! together with one of them: appends happen
//! while the appending operation holds its shard lock(s) — so the sequence
//! order is the commit order of changes to the same object — and nothing
//! is acquired while it is held. The recorder measures a record first and
//! writes it under the lock straight into the space the journal keeps
//! for it (`Journal::append_with`): no copy, no intermediate buffer. A
//! reader holds the lock only to find where its records lie and to take
//! a reference to their chunks; it copies them into its buffer after
//! letting go, while appends go on: a chunk's written bytes never change
//! (`memory::FillBuf`), and a chunk a reader still holds is never written
//! over (freed or dropped, it is not reused until the reader lets go).
//!
//! A second, small lock, the timeline lock (a mutex around the skew the
//! journal last recorded), serialises the records of the primary's clock
//! (a [`Record::Timeline`] and a restore's Reset): it is taken before the
//! ring's lock, never while it is held, and never with a deadline-index
//! mutex; no append of any other record takes it.
//!
//! # Memory
//!
//! The bytes live in chunks of [`CHUNK_BYTES`] (a record never spans two;
//! a record longer than a chunk gets one of its own length). A chunk whose
//! records are all released or dropped is freed, the most recent
//! [`SPARE_CHUNKS`] of them kept for the next appends: a consumer that
//! keeps up keeps the journal's memory to a few chunks that the primary
//! keeps writing over while they are still in its cache, instead of a
//! queue that sweeps fresh memory. A reused chunk is written over whole
//! when it is taken (`warm`), so its lines come back writable in one
//! streamed pass rather than one at a time under the lock. The chunks
//! take at most twice the bytes held plus six chunks (a chunk is left
//! with room only for a record that did not fit in it, which is held and
//! charged at least that room; the oldest chunk's released front, the
//! newest one's unused end and the spares) — docs/CONTRACT.md §12.1.

use super::codec::{self, HEADER_LEN};
use super::record::Record;
use crate::error::{Error, ErrorKind, Result};
use crate::memory::SpinLock;
use crate::memory::{FillBuf, FillWriter};
use crate::ops::Bounded;
use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ops::RangeInclusive;
use std::sync::Arc;

/// The most records one read returns (a batch counts them in a u32).
const MAX_BATCH_RECORDS: usize = u32::MAX as usize;

/// Size of the chunks the held bytes are stored in.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Bytes past a record's end whose lines each append starts loading for
/// the records after it (a put pair's two records are ~175 bytes).
const PREFETCH_AHEAD: usize = 256;

/// Freed chunks kept for reuse (memory beyond the held records: at most
/// this many chunks).
pub const SPARE_CHUNKS: usize = 4;

/// Bytes charged per held record on top of its encoding: its bookkeeping
/// (where it starts in the journal's byte queue, 8 bytes) with room for
/// the queues' slack. Fixed, so the bound does not depend on the layout.
pub const RECORD_OVERHEAD: usize = 16;

/// What holding an encoded record of `len` bytes costs against the capacity.
#[inline]
pub fn charge(len: usize) -> usize {
    len.saturating_add(RECORD_OVERHEAD)
}

/// Held bytes from stream position `pos`: the bytes `buf` has filled.
struct Chunk {
    buf: FillWriter,
    pos: u64,
}

impl Chunk {
    /// Stream position after its last byte.
    fn end(&self) -> u64 {
        self.pos + self.buf.filled() as u64
    }
}

/// Where located bytes lie: `len` bytes of `chunk` from offset `from`. The
/// reference keeps the chunk from being freed or reused while a read
/// copies from it without the lock.
struct Piece {
    chunk: Arc<FillBuf>,
    from: usize,
    len: usize,
}

/// Where a read writes its batch: a caller's bytes, either initialized
/// (`[u8]`, [`Journal::read`]) or not (`[MaybeUninit<u8>]`, a C caller's
/// `malloc`ed buffer, of which no `[u8]` slice may be made:
/// [`Journal::read_uninit`]). A read only writes into it and never reads
/// it back.
trait ReadBuf {
    /// Bytes it holds.
    fn capacity(&self) -> usize;
    /// Writes `bytes` at `at`; the read keeps `at + bytes.len()` within
    /// [`capacity`](Self::capacity).
    fn put(&mut self, at: usize, bytes: &[u8]);
}

impl ReadBuf for [u8] {
    fn capacity(&self) -> usize {
        self.len()
    }

    fn put(&mut self, at: usize, bytes: &[u8]) {
        self[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

impl ReadBuf for [MaybeUninit<u8>] {
    fn capacity(&self) -> usize {
        self.len()
    }

    fn put(&mut self, at: usize, bytes: &[u8]) {
        // (`write_copy_of_slice` needs Rust 1.93; this loop compiles to a
        // copy as well.)
        for (slot, b) in self[at..at + bytes.len()].iter_mut().zip(bytes) {
            slot.write(*b);
        }
    }
}

/// A bounded, thread-safe change journal.
pub struct Journal {
    capacity: usize,
    ring: Padded,
    /// The timeline lock: the skew (`timeline − wall`, ms) the records
    /// appended so far leave a consumer on — the last
    /// [`Record::Timeline`]'s, or the last Reset image's, 0 at the start
    /// (a master's skew when it is created). Held across the reading of
    /// the skew, the decision and the append of a Timeline or Reset record
    /// (`capture.rs`), so no older skew is recorded after a newer one. In
    /// the lock order it comes just before the ring's lock: it is taken
    /// with no lock held (a maintenance tick, a wall set) or under a
    /// restore's locks (every shard, the registry, the segment table), and
    /// only the ring's lock is taken while it is held.
    timeline: parking_lot::Mutex<i64>,
}

/// The ring's lock and state on cache lines of their own: a consumer
/// reading and releasing writes them, and nothing the master's operations
/// use (the segment table's lock, the id counters) may share a line with
/// them.
#[repr(align(128))]
struct Padded(SpinLock<Ring>);

impl std::ops::Deref for Padded {
    type Target = SpinLock<Ring>;
    fn deref(&self) -> &SpinLock<Ring> {
        &self.0
    }
}

/// The journal's counters at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JournalStats {
    /// Most bytes held at once.
    pub capacity_bytes: usize,
    /// Bytes held now, never above the capacity: the held records' encoded
    /// bytes plus [`RECORD_OVERHEAD`] each.
    pub bytes_held: usize,
    /// Records held now (`last_seq + 1 - first_seq`).
    pub records_held: u64,
    /// Sequence of the oldest record held; `last_seq + 1` when none is.
    pub first_seq: u64,
    /// Sequence of the newest record appended; `first - 1` (0 for a new
    /// journal) before any.
    pub last_seq: u64,
    /// Highest sequence the consumer released (0: none).
    pub released_upto: u64,
    /// Highest sequence dropped unreleased (0: none).
    pub dropped_upto: u64,
    /// Records dropped unreleased so far (the journal full, a record larger
    /// than the capacity, a numbering moved by `continue_at`).
    pub dropped_records: u64,
    /// Records appended since the journal was created, dropped ones
    /// included.
    pub records_appended: u64,
}

/// What a read wrote into the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalRead {
    /// Records in the batch written (0: nothing after `from` yet, nothing
    /// written).
    pub records: u64,
    /// Bytes written at the start of the buffer (one batch; 0 with no
    /// records).
    pub bytes: usize,
    /// The sequence to read from next (`from + records`).
    pub next_seq: u64,
}

/// The held records live back to back in a queue of chunks, so appending
/// writes into memory the journal already holds (no allocation per
/// record, and a consumer that keeps up keeps it small and cache-hot).
struct Ring {
    /// Encoded records `first..next`, back to back, oldest first: chunk
    /// `i + 1` starts at the stream position where chunk `i` ends, the
    /// first chunk at or before `data_pos`, the last one ends at
    /// `end_pos` (no chunk when nothing is held).
    chunks: VecDeque<Chunk>,
    /// Freed chunks of [`CHUNK_BYTES`], most recently freed last (a reader
    /// may still be copying from one: it is reused only once it is not).
    spare: Vec<FillWriter>,
    /// Where each held record starts, as a position in the stream of every
    /// byte ever appended (record `first + i` starts at `starts[i]`).
    starts: VecDeque<u64>,
    /// Stream position of the oldest held byte.
    data_pos: u64,
    /// Stream position after the last byte appended.
    end_pos: u64,
    /// The sequence the journal's current numbering started at (its first,
    /// or the last [`Journal::continue_at`]'s).
    start: u64,
    /// Records appended under earlier numberings (before the last
    /// `continue_at`): `records_appended` is this plus `next - start`, so
    /// it never goes back when the numbering does.
    appended_before: u64,
    first: u64,
    next: u64,
    bytes: usize,
    released_upto: u64,
    dropped_upto: u64,
    dropped: u64,
}

impl Journal {
    /// A journal holding at most `capacity_bytes` bytes (records and their
    /// bookkeeping, [`charge`]), whose first record gets sequence 1. `INVALID_PARAMS` for 0 (a master
    /// with `journal_capacity_bytes == 0` keeps no journal).
    pub fn new(capacity_bytes: usize) -> Result<Journal> {
        Journal::starting_at(capacity_bytes, 1)
    }

    /// As [`new`](Self::new), the first record getting sequence `next_seq`
    /// (a master restored from a snapshot that included records up to
    /// `next_seq - 1` goes on from there). `INVALID_PARAMS` for sequence 0.
    pub fn starting_at(capacity_bytes: usize, next_seq: u64) -> Result<Journal> {
        if capacity_bytes == 0 {
            return Err(Error::invalid(
                "journal capacity 0: a master with journal_capacity_bytes 0 keeps no journal",
            ));
        }
        if next_seq == 0 {
            return Err(Error::invalid("journal sequence numbers start at 1"));
        }
        Ok(Journal {
            capacity: capacity_bytes,
            timeline: parking_lot::Mutex::new(0),
            ring: Padded(SpinLock::new(Ring {
                chunks: VecDeque::new(),
                spare: Vec::new(),
                starts: VecDeque::new(),
                data_pos: 0,
                end_pos: 0,
                start: next_seq,
                appended_before: 0,
                first: next_seq,
                next: next_seq,
                bytes: 0,
                released_upto: next_seq - 1,
                dropped_upto: 0,
                dropped: 0,
            })),
        })
    }

    pub fn capacity_bytes(&self) -> usize {
        self.capacity
    }

    /// Appends one record and returns its sequence. When the journal cannot
    /// hold it beside the records it has, the oldest are dropped (counted
    /// in [`JournalStats::dropped_records`]) until it can; a record larger
    /// than the whole capacity is dropped too, with everything before it.
    /// Fails only when the sequence space is exhausted (`INTERNAL_ERROR`,
    /// after sequence [`MAX_SEQ`](codec::MAX_SEQ)).
    pub fn append(&self, rec: &Record) -> Result<u64> {
        let mut bytes = Vec::new();
        codec::encode_record(rec, &mut bytes);
        self.append_encoded(&bytes)
    }

    /// [`append`](Self::append) of a record already encoded (exactly what
    /// [`codec::encode_record`] writes for it).
    pub(crate) fn append_encoded(&self, bytes: &[u8]) -> Result<u64> {
        self.append_with(bytes.len(), |out| out.copy_from_slice(bytes))
    }

    /// [`append`](Self::append) of a record of `len` bytes that `write`
    /// writes (exactly what [`codec::encode_record`] writes for it) into
    /// the slice of `len` bytes it is given, the journal's own memory: the
    /// recorder encodes from the master's state straight into the journal,
    /// without building the [`Record`] or a copy of its bytes. `write` runs
    /// under the journal's lock (it must take no lock) and not at all
    /// when the record is dropped on arrival (longer than the capacity).
    pub(crate) fn append_with(&self, len: usize, write: impl FnOnce(&mut [u8])) -> Result<u64> {
        let mut ring = self.ring.lock();
        ring.push_with(len, self.capacity, write)
    }

    /// Appends `recs` as consecutive sequences in one hold of the lock (the
    /// records of one operation, e.g. every member of an evicted group, are
    /// never interleaved with another operation's). Returns their sequences
    /// (`None` for an empty slice). Dropping works as for [`append`](Self::append).
    pub fn append_all(&self, recs: &[Record]) -> Result<Option<RangeInclusive<u64>>> {
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(recs.len());
        for r in recs {
            codec::encode_record(r, &mut bytes);
            ends.push(bytes.len());
        }
        let mut ring = self.ring.lock();
        // All or nothing: a run that cannot be numbered whole is refused
        // before any of it is appended.
        if !recs.is_empty() && codec::MAX_SEQ - (recs.len() as u64 - 1) < ring.next {
            return Err(exhausted());
        }
        let mut span = None;
        let mut from = 0;
        for end in ends {
            let e = &bytes[from..end];
            let seq = ring.push_with(e.len(), self.capacity, |out| out.copy_from_slice(e))?;
            from = end;
            span = Some(span.map_or(seq..=seq, |s: RangeInclusive<u64>| *s.start()..=seq));
        }
        Ok(span)
    }

    /// Writes the records from sequence `from` into `out` as one batch (the
    /// codec's format) and says how many went in:
    ///
    /// - every held record from `from` on, if they fit; otherwise the
    ///   longest run of them that fits (read again from `next_seq`);
    /// - `TooSmall(n)` when not even the first fits: `n` bytes hold every
    ///   record held from `from` (BUFFER_TOO_SMALL; nothing written);
    /// - nothing (0 records) when `from` is the next sequence to be
    ///   appended.
    ///
    /// `JOURNAL_OVERRUN` when `from` is below the oldest record held (it was
    /// dropped, or released), `INVALID_PARAMS` for 0 or a sequence beyond
    /// the next one. The buffer is untouched on every error.
    pub fn read(&self, from: u64, out: &mut [u8]) -> Result<Bounded<JournalRead>> {
        self.read_into(from, out)
    }

    /// [`read`](Self::read) into a buffer that may be uninitialized (a C
    /// caller's `malloc`ed one): the batch's bytes are written, and nothing
    /// is read from it.
    pub fn read_uninit(
        &self,
        from: u64,
        out: &mut [MaybeUninit<u8>],
    ) -> Result<Bounded<JournalRead>> {
        self.read_into(from, out)
    }

    /// What [`read`](Self::read) and [`read_uninit`](Self::read_uninit) do.
    fn read_into<B: ReadBuf + ?Sized>(
        &self,
        from: u64,
        out: &mut B,
    ) -> Result<Bounded<JournalRead>> {
        let mut pieces = Vec::new();
        let read = self.locate(from, out.capacity(), &mut pieces)?;
        let Bounded::Fits(r) = read else {
            return Ok(read);
        };
        if r.records > 0 {
            // Read without the lock: the chunks' bytes below what they had
            // filled when located never change, and the references in
            // `pieces` keep every chunk from being freed or reused. A
            // piece not in its chunk (none can be: a chunk's filled bytes
            // only grow) fails the read before anything is written, rather
            // than sealing a batch around bytes that are not the records.
            let bytes = pieces
                .iter()
                .map(|p| p.chunk.filled_bytes(p.from, p.len))
                .collect::<Option<Vec<&[u8]>>>()
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Internal,
                        "journal read: a located record was not in its chunk",
                    )
                })?;
            let mut sealer =
                codec::Sealer::new(from, r.records as u32, (r.bytes - HEADER_LEN) as u64);
            let mut at = HEADER_LEN;
            for b in bytes {
                out.put(at, b);
                sealer.payload(b);
                at += b.len();
            }
            out.put(0, &sealer.header());
        }
        Ok(read)
    }

    /// Under the lock: what [`read`](Self::read) from `from` into a buffer
    /// of `room` bytes returns, and for a batch with records, the pieces of
    /// chunks that hold them, in order.
    fn locate(
        &self,
        from: u64,
        room: usize,
        pieces: &mut Vec<Piece>,
    ) -> Result<Bounded<JournalRead>> {
        let ring = self.ring.lock();
        let start = ring.index_of(from)?;
        let held = ring.starts.len();
        if start == held {
            return Ok(Bounded::Fits(JournalRead {
                records: 0,
                bytes: 0,
                next_seq: from,
            }));
        }
        let avail = (held - start).min(MAX_BATCH_RECORDS);
        let room = room.saturating_sub(HEADER_LEN);
        let begin = ring.starts[start];
        // The longest run from `start` that fits: the records' ends are
        // increasing, so a binary search over them finds it.
        let ends = |i: usize| ring.end_of(start + i) - begin;
        let count = partition_point(avail, |i| ends(i) <= room as u64);
        if count == 0 {
            let needed = (HEADER_LEN as u64).saturating_add(ends(avail - 1));
            return Ok(Bounded::TooSmall(
                usize::try_from(needed).unwrap_or(usize::MAX),
            ));
        }
        // Fits in the buffer, so in usize.
        let len = ends(count - 1) as usize;
        ring.pieces(begin, len, pieces);
        Ok(Bounded::Fits(JournalRead {
            records: count as u64,
            bytes: HEADER_LEN + len,
            next_seq: from + count as u64,
        }))
    }

    /// Reads every held record from `from` into a new buffer (one batch;
    /// empty when there is nothing after `from`). Errors as [`read`](Self::read).
    pub fn read_to_vec(&self, from: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        loop {
            match self.read(from, &mut buf)? {
                Bounded::Fits(r) => {
                    buf.truncate(r.bytes);
                    return Ok(buf);
                }
                // Appends between two reads may need a larger buffer again;
                // each retry is sized to what is held at that moment.
                Bounded::TooSmall(n) => buf.resize(n, 0),
            }
        }
    }

    /// The consumer has stored every record up to `upto`: they are freed.
    /// Releasing what is already released (or dropped) is a no-op;
    /// `INVALID_PARAMS` for a sequence not appended yet. Returns the records
    /// freed.
    pub fn release(&self, upto: u64) -> Result<u64> {
        let mut ring = self.ring.lock();
        if upto >= ring.next {
            return Err(Error::invalid(format!(
                "cannot release up to sequence {upto}: the last record appended is {}",
                ring.next - 1
            )));
        }
        if upto <= ring.released_upto {
            return Ok(0);
        }
        ring.released_upto = upto;
        // Held records up to `upto` (none when they were dropped already).
        let freed = (upto + 1).saturating_sub(ring.first);
        // At most the held count, which is a usize.
        ring.remove_front(freed as usize);
        Ok(freed)
    }

    /// Makes `next_seq` the sequence of the next record appended: a
    /// standby that journals what it applies keeps its primary's numbering
    /// this way across a restore or a start mid-stream. A no-op when it
    /// already is; otherwise every record held is dropped (counted in
    /// [`JournalStats::dropped_records`]), so a consumer reading one of them
    /// gets `JOURNAL_OVERRUN` and resyncs from a snapshot, never a record
    /// under a number it means something else by. `INVALID_PARAMS` for 0.
    pub fn continue_at(&self, next_seq: u64) -> Result<()> {
        if next_seq == 0 || next_seq > codec::MAX_SEQ {
            return Err(Error::invalid(format!(
                "journal sequence {next_seq} is outside 1..={}",
                codec::MAX_SEQ
            )));
        }
        let mut ring = self.ring.lock();
        if ring.next == next_seq {
            return Ok(());
        }
        let appended = ring.next - ring.start;
        ring.appended_before = ring.appended_before.saturating_add(appended);
        let held = ring.starts.len() as u64;
        while let Some(c) = ring.chunks.pop_front() {
            ring.recycle(c.buf);
        }
        ring.starts.clear();
        ring.data_pos = ring.end_pos;
        ring.bytes = 0;
        ring.dropped += held;
        ring.start = next_seq;
        ring.first = next_seq;
        ring.next = next_seq;
        ring.released_upto = ring.released_upto.min(next_seq - 1);
        ring.dropped_upto = next_seq - 1;
        Ok(())
    }

    /// Sequence of the newest record appended (0 for a new journal
    /// starting at 1).
    pub fn last_seq(&self) -> u64 {
        self.ring.lock().next - 1
    }

    /// The timeline lock and the skew the records appended so far leave a
    /// consumer on (see the field): the recorder holds it across reading
    /// the skew, deciding and appending (`capture.rs`).
    pub(crate) fn timeline(&self) -> parking_lot::MutexGuard<'_, i64> {
        self.timeline.lock()
    }

    pub fn stats(&self) -> JournalStats {
        let ring = self.ring.lock();
        JournalStats {
            capacity_bytes: self.capacity,
            bytes_held: ring.bytes,
            records_held: ring.next - ring.first,
            first_seq: ring.first,
            last_seq: ring.next - 1,
            released_upto: ring.released_upto,
            dropped_upto: ring.dropped_upto,
            dropped_records: ring.dropped,
            records_appended: ring.appended_before.saturating_add(ring.next - ring.start),
        }
    }
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Journal").field(&self.stats()).finish()
    }
}

fn exhausted() -> Error {
    Error::new(
        ErrorKind::Internal,
        "journal sequence space exhausted: no record can follow the last sequence (u64::MAX - 1)",
    )
}

/// The number of leading `i` in `0..n` for which `pred(i)` holds, `pred`
/// being true then false along `0..n`.
fn partition_point(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl Ring {
    /// Stream position where held record `i` (0 = the oldest) ends.
    fn end_of(&self, i: usize) -> u64 {
        self.starts.get(i + 1).copied().unwrap_or(self.end_pos)
    }

    /// Encoded length of held record `i`.
    fn len_of(&self, i: usize) -> usize {
        (self.end_of(i) - self.starts[i]) as usize
    }

    /// The chunks holding the `len` held bytes from stream position `at`,
    /// in order, into `pieces`.
    fn pieces(&self, at: u64, len: usize, pieces: &mut Vec<Piece>) {
        // The first chunk that ends after `at` holds it.
        let mut i = self.chunks.partition_point(|c| c.end() <= at);
        let mut at = at;
        let mut done = 0;
        while done < len {
            let c = &self.chunks[i];
            // `at` is in this chunk, which ends after it: in usize.
            let from = (at - c.pos) as usize;
            let n = (c.buf.filled() - from).min(len - done);
            pieces.push(Piece {
                chunk: c.buf.shared(),
                from,
                len: n,
            });
            done += n;
            at += n as u64;
            i += 1;
        }
    }

    /// Keeps a freed chunk for reuse, or frees it (its memory goes when
    /// the last reader copying from it lets go).
    fn recycle(&mut self, buf: FillWriter) {
        if buf.len() == CHUNK_BYTES && self.spare.len() < SPARE_CHUNKS {
            self.spare.push(buf);
        }
    }

    /// The chunk at the end of the held bytes with room for a record of
    /// `len` bytes (a new one when the last one has none).
    #[inline]
    fn tail(&mut self, len: usize) -> &mut Chunk {
        if self.chunks.back().is_none_or(|c| c.buf.room() < len) {
            self.start_chunk(len);
        }
        self.chunks.back_mut().expect("a chunk with room")
    }

    /// Appends a chunk with room for a record of `len` bytes: a spare one
    /// or a new one (about once every few hundred records).
    #[cold]
    #[inline(never)]
    fn start_chunk(&mut self, len: usize) {
        let buf = if len <= CHUNK_BYTES {
            self.reusable_spare()
                .unwrap_or_else(|| FillWriter::new(CHUNK_BYTES))
        } else {
            FillWriter::new(len)
        };
        self.chunks.push_back(Chunk {
            buf,
            pos: self.end_pos,
        });
    }

    /// The most recently freed spare chunk no reader holds, emptied and
    /// written over (`FillWriter::reset`: its lines, last read by the
    /// consumer on another core or evicted since, come back writable in
    /// one streamed pass instead of one at a time as records are written
    /// into them). Spares a reader still holds are freed.
    fn reusable_spare(&mut self) -> Option<FillWriter> {
        while let Some(mut buf) = self.spare.pop() {
            if buf.reset() {
                return Some(buf);
            }
        }
        None
    }

    /// Removes the `n` oldest held records (freeing their bytes).
    fn remove_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let cut = self.end_of(n - 1);
        let len = (cut - self.data_pos) as usize;
        while self.chunks.front().is_some_and(|c| c.end() <= cut) {
            let c = self.chunks.pop_front().expect("a front chunk");
            self.recycle(c.buf);
        }
        self.starts.drain(..n);
        self.data_pos = cut;
        self.bytes -= len + n * RECORD_OVERHEAD;
        self.first += n as u64;
    }

    /// Stores the record of `len` bytes that `write` writes as sequence
    /// `next`, dropping the oldest records to make room (or everything,
    /// the record included, when it alone is over capacity: `write` is
    /// then not called). Nothing is counted before `write` returns, so a
    /// `write` that panicked would leave no record and no gap.
    fn push_with(
        &mut self,
        len: usize,
        capacity: usize,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<u64> {
        let seq = self.next;
        if seq > codec::MAX_SEQ {
            return Err(exhausted());
        }
        let after = seq + 1;
        let cost = charge(len);
        if cost > capacity {
            self.drop_oldest(self.starts.len());
            // The record itself is lost: nothing before or at it is held.
            self.next = after;
            self.first = after;
            self.dropped_upto = seq;
            self.dropped += 1;
            return Ok(seq);
        }
        let mut n = 0;
        let mut room = capacity - self.bytes;
        while room < cost {
            room += charge(self.len_of(n));
            n += 1;
        }
        self.drop_oldest(n);
        let c = self.tail(len);
        let filled = c.buf.fill_with(len, |out| {
            write(out);
            debug_assert!(codec::decode_record(out).is_ok(), "not a record");
        });
        if !filled {
            // `tail` gave a chunk with room, so this is never taken; were
            // it, nothing is counted for a record with no bytes.
            return Err(Error::new(
                ErrorKind::Internal,
                "journal append: the tail chunk had no room for the record",
            ));
        }
        // The next records' lines start loading now, and arrive while the
        // operation goes on: their stores then retire at once instead of
        // holding up the next locked instruction.
        c.buf.prefetch_next(PREFETCH_AHEAD);
        self.next = after;
        self.bytes += cost;
        self.starts.push_back(self.end_pos);
        self.end_pos += len as u64;
        Ok(seq)
    }

    /// Drops the `n` oldest records (unreleased: released ones are freed
    /// at release).
    fn drop_oldest(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.remove_front(n);
        self.dropped += n as u64;
        self.dropped_upto = self.first - 1;
    }

    /// Position of sequence `from` among the held records (their count for the
    /// next sequence), or why it cannot be read.
    fn index_of(&self, from: u64) -> Result<usize> {
        if from == 0 {
            return Err(Error::invalid("journal sequence numbers start at 1"));
        }
        if from > self.next {
            return Err(Error::invalid(format!(
                "cannot read from sequence {from}: the last record appended is {}",
                self.next - 1
            )));
        }
        if from < self.first {
            let why = if from <= self.dropped_upto && from > self.released_upto {
                format!(
                    "it was dropped unreleased (the journal was full, or the standby's \
                     numbering moved; {} records dropped so far, the last of them {})",
                    self.dropped, self.dropped_upto
                )
            } else {
                format!("it was released (released up to {})", self.released_upto)
            };
            return Err(Error::new(
                ErrorKind::JournalOverrun,
                format!(
                    "sequence {from} is no longer held ({why}); the oldest record held is {}: \
                     resync from a snapshot",
                    self.first
                ),
            ));
        }
        Ok((from - self.first) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes the journal's chunks take, spare ones included.
    fn resident(j: &Journal) -> usize {
        let ring = j.ring.lock();
        ring.chunks.iter().map(|c| c.buf.len()).sum::<usize>()
            + ring.spare.iter().map(|b| b.len()).sum::<usize>()
    }

    fn record_of(len: usize) -> Vec<u8> {
        // An ObjectErased of a key `len - 20` bytes long: tag, tenant
        // "default" (4 + 7), key (4 + n), no discarded buffers (4).
        let key = "k".repeat(len - 20);
        let mut v = Vec::new();
        codec::encode_record(
            &Record::ObjectErased {
                key: crate::journal::RecordKey::new("default", &key),
                discarded: vec![],
            },
            &mut v,
        );
        assert_eq!(v.len(), len);
        v
    }

    // A read into a buffer that may be uninitialized reads what a read into
    // initialized bytes does, across chunks, and refuses a buffer too small
    // the same way. (Its bytes are compared where reading them back needs
    // no unsafe code: c_tests/test_journal.c reads into `malloc`ed buffers,
    // under valgrind too, and applies what it read on a standby.)
    #[test]
    fn a_read_into_uninitialized_memory_reads_the_same_batch() {
        let j = Journal::new(16 * CHUNK_BYTES).unwrap();
        let rec = record_of(1000);
        for _ in 0..200 {
            j.append_encoded(&rec).unwrap();
        }
        let expected = j.read_to_vec(3).unwrap();
        assert!(expected.len() > 2 * CHUNK_BYTES, "the batch spans chunks");
        let mut out = vec![MaybeUninit::<u8>::uninit(); expected.len() + 7];
        let Bounded::Fits(r) = j.read_uninit(3, &mut out).unwrap() else {
            panic!("the buffer holds the batch");
        };
        assert_eq!((r.records, r.bytes, r.next_seq), (198, expected.len(), 201));
        let mut small = vec![MaybeUninit::<u8>::uninit(); HEADER_LEN + 10];
        assert!(matches!(
            j.read_uninit(3, &mut small).unwrap(),
            Bounded::TooSmall(n) if n == expected.len()
        ));
        assert!(j.read_uninit(0, &mut small).is_err());
    }

    // docs/CONTRACT.md §12.1 "The buffer": the memory holding the records
    // is at most twice the bytes held plus six chunks, whatever mix of
    // record sizes is appended (the worst case alternates records that
    // leave a chunk nearly empty with ones that do not fit in it), and it
    // is freed as records are released: a released journal keeps only its
    // spare chunks.
    #[test]
    fn the_memory_is_bounded_by_the_bytes_held_and_freed_on_release() {
        let j = Journal::new(16 * CHUNK_BYTES).unwrap();
        let small = record_of(100);
        let large = record_of(CHUNK_BYTES - 50);
        let huge = record_of(CHUNK_BYTES + 1_000);
        let mut i = 0u64;
        for round in 0..400 {
            let e = match round % 4 {
                0 | 2 => &small,
                1 => &large,
                _ => &huge,
            };
            j.append_encoded(e).unwrap();
            i += 1;
            let held = j.stats().bytes_held;
            assert!(
                resident(&j) <= 2 * held + 6 * CHUNK_BYTES,
                "{} bytes resident for {held} held",
                resident(&j)
            );
            if round % 50 == 49 {
                j.release(i - 3).unwrap();
            }
        }
        assert!(j.stats().dropped_records > 0, "the capacity was reached");
        j.release(i).unwrap();
        assert_eq!(j.stats().bytes_held, 0);
        assert!(resident(&j) <= SPARE_CHUNKS * CHUNK_BYTES);
        // Appends after a full release reuse a spare chunk.
        j.append_encoded(&small).unwrap();
        assert!(resident(&j) <= SPARE_CHUNKS * CHUNK_BYTES);
        assert_eq!(
            decode_batch_records(&j.read_to_vec(i + 1).unwrap()),
            vec![codec::decode_record(&small).unwrap()]
        );
    }

    // A read copies its records after letting go of the lock: the chunks
    // it located keep their bytes whatever is appended, released or
    // dropped meanwhile (a freed chunk a reader holds is not reused).
    #[test]
    fn located_records_keep_their_bytes_while_the_journal_moves_on() {
        let j = Journal::new(4 * CHUNK_BYTES).unwrap();
        let a = record_of(1_000);
        let b = record_of(2_000);
        let per_chunk = CHUNK_BYTES / a.len();
        for _ in 0..per_chunk {
            j.append_encoded(&a).unwrap();
        }
        let mut pieces = Vec::new();
        let Bounded::Fits(r) = j.locate(1, 1 << 20, &mut pieces).unwrap() else {
            panic!("fits")
        };
        assert_eq!(r.records, per_chunk as u64);
        // Everything located is released, then the journal fills its
        // spares and more with other bytes, and drops what it must.
        j.release(per_chunk as u64).unwrap();
        for _ in 0..6 * per_chunk {
            j.append_encoded(&b).unwrap();
        }
        assert!(j.stats().dropped_records > 0);
        let mut out = vec![0u8; r.bytes - HEADER_LEN];
        let mut at = 0;
        for Piece { chunk, from, len } in &pieces {
            out[at..at + len].copy_from_slice(chunk.filled_bytes(*from, *len).unwrap());
            at += len;
        }
        assert_eq!(at, out.len());
        assert!(out.chunks(a.len()).all(|rec| rec == &a[..]));
    }

    fn decode_batch_records(b: &[u8]) -> Vec<Record> {
        codec::decode_batch(b).unwrap().records
    }
}
