//! One master shared by several threads through the safe layer (`Master`
//! is `Send + Sync`; every C call may run concurrently but `_free`).

mod common;

use common::*;
use mooncake_meta_sys::safe::*;
use std::sync::Arc;
use std::thread;

fn assert_send_sync<T: Send + Sync>() {}

// Writers on disjoint keys and a reader on all of them end in a consistent master.
#[test]
fn concurrent_writers_and_readers_share_one_master() {
    assert_send_sync::<Master>();
    assert_send_sync::<MasterConfig>();
    const THREADS: usize = 4;
    const KEYS: usize = 40;
    let m = Arc::new(master());
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                for i in 0..KEYS {
                    let key = format!("t{t}-k{i}");
                    let cfg = if i % 2 == 0 {
                        enable(Some(60_000))
                    } else {
                        WriteConfig::default()
                    };
                    let s = m
                        .put_start(t as u64 + 1, Key::new(&key), SIZE, &cfg)
                        .unwrap();
                    m.put_end(
                        t as u64 + 1,
                        Key::new(&key),
                        ReplicaSelector::All,
                        Some(s.token),
                    )
                    .unwrap();
                    assert!(m.exist(Key::new(&key)).unwrap());
                    assert_eq!(m.get_replica_list(Key::new(&key)).unwrap().len(), 1);
                }
            })
        })
        .collect();
    let reader = {
        let m = Arc::clone(&m);
        thread::spawn(move || {
            let mut seen = 0;
            while seen < THREADS * KEYS {
                let n = m.key_count() as usize;
                assert!(n >= seen, "key count went back from {seen} to {n}");
                seen = n;
                m.metrics();
                let _ = m.exist(Key::new("t0-k0"));
                thread::yield_now();
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    reader.join().unwrap();
    assert_eq!(m.key_count() as usize, THREADS * KEYS);
    assert_eq!(m.metrics().soft_pin_key_count as usize, THREADS * KEYS / 2);
    m.check_invariants().unwrap();
}

// Cleanup on one thread and snapshots on another, while the clock moves on a third.
#[test]
fn cleanup_snapshot_and_clock_race_safely() {
    let m = Arc::new(master());
    for i in 0..64 {
        put(&m, &format!("k{i}"), &enable(Some(1_000 + i)));
    }
    let clock = {
        let m = Arc::clone(&m);
        thread::spawn(move || {
            for _ in 0..100 {
                m.advance_time(1).unwrap();
            }
        })
    };
    let cleaner = {
        let m = Arc::clone(&m);
        thread::spawn(move || (0..50).map(|_| m.run_cleanup().expired).sum::<u64>())
    };
    let snapshotter = {
        let m = Arc::clone(&m);
        thread::spawn(move || {
            for _ in 0..10 {
                assert!(!m.snapshot().unwrap().is_empty());
            }
        })
    };
    clock.join().unwrap();
    let expired = cleaner.join().unwrap();
    snapshotter.join().unwrap();
    // At T0 + 100 every deadline (T0 + 1000 + i) is still ahead.
    assert_eq!(expired, 0);
    assert_eq!(m.now(), T0 + 100);
    assert_eq!(m.run_cleanup_at(T0 + 1_063).expired, 64);
    m.check_invariants().unwrap();
}

// A master moved to another thread is used and dropped there.
#[test]
fn a_master_moves_between_threads() {
    let m = master();
    put(&m, "k", &WriteConfig::default());
    let count = thread::spawn(move || {
        let n = m.key_count();
        drop(m);
        n
    })
    .join()
    .unwrap();
    assert_eq!(count, 1);
}
