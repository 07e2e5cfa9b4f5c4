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

/// [`save_atomic`] with the write step supplied by the caller, so tests can
/// inject a writer that fails part-way. On any failure the temporary file is
/// removed and `path` is left as it was.
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
    let tmp = temp_path(dir, file_name);

    // create_new: never truncate a file someone else is writing.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| save_error(path, &format!("creating {}", tmp.display()), Some(e)))?;
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
            &format!("syncing directory {} after the rename", dir.display()),
            Some(e),
        )
    })
}

/// Reads a whole snapshot file.
pub fn load(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| {
        Error::new(
            ErrorKind::DeserializeFail,
            format!("reading snapshot {}: {e}", path.display()),
        )
    })
}

/// A hidden name unique within this process (pid + counter), so concurrent
/// saves of the same path never share a temporary file. A crash can leave
/// one behind; it starts with '.' and ends in ".tmp" so listings can skip it.
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
