//! The committed format-1 to format-4 journal fixtures must decode, byte
//! for byte, in every later version of the library (docs/CONTRACT.md
//! section 12: every older version decodes for ever).
//!
//! `tests/data/journal_v{N}.bin` is batches back to back, as a consumer
//! would store them (`batches(N)`): format 1's two, `first_batch()` at
//! sequence 1 and `second_batch()` at 6, which hold every format-1
//! variant; each later format repeats them in its own version and adds one
//! batch with the record its tag adds, in every shape (format 2:
//! `ObjectEnded`, tag 11, `third_batch()` at 14; format 3: `ObjectStarted`,
//! tag 12, `fourth_batch()` at 18; format 4: `Timeline`, tag 13,
//! `fifth_batch()` at 22). The records are spelled out here, not
//! generated, so nobody changes a fixture by accident while editing a
//! helper; the committed files are never rewritten. On a deliberate
//! format bump, add the next batch to `batches` and write the new
//! format's file (only it) with:
//!
//! ```text
//! cargo test -p mooncake-meta-core --test journal_fixture -- --ignored write_the_current_format_fixture
//! ```
//!
//! Format 1 was redefined once, to the object-image records, before any
//! master had emitted a journal (nothing recorded until then); the fixture
//! was regenerated then and is frozen since.

use mooncake_meta_core::journal::codec::{
    decode_batch_prefix, encode_batch_as, last_tag, FORMAT_VERSION, HEADER_LEN,
};
use mooncake_meta_core::journal::*;
use mooncake_meta_core::{Pool, ReplicaStatus, SoftPinIntent, MAX_INSTANT};
use std::path::PathBuf;

/// The committed fixture of format `version`: tests/data/journal_v{version}.bin.
fn fixture_path(version: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/journal_v{version}.bin"))
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

/// The batches of the format-`version` fixture, `(first sequence,
/// records)`: format 1's two, and each later format one more, holding
/// the record its tag adds (format 2: ObjectEnded, 3: ObjectStarted, 4:
/// Timeline).
fn batches(version: u32) -> Vec<(u64, Vec<Record>)> {
    [
        (1, first_batch()),
        (6, second_batch()),
        (14, third_batch()),
        (18, fourth_batch()),
        (22, fifth_batch()),
    ]
    .into_iter()
    .take(version as usize + 1)
    .collect()
}

/// The format-`version` fixture's bytes, encoded now.
fn fixture_bytes(version: u32) -> Vec<u8> {
    batches(version)
        .iter()
        .flat_map(|(first, recs)| encode_batch_as(version, *first, recs).unwrap())
        .collect()
}

/// The committed fixture of `version` decodes to its batches, and the same
/// records still encode to the same bytes (that format's encoding has not
/// changed). A later format changed only the version and added a tag: the
/// batches the previous format's fixture has carry the same payloads.
fn committed_fixture_decodes_to_its_records(version: u32) {
    let bytes = std::fs::read(fixture_path(version)).expect("the fixture is committed");
    assert_eq!(
        bytes[8..12],
        version.to_le_bytes(),
        "the fixture is format {version}"
    );
    let mut at = 0;
    for (first, recs) in batches(version) {
        let (b, used) = decode_batch_prefix(&bytes[at..]).unwrap();
        assert_eq!((b.first_seq, b.records), (first, recs));
        at += used;
    }
    assert_eq!(at, bytes.len());
    assert_eq!(fixture_bytes(version), bytes);
    if version > 1 {
        let prev = std::fs::read(fixture_path(version - 1)).unwrap();
        let mut at = 0;
        while at < prev.len() {
            let (_, used) = decode_batch_prefix(&prev[at..]).unwrap();
            assert_eq!(
                bytes[at + HEADER_LEN..at + used],
                prev[at + HEADER_LEN..at + used],
                "format {version} against {}",
                version - 1
            );
            at += used;
        }
    }
}

/// The format-`version` fixture holds every record variant that format
/// has (tags 1 to its last).
fn the_fixture_holds_every_variant(version: u32) {
    let mut names: Vec<&str> = batches(version)
        .iter()
        .flat_map(|(_, recs)| recs.iter().map(Record::name))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut all = Record::NAMES[..usize::from(last_tag(version))].to_vec();
    all.sort_unstable();
    assert_eq!(names, all);
}

#[test]
fn committed_fixtures_decode_to_their_records() {
    for version in 1..=FORMAT_VERSION {
        committed_fixture_decodes_to_its_records(version);
    }
}

#[test]
fn every_fixture_holds_every_variant_of_its_format() {
    for version in 1..=FORMAT_VERSION {
        the_fixture_holds_every_variant(version);
    }
    // The current format's names are every name there is.
    assert_eq!(usize::from(last_tag(FORMAT_VERSION)), Record::NAMES.len());
}

#[test]
#[ignore = "writes tests/data/journal_v{FORMAT_VERSION}.bin; only on a deliberate format bump"]
fn write_the_current_format_fixture() {
    let path = fixture_path(FORMAT_VERSION);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, fixture_bytes(FORMAT_VERSION)).unwrap();
}
