//! Snapshot files on disk: [`save_atomic`] replaces a file so that a crash or
//! a failed write leaves either the old or the new snapshot, never a torn
//! one; [`load`] reads a whole file for [`super::codec::decode`].

use crate::error::{Error, ErrorKind, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory (rename is only atomic within one file system), written in
/// full, fsynced, renamed over `path`, then the directory fsynced so the
/// rename itself survives a crash.
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
    let Some(file_name) = path.file_name() else {
        return Err(save_error(path, "path has no file name", None));
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };

    // create_new: never truncate a file someone else is writing, nor one a
    // crashed process left; a name that is taken is skipped for the next.
    let mut tries = 0;
    let (tmp, mut file) = loop {
        let tmp = temp_path(dir, file_name);
        tries += 1;
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
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
    let written = write(&mut file, bytes)
        .map_err(|e| (format!("writing {}", tmp.display()), e))
        .and_then(|()| {
            file.sync_all()
                .map_err(|e| (format!("syncing {}", tmp.display()), e))
        });
    drop(file);
    if let Err((step, e)) = written {
        let _ = fs::remove_file(&tmp);
        return Err(save_error(path, &step, Some(e)));
    }
    if let Err(e) = fs::rename(&tmp, path) {
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
/// end), read up to the length it had when opened, into memory reserved
/// for that length up front (too large for this process: an error, never
/// an abort). Every failure is `DESERIALIZE_FAIL` naming the path.
pub fn load(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let fail = |what: String| {
        Error::new(
            ErrorKind::DeserializeFail,
            format!("reading snapshot {}: {what}", path.display()),
        )
    };
    // Opened without blocking: opening a pipe no one writes to would wait
    // for ever, before the check below could refuse it (the flag changes
    // nothing for a regular file).
    let mut open = fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, libc::O_NONBLOCK);
    let file = open.open(path).map_err(|e| fail(e.to_string()))?;
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
    let room = usize::try_from(len)
        .ok()
        .and_then(|n| n.checked_add(1))
        .ok_or_else(|| fail(format!("{len} bytes do not fit in memory")))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(room)
        .map_err(|_| fail(format!("no memory for its {len} bytes")))?;
    // One byte past the length tells a file that grew while read.
    file.take(len.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > len {
        return Err(fail(format!(
            "it grew past its {len} bytes while being read (a snapshot is written \
             whole and renamed into place: is something appending to it?)"
        )));
    }
    Ok(bytes)
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
