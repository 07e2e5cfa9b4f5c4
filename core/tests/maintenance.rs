//! docs/CONTRACT.md §4.8, §5, §9: the one maintenance thread. An
//! allocation failure returns NO_AVAILABLE_HANDLE at once and wakes it (the
//! retry succeeds after that one tick); each task runs on its own interval,
//! 0 = off; dropping a master returns promptly even with hour-long
//! intervals. Time inside the master is the manual clock; the real-time
//! waits below are bounded polls on a condition, never sleeps for a deadline.
mod common;
use common::*;
use mooncake_meta_core::*;
use std::time::Duration;

const HOUR: u64 = 3_600_000;

fn background(evict_ms: u64, cleanup_ms: u64, sweep_ms: u64) -> MasterConfig {
    MasterConfig {
        eviction_check_interval_ms: evict_ms,
        soft_pin_cleanup_interval_ms: cleanup_ms,
        sweep_interval_ms: sweep_ms,
        ..MasterConfig::deterministic(T0)
    }
}

/// A hang guard for the waits below, never a speed check: a maintenance
/// thread that is only slow (a starved CI core) still gets there.
const HANG: Duration = Duration::from_secs(120);

/// Polls `cond` until it holds (fails after [`HANG`]: a hang check), then
/// waits for the maintenance thread to finish the tick that made it hold.
/// A task updates several counters one after the other (the gauge before
/// `cleanup_expired`, `eviction_successes` before `evicted_keys`), so the
/// condition can hold mid-tick; taking the quiesce gate, which the thread
/// holds for a whole tick, makes everything that tick did visible.
fn wait_for(m: &Master, what: &str, mut cond: impl FnMut() -> bool) {
    let give_up = std::time::Instant::now() + HANG;
    while !cond() {
        assert!(
            std::time::Instant::now() < give_up,
            "timed out after {HANG:?} waiting for {what}: the maintenance thread hangs"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(m.quiesce());
}

/// `check_invariants` with the maintenance thread parked between tasks, so
/// no eviction, cleanup batch or sweep is half done (see `quiesce`).
fn inv_quiet(m: &Master) {
    let _quiet = m.quiesce();
    inv(m);
}

/// A 1 KiB memory segment filled with 16 objects of 64 bytes.
fn full(cfg: MasterConfig, c: &WriteConfig) -> Master {
    let m = master_with(cfg, 1, 0, 1024);
    for i in 0..16 {
        put(&m, &format!("k{i:02}"), 64, c);
    }
    m
}

#[test]
fn allocation_failure_wakes_the_maintenance_thread_and_the_retry_succeeds() {
    // NO_AVAILABLE_HANDLE at once, the thread wakes and evicts; the retry then succeeds.
    // The eviction interval is an hour, so only the wake-up can explain the eviction.
    let m = full(background(HOUR, 0, 0), &preserve());
    assert_eq!(
        code(m.put_start(C1, k("new"), 64, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    assert_eq!(m.metrics().put_start_failures, 1);
    wait_for(&m, "the woken eviction", || {
        m.metrics().eviction_successes >= 1
    });
    let mt = m.metrics();
    assert_eq!(mt.eviction_attempts, 1, "one wake-up, one run");
    // forced, used 1.0: target max(0.05, 1.0 − 0.9 + 0.05) = 0.15 → ceil(16 × 0.15) = 3
    assert_eq!(mt.evicted_keys, 3);
    assert_eq!(m.list_keys("default", "", None, 0).unwrap().keys[0], "k03");
    m.put_start(C1, k("new"), 64, &preserve()).unwrap();
    inv_quiet(&m);
}

#[test]
fn copy_failure_wakes_the_maintenance_thread_too() {
    // §3: NO_AVAILABLE_HANDLE from a copy target also requests an eviction
    let m = master_with(background(HOUR, 0, 0), 2, 0, 1024);
    put(
        &m,
        "src",
        64,
        &WriteConfig {
            preferred_segments: vec!["mem0".into()],
            ..WriteConfig::default()
        },
    );
    for i in 0..16 {
        put(
            &m,
            &format!("f{i:02}"),
            64,
            &WriteConfig {
                preferred_segments: vec!["mem1".into()],
                ..WriteConfig::default()
            },
        );
    }
    m.exist(k("src")).unwrap(); // leased: the eviction takes a filler
    assert_eq!(
        code(m.copy_start(k("src"), &["mem1"])),
        ErrorKind::NoAvailableHandle
    );
    wait_for(&m, "the woken eviction", || {
        m.metrics().eviction_successes >= 1
    });
    m.copy_start(k("src"), &["mem1"]).unwrap();
    inv_quiet(&m);
}

#[test]
fn dropping_a_master_with_hour_long_intervals_returns_promptly() {
    // the thread sleeps on a condvar, so drop does not wait for the next tick
    for clock in [ClockSource::System, ClockSource::Manual { start_ms: T0 }] {
        let m = Master::new(MasterConfig {
            clock: clock.clone(),
            ..background(HOUR, HOUR, HOUR)
        })
        .unwrap();
        m.mount_segment(C1, &spec("mem0", 0, 1 << 20, Pool::Memory))
            .unwrap();
        put(&m, "k", 64, &preserve());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(m);
            let _ = tx.send(());
        });
        // a hang check, not a speed check: the bug waits for the next tick (an hour)
        rx.recv_timeout(HANG)
            .unwrap_or_else(|_| panic!("dropping the master hung ({clock:?})"));
    }
}

#[test]
fn cleanup_runs_on_its_interval() {
    // §4.8: the maintenance thread runs soft-pin cleanup every soft_pin_cleanup_interval
    let m = master_with(background(0, 5, 0), 1, 0, 1 << 20);
    put(&m, "k", 64, &enable(100));
    assert_eq!(gauge(&m), 1);
    m.advance_time(100).unwrap();
    wait_for(&m, "cleanup to expire the pin", || gauge(&m) == 0);
    assert_eq!(deadline(&m, "k"), None);
    assert!(m.metrics().cleanup_expired >= 1);
    inv_quiet(&m);
}

#[test]
fn sweep_and_release_run_on_their_interval() {
    // §3: the thread sweeps stale writes and frees discarded buffers once due
    let m = master_with(background(0, 0, 5), 1, 0, 1 << 20);
    m.put_start(C1, k("stale"), 64, &preserve()).unwrap();
    put(&m, "k", 64, &preserve());
    upsert(&m, "k", 32, &preserve());
    m.advance_time(600_001).unwrap();
    wait_for(&m, "the sweep", || m.key_count() == 1);
    wait_for(&m, "the release", || {
        m.metrics().discarded_staging_bytes == 0
    });
    assert_eq!(m.metrics().memory_allocated_bytes, 32);
    assert_eq!(m.metrics().swept_writes, 1);
    inv_quiet(&m);
}

#[test]
fn eviction_check_runs_on_its_interval() {
    // §5/§9: above the watermark the periodic eviction check evicts without any request
    let m = full(background(5, 0, 0), &preserve());
    wait_for(&m, "a periodic eviction", || m.key_count() < 16);
    inv_quiet(&m);
}

#[test]
fn interval_zero_switches_a_task_off() {
    // §9: 0 = off: cleanup never runs while the eviction check keeps running
    let hard_pinned = WriteConfig {
        hard_pin: true,
        ..enable(100)
    };
    let m = full(background(5, 0, 0), &hard_pinned);
    m.advance_time(100).unwrap();
    // above the watermark, nothing evictable: every check is an attempt
    wait_for(&m, "three eviction checks", || {
        m.metrics().eviction_attempts >= 3
    });
    let mt = m.metrics();
    assert_eq!(mt.cleanup_cycles, 0);
    assert_eq!(mt.soft_pin_key_count, 16, "expired but never cleaned");
    drop(m);

    let m = full(background(0, 5, 0), &hard_pinned);
    wait_for(&m, "three cleanup cycles", || {
        m.metrics().cleanup_cycles >= 3
    });
    assert_eq!(m.metrics().eviction_attempts, 0);
}
