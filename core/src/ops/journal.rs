//! Reading and releasing the change journal (docs/CONTRACT.md §12): the
//! consumer's side of the records the operations append. With
//! `journal_capacity_bytes == 0` there is no journal: statistics are all
//! zero and reading or releasing is `UNAVAILABLE_IN_CURRENT_STATUS`.

use crate::error::{Error, ErrorKind, Result};
use crate::journal::{Journal, JournalRead, JournalStats};
use crate::master::MasterCore;
use crate::ops::Bounded;

impl MasterCore {
    fn journal_or_off(&self) -> Result<&Journal> {
        self.journal.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::UnavailableInCurrentStatus,
                "the journal is off (journal_capacity_bytes = 0)",
            )
        })
    }

    /// Writes the records from sequence `from` into `out` as one batch:
    /// every held record from `from` that fits (at least one), or
    /// `TooSmall(n)` with the size that holds them all when not even the
    /// first fits; no records when `from` is the next sequence to be
    /// appended. `JOURNAL_OVERRUN` below the oldest record held (dropped or
    /// released: resync from a snapshot), `INVALID_PARAMS` for 0 or beyond
    /// the next sequence. `out` is untouched on every error.
    pub fn journal_read(&self, from: u64, out: &mut [u8]) -> Result<Bounded<JournalRead>> {
        self.journal_or_off()?.read(from, out)
    }

    /// [`journal_read`](Self::journal_read) into a buffer that may be
    /// uninitialized (a C caller's): only the batch's bytes are written,
    /// and nothing is read from it.
    pub fn journal_read_uninit(
        &self,
        from: u64,
        out: &mut [std::mem::MaybeUninit<u8>],
    ) -> Result<Bounded<JournalRead>> {
        self.journal_or_off()?.read_uninit(from, out)
    }

    /// [`journal_read`](Self::journal_read) into a new buffer holding every
    /// record from `from` (empty when there is none yet).
    pub fn journal_read_to_vec(&self, from: u64) -> Result<Vec<u8>> {
        self.journal_or_off()?.read_to_vec(from)
    }

    /// The consumer has stored every record up to `upto`: the journal frees
    /// them and returns how many. Releasing what is already released is a
    /// no-op (0); `INVALID_PARAMS` past the last record appended.
    pub fn journal_release(&self, upto: u64) -> Result<u64> {
        self.journal_or_off()?.release(upto)
    }

    /// The journal's statistics; all zero (`capacity_bytes == 0`) when the
    /// journal is off.
    pub fn journal_stats(&self) -> JournalStats {
        self.journal
            .as_ref()
            .map_or_else(JournalStats::default, Journal::stats)
    }
}
