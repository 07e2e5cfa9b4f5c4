//! Shared by the snapshot test files: hand-built images, a payload builder
//! that spells the format out independently of the codec, and header
//! helpers. Each test binary uses a different subset.
#![allow(dead_code)]

use mooncake_meta_core::snapshot::codec::{FORMAT_VERSION, FORMAT_VERSION_1, HEADER_LEN, MAGIC};
use mooncake_meta_core::snapshot::image::{
    DiscardedRecord, GroupRecord, InFlightRecord, LocationRecord, ObjectRecord, ReplicaRecord,
    SegmentRecord, SnapshotImage, SoftPinIntent, TaskImage, TaskRecord,
};
use mooncake_meta_core::MAX_INSTANT;

pub const MEMORY: u8 = 0;
pub const NOF_SSD: u8 = 1;
pub const LOCAL_DISK: u8 = 2;
pub const PROCESSING: u8 = 0;
pub const COMPLETE: u8 = 1;

pub fn segment(name: &str, pool: u8, base: u64, size: u64) -> SegmentRecord {
    SegmentRecord {
        name: name.into(),
        owner: 0xC11E_0000 + u64::from(pool),
        pool,
        base,
        size,
    }
}

pub fn group(tenant: &str, name: &str, lease: u64) -> GroupRecord {
    GroupRecord {
        tenant: tenant.into(),
        name: name.into(),
        lease,
    }
}

pub fn object(tenant: &str, key: &str, size: u64, replicas: Vec<ReplicaRecord>) -> ObjectRecord {
    ObjectRecord {
        tenant: tenant.into(),
        key: key.into(),
        writer: 42,
        size,
        put_start: 1_700_000_000_000,
        lease: 1_700_000_010_000,
        soft_pin_deadline: None,
        hard_pin: false,
        group: None,
        seq: 0,
        write_token: 0,
        replicas,
    }
}

pub fn buffer(
    id: u64,
    kind: u8,
    status: u8,
    segment: &str,
    address: u64,
    len: u64,
) -> ReplicaRecord {
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

pub fn local_disk(id: u64, status: u8, client: u64) -> ReplicaRecord {
    ReplicaRecord {
        id,
        kind: LOCAL_DISK,
        status,
        location: LocationRecord::LocalDisk { client },
    }
}

/// Sorts every list the way the format requires and sets the counters just
/// above the largest stored value, so hand-built images validate.
pub fn canonical(mut img: SnapshotImage) -> SnapshotImage {
    img.segments.sort_by(|a, b| a.name.cmp(&b.name));
    img.groups
        .sort_by(|a, b| (&a.tenant, &a.name).cmp(&(&b.tenant, &b.name)));
    img.retention
        .sort_by(|a, b| (&a.tenant, &a.group).cmp(&(&b.tenant, &b.group)));
    img.objects
        .sort_by(|a, b| (&a.tenant, &a.key).cmp(&(&b.tenant, &b.key)));
    for (i, o) in img.objects.iter_mut().enumerate() {
        o.replicas.sort_by_key(|r| r.id);
        o.seq = i as u64 * 3 + 1;
        o.write_token = i as u64 * 5 + 7;
    }
    let max_id = img
        .objects
        .iter()
        .flat_map(|o| o.replicas.iter().map(|r| r.id))
        .max();
    img.next_replica_id = max_id.map_or(1, |m| m + 1);
    img.next_object_seq = img.objects.len() as u64 * 3 + 1;
    img.next_write_token = img.objects.len() as u64 * 5 + 7;
    img
}

pub const MB: u64 = 1 << 20;

/// Every feature the format carries: both pools, every replica kind and
/// status, a saturated deadline, groups (one shared by two objects), unicode
/// and NUL-bearing keys, several tenants.
pub fn representative() -> SnapshotImage {
    let mut objects = vec![
        object(
            "default",
            "plain",
            4096,
            vec![buffer(1, MEMORY, COMPLETE, "mem-a", 0x1000_0000, 4096)],
        ),
        object(
            "default",
            "every-kind",
            8192,
            vec![
                buffer(2, MEMORY, COMPLETE, "mem-a", 0x1000_1000, 8192),
                buffer(3, MEMORY, PROCESSING, "mem-b", 0x2000_0000, 8192),
                buffer(4, NOF_SSD, COMPLETE, "ssd-a", 0, 8192),
                buffer(5, NOF_SSD, PROCESSING, "ssd-b", 1 << 40, 8192),
                local_disk(6, COMPLETE, 77),
                local_disk(7, PROCESSING, 78),
            ],
        ),
        object(
            "default",
            "pinned-forever",
            100,
            vec![buffer(8, MEMORY, COMPLETE, "mem-b", 0x2000_2000, 100)],
        ),
        object(
            "default",
            "grouped-1",
            64,
            vec![buffer(9, MEMORY, COMPLETE, "mem-a", 0x1000_3000, 64)],
        ),
        object(
            "default",
            "grouped-2",
            64,
            vec![buffer(10, MEMORY, COMPLETE, "mem-a", 0x1000_3040, 64)],
        ),
        object(
            "租户-β",
            "ключ/🔑/キー",
            1,
            vec![buffer(11, NOF_SSD, COMPLETE, "ssd-a", 8192, 1)],
        ),
        object("租户-β", "a\0b", 3, vec![local_disk(12, COMPLETE, 9)]),
        object(
            "tenant-b",
            "plain",
            4096,
            vec![buffer(20, MEMORY, COMPLETE, "mem-b", 0x2000_3000, 4096)],
        ),
        object("tenant-b", "no-replicas", 10, vec![]),
    ];
    objects[0].soft_pin_deadline = Some(1_700_001_800_000);
    objects[1].hard_pin = true;
    objects[1].lease = 0;
    objects[2].soft_pin_deadline = Some(MAX_INSTANT);
    objects[2].lease = MAX_INSTANT;
    objects[2].put_start = MAX_INSTANT;
    objects[3].group = Some("g1".into());
    objects[4].group = Some("g1".into());
    objects[7].group = Some("g1".into());
    objects[5].hard_pin = true;
    objects[5].soft_pin_deadline = Some(1); // the smallest a record can commit
    canonical(SnapshotImage {
        created_at: 1_700_000_123_456,
        wall_at_capture: None,
        journal_seq: 0,
        next_replica_id: 0,
        next_write_token: 0,
        next_object_seq: 0,
        segments: vec![
            segment("mem-a", 0, 0x1000_0000, 64 * MB),
            segment("mem-b", 0, 0x2000_0000, 64 * MB),
            segment("ssd-a", 1, 0, 1 << 30),
            segment("ssd-b", 1, 1 << 40, 1 << 30),
            segment("mem-empty", 0, u64::MAX - MB, MB),
        ],
        groups: vec![
            group("default", "g1", 1_700_000_020_000),
            group("tenant-b", "g1", MAX_INSTANT),
            group("租户-β", "unused", 0),
        ],
        retention: Vec::new(),
        objects,
        ..Default::default()
    })
}

/// [`representative`] plus the state only format 5 holds: writes in flight
/// with every kind of pending intent (and a consumed one), a task of each
/// kind (a copy of one of the write's objects' replicas included) and
/// discarded buffers (one released "never").
pub fn representative_live() -> SnapshotImage {
    let mut img = representative();
    let mut add = |o: ObjectRecord| img.objects.push(o);
    add(object(
        "default",
        "writing-disable",
        16,
        vec![buffer(14, MEMORY, PROCESSING, "mem-b", 0x2000_4000, 16)],
    ));
    add(object(
        "tenant-b",
        "writing-preserve",
        16,
        vec![buffer(15, NOF_SSD, PROCESSING, "ssd-a", 16384, 16)],
    ));
    add(object(
        "租户-β",
        "committed-write",
        16,
        vec![
            buffer(16, MEMORY, COMPLETE, "mem-a", 0x1000_7000, 16),
            buffer(17, NOF_SSD, PROCESSING, "ssd-b", (1 << 40) + 16384, 16),
        ],
    ));
    for o in &mut img.objects {
        match (o.tenant.as_str(), o.key.as_str()) {
            // A promotion target beside the local-disk source.
            ("租户-β", "a\0b") => {
                o.replicas
                    .push(buffer(13, MEMORY, PROCESSING, "mem-a", 0x1000_4000, 3))
            }
            // A move target.
            ("tenant-b", "plain") => {
                o.replicas
                    .push(buffer(21, MEMORY, PROCESSING, "mem-a", 0x1000_5000, 4096))
            }
            _ => {}
        }
    }
    let mut img = canonical(img);
    let f = |t: &str, k: &str, pending| InFlightRecord {
        tenant: t.into(),
        key: k.into(),
        pending,
    };
    // every-kind: replica 3 is the copy's target, 5 and 7 the write's.
    img.in_flight = vec![
        f(
            "default",
            "every-kind",
            Some(SoftPinIntent::Enable { ttl_ms: 5_000 }),
        ),
        f("default", "writing-disable", Some(SoftPinIntent::Disable)),
        f(
            "tenant-b",
            "writing-preserve",
            Some(SoftPinIntent::Preserve),
        ),
        f("租户-β", "committed-write", None),
    ];
    let t = |tenant: &str, k: &str, task| TaskRecord {
        tenant: tenant.into(),
        key: k.into(),
        task,
    };
    img.tasks = vec![
        t(
            "default",
            "every-kind",
            TaskImage::Copy {
                source: 2,
                targets: vec![3],
            },
        ),
        t(
            "tenant-b",
            "plain",
            TaskImage::Move {
                source: 20,
                target: 21,
            },
        ),
        t("租户-β", "a\0b", TaskImage::Promotion { target: 13 }),
    ];
    let d = |segment: &str, address, len, release_at, replica| DiscardedRecord {
        segment: segment.into(),
        address,
        len,
        release_at,
        replica,
    };
    img.discarded = vec![
        d("mem-a", 0x1000_6000, 4096, 1_700_000_500_000, 18),
        d("mem-a", 0x1000_8000, 1, MAX_INSTANT, 19),
        d("ssd-b", (1 << 40) + 65536, 8192, 0, 5),
    ];
    img.journal_seq = 0;
    img
}

/// `n` objects in two tenants, packed back to back in two segments.
pub fn generated(n: u64) -> SnapshotImage {
    let mut objects = Vec::new();
    for i in 0..n {
        let size = 1 + (i * 37) % 500;
        let tenant = if i % 3 == 0 { "t0" } else { "t1" };
        let mut o = object(
            tenant,
            &format!("key-{i:04}"),
            size,
            vec![
                buffer(2 * i + 1, MEMORY, COMPLETE, "m", i * 512, size),
                buffer(2 * i + 2, NOF_SSD, (i % 2) as u8, "s", i * 512, size),
            ],
        );
        if i % 4 == 0 {
            o.soft_pin_deadline = Some(1_700_000_000_000 + i);
        }
        if i % 5 == 0 {
            o.group = Some(format!("g{}", i % 2));
        }
        objects.push(o);
    }
    canonical(SnapshotImage {
        created_at: 1_700_000_999_000,
        wall_at_capture: None,
        journal_seq: 0,
        next_replica_id: 0,
        next_write_token: 0,
        next_object_seq: 0,
        segments: vec![segment("m", 0, 0, 1 << 30), segment("s", 1, 0, 1 << 30)],
        groups: ["t0", "t1"]
            .iter()
            .flat_map(|t| [group(t, "g0", 5), group(t, "g1", 6)])
            .collect(),
        retention: Vec::new(),
        objects,
        ..Default::default()
    })
}

/// Writes a payload field by field, independently of the codec, so tests
/// can pin the layout and craft inputs `encode` would never produce.
#[derive(Default)]
pub struct P(pub Vec<u8>);

impl P {
    pub fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    pub fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    pub fn str(self, s: &str) -> Self {
        self.raw_str(s.as_bytes())
    }
    pub fn raw_str(self, b: &[u8]) -> Self {
        self.u32(b.len() as u32).bytes(b)
    }
}

/// Header + payload with the correct length and checksum.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    // The payloads these helpers spell out have the format-1 layout (no
    // wall record); format 2 has its own tests in snapshot_codec.rs.
    out.extend_from_slice(&FORMAT_VERSION_1.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Rewrites the header's length and checksum to match whatever follows it,
/// so a corrupted payload gets past the frame checks.
pub fn reframe(bytes: &mut [u8]) {
    if bytes.len() < HEADER_LEN {
        return;
    }
    let len = (bytes.len() - HEADER_LEN) as u64;
    let crc = crc32fast::hash(&bytes[HEADER_LEN..]);
    bytes[16..24].copy_from_slice(&len.to_le_bytes());
    bytes[24..28].copy_from_slice(&crc.to_le_bytes());
}

/// Whether the frame checks pass (so decoding reaches the payload),
/// computed without the codec.
pub fn frame_ok(bytes: &[u8]) -> bool {
    bytes.len() >= HEADER_LEN
        && bytes[..8] == MAGIC
        && (FORMAT_VERSION_1..=FORMAT_VERSION).any(|v| bytes[8..12] == v.to_le_bytes())
        && bytes[12..16] == [0; 4]
        && bytes[16..24] == ((bytes.len() - HEADER_LEN) as u64).to_le_bytes()
        && bytes[24..28] == crc32fast::hash(&bytes[HEADER_LEN..]).to_le_bytes()
}

/// The payload of a one-segment, no-group, no-object image.
pub fn counters(created_at: u64, next_id: u64, next_token: u64, next_seq: u64) -> P {
    P::default()
        .u64(created_at)
        .u64(next_id)
        .u64(next_token)
        .u64(next_seq)
}

/// One object with a COMPLETE copy source (id 0), `n` PROCESSING copy
/// targets (ids 1..=n) and one PROCESSING replica of its write in flight
/// (id n + 1), one byte each, packed in segment "m", captured at
/// `created_at`.
pub fn copy_with_targets(n: u64, created_at: u64) -> SnapshotImage {
    let mut replicas = vec![buffer(0, MEMORY, COMPLETE, "m", 0, 1)];
    replicas.extend((1..=n + 1).map(|id| buffer(id, MEMORY, PROCESSING, "m", id, 1)));
    let mut img = canonical(SnapshotImage {
        created_at,
        segments: vec![segment("m", MEMORY, 0, 1 << 30)],
        objects: vec![object("default", "o", 1, replicas)],
        ..Default::default()
    });
    img.tasks = vec![TaskRecord {
        tenant: "default".into(),
        key: "o".into(),
        task: TaskImage::Copy {
            source: 0,
            targets: (1..=n).collect(),
        },
    }];
    img.in_flight = vec![InFlightRecord {
        tenant: "default".into(),
        key: "o".into(),
        pending: None,
    }];
    img
}
