//! Snapshot files: an atomic save leaves the old file or the new one, never
//! a torn one, and no temporary file behind; I/O errors carry the path.

use mooncake_meta_core::snapshot::file::{load, save_atomic, save_with};
use mooncake_meta_core::{ErrorKind, Master, MasterConfig, Pool, SegmentSpec};
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
    assert_eq!(fs::read(&path).unwrap(), b"first version");
    save_atomic(&path, b"second").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second");
    save_atomic(&path, b"").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"");
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
        assert_eq!(fs::read(&path).unwrap(), old, "n = {n}");
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
    // A regular file that is a snapshot is read whole.
    let path = dir.join("x.snap");
    let snap = snapshot();
    fs::write(&path, &snap).unwrap();
    assert_eq!(load(&path).unwrap(), snap);
}

/// A snapshot of a master holding one segment.
fn snapshot() -> Vec<u8> {
    let m = Master::new(MasterConfig::deterministic(1_000)).unwrap();
    m.mount_segment(
        1,
        &SegmentSpec {
            name: "mem".into(),
            base: 1 << 40,
            size: 1 << 20,
            pool: Pool::Memory,
        },
    )
    .unwrap();
    m.snapshot().unwrap()
}

// A file is read only once its header says it is a snapshot of exactly
// the file's length: a large file that is none (a sparse GiB of zeros
// here) costs its header, never its length in memory; a short one, a
// header that declares another length, or another magic is refused so too,
// naming the path and the reason.
#[test]
fn load_reads_only_the_header_of_what_is_no_snapshot() {
    let dir = scratch("header-first");
    let big = dir.join("big.snap");
    File::create(&big).unwrap().set_len(1 << 30).unwrap();
    let snap = snapshot();
    let mut longer = snap.clone();
    longer.push(0);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "truncated header: 0 of 28 bytes"),
        ("short", b"abc".to_vec(), "truncated header: 3 of 28 bytes"),
        ("cut", snap[..snap.len() - 1].to_vec(), "truncated payload"),
        ("longer", longer, "1 trailing bytes"),
        ("other", vec![0x55; 4096], "bad magic"),
    ];
    let rss = || {
        fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0)
    };
    let before = rss();
    // (A length, not the bytes, in the message if it ever loads.)
    let err = load(&big).map(|b| b.len()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeserializeFail);
    assert!(err.message().contains("bad magic"), "{err}");
    assert!(err.message().contains(&big.display().to_string()), "{err}");
    // The peak grew by far less than the file (1 GiB = 1 048 576 kB).
    assert!(
        rss() < before + 64 * 1024,
        "peak {} kB -> {} kB",
        before,
        rss()
    );
    for (name, bytes, reason) in cases {
        let path = dir.join(name);
        fs::write(&path, &bytes).unwrap();
        let err = load(&path).map(|b| b.len()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DeserializeFail, "{name}");
        assert!(err.message().contains(reason), "{name}: {err}");
        assert!(err.message().contains(&path.display().to_string()), "{err}");
    }
}

// A save replaces the file the path names: through a symbolic link (the
// link stays, relative or absolute, chained), and only a regular file: a
// pipe, a device or a directory is refused before anything is written,
// and is still there after.
#[cfg(unix)]
#[test]
fn save_replaces_the_file_a_link_names_and_only_a_regular_file() {
    use std::os::unix::fs::{symlink, FileTypeExt};
    let dir = scratch("links");
    fs::create_dir(dir.join("vol")).unwrap();
    let real = dir.join("vol/real.snap");
    save_atomic(&real, b"old").unwrap();
    symlink("vol/real.snap", dir.join("rel.snap")).unwrap();
    symlink(dir.join("rel.snap"), dir.join("chain.snap")).unwrap();
    save_atomic(&dir.join("rel.snap"), b"new").unwrap();
    assert_eq!(fs::read(&real).unwrap(), b"new");
    save_atomic(&dir.join("chain.snap"), b"newer").unwrap();
    assert_eq!(fs::read(&real).unwrap(), b"newer");
    for link in ["rel.snap", "chain.snap"] {
        let meta = fs::symlink_metadata(dir.join(link)).unwrap();
        assert!(meta.file_type().is_symlink(), "{link} is still a link");
    }
    assert_eq!(listing(&dir.join("vol")), ["real.snap"]);
    // A link to a file not there yet: the file is made where it points.
    symlink("vol/later.snap", dir.join("dangling.snap")).unwrap();
    save_atomic(&dir.join("dangling.snap"), b"first").unwrap();
    assert_eq!(fs::read(dir.join("vol/later.snap")).unwrap(), b"first");
    // A loop is refused.
    symlink("loop-b", dir.join("loop-a")).unwrap();
    symlink("loop-a", dir.join("loop-b")).unwrap();
    let err = save_atomic(&dir.join("loop-a"), b"x").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SerializeFail);
    assert!(err.message().contains("symbolic links"), "{err}");

    let fifo = dir.join("pipe.snap");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    symlink("pipe.snap", dir.join("to-pipe.snap")).unwrap();
    fs::create_dir(dir.join("emptydir")).unwrap();
    for (name, what) in [
        ("pipe.snap", "a device, pipe or socket"),
        ("to-pipe.snap", "a device, pipe or socket"),
        ("emptydir", "a directory"),
    ] {
        let err = save_atomic(&dir.join(name), b"x").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::SerializeFail, "{name}");
        assert!(err.message().contains("is not a regular file"), "{err}");
        assert!(err.message().contains(what), "{err}");
    }
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(fs::metadata(dir.join("emptydir")).unwrap().is_dir());
}

// A snapshot holds every tenant's keys: a new file is its owner's alone,
// and a replaced file's read/write/execute bits carry over (wider or
// narrower), never its set-user-ID, set-group-ID or sticky bit.
#[cfg(unix)]
#[test]
fn save_keeps_the_replaced_files_permissions_and_makes_new_ones_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("mode");
    let path = dir.join("meta.snap");
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    save_atomic(&path, b"one").unwrap();
    assert_eq!(mode(&path) & 0o077, 0, "new: {:o}", mode(&path));
    for bits in [0o640, 0o600, 0o644, 0o400] {
        fs::set_permissions(&path, fs::Permissions::from_mode(bits)).unwrap();
        save_atomic(&path, b"two").unwrap();
        assert_eq!(mode(&path), bits);
        assert_eq!(fs::read(&path).unwrap(), b"two");
    }
    // Never the set-user-ID, set-group-ID or sticky bit.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o6755)).unwrap();
    save_atomic(&path, b"three").unwrap();
    let full = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(full, 0o755);
}

// The owner and group carry over too where the saver may set them (here
// as root): a group the old file let read keeps reading, and the saver's
// own group is not let in.
#[cfg(unix)]
#[test]
fn save_keeps_the_replaced_files_owner_and_group() {
    use std::os::unix::fs::{chown, MetadataExt, PermissionsExt};
    // SAFETY: no arguments, no memory.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving a file away needs root");
        return;
    }
    let path = scratch("owner").join("meta.snap");
    save_atomic(&path, b"one").unwrap();
    chown(&path, Some(1234), Some(5678)).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    save_atomic(&path, b"two").unwrap();
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(
        (meta.uid(), meta.gid(), meta.mode() & 0o7777),
        (1234, 5678, 0o640)
    );
    assert_eq!(fs::read(&path).unwrap(), b"two");
}

#[test]
fn save_over_a_directory_fails_and_cleans_up() {
    // A directory is no snapshot file: refused before a temporary file is
    // made, so nothing is left behind.
    let dir = scratch("over-dir");
    let path = dir.join("taken");
    fs::create_dir_all(path.join("child")).unwrap();
    let err = save_atomic(&path, b"x").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SerializeFail);
    assert!(
        err.message()
            .contains("is not a regular file (a directory)"),
        "{err}"
    );
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
    assert_eq!(fs::read(&path).unwrap(), b"second");
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
    assert_eq!(fs::read(&path).unwrap(), b"old");
    expected.push("meta.snap".into());
    expected.sort();
    assert_eq!(listing(&dir), expected);
}
