//! Snapshot and restore through the safe layer: in memory, through files,
//! newest valid candidate first, and a corrupt snapshot refused.

mod common;

use common::*;
use mooncake_meta_sys::safe::*;
use std::path::PathBuf;

/// A master with one soft-pinned, one hard-pinned and one leased object.
fn populated() -> Master {
    let m = master();
    put(&m, "pinned", &enable(Some(60_000)));
    put(
        &m,
        "hard",
        &WriteConfig {
            hard_pin: true,
            ..WriteConfig::default()
        },
    );
    put(&m, "leased", &WriteConfig::default());
    assert!(m.exist(Key::new("leased")).unwrap());
    m
}

/// A fresh path under the system temp dir, removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        TempPath(std::env::temp_dir().join(format!(
            "mooncake-meta-sys-{}-{nanos}-{name}",
            std::process::id()
        )))
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

// A restored master holds the same objects, replicas and deadlines, and snapshots to the same bytes.
#[test]
fn snapshot_round_trip_keeps_objects_and_deadlines() {
    let a = populated();
    let image = a.snapshot().unwrap();
    assert!(!image.is_empty());

    let b = Master::new(MasterConfig::deterministic(T0)).unwrap();
    let report = b.restore(&image).unwrap();
    assert_eq!(report.objects_restored, 3);
    assert_eq!(report.soft_pins_restored, 1);
    assert_eq!(report.created_at, T0);
    assert_eq!(&b.snapshot().unwrap()[..], &image[..]);

    assert_eq!(b.key_count(), 3);
    assert_eq!(
        b.soft_pin_deadline(Key::new("pinned")).unwrap(),
        Some(T0 + 60_000)
    );
    for key in ["pinned", "hard", "leased"] {
        let want: Vec<(u64, Location, ReplicaStatus)> = a
            .get_replica_list(Key::new(key))
            .unwrap()
            .iter()
            .map(|r| (r.id, r.location, r.status))
            .collect();
        let got: Vec<(u64, Location, ReplicaStatus)> = b
            .get_replica_list(Key::new(key))
            .unwrap()
            .iter()
            .map(|r| (r.id, r.location, r.status))
            .collect();
        assert_eq!(got, want, "{key}");
    }
    b.check_invariants().unwrap();
}

// Saved files restore too; the newest candidate that validates wins.
#[test]
fn file_candidates_restore_the_newest() {
    let a = populated();
    let older = TempPath::new("older");
    a.snapshot_save(&older.0).unwrap();
    a.advance_time(1_000).unwrap();
    put(&a, "later", &enable(Some(60_000)));
    let newer = TempPath::new("newer");
    a.snapshot_save(&newer.0).unwrap();

    let b = Master::new(MasterConfig::deterministic(T0 + 1_000)).unwrap();
    let report = b.restore_files(&[&older.0, &newer.0]).unwrap();
    assert_eq!(report.candidate, 1); // by creation instant, not list order
    assert_eq!(report.created_at, T0 + 1_000);
    assert!(b.exist(Key::new("later")).unwrap());

    // A corrupt newer candidate is skipped for the older valid one.
    let image = a.snapshot().unwrap();
    let mut corrupt = image.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    let old_image = std::fs::read(&older.0).unwrap();
    let c = Master::new(MasterConfig::deterministic(T0 + 1_000)).unwrap();
    let report = c.restore_candidates(&[&corrupt, &old_image]).unwrap();
    assert_eq!((report.candidate, report.candidates_rejected), (1, 1));
    assert!(!c.exist(Key::new("later")).unwrap());
}

// A snapshot that does not validate is DESERIALIZE_FAIL and leaves the master as it was.
#[test]
fn corrupt_snapshot_is_refused_and_the_master_unchanged() {
    let a = populated();
    let mut image = a.snapshot().unwrap();
    image.truncate(image.len() / 2);
    let b = master();
    put(&b, "mine", &WriteConfig::default());
    let err = b.restore(&image).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeserializeFail);
    assert!(
        err.message().starts_with("mooncake_meta_restore: "),
        "{err}"
    );
    assert_eq!(b.key_count(), 1);
    assert!(b.exist(Key::new("mine")).unwrap());
}
