//! docs/CONTRACT.md §6 and §8: a restore racing the background work.
//! Restore replaces the whole state; a cleanup batch or an eviction run
//! that started on the state it replaced must not act on the restored one.
//! Workers run in rounds and meet at a barrier; at every pause the master is
//! quiesced and `check_invariants()` must hold (gauge == objects with a
//! committed deadline, registrations == committed deadlines), because a
//! check only at the end passes (the next restore resets the gauge).
//! Run time is bounded by iteration counts; rendezvous, never sleeps.
mod common;

use common::*;
use mooncake_meta_core::snapshot::codec::decode;
use mooncake_meta_core::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::Duration;

/// A hang bound for the whole run, never a speed check.
const HANG: Duration = Duration::from_secs(300);

/// xorshift64*: deterministic per thread.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1)
    }
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

/// One worker: how many times it runs per round, and what it runs.
/// Steps per round of the workers that are not restorers. A restorer runs
/// once per round, so what a cleanup racing its restore got wrong stays
/// there (the next restore would reset the gauge) until the pause sees it.
const STEPS: u64 = 4;

type Step = (u64, Box<dyn FnMut(&Master, &mut Rng) + Send>);

/// What the pauses found.
struct Outcome {
    checks: u64,
    bad: Vec<String>,
}

/// Runs `steps` (one thread each) for `rounds` rounds; after every round
/// all of them meet at a barrier, the master is quiesced and `check` runs;
/// then they go on. The maintenance thread keeps running between pauses.
/// Panics if the run does not finish within [`HANG`].
fn run_rounds(
    m: Arc<Master>,
    steps: Vec<Step>,
    rounds: u64,
    check: impl Fn(&Master) -> Result<(), String> + Send + 'static,
) -> Outcome {
    let (done_tx, done_rx) = mpsc::channel();
    let driver = thread::spawn(move || {
        let barrier = Arc::new(Barrier::new(steps.len() + 1));
        let workers: Vec<_> = steps
            .into_iter()
            .enumerate()
            .map(|(i, (per_round, mut step))| {
                let (m, barrier) = (Arc::clone(&m), Arc::clone(&barrier));
                thread::spawn(move || {
                    let mut rng = Rng::new(i as u64 + 1);
                    for _ in 0..rounds {
                        for _ in 0..per_round {
                            step(&m, &mut rng);
                        }
                        barrier.wait(); // pause
                        barrier.wait(); // resume
                    }
                })
            })
            .collect();
        let mut out = Outcome {
            checks: 0,
            bad: Vec::new(),
        };
        for round in 0..rounds {
            barrier.wait();
            {
                let _quiet = m.quiesce();
                out.checks += 1;
                if let Err(e) = check(&m) {
                    out.bad.push(format!("round {round}: {e}"));
                }
            }
            barrier.wait();
        }
        for w in workers {
            w.join().expect("worker panicked");
        }
        let _ = done_tx.send(out);
    });
    let out = done_rx
        .recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("the race run did not finish within {HANG:?} (hang)"));
    driver.join().unwrap();
    out
}

fn report(what: &str, out: &Outcome) {
    if !out.bad.is_empty() {
        let shown: Vec<&String> = out.bad.iter().take(8).collect();
        panic!(
            "{what}: {} of {} quiesced checks failed; first: {shown:#?}",
            out.bad.len(),
            out.checks
        );
    }
}

const PIN_KEYS: u64 = 64;
/// Keys of the big image restored over and over: each restore brings back
/// this many active pins, and a direct cleanup ahead of the clock clears
/// them in a wave of `WAVE_KEYS / 128` batches, so restores keep landing in
/// the middle of a cleanup batch.
const WAVE_KEYS: u64 = 2_048;
/// TTL of the wave's pins: the clock (which ticks 1–2 ms per step) never
/// reaches them during the run, so every restore of the image keeps them.
const WAVE_TTL: u64 = 1_000_000;

fn pin_key(i: u64) -> String {
    format!("pin{i}")
}

#[test]
fn cleanup_racing_restore_keeps_gauge_and_index_exact_at_every_pause() {
    // §6 + §8: hard-pinned keys re-pinned with 1–8 ms TTLs by two threads, a
    // third looping snapshot → restore, cleanup by the maintenance thread
    // (every 1 ms) and by direct calls on a ticking manual clock; a fourth
    // restores an image with a wave of pins that a fifth clears ahead of
    // the clock.
    let cfg = MasterConfig {
        soft_pin_cleanup_interval_ms: 1,
        shard_count: 8,
        ..config()
    };
    let m = Arc::new(master_with(cfg, 2, 0, 16 << 20));
    let hard = |ttl| WriteConfig {
        hard_pin: true,
        ..enable(ttl)
    };
    for i in 0..PIN_KEYS {
        put(&m, &pin_key(i), 1024, &hard(1 + i % 8));
    }
    for i in 0..WAVE_KEYS {
        put(&m, &format!("wave{i}"), 1024, &hard(WAVE_TTL + i % 8));
    }
    let wave = m.snapshot().unwrap();
    inv(&m);
    let pins = Arc::new(AtomicU64::new(0));
    let restores = Arc::new(AtomicU64::new(0));
    let expired = Arc::new(AtomicU64::new(0));
    let mut steps: Vec<Step> = Vec::new();
    for client in [C1, C2] {
        let pins = Arc::clone(&pins);
        steps.push((
            STEPS,
            Box::new(move |m: &Master, rng: &mut Rng| {
                let key = pin_key(rng.below(PIN_KEYS));
                let c = hard(1 + rng.below(8));
                if let Ok(w) = m.upsert_start(client, k(&key), 1024, &c) {
                    if m.upsert_end(client, k(&key), ReplicaSelector::All, Some(w.token))
                        .is_ok()
                    {
                        pins.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }),
        ));
    }
    {
        let restores = Arc::clone(&restores);
        steps.push((
            1,
            Box::new(move |m: &Master, _: &mut Rng| {
                let snap = m.snapshot().expect("snapshot");
                m.restore(&snap)
                    .expect("a snapshot of this master restores");
                restores.fetch_add(1, Ordering::Relaxed);
            }),
        ));
    }
    {
        let restores = Arc::clone(&restores);
        steps.push((
            1,
            Box::new(move |m: &Master, _: &mut Rng| {
                m.restore(&wave).expect("the wave image restores");
                restores.fetch_add(1, Ordering::Relaxed);
            }),
        ));
    }
    // Two direct cleaners: one ticks the clock and cleans at it, the other
    // clears the wave ahead of the clock.
    for ahead in [0, 2 * WAVE_TTL] {
        let expired = Arc::clone(&expired);
        steps.push((
            STEPS,
            Box::new(move |m: &Master, rng: &mut Rng| {
                if ahead == 0 {
                    m.advance_time(1 + rng.below(2)).unwrap();
                }
                let s = m.run_cleanup_at(m.now() + ahead);
                expired.fetch_add(s.expired, Ordering::Relaxed);
            }),
        ));
    }
    let out = run_rounds(Arc::clone(&m), steps, 2_000, |m| m.check_invariants());
    eprintln!(
        "{} checks, {} bad; {} pins, {} restores, {} expired by direct cleanup, {} cleanup cycles",
        out.checks,
        out.bad.len(),
        pins.load(Ordering::Relaxed),
        restores.load(Ordering::Relaxed),
        expired.load(Ordering::Relaxed),
        m.metrics().cleanup_cycles,
    );
    // The race was exercised: pins were committed, restored and expired.
    assert!(pins.load(Ordering::Relaxed) > 0);
    assert!(restores.load(Ordering::Relaxed) > 0);
    assert!(expired.load(Ordering::Relaxed) > 0);
    report("cleanup vs restore", &out);
    inv(&m);
}

const GROUPS: u64 = 32;
/// In image `grouped` every group has all four members; in image `split`
/// only a0 and a1, while b0 and b1 are the same keys without a group.
const MEMBERS: [&str; 4] = ["a0", "a1", "b0", "b1"];

fn member(g: u64, m: &str) -> String {
    format!("g{g}-{m}")
}

fn group_name(g: u64) -> String {
    format!("grp{g}")
}

/// Members of each group in the master, from a snapshot (the only public
/// view of group membership).
fn group_members(m: &Master) -> BTreeMap<String, Vec<String>> {
    let img = decode(&m.snapshot().expect("snapshot")).expect("decodes");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for o in &img.objects {
        if let Some(g) = &o.group {
            out.entry(g.clone()).or_default().push(o.key.clone());
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

#[test]
fn eviction_racing_restore_never_splits_a_restored_group() {
    // §5 + §6: a group is evicted all or none; an eviction run whose
    // candidates (and member lists) were gathered before a restore must not
    // evict part of a group the restore brought back.
    let cfg = MasterConfig {
        soft_pin_cleanup_interval_ms: 1,
        allow_evict_soft_pinned_objects: true,
        shard_count: 8,
        ..config()
    };
    // Pinned far ahead so every object survives each restore once its lease
    // has run out; eviction takes pinned objects in its second pass.
    let grouped = |g: u64| WriteConfig {
        group: Some(group_name(g)),
        ..enable(MAX_TTL)
    };
    // The two images come from masters that made the same writes in the
    // same order, so each object has the same creation sequence in both:
    // a candidate of one image is found again in the other.
    let image = |split_b: bool| {
        let src = master_with(cfg.clone(), 2, 0, 1 << 20);
        for g in 0..GROUPS {
            for (i, mm) in MEMBERS.into_iter().enumerate() {
                let c = if split_b && i >= 2 {
                    enable(MAX_TTL)
                } else {
                    grouped(g)
                };
                put(&src, &member(g, mm), 1024, &c);
            }
        }
        src.advance_time(LEASE * 10).unwrap();
        src.snapshot().unwrap()
    };
    let (whole, split) = (image(false), image(true));
    let m = Arc::new(master_with(cfg, 2, 0, 1 << 20));
    m.advance_time(LEASE * 10).unwrap();
    m.restore(&whole).unwrap();
    inv(&m);
    // Restoring `split` over `whole` and back: a run that collected b0 as
    // an ungrouped candidate, or a group with members {a0, a1}, from one
    // image and acts after the other was restored would split a group.
    let evicted = Arc::new(AtomicU64::new(0));
    let restores = Arc::new(AtomicU64::new(0));
    let mut steps: Vec<Step> = Vec::new();
    {
        let restores = Arc::clone(&restores);
        let mut n = 0u64;
        steps.push((
            1,
            Box::new(move |m: &Master, _: &mut Rng| {
                n += 1;
                let img = if n % 2 == 0 { &whole } else { &split };
                m.restore(img).expect("restore");
                restores.fetch_add(1, Ordering::Relaxed);
            }),
        ));
    }
    for _ in 0..2 {
        let evicted = Arc::clone(&evicted);
        steps.push((
            STEPS,
            Box::new(move |m: &Master, _: &mut Rng| {
                let r = m.run_eviction(1.0, 1.0).expect("eviction");
                evicted.fetch_add(r.evicted, Ordering::Relaxed);
            }),
        ));
    }
    let check = |m: &Master| {
        m.check_invariants()?;
        for (g, members) in group_members(m) {
            let idx: u64 = g.trim_start_matches("grp").parse().unwrap();
            let full: Vec<String> = MEMBERS.iter().map(|mm| member(idx, mm)).collect();
            let core: Vec<String> = MEMBERS[..2].iter().map(|mm| member(idx, mm)).collect();
            if members != full && members != core {
                return Err(format!("group {g} was split: members left {members:?}"));
            }
        }
        Ok(())
    };
    let out = run_rounds(Arc::clone(&m), steps, 3_000, check);
    eprintln!(
        "{} checks, {} bad; {} evicted, {} restores",
        out.checks,
        out.bad.len(),
        evicted.load(Ordering::Relaxed),
        restores.load(Ordering::Relaxed),
    );
    assert!(evicted.load(Ordering::Relaxed) > 0);
    assert!(restores.load(Ordering::Relaxed) > 0);
    report("eviction vs restore", &out);
}

/// The same races at exact points, through the `test-hooks` race hook: the
/// restore runs on the cleanup (or eviction) thread itself, between the
/// moment that work was planned and the moment it acts. Deterministic.
#[cfg(feature = "test-hooks")]
mod at_exact_points {
    use super::*;

    const KEYS: u64 = 16;

    /// Runs `f` as the race hook at the first point `at` accepts only.
    fn once_at(
        m: &Master,
        at: impl Fn(RacePoint) -> bool + Send + Sync + 'static,
        f: impl Fn(&MasterCore) + Send + Sync + 'static,
    ) {
        let fired = std::sync::atomic::AtomicBool::new(false);
        m.debug_set_race_hook(Some(Arc::new(move |core: &MasterCore, p: RacePoint| {
            if at(p) && !fired.swap(true, Ordering::Relaxed) {
                f(core);
            }
        })));
    }

    /// KEYS hard-pinned keys with a 5 ms pin, and a snapshot of them.
    fn pinned_master() -> (Arc<Master>, Vec<u8>) {
        let m = Arc::new(master_with(
            MasterConfig {
                shard_count: 8,
                ..config()
            },
            1,
            0,
            1 << 20,
        ));
        let keys: Vec<String> = (0..KEYS).map(|i| format!("p{i}")).collect();
        for key in &keys {
            let c = WriteConfig {
                hard_pin: true,
                ..enable(5)
            };
            put(&m, key, 1024, &c);
        }
        let snap = m.snapshot().unwrap();
        (m, snap)
    }

    #[test]
    fn a_batch_popped_before_a_restore_does_not_clear_the_restored_pins() {
        // §4.8 + §6: the batch's registrations went with the replaced index;
        // the restored pins (same keys, same deadlines) stay, registered.
        let (m, snap) = pinned_master();
        let s = snap.clone();
        // The batch is popped; before its first shard is locked:
        let first = |p| p == RacePoint::CleanupShard { entries_done: 0 };
        once_at(&m, first, move |core| {
            core.restore(&s).unwrap();
        });
        let stats = m.run_cleanup_at(T0 + 5);
        m.debug_set_race_hook(None);
        inv(&m);
        assert_eq!(stats.popped, KEYS);
        assert_eq!(stats.expired, 0, "{stats:?}");
        assert_eq!(gauge(&m), KEYS);
        // The restored pins expire through the restored index.
        assert_eq!(m.run_cleanup_at(T0 + 5).expired, KEYS);
        assert_eq!(gauge(&m), 0);
        inv(&m);
    }

    #[test]
    fn a_restore_between_the_shards_of_a_batch_leaves_the_gauge_exact() {
        // §4.9 + §6: the clears before the restore were counted before it;
        // the rest of the batch is dropped, and the gauge is the restored
        // count.
        let (m, snap) = pinned_master();
        let s = snap.clone();
        // After the batch's first shard, before its second:
        let second = |p| matches!(p, RacePoint::CleanupShard { entries_done } if entries_done > 0);
        once_at(&m, second, move |core| {
            core.restore(&s).unwrap();
        });
        let stats = m.run_cleanup_at(T0 + 5);
        m.debug_set_race_hook(None);
        inv(&m);
        assert!(stats.shards_touched >= 2, "{stats:?}");
        assert!(stats.expired > 0 && stats.expired < KEYS, "{stats:?}");
        assert_eq!(gauge(&m), KEYS);
        assert_eq!(m.run_cleanup_at(T0 + 5).expired, KEYS);
        inv(&m);
    }

    /// A master holding image `split` (group {a0, a1}; b0, b1 ungrouped) and
    /// the image `whole` (all four in the group) with the same creation
    /// sequences; `b_first` writes b0, b1 before a0, a1.
    fn two_images(b_first: bool) -> (Arc<Master>, Vec<u8>) {
        let cfg = MasterConfig {
            allow_evict_soft_pinned_objects: true,
            shard_count: 8,
            ..config()
        };
        let image = |split_b: bool| {
            let src = master_with(cfg.clone(), 1, 0, 1 << 20);
            let order: [usize; 4] = if b_first { [2, 3, 0, 1] } else { [0, 1, 2, 3] };
            for i in order {
                let c = if split_b && i >= 2 {
                    enable(MAX_TTL)
                } else {
                    WriteConfig {
                        group: Some(group_name(0)),
                        ..enable(MAX_TTL)
                    }
                };
                put(&src, &member(0, MEMBERS[i]), 1024, &c);
            }
            src.advance_time(LEASE * 10).unwrap();
            src.snapshot().unwrap()
        };
        let m = Arc::new(master_with(cfg.clone(), 1, 0, 1 << 20));
        m.advance_time(LEASE * 10).unwrap();
        m.restore(&image(true)).unwrap();
        (m, image(false))
    }

    fn eviction_across_restore(b_first: bool) {
        let (m, whole) = two_images(b_first);
        once_at(
            &m,
            |p| p == RacePoint::EvictionCollected,
            move |core| {
                core.restore(&whole).unwrap();
            },
        );
        // Goal: one object, taken by the pinned half of the second pass from
        // the first candidate (b0 alone, or the group {a0, a1}).
        let r = m.run_eviction(0.25, 0.25).unwrap();
        m.debug_set_race_hook(None);
        inv(&m);
        let groups = group_members(&m);
        let full: Vec<String> = MEMBERS.iter().map(|mm| member(0, mm)).collect();
        assert_eq!(
            groups.get(&group_name(0)),
            Some(&full),
            "the restored group was split ({r:?})"
        );
        assert_eq!(r.evicted, 0, "{r:?}");
        // A run planned on the restored state evicts the group whole.
        let r = m.run_eviction(0.25, 0.25).unwrap();
        assert_eq!(r.evicted, 4, "{r:?}");
        assert!(group_members(&m).is_empty());
        inv(&m);
    }

    /// One shard; the second pass may take protected objects.
    fn one_shard() -> MasterConfig {
        MasterConfig {
            shard_count: 1,
            allow_evict_soft_pinned_objects: true,
            ..config()
        }
    }

    /// An image of one shard holding `b0`..`b5999`, pinned (so they survive
    /// the restore) and with leases that have run out by the time the test
    /// evicts; `b5999` first in eviction order (lease T0; every other one
    /// was read later, so its lease is later).
    fn late_first_image() -> Vec<u8> {
        let src = master_with(one_shard(), 1, 0, 1 << 30);
        for i in 0..6_000 {
            put(&src, &format!("b{i}"), 1024, &enable(MAX_TTL));
        }
        src.advance_time(1).unwrap();
        for i in 0..5_999 {
            src.get_replica_list(k(&format!("b{i}"))).unwrap();
        }
        src.snapshot().unwrap()
    }

    #[test]
    fn a_restore_between_two_slices_restarts_the_collection_on_the_new_state() {
        // §5 + §6: the collection lets go of the shard lock between slices of
        // its arena; a restore there replaces the state. No candidate seen
        // before it may be evicted (b0 now sits where a0 was, with its
        // sequence): the run evicts what the restored state puts first.
        let image = late_first_image();
        let m = Arc::new(master_with(one_shard(), 1, 0, 1 << 30));
        for i in 0..4_100 {
            put(&m, &format!("a{i}"), 1024, &preserve());
        }
        m.advance_time(LEASE * 10).unwrap();
        let slices = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&slices);
        once_at(
            &m,
            move |p| {
                let slice = matches!(p, RacePoint::EvictionSlice { shard: 0, .. });
                seen.fetch_add(slice as u64, Ordering::Relaxed);
                slice
            },
            move |core| {
                core.restore(&image).unwrap();
            },
        );
        // One object, ceil(6000 x 0.0001), by the pinned half of the second
        // pass (every restored object is pinned).
        let r = m.run_eviction(0.0001, 0.0001).unwrap();
        m.debug_set_race_hook(None);
        inv(&m);
        assert_eq!(
            (r.base, r.candidates, r.evicted, r.evicted_pinned),
            (6_000, 6_000, 1, 1),
            "{r:?}"
        );
        assert!(
            !m.exist(k("b5999")).unwrap(),
            "the restored state's first candidate goes"
        );
        assert!(
            m.exist(k("b0")).unwrap(),
            "not the object in the old first candidate's slot"
        );
        assert!(!m.exist(k("a0")).unwrap());
        assert!(
            slices.load(Ordering::Relaxed) >= 2,
            "the restore ran between two slices, and the new state was scanned in slices too"
        );
    }

    #[test]
    fn a_restore_between_two_windows_ends_the_run_on_the_replaced_state() {
        // §5 + §6: the evictions of a run come in windows, each under its
        // own hold of its shards' locks; a restore between two of them
        // replaces the state the candidates were seen in. What went before
        // it stays gone from the replaced state; nothing of the restored
        // state (the same objects, slots and sequences) is evicted after it.
        let cfg = MasterConfig {
            shard_count: 8,
            allow_evict_soft_pinned_objects: true,
            ..config()
        };
        let m = Arc::new(master_with(cfg, 1, 0, 1 << 24));
        for i in 0..200 {
            // Pinned, so every object survives the restore; taken by the
            // pinned half of the second pass.
            put(&m, &format!("w{i:03}"), 1024, &enable(MAX_TTL));
        }
        m.advance_time(LEASE * 10).unwrap();
        let image = m.snapshot().unwrap();
        let windows = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&windows);
        once_at(
            &m,
            move |p| {
                let window = matches!(p, RacePoint::EvictionWindow { .. });
                seen.fetch_add(window as u64, Ordering::Relaxed);
                matches!(p, RacePoint::EvictionWindow { evicted } if evicted > 0)
            },
            move |core| {
                core.restore(&image).unwrap();
            },
        );
        // Goal 100: a first window of 64, then the restore.
        let r = m.run_eviction(0.5, 0.5).unwrap();
        m.debug_set_race_hook(None);
        inv(&m);
        assert_eq!((r.evicted, r.evicted_pinned), (64, 64), "{r:?}");
        // The later windows found the state replaced and evicted nothing.
        assert!(windows.load(Ordering::Relaxed) >= 2);
        for i in 0..200 {
            assert!(m.exist(k(&format!("w{i:03}"))).unwrap(), "w{i:03} restored");
        }
        // A run on the restored state evicts its goal (once the leases a
        // restore gives its objects have run out).
        m.advance_time(LEASE * 10).unwrap();
        let again = m.run_eviction(0.5, 0.5).unwrap();
        assert_eq!(again.evicted, 100, "{again:?}");
        inv(&m);
    }

    #[test]
    fn an_ungrouped_candidate_is_not_evicted_out_of_a_restored_group() {
        // §5 + §6: b0 was an ungrouped candidate; after the restore it is a
        // group member with the same sequence, and must not go alone.
        eviction_across_restore(true);
    }

    #[test]
    fn a_group_candidate_is_not_evicted_by_its_replaced_member_list() {
        // §5 + §6: the group's old member list {a0, a1} must not be evicted
        // out of the restored group {a0, a1, b0, b1}.
        eviction_across_restore(false);
    }
}
