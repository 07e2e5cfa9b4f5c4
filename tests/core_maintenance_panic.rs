//! Issue 5: a panic inside a maintenance task is caught and counted in
//! `maintenance_task_panics`, and later ticks still run. Needs the hidden
//! `debug_inject_maintenance_panic` hook: `cargo test --features test-hooks`.
#![cfg(feature = "test-hooks")]
mod common;
use common::*;
use mooncake_meta::*;
use std::time::Duration;

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(
            std::time::Instant::now() < give_up,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
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
    // issue 5: caught, counted, and cleanup keeps running afterwards
    let m = master_with(background(0, 5), 1, 0, 1 << 20);
    put(&m, "k", 64, &enable(100));
    m.debug_inject_maintenance_panic();
    wait_for("the panic to be counted", || {
        m.metrics().maintenance_task_panics == 1
    });
    let cycles = m.metrics().cleanup_cycles;
    wait_for("a later cleanup tick", || {
        m.metrics().cleanup_cycles > cycles
    });
    m.advance_time(100).unwrap();
    wait_for("cleanup after the panic", || gauge(&m) == 0);
    m.debug_inject_maintenance_panic();
    wait_for("the second panic", || {
        m.metrics().maintenance_task_panics == 2
    });
    inv(&m);
}

#[test]
fn an_eviction_wake_up_still_works_after_a_panic() {
    // issue 5: the thread survives a panic: an allocation failure still wakes it
    let m = master_with(background(3_600_000, 0), 1, 0, 1024);
    for i in 0..16 {
        put(&m, &format!("k{i:02}"), 64, &preserve());
    }
    m.debug_inject_maintenance_panic();
    wait_for("the panic to be counted", || {
        m.metrics().maintenance_task_panics == 1
    });
    assert_eq!(
        code(m.put_start(C1, k("new"), 64, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    wait_for("the woken eviction", || m.metrics().eviction_successes == 1);
    m.put_start(C1, k("new"), 64, &preserve()).unwrap();
    // and the master still drops promptly
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(m);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("drop after a panic hung");
}
