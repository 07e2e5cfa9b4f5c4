//! The committed format-1 journal fixture must decode, byte for byte, in
//! every later version of the library (docs/CONTRACT.md section 12: every
//! older version decodes for ever).
//!
//! `tests/data/journal_v1.bin` is two batches back to back, as a consumer
//! would store them: `encode_batch(1, &first_batch())` then
//! `encode_batch(13, &second_batch())`. Together they hold every record
//! variant. Regenerate it ONLY on a deliberate format bump, and then as a
//! new file (`journal_v2.bin` with a `write_journal_v2_fixture`), keeping
//! this file and its test unchanged so version 1 keeps decoding. Command:
//!
//! ```text
//! cargo test -p mooncake-meta-core --test journal_fixture -- --ignored write_journal_v1_fixture
//! ```
//!
//! The records are spelled out here, not generated, so nobody changes the
//! fixture by accident while editing a helper.

use mooncake_meta_core::journal::codec::{decode_batch_prefix, encode_batch};
use mooncake_meta_core::journal::*;
use mooncake_meta_core::{Pool, SoftPinIntent, MAX_INSTANT};
use std::path::PathBuf;

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/journal_v1.bin")
}

const T: u64 = 1_717_171_717_000;
const MEM: &str = "node-1/mem0";
const SSD: &str = "node-1/ssd0";

fn k(key: &str) -> RecordKey {
    RecordKey::new("default", key)
}

fn mem(id: u64, address: u64) -> PlacedReplica {
    PlacedReplica {
        id,
        place: Placement::Memory {
            segment: MEM.into(),
            address,
        },
    }
}

fn discarded(segment: &str, address: u64, len: u64, release_at: u64) -> DiscardedBuffer {
    DiscardedBuffer {
        buffer: BufferRef {
            segment: segment.into(),
            address,
            len,
        },
        release_at,
    }
}

/// Frozen: never edit (see the module doc). Sequences 1..=12.
fn first_batch() -> Vec<Record> {
    vec![
        Record::SegmentMounted {
            owner: 11,
            name: MEM.into(),
            pool: Pool::Memory,
            base: 0x7f00_0000_0000,
            size: 1 << 30,
        },
        Record::SegmentMounted {
            owner: 11,
            name: SSD.into(),
            pool: Pool::NofSsd,
            base: 0,
            size: 1 << 40,
        },
        Record::WriteStarted(Box::new(WriteStarted {
            key: k("layer0/kv/0001"),
            kind: StartKind::Put,
            size: 4096,
            writer: 0x0123_4567_89AB_CDEF,
            token: 1,
            put_start: T,
            seq: 1,
            hard_pin: false,
            group: Some("session-7".into()),
            pending: SoftPinIntent::Enable { ttl_ms: 1_800_000 },
            committed: None,
            replicas: vec![
                mem(1, 0x7f00_0000_0000),
                PlacedReplica {
                    id: 2,
                    place: Placement::NofSsd {
                        segment: SSD.into(),
                        address: 0,
                    },
                },
            ],
            discarded: vec![],
        })),
        Record::WriteEnded {
            key: k("layer0/kv/0001"),
            token: 1,
            at: T + 5,
            completed: vec![1, 2],
            commit: EndCommit::Committed(Some(T + 5 + 1_800_000)),
        },
        Record::WriteStarted(Box::new(WriteStarted {
            key: RecordKey::new("team-ü", "プロンプト/🧠"),
            kind: StartKind::UpsertResize,
            size: 1 << 20,
            writer: 7,
            token: 2,
            put_start: T + 10,
            seq: 2,
            hard_pin: true,
            group: None,
            pending: SoftPinIntent::Disable,
            committed: Some(MAX_INSTANT),
            replicas: vec![mem(3, 0x7f00_0010_0000)],
            discarded: vec![discarded(MEM, 0x7f00_0020_0000, 4096, T + 600_010)],
        })),
        Record::WriteReopened {
            key: k("layer0/kv/0001"),
            writer: 8,
            token: 3,
            put_start: T + 20,
            pending: SoftPinIntent::Preserve,
            reopened: vec![1, 2],
            discarded: vec![],
        },
        Record::WriteEnded {
            key: k("layer0/kv/0001"),
            token: 3,
            at: T + 21,
            completed: vec![1],
            commit: EndCommit::NotFired,
        },
        Record::WriteRevoked {
            key: RecordKey::new("team-ü", "プロンプト/🧠"),
            token: 2,
            revoked: vec![3],
            object_erased: true,
        },
        Record::WriteSwept {
            key: k("stale"),
            token: 9,
            removed: vec![10, 11],
            discarded: vec![discarded(MEM, 0x7f00_0030_0000, 64, T + 600_000)],
            object_erased: false,
        },
        Record::DiscardReleased {
            at: T + 600_010,
            buffers: vec![BufferRef {
                segment: MEM.into(),
                address: 0x7f00_0020_0000,
                len: 4096,
            }],
        },
        Record::CopyStarted {
            key: k("layer0/kv/0001"),
            source: 1,
            targets: vec![mem(12, 0x7f00_0040_0000)],
        },
        Record::TaskCompleted {
            key: k("layer0/kv/0001"),
            task: TaskKind::Copy,
            discarded: vec![],
        },
    ]
}

/// Frozen: never edit (see the module doc). Sequences 13..=27.
fn second_batch() -> Vec<Record> {
    vec![
        Record::MoveStarted {
            key: k("layer0/kv/0001"),
            source: 12,
            target: PlacedReplica {
                id: 13,
                place: Placement::NofSsd {
                    segment: SSD.into(),
                    address: 8192,
                },
            },
        },
        Record::TaskAbandoned {
            key: k("layer0/kv/0001"),
            task: TaskKind::Move,
            freed: vec![13],
            object_erased: false,
        },
        Record::LocalDiskAdded {
            key: k("on-disk"),
            replica_id: 14,
            client: 33,
            size: 1 << 16,
            created: Some(CreatedObject {
                put_start: T + 30,
                seq: 3,
                token: 4,
            }),
        },
        Record::PromotionStarted {
            key: k("on-disk"),
            target: mem(15, 0x7f00_0050_0000),
        },
        Record::TaskCompleted {
            key: k("on-disk"),
            task: TaskKind::Promotion,
            discarded: vec![discarded(SSD, 8192, 4096, T + 600_040)],
        },
        Record::Evicted {
            key: k("on-disk"),
            freed: vec![15],
            object_erased: false,
        },
        Record::PinNormalised {
            key: k("layer0/kv/0001"),
            deadline: T + 5 + 1_800_000,
        },
        Record::PinExpired {
            key: k("other"),
            deadline: T + 1,
        },
        Record::Removed { key: k("on-disk") },
        Record::GroupRetained {
            tenant: "default".into(),
            group: "session-7".into(),
            deadline: T + 3_600_000,
        },
        Record::RetentionExpired {
            tenant: "default".into(),
            group: "session-7".into(),
            deadline: T + 3_600_000,
        },
        Record::GroupReleased {
            tenant: "team-ü".into(),
            group: "batch".into(),
        },
        Record::Counters {
            next_replica_id: 50,
            next_write_token: 200,
            next_object_seq: 40,
        },
        Record::SegmentUnmounted {
            owner: 11,
            name: SSD.into(),
            replicas_dropped: 1,
            objects_erased: 0,
        },
        Record::Reset {
            image: b"\x89MCMETA\n(an opaque snapshot image)".to_vec(),
        },
    ]
}

fn fixture_bytes() -> Vec<u8> {
    let mut out = encode_batch(1, &first_batch()).unwrap();
    out.extend(encode_batch(13, &second_batch()).unwrap());
    out
}

#[test]
fn committed_v1_fixture_decodes_to_its_records() {
    let bytes = std::fs::read(fixture_path()).expect("tests/data/journal_v1.bin is committed");
    let (a, used) = decode_batch_prefix(&bytes).unwrap();
    assert_eq!(bytes[8..12], 1u32.to_le_bytes(), "the fixture is format 1");
    assert_eq!((a.first_seq, a.records), (1, first_batch()));
    let (b, rest) = decode_batch_prefix(&bytes[used..]).unwrap();
    assert_eq!((b.first_seq, b.records), (13, second_batch()));
    assert_eq!(used + rest, bytes.len());
    // The same records still encode to the same bytes: the encoding of
    // version 1 has not changed.
    assert_eq!(fixture_bytes(), bytes);
}

#[test]
fn the_fixture_holds_every_variant() {
    let mut names: Vec<&str> = first_batch()
        .iter()
        .chain(second_batch().iter())
        .map(Record::name)
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut all = Record::NAMES.to_vec();
    all.sort_unstable();
    assert_eq!(names, all);
}

#[test]
#[ignore = "writes tests/data/journal_v1.bin; only on a deliberate format bump"]
fn write_journal_v1_fixture() {
    let path = fixture_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, fixture_bytes()).unwrap();
}
