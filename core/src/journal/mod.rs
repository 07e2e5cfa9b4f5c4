//! The change journal (docs/CONTRACT.md section 12): the records a master
//! makes of its state changes, by outcome ([`record`]), their versioned,
//! checksummed batch encoding ([`codec`]) and the bounded buffer that
//! numbers, holds and hands them out ([`ring`]).
//!
//! # Ordering rules the recording side keeps (the apply side relies on them)
//!
//! - An operation appends its record(s) while it still holds the shard
//!   lock(s) of the change, after the change, with [`Journal::append_all`]
//!   when one operation makes several records under one lock, so they
//!   stay contiguous.
//! - **Append before free**: a buffer goes back to its allocator only
//!   after the record that frees it ([`Record::ObjectSet`],
//!   [`Record::ObjectErased`], [`Record::DiscardReleased`],
//!   [`Record::SegmentUnmounted`]) has been appended, so a placement that
//!   reuses it, recorded under another shard's lock, always comes later in
//!   the journal.
//! - Ids, tokens and sequences reserved by a failed operation and not
//!   given back leave the counters ahead of every record; a
//!   [`Record::Counters`] keeps the standby's counters, and so its
//!   snapshot, equal to the primary's.

pub mod apply;
pub(crate) mod capture;
pub mod codec;
pub mod record;
pub mod ring;

pub use apply::ApplyReport;
pub use codec::{decode_batch, decode_batch_prefix, encode_batch, Batch, BatchHeader};
pub use record::*;
pub use ring::{charge, Journal, JournalRead, JournalStats, RECORD_OVERHEAD};
