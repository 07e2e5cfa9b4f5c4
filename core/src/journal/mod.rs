//! The change journal (docs/CONTRACT.md section 12): the records a master
//! makes of its state changes, by outcome ([`record`]), their versioned,
//! checksummed batch encoding ([`codec`]) and the bounded buffer that
//! numbers, holds and hands them out ([`ring`]).
//!
//! Not wired into the master yet: no operation records anything, and
//! standby mode, apply and promote do not exist yet.
//!
//! # For the step that wires it in
//!
//! - An operation appends its record(s) while it still holds the shard
//!   lock(s) of the change, after the change, with [`Journal::append_all`]
//!   when one operation makes several records (a group eviction), so they
//!   stay contiguous.
//! - Records of different shards are ordered by when they reach the
//!   journal, which is not always when their allocator effects happened: a
//!   buffer freed under shard A's lock can be reused by a placement under
//!   shard B's lock whose record is appended before A's. Either the freeing
//!   record is appended before the buffer goes back to its allocator, or
//!   the apply side places buffers by address without consulting an
//!   allocator's free list; [`Record::DiscardReleased`],
//!   [`Record::WriteRevoked`], [`Record::Removed`] and [`Record::Evicted`]
//!   are the records that free buffers.
//! - Ids, tokens and sequences reserved by a failed allocation and not
//!   given back leave the counters ahead of every record; a
//!   [`Record::Counters`] (appended when the counters moved without a
//!   recorded change, e.g. before each read) keeps the standby's counters,
//!   and so its snapshot, equal to the primary's.

pub mod codec;
pub mod record;
pub mod ring;

pub use codec::{decode_batch, decode_batch_prefix, encode_batch, Batch, BatchHeader};
pub use record::*;
pub use ring::{charge, Journal, JournalRead, JournalStats, RECORD_OVERHEAD};
