//! docs/CONTRACT.md §4.8 deadline index through the master: updates leave stale
//! entries that cleanup drops, the heap stays within max(4096, 2 × live)
//! under repeated re-enabling, deletion paths unregister, and the
//! exact-deadline compare-and-swap keeps cleanup from clearing a newer
//! deadline — also while upserts re-enable the same keys concurrently.
mod common;

use common::*;
use mooncake_meta_core::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

#[test]
fn ttl_update_leaves_a_stale_entry_that_cleanup_ignores() {
    // §4.8: updating a deadline pushes a new entry; the old one goes stale (lazy invalidation)
    let m = master();
    put(&m, "k", 64, &enable(1_000));
    m.advance_time(10).unwrap();
    upsert(&m, "k", 64, &enable(5_000)); // active D replaced at End
    let (d_old, d_new) = (T0 + 1_000, T0 + 10 + 5_000);
    assert_eq!(deadline(&m, "k"), Some(d_new));
    assert_eq!(m.index_sizes(), (2, 1));
    let st = m.run_cleanup_at(d_old);
    assert_eq!((st.popped, st.stale_dropped, st.expired), (1, 1, 0));
    // Validity lives in the record: the stale entry is told apart under its shard's lock.
    assert_eq!(st.shards_touched, 1);
    assert_eq!(deadline(&m, "k"), Some(d_new));
    assert_eq!(m.index_sizes(), (1, 1));
    assert_eq!(gauge(&m), 1);
    inv(&m);
    assert_eq!(m.run_cleanup_at(d_new).expired, 1);
    assert_eq!((gauge(&m), m.index_sizes()), (0, (0, 0)));
    inv(&m);
}

#[test]
fn a_carried_deadline_expires_after_the_object_is_replaced() {
    // §4.5 + §4.8: a case-C upsert (other size) carries the active deadline into replacement
    // metadata; the index entry names the record's handle, which the replacement keeps, so
    // the entry stays the valid one and cleanup still expires it on time, once.
    let m = master();
    put(&m, "k", 64, &enable(1_000));
    let d = T0 + 1_000;
    m.advance_time(10).unwrap();
    let w = m.upsert_start(C1, k("k"), 128, &preserve()).unwrap();
    inv(&m);
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(d));
    assert_eq!(
        m.index_sizes(),
        (1, 1),
        "the carried deadline keeps its entry"
    );
    inv(&m);
    let st = m.run_cleanup_at(d - 1);
    assert_eq!(st.popped, 0);
    let st = m.run_cleanup_at(d);
    assert_eq!((st.popped, st.stale_dropped, st.expired), (1, 0, 1));
    assert_eq!(
        (deadline(&m, "k"), gauge(&m), m.index_sizes()),
        (None, 0, (0, 0))
    );
    inv(&m);
}

#[test]
fn shorter_ttl_update_expires_at_the_new_deadline_only() {
    // §4.3: ENABLE replaces an active deadline even when shorter; the longer old entry is stale
    let m = master();
    put(&m, "k", 64, &enable(50_000));
    upsert(&m, "k", 64, &enable(1_000));
    assert_eq!(m.run_cleanup_at(T0 + 1_000).expired, 1);
    assert_eq!(deadline(&m, "k"), None);
    let st = m.run_cleanup_at(T0 + 50_000);
    assert_eq!((st.stale_dropped, st.expired), (1, 0));
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

#[test]
fn five_thousand_updates_keep_the_heap_bounded_and_only_the_newest_expires() {
    // §4.8: rebuild when heap > max(4096, 2 × live); the newest registration alone is valid
    let m = master();
    put(&m, "k", 64, &enable(30_000));
    let mut newest = 0;
    let mut max_heap = 0;
    for i in 0..5_000u64 {
        m.advance_time(1).unwrap();
        // Shrinking TTLs: every older deadline lies after the newest one, so
        // an old entry that wrongly expired would show.
        let ttl = 30_000 - 3 * i;
        upsert(&m, "k", 64, &enable(ttl));
        newest = m.now() + ttl;
        let (heap, live) = m.index_sizes();
        assert!(heap <= 4_096, "update {i}: heap {heap}");
        assert_eq!(live, 1);
        max_heap = max_heap.max(heap);
    }
    assert_eq!(deadline(&m, "k"), Some(newest));
    assert!(
        max_heap > 1_000,
        "entries accumulate until a rebuild ({max_heap})"
    );
    inv(&m);
    let st = m.run_cleanup_at(newest);
    assert_eq!(st.expired, 1);
    assert_eq!(deadline(&m, "k"), None);
    assert_eq!(gauge(&m), 0);
    // Everything left in the heap is stale: nothing else ever expires.
    let st = m.run_cleanup_at(u64::MAX / 2);
    assert_eq!(st.expired, 0);
    assert_eq!(st.popped, st.stale_dropped);
    assert_eq!(m.index_sizes(), (0, 0));
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

#[test]
fn every_deletion_path_unregisters() {
    // §4.8: unregistered on deletion (by key, whatever the deadline), gauge −1 each
    type Delete = fn(&Master);
    let cases: [(&str, Delete, u64); 7] = [
        ("remove", |m| m.remove(k("k"), true).unwrap(), 1),
        ("remove_all", |m| assert_eq!(m.remove_all(true), 2), 0),
        (
            "remove_by_regex",
            |m| assert_eq!(m.remove_by_regex(None, "^k$", true).unwrap(), 1),
            1,
        ),
        (
            "eviction of an active pin (second pass)",
            |m| {
                m.set_time(T0 + 1).unwrap();
                assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 1);
            },
            1,
        ),
        (
            "unmount",
            |m| {
                m.unmount_segment(C1, "mem0").unwrap();
                m.unmount_segment(C1, "mem1").unwrap();
            },
            1,
        ),
        (
            "case-B revoke",
            |m| {
                let w = m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
                m.upsert_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token))
                    .unwrap();
            },
            1,
        ),
        (
            "stale-write sweep of a case-B write",
            |m| {
                m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
                m.sweep_stale_writes_at(u64::MAX / 4);
            },
            1,
        ),
    ];
    for (name, delete, remaining) in cases {
        let m = master();
        put(&m, "k", 64, &enable(MAX_TTL));
        // A pin that none of the paths above touches (second pool only).
        let other = WriteConfig {
            memory_replicas: 0,
            nof_ssd_replicas: 1,
            ..enable(MAX_TTL)
        };
        put(&m, "other", 64, &other);
        assert_eq!(m.index_sizes(), (2, 2), "{name}");
        delete(&m);
        assert_eq!(
            code(m.soft_pin_deadline(k("k"))),
            ErrorKind::ObjectNotFound,
            "{name}"
        );
        assert_eq!(m.index_sizes().1 as u64, remaining, "{name}");
        assert_eq!(gauge(&m), remaining, "{name}");
        inv(&m);
        // The deleted key's entry is stale for ever: only "other" can expire.
        let st = m.run_cleanup_at(u64::MAX / 2);
        assert_eq!(st.expired, remaining, "{name}");
        assert_eq!(gauge(&m), 0, "{name}");
        inv(&m);
    }
}

#[test]
fn re_enabled_key_keeps_its_newer_deadline_when_the_old_entry_is_due() {
    // §4.8: clear only if the committed deadline still equals the popped one (CAS)
    let m = master();
    put(&m, "k", 64, &enable(1_000));
    m.set_time(T0 + 1_000).unwrap(); // stored but expired: its entry is due
    upsert(&m, "k", 64, &enable(9_000)); // re-enabled: gauge-neutral re-register
    assert_eq!(deadline(&m, "k"), Some(T0 + 10_000));
    let st = m.run_cleanup_at(T0 + 1_000);
    assert_eq!((st.popped, st.stale_dropped, st.expired), (1, 1, 0));
    assert_eq!(deadline(&m, "k"), Some(T0 + 10_000));
    assert_eq!(gauge(&m), 1);
    inv(&m);
}

#[test]
fn cleanup_racing_re_enabling_upserts_never_clears_the_newer_deadline() {
    // §4.8 CAS under concurrency: a popped old entry never clears a re-enabled deadline
    const WRITERS: usize = 3;
    const KEYS: usize = 64;
    const ROUNDS: u64 = 300;
    let m = Arc::new(master_with(config(), 2, 0, 4 << 20));
    for w in 0..WRITERS {
        for i in 0..KEYS {
            put(&m, &format!("w{w}-{i}"), 64, &preserve());
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let cleaner = {
        let (m, stop) = (Arc::clone(&m), Arc::clone(&stop));
        thread::spawn(move || {
            let (mut cas_misses, mut cycles) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                m.advance_time(1).unwrap();
                let st = m.run_cleanup();
                // Valid pops whose compare-and-swap found another deadline.
                cas_misses += st.popped - st.stale_dropped - st.expired;
                cycles += 1;
            }
            (cas_misses, cycles)
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                let keys: Vec<String> = (0..KEYS).map(|i| format!("w{w}-{i}")).collect();
                let mut long = vec![0u64; KEYS];
                for round in 0..ROUNDS {
                    // Each key is this writer's alone, and nothing but cleanup
                    // runs: a long pin can only disappear by a wrong clear.
                    for key in &keys {
                        upsert(&m, key, 64, &enable(1 + round % 3));
                    }
                    // The short pins fall due while these re-enable them; the
                    // cleaner pops their entries meanwhile.
                    for (i, key) in keys.iter().enumerate() {
                        upsert(&m, key, 64, &enable(MAX_TTL));
                        long[i] = m.soft_pin_deadline(k(key)).unwrap().unwrap_or(0);
                        assert!(long[i] > m.now(), "{key}: long pin cleared at once");
                    }
                    for (i, key) in keys.iter().enumerate() {
                        assert_eq!(
                            m.soft_pin_deadline(k(key)).unwrap(),
                            Some(long[i]),
                            "{key}: round {round}: cleanup cleared a newer deadline"
                        );
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let (cas_misses, cycles) = cleaner.join().unwrap();
    inv(&m);
    assert_eq!(
        gauge(&m),
        (WRITERS * KEYS) as u64,
        "every key ends long-pinned"
    );
    println!(
        "{cycles} cleanup cycles raced {WRITERS} re-enabling writers; \
         {cas_misses} popped entries lost the compare-and-swap"
    );
}

/// Races at exact points through the `test-hooks` race hook (deterministic).
#[cfg(feature = "test-hooks")]
mod at_exact_points {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Retention-index rebuilds started on `m` since this call, and of them those that found
    /// the retention registry's lock free (a try-lock in the hook, which never waits).
    struct RebuildCount {
        started: Arc<AtomicUsize>,
        registry_free: Arc<AtomicUsize>,
    }

    impl RebuildCount {
        fn install(m: &MasterCore) -> Self {
            let started = Arc::new(AtomicUsize::new(0));
            let registry_free = Arc::new(AtomicUsize::new(0));
            let (s, f) = (Arc::clone(&started), Arc::clone(&registry_free));
            m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
                if p == RacePoint::RetentionRebuild {
                    s.fetch_add(1, Ordering::SeqCst);
                    if core.debug_retention_registry_free() {
                        f.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })));
            RebuildCount {
                started,
                registry_free,
            }
        }

        /// (started, of them with the registry's lock free).
        fn get(&self) -> (usize, usize) {
            (
                self.started.load(Ordering::SeqCst),
                self.registry_free.load(Ordering::SeqCst),
            )
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("g{i}")).collect()
    }

    fn strs(names: &[String]) -> Vec<&str> {
        names.iter().map(String::as_str).collect()
    }

    fn all_ok<T: std::fmt::Debug>(rs: Vec<Result<T>>) {
        for r in rs {
            r.unwrap();
        }
    }

    #[test]
    fn a_retain_or_a_release_rebuilds_the_retention_index_after_the_registry_lock() {
        // §4.8/§11: index changes happen under the registry's write lock (which eviction and
        // restores wait for while they hold shard locks); the rebuild they ask for runs once
        // that lock is released, before the call returns.
        const N: usize = 3_000;
        let m = master();
        let count = RebuildCount::install(&m);
        let names = names(N);
        let all = strs(&names);
        all_ok(m.retain_groups(DEFAULT_TENANT, &all, 1_000).unwrap());
        m.advance_time(1).unwrap();
        // Each extension leaves a stale entry: heap 2N, at the bound.
        all_ok(m.retain_groups(DEFAULT_TENANT, &all, 1_000).unwrap());
        assert_eq!(m.retention_index_sizes(), (2 * N, N));
        assert_eq!(count.get(), (0, 0));
        // A retain goes over it.
        m.advance_time(1).unwrap();
        all_ok(m.retain_groups(DEFAULT_TENANT, &["g0"], 1_000).unwrap());
        assert_eq!(count.get(), (1, 1), "one rebuild, with the registry free");
        assert_eq!(m.retention_index_sizes(), (N, N));
        // A release goes over it.
        m.advance_time(1).unwrap();
        all_ok(m.retain_groups(DEFAULT_TENANT, &all, 1_000).unwrap());
        assert_eq!(m.retention_index_sizes(), (2 * N, N));
        all_ok(m.release_groups(DEFAULT_TENANT, &["g0"]).unwrap());
        assert_eq!(count.get(), (2, 2));
        assert_eq!(m.retention_index_sizes(), (N - 1, N - 1));
        m.debug_set_race_hook(None);
        inv(&m);
    }

    /// `n` groups retained, `n - 1` of them with a short deadline (`T0 + 2 + 100`) and a stale
    /// entry of a long one (`T0 + 1_000`): heap `2n - 1`, live `n`. Once the short ones are due,
    /// expiring them leaves `n` entries for 1 registration.
    fn short_over_stale_long(m: &Master, names: &[String]) {
        all_ok(
            m.retain_groups(DEFAULT_TENANT, &strs(names), 1_000)
                .unwrap(),
        );
        m.advance_time(2).unwrap();
        // One at a time, so live never drops far enough under the heap to want a rebuild.
        for g in &names[1..] {
            all_ok(m.release_groups(DEFAULT_TENANT, &[g]).unwrap());
            all_ok(m.retain_groups(DEFAULT_TENANT, &[g], 100).unwrap());
        }
        assert_eq!(
            m.retention_index_sizes(),
            (2 * names.len() - 1, names.len())
        );
    }

    #[test]
    fn a_cleanup_cycle_rebuilds_the_retention_index_after_its_pops() {
        // §4.8/§11: a cycle's pops ask for the rebuild; it runs at the end of the cycle, with
        // the registry's lock released.
        const N: usize = 5_000;
        let m = master();
        let names = names(N);
        short_over_stale_long(&m, &names);
        let count = RebuildCount::install(&m);
        m.run_cleanup_at(T0 + 102);
        assert_eq!(count.get(), (1, 1));
        assert_eq!(m.retention_index_sizes(), (1, 1));
        m.debug_set_race_hook(None);
        inv(&m);
    }

    #[test]
    fn a_retain_draining_a_full_registry_rebuilds_after_the_registry_lock() {
        // §11: a retain into a full registry first expires what is due, under the registry's
        // lock; the rebuild those pops ask for runs once the retain has released it.
        const N: usize = 5_000;
        let m = Master::new(MasterConfig {
            max_retained_groups: N,
            ..config()
        })
        .unwrap();
        let names = names(N);
        short_over_stale_long(&m, &names);
        m.set_time(T0 + 102).unwrap();
        let count = RebuildCount::install(&m);
        all_ok(m.retain_groups(DEFAULT_TENANT, &["new"], 1_000).unwrap());
        assert_eq!(count.get(), (1, 1));
        assert_eq!(m.retention_index_sizes(), (2, 2));
        assert_eq!(m.metrics().retained_group_count, 2);
        m.debug_set_race_hook(None);
        inv(&m);
    }

    #[test]
    fn a_standby_applying_retention_records_rebuilds_after_the_registry_lock() {
        // §12.3 + §11: a standby applies GroupRetained/GroupReleased under the registry's lock
        // and runs the rebuild they ask for once it is released.
        use mooncake_meta_core::journal::{encode_batch, Record};
        const N: usize = 3_000;
        let m = Master::new(MasterConfig {
            standby: true,
            ..config()
        })
        .unwrap();
        let count = RebuildCount::install(&m);
        let retained = |i: usize, deadline: u64| Record::GroupRetained {
            tenant: DEFAULT_TENANT.into(),
            group: format!("g{i}"),
            deadline,
        };
        let mut recs: Vec<Record> = (0..N).map(|i| retained(i, T0 + 1_000)).collect();
        recs.extend((0..N).map(|i| retained(i, T0 + 2_000)));
        m.apply_journal(&encode_batch(1, &recs).unwrap()).unwrap();
        assert_eq!(m.retention_index_sizes(), (2 * N, N));
        assert_eq!(count.get(), (0, 0));
        let released = Record::GroupReleased {
            tenant: DEFAULT_TENANT.into(),
            group: "g0".into(),
        };
        m.apply_journal(&encode_batch(2 * N as u64 + 1, &[released]).unwrap())
            .unwrap();
        assert_eq!(count.get(), (1, 1));
        assert_eq!(m.retention_index_sizes(), (N - 1, N - 1));
        m.debug_set_race_hook(None);
        inv(&m);
    }

    #[test]
    fn a_full_registry_counts_its_active_groups_once_per_retain() {
        // §11: while max_retained_groups groups are retained, each new group of a call is
        // GROUP_RETENTION_FULL. The active groups are counted once per call (and kept up to
        // date by the call's admissions), not once per new group: 200 000 new groups into
        // 65 536 scanned the registry 200 000 times under its write lock.
        let m = master();
        let limit = config().max_retained_groups;
        let names = names(limit);
        all_ok(
            m.retain_groups(DEFAULT_TENANT, &strs(&names), 60_000)
                .unwrap(),
        );
        let before = m.debug_retention_admission_scanned();
        let fresh: Vec<String> = (0..200_000).map(|i| format!("new{i}")).collect();
        let rs = m
            .retain_groups(DEFAULT_TENANT, &strs(&fresh), 60_000)
            .unwrap();
        assert!(rs
            .iter()
            .all(|r| r.as_ref().unwrap_err().kind() == ErrorKind::GroupRetentionFull));
        let scanned = m.debug_retention_admission_scanned() - before;
        assert_eq!(
            scanned, limit as u64,
            "one scan of the registry for the call"
        );
        assert_eq!(m.metrics().retained_group_count, limit as u64);
        inv(&m);
    }

    #[test]
    fn retaining_a_group_again_with_the_popped_deadline_keeps_the_new_retention() {
        // As for soft pins (§4.8): cleanup ahead of the clock pops a group's
        // retention; before it takes the registry's lock the group is
        // released and retained again with the very deadline popped. The
        // new retention stays committed and registered, and the next cycle
        // expires it through its own registration.
        let m = master();
        let ttl = 1_000;
        m.retain_groups(DEFAULT_TENANT, &["g"], ttl).unwrap()[0]
            .as_ref()
            .unwrap();
        let d = T0 + ttl;
        let fired = Arc::new(AtomicBool::new(false));
        let once = Arc::clone(&fired);
        m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
            if p == RacePoint::RetentionPopped && !once.swap(true, Ordering::Relaxed) {
                core.release_groups(DEFAULT_TENANT, &["g"]).unwrap();
                // The clock is still at T0: the same TTL commits the same deadline.
                let again = core.retain_groups(DEFAULT_TENANT, &["g"], ttl).unwrap();
                assert_eq!(again[0], Ok(d));
            }
        })));
        m.run_cleanup_at(d);
        m.debug_set_race_hook(None);
        assert!(fired.load(Ordering::Relaxed));
        assert_eq!(
            m.group_retention_deadline(DEFAULT_TENANT, "g").unwrap(),
            Some(d)
        );
        assert_eq!(m.metrics().retained_group_count, 1);
        inv(&m);
        m.run_cleanup_at(d);
        assert_eq!(
            m.group_retention_deadline(DEFAULT_TENANT, "g").unwrap(),
            None
        );
        assert_eq!(m.metrics().retained_group_count, 0);
        inv(&m);
    }

    #[test]
    fn recommitting_the_same_deadline_after_the_pop_keeps_the_new_pin_registered() {
        // §4.8: a writer re-enables the key with the very deadline cleanup has just popped,
        // between the pop and cleanup's shard lock. The popped entry names the earlier
        // registration, so it must not clear the new one: the pin stays committed and
        // registered, and the next cycle expires it through its own entry.
        let m = master();
        put(&m, "k", 64, &enable(1_000));
        let d = T0 + 1_000;
        let fired = Arc::new(AtomicBool::new(false));
        let once = Arc::clone(&fired);
        m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
            if p == (RacePoint::CleanupShard { entries_done: 0 })
                && !once.swap(true, Ordering::Relaxed)
            {
                // The clock is still at T0: the same TTL commits the same deadline.
                let w = core.upsert_start(C1, k("k"), 64, &enable(1_000)).unwrap();
                core.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
                    .unwrap();
            }
        })));
        let st = m.run_cleanup_at(d);
        m.debug_set_race_hook(None);
        assert!(fired.load(Ordering::Relaxed));
        assert_eq!((st.popped, st.stale_dropped, st.expired), (1, 1, 0));
        assert_eq!(
            deadline(&m, "k"),
            Some(d),
            "the re-enabled pin is not cleared"
        );
        assert_eq!(gauge(&m), 1);
        inv(&m);
        let st = m.run_cleanup_at(d);
        assert_eq!((st.popped, st.expired), (1, 1));
        assert_eq!(
            (deadline(&m, "k"), gauge(&m), m.index_sizes()),
            (None, 0, (0, 0))
        );
        inv(&m);
    }
    #[test]
    fn a_popped_entry_of_a_removed_object_never_clears_the_key_written_again_in_its_slot() {
        // §4.8: between the pop and cleanup's shard lock the object is removed and its key
        // written again with the same TTL at the same instant. The new record takes the freed
        // arena slot with the same pin version and the same deadline; the slot's generation
        // has moved on, so the popped entry is stale and the new pin stays committed and
        // registered until its own entry expires it.
        let m = master();
        put(&m, "k", 64, &enable(1_000));
        let d = T0 + 1_000;
        let fired = Arc::new(AtomicBool::new(false));
        let once = Arc::clone(&fired);
        m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
            if p == (RacePoint::CleanupShard { entries_done: 0 })
                && !once.swap(true, Ordering::Relaxed)
            {
                core.remove(k("k"), true).unwrap();
                let w = core.put_start(C1, k("k"), 64, &enable(1_000)).unwrap();
                core.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
                    .unwrap();
            }
        })));
        let st = m.run_cleanup_at(d);
        m.debug_set_race_hook(None);
        assert!(fired.load(Ordering::Relaxed));
        assert_eq!((st.popped, st.stale_dropped, st.expired), (1, 1, 0));
        assert_eq!(deadline(&m, "k"), Some(d), "the new pin is not cleared");
        assert_eq!((gauge(&m), m.index_sizes()), (1, (1, 1)));
        inv(&m);
        let st = m.run_cleanup_at(d);
        assert_eq!((st.popped, st.expired), (1, 1));
        assert_eq!(
            (deadline(&m, "k"), gauge(&m), m.index_sizes()),
            (None, 0, (0, 0))
        );
        inv(&m);
    }
}

/// §4.8 / §8: the heap stays within max(4096, 2 × live registrations) after
/// the operations that drop pins, not only after those that push entries:
/// a mass Remove, an eviction run normalising expired pins, an unmount, a
/// PutStart replacing stale writes that carried pins, their sweep, and a
/// Revoke of in-place Upserts.
#[test]
fn the_heap_keeps_its_bound_after_every_operation_that_drops_pins() {
    const N: usize = 5_000;
    let within = |m: &Master, what: &str| {
        let (heap, live) = m.index_sizes();
        assert!(
            heap <= 4096.max(2 * live),
            "{what}: heap {heap} over the bound of {live} live registrations"
        );
    };
    let pinned = |ttl| {
        let m = master_with(config(), 1, 0, 1 << 30);
        for i in 0..N {
            put(&m, &format!("k{i}"), 64, &enable(ttl));
        }
        assert_eq!(m.index_sizes(), (N, N));
        m
    };
    let m = pinned(60_000);
    for i in 0..4_000 {
        m.remove(k(&format!("k{i}")), true).unwrap();
    }
    within(&m, "Remove");
    let m = pinned(60_000);
    assert_eq!(m.remove_all(true), N as u64);
    within(&m, "RemoveAll");
    let m = pinned(5);
    m.advance_time(10).unwrap();
    m.run_eviction(0.0, 0.0).unwrap();
    assert_eq!(gauge(&m), 0, "every expired pin normalised");
    within(&m, "eviction");
    let m = pinned(60_000);
    m.unmount_segment(C1, "mem0").unwrap();
    within(&m, "unmount");
    inv(&m);
    // Case-C Upserts carry each pin onto a write with nothing COMPLETE; once
    // stale, a PutStart replaces it, or the sweep erases it.
    let stale = || {
        let m = pinned(60_000_000);
        for i in 0..N {
            m.upsert_start(C1, k(&format!("k{i}")), 128, &preserve())
                .unwrap();
        }
        m.advance_time(31_000).unwrap();
        m
    };
    let m = stale();
    let keys: Vec<String> = (0..N).map(|i| format!("k{i}")).collect();
    let ks: Vec<Key> = keys.iter().map(|s| k(s)).collect();
    let started = m.batch_put_start(C1, &ks, &vec![64; N], &preserve());
    assert!(started.iter().all(|r| r.is_ok()));
    within(&m, "PutStart replacing stale writes");
    let m = stale();
    assert_eq!(m.sweep_stale_writes_at(m.now() + 600_000), N as u64);
    within(&m, "sweep");
    // Revoking an in-place (case B) Upsert erases the object and its pin.
    let m = pinned(60_000);
    for i in 0..N {
        let w = m
            .upsert_start(C1, k(&format!("k{i}")), 64, &preserve())
            .unwrap();
        m.put_revoke(C1, k(&format!("k{i}")), ReplicaSelector::All, Some(w.token))
            .unwrap();
    }
    within(&m, "Revoke");
    inv(&m);
}
