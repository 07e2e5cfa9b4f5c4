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
//! One mutex guards the buffer. In the master's lock order (the header of
//! `master.rs`) it comes **last**, at the level of the deadline-index
//! mutexes, and is never held together with one of them: appends happen
//! while the appending operation holds its shard lock(s) — so the sequence
//! order is the commit order of changes to the same object — and nothing
//! is acquired while it is held. A record is encoded before the
//! mutex is taken, so a hold costs a copy of the record's bytes (plus, for
//! a reader, the copy into its buffer).

use super::codec::{self, HEADER_LEN};
use super::record::Record;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::Bounded;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::ops::RangeInclusive;

/// The most records one read returns (a batch counts them in a u32).
const MAX_BATCH_RECORDS: usize = u32::MAX as usize;

/// Bytes charged per held record on top of its encoding: its slot in the
/// journal's queue (a pointer and a length).
pub const RECORD_OVERHEAD: usize = std::mem::size_of::<Box<[u8]>>();

/// What holding an encoded record of `len` bytes costs against the capacity.
#[inline]
pub fn charge(len: usize) -> usize {
    len.saturating_add(RECORD_OVERHEAD)
}

/// A bounded, thread-safe change journal.
pub struct Journal {
    capacity: usize,
    ring: Mutex<Ring>,
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
    /// Records dropped unreleased so far.
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

struct Ring {
    /// Encoded records `first..next`, oldest first.
    entries: VecDeque<Box<[u8]>>,
    /// The sequence the journal started at.
    start: u64,
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
            ring: Mutex::new(Ring {
                entries: VecDeque::new(),
                start: next_seq,
                first: next_seq,
                next: next_seq,
                bytes: 0,
                released_upto: next_seq - 1,
                dropped_upto: 0,
                dropped: 0,
            }),
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
        let mut ring = self.ring.lock();
        ring.push(bytes.into_boxed_slice(), self.capacity)
    }

    /// Appends `recs` as consecutive sequences in one hold of the lock (the
    /// records of one operation, e.g. every member of an evicted group, are
    /// never interleaved with another operation's). Returns their sequences
    /// (`None` for an empty slice). Dropping works as for [`append`](Self::append).
    pub fn append_all(&self, recs: &[Record]) -> Result<Option<RangeInclusive<u64>>> {
        let encoded: Vec<Box<[u8]>> = recs
            .iter()
            .map(|r| {
                let mut v = Vec::new();
                codec::encode_record(r, &mut v);
                v.into_boxed_slice()
            })
            .collect();
        let mut ring = self.ring.lock();
        // All or nothing: a run that cannot be numbered whole is refused
        // before any of it is appended.
        if !encoded.is_empty() && codec::MAX_SEQ - (encoded.len() as u64 - 1) < ring.next {
            return Err(exhausted());
        }
        let mut span = None;
        for e in encoded {
            let seq = ring.push(e, self.capacity)?;
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
        let ring = self.ring.lock();
        let start = ring.index_of(from)?;
        if start == ring.entries.len() {
            return Ok(Bounded::Fits(JournalRead {
                records: 0,
                bytes: 0,
                next_seq: from,
            }));
        }
        let avail = ring.entries.range(start..).take(MAX_BATCH_RECORDS);
        let mut used = HEADER_LEN;
        let mut count = 0usize;
        for e in avail.clone() {
            if out.len().saturating_sub(used) < e.len() {
                break;
            }
            used += e.len();
            count += 1;
        }
        if count == 0 {
            let needed = avail.fold(HEADER_LEN, |n, e| n.saturating_add(e.len()));
            return Ok(Bounded::TooSmall(needed));
        }
        let mut at = HEADER_LEN;
        for e in ring.entries.range(start..start + count) {
            out[at..at + e.len()].copy_from_slice(e);
            at += e.len();
        }
        codec::seal(&mut out[..used], from, count as u32);
        Ok(Bounded::Fits(JournalRead {
            records: count as u64,
            bytes: used,
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
        let mut freed = 0;
        while ring.first <= upto {
            let e = ring
                .entries
                .pop_front()
                .expect("first < next: a record is held");
            ring.bytes -= charge(e.len());
            ring.first += 1;
            freed += 1;
        }
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
        let held = ring.entries.len() as u64;
        ring.entries.clear();
        ring.bytes = 0;
        ring.dropped += held;
        ring.start = next_seq.saturating_sub(appended);
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
            records_appended: ring.next - ring.start,
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

impl Ring {
    /// Stores `e` as sequence `next`, dropping the oldest records to make
    /// room (or everything, `e` included, when `e` alone is over capacity).
    fn push(&mut self, e: Box<[u8]>, capacity: usize) -> Result<u64> {
        let seq = self.next;
        if seq > codec::MAX_SEQ {
            return Err(exhausted());
        }
        let after = seq + 1;
        self.next = after;
        let cost = charge(e.len());
        if cost > capacity {
            self.drop_oldest(self.entries.len());
            // The record itself is lost: nothing before or at it is held.
            self.first = after;
            self.dropped_upto = seq;
            self.dropped += 1;
            return Ok(seq);
        }
        let mut n = 0;
        let mut room = capacity - self.bytes;
        while room < cost {
            room += charge(self.entries[n].len());
            n += 1;
        }
        self.drop_oldest(n);
        self.bytes += cost;
        self.entries.push_back(e);
        Ok(seq)
    }

    /// Drops the `n` oldest records (unreleased: released ones are freed
    /// at release).
    fn drop_oldest(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        for e in self.entries.drain(..n) {
            self.bytes -= charge(e.len());
        }
        self.first += n as u64;
        self.dropped += n as u64;
        self.dropped_upto = self.first - 1;
    }

    /// Position of sequence `from` in `entries` (`entries.len()` for the
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
                    "it was dropped unreleased when the journal was full ({} records \
                     dropped so far, the last of them {})",
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
