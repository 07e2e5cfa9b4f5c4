//! docs/CONTRACT.md §5: single objects are evicted in windows of
//! consecutive candidates under their shards' write locks held together,
//! a group ends a window and goes whole on its own; what a run evicts is
//! exactly what taking the order one candidate at a time would evict
//! (checked against a reference of the passes, across shard counts,
//! targets, lowerbounds and protected objects, and with leases granted
//! between the collection and the evictions).
mod common;
use common::*;
use mooncake_meta_core::*;
use std::collections::BTreeSet;

const N: usize = 300;

/// Object `i`: soft-pinned (protected) when `i % 5 == 0`; objects `i` and
/// `i + 1` form a group when `i % 17 == 3` (so {20, 21}, {71, 72}, ... have
/// a pinned member).
fn pinned(i: usize) -> bool {
    i % 5 == 0
}

fn group_of(i: usize) -> Option<usize> {
    if i % 17 == 3 {
        Some(i)
    } else if i > 0 && (i - 1) % 17 == 3 {
        Some(i - 1)
    } else {
        None
    }
}

fn name(i: usize) -> String {
    format!("k{i:03}")
}

fn build(shards: usize, allow_pinned: bool) -> Master {
    build_with(MasterConfig {
        shard_count: shards,
        allow_evict_soft_pinned_objects: allow_pinned,
        ..config()
    })
}

fn build_with(cfg: MasterConfig) -> Master {
    let m = master_with(cfg, 2, 0, 1 << 24);
    for i in 0..N {
        let mut c = if pinned(i) {
            enable(MAX_TTL)
        } else {
            preserve()
        };
        c.group = group_of(i).map(|g| format!("g{g}"));
        put(&m, &name(i), 64, &c);
    }
    // Every lease has run out: the order is the creation order.
    m.advance_time(LEASE + 1).unwrap();
    m
}

/// The passes of §5 taken one candidate at a time, in order (creation
/// order here), over objects `0..N` less `leased` (not candidates at
/// eviction time). Returns the evicted objects.
fn reference(target_n: u64, lower_n: u64, allow_pinned: bool, leased: &[usize]) -> BTreeSet<usize> {
    let mut done = [false; N];
    let mut evicted = BTreeSet::new();
    let mut step = |take_pinned: bool, goal: u64, evicted: &mut BTreeSet<usize>| {
        for i in 0..N {
            if evicted.len() as u64 >= goal {
                return;
            }
            if done[i] || leased.contains(&i) {
                continue;
            }
            let members: Vec<usize> = match group_of(i) {
                Some(g) => vec![g, g + 1],
                None => vec![i],
            };
            // A group goes only if every member passes the pass's checks.
            if members
                .iter()
                .any(|&j| leased.contains(&j) || (pinned(j) && !take_pinned))
            {
                continue;
            }
            for j in members {
                done[j] = true;
                evicted.insert(j);
            }
        }
    };
    step(false, target_n, &mut evicted);
    if (evicted.len() as u64) < lower_n {
        step(false, lower_n, &mut evicted);
        if allow_pinned {
            step(true, lower_n, &mut evicted);
        }
    }
    evicted
}

fn evicted_of(m: &Master) -> BTreeSet<usize> {
    (0..N).filter(|&i| !m.exist(k(&name(i))).unwrap()).collect()
}

#[test]
fn windows_evict_what_taking_the_order_one_by_one_would() {
    // §5: first pass, second pass (unprotected, then protected), groups
    // whole, the goal exact, whatever the shard count (one shard: every
    // window in one lock; 1024: a lock per object).
    // With few candidates kept by the reading (`keep`), the passes read the
    // dropped ones again as they reach them, and evict the same.
    for (shards, keep) in [
        (1, None),
        (4, None),
        (1024, None),
        (1, Some(1)),
        (4, Some(7)),
        (1024, Some(40)),
    ] {
        for allow_pinned in [false, true] {
            for (target, lower) in [(0.1, 0.0), (0.3, 0.6), (0.5, 0.5), (0.05, 0.95), (1.0, 1.0)] {
                let m = build(shards, allow_pinned);
                m.debug_set_eviction_keep(keep);
                let r = m.run_eviction(target, lower).unwrap();
                let (target_n, lower_n) = (
                    (N as f64 * target).ceil() as u64,
                    (N as f64 * lower).ceil() as u64,
                );
                let want = reference(target_n, lower_n, allow_pinned, &[]);
                let what = format!(
                    "shards {shards}, keep {keep:?}, allow {allow_pinned}, {target}/{lower}: {r:?}"
                );
                assert_eq!(r.base, N as u64, "{what}");
                assert_eq!(evicted_of(&m), want, "{what}");
                assert_eq!(r.evicted, want.len() as u64, "{what}");
                let pinned_gone = want
                    .iter()
                    .filter(|&&i| {
                        pinned(i) || group_of(i).is_some_and(|g| pinned(g) || pinned(g + 1))
                    })
                    .count();
                assert!(r.evicted_pinned <= pinned_gone as u64, "{what}");
                inv(&m);
            }
        }
    }
}

/// The snapshot image with what a standby may differ in zeroed: leases
/// (reads are not journaled) and the capture instants.
fn image(m: &Master) -> snapshot::image::SnapshotImage {
    let mut img = snapshot::codec::decode(&m.snapshot().unwrap()).unwrap();
    img.created_at = 0;
    img.wall_at_capture = None;
    img.journal_seq = 0;
    for o in &mut img.objects {
        o.lease = 0;
    }
    for g in &mut img.groups {
        g.lease = 0;
    }
    img
}

#[test]
fn a_standby_applying_a_windowed_run_equals_the_primary() {
    // §5 + §12.1: every eviction of a window is recorded under its locks,
    // in the order the run evicts, before its buffers are freed; a standby
    // applying the records ends equal to the primary.
    for shards in [1, 4, 1024] {
        let p = build_with(MasterConfig {
            shard_count: shards,
            allow_evict_soft_pinned_objects: true,
            journal_capacity_bytes: 64 << 20,
            ..config()
        });
        let r = p.run_eviction(0.3, 0.9).unwrap();
        assert!(r.evicted >= 270 && r.evicted_pinned > 0, "{r:?}");
        let s = Master::new(MasterConfig {
            standby: true,
            shard_count: 3,
            ..config()
        })
        .unwrap();
        loop {
            let bytes = p.journal_read_to_vec(s.applied_seq() + 1).unwrap();
            if bytes.is_empty() {
                break;
            }
            s.apply_journal(&bytes).unwrap();
        }
        assert_eq!(
            s.applied_seq(),
            p.journal_stats().last_seq,
            "shards {shards}"
        );
        assert!(
            image(&p) == image(&s),
            "shards {shards}: the standby differs"
        );
        s.check_invariants().unwrap();
        inv(&p);
    }
}

#[cfg(feature = "test-hooks")]
mod with_hooks {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    /// One shard holding `n` objects named by `name_of`, those for which
    /// `pinned` says so soft-pinned; `allow_pinned` as the master's setting.
    fn one_shard(
        n: usize,
        name_of: impl Fn(usize) -> String,
        pinned: impl Fn(usize) -> bool,
        allow_pinned: bool,
    ) -> Master {
        let m = master_with(
            MasterConfig {
                shard_count: 1,
                allow_evict_soft_pinned_objects: allow_pinned,
                ..config()
            },
            2,
            0,
            1 << 30,
        );
        for i in 0..n {
            let c = if pinned(i) {
                enable(MAX_TTL)
            } else {
                preserve()
            };
            put(&m, &name_of(i), 64, &c);
        }
        m
    }

    /// Runs `f` once, when the next eviction run has collected its
    /// candidates (before its passes).
    fn after_collection(m: &Master, f: impl Fn(&MasterCore) + Send + Sync + 'static) {
        let fired = AtomicBool::new(false);
        m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
            if p == RacePoint::EvictionCollected && !fired.swap(true, Ordering::Relaxed) {
                f(core);
            }
        })));
    }

    /// Writes objects "late00".."late{n-1}" (no pin, no lease).
    fn write_late(core: &MasterCore, n: usize) {
        for i in 0..n {
            let key = format!("late{i:02}");
            let w = core.put_start(C1, k(&key), 64, &preserve()).unwrap();
            core.put_end(C1, k(&key), ReplicaSelector::All, Some(w.token))
                .unwrap();
        }
    }

    /// Pins object `i` by an in-place Upsert (its creation sequence stays).
    fn pin_in_place(core: &MasterCore, i: usize) {
        let w = core
            .upsert_start(C1, k(&name(i)), 64, &enable(MAX_TTL))
            .unwrap();
        core.upsert_end(C1, k(&name(i)), ReplicaSelector::All, Some(w.token))
            .unwrap();
    }

    /// Whether every one of "late00".."late{n-1}" is still there.
    fn late_all_there(m: &Master, n: usize) -> bool {
        (0..n).all(|i| m.exist(k(&format!("late{i:02}"))).unwrap())
    }

    #[test]
    fn a_candidate_read_or_pinned_after_the_collection_is_replaced_by_the_next_in_order() {
        // §5 + §4.7: a lease granted, or a soft pin committed (object 7, an
        // in-place upsert that keeps its creation sequence), between the
        // collection and the evictions makes the object fail its check
        // under the window's locks; the run takes the next candidates in
        // order instead, and still evicts exactly its goal.
        for (shards, keep) in [
            (1, None),
            (4, None),
            (1024, None),
            (1, Some(3)),
            (1024, Some(10)),
        ] {
            let m = build(shards, false);
            m.debug_set_eviction_keep(keep);
            // Both singles of the first window (1, 2: object 3 starts a
            // group, which ends the window), a group member (4), and
            // singles of later windows.
            let leased = [1usize, 2, 4, 63, 64, 101];
            let keys: Vec<String> = leased.iter().map(|&i| name(i)).collect();
            let fired = AtomicBool::new(false);
            m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
                if p == RacePoint::EvictionCollected && !fired.swap(true, Ordering::Relaxed) {
                    for key in &keys {
                        core.get_replica_list(k(key)).unwrap();
                    }
                    let (seven, pin) = (name(7), enable(MAX_TTL));
                    let w = core.upsert_start(C1, k(&seven), 64, &pin).unwrap();
                    core.upsert_end(C1, k(&seven), ReplicaSelector::All, Some(w.token))
                        .unwrap();
                }
            })));
            let r = m.run_eviction(0.5, 0.0).unwrap();
            m.debug_set_race_hook(None);
            let skipped: Vec<usize> = leased.iter().copied().chain([7]).collect();
            let want = reference(150, 0, false, &skipped);
            assert!(m.exist(k(&name(7))).unwrap(), "pinned after the collection");
            assert_eq!(
                evicted_of(&m),
                want,
                "shards {shards}, keep {keep:?}: {r:?}"
            );
            assert_eq!(
                r.evicted,
                want.len() as u64,
                "shards {shards}, keep {keep:?}: {r:?}"
            );
            assert!(r.evicted >= 150, "{r:?}");
            inv(&m);
        }
    }

    #[test]
    fn objects_created_after_the_collection_are_not_candidates_when_the_order_is_read_again() {
        // §5: the candidates are what the collection read. A run whose
        // reading kept few of them reads the dropped ones again when a pass
        // reaches them; objects written in between (here after the whole
        // collection, in every shard, with no lease: they would sort after
        // every collected one) are not among them, so a run that evicts
        // everything it can leaves them, as one that kept every candidate
        // does.
        for (shards, keep) in [
            (1, None),
            (4, None),
            (1, Some(1)),
            (4, Some(5)),
            (1024, Some(2)),
        ] {
            let m = build(shards, true);
            m.debug_set_eviction_keep(keep);
            after_collection(&m, |core| write_late(core, 40));
            let r = m.run_eviction(1.0, 1.0).unwrap();
            m.debug_set_race_hook(None);
            let what = format!("shards {shards}, keep {keep:?}: {r:?}");
            assert_eq!(
                evicted_of(&m),
                reference(N as u64, N as u64, true, &[]),
                "{what}"
            );
            assert_eq!(r.evicted, N as u64, "{what}");
            assert!(late_all_there(&m, 40), "{what}");
            inv(&m);
        }
    }

    #[test]
    fn an_object_pinned_after_the_collection_is_evicted_once_when_read_again_as_protected() {
        // §5: object 7 is kept unprotected by the first reading (5 kept a
        // side), then pinned by an in-place Upsert (same sequence) before
        // the passes. The unprotected passes skip it (pinned now); the
        // protected half reads the protected side again past its cut and
        // finds it there too. It is held once and evicted once, and the
        // run evicts everything (target 1.0, pinned objects allowed).
        let m = one_shard(40, name, |i| !(5..30).contains(&i), true);
        m.debug_set_eviction_keep(Some(5));
        after_collection(&m, |core| pin_in_place(core, 7));
        let r = m.run_eviction(1.0, 1.0).unwrap();
        m.debug_set_race_hook(None);
        assert_eq!(evicted_of_first(&m, 40), 40, "{r:?}");
        assert_eq!(r.evicted, 40, "{r:?}");
        inv(&m);
    }

    #[test]
    fn an_object_pinned_after_the_collection_behind_the_protected_cut_is_still_taken() {
        // §5: object 9 is unprotected when collected and dropped (past the
        // unprotected cut), then pinned, its key now inside the part of the
        // protected side the order holds whole. The unprotected side's
        // reading takes it from there, so the protected half of the second
        // pass evicts it as a run that kept every candidate does.
        let run = |keep: Option<usize>| {
            let m = one_shard(40, name, |i| i >= 20, true);
            m.debug_set_eviction_keep(keep);
            after_collection(&m, |core| pin_in_place(core, 9));
            let r = m.run_eviction(0.0, 0.6).unwrap();
            m.debug_set_race_hook(None);
            inv(&m);
            let gone: Vec<usize> = (0..40)
                .filter(|&i| !m.exist(k(&name(i))).unwrap())
                .collect();
            (r.evicted, gone)
        };
        let all = run(None);
        assert!(all.1.contains(&9), "{all:?}");
        for keep in [1, 3, 5] {
            assert_eq!(run(Some(keep)), all, "keep {keep}");
        }
    }

    #[test]
    fn objects_created_in_slots_the_collection_never_read_are_not_read_again() {
        // §5: one shard of exactly 4096 objects is one read-lock slice;
        // objects written after the collection take slots past it, which
        // no slice of the first reading covered: a later reading leaves
        // them out too. Every other object is pinned (and may not be
        // evicted), so the run reads its whole order without reaching its
        // goal, and would take the new objects were they read.
        let m = one_shard(4096, |i| format!("o{i:04}"), |i| i % 2 == 0, false);
        m.debug_set_eviction_keep(Some(2));
        after_collection(&m, |core| write_late(core, 10));
        let r = m.run_eviction(1.0, 1.0).unwrap();
        m.debug_set_race_hook(None);
        assert_eq!(r.evicted, 2048, "{r:?}");
        assert!(late_all_there(&m, 10), "{r:?}");
        inv(&m);
    }

    /// How many of objects `0..n` are gone.
    fn evicted_of_first(m: &Master, n: usize) -> usize {
        (0..n).filter(|&i| !m.exist(k(&name(i))).unwrap()).count()
    }

    #[test]
    fn windows_meet_the_hook_between_them_with_no_lock_held() {
        // §5: each window takes its locks afresh; the hook runs between
        // windows, where another operation on any key may run (here a
        // Remove of an object a later window would have evicted: the run
        // takes the next one in order instead).
        let m = build(4, false);
        let windows = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&windows);
        m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
            if let RacePoint::EvictionWindow { evicted } = p {
                if seen.fetch_add(1, Ordering::Relaxed) == 1 {
                    // Window 1 took 1 and 2, then the group {3, 4} went.
                    assert_eq!(evicted, 4);
                    core.remove(k(&name(99)), false).unwrap();
                }
            }
        })));
        let r = m.run_eviction(0.5, 0.0).unwrap();
        m.debug_set_race_hook(None);
        assert!(windows.load(Ordering::Relaxed) >= 3);
        let mut want = reference(150, 0, false, &[99]);
        want.insert(99);
        assert_eq!(evicted_of(&m), want, "{r:?}");
        assert_eq!(r.evicted, want.len() as u64 - 1, "{r:?}");
        inv(&m);
    }
    // §5 (review finding): a group that stays whole (a member fails the
    // pass's checks) is evaluated once per pass, not again at each of its
    // members' candidates: each evaluation write-locks every member's shard
    // and looks every member up, so a group of n members cost n^2 lookups
    // per pass with those shards locked over and over.
    #[test]
    fn a_group_that_stays_whole_is_evaluated_once_a_pass() {
        for hard in [true, false] {
            let m = master_with(
                MasterConfig {
                    shard_count: 64,
                    allow_evict_soft_pinned_objects: true,
                    ..config()
                },
                1,
                0,
                1 << 26,
            );
            let n = 200;
            for i in 0..n {
                let last = i == n - 1;
                let base = if last && !hard {
                    enable(MAX_TTL)
                } else {
                    preserve()
                };
                let cfg = WriteConfig {
                    hard_pin: hard && last,
                    group: Some("g".into()),
                    ..base
                };
                put(&m, &format!("m{i:04}"), 64, &cfg);
            }
            m.advance_time(LEASE + 1).unwrap();
            let evaluations = Arc::new(AtomicU64::new(0));
            let seen = Arc::clone(&evaluations);
            m.debug_set_race_hook(Some(Arc::new(move |_: &MasterCore, p: RacePoint| {
                if p == RacePoint::EvictionGroup {
                    seen.fetch_add(1, Ordering::Relaxed);
                }
            })));
            let r = m.run_eviction(1.0, 1.0).unwrap();
            m.debug_set_race_hook(None);
            // Three passes at most (first, second unpinned, second pinned);
            // a soft-pinned member's group goes in the last one.
            let got = evaluations.load(Ordering::Relaxed);
            assert!(
                got <= 3,
                "hard={hard}: {got} evaluations for {n} members: {r:?}"
            );
            assert_eq!(
                r.evicted,
                if hard { 0 } else { n as u64 },
                "hard={hard}: {r:?}"
            );
            inv(&m);
        }
    }
    // §5 (whole-change review): a group that stayed whole is taken up again
    // by the next pass from any of its candidates, not only from the one
    // that evaluated it, which may be gone by then. Group {a, b} stays
    // whole in the first pass (member p is hard-pinned, no candidate);
    // before the second pass p and a are removed; b's
    // candidate takes the group up and b goes.
    #[test]
    fn a_group_that_stayed_whole_is_taken_up_again_from_any_member() {
        let m = master_with(config(), 1, 0, 1 << 26);
        let g = WriteConfig {
            group: Some("g".into()),
            ..preserve()
        };
        for key in ["a", "b"] {
            put(&m, key, 64, &g);
        }
        // Hard-pinned: the group stays whole while p is there.
        let pinned = WriteConfig {
            hard_pin: true,
            ..g.clone()
        };
        put(&m, "p", 64, &pinned);
        for key in ["s1", "s2"] {
            put(&m, key, 64, &preserve());
        }
        m.advance_time(LEASE + 1).unwrap();
        let removed = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&removed);
        m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
            if matches!(p, RacePoint::EvictionWindow { .. })
                && seen.fetch_add(1, Ordering::Relaxed) == 0
            {
                core.remove(k("p"), true).unwrap();
                core.remove(k("a"), false).unwrap();
            }
        })));
        // First pass: to 2 of the base (s1, s2 after the group stays whole);
        // second pass: to all of it.
        let r = m.run_eviction(0.5, 1.0).unwrap();
        m.debug_set_race_hook(None);
        assert!(removed.load(Ordering::Relaxed) >= 1, "the hook ran: {r:?}");
        assert!(
            !m.exist(k("s1")).unwrap() && !m.exist(k("s2")).unwrap(),
            "{r:?}"
        );
        assert!(
            !m.exist(k("b")).unwrap(),
            "b's group was not taken up again: {r:?}"
        );
        inv(&m);
    }
}
