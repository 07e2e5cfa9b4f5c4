//! The committed format-5 fixture (a snapshot carrying writes in flight
//! with their pending intents, a task and discarded buffers) must load,
//! byte for byte, in every later version of the library (docs/CONTRACT.md
//! §6: snapshots outlive binaries), and restored on a standby it must give
//! back that state exactly (§12.3).
//!
//! `tests/data/snapshot_v5.bin` is `encode(&fixture_image())`. Regenerate
//! it ONLY on a deliberate format bump, and then as a new file, keeping
//! this one and its test unchanged. Command:
//!
//! ```text
//! cargo test -p mooncake-meta-core --test snapshot_fixture_v5 -- --ignored write_snapshot_v5_fixture
//! ```
//!
//! The image is spelled out here, not shared with other tests, so nobody
//! changes the fixture by accident while editing a helper.

use mooncake_meta_core::snapshot::codec::{decode, encode, peek_created_at};
use mooncake_meta_core::snapshot::image::{
    DiscardedRecord, InFlightRecord, LocationRecord, ObjectRecord, ReplicaRecord, SegmentRecord,
    SnapshotImage, SoftPinIntent, TaskImage, TaskRecord,
};
use mooncake_meta_core::{ClockSource, Key, Master, MasterConfig, ReplicaSelector};
use std::path::PathBuf;

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/snapshot_v5.bin")
}

const T: u64 = 1_796_169_600_000;
const MEM: u64 = 0x7f00_0000_0000;

fn mem(id: u64, status: u8, address: u64, len: u64) -> ReplicaRecord {
    ReplicaRecord {
        id,
        kind: 0,
        status,
        location: LocationRecord::Buffer {
            segment: "node-1/mem0".into(),
            address,
            len,
        },
    }
}

/// Frozen: never edit (see the module doc).
fn fixture_image() -> SnapshotImage {
    SnapshotImage {
        created_at: T,
        wall_at_capture: Some(T - 250),
        journal_seq: 9_001,
        next_replica_id: 80,
        next_write_token: 400,
        next_object_seq: 70,
        segments: vec![SegmentRecord {
            name: "node-1/mem0".into(),
            owner: 11,
            pool: 0,
            base: MEM,
            size: 1 << 30,
        }],
        groups: vec![],
        retention: vec![],
        objects: vec![
            ObjectRecord {
                tenant: "default".into(),
                key: "copied".into(),
                writer: 5,
                size: 4096,
                put_start: T - 30,
                lease: T + 5_000,
                soft_pin_deadline: None,
                hard_pin: false,
                group: None,
                seq: 60,
                write_token: 300,
                replicas: vec![mem(70, 1, MEM, 4096), mem(71, 0, MEM + 4096, 4096)],
            },
            ObjectRecord {
                tenant: "default".into(),
                key: "writing".into(),
                writer: 0x0123_4567_89AB_CDEF,
                size: 8192,
                put_start: T - 10,
                lease: 0,
                soft_pin_deadline: None,
                hard_pin: false,
                group: None,
                seq: 61,
                write_token: 301,
                replicas: vec![mem(72, 0, MEM + 3 * 4096, 8192)],
            },
        ],
        in_flight: vec![InFlightRecord {
            tenant: "default".into(),
            key: "writing".into(),
            pending: Some(SoftPinIntent::Enable { ttl_ms: 600_000 }),
        }],
        tasks: vec![TaskRecord {
            tenant: "default".into(),
            key: "copied".into(),
            task: TaskImage::Copy {
                source: 70,
                targets: vec![71],
            },
        }],
        discarded: vec![DiscardedRecord {
            segment: "node-1/mem0".into(),
            address: MEM + 2 * 4096,
            len: 4096,
            release_at: T + 30_000,
            replica: 69,
        }],
    }
}

#[test]
fn committed_v5_fixture_decodes_to_the_fixture_image() {
    let bytes = std::fs::read(fixture_path()).expect("tests/data/snapshot_v5.bin is committed");
    assert_eq!(bytes[8..12], 5u32.to_le_bytes(), "the fixture is format 5");
    assert_eq!(decode(&bytes).unwrap(), fixture_image());
    assert_eq!(peek_created_at(&bytes).unwrap(), T);
    assert_eq!(encode(&fixture_image()), bytes);
}

#[test]
fn committed_v5_fixture_restores_exactly_on_a_standby() {
    let bytes = std::fs::read(fixture_path()).expect("tests/data/snapshot_v5.bin is committed");
    let m = Master::new(MasterConfig {
        clock: ClockSource::Manual { start_ms: T },
        standby: true,
        ..MasterConfig::deterministic(T)
    })
    .unwrap();
    m.restore(&bytes).unwrap();
    assert_eq!(m.applied_seq(), 9_001);
    // A snapshot of the standby is the fixture (the capture instant aside).
    let mut again = decode(&m.snapshot().unwrap()).unwrap();
    again.created_at = T;
    again.wall_at_capture = Some(T - 250);
    assert_eq!(again, fixture_image());
    let d = m.debug_dump();
    assert_eq!(
        d.discarded,
        vec![("node-1/mem0".to_string(), MEM + 2 * 4096, 4096, T + 30_000)]
    );
    assert_eq!(d.objects[0].task.as_deref(), Some("copy 70 -> [71]"));
    assert_eq!(d.objects[0].roles, vec![(70, false), (71, true)]);
    m.check_invariants().unwrap();
    // Promoted, the write Ends with its token and commits its pending pin.
    m.set_time(T + 100).unwrap();
    assert_eq!(m.promote().unwrap().writes_in_flight, 1);
    m.put_end(
        0x0123_4567_89AB_CDEF,
        Key::new("writing"),
        ReplicaSelector::All,
        Some(301),
    )
    .unwrap();
    assert_eq!(
        m.soft_pin_deadline(Key::new("writing")).unwrap(),
        Some(T + 100 + 600_000)
    );
    m.copy_end(Key::new("copied")).unwrap();
    assert_eq!(m.readable_count(Key::new("copied")), 2);
    m.check_invariants().unwrap();
}

#[test]
fn committed_v5_fixture_restores_on_a_primary_without_its_live_state() {
    // §6: a restore on a primary drops PROCESSING replicas (the write in
    // flight and the task with them) and keeps no discarded buffer.
    let bytes = std::fs::read(fixture_path()).expect("tests/data/snapshot_v5.bin is committed");
    let m = Master::new(MasterConfig {
        clock: ClockSource::Manual { start_ms: T },
        ..MasterConfig::deterministic(T)
    })
    .unwrap();
    m.set_wall_time(T - 250).unwrap();
    let r = m.restore(&bytes).unwrap();
    assert_eq!((r.objects_restored, r.replicas_dropped), (1, 2));
    let d = m.debug_dump();
    assert!(d.discarded.is_empty());
    assert!(d
        .objects
        .iter()
        .all(|o| o.in_flight.is_none() && o.task.is_none()));
    assert_eq!(m.metrics().memory_allocated_bytes, 4096);
    m.check_invariants().unwrap();
}

#[test]
#[ignore = "writes tests/data/snapshot_v5.bin; only on a deliberate format bump"]
fn write_snapshot_v5_fixture() {
    let path = fixture_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, encode(&fixture_image())).unwrap();
}
