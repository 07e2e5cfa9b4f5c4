//! A panic inside a maintenance task is caught and counted in
//! `maintenance_task_panics`, and later ticks still run. Needs the hidden
//! `debug_inject_maintenance_panic` hook: `cargo test --features test-hooks`.
#![cfg(feature = "test-hooks")]
mod common;
use common::*;
use mooncake_meta_core::*;
use std::time::Duration;

/// A hang guard for the waits below, never a speed check.
const HANG: Duration = Duration::from_secs(120);

/// Polls `cond` until it holds (fails after [`HANG`]: a hang check), then
/// waits for the maintenance thread to finish the tick that made it hold
/// (the quiesce gate is held for a whole tick), so every counter that tick
/// updates is visible, not only the one polled.
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

fn background(evict_ms: u64, cleanup_ms: u64) -> MasterConfig {
    MasterConfig {
        eviction_check_interval_ms: evict_ms,
        soft_pin_cleanup_interval_ms: cleanup_ms,
        ..MasterConfig::deterministic(T0)
    }
}

#[test]
fn a_panicking_task_is_counted_and_later_ticks_still_run() {
    // caught, counted, and cleanup keeps running afterwards
    let m = master_with(background(0, 5), 1, 0, 1 << 20);
    put(&m, "k", 64, &enable(100));
    m.debug_inject_maintenance_panic();
    wait_for(&m, "the panic to be counted", || {
        m.metrics().maintenance_task_panics == 1
    });
    let cycles = m.metrics().cleanup_cycles;
    wait_for(&m, "a later cleanup tick", || {
        m.metrics().cleanup_cycles > cycles
    });
    m.advance_time(100).unwrap();
    wait_for(&m, "cleanup after the panic", || gauge(&m) == 0);
    m.debug_inject_maintenance_panic();
    wait_for(&m, "the second panic", || {
        m.metrics().maintenance_task_panics == 2
    });
    {
        // No cleanup batch in flight while the invariants are checked.
        let _quiet = m.quiesce();
        inv(&m);
    }
}

#[test]
fn an_eviction_wake_up_still_works_after_a_panic() {
    // the thread survives a panic: an allocation failure still wakes it
    let m = master_with(background(3_600_000, 0), 1, 0, 1024);
    for i in 0..16 {
        put(&m, &format!("k{i:02}"), 64, &preserve());
    }
    m.debug_inject_maintenance_panic();
    wait_for(&m, "the panic to be counted", || {
        m.metrics().maintenance_task_panics == 1
    });
    assert_eq!(
        code(m.put_start(C1, k("new"), 64, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    wait_for(&m, "the woken eviction", || {
        m.metrics().eviction_successes == 1
    });
    m.put_start(C1, k("new"), 64, &preserve()).unwrap();
    // and the master still drops promptly
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(m);
        let _ = tx.send(());
    });
    // a hang check, not a speed check: the bug waits for the next tick (an hour)
    rx.recv_timeout(HANG).expect("drop after a panic hung");
}
