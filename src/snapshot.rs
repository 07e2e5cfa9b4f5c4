//! Snapshots through the C ABI (docs/CONTRACT.md §6): serialise to a library-owned
//! buffer, into the caller's buffer or atomically to a file; restore from
//! one buffer, from candidate buffers or from candidate files (newest valid
//! one wins, and the report says which). A failed restore leaves the master
//! untouched.

use super::bytes::{self, mooncake_meta_bytes};
use super::error::mooncake_meta_error;
use super::input::{self, Index, Out};
use super::master::{mooncake_meta_master, with_master};
use super::sized_out::{size_versioned, SizedOut};
use super::status::mooncake_meta_status;
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use mooncake_meta_core::snapshot::file;
use mooncake_meta_core::RestoreReport;
use std::ffi::CStr;
use std::fmt::Display;
use std::os::raw::c_char;
use std::path::PathBuf;

/// What a restore did. Size-versioned output: set
/// `struct_size = sizeof(mooncake_meta_restore_report)` before the call; the
/// library fills `min(struct_size, its size)` bytes and sets `struct_size`
/// to that. Fields are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct mooncake_meta_restore_report {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Index, in the caller's list, of the candidate that was restored (0
    /// for `mooncake_meta_restore`).
    pub candidate: u64,
    /// The restored snapshot's creation instant, on the timeline of the
    /// master that took it.
    pub created_at: u64,
    /// Objects restored.
    pub objects_restored: u64,
    /// Objects dropped by the survival rule (nothing COMPLETE, or neither a
    /// live lease, an active soft pin nor a hard pin).
    pub objects_dropped: u64,
    /// PROCESSING replicas dropped (in-flight writes, task targets).
    pub replicas_dropped: u64,
    /// Surviving active soft pins (registered in the deadline index).
    pub soft_pins_restored: u64,
    /// Expired deadlines normalised to none.
    pub soft_pins_normalised: u64,
    /// Candidates rejected before the winner (newer ones that failed to
    /// validate, or could not be read).
    pub candidates_rejected: u64,
    /// Version 2: how far every stored instant was shifted
    /// onto this master's timeline: its clock skew now minus the skew at
    /// capture; 0 for equal skews and for snapshots without a wall record
    /// (format 1, and formats 3 to 5 when it is absent).
    pub clock_shift_ms: i64,
}
// Version 1: 8 + 8 * 8 = 72 bytes on every target; frozen. Version 2
// appends clock_shift_ms (80 bytes).
size_versioned!(mooncake_meta_restore_report, v1_size = 72);

impl From<RestoreReport> for mooncake_meta_restore_report {
    fn from(r: RestoreReport) -> Self {
        mooncake_meta_restore_report {
            struct_size: 0,
            reserved0: 0,
            candidate: r.candidate as u64,
            created_at: r.created_at,
            objects_restored: r.objects_restored,
            objects_dropped: r.objects_dropped,
            replicas_dropped: r.replicas_dropped,
            soft_pins_restored: r.soft_pins_restored,
            soft_pins_normalised: r.soft_pins_normalised,
            candidates_rejected: r.rejected.len() as u64,
            clock_shift_ms: r.clock_shift_ms,
        }
    }
}

/// A NUL-terminated path. On Unix any bytes but NUL are a valid path; on
/// other platforms it must be UTF-8.
///
/// # Safety
/// A non-NULL `ptr` must point to a NUL-terminated string.
unsafe fn path(ptr: *const c_char, arg: impl Display + Copy) -> Result<PathBuf> {
    if ptr.is_null() {
        return Err(input::null(arg));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller.
    let raw = unsafe { CStr::from_ptr(ptr) };
    if raw.is_empty() {
        return Err(Error::invalid(format!("{arg} is empty")));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(raw.to_bytes())))
    }
    #[cfg(not(unix))]
    {
        // SAFETY: as above.
        Ok(PathBuf::from(unsafe { input::c_str(ptr, arg) }?))
    }
}

/// Serialises the master into a new buffer at `*out`: a consistent cut,
/// deterministic for a given state (sorted keys), with soft-pin deadlines
/// kept (docs/CONTRACT.md section 6).
///
/// Ownership: on success `*out` is a new buffer owned by the caller, to be
/// released with `mooncake_meta_bytes_free`; on failure it is not written.
/// Thread safety: may be called concurrently with any call but `_free`;
/// writers wait while the cut is taken, reads go on. With the journal on,
/// the cut waits for a mount, an unmount or a restore in progress.
///
/// # Safety
/// `m` NULL or a live master; `out` valid for writing one pointer; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_snapshot(
    m: *const mooncake_meta_master,
    out: *mut *mut mooncake_meta_bytes,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_snapshot", m, err, |master| {
            let out = Out::new(out, "out")?;
            bytes::give(out, master.snapshot()?);
            Ok(())
        })
    }
}

/// Serialises the master into the caller's `buf` of `cap` bytes;
/// `*out_len` = the snapshot's length. If it does not fit:
/// `MOONCAKE_META_BUFFER_TOO_SMALL`, `*out_len` = the length needed, `buf`
/// untouched. `(NULL, 0)` asks for the length. The master may change (and
/// the snapshot grow) before the next call: retry with some headroom.
///
/// Ownership: nothing is transferred; `buf` is the caller's.
/// Thread safety: as `mooncake_meta_snapshot`.
///
/// # Safety
/// `m` NULL or a live master; `buf` NULL (only with `cap == 0`) or valid
/// for writing `cap` bytes; `out_len` valid for writing a `size_t`; `err`
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_snapshot_into(
    m: *const mooncake_meta_master,
    buf: *mut u8,
    cap: usize,
    out_len: *mut usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_snapshot_into", m, err, |master| {
            bytes::check_buffer_args(buf, cap, out_len, "buf")?;
            let snapshot = master.snapshot()?;
            bytes::copy_out(&snapshot, buf, cap, out_len, "buf")
        })
    }
}

/// Serialises the master to the file `path` atomically: written to a
/// temporary file in the same directory, synced, renamed over `path`, and
/// the directory synced, so a crash leaves the old file or the new one,
/// never a torn one. An I/O failure is `MOONCAKE_META_SERIALIZE_FAIL`; one
/// before the rename leaves `path` as it was (and no temporary file), but
/// a failure to sync the directory after the rename leaves `path` holding
/// the new snapshot, which a crash may still undo (the message says so). A
/// temporary file a crashed process left is never overwritten: the save
/// takes another name.
///
/// The file replaced is the one `path` names: a symbolic link is followed
/// (the link stays and its target is replaced; more than 40 links, or a
/// loop, is `MOONCAKE_META_SERIALIZE_FAIL`). A directory, device, pipe or
/// socket at `path` is refused (`MOONCAKE_META_SERIALIZE_FAIL`, "not a
/// regular file") before anything is written. A replaced file's owner,
/// group and read/write/execute bits carry over to the new one (never
/// set-user-ID, set-group-ID or sticky; an owner or group the process may
/// not set stays its own, and then the group bits are cleared); a new file
/// is created 0600 (less what the umask takes): a snapshot holds every
/// tenant's keys.
///
/// Ownership: nothing is transferred; `path` is only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`;
/// concurrent saves to one path each land whole (the last rename wins).
///
/// # Safety
/// `m` NULL or a live master; `path` a NUL-terminated string; `err` NULL or
/// valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_snapshot_save(
    m: *const mooncake_meta_master,
    path: *const c_char,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_snapshot_save", m, err, |master| {
            let path = self::path(path, "path")?;
            file::save_atomic(&path, &master.snapshot()?)
        })
    }
}

/// Restores the master from one snapshot of `len` bytes at `data`,
/// replacing its whole state atomically, with the survival rule evaluated
/// at the master clock's now (docs/CONTRACT.md section 6). A snapshot that does not
/// validate is `MOONCAKE_META_DESERIALIZE_FAIL` with the reason, and the
/// master is unchanged. The report goes to `*out` unless `out` is NULL (a
/// bad `out->struct_size` fails before anything is restored).
///
/// Ownership: nothing is transferred; `data` is only read during the call.
/// Thread safety: may be called concurrently with any call but `_free`.
/// The state is replaced under every shard lock at once: a call on one
/// key, each key of a batch call, and a snapshot (which locks every shard
/// at once) see the state before the restore or after it, never a mix. A
/// call that visits the shards one at a time can straddle a restore:
/// `mooncake_meta_remove_all` and the `mooncake_meta_remove_by_regex`
/// calls then remove from the replaced state in the shards they visited before it and
/// from the restored state in the others (their count adds both), a
/// `mooncake_meta_list_keys` page may hold keys of both, and the keys of
/// one batch call may see different states. (An unmount running across a
/// restore never drops a restored replica, and cleanup or eviction work
/// never acts on the restored state: docs/CONTRACT.md section 6.)
///
/// # Safety
/// `m` NULL or a live master; `data` NULL (only with `len == 0`) or valid
/// for reading `len` bytes; `out` NULL or valid for reading its first
/// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_restore(
    m: *const mooncake_meta_master,
    data: *const u8,
    len: usize,
    out: *mut mooncake_meta_restore_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_restore", m, err, |master| {
            let data = input::bytes(data.cast(), len, "data")?;
            let out = SizedOut::optional(out, "out")?;
            let report = master.restore(data)?;
            if let Some(out) = out {
                out.write(report.into());
            }
            Ok(())
        })
    }
}

/// Restores from `count` candidate snapshots, candidate `i` being
/// `lens[i]` bytes at `datas[i]`: tried newest first (by stored creation
/// instant, ties in list order); the first that validates is restored and
/// `out->candidate` says which. If none validates:
/// `MOONCAKE_META_DESERIALIZE_FAIL` whose message gives each candidate's
/// reason, and the master is unchanged. `count == 0` is
/// `MOONCAKE_META_DESERIALIZE_FAIL` too (nothing to restore).
///
/// Ownership: nothing is transferred; the buffers are only read during the
/// call.
/// Thread safety: as `mooncake_meta_restore`.
///
/// # Safety
/// `m` NULL or a live master; `datas` and `lens` NULL (only with `count ==
/// 0`) or valid for reading `count` elements, each `datas[i]` NULL (only
/// with `lens[i] == 0`) or valid for reading `lens[i]` bytes; `out` as for
/// `mooncake_meta_restore`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_restore_candidates(
    m: *const mooncake_meta_master,
    datas: *const *const u8,
    lens: *const usize,
    count: usize,
    out: *mut mooncake_meta_restore_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_restore_candidates", m, err, |master| {
            let datas = array(datas, count, "datas")?;
            let lens = array(lens, count, "lens")?;
            let candidates = datas
                .iter()
                .zip(lens)
                .enumerate()
                .map(|(i, (&d, &n))| input::bytes(d.cast(), n, Index("datas", i)))
                .collect::<Result<Vec<&[u8]>>>()?;
            let out = SizedOut::optional(out, "out")?;
            let report = master.restore_candidates(&candidates)?;
            if let Some(out) = out {
                out.write(report.into());
            }
            Ok(())
        })
    }
}

/// Restores from `count` candidate snapshot files (NUL-terminated paths),
/// as `mooncake_meta_restore_candidates`; a file that cannot be read counts
/// as a failed candidate (named, with the reason, in the error message if
/// no candidate wins; counted in `out->candidates_rejected` if one does).
/// Only a regular file is read (a device, pipe or directory is such a
/// failure, before a byte is read), and only once its header says it is a
/// snapshot of exactly its length (anything else fails after reading the
/// header alone, so a large file that is no snapshot costs no memory), up
/// to the length it had when opened. Files are ordered by the creation
/// instant their first bytes state and read whole one at a time, newest
/// first, each only once the newer ones failed: a restore holds one
/// candidate in memory, not all.
///
/// Ownership: nothing is transferred; the paths are only read during the
/// call.
/// Thread safety: as `mooncake_meta_restore`.
///
/// # Safety
/// `m` NULL or a live master; `paths` NULL (only with `count == 0`) or valid
/// for reading `count` pointers, each a NUL-terminated string; `out` as for
/// `mooncake_meta_restore`; `err` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_restore_files(
    m: *const mooncake_meta_master,
    paths: *const *const c_char,
    count: usize,
    out: *mut mooncake_meta_restore_report,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        with_master("mooncake_meta_restore_files", m, err, |master| {
            let paths = array(paths, count, "paths")?
                .iter()
                .enumerate()
                .map(|(i, &p)| path(p, Index("paths", i)))
                .collect::<Result<Vec<PathBuf>>>()?;
            let out = SizedOut::optional(out, "out")?;
            let paths: Vec<&std::path::Path> = paths.iter().map(PathBuf::as_path).collect();
            let report = master.restore_files(&paths)?;
            if let Some(out) = out {
                out.write(report.into());
            }
            Ok(())
        })
    }
}

/// `count` elements at `ptr`; `(NULL, 0)` is empty, NULL with a count is
/// `NULL_ARGUMENT`.
///
/// # Safety
/// A non-NULL `ptr` must be valid for reading `count` elements for `'a`.
unsafe fn array<'a, T>(ptr: *const T, count: usize, arg: &str) -> Result<&'a [T]> {
    if ptr.is_null() {
        return if count == 0 {
            Ok(&[])
        } else {
            Err(Error::new(
                ErrorKind::NullArgument,
                format!("{arg} is NULL but count is {count}"),
            ))
        };
    }
    if count > isize::MAX as usize / size_of::<T>().max(1) {
        return Err(Error::invalid(format!("{arg}: count {count} is too large")));
    }
    // SAFETY: non-NULL, count bounded, validity promised by the caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) })
}
