//! The change journal and standby masters through the C ABI
//! (docs/CONTRACT.md section 12): a primary's consumer reads the journal
//! into its own buffer and releases what it has stored; a standby applies
//! those bytes and is promoted when the primary is gone.

use super::bytes;
use super::error::mooncake_meta_error;
use super::input::{self, Out};
use super::master::{mooncake_meta_master, with_master};
use super::sized_out::{size_versioned, SizedOut};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::{Error, ErrorKind};
use mooncake_meta_core::journal::JournalStats;
use mooncake_meta_core::{ApplyReport, Bounded, PromoteReport};
use std::os::raw::c_int;

/// The journal's counters (all zero, `capacity_bytes` included, on a
/// master without a journal). Size-versioned output: set `struct_size =
/// sizeof(mooncake_meta_journal_stats)` before the call; the library fills
/// `min(struct_size, its size)` bytes and sets `struct_size` to that.
/// Fields are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct mooncake_meta_journal_stats {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Most bytes the journal holds at once (`journal_capacity_bytes`).
    pub capacity_bytes: u64,
    /// Bytes held now (the records' encoded bytes plus a fixed overhead
    /// each), never above the capacity.
    pub bytes_held: u64,
    /// Records held now.
    pub records_held: u64,
    /// Sequence of the oldest record held (`last_seq + 1` when none is).
    pub first_seq: u64,
    /// Sequence of the newest record appended (0 before any).
    pub last_seq: u64,
    /// Highest sequence the consumer released (0: none).
    pub released_upto: u64,
    /// Highest sequence dropped unreleased (the journal full, a record
    /// larger than its capacity, or a journaling standby's numbering moved;
    /// 0: none). Reading from it or below is `MOONCAKE_META_JOURNAL_OVERRUN`.
    pub dropped_upto: u64,
    /// Records dropped unreleased so far.
    pub dropped_records: u64,
    /// Records appended since the journal was created, dropped ones
    /// included.
    pub records_appended: u64,
}
// Version 1: 8 + 9 * 8 = 80 bytes on every target; frozen.
size_versioned!(mooncake_meta_journal_stats, v1_size = 80);

impl From<JournalStats> for mooncake_meta_journal_stats {
    fn from(s: JournalStats) -> Self {
        mooncake_meta_journal_stats {
            struct_size: 0,
            reserved0: 0,
            capacity_bytes: s.capacity_bytes as u64,
            bytes_held: s.bytes_held as u64,
            records_held: s.records_held,
            first_seq: s.first_seq,
            last_seq: s.last_seq,
            released_upto: s.released_upto,
            dropped_upto: s.dropped_upto,
            dropped_records: s.dropped_records,
            records_appended: s.records_appended,
        }
    }
}

/// What `mooncake_meta_journal_apply` did. Size-versioned output, as
/// `mooncake_meta_journal_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct mooncake_meta_apply_report {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Records applied by this call.
    pub records_applied: u64,
    /// Records at or below the applied sequence, skipped as repeats.
    pub records_skipped: u64,
    /// The standby's applied sequence after the call.
    pub last_seq: u64,
}
// Version 1: 8 + 3 * 8 = 32 bytes on every target; frozen.
size_versioned!(mooncake_meta_apply_report, v1_size = 32);

impl From<ApplyReport> for mooncake_meta_apply_report {
    fn from(r: ApplyReport) -> Self {
        mooncake_meta_apply_report {
            struct_size: 0,
            reserved0: 0,
            records_applied: r.records_applied,
            records_skipped: r.records_skipped,
            last_seq: r.last_seq,
        }
    }
}

/// What `mooncake_meta_promote` did. Size-versioned output, as
/// `mooncake_meta_journal_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct mooncake_meta_promote_report {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Readable objects given the recovery lease.
    pub objects_leased: u64,
    /// Writes in flight that go on on the promoted master.
    pub writes_in_flight: u64,
    /// The last sequence applied before the promotion; the promoted
    /// master's journal goes on after it.
    pub applied_seq: u64,
}
// Version 1: 8 + 3 * 8 = 32 bytes on every target; frozen.
size_versioned!(mooncake_meta_promote_report, v1_size = 32);

impl From<PromoteReport> for mooncake_meta_promote_report {
    fn from(r: PromoteReport) -> Self {
        mooncake_meta_promote_report {
            struct_size: 0,
            reserved0: 0,
            objects_leased: r.objects_leased,
            writes_in_flight: r.writes_in_flight,
            applied_seq: r.applied_seq,
        }
    }
}

/// Reads the journal from sequence `from_seq` into the caller's `buf` of
/// `cap` bytes: one batch of as many consecutive records as fit (the
/// encoding of docs/CONTRACT.md section 12, ready for
/// `mooncake_meta_journal_apply`). `*out_len` = the batch's length and
/// `*out_next_seq` = the sequence to read from next. Nothing recorded
/// after `from_seq` yet: OK, `*out_len` = 0, `*out_next_seq` = `from_seq`.
/// Not even the first record fits: `MOONCAKE_META_BUFFER_TOO_SMALL`,
/// `*out_len` = the bytes that hold every record held from `from_seq`,
/// `buf` untouched; `(NULL, 0)` asks for that length.
///
/// Errors: `MOONCAKE_META_JOURNAL_OVERRUN` when `from_seq` was dropped
/// (the journal was full, or a journaling standby's numbering moved) or
/// already released: resync from a snapshot;
/// `MOONCAKE_META_INVALID_PARAMS` for 0 or a sequence past the next one;
/// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS` on a master without a
/// journal. Outputs are untouched on every error but BUFFER_TOO_SMALL.
///
/// Ownership: nothing is transferred; `buf` is the caller's.
/// Thread safety: may be called concurrently with any call but `_free`;
/// reads are serialised with appends by the journal's own lock.
///
/// # Safety
/// `m` NULL or a live master; `buf` NULL (only with `cap == 0`) or valid
/// for writing `cap` bytes; `out_len` valid for writing a `size_t`;
/// `out_next_seq` NULL or valid for writing a `uint64_t`; `err` NULL or
/// valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_journal_read(
    m: *const mooncake_meta_master,
    from_seq: u64,
    buf: *mut u8,
    cap: usize,
    out_len: *mut usize,
    out_next_seq: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_journal_read", m, err, |master| {
            bytes::check_buffer_args(buf, cap, out_len, "buf")?;
            let out_len = Out::new(out_len, "out_len")?;
            let out_next = std::ptr::NonNull::new(out_next_seq)
                .map(|p| Out::new(p.as_ptr(), "out_next_seq"))
                .transpose()?;
            let dest: &mut [std::mem::MaybeUninit<u8>] = if cap == 0 {
                &mut []
            } else {
                // SAFETY: non-NULL (checked above) and valid for writing
                // `cap` bytes per the caller, which may be uninitialized
                // (a `malloc`ed buffer): hence `MaybeUninit`, which the read
                // only writes. The caller's buffer cannot overlap memory
                // the library owns.
                std::slice::from_raw_parts_mut(buf.cast::<std::mem::MaybeUninit<u8>>(), cap)
            };
            match master.journal_read_uninit(from_seq, dest)? {
                Bounded::Fits(r) => {
                    out_len.write(r.bytes);
                    if let Some(o) = out_next {
                        o.write(r.next_seq);
                    }
                    Ok(())
                }
                Bounded::TooSmall(needed) => {
                    out_len.write(needed);
                    Err(Error::new(
                        ErrorKind::BufferTooSmall,
                        format!(
                            "buf: capacity {cap} is below the {needed} bytes the records from \
                             sequence {from_seq} need (*out_len is set to that)"
                        ),
                    ))
                }
            }
        })
    }
}

/// The consumer has stored every record up to `upto` (inclusive): the
/// journal frees them. Releasing what is already released or dropped is a
/// no-op. `*out_freed` (unless NULL) = the records freed.
///
/// Errors: `MOONCAKE_META_INVALID_PARAMS` for a sequence not appended yet;
/// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS` on a master without a
/// journal.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out_freed` NULL or valid for writing a
/// `uint64_t`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_journal_release(
    m: *const mooncake_meta_master,
    upto: u64,
    out_freed: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_journal_release", m, err, |master| {
            let out = std::ptr::NonNull::new(out_freed)
                .map(|p| Out::new(p.as_ptr(), "out_freed"))
                .transpose()?;
            let freed = master.journal_release(upto)?;
            if let Some(o) = out {
                o.write(freed);
            }
            Ok(())
        })
    }
}

/// The journal's counters into `*out` (all zero on a master without a
/// journal).
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out` valid for reading its first `uint32_t`
/// and writing `out->struct_size` bytes; `err` NULL or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_journal_counters(
    m: *const mooncake_meta_master,
    out: *mut mooncake_meta_journal_stats,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_journal_counters", m, err, |master| {
            let out = SizedOut::new(out, "out")?;
            out.write(master.journal_stats().into());
            Ok(())
        })
    }
}

/// Applies journal bytes (one batch from `mooncake_meta_journal_read`, or
/// several concatenated) to a standby master, in sequence order. Every
/// batch is decoded and checked first: a corrupt one is
/// `MOONCAKE_META_DESERIALIZE_FAIL` and nothing is applied; records at or
/// below the applied sequence are skipped (a repeat is harmless); a gap
/// after the applied sequence is an error and nothing is applied. A record
/// that does not fit the standby's state stops the call with an error
/// naming it; the records before it stay applied and the applied sequence
/// says where (docs/CONTRACT.md section 12). `*out` (unless NULL) says
/// what was applied.
///
/// Errors: `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS` on a primary.
///
/// Ownership: nothing is transferred; `data` is only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`;
/// concurrent applies are serialised.
///
/// # Safety
/// `m` NULL or a live master; `data` NULL (only with `len == 0`) or valid
/// for reading `len` bytes; `out` NULL or valid for reading its first
/// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_journal_apply(
    m: *const mooncake_meta_master,
    data: *const u8,
    len: usize,
    out: *mut mooncake_meta_apply_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_journal_apply", m, err, |master| {
            let data = input::bytes(data.cast(), len, "data")?;
            let out = SizedOut::optional(out, "out")?;
            let report = master.apply_journal(data)?;
            if let Some(out) = out {
                out.write(report.into());
            }
            Ok(())
        })
    }
}

/// Promotes a standby master to primary: every readable object gets the
/// recovery lease (now + the default KV lease TTL, if later than its own),
/// maintenance starts, and the writes that were in flight go on: their End
/// and Revoke calls succeed on this master. `*out` (unless NULL) says what
/// was done.
///
/// Errors: `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS` on a primary.
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`;
/// one of two concurrent promotions fails.
///
/// # Safety
/// `m` NULL or a live master; `out` NULL or valid for reading its first
/// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_promote(
    m: *const mooncake_meta_master,
    out: *mut mooncake_meta_promote_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_promote", m, err, |master| {
            let out = SizedOut::optional(out, "out")?;
            let report = master.promote()?;
            if let Some(out) = out {
                out.write(report.into());
            }
            Ok(())
        })
    }
}

/// Whether the master is a standby (`*out_standby` = 1) or a primary (0),
/// and (unless `out_applied_seq` is NULL) the last journal sequence it
/// applied (a standby) or applied before its promotion (0 for a master
/// that was never a standby and restored no snapshot that carried one).
///
/// Ownership: nothing is transferred.
/// Thread safety: may be called concurrently with any call but `_free`.
///
/// # Safety
/// `m` NULL or a live master; `out_standby` valid for writing an `int`;
/// `out_applied_seq` NULL or valid for writing a `uint64_t`; `err` NULL or
/// valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_standby_state(
    m: *const mooncake_meta_master,
    out_standby: *mut c_int,
    out_applied_seq: *mut u64,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_standby_state", m, err, |master| {
            let standby = Out::new(out_standby, "out_standby")?;
            let applied = std::ptr::NonNull::new(out_applied_seq)
                .map(|p| Out::new(p.as_ptr(), "out_applied_seq"))
                .transpose()?;
            standby.write(c_int::from(master.is_standby()));
            if let Some(a) = applied {
                a.write(master.applied_seq());
            }
            Ok(())
        })
    }
}
