//! The committed format-v1 fixture must load, byte for byte, in every later
//! version of the library (docs/CONTRACT.md §6: snapshots outlive binaries).
//!
//! `tests/data/snapshot_v1.bin` is `encode(&fixture_image())`. Regenerate it
//! ONLY on a deliberate format bump, and then as a new file: add
//! `snapshot_v2.bin` (and a `write_snapshot_v2_fixture`), keep this file and
//! its test unchanged so v1 keeps loading. Command:
//!
//! ```text
//! cargo test --test snapshot_fixture -- --ignored write_snapshot_v1_fixture
//! ```
//!
//! The image is spelled out here, not shared with other tests, so nobody
//! changes the fixture by accident while editing a helper.

use mooncake_meta_core::snapshot::codec::{decode, encode, peek_created_at};
use mooncake_meta_core::snapshot::image::{
    GroupRecord, LocationRecord, ObjectRecord, ReplicaRecord, SegmentRecord, SnapshotImage,
};
use mooncake_meta_core::MAX_INSTANT;
use std::path::PathBuf;

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/snapshot_v1.bin")
}

fn seg(name: &str, owner: u64, pool: u8, base: u64, size: u64) -> SegmentRecord {
    SegmentRecord {
        name: name.into(),
        owner,
        pool,
        base,
        size,
    }
}

fn buf(id: u64, kind: u8, status: u8, segment: &str, address: u64, len: u64) -> ReplicaRecord {
    ReplicaRecord {
        id,
        kind,
        status,
        location: LocationRecord::Buffer {
            segment: segment.into(),
            address,
            len,
        },
    }
}

fn disk(id: u64, status: u8, client: u64) -> ReplicaRecord {
    ReplicaRecord {
        id,
        kind: 2,
        status,
        location: LocationRecord::LocalDisk { client },
    }
}

#[allow(clippy::too_many_arguments)]
fn obj(
    tenant: &str,
    key: &str,
    size: u64,
    lease: u64,
    soft_pin_deadline: Option<u64>,
    hard_pin: bool,
    group: Option<&str>,
    seq: u64,
    replicas: Vec<ReplicaRecord>,
) -> ObjectRecord {
    ObjectRecord {
        tenant: tenant.into(),
        key: key.into(),
        writer: 0x0123_4567_89AB_CDEF,
        size,
        put_start: 1_717_171_717_000 + seq,
        lease,
        soft_pin_deadline,
        hard_pin,
        group: group.map(Into::into),
        seq,
        write_token: 100 + seq,
        replicas,
    }
}

/// Frozen: never edit (see the module doc).
fn fixture_image() -> SnapshotImage {
    const T: u64 = 1_717_171_717_000;
    SnapshotImage {
        created_at: T + 60_000,
        wall_at_capture: None,
        journal_seq: 0,
        // Format 1 has no retention deadlines (added with format 3).
        retention: Vec::new(),
        next_replica_id: 50,
        next_write_token: 200,
        next_object_seq: 40,
        segments: vec![
            seg("node-1/mem0", 11, 0, 0x7f00_0000_0000, 1 << 30),
            seg("node-1/ssd0", 11, 1, 0, 1 << 40),
            seg("node-2/mem0", 22, 0, 0x7f80_0000_0000, 1 << 30),
        ],
        groups: vec![
            GroupRecord {
                tenant: "default".into(),
                name: "session-7".into(),
                lease: T + 10_000,
            },
            GroupRecord {
                tenant: "team-ü".into(),
                name: "batch".into(),
                lease: MAX_INSTANT,
            },
        ],
        objects: vec![
            obj(
                "default",
                "layer0/kv/0001",
                4096,
                T + 10_000,
                Some(T + 1_800_000),
                false,
                Some("session-7"),
                1,
                vec![
                    buf(1, 0, 1, "node-1/mem0", 0x7f00_0000_0000, 4096),
                    buf(2, 1, 1, "node-1/ssd0", 0, 4096),
                ],
            ),
            obj(
                "default",
                "layer0/kv/0002",
                4096,
                0,
                None,
                true,
                Some("session-7"),
                2,
                vec![
                    buf(3, 0, 0, "node-2/mem0", 0x7f80_0000_0000, 4096),
                    disk(4, 1, 33),
                    disk(5, 0, 34),
                ],
            ),
            obj(
                "default",
                "saturated",
                1,
                MAX_INSTANT,
                Some(MAX_INSTANT),
                false,
                None,
                3,
                vec![buf(6, 1, 0, "node-1/ssd0", 4096, 1)],
            ),
            obj(
                "team-ü",
                "プロンプト/🧠",
                1 << 20,
                T,
                Some(T - 1),
                true,
                Some("batch"),
                39,
                vec![
                    buf(7, 0, 1, "node-1/mem0", 0x7f00_0010_0000, 1 << 20),
                    buf(49, 0, 1, "node-2/mem0", 0x7f80_0010_0000, 1 << 20),
                ],
            ),
        ],
        ..Default::default()
    }
}

#[test]
fn committed_v1_fixture_decodes_to_the_fixture_image() {
    let bytes = std::fs::read(fixture_path()).expect("tests/data/snapshot_v1.bin is committed");
    assert_eq!(bytes[8..12], 1u32.to_le_bytes(), "the fixture is format v1");
    assert_eq!(decode(&bytes).unwrap(), fixture_image());
    assert_eq!(peek_created_at(&bytes).unwrap(), fixture_image().created_at);
    // An image without a wall record encodes in format 1, byte for byte.
    assert_eq!(encode(&fixture_image()), bytes);
}

#[test]
#[ignore = "writes tests/data/snapshot_v1.bin; only on a deliberate format bump"]
fn write_snapshot_v1_fixture() {
    assert_eq!(
        fixture_image().wall_at_capture,
        None,
        "an image without a wall record is what encodes in format 1"
    );
    let path = fixture_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, encode(&fixture_image())).unwrap();
}
