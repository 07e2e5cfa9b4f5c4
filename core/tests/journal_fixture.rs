//! The committed format-1 to format-4 journal fixtures must decode, byte
//! for byte, in every later version of the library (docs/CONTRACT.md
//! section 12: every older version decodes for ever).
//!
//! `tests/data/journal_v1.bin` is two batches back to back, as a consumer
//! would store them: `encode_batch(1, &first_batch())` then
//! `encode_batch(6, &second_batch())`. Together they hold every record
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
//!
//! `tests/data/journal_v2.bin` (format 2, which added `ObjectEnded`, tag
//! 11) is the same two batches in format 2, then `encode_batch(14,
//! &third_batch())`, End records in every shape; regenerate it only as
//! above (`write_journal_v2_fixture`, a new file on the next bump).
//!
//! `tests/data/journal_v3.bin` (format 3, which added `ObjectStarted`, tag
//! 12) is the three batches in format 3, then `encode_batch(18,
//! &fourth_batch())`, Start records in every shape; regenerate it only as
//! above (`write_journal_v3_fixture`, a new file on the next bump).
//!
//! `tests/data/journal_v4.bin` (format 4, which added `Timeline`, tag 13)
//! is the four batches in format 4, then `encode_batch(22,
//! &fifth_batch())`, Timeline records of every sign and extreme; regenerate
//! it only as above (`write_journal_v4_fixture`, a new file on the next
//! bump).
//!
//! Format 1 was redefined once, to the object-image records, before any
//! master had emitted a journal (nothing recorded until then); the fixture
//! was regenerated then and is frozen since.

use mooncake_meta_core::journal::codec::{decode_batch_prefix, encode_batch_as};
use mooncake_meta_core::journal::*;
use mooncake_meta_core::{Pool, ReplicaStatus, SoftPinIntent, MAX_INSTANT};
use std::path::PathBuf;

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/journal_v1.bin")
}

fn fixture_v2_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/journal_v2.bin")
}

fn fixture_v3_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/journal_v3.bin")
}

fn fixture_v4_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/journal_v4.bin")
}

const T: u64 = 1_717_171_717_000;
const MEM: &str = "node-1/mem0";
const SSD: &str = "node-1/ssd0";

fn k(key: &str) -> RecordKey {
    RecordKey::new("default", key)
}

fn mem(id: u64, status: ReplicaStatus, role: ReplicaRole, address: u64) -> ReplicaImage {
    ReplicaImage {
        id,
        status,
        role,
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

/// Frozen: never edit (see the module doc). Sequences 1..=5.
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
        // A write in flight with its pending intent, a copy under way.
        Record::ObjectSet {
            image: Box::new(ObjectImage {
                key: k("layer0/kv/0001"),
                size: 4096,
                writer: 0x0123_4567_89AB_CDEF,
                put_start: T,
                lease: T,
                seq: 1,
                write_token: 1,
                hard_pin: false,
                group: Some("session-7".into()),
                committed: None,
                in_flight: Some(InFlightImage {
                    pending: Some(SoftPinIntent::Enable { ttl_ms: 1_800_000 }),
                }),
                task: Some(TaskImage::Copy {
                    source: 2,
                    targets: vec![3],
                }),
                replicas: vec![
                    mem(
                        1,
                        ReplicaStatus::Processing,
                        ReplicaRole::Write,
                        0x7f00_0000_0000,
                    ),
                    ReplicaImage {
                        id: 2,
                        status: ReplicaStatus::Complete,
                        role: ReplicaRole::Write,
                        place: Placement::NofSsd {
                            segment: SSD.into(),
                            address: 0,
                        },
                    },
                    mem(
                        3,
                        ReplicaStatus::Processing,
                        ReplicaRole::TaskTarget,
                        0x7f00_0040_0000,
                    ),
                ],
            }),
            discarded: vec![],
        },
        // A committed object replacing buffers it discarded.
        Record::ObjectSet {
            image: Box::new(ObjectImage {
                key: RecordKey::new("team-ü", "プロンプト/🧠"),
                size: 1 << 20,
                writer: 7,
                put_start: T + 10,
                lease: T + 11,
                seq: 2,
                write_token: 2,
                hard_pin: true,
                group: None,
                committed: Some(MAX_INSTANT),
                in_flight: Some(InFlightImage { pending: None }),
                task: Some(TaskImage::Move {
                    source: 4,
                    target: 5,
                }),
                replicas: vec![
                    mem(
                        4,
                        ReplicaStatus::Complete,
                        ReplicaRole::Write,
                        0x7f00_0010_0000,
                    ),
                    ReplicaImage {
                        id: 5,
                        status: ReplicaStatus::Processing,
                        role: ReplicaRole::TaskTarget,
                        place: Placement::NofSsd {
                            segment: SSD.into(),
                            address: 1 << 20,
                        },
                    },
                    ReplicaImage {
                        id: 6,
                        status: ReplicaStatus::Complete,
                        role: ReplicaRole::Write,
                        place: Placement::LocalDisk { client: 33 },
                    },
                ],
            }),
            discarded: vec![discarded(MEM, 0x7f00_0020_0000, 1 << 20, T + 600_010)],
        },
        Record::ObjectSet {
            image: Box::new(ObjectImage {
                key: k("on-disk"),
                size: 1 << 16,
                writer: 33,
                put_start: T + 30,
                lease: 0,
                seq: 3,
                write_token: 4,
                hard_pin: false,
                group: None,
                committed: Some(T + 5 + 1_800_000),
                in_flight: None,
                task: Some(TaskImage::Promotion { target: 8 }),
                replicas: vec![
                    ReplicaImage {
                        id: 7,
                        status: ReplicaStatus::Complete,
                        role: ReplicaRole::Write,
                        place: Placement::LocalDisk { client: 33 },
                    },
                    mem(
                        8,
                        ReplicaStatus::Processing,
                        ReplicaRole::TaskTarget,
                        0x7f00_0050_0000,
                    ),
                ],
            }),
            discarded: vec![],
        },
    ]
}

/// Frozen: never edit (see the module doc). Sequences 6..=13.
fn second_batch() -> Vec<Record> {
    vec![
        Record::ObjectErased {
            key: k("stale"),
            discarded: vec![
                discarded(MEM, 0x7f00_0030_0000, 64, T + 600_000),
                discarded(SSD, 8192, 64, T + 600_000),
            ],
        },
        Record::DiscardReleased {
            at: T + 600_010,
            buffers: vec![BufferRef {
                segment: MEM.into(),
                address: 0x7f00_0020_0000,
                len: 1 << 20,
            }],
        },
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
        },
        Record::Reset {
            image: b"\x89MCMETA\n(an opaque snapshot image)".to_vec(),
        },
    ]
}

/// Frozen: never edit (see the module doc). Sequences 14..=17: Ends of
/// the objects of the first batch, in every shape of the commit outcome.
fn third_batch() -> Vec<Record> {
    vec![
        // The first End of a write: the commit rule fired.
        Record::ObjectEnded {
            key: k("layer0/kv/0001"),
            write_token: 1,
            at: T + 20,
            completed: vec![1],
            commit: Some(Some(T + 20 + 1_800_000)),
            write_over: true,
        },
        // It fired and committed no deadline (Disable, or Preserve of
        // nothing).
        Record::ObjectEnded {
            key: RecordKey::new("team-ü", "プロンプト/🧠"),
            write_token: 2,
            at: MAX_INSTANT,
            completed: vec![4, 6, u64::MAX],
            commit: Some(None),
            write_over: false,
        },
        // A later End: the rule did not fire.
        Record::ObjectEnded {
            key: k("on-disk"),
            write_token: u64::MAX,
            at: 0,
            completed: vec![],
            commit: None,
            write_over: true,
        },
        Record::ObjectErased {
            key: k("on-disk"),
            discarded: vec![],
        },
    ]
}

/// Frozen: never edit (see the module doc). Sequences 18..=21: Starts of
/// new keys in every shape (one replica, several kinds, none left, a
/// group, each intent), and an End of one of them.
fn fourth_batch() -> Vec<Record> {
    vec![
        // The common one: a put of a new key, one memory replica.
        Record::ObjectStarted {
            key: k("layer1/kv/0002"),
            size: 4096,
            writer: 0x0123_4567_89AB_CDEF,
            put_start: T + 40,
            seq: 41,
            write_token: 201,
            hard_pin: false,
            group: None,
            pending: SoftPinIntent::Preserve,
            replicas: vec![StartedReplica {
                id: 50,
                place: Placement::Memory {
                    segment: MEM.into(),
                    address: 0x7f00_0060_0000,
                },
            }],
        },
        // Hard-pinned, in a group, a TTL pending, every placement kind.
        Record::ObjectStarted {
            key: RecordKey::new("team-ü", "プロンプト/🧠/2"),
            size: 1 << 20,
            writer: 7,
            put_start: MAX_INSTANT,
            seq: u64::MAX,
            write_token: 202,
            hard_pin: true,
            group: Some("session-7".into()),
            pending: SoftPinIntent::Enable { ttl_ms: 1_800_000 },
            replicas: vec![
                StartedReplica {
                    id: 51,
                    place: Placement::Memory {
                        segment: MEM.into(),
                        address: 0x7f00_0070_0000,
                    },
                },
                StartedReplica {
                    id: 53,
                    place: Placement::NofSsd {
                        segment: SSD.into(),
                        address: 1 << 21,
                    },
                },
                StartedReplica {
                    id: u64::MAX,
                    place: Placement::LocalDisk { client: 33 },
                },
            ],
        },
        // No replica left (its segment went during the Start), Disable.
        Record::ObjectStarted {
            key: k("orphan"),
            size: 1,
            writer: 0,
            put_start: 0,
            seq: 43,
            write_token: 203,
            hard_pin: false,
            group: None,
            pending: SoftPinIntent::Disable,
            replicas: vec![],
        },
        Record::ObjectEnded {
            key: k("layer1/kv/0002"),
            write_token: 201,
            at: T + 41,
            completed: vec![50],
            commit: Some(None),
            write_over: true,
        },
    ]
}

/// Frozen: never edit (see the module doc). Sequences 22..=28: the
/// primary's skew after wall steps (an hour ahead, a day behind, back to
/// 0, the extremes a codec accepts), between other records.
fn fifth_batch() -> Vec<Record> {
    vec![
        Record::Timeline { skew_ms: 3_600_000 },
        Record::ObjectEnded {
            key: k("layer1/kv/0002"),
            write_token: 201,
            at: T + 42,
            completed: vec![],
            commit: None,
            write_over: true,
        },
        Record::Timeline {
            skew_ms: -86_400_000,
        },
        Record::Timeline { skew_ms: 0 },
        Record::Timeline {
            skew_ms: MAX_INSTANT as i64,
        },
        Record::Timeline {
            skew_ms: -(MAX_INSTANT as i64),
        },
        Record::Timeline { skew_ms: i64::MIN },
    ]
}

fn fixture_v4_bytes() -> Vec<u8> {
    let mut out = encode_batch_as(4, 1, &first_batch()).unwrap();
    out.extend(encode_batch_as(4, 6, &second_batch()).unwrap());
    out.extend(encode_batch_as(4, 14, &third_batch()).unwrap());
    out.extend(encode_batch_as(4, 18, &fourth_batch()).unwrap());
    out.extend(encode_batch_as(4, 22, &fifth_batch()).unwrap());
    out
}

#[test]
fn committed_v4_fixture_decodes_to_its_records() {
    let bytes = std::fs::read(fixture_v4_path()).expect("tests/data/journal_v4.bin is committed");
    assert_eq!(bytes[8..12], 4u32.to_le_bytes(), "the fixture is format 4");
    let mut at = 0;
    for (first, recs) in [
        (1, first_batch()),
        (6, second_batch()),
        (14, third_batch()),
        (18, fourth_batch()),
        (22, fifth_batch()),
    ] {
        let (b, used) = decode_batch_prefix(&bytes[at..]).unwrap();
        assert_eq!((b.first_seq, b.records), (first, recs));
        at += used;
    }
    assert_eq!(at, bytes.len());
    assert_eq!(fixture_v4_bytes(), bytes);
    // Format 4 changed only the version and added tag 13: the first four
    // batches' payloads are those of the format-3 fixture.
    let v3 = std::fs::read(fixture_v3_path()).unwrap();
    let mut at = 0;
    for _ in 0..4 {
        let (_, used) = decode_batch_prefix(&v3[at..]).unwrap();
        assert_eq!(bytes[at + 40..at + used], v3[at + 40..at + used]);
        at += used;
    }
    assert_eq!(at, v3.len());
}

#[test]
fn the_v4_fixture_holds_every_variant() {
    let mut names: Vec<&str> = first_batch()
        .iter()
        .chain(second_batch().iter())
        .chain(third_batch().iter())
        .chain(fourth_batch().iter())
        .chain(fifth_batch().iter())
        .map(Record::name)
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut all = Record::NAMES.to_vec();
    all.sort_unstable();
    assert_eq!(names, all);
}

#[test]
#[ignore = "writes tests/data/journal_v4.bin; only on a deliberate format bump"]
fn write_journal_v4_fixture() {
    let path = fixture_v4_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, fixture_v4_bytes()).unwrap();
}

fn fixture_v3_bytes() -> Vec<u8> {
    let mut out = encode_batch_as(3, 1, &first_batch()).unwrap();
    out.extend(encode_batch_as(3, 6, &second_batch()).unwrap());
    out.extend(encode_batch_as(3, 14, &third_batch()).unwrap());
    out.extend(encode_batch_as(3, 18, &fourth_batch()).unwrap());
    out
}

#[test]
fn committed_v3_fixture_decodes_to_its_records() {
    let bytes = std::fs::read(fixture_v3_path()).expect("tests/data/journal_v3.bin is committed");
    assert_eq!(bytes[8..12], 3u32.to_le_bytes(), "the fixture is format 3");
    let mut at = 0;
    for (first, recs) in [
        (1, first_batch()),
        (6, second_batch()),
        (14, third_batch()),
        (18, fourth_batch()),
    ] {
        let (b, used) = decode_batch_prefix(&bytes[at..]).unwrap();
        assert_eq!((b.first_seq, b.records), (first, recs));
        at += used;
    }
    assert_eq!(at, bytes.len());
    assert_eq!(fixture_v3_bytes(), bytes);
    // Format 3 changed only the version and added tag 12: the first three
    // batches' payloads are those of the format-2 fixture.
    let v2 = std::fs::read(fixture_v2_path()).unwrap();
    let mut at = 0;
    for _ in 0..3 {
        let (_, used) = decode_batch_prefix(&v2[at..]).unwrap();
        assert_eq!(bytes[at + 40..at + used], v2[at + 40..at + used]);
        at += used;
    }
    assert_eq!(at, v2.len());
}

#[test]
fn the_v3_fixture_holds_every_variant() {
    let mut names: Vec<&str> = first_batch()
        .iter()
        .chain(second_batch().iter())
        .chain(third_batch().iter())
        .chain(fourth_batch().iter())
        .map(Record::name)
        .collect();
    names.sort_unstable();
    names.dedup();
    // Every variant format 3 has (tags 1..=12).
    let mut all = Record::NAMES[..12].to_vec();
    all.sort_unstable();
    assert_eq!(names, all);
}

#[test]
#[ignore = "writes tests/data/journal_v3.bin; only on a deliberate format bump"]
fn write_journal_v3_fixture() {
    let path = fixture_v3_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, fixture_v3_bytes()).unwrap();
}

fn fixture_bytes() -> Vec<u8> {
    let mut out = encode_batch_as(1, 1, &first_batch()).unwrap();
    out.extend(encode_batch_as(1, 6, &second_batch()).unwrap());
    out
}

fn fixture_v2_bytes() -> Vec<u8> {
    let mut out = encode_batch_as(2, 1, &first_batch()).unwrap();
    out.extend(encode_batch_as(2, 6, &second_batch()).unwrap());
    out.extend(encode_batch_as(2, 14, &third_batch()).unwrap());
    out
}

#[test]
fn committed_v2_fixture_decodes_to_its_records() {
    let bytes = std::fs::read(fixture_v2_path()).expect("tests/data/journal_v2.bin is committed");
    assert_eq!(bytes[8..12], 2u32.to_le_bytes(), "the fixture is format 2");
    let mut at = 0;
    for (first, recs) in [(1, first_batch()), (6, second_batch()), (14, third_batch())] {
        let (b, used) = decode_batch_prefix(&bytes[at..]).unwrap();
        assert_eq!((b.first_seq, b.records), (first, recs));
        at += used;
    }
    assert_eq!(at, bytes.len());
    assert_eq!(fixture_v2_bytes(), bytes);
    // Format 2 changed only the version and added tag 11: the first two
    // batches' payloads are those of the format-1 fixture.
    let v1 = std::fs::read(fixture_path()).unwrap();
    let (_, v1_first) = decode_batch_prefix(&v1).unwrap();
    assert_eq!(bytes[40..v1_first], v1[40..v1_first]);
}

#[test]
fn the_v2_fixture_holds_every_variant() {
    let mut names: Vec<&str> = first_batch()
        .iter()
        .chain(second_batch().iter())
        .chain(third_batch().iter())
        .map(Record::name)
        .collect();
    names.sort_unstable();
    names.dedup();
    // Every variant format 2 has (tags 1..=11).
    let mut all = Record::NAMES[..11].to_vec();
    all.sort_unstable();
    assert_eq!(names, all);
}

#[test]
#[ignore = "writes tests/data/journal_v2.bin; only on a deliberate format bump"]
fn write_journal_v2_fixture() {
    let path = fixture_v2_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, fixture_v2_bytes()).unwrap();
}

#[test]
fn committed_v1_fixture_decodes_to_its_records() {
    let bytes = std::fs::read(fixture_path()).expect("tests/data/journal_v1.bin is committed");
    let (a, used) = decode_batch_prefix(&bytes).unwrap();
    assert_eq!(bytes[8..12], 1u32.to_le_bytes(), "the fixture is format 1");
    assert_eq!((a.first_seq, a.records), (1, first_batch()));
    let (b, rest) = decode_batch_prefix(&bytes[used..]).unwrap();
    assert_eq!((b.first_seq, b.records), (6, second_batch()));
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
    // Every variant format 1 has (tags 1..=10).
    let mut all = Record::NAMES[..10].to_vec();
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
