//! Snapshot files: an atomic save leaves the old file or the new one, never
//! a torn one, and no temporary file behind; I/O errors carry the path.

use mooncake_meta_core::snapshot::file::{load, save_atomic, save_with};
use mooncake_meta_core::ErrorKind;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A fresh directory per test under cargo's per-target temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("snapshot_file-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Writes the first `n` bytes, then fails like a full disk would.
fn fail_after(n: usize) -> impl FnMut(&mut File, &[u8]) -> io::Result<()> {
    move |file, bytes| {
        file.write_all(&bytes[..n.min(bytes.len())])?;
        Err(io::Error::other(format!(
            "injected failure after {n} bytes"
        )))
    }
}

#[test]
fn save_then_load_round_trips_and_overwrites() {
    let dir = scratch("round-trip");
    let path = dir.join("meta.snap");
    save_atomic(&path, b"first version").unwrap();
    assert_eq!(load(&path).unwrap(), b"first version");
    save_atomic(&path, b"second").unwrap();
    assert_eq!(load(&path).unwrap(), b"second");
    save_atomic(&path, b"").unwrap();
    assert_eq!(load(&path).unwrap(), b"");
    assert_eq!(listing(&dir), ["meta.snap"]);
}

#[test]
fn failing_writer_keeps_the_previous_file_and_leaves_no_temp_file() {
    let dir = scratch("fail-after-n");
    let path = dir.join("meta.snap");
    let old = vec![0xAA; 4096];
    let new = vec![0x55; 10_000];
    save_atomic(&path, &old).unwrap();
    for n in [0, 1, 17, 4096, 9_999, 10_000] {
        let err = save_with(&path, &new, fail_after(n)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::SerializeFail);
        assert!(err.message().contains(&path.display().to_string()), "{err}");
        assert!(
            err.message()
                .contains(&format!("injected failure after {n} bytes")),
            "{err}"
        );
        assert_eq!(load(&path).unwrap(), old, "n = {n}");
        assert_eq!(listing(&dir), ["meta.snap"], "n = {n}");
    }
}

#[test]
fn failing_first_save_creates_nothing() {
    let dir = scratch("fail-first");
    let path = dir.join("meta.snap");
    save_with(&path, b"abc", fail_after(2)).unwrap_err();
    assert!(listing(&dir).is_empty());
    assert_eq!(load(&path).unwrap_err().kind(), ErrorKind::DeserializeFail);
}

#[test]
fn save_into_a_missing_directory_names_the_path() {
    let dir = scratch("missing-dir");
    let path = dir.join("no/such/dir/meta.snap");
    let err = save_atomic(&path, b"x").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SerializeFail);
    assert!(err.message().contains(&path.display().to_string()), "{err}");
    assert!(err.message().contains("os error"), "{err}");
}

#[test]
fn save_to_a_path_without_file_name_fails() {
    let err = save_atomic(Path::new("/"), b"x").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SerializeFail);
}

#[test]
fn load_of_a_missing_file_names_the_path_and_os_error() {
    let dir = scratch("missing-file");
    let path = dir.join("absent.snap");
    let err = load(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeserializeFail);
    assert!(err.message().contains(&path.display().to_string()), "{err}");
    assert!(err.message().contains("os error"), "{err}");
}

// Only regular files are read: a device that never ends (`/dev/zero`)
// would grow memory until the process aborts, opening a pipe no one writes
// to would block for ever, and a directory is no snapshot. Each is
// DESERIALIZE_FAIL naming the path, before a byte is read.
#[test]
fn load_refuses_what_is_not_a_regular_file() {
    let dir = scratch("not-regular");
    let mut paths = vec![dir.clone()];
    #[cfg(unix)]
    {
        paths.push(PathBuf::from("/dev/zero"));
        // A pipe no one writes to: opening it for reading would block.
        let fifo = dir.join("fifo.snap");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        paths.push(fifo);
    }
    for path in paths {
        let err = load(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DeserializeFail, "{path:?}");
        assert!(err.message().contains(&path.display().to_string()), "{err}");
        assert!(err.message().contains("not a regular file"), "{err}");
    }
    // A regular file, empty or not, is read whole.
    let path = dir.join("x.snap");
    fs::write(&path, b"").unwrap();
    assert_eq!(load(&path).unwrap(), b"");
    fs::write(&path, b"abc").unwrap();
    assert_eq!(load(&path).unwrap(), b"abc");
}

#[test]
fn save_over_a_directory_fails_and_cleans_up() {
    // rename() cannot replace a non-empty directory: the error path after a
    // complete write must still remove the temporary file.
    let dir = scratch("over-dir");
    let path = dir.join("taken");
    fs::create_dir_all(path.join("child")).unwrap();
    let err = save_atomic(&path, b"x").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SerializeFail);
    assert!(err.message().contains("renaming"), "{err}");
    assert_eq!(listing(&dir), ["taken"]);
}

/// What a crashed process with this process's pid left behind: the
/// temporary files of `name` numbered `0..n` (the names a save of this
/// process draws, from a per-process counter).
fn leftovers(dir: &Path, name: &str, n: u64) -> Vec<String> {
    let names: Vec<String> = (0..n)
        .map(|i| format!(".{name}.{}.{i}.tmp", std::process::id()))
        .collect();
    for f in &names {
        fs::write(dir.join(f), b"torn").unwrap();
    }
    names
}

#[test]
fn a_temporary_file_a_crashed_process_left_is_skipped_not_overwritten() {
    // A restarted container often gets its old pid back: the next save may
    // draw the name of a temporary file the crash left. It moves on to the
    // next name. The counter behind the names is the whole process's: this
    // binary saves fewer than 32 times besides this test, so the names
    // drawn first here are among the leftovers.
    let dir = scratch("leftover");
    let path = dir.join("meta.snap");
    let mut expected = leftovers(&dir, "meta.snap", 64);
    save_atomic(&path, b"first").unwrap();
    save_atomic(&path, b"second").unwrap();
    assert_eq!(load(&path).unwrap(), b"second");
    expected.push("meta.snap".into());
    expected.sort();
    assert_eq!(listing(&dir), expected, "no temporary file of its own left");
    for f in expected.iter().filter(|f| f.ends_with(".tmp")) {
        assert_eq!(fs::read(dir.join(f)).unwrap(), b"torn", "{f} untouched");
    }

    // The names tried are bounded (1024): past them the save fails, with
    // the path and the reason, leaving every file as it was. (The counter
    // is below 128 here, the saves above and the other tests' included, so
    // each of the 1024 names tried is taken.)
    let dir = scratch("all-taken");
    let path = dir.join("meta.snap");
    fs::write(&path, b"old").unwrap();
    let mut expected = leftovers(&dir, "meta.snap", 128 + 1024);
    let err = save_atomic(&path, b"new").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SerializeFail);
    assert!(err.message().contains(&path.display().to_string()), "{err}");
    assert!(
        err.message()
            .contains("(the last of 1024 temporary names, all taken)"),
        "{err}"
    );
    assert_eq!(load(&path).unwrap(), b"old");
    expected.push("meta.snap".into());
    expected.sort();
    assert_eq!(listing(&dir), expected);
}
