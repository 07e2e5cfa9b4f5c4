//! The change journal (docs/CONTRACT.md section 12): the records a master
//! makes of its state changes, by outcome ([`record`]), their versioned,
//! checksummed batch encoding ([`codec`]) and the bounded buffer that
//! numbers, holds and hands them out ([`ring`]); [`view`] decodes batches
//! for applying without copying their keys and names.
//!
//! # Ordering rules the recording side keeps (the apply side relies on them)
//!
//! - An operation appends its record(s) after the change, while it still
//!   holds the lock it changed the state under: the object's shard lock
//!   (one record per object; a group eviction appends one per member
//!   while it holds all their shard locks), the segment table's write lock
//!   (mount, and an unmount's last record), the retention registry's lock.
//!   The recording helpers live in `capture.rs`.
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
//! - **The timeline**: records carry instants on the primary's timeline.
//!   When the primary's skew (timeline − wall) moves from the one its
//!   journal last stands on (0 at creation, a Timeline record's, a Reset
//!   image's) it appends a [`Record::Timeline`] — at a wall set and at
//!   every maintenance tick, never on a client operation — under the
//!   timeline lock (`ring.rs`), so skews are recorded in the order they
//!   were read; a standby takes each, as it takes an image's.

pub mod apply;
pub(crate) mod capture;
pub mod codec;
pub mod record;
pub mod ring;
pub mod view;

pub use apply::ApplyReport;
pub use codec::{decode_batch, decode_batch_prefix, encode_batch, Batch, BatchHeader};
pub use record::*;
pub use ring::{charge, Journal, JournalRead, JournalStats, CHUNK_BYTES, RECORD_OVERHEAD};
