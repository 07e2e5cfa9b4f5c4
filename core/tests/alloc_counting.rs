//! Leak check: a counting global allocator — in this test binary
//! only — shows that live heap bytes return exactly to their baseline after
//! masters are created, used and dropped: random operation sequences
//! (restores and failed restores, eviction, cleanup, sweep, unmount
//! included), a master with its maintenance thread running, snapshot and
//! restore cycles, and bulk eviction/cleanup. A second check shows a live
//! master's footprint does not grow across identical work cycles.
//!
//! One #[test] only: the counter is global, so nothing else may allocate
//! concurrently while a scenario is measured.
mod support;

use mooncake_meta_core::*;
use support::counting::{allocs, live, Counting};
use support::entropy::{Entropy, XorShift};
use support::opseq::Driver;
use support::snapmut;

#[global_allocator]
static GLOBAL: Counting = Counting;

const KB: u64 = 1024;

fn seg(name: &str, slot: u64, size: u64, pool: Pool) -> SegmentSpec {
    SegmentSpec {
        name: name.into(),
        base: slot << 40,
        size,
        pool,
    }
}

/// 40 random operation sequences of 250 steps (see support/opseq.rs).
fn op_sequences() {
    let mut rng = XorShift::new(0xA110C);
    for _ in 0..40 {
        let mut d = Driver::new();
        d.run(&mut rng, 250);
    }
}

/// A master with its maintenance thread on (1 ms intervals), used and dropped.
fn with_maintenance_thread() {
    let m = Master::new(MasterConfig {
        soft_pin_cleanup_interval_ms: 1,
        eviction_check_interval_ms: 1,
        sweep_interval_ms: 1,
        put_start_discard_timeout_ms: 1,
        put_start_release_timeout_ms: 2,
        default_kv_lease_ttl_ms: 1,
        shard_count: 8,
        ..MasterConfig::default()
    })
    .unwrap();
    m.mount_segment(1, &seg("m", 1, 256 * KB, Pool::Memory))
        .unwrap();
    let cfg = WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(1));
    for i in 0..2_000 {
        let key = format!("k{}", i % 300);
        if let Ok(w) = m.upsert_start(1, Key::new(&key), 4 * KB, &cfg) {
            if i % 5 != 0 {
                let _ = m.put_end(1, Key::new(&key), ReplicaSelector::All, Some(w.token));
            }
        }
        let _ = m.get_replica_list(Key::new(&format!("k{}", i % 17)));
    }
    // The thread ticks every millisecond: a cleanup batch it has popped but
    // not applied yet is not a violation, so check with it parked.
    let _quiet = m.quiesce();
    m.check_invariants().unwrap();
}

/// Populated master → snapshot → restores, failed restores, candidates.
fn restores() {
    let m = Master::new(MasterConfig {
        shard_count: 16,
        ..MasterConfig::deterministic(1_000_000)
    })
    .unwrap();
    m.mount_segment(1, &seg("m", 1, 8 << 20, Pool::Memory))
        .unwrap();
    m.mount_segment(1, &seg("n", 2, 8 << 20, Pool::NofSsd))
        .unwrap();
    for i in 0..500u64 {
        let key = format!("key-{i}");
        let cfg = WriteConfig {
            nof_ssd_replicas: (i % 3 == 0) as u32,
            hard_pin: i % 7 == 0,
            group: (i % 10 == 0).then(|| format!("g{}", i % 4)),
            ..WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(1 + i * 100))
        };
        let w = m.put_start(1, Key::new(&key), 1 + i * 13, &cfg).unwrap();
        if i % 11 != 0 {
            m.put_end(1, Key::new(&key), ReplicaSelector::All, Some(w.token))
                .unwrap();
        }
    }
    let good = m.snapshot().unwrap();
    let target = Master::new(MasterConfig {
        shard_count: 16,
        ..MasterConfig::deterministic(1_010_000)
    })
    .unwrap();
    for _ in 0..5 {
        target.restore(&good).unwrap();
    }
    let mut rng = XorShift::new(7);
    for i in 0..300 {
        let bad = snapmut::mutated(&mut rng, &good, i % 2 == 0);
        let _ = target.restore(&bad);
    }
    let mut corrupt = good.clone();
    corrupt[40] ^= 1;
    target.restore_candidates(&[&corrupt, &good]).unwrap();
    assert!(target.restore_candidates(&[&corrupt]).is_err());
    target.check_invariants().unwrap();
}

/// Bulk pins, cleanup, eviction, removal and release on one master.
fn eviction_and_cleanup() {
    let m = Master::new(MasterConfig {
        shard_count: 32,
        eviction_ratio: 0.3,
        ..MasterConfig::deterministic(1_000_000)
    })
    .unwrap();
    m.mount_segment(1, &seg("m", 1, 4 << 20, Pool::Memory))
        .unwrap();
    let mut rng = XorShift::new(99);
    for i in 0..5_000u64 {
        let key = format!("obj-{i}");
        let ttl = 1 + rng.below(5_000);
        let cfg = WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(ttl));
        if m.put_start(1, Key::new(&key), 1 + rng.below(4 * KB), &cfg)
            .is_ok()
        {
            let _ = m.put_end(1, Key::new(&key), ReplicaSelector::All, None);
        }
        if i % 500 == 0 {
            m.advance_time(1_000).unwrap();
            m.run_cleanup();
            m.evict_if_needed(true);
        }
    }
    m.run_eviction(0.5, 0.5).unwrap();
    m.advance_time(20_000).unwrap();
    m.run_maintenance_tick();
    m.remove_all(true);
    m.check_invariants().unwrap();
}

/// parking_lot keeps one global table of parked threads, sized for the most
/// threads ever alive at once and never freed (its old tables are leaked on
/// purpose). Parking 32 threads at once sizes it once, before any baseline,
/// so a maintenance thread's first park cannot look like a leak. Each thread
/// parks in a condvar wait, which registers it with parking_lot before
/// releasing the mutex; the main thread sees all 32 arrivals only once all
/// have done so (no sleep, whatever the scheduling).
fn grow_parking_lot_table() {
    const THREADS: usize = 32;
    // (arrived, released)
    let state = std::sync::Arc::new((
        parking_lot::Mutex::new((0usize, false)),
        parking_lot::Condvar::new(),
    ));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let state = state.clone();
            std::thread::spawn(move || {
                let (lock, cv) = &*state;
                let mut s = lock.lock();
                s.0 += 1;
                cv.notify_all();
                while !s.1 {
                    cv.wait(&mut s);
                }
            })
        })
        .collect();
    {
        let (lock, cv) = &*state;
        let mut s = lock.lock();
        while s.0 < THREADS {
            cv.wait(&mut s);
        }
        s.1 = true;
        cv.notify_all();
    }
    for t in threads {
        t.join().unwrap();
    }
}

/// One steady-state work cycle on a live master: fill, pin, expire, evict,
/// remove everything, release. Every cycle draws the same choices.
fn work_cycle(m: &Master) {
    let rng = &mut XorShift::new(5);
    for i in 0..1_000u64 {
        let key = format!("c{i}");
        let cfg =
            WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(1 + rng.below(100)));
        if let Ok(w) = m.upsert_start(1, Key::new(&key), 1 + rng.below(2 * KB), &cfg) {
            let _ = m.put_end(1, Key::new(&key), ReplicaSelector::All, Some(w.token));
        }
    }
    m.advance_time(50).unwrap();
    m.run_cleanup();
    m.evict_if_needed(true);
    m.advance_time(1_000_000).unwrap();
    m.run_maintenance_tick();
    m.remove_all(true);
}

#[test]
fn live_bytes_return_to_baseline_after_masters_are_dropped() {
    // no leak on create/use/drop, restore and failed restore, eviction, cleanup
    let scenarios: [(&str, fn()); 4] = [
        ("op sequences (40 × 250 steps)", op_sequences),
        ("maintenance thread on", with_maintenance_thread),
        ("restore + 300 failed restores", restores),
        ("eviction + cleanup (5000 objects)", eviction_and_cleanup),
    ];
    // Warm-up: one-time lazy allocations (hasher seeds, stdout) happen here,
    // and parking_lot's global wait table grows to its high-water size.
    grow_parking_lot_table();
    for (_, f) in &scenarios {
        f();
    }
    println!("alloc_counting: scenario, allocations, live bytes before -> after");
    let mut lines = Vec::with_capacity(scenarios.len());
    let mut leaks = Vec::with_capacity(scenarios.len());
    for (name, f) in &scenarios {
        let (before, allocs_before) = (live(), allocs());
        for _ in 0..3 {
            f();
        }
        let (after, n) = (live(), allocs() - allocs_before);
        lines.push((name, n, before, after));
    }
    // Printed afterwards: output buffers must not land between two samples.
    for (name, n, before, after) in lines {
        println!("  {name:<36} {n:>10} allocations, live bytes {before} -> {after}");
        if after != before {
            leaks.push(format!("{name}: {} bytes", after - before));
        }
    }

    // A live master: the footprint after identical cycles must not grow
    // (tables and heaps keep their high-water capacity; nothing else may).
    let m = Master::new(MasterConfig {
        shard_count: 16,
        ..MasterConfig::deterministic(1_000_000)
    })
    .unwrap();
    m.mount_segment(1, &seg("m", 1, 1 << 20, Pool::Memory))
        .unwrap();
    let mut samples = Vec::new();
    for cycle in 1..=60 {
        work_cycle(&m);
        if cycle % 10 == 0 {
            samples.push(live());
        }
    }
    m.check_invariants().unwrap();
    println!("  live master after cycles 10, 20, .., 60: {samples:?} bytes");
    let settled = samples[1];
    let last = *samples.last().unwrap();
    drop(m);
    assert!(leaks.is_empty(), "leaked: {leaks:?}");
    assert!(
        last <= settled + 16 * 1024,
        "a live master grows across identical cycles: {samples:?}"
    );
}
