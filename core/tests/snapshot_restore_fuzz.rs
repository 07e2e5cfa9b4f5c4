//! Fuzz-style restore (docs/CONTRACT.md §6 "Failure" and survival rule): mutated
//! snapshots of masters with varied state either fail with DESERIALIZE_FAIL
//! and leave the target master untouched, or restore into a master that
//! passes `check_invariants()` and keeps working. Half of the cases get their
//! length and checksum recomputed so they reach validation and staging.
//!
//! No catch_unwind: a panic anywhere in restore fails this test outright.
//! (Decode-only fuzzing of the codec lives in snapshot_fuzz.rs.)
mod common;
mod snapshot_support;

use common::*;
use mooncake_meta_core::snapshot::codec::{decode, encode, HEADER_LEN};
use mooncake_meta_core::snapshot::image::{LocationRecord, SegmentRecord, SnapshotImage};
use mooncake_meta_core::*;
use snapshot_support::{frame_ok, reframe};

const CASES: u64 = 12_000;

/// xorshift64*: deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

// ----- masters with varied state ---------------------------------------------

/// A master driven through every kind of state a snapshot records: pins
/// (active, expired, saturated-long), hard pins, groups, tenants, both
/// pools, LOCAL_DISK replicas, writes in flight, partial ends, case B/C
/// upserts, discarded buffers, copy/move/promotion tasks, leases.
fn varied_master(seed: u64, steps: usize) -> Master {
    let mut rng = Rng(seed);
    let m = master_with(config(), 3, 2, 256 * 1024);
    let tenants = ["default", "t1", "租户"];
    let groups = [None, Some("g1"), Some("g2")];
    for _ in 0..steps {
        let t = tenants[rng.below(3)];
        let name = format!("k{}", rng.below(24));
        let key = Key::scoped(t, &name);
        let size = 64 * (1 + rng.below(64) as u64);
        let client = 1 + rng.below(2) as u64;
        let pin = match rng.below(4) {
            0 => SoftPinRequest::PRESERVE,
            1 => SoftPinRequest::DISABLE,
            2 => SoftPinRequest::enable(),
            _ => SoftPinRequest::enable_for(1 + rng.below(20_000) as u64),
        };
        let c = WriteConfig {
            memory_replicas: rng.below(3) as u32,
            nof_ssd_replicas: rng.below(2) as u32,
            hard_pin: rng.chance(8),
            group: groups[rng.below(3)].map(Into::into),
            ..cfg(pin)
        };
        match rng.below(14) {
            0..=2 => {
                if let Ok(w) = m.put_start(client, key, size, &c) {
                    if !rng.chance(4) {
                        let sel = [ReplicaSelector::Memory, ReplicaSelector::All][rng.below(2)];
                        let _ = m.put_end(client, key, sel, Some(w.token));
                    }
                }
            }
            3 | 4 => {
                let size = if rng.chance(2) { 1024 } else { size };
                if let Ok(w) = m.upsert_start(client, key, size, &c) {
                    if !rng.chance(4) {
                        let _ = m.upsert_end(client, key, ReplicaSelector::All, Some(w.token));
                    }
                }
            }
            5 => {
                let _ = m.get_replica_list(key);
            }
            6 => {
                let _ = m.remove(key, rng.chance(2));
            }
            7 => {
                let _ = m.add_local_disk_replica(client, key, size);
            }
            8 => {
                let segs = ["mem0", "mem1", "mem2"];
                let _ = m.copy_start(key, &[segs[rng.below(3)]]);
            }
            9 => {
                let segs = ["mem0", "mem1", "mem2"];
                let _ = m.move_start(key, segs[rng.below(3)], segs[rng.below(3)]);
            }
            10 => {
                let _ = m.promotion_start(key, &[]);
            }
            11 => {
                let _ = m.copy_end(key);
                let _ = m.move_end(key);
                let _ = m.promotion_end(key, rng.chance(2));
            }
            12 => {
                m.advance_time(rng.below(4_000) as u64).unwrap();
                if rng.chance(2) {
                    m.run_cleanup();
                }
            }
            _ => {
                let _ = m.run_eviction(0.3, 0.1);
            }
        }
    }
    inv(&m);
    m
}

fn seeds() -> Vec<Vec<u8>> {
    let mut out = vec![Master::new(config()).unwrap().snapshot().unwrap()];
    for s in 0..6u64 {
        let m = varied_master(0x5EED_0000 + s, 60 + 50 * s as usize);
        out.push(m.snapshot().unwrap());
    }
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/snapshot_v1.bin");
    out.push(std::fs::read(fixture).unwrap());
    out
}

// ----- mutations ---------------------------------------------------------------

const SPECIAL: [u8; 8] = [0, 1, 2, 3, 0x7F, 0x80, 0xFE, 0xFF];

/// One byte-level edit at or after `lo`.
fn mutate_bytes(rng: &mut Rng, b: &mut Vec<u8>, lo: usize) {
    let lo = lo.min(b.len());
    let len = b.len();
    let span = len - lo;
    match rng.below(6) {
        0 if span > 0 => {
            let i = lo + rng.below(span);
            b[i] ^= 1 << rng.below(8);
        }
        1 if span > 0 => {
            let i = lo + rng.below(span);
            b[i] = if rng.chance(2) {
                SPECIAL[rng.below(SPECIAL.len())]
            } else {
                rng.next() as u8
            };
        }
        2 => b.truncate(lo + rng.below(span + 1)),
        3 => {
            let i = lo + rng.below(span + 1);
            let n = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            b.splice(i..i, bytes);
        }
        4 if span > 0 => {
            let start = lo + rng.below(span);
            let n = 1 + rng.below(64.min(len - start));
            let chunk = b[start..start + n].to_vec();
            let i = lo + rng.below(span + 1);
            b.splice(i..i, chunk);
        }
        _ if span >= 8 => {
            let i = lo + rng.below(span - 7);
            let v: u64 = match rng.below(4) {
                0 => u64::MAX,
                1 => 1 << 60,
                2 => u64::from(u32::MAX),
                _ => rng.next() >> rng.below(64),
            };
            let w = if rng.chance(2) { 4 } else { 8 };
            b[i..i + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
        _ => b.push(rng.next() as u8),
    }
}

/// An instant that is interesting next to the target clocks.
fn instant(rng: &mut Rng) -> u64 {
    match rng.below(8) {
        0 => 0,
        1 => MAX_INSTANT,
        2 => MAX_INSTANT + 1,
        3 => u64::MAX,
        4 => T0,
        _ => T0 - 10_000 + rng.below(80_000) as u64,
    }
}

/// One structure-aware edit: the image stays parseable, so these reach
/// validation (and, when they stay valid, staging).
fn mutate_image(rng: &mut Rng, img: &mut SnapshotImage) {
    let n_obj = img.objects.len();
    let n_seg = img.segments.len();
    match rng.below(22) {
        0 => img.created_at = instant(rng),
        1 => {
            img.next_replica_id = match rng.below(3) {
                0 => img.next_replica_id.saturating_sub(1 + rng.below(3) as u64),
                1 => u64::MAX,
                _ => img.next_replica_id + rng.below(1_000) as u64,
            }
        }
        2 => {
            img.next_write_token = match rng.below(3) {
                0 => img.next_write_token.saturating_sub(1),
                1 => u64::MAX,
                _ => 0,
            }
        }
        3 => img.next_object_seq = img.next_object_seq.saturating_sub(rng.below(2) as u64),
        4 if n_seg > 0 => {
            img.segments.remove(rng.below(n_seg));
        }
        5 if n_seg > 0 => {
            let s = rng.below(n_seg);
            img.segments[s].size = match rng.below(3) {
                0 => 0,
                1 => img.segments[s].size / 2,
                _ => u64::MAX - img.segments[s].base,
            };
        }
        6 if n_seg > 0 => {
            let s = rng.below(n_seg);
            img.segments[s].pool ^= 1;
        }
        7 => {
            // A new segment, possibly overlapping another's address range.
            let base = img.segments.first().map_or(0, |s| s.base) + rng.below(4) as u64 * 4096;
            img.segments.push(SegmentRecord {
                name: format!("{}-extra", ["a", "m", "z"][rng.below(3)]),
                owner: rng.next(),
                pool: rng.below(2) as u8,
                base,
                size: [0, 4096, 1 << 20][rng.below(3)],
            });
            img.segments.sort_by(|a, b| a.name.cmp(&b.name));
        }
        8 if !img.groups.is_empty() => {
            let g = rng.below(img.groups.len());
            if rng.chance(2) {
                img.groups.remove(g);
            } else {
                img.groups[g].lease = instant(rng);
            }
        }
        9 if n_obj > 1 => {
            // Duplicate or reorder objects.
            let i = rng.below(n_obj - 1);
            if rng.chance(2) {
                img.objects.swap(i, i + 1);
            } else {
                let o = img.objects[i].clone();
                img.objects.insert(i, o);
            }
        }
        _ if n_obj > 0 => mutate_object(rng, img),
        _ => img.created_at = instant(rng),
    }
}

fn mutate_object(rng: &mut Rng, img: &mut SnapshotImage) {
    let i = rng.below(img.objects.len());
    let seg_names: Vec<String> = img.segments.iter().map(|s| s.name.clone()).collect();
    let group_names: Vec<String> = img.groups.iter().map(|g| g.name.clone()).collect();
    let all_ids: Vec<u64> = img
        .objects
        .iter()
        .flat_map(|o| o.replicas.iter().map(|r| r.id))
        .collect();
    let o = &mut img.objects[i];
    let n_rep = o.replicas.len();
    match rng.below(14) {
        0 => {
            o.soft_pin_deadline = if rng.chance(4) {
                None
            } else {
                Some(instant(rng))
            }
        }
        1 => o.lease = instant(rng),
        2 => o.put_start = instant(rng),
        3 => o.hard_pin = !o.hard_pin,
        4 => {
            o.group = if rng.chance(3) || group_names.is_empty() {
                [None, Some("nope".to_string())][rng.below(2)].clone()
            } else {
                Some(group_names[rng.below(group_names.len())].clone())
            }
        }
        5 => o.size = [0, 1, o.size + 64, o.size / 2][rng.below(4)],
        6 => {
            o.tenant = ["", "a\0b", "default", "t1"][rng.below(4)].into();
        }
        7 => o.seq = o.seq.wrapping_add([1, u64::MAX / 2][rng.below(2)]),
        8 if n_rep > 0 => {
            let r = rng.below(n_rep);
            o.replicas[r].status ^= 1;
        }
        9 if n_rep > 0 => {
            let r = rng.below(n_rep);
            o.replicas[r].id = if !all_ids.is_empty() && rng.chance(2) {
                all_ids[rng.below(all_ids.len())]
            } else {
                o.replicas[r].id.wrapping_add(1)
            };
        }
        10 if n_rep > 0 => {
            let r = rng.below(n_rep);
            if let LocationRecord::Buffer { segment, .. } = &mut o.replicas[r].location {
                *segment = if seg_names.is_empty() || rng.chance(4) {
                    "unknown".into()
                } else {
                    seg_names[rng.below(seg_names.len())].clone()
                };
            } else {
                o.replicas[r].kind = rng.below(3) as u8;
            }
        }
        11 if n_rep > 0 => {
            let r = rng.below(n_rep);
            if let LocationRecord::Buffer { address, len, .. } = &mut o.replicas[r].location {
                match rng.below(4) {
                    0 => *address = address.wrapping_add(64 * (1 + rng.below(4) as u64)),
                    1 => *address = address.wrapping_sub(64),
                    2 => *len += 1,
                    _ => *address = u64::MAX - 10,
                }
            } else {
                o.replicas[r].status = rng.below(3) as u8;
            }
        }
        12 if n_rep > 0 => {
            if rng.chance(2) {
                o.replicas.remove(rng.below(n_rep));
            } else {
                let dup = o.replicas[rng.below(n_rep)].clone();
                o.replicas.push(dup);
            }
        }
        _ => {
            // Steal a buffer location from another object: overlap.
            let j = rng.below(img.objects.len());
            let loc = img.objects[j]
                .replicas
                .iter()
                .find(|r| matches!(r.location, LocationRecord::Buffer { .. }))
                .map(|r| r.location.clone());
            let o = &mut img.objects[i];
            if let (Some(loc), Some(r)) = (loc, o.replicas.first_mut()) {
                r.location = loc;
            }
        }
    }
}

// ----- targets -----------------------------------------------------------------

/// A live master to restore into, with state of its own, and its fingerprint.
struct Target {
    m: Master,
    fingerprint: (Vec<u8>, MetricsSnapshot, (usize, usize)),
}

fn fingerprint(m: &Master) -> (Vec<u8>, MetricsSnapshot, (usize, usize)) {
    (m.snapshot().unwrap(), m.metrics(), m.index_sizes())
}

/// Targets differ in clock (survival outcomes) and shard count (restore
/// re-shards by the target's own routing).
fn target(kind: usize) -> Target {
    let (at, shards) = [(T0, 1024), (T0 + 3_000, 7), (T0 + 50_000, 1)][kind];
    let m = master_with(
        MasterConfig {
            shard_count: shards,
            ..MasterConfig::deterministic(at)
        },
        1,
        1,
        1 << 20,
    );
    put(&m, "resident", 4096, &enable(MAX_TTL));
    m.put_start(C1, k("in-flight"), 64, &preserve()).unwrap();
    upsert(&m, "resident", 2048, &preserve()); // a discarded buffer
    let fingerprint = fingerprint(&m);
    Target { m, fingerprint }
}

/// After a successful restore the master must keep working.
fn exercise(m: &Master) {
    let w = m.put_start(C1, k("after-restore"), 64, &enable(1_000)).ok();
    if let Some(w) = &w {
        m.put_end(C1, k("after-restore"), ReplicaSelector::All, Some(w.token))
            .unwrap();
    }
    m.check_invariants()
        .unwrap_or_else(|e| panic!("after a put on the restored master: {e}"));
    let now = m.now();
    m.run_cleanup_at(now + MAX_TTL + 1);
    m.run_eviction(1.0, 1.0).unwrap();
    m.check_invariants()
        .unwrap_or_else(|e| panic!("after cleanup and eviction on the restored master: {e}"));
}

#[test]
fn mutated_snapshots_restore_cleanly_or_leave_the_master_untouched() {
    // §6: bad input → DESERIALIZE_FAIL, master untouched; accepted input → §8 holds
    let seeds = seeds();
    let seed_images: Vec<SnapshotImage> = seeds.iter().map(|s| decode(s).unwrap()).collect();
    let mut targets: Vec<Target> = (0..3).map(target).collect();
    let mut rng = Rng(0xF00D_FACE_DEAD_BEEF);
    let (mut reframed, mut reached_validation, mut reached_staging) = (0u64, 0u64, 0u64);
    let (mut restored, mut rejected_at_staging, mut image_level) = (0u64, 0u64, 0u64);
    for case in 0..CASES {
        let s = (case as usize / 2) % seeds.len();
        let fix_header = case % 2 == 1;
        let mut b = if fix_header && rng.chance(2) {
            // Structure-aware: edit the image, re-encode, maybe a byte edit too.
            image_level += 1;
            let mut img = seed_images[s].clone();
            for _ in 0..1 + rng.below(2) {
                mutate_image(&mut rng, &mut img);
            }
            let mut b = encode(&img);
            if rng.chance(4) {
                mutate_bytes(&mut rng, &mut b, HEADER_LEN);
            }
            b
        } else {
            let mut b = seeds[s].clone();
            let lo = if fix_header { HEADER_LEN } else { 0 };
            for _ in 0..1 + rng.below(3) {
                mutate_bytes(&mut rng, &mut b, lo);
            }
            b
        };
        if fix_header {
            reframe(&mut b);
            reframed += 1;
        }
        if frame_ok(&b) {
            reached_validation += 1;
        }
        let decoded = decode(&b);
        if decoded.is_ok() {
            reached_staging += 1;
        }
        let t = &mut targets[case as usize % 3];
        match t.m.restore(&b) {
            Ok(rep) => {
                assert!(
                    decoded.is_ok(),
                    "case {case}: restore accepted what decode rejects"
                );
                t.m.check_invariants()
                    .unwrap_or_else(|e| panic!("case {case}: restored master violates §8: {e}"));
                assert_eq!(t.m.key_count(), rep.objects_restored, "case {case}");
                assert_eq!(gauge(&t.m), rep.soft_pins_restored, "case {case}");
                exercise(&t.m);
                restored += 1;
                *t = target(case as usize % 3);
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::DeserializeFail, "case {case}: {e}");
                assert!(!e.message().is_empty());
                if decoded.is_ok() {
                    rejected_at_staging += 1;
                }
                assert!(
                    fingerprint(&t.m) == t.fingerprint,
                    "case {case}: a failed restore changed the live master ({e})"
                );
            }
        }
    }
    println!(
        "restore fuzz: {CASES} cases ({reframed} reframed, {image_level} image-level), \
         {reached_validation} reached validation, {reached_staging} reached staging: \
         {restored} restored, {rejected_at_staging} rejected by staging"
    );
    assert!(reached_validation > CASES / 4);
    assert!(reached_staging > 0, "nothing reached staging");
    assert!(restored > 0, "no mutated snapshot restored");
    for t in &targets {
        inv(&t.m);
    }
}
