//! Snapshot files on disk: [`save_atomic`] replaces a file so that a crash or
//! a failed write leaves either the old or the new snapshot, never a torn
//! one; [`load`] reads a whole file for [`super::codec::decode`], once its
//! header says it is one.

use super::codec::{self, HEADER_LEN};
use crate::error::{Error, ErrorKind, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory (rename is only atomic within one file system), written in
/// full, fsynced, renamed over `path`, then the directory fsynced so the
/// rename itself survives a crash.
///
/// The file replaced is the one `path` names: a symbolic link is followed
/// (the link stays, its target is replaced, in the target's directory).
/// What is there must be a regular file: a directory, a device, a pipe or
/// a socket is refused before anything is written (saving to `/dev/null`
/// would otherwise replace the device with a file). A replaced file's
/// owner, group and read/write/execute bits carry over to the new one
/// (an owner or group this process may not set stays its
/// own, and then the group bits are cleared); a new file is created
/// readable and writable by its owner only (0600, less what the umask
/// takes), as a snapshot holds every tenant's keys.
pub fn save_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    save_with(path, bytes, |file, bytes| file.write_all(bytes))
}

/// How many temporary names one save tries before it gives up: a name
/// already taken (a file a crashed process with the same pid left, say) is
/// skipped, never overwritten.
const TEMP_NAME_TRIES: usize = 1024;

/// [`save_atomic`] with the write step supplied by the caller, so tests can
/// inject a writer that fails part-way. A failure before the rename (the
/// temporary file cannot be created, written, synced or renamed) removes
/// the temporary file, if it was created, and leaves `path` as it was. A
/// failure to sync the directory after the rename is `SERIALIZE_FAIL` too,
/// but `path` already holds the new snapshot then (the rename is done and
/// cannot be taken back); only whether the rename survives a crash is in
/// doubt.
pub fn save_with<W>(path: &Path, bytes: &[u8], mut write: W) -> Result<()>
where
    W: FnMut(&mut File, &[u8]) -> io::Result<()>,
{
    // The file the path names, through any symbolic links.
    let target = resolve_links(path)?;
    let Some(file_name) = target.file_name() else {
        return Err(save_error(path, "path has no file name", None));
    };
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let replaced = match fs::metadata(&target) {
        Ok(meta) if meta.is_file() => Some(meta),
        Ok(meta) => {
            let what = if meta.is_dir() {
                "a directory"
            } else {
                "a device, pipe or socket"
            };
            return Err(save_error(
                path,
                &format!("{} is not a regular file ({what})", target.display()),
                None,
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(save_error(
                path,
                &format!("reading the metadata of {}", target.display()),
                Some(e),
            ))
        }
    };

    // create_new: never truncate a file someone else is writing, nor one a
    // crashed process left; a name that is taken is skipped for the next.
    let mut tries = 0;
    let (tmp, mut file) = loop {
        let tmp = temp_path(dir, file_name);
        tries += 1;
        let mut open = OpenOptions::new();
        open.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, NEW_FILE_MODE);
        match open.open(&tmp) {
            Ok(file) => break (tmp, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < TEMP_NAME_TRIES => {}
            Err(e) => {
                let step = if e.kind() == io::ErrorKind::AlreadyExists {
                    format!(
                        "creating {} (the last of {tries} temporary names, all taken)",
                        tmp.display()
                    )
                } else {
                    format!("creating {}", tmp.display())
                };
                return Err(save_error(path, &step, Some(e)));
            }
        }
    };
    let kept = match &replaced {
        Some(old) => keep_access(&file, old)
            .map_err(|e| (format!("setting the access of {}", tmp.display()), e)),
        None => Ok(()),
    };
    let written = kept
        .and_then(|()| {
            write(&mut file, bytes).map_err(|e| (format!("writing {}", tmp.display()), e))
        })
        .and_then(|()| {
            file.sync_all()
                .map_err(|e| (format!("syncing {}", tmp.display()), e))
        });
    drop(file);
    if let Err((step, e)) = written {
        let _ = fs::remove_file(&tmp);
        return Err(save_error(path, &step, Some(e)));
    }
    if let Err(e) = fs::rename(&tmp, &target) {
        let _ = fs::remove_file(&tmp);
        return Err(save_error(
            path,
            &format!("renaming {} into place", tmp.display()),
            Some(e),
        ));
    }
    sync_dir(dir).map_err(|e| {
        save_error(
            path,
            &format!(
                "syncing directory {} after the rename (the path holds the new snapshot, \
                 which a crash may still undo)",
                dir.display()
            ),
            Some(e),
        )
    })
}

/// Reads a whole snapshot file: a regular file (a device, a pipe or a
/// directory is refused before anything is read: `/dev/zero` would never
/// end) whose header is a snapshot's and declares the rest of the file
/// (anything else is refused after reading the header alone, so a large
/// file that is no snapshot costs no memory), read up to the length it had
/// when opened, into memory reserved for that length up front (too large
/// for this process: an error, never an abort). The payload's checksum and
/// contents are [`super::codec::decode`]'s to check. Every failure is
/// `DESERIALIZE_FAIL` naming the path.
pub fn load(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let Opened { file, len, header } = open_snapshot(path)?;
    let payload_len = len - HEADER_LEN as u64;
    let room = usize::try_from(len)
        .ok()
        .and_then(|n| n.checked_add(1))
        .ok_or_else(|| read_error(path, format!("{len} bytes do not fit in memory")))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(room)
        .map_err(|_| read_error(path, format!("no memory for its {len} bytes")))?;
    bytes.extend_from_slice(&header);
    // One byte past the length tells a file that grew while read.
    file.take(payload_len.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| read_error(path, e.to_string()))?;
    if bytes.len() as u64 > len {
        return Err(read_error(
            path,
            format!(
                "it grew past its {len} bytes while being read (a snapshot is written \
                 whole and renamed into place: is something appending to it?)"
            ),
        ));
    }
    Ok(bytes)
}

/// The creation instant a snapshot file says it has, from its first bytes
/// (the header, checked as [`load`] checks it, and the instant after it):
/// what a restore orders candidate files by before it reads any whole.
/// Unverified: the payload's checksum covers it, and a restore checks that
/// when it reads the file. `DESERIALIZE_FAIL` naming the path as [`load`].
pub fn peek_created_at(path: &Path) -> Result<u64> {
    use std::io::Read;
    let Opened { mut file, .. } = open_snapshot(path)?;
    let mut at = [0u8; 8];
    file.read_exact(&mut at)
        .map_err(|e| read_error(path, format!("reading its creation instant: {e}")))?;
    codec::check_created_at(u64::from_le_bytes(at))
        .map_err(|e| read_error(path, e.message().to_owned()))
}

/// A snapshot file opened, its header read and checked, positioned after it.
struct Opened {
    file: File,
    /// The file's length when opened (at least a header's).
    len: u64,
    header: [u8; HEADER_LEN],
}

/// Opens `path` for [`load`] and [`peek_created_at`]: a regular file (a
/// device, a pipe or a directory is refused before anything is read), at
/// least a header long, whose header is a snapshot's declaring exactly the
/// rest of the file.
fn open_snapshot(path: &Path) -> Result<Opened> {
    use std::io::Read;
    let fail = |what: String| read_error(path, what);
    // Opened without blocking: opening a pipe no one writes to would wait
    // for ever, before the check below could refuse it (the flag changes
    // nothing for a regular file).
    let mut open = fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, libc::O_NONBLOCK);
    let mut file = open.open(path).map_err(|e| fail(e.to_string()))?;
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail(format!(
            "not a regular file (a {})",
            if meta.is_dir() {
                "directory"
            } else {
                "device, pipe or socket"
            }
        )));
    }
    let len = meta.len();
    let payload_len = len.checked_sub(HEADER_LEN as u64).ok_or_else(|| {
        fail(format!(
            "truncated header: {len} of {HEADER_LEN} bytes (not a snapshot)"
        ))
    })?;
    let mut header = [0u8; HEADER_LEN];
    file.read_exact(&mut header)
        .map_err(|e| fail(format!("reading its header: {e}")))?;
    codec::check_header(&header, payload_len).map_err(|e| fail(e.message().to_owned()))?;
    Ok(Opened { file, len, header })
}

fn read_error(path: &Path, what: String) -> Error {
    Error::new(
        ErrorKind::DeserializeFail,
        format!("reading snapshot {}: {what}", path.display()),
    )
}

/// Gives the new file (still the temporary one) the replaced file's
/// access: its owner and group where this process may set them, and its
/// read, write and execute bits (never set-user-ID, set-group-ID or
/// sticky), set on the open file so no umask applies. A group it may not
/// set leaves the new file in this process's group, which the old file
/// did not let in: its group bits are cleared then.
#[cfg(unix)]
fn keep_access(file: &File, old: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::{fchown, MetadataExt, PermissionsExt};
    let mut mode = old.mode() & 0o777;
    let new = file.metadata()?;
    if new.uid() != old.uid() {
        // Only a privileged process may give a file away; refused, the
        // file stays this process's, as a new one would be.
        let _ = fchown(file, Some(old.uid()), None);
    }
    if new.gid() != old.gid() && fchown(file, None, Some(old.gid())).is_err() {
        mode &= !0o070;
    }
    file.set_permissions(fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn keep_access(file: &File, old: &fs::Metadata) -> io::Result<()> {
    file.set_permissions(old.permissions())
}

/// The mode a new snapshot file is created with: its owner's alone.
#[cfg(unix)]
const NEW_FILE_MODE: u32 = 0o600;

/// How many symbolic links a save follows from the path it is given, as
/// the system's own resolution does (Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// The file `path` names: `path` itself unless it is a symbolic link, else
/// what the links lead to (a relative link read from its own directory);
/// the last step need not exist. A loop, or more than [`MAX_LINKS`] links,
/// is `SERIALIZE_FAIL`.
fn resolve_links(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = fs::read_link(&at).map_err(|e| {
                    save_error(path, &format!("reading the link {}", at.display()), Some(e))
                })?;
                at = match at.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(save_error(
        path,
        &format!("more than {MAX_LINKS} symbolic links (a loop?)"),
        None,
    ))
}

/// A hidden name unique within this process (pid + counter), so concurrent
/// saves of the same path never share a temporary file. A crash can leave
/// one behind; it starts with '.' and ends in ".tmp" so listings can skip it.
/// A later process with the same pid (a restarted container's, say) may
/// draw that name again: [`save_with`] then moves on to the next one.
fn temp_path(dir: &Path, file_name: &std::ffi::OsStr) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut name = std::ffi::OsString::from(".");
    name.push(file_name);
    name.push(format!(".{}.{n}.tmp", std::process::id()));
    dir.join(name)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

// Windows cannot open a directory as a file without extra flags; its rename
// (MoveFileEx with replace) is already journalled by NTFS.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

fn save_error(path: &Path, step: &str, e: Option<io::Error>) -> Error {
    let message = match e {
        Some(e) => format!("saving snapshot {}: {step}: {e}", path.display()),
        None => format!("saving snapshot {}: {step}", path.display()),
    };
    Error::new(ErrorKind::SerializeFail, message)
}
