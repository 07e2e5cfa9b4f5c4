//! The committed format-4 fixture (a snapshot carrying a change-journal
//! sequence) must load, byte for byte, in every later version of the
//! library (docs/CONTRACT.md §6: snapshots outlive binaries; §12: a
//! snapshot carries the last journal sequence it includes).
//!
//! `tests/data/snapshot_v4.bin` is `encode(&fixture_image())`. Regenerate
//! it ONLY on a deliberate format bump, and then as a new file, keeping
//! this one and its test unchanged. Command:
//!
//! ```text
//! cargo test -p mooncake-meta-core --test snapshot_fixture_v4 -- --ignored write_snapshot_v4_fixture
//! ```
//!
//! The image is spelled out here, not shared with other tests, so nobody
//! changes the fixture by accident while editing a helper.

use mooncake_meta_core::snapshot::codec::{decode, encode, peek_created_at};
use mooncake_meta_core::snapshot::image::{
    GroupRecord, LocationRecord, ObjectRecord, ReplicaRecord, RetentionRecord, SegmentRecord,
    SnapshotImage,
};
use mooncake_meta_core::{ClockSource, Key, Master, MasterConfig, MAX_INSTANT};
use std::path::PathBuf;

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/snapshot_v4.bin")
}

const T: u64 = 1_767_225_600_000;

/// Frozen: never edit (see the module doc).
fn fixture_image() -> SnapshotImage {
    SnapshotImage {
        created_at: T,
        wall_at_capture: Some(T - 250),
        journal_seq: 4_242,
        next_replica_id: 60,
        next_write_token: 300,
        next_object_seq: 50,
        segments: vec![
            SegmentRecord {
                name: "node-1/mem0".into(),
                owner: 11,
                pool: 0,
                base: 0x7f00_0000_0000,
                size: 1 << 30,
            },
            SegmentRecord {
                name: "node-1/ssd0".into(),
                owner: 11,
                pool: 1,
                base: 0,
                size: 1 << 40,
            },
        ],
        groups: vec![GroupRecord {
            tenant: "default".into(),
            name: "session-7".into(),
            lease: T + 5_000,
        }],
        retention: vec![RetentionRecord {
            tenant: "default".into(),
            group: "session-7".into(),
            deadline: T + 3_600_000,
        }],
        objects: vec![
            ObjectRecord {
                tenant: "default".into(),
                key: "layer0/kv/0001".into(),
                writer: 0x0123_4567_89AB_CDEF,
                size: 4096,
                put_start: T - 10,
                lease: T + 5_000,
                soft_pin_deadline: Some(T + 1_800_000),
                hard_pin: false,
                group: Some("session-7".into()),
                seq: 41,
                write_token: 201,
                replicas: vec![
                    ReplicaRecord {
                        id: 51,
                        kind: 0,
                        status: 1,
                        location: LocationRecord::Buffer {
                            segment: "node-1/mem0".into(),
                            address: 0x7f00_0000_0000,
                            len: 4096,
                        },
                    },
                    ReplicaRecord {
                        id: 52,
                        kind: 1,
                        status: 1,
                        location: LocationRecord::Buffer {
                            segment: "node-1/ssd0".into(),
                            address: 0,
                            len: 4096,
                        },
                    },
                ],
            },
            ObjectRecord {
                tenant: "team-ü".into(),
                key: "プロンプト/🧠".into(),
                writer: 7,
                size: 1 << 16,
                put_start: T - 20,
                lease: 0,
                soft_pin_deadline: Some(MAX_INSTANT),
                hard_pin: true,
                group: None,
                seq: 42,
                write_token: 202,
                replicas: vec![ReplicaRecord {
                    id: 53,
                    kind: 2,
                    status: 1,
                    location: LocationRecord::LocalDisk { client: 33 },
                }],
            },
        ],
        ..Default::default()
    }
}

#[test]
fn committed_v4_fixture_decodes_to_the_fixture_image() {
    let bytes = std::fs::read(fixture_path()).expect("tests/data/snapshot_v4.bin is committed");
    assert_eq!(bytes[8..12], 4u32.to_le_bytes(), "the fixture is format 4");
    assert_eq!(decode(&bytes).unwrap(), fixture_image());
    assert_eq!(peek_created_at(&bytes).unwrap(), T);
    // An image with a journal sequence encodes in format 4, byte for byte.
    assert_eq!(encode(&fixture_image()), bytes);
}

#[test]
fn committed_v4_fixture_restores() {
    let bytes = std::fs::read(fixture_path()).expect("tests/data/snapshot_v4.bin is committed");
    let m = Master::new(MasterConfig {
        clock: ClockSource::Manual { start_ms: T },
        ..MasterConfig::deterministic(T)
    })
    .unwrap();
    m.set_wall_time(T - 250).unwrap();
    let report = m.restore(&bytes).unwrap();
    assert_eq!((report.objects_restored, report.clock_shift_ms), (2, 0));
    assert!(m.exist(Key::new("layer0/kv/0001")).unwrap());
    assert_eq!(
        m.soft_pin_deadline(Key::scoped("team-ü", "プロンプト/🧠"))
            .unwrap(),
        Some(MAX_INSTANT)
    );
    m.check_invariants().unwrap();
}

#[test]
#[ignore = "writes tests/data/snapshot_v4.bin; only on a deliberate format bump"]
fn write_snapshot_v4_fixture() {
    let path = fixture_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, encode(&fixture_image())).unwrap();
}
