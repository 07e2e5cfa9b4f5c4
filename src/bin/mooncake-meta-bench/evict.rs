//! `evict`: one `run_eviction(0.05, 0.05)` pass over N objects with no
//! pins and with every other object pinned (first pass skips active pins),
//! on a fresh master (its first run) and on a master that already ran once
//! (a `run_eviction(0, 0)` that evicts nothing), whose run reuses the
//! candidate buffer the first left; the run's split (wall time of the
//! collection, the first sort and the passes); and the longest shard lock
//! hold of the run (a collection slice's read lock, or the write locks of
//! a window of evictions). The `slices` case puts all N objects in one shard and
//! runs a `run_eviction(0, 0)` (a collection, nothing evicted): its thread
//! CPU time per 4096-slot slice is what one read-lock hold costs without
//! the preemptions that a wall-clock longest hold on a loaded machine
//! catches.
//!
//! Eviction takes the objects in (lease, creation sequence) order. On a
//! master nothing has read, every lease is equal and that order is slot
//! order: the victims would be the first objects inserted, one dense run of
//! the arena (`order=clustered`, reported as `..._clustered`). The measured
//! case (`order=random`) first gives the objects leases in a random order
//! ([`scatter_leases`], untimed), as reads spread over time would, so the
//! victims are spread over the arena.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;

pub const SCENARIO: Scenario = Scenario {
    name: "evict",
    about:
        "one eviction pass (target 5 %) over N objects, 0 % and 50 % pinned, first and second run",
    cases,
    child,
    figures,
};

fn size(mode: Mode) -> usize {
    if mode.quick {
        10_000
    } else {
        1_000_000
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    let mut v = vec![Params::new(&[
        ("n", size(mode).to_string()),
        ("pinned_pct", "0".into()),
        ("run", "slices".into()),
    ])];
    for run in ["first", "second"] {
        for pin in ["0", "50"] {
            for order in ORDERS {
                v.push(Params::new(&[
                    ("n", size(mode).to_string()),
                    ("pinned_pct", pin.into()),
                    ("run", run.into()),
                    ("order", order.into()),
                ]));
            }
        }
    }
    v
}

/// The eviction orders measured: leases given in a random order (the
/// figures with the targets), and none given (slot order, `_clustered`).
const ORDERS: [&str; 2] = ["random", "clustered"];

/// Objects read per millisecond of the manual clock by [`scatter_leases`].
const LEASE_GROUP: usize = 64;

/// Gives every object of `keys` a lease in a fixed-seed random order,
/// outside any timing: one Exist per object in the order of a random
/// permutation, the manual clock advanced 1 ms before every
/// [`LEASE_GROUP`] of them, then moved past the last lease. Every lease
/// has then expired (each object is a candidate again), but their
/// (lease, sequence) order, the eviction order, is a random one instead of
/// slot order. Pins keep their deadlines (the clock moves
/// `len / LEASE_GROUP` ms + [`LEASE`], far less than a default TTL).
pub fn scatter_leases(m: &MasterCore, keys: &Keys, seed: u64) {
    let order = permutation(keys.len(), seed);
    for (j, &i) in order.iter().enumerate() {
        if j % LEASE_GROUP == 0 {
            m.advance_time(1).expect("manual clock");
        }
        let found = m.exist(Key::new(&keys[i as usize]));
        assert!(matches!(found, Ok(true)), "object {i} is not there");
    }
    m.advance_time(LEASE + 1).expect("manual clock");
}

/// Seed of the evict scenario's lease order.
const LEASE_SEED: u64 = 0xE71C_7001;

/// Slots a collection reads per shard read-lock hold (the core's slice).
const SLICE: usize = 4096;

/// One shard of N objects: CPU time of a collection per slice.
fn slices_child(n: usize) -> Sample {
    let mut s = Sample::default();
    let keys = keys(n);
    let m = Master::new(MasterConfig {
        shard_count: 1,
        ..MasterConfig::deterministic(T0)
    })
    .expect("master");
    for i in 0..4u64 {
        let spec = SegmentSpec {
            name: format!("mem{i}"),
            base: (i + 1) << 40,
            size: 16 << 30,
            pool: Pool::Memory,
        };
        m.mount_segment(i + 1, &spec).expect("mount");
    }
    let preserve = cfg(SoftPinRequest::PRESERVE);
    put_all(&m, &keys, |_| &preserve);
    flush_caches();
    m.debug_reset_eviction_hold();
    let cpu = thread_cpu();
    let rep = m.run_eviction(0.0, 0.0).expect("eviction");
    let cpu = thread_cpu() - cpu;
    assert_eq!((rep.base, rep.evicted), (n as u64, 0));
    s.set(
        "slice_cpu_ns",
        cpu.as_nanos() as f64 / n.div_ceil(SLICE) as f64,
    );
    s.set("hold_ns", m.debug_eviction_longest_hold_ns() as f64);
    std::mem::forget(m);
    s
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    if p.str("run") == "slices" {
        return slices_child(n);
    }
    let half = p.str("pinned_pct") == "50";
    let mut s = Sample::default();
    let keys = keys(n);
    let (preserve, enable) = (cfg(SoftPinRequest::PRESERVE), cfg(SoftPinRequest::enable()));
    let m = master();
    put_all(&m, &keys, |i| {
        if half && i % 2 == 0 {
            &enable
        } else {
            &preserve
        }
    });
    if p.str("order") == "random" {
        scatter_leases(&m, &keys, LEASE_SEED);
    }
    if p.str("run") == "second" {
        // Examines every object, evicts none.
        let warm = m.run_eviction(0.0, 0.0).expect("eviction");
        assert_eq!(warm.evicted, 0);
    }
    flush_caches();
    m.debug_reset_eviction_hold();
    let t = Stopwatch::start();
    let rep = m.run_eviction(0.05, 0.05).expect("eviction");
    let took = t.elapsed().as_nanos() as f64;
    s.set("pass_ns", took);
    s.set("hold_ns", m.debug_eviction_longest_hold_ns() as f64);
    s.set("evicted", rep.evicted as f64);
    s.set("evicted_pinned", rep.evicted_pinned as f64);
    s.set("candidates", rep.candidates as f64);
    s.set("base", rep.base as f64);
    let [collect, order, passes] = m.debug_eviction_phases_ns();
    s.set("collect_ns", collect as f64);
    s.set("sort_ns", order as f64);
    s.set("passes_ns", passes as f64);
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let ns = size(mode).to_string();
    let mut out = Vec::new();
    let want = [("run", "slices")];
    let par = [("n", ns.clone()), ("shards", "1".to_owned())];
    out.push(
        Figure::new(
            "evict",
            "collection_slice_cpu",
            &par,
            "ms",
            Better::Lower,
            r.values(&want, "slice_cpu_ns")
                .into_iter()
                .map(|v| v * 1e-6)
                .collect(),
        )
        .note("thread CPU time of one 4096-slot slice of the collection (one shard read-lock hold), all N objects in one shard")
        .target(Target::AtMost(1.0)),
    );
    out.push(Figure::new(
        "evict",
        "longest_shard_lock_hold",
        &par,
        "ms",
        Better::Lower,
        r.values(&want, "hold_ns")
            .into_iter()
            .map(|v| v * 1e-6)
            .collect(),
    ));
    for run in ["first", "second"] {
        for pin in ["0", "50"] {
            let want = [("pinned_pct", pin), ("run", run), ("order", "random")];
            let clustered = [("pinned_pct", pin), ("run", run), ("order", "clustered")];
            let par = [
                ("n", ns.clone()),
                ("pinned_pct", pin.to_owned()),
                ("run", run.to_owned()),
            ];
            let first = run == "first" && pin == "0";
            // The random order carries the target; the clustered one shows
            // what it flattered.
            let orders = [
                (
                    &want,
                    "",
                    "before the run (untimed) every object is read once in a fixed-seed random \
                     order, 64 a millisecond, and the clock moved past the last lease: all \
                     leases expired, their (lease, sequence) order, the eviction order, random, \
                     so the victims are spread over the arena",
                ),
                (
                    &clustered,
                    "_clustered",
                    "nothing read before the run: every lease equal, so the eviction order is \
                     slot order and the victims are the first objects inserted, one dense run \
                     of the arena (flatters the pass; no target)",
                ),
            ];
            for (which, suffix, note) in orders {
                let mut f = Figure::new(
                    "evict",
                    &format!("pass{suffix}"),
                    &par,
                    "ms",
                    Better::Lower,
                    r.values(which, "pass_ns")
                        .into_iter()
                        .map(|v| v * 1e-6)
                        .collect(),
                );
                if first {
                    f = f.note(note);
                }
                out.push(f);
                let mut f = Figure::new(
                    "evict",
                    &format!("per_object_examined{suffix}"),
                    &par,
                    "ns",
                    Better::Lower,
                    r.zip(which, "pass_ns", "base", |t, b| t / b),
                );
                if suffix.is_empty() {
                    // Stated at 10^7 (`scale` measures it there).
                    f = f
                        .target(Target::AtMost(20.0))
                        .target_stated_at(10_000_000, size(mode) as u64);
                }
                out.push(f);
            }
            out.push(
                Figure::new(
                    "evict",
                    "longest_shard_lock_hold",
                    &par,
                    "ms",
                    Better::Lower,
                    r.values(&want, "hold_ns")
                        .into_iter()
                        .map(|v| v * 1e-6)
                        .collect(),
                )
                .target(Target::AtMost(1.0)),
            );
            out.push(Figure::new(
                "evict",
                "evicted",
                &par,
                "objects",
                Better::Higher,
                r.values(&want, "evicted"),
            ));
            out.push(Figure::new(
                "evict",
                "evicted_pinned",
                &par,
                "objects",
                Better::Lower,
                r.values(&want, "evicted_pinned"),
            ));
        }
    }
    out
}
