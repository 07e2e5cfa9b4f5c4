//! The change journal and standby masters (docs/CONTRACT.md section 12),
//! shaped like the core's `journal` module and its master methods.

use super::*;

/// The journal's counters at one instant (all zero on a master without a
/// journal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JournalStats {
    /// Most bytes held at once.
    pub capacity_bytes: usize,
    /// Bytes held now, never above the capacity.
    pub bytes_held: usize,
    /// Records held now.
    pub records_held: u64,
    /// Sequence of the oldest record held; `last_seq + 1` when none is.
    pub first_seq: u64,
    /// Sequence of the newest record appended (0 before any).
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
    /// Records in the batch written (0: nothing after `from` yet).
    pub records: u64,
    /// Bytes written at the start of the buffer.
    pub bytes: usize,
    /// The sequence to read from next (`from + records`).
    pub next_seq: u64,
}

/// What applying journal bytes to a standby did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApplyReport {
    /// Records applied by this call.
    pub records_applied: u64,
    /// Records at or below the applied sequence, skipped as repeats.
    pub records_skipped: u64,
    /// The applied sequence after the call.
    pub last_seq: u64,
}

/// What promoting a standby did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromoteReport {
    /// Readable objects given the recovery lease.
    pub objects_leased: u64,
    /// Writes in flight that go on on the promoted master.
    pub writes_in_flight: u64,
    /// The last sequence applied before the promotion.
    pub applied_seq: u64,
}

impl Master {
    /// Reads the records from `from` into `out`: one batch of as many as
    /// fit; `TooSmall(n)` when not even the first does (`n` bytes hold every
    /// record held from `from`). `JOURNAL_OVERRUN` for a dropped or released
    /// sequence; `UNAVAILABLE_IN_CURRENT_STATUS` without a journal.
    pub fn journal_read(&self, from: u64, out: &mut [u8]) -> Result<Bounded<JournalRead>> {
        let mut len = 0usize;
        let mut next = 0u64;
        let buf = if out.is_empty() {
            ptr::null_mut()
        } else {
            out.as_mut_ptr()
        };
        // SAFETY: live master; `buf` valid for `out.len()` bytes (NULL only
        // with 0); writable outputs.
        let r = call(|e| unsafe {
            mooncake_meta_journal_read(self.as_ptr(), from, buf, out.len(), &mut len, &mut next, e)
        });
        match r {
            Ok(()) => Ok(Bounded::Fits(JournalRead {
                records: next - from,
                bytes: len,
                next_seq: next,
            })),
            Err(e) if e.kind() == ErrorKind::BufferTooSmall => Ok(Bounded::TooSmall(len)),
            Err(e) => Err(e),
        }
    }

    /// Every record held from `from`, as one batch (empty when nothing was
    /// recorded after `from`). Errors as [`journal_read`](Self::journal_read).
    pub fn journal_read_to_vec(&self, from: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        loop {
            match self.journal_read(from, &mut buf)? {
                Bounded::Fits(r) => {
                    buf.truncate(r.bytes);
                    return Ok(buf);
                }
                Bounded::TooSmall(n) => buf.resize(n, 0),
            }
        }
    }

    /// The consumer has stored every record up to `upto`: they are freed.
    /// Returns the records freed.
    pub fn journal_release(&self, upto: u64) -> Result<u64> {
        let mut freed = 0;
        // SAFETY: live master, writable output.
        call(|e| unsafe { mooncake_meta_journal_release(self.as_ptr(), upto, &mut freed, e) })?;
        Ok(freed)
    }

    /// The journal's counters.
    pub fn journal_stats(&self) -> JournalStats {
        let mut s = mooncake_meta_journal_stats::default();
        // SAFETY: live master, `s` sized.
        let r = call(|e| unsafe { mooncake_meta_journal_counters(self.as_ptr(), &mut s, e) });
        infallible("mooncake_meta_journal_counters", r);
        JournalStats {
            capacity_bytes: saturating_usize(s.capacity_bytes),
            bytes_held: saturating_usize(s.bytes_held),
            records_held: s.records_held,
            first_seq: s.first_seq,
            last_seq: s.last_seq,
            released_upto: s.released_upto,
            dropped_upto: s.dropped_upto,
            dropped_records: s.dropped_records,
            records_appended: s.records_appended,
        }
    }

    /// Applies journal bytes to this standby (docs/CONTRACT.md section 12).
    pub fn apply_journal(&self, bytes: &[u8]) -> Result<ApplyReport> {
        let mut r = mooncake_meta_apply_report::default();
        // SAFETY: live master; `bytes` valid for its length (NULL only when
        // empty); `r` sized.
        call(|e| unsafe {
            mooncake_meta_journal_apply(self.as_ptr(), array_ptr(bytes), bytes.len(), &mut r, e)
        })?;
        Ok(ApplyReport {
            records_applied: r.records_applied,
            records_skipped: r.records_skipped,
            last_seq: r.last_seq,
        })
    }

    /// Promotes this standby to primary.
    pub fn promote(&self) -> Result<PromoteReport> {
        let mut r = mooncake_meta_promote_report::default();
        // SAFETY: live master, `r` sized.
        call(|e| unsafe { mooncake_meta_promote(self.as_ptr(), &mut r, e) })?;
        Ok(PromoteReport {
            objects_leased: r.objects_leased,
            writes_in_flight: r.writes_in_flight,
            applied_seq: r.applied_seq,
        })
    }

    /// Whether this master is a standby, and its applied sequence; fails
    /// only on a poisoned master (`PANIC`).
    pub(super) fn try_standby_state(&self) -> Result<(bool, u64)> {
        let mut standby: c_int = 0;
        let mut seq = 0;
        // SAFETY: live master, writable outputs.
        call(|e| unsafe { mooncake_meta_standby_state(self.as_ptr(), &mut standby, &mut seq, e) })?;
        Ok((standby != 0, seq))
    }

    fn standby_state(&self) -> (bool, u64) {
        infallible("mooncake_meta_standby_state", self.try_standby_state())
    }

    /// Whether this master is a standby.
    pub fn is_standby(&self) -> bool {
        self.standby_state().0
    }

    /// The last journal sequence applied (a standby) or applied before the
    /// promotion.
    pub fn applied_seq(&self) -> u64 {
        self.standby_state().1
    }
}
