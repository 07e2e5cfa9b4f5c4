//! docs/CONTRACT.md §6 "consistent cut": snapshots taken while writers, readers and
//! maintenance run must each restore into a fresh master that passes
//! `check_invariants()` (no two live buffers overlap, counters above every
//! stored id, index and gauge rebuilt), and restore exactly the objects the
//! survival rule keeps.
mod common;

use common::*;
use mooncake_meta_core::snapshot::codec::decode;
use mooncake_meta_core::snapshot::image::SnapshotImage;
use mooncake_meta_core::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

const SNAPSHOTS: usize = 100;
const WRITERS: u64 = 4;
const KEYS: u64 = 48;

/// xorshift64*: deterministic per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn key_name(rng: &mut Rng) -> String {
    format!("k{}", rng.below(KEYS))
}

/// Small segments so buffers are freed and reused all the time.
fn busy_master() -> Arc<Master> {
    let m = Master::new(config()).unwrap();
    for (i, pool) in [Pool::Memory, Pool::Memory, Pool::NofSsd]
        .into_iter()
        .enumerate()
    {
        m.mount_segment(C1, &spec(&format!("s{i}"), i, 96 * 1024, pool))
            .unwrap();
    }
    Arc::new(m)
}

/// One writer: puts, upserts that re-enable pins, ends (sometimes partial,
/// sometimes never), revokes, removes and reads on a key space shared with
/// the other writers. Errors are expected (contention) and ignored; panics
/// are not. `ops` counts every call; `started` counts successful
/// PutStart/UpsertStart, each of which draws a fresh write token, so the
/// image's `next_write_token` moves whenever `started` does.
fn writer(m: &Master, id: u64, stop: &AtomicBool, ops: &AtomicU64, started: &AtomicU64) {
    let client = 10 + id;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let mut open: Vec<(String, u64)> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let key = key_name(&mut rng);
        let size = 256 * (1 + rng.below(16));
        match rng.below(10) {
            0 | 1 => {
                let c = WriteConfig {
                    nof_ssd_replicas: rng.below(2) as u32,
                    hard_pin: rng.below(20) == 0,
                    ..cfg(match rng.below(3) {
                        0 => SoftPinRequest::PRESERVE,
                        1 => SoftPinRequest::DISABLE,
                        _ => SoftPinRequest::enable_for(1 + rng.below(3_000)),
                    })
                };
                if let Ok(w) = m.put_start(client, k(&key), size, &c) {
                    open.push((key, w.token));
                    started.fetch_add(1, Ordering::Relaxed);
                }
            }
            2 | 3 => {
                // Upserts with ENABLE: case A, B (same size) and C all happen.
                let size = if rng.below(2) == 0 { 1024 } else { size };
                let c = enable(1 + rng.below(5_000));
                if let Ok(w) = m.upsert_start(client, k(&key), size, &c) {
                    open.push((key, w.token));
                    started.fetch_add(1, Ordering::Relaxed);
                }
            }
            4 | 5 if !open.is_empty() => {
                let (key, token) = open.swap_remove(rng.below(open.len() as u64) as usize);
                let sel = match rng.below(4) {
                    0 => ReplicaSelector::Memory,
                    1 => ReplicaSelector::NofSsd,
                    _ => ReplicaSelector::All,
                };
                let _ = m.put_end(client, k(&key), sel, Some(token));
            }
            6 if !open.is_empty() => {
                let (key, token) = open.swap_remove(rng.below(open.len() as u64) as usize);
                let _ = m.put_revoke(client, k(&key), ReplicaSelector::All, Some(token));
            }
            7 => {
                let _ = m.remove(k(&key), rng.below(2) == 0);
            }
            _ => {
                if rng.below(2) == 0 {
                    let _ = m.get_replica_list(k(&key));
                } else {
                    let _ = m.exist(k(&key));
                }
            }
        }
        // Writes abandoned mid-way stay in flight until swept.
        if open.len() > 8 {
            open.remove(0);
        }
        ops.fetch_add(1, Ordering::Relaxed);
    }
}

/// Moves the clock and runs cleanup, sweep, release and eviction, so pins
/// expire and discarded buffers are freed (and reused) during captures.
fn maintenance(m: &Master, stop: &AtomicBool) {
    let mut rng = Rng(0xA076_1D64_78BD_642F);
    while !stop.load(Ordering::Relaxed) {
        m.advance_time(1 + rng.below(50)).unwrap();
        match rng.below(4) {
            0 => {
                m.run_cleanup();
            }
            1 => {
                // Release early (as if the timeout were short) to churn buffers.
                m.release_discarded_at(m.now() + 600_000);
            }
            2 => {
                m.sweep_stale_writes_at(m.now() + 600_000);
            }
            _ => {
                let _ = m.run_eviction(0.2, 0.1);
            }
        }
        thread::yield_now();
    }
}

/// What §6 restores from `img` at `now`: (objects the survival rule keeps,
/// soft pins among them still active, PROCESSING replicas dropped).
fn expected_restore(img: &SnapshotImage, now: u64) -> (u64, u64, u64) {
    let (mut objects, mut pins, mut dropped) = (0, 0, 0);
    for o in &img.objects {
        let group_lease = o.group.as_ref().map_or(0, |g| {
            img.groups
                .iter()
                .find(|r| r.tenant == o.tenant && &r.name == g)
                .unwrap()
                .lease
        });
        let complete = o.replicas.iter().filter(|r| r.status == 1).count();
        dropped += (o.replicas.len() - complete) as u64;
        let active = o.soft_pin_deadline.is_some_and(|d| now < d);
        if complete > 0 && (now < o.lease.max(group_lease) || active || o.hard_pin) {
            objects += 1;
            pins += active as u64;
        }
    }
    (objects, pins, dropped)
}

/// A hang bound for waiting on the writers, never a speed check.
const HANG: std::time::Duration = std::time::Duration::from_secs(120);

/// Hard-pinned with a 24 h soft pin, never touched by the workload: every
/// image restores it, pin included (the maintenance thread would need
/// hours of real time to move the manual clock 24 h).
const ANCHOR: &str = "anchor";

fn put_anchor(m: &Master) -> u64 {
    let c = WriteConfig {
        hard_pin: true,
        ..enable(MAX_TTL)
    };
    put(m, ANCHOR, 256, &c);
    m.soft_pin_deadline(k(ANCHOR)).unwrap().unwrap()
}

#[test]
fn snapshots_taken_under_concurrent_writes_restore_consistently() {
    // §6: every image is a consistent cut; each restores and passes §8
    let m = busy_master();
    let anchor = put_anchor(&m);
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let started = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for id in 0..WRITERS {
        let (m, stop, ops, started) = (
            Arc::clone(&m),
            Arc::clone(&stop),
            Arc::clone(&ops),
            Arc::clone(&started),
        );
        handles.push(thread::spawn(move || writer(&m, id, &stop, &ops, &started)));
    }
    {
        let (m, stop) = (Arc::clone(&m), Arc::clone(&stop));
        handles.push(thread::spawn(move || maintenance(&m, &stop)));
    }

    let (mut restored, mut pinned, mut dropped_replicas) = (0u64, 0u64, 0u64);
    let mut distinct = std::collections::HashSet::new();
    for i in 0..SNAPSHOTS {
        // Let the writers move on between captures: at least one write must
        // have started, so this image's `next_write_token` differs from the
        // last one's. The bound only turns a stuck master into a failure
        // instead of a hang; it does not time anything.
        let target = started.load(Ordering::Relaxed) + 1;
        let give_up = std::time::Instant::now() + HANG;
        while started.load(Ordering::Relaxed) < target {
            assert!(
                std::time::Instant::now() < give_up,
                "snapshot {i}: no write could start for {HANG:?} ({} calls made)",
                ops.load(Ordering::Relaxed)
            );
            thread::yield_now();
        }
        let bytes = m.snapshot().unwrap();
        let img = decode(&bytes).unwrap_or_else(|e| panic!("snapshot {i} does not decode: {e}"));
        distinct.insert(bytes.clone());
        let fresh = Master::new(MasterConfig::deterministic(img.created_at)).unwrap();
        let rep = fresh
            .restore(&bytes)
            .unwrap_or_else(|e| panic!("snapshot {i} does not restore: {e}"));
        fresh
            .check_invariants()
            .unwrap_or_else(|e| panic!("snapshot {i}: restored master violates §8: {e}"));
        let (objects, pins, dropped) = expected_restore(&img, img.created_at);
        assert_eq!(
            (
                rep.objects_restored,
                rep.soft_pins_restored,
                rep.replicas_dropped
            ),
            (objects, pins, dropped),
            "snapshot {i}: (objects, pins, PROCESSING replicas dropped)"
        );
        assert_eq!(fresh.key_count(), rep.objects_restored);
        assert_eq!(gauge(&fresh), rep.soft_pins_restored);
        assert_eq!(
            fresh.soft_pin_deadline(k(ANCHOR)).unwrap(),
            Some(anchor),
            "snapshot {i}: the anchor and its pin must be restored"
        );
        restored += rep.objects_restored;
        pinned += rep.soft_pins_restored;
        dropped_replicas += rep.replicas_dropped;
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    inv(&m);
    // How many pins and PROCESSING replicas the images held depends on
    // scheduling (the maintenance thread expires pins and sweeps writes
    // between captures), so it is printed, not asserted; each image's
    // counts were checked exactly above, the anchor in every one.
    println!(
        "{SNAPSHOTS} snapshots ({} distinct) under {} ops: {restored} objects restored, \
         {pinned} pins, {dropped_replicas} PROCESSING replicas dropped",
        distinct.len(),
        ops.load(Ordering::Relaxed)
    );
    // With the threads stopped, one image certainly holds a write in flight
    // (room made first: the workload leaves the segments full).
    m.sweep_stale_writes_at(u64::MAX);
    m.remove_all(true);
    m.release_discarded_at(u64::MAX);
    let w = m.put_start(C1, k("open"), 512, &enable(MAX_TTL)).unwrap();
    let bytes = m.snapshot().unwrap();
    let img = decode(&bytes).unwrap();
    let fresh = Master::new(MasterConfig::deterministic(img.created_at)).unwrap();
    let rep = fresh.restore(&bytes).unwrap();
    let (objects, pins, dropped) = expected_restore(&img, img.created_at);
    assert!(dropped > 0, "the open write's replica is PROCESSING");
    assert_eq!(
        (
            rep.objects_restored,
            rep.soft_pins_restored,
            rep.replicas_dropped
        ),
        (objects, pins, dropped)
    );
    assert!(
        !fresh.exist(k("open")).unwrap(),
        "a write in flight is not restored"
    );
    inv(&fresh);
    m.put_revoke(C1, k("open"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    // A write started between any two captures, so no two images are equal.
    assert_eq!(
        distinct.len(),
        SNAPSHOTS,
        "two captures showed the same state"
    );
}

#[test]
fn snapshots_taken_during_mounts_and_unmounts_restore_consistently() {
    // §2 + §6: unmount drops the segment's replicas synchronously; no image
    // may show a replica on a segment it does not list
    let m = busy_master();
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let started = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for id in 0..2 {
        let (m, stop, ops, started) = (
            Arc::clone(&m),
            Arc::clone(&stop),
            Arc::clone(&ops),
            Arc::clone(&started),
        );
        handles.push(thread::spawn(move || writer(&m, id, &stop, &ops, &started)));
    }
    {
        let (m, stop) = (Arc::clone(&m), Arc::clone(&stop));
        handles.push(thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("hot{}", n % 2);
                let _ = m.mount_segment(
                    C2,
                    &spec(&name, 8 + (n % 2) as usize, 64 * 1024, Pool::Memory),
                );
                thread::yield_now();
                let _ = m.unmount_segment(C2, &name);
                n += 1;
            }
        }));
    }
    for i in 0..SNAPSHOTS {
        let target = ops.load(Ordering::Relaxed) + 20;
        let give_up = std::time::Instant::now() + HANG;
        while ops.load(Ordering::Relaxed) < target {
            assert!(
                std::time::Instant::now() < give_up,
                "snapshot {i}: the writers made no 20 calls in {HANG:?}"
            );
            thread::yield_now();
        }
        let bytes = m.snapshot().unwrap();
        let img = decode(&bytes).unwrap_or_else(|e| panic!("snapshot {i} does not decode: {e}"));
        let fresh = Master::new(MasterConfig::deterministic(img.created_at)).unwrap();
        fresh
            .restore(&bytes)
            .unwrap_or_else(|e| panic!("snapshot {i} does not restore: {e}"));
        fresh
            .check_invariants()
            .unwrap_or_else(|e| panic!("snapshot {i}: {e}"));
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    inv(&m);
}
