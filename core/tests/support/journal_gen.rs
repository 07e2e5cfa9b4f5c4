//! Journal records drawn from an [`Entropy`] source: every variant, with
//! edge values (0, `MAX_INSTANT`, `u64::MAX`, empty and long lists, non-ASCII
//! names) where fields allow them. Every record generated is valid (it
//! decodes back to itself), so the codec tests, the bounded fuzzer and the
//! cargo-fuzz target share one generator. Proptest drives it through a
//! vector of choices ([`Choices`]), so its cases shrink.

use super::entropy::Entropy;
use mooncake_meta_core::journal::codec::MAX_SEQ;
use mooncake_meta_core::journal::*;
use mooncake_meta_core::{Pool, ReplicaStatus, SoftPinIntent, MAX_INSTANT};

/// Choices from a fixed list (proptest generates and shrinks the list);
/// drained when used up, then every choice is 0.
pub struct Choices {
    values: Vec<u64>,
    at: usize,
}

impl Choices {
    pub fn new(values: Vec<u64>) -> Self {
        Choices { values, at: 0 }
    }
}

impl Entropy for Choices {
    fn below(&mut self, n: u64) -> u64 {
        let v = self.values.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v % n.max(1)
    }

    fn drained(&self) -> bool {
        self.at >= self.values.len()
    }
}

const NAMES: [&str; 6] = ["default", "seg-0", "tenant/α", "g", "キー", "a b\tc"];

/// A non-empty, NUL-free name.
pub fn name(e: &mut impl Entropy) -> String {
    match e.below(8) {
        0 => "n".repeat(1 + e.below(300) as usize),
        1 => format!("name-{}", e.u64()),
        _ => (*e.pick(&NAMES)).to_owned(),
    }
}

/// A non-empty key (keys may hold NUL).
pub fn key_str(e: &mut impl Entropy) -> String {
    match e.below(6) {
        0 => "k\0with-nul".to_owned(),
        1 => format!("key-{}", e.below(1_000_000)),
        _ => name(e),
    }
}

pub fn key(e: &mut impl Entropy) -> RecordKey {
    RecordKey::new(name(e), key_str(e))
}

pub fn u64v(e: &mut impl Entropy) -> u64 {
    match e.below(6) {
        0 => 0,
        1 => u64::MAX,
        2 => e.below(1 << 16),
        _ => e.u64(),
    }
}

pub fn instant(e: &mut impl Entropy) -> u64 {
    match e.below(5) {
        0 => 0,
        1 => MAX_INSTANT,
        2 => 1_700_000_000_000 + e.below(1 << 32),
        _ => e.u64() % (MAX_INSTANT + 1),
    }
}

/// A committed soft-pin deadline: an instant other than 0 (a master
/// stores 0 as "no deadline", and the codec refuses a committed one).
pub fn deadline(e: &mut impl Entropy) -> u64 {
    instant(e).max(1)
}

fn list<E: Entropy, T>(e: &mut E, max: u64, mut f: impl FnMut(&mut E) -> T) -> Vec<T> {
    let n = match e.below(4) {
        0 => 0,
        _ => e.below(max + 1),
    };
    (0..n).map(|_| f(e)).collect()
}

fn ids(e: &mut impl Entropy) -> Vec<u64> {
    list(e, 6, u64v)
}

pub fn placement(e: &mut impl Entropy) -> Placement {
    match e.below(3) {
        0 => Placement::Memory {
            segment: name(e),
            address: u64v(e),
        },
        1 => Placement::NofSsd {
            segment: name(e),
            address: u64v(e),
        },
        _ => Placement::LocalDisk { client: u64v(e) },
    }
}

pub fn replica(e: &mut impl Entropy, id: u64) -> ReplicaImage {
    ReplicaImage {
        id,
        status: *e.pick(&[ReplicaStatus::Processing, ReplicaStatus::Complete]),
        role: *e.pick(&[ReplicaRole::Write, ReplicaRole::TaskTarget]),
        place: placement(e),
    }
}

/// Replicas with strictly increasing ids (the codec's rule), from 0, from
/// anywhere, or ending at the last id (steps of 1 to 3).
fn replicas(e: &mut impl Entropy) -> Vec<ReplicaImage> {
    let n = match e.below(4) {
        0 => 0,
        _ => e.below(5),
    };
    let mut id = match e.below(3) {
        0 => 0,
        1 => u64::MAX - 3 * n,
        _ => e.below(1 << 20),
    };
    (0..n)
        .map(|_| {
            let r = replica(e, id);
            id += 1 + e.below(3);
            r
        })
        .collect()
}

/// Strictly increasing replica ids (an End's completed list), from 0,
/// from anywhere, or ending near the last id.
fn increasing_ids(e: &mut impl Entropy) -> Vec<u64> {
    let n = match e.below(4) {
        0 => 0,
        _ => e.below(5),
    };
    let mut id = match e.below(3) {
        0 => 0,
        1 => u64::MAX - 3 * n,
        _ => e.below(1 << 20),
    };
    (0..n)
        .map(|_| {
            let v = id;
            id += 1 + e.below(3);
            v
        })
        .collect()
}

pub fn task(e: &mut impl Entropy) -> TaskImage {
    match e.below(3) {
        0 => TaskImage::Copy {
            source: u64v(e),
            targets: ids(e),
        },
        1 => TaskImage::Move {
            source: u64v(e),
            target: u64v(e),
        },
        _ => TaskImage::Promotion { target: u64v(e) },
    }
}

pub fn buffer(e: &mut impl Entropy) -> BufferRef {
    BufferRef {
        segment: name(e),
        address: u64v(e),
        len: u64v(e),
    }
}

pub fn discarded(e: &mut impl Entropy) -> DiscardedBuffer {
    DiscardedBuffer {
        buffer: buffer(e),
        release_at: instant(e),
    }
}

fn discards(e: &mut impl Entropy) -> Vec<DiscardedBuffer> {
    list(e, 4, discarded)
}

pub fn intent(e: &mut impl Entropy) -> SoftPinIntent {
    match e.below(3) {
        0 => SoftPinIntent::Preserve,
        1 => SoftPinIntent::Enable { ttl_ms: u64v(e) },
        _ => SoftPinIntent::Disable,
    }
}

fn opt<E: Entropy, T>(e: &mut E, f: impl FnOnce(&mut E) -> T) -> Option<T> {
    if e.chance(50) {
        Some(f(e))
    } else {
        None
    }
}

/// An object image with any field values the codec accepts.
pub fn image(e: &mut impl Entropy) -> ObjectImage {
    ObjectImage {
        key: key(e),
        size: u64v(e),
        writer: u64v(e),
        put_start: instant(e),
        lease: instant(e),
        seq: u64v(e),
        write_token: u64v(e),
        hard_pin: e.chance(50),
        group: opt(e, name),
        committed: opt(e, deadline),
        in_flight: opt(e, |e| InFlightImage {
            pending: opt(e, intent),
        }),
        task: opt(e, task),
        replicas: replicas(e),
    }
}

/// A record with tag `tag` (1..=VARIANTS, [`Record::tag`]).
pub fn record_with_tag(e: &mut impl Entropy, tag: u8) -> Record {
    match tag {
        1 => Record::SegmentMounted {
            owner: u64v(e),
            name: name(e),
            pool: *e.pick(&[Pool::Memory, Pool::NofSsd]),
            base: u64v(e),
            size: u64v(e),
        },
        2 => Record::SegmentUnmounted {
            owner: u64v(e),
            name: name(e),
        },
        3 => Record::ObjectSet {
            image: Box::new(image(e)),
            discarded: discards(e),
        },
        4 => Record::ObjectErased {
            key: key(e),
            discarded: discards(e),
        },
        5 => Record::DiscardReleased {
            at: instant(e),
            buffers: list(e, 5, buffer),
        },
        6 => Record::GroupRetained {
            tenant: name(e),
            group: name(e),
            deadline: instant(e),
        },
        7 => Record::GroupReleased {
            tenant: name(e),
            group: name(e),
        },
        8 => Record::RetentionExpired {
            tenant: name(e),
            group: name(e),
            deadline: instant(e),
        },
        9 => Record::Counters {
            next_replica_id: u64v(e),
            next_write_token: u64v(e),
            next_object_seq: u64v(e),
        },
        10 => Record::Reset {
            image: list(e, 64, |e| e.below(256) as u8),
        },
        11 => Record::ObjectEnded {
            key: key(e),
            write_token: u64v(e),
            at: instant(e),
            completed: increasing_ids(e),
            commit: opt(e, |e| opt(e, deadline)),
            write_over: e.chance(50),
        },
        12 => Record::ObjectStarted {
            key: key(e),
            size: u64v(e),
            writer: u64v(e),
            put_start: instant(e),
            seq: u64v(e),
            write_token: u64v(e),
            hard_pin: e.chance(50),
            group: opt(e, name),
            pending: intent(e),
            replicas: increasing_ids(e)
                .into_iter()
                .map(|id| StartedReplica {
                    id,
                    place: placement(e),
                })
                .collect(),
        },
        13 => Record::Timeline {
            skew_ms: match e.below(6) {
                0 => 0,
                1 => i64::MIN,
                2 => i64::MAX,
                3 => -(e.below(1 << 40) as i64),
                4 => e.below(1 << 40) as i64,
                _ => e.u64() as i64,
            },
        },
        other => panic!("no record has tag {other}"),
    }
}

/// The number of record variants (tags are 1..=VARIANTS).
pub const VARIANTS: u8 = Record::NAMES.len() as u8;

/// A record of any variant.
pub fn record(e: &mut impl Entropy) -> Record {
    let tag = 1 + e.below(u64::from(VARIANTS)) as u8;
    record_with_tag(e, tag)
}

/// A batch's first sequence: small, large, or at the very end of the space.
pub fn first_seq(e: &mut impl Entropy, count: usize) -> u64 {
    let last_start = MAX_SEQ - (count as u64).saturating_sub(1);
    match e.below(4) {
        0 => 1,
        1 => last_start,
        2 => 1 + e.below(1 << 20),
        _ => 1 + e.u64() % last_start,
    }
}

/// Records for one batch: 1..=max of them, any variants.
pub fn records(e: &mut impl Entropy, max: usize) -> Vec<Record> {
    let n = 1 + e.below(max as u64) as usize;
    (0..n).map(|_| record(e)).collect()
}
