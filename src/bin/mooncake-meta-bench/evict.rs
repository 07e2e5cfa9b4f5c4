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
            v.push(Params::new(&[
                ("n", size(mode).to_string()),
                ("pinned_pct", pin.into()),
                ("run", run.into()),
            ]));
        }
    }
    v
}

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
            let want = [("pinned_pct", pin), ("run", run)];
            let par = [
                ("n", ns.clone()),
                ("pinned_pct", pin.to_owned()),
                ("run", run.to_owned()),
            ];
            out.push(Figure::new(
                "evict",
                "pass",
                &par,
                "ms",
                Better::Lower,
                r.values(&want, "pass_ns")
                    .into_iter()
                    .map(|v| v * 1e-6)
                    .collect(),
            ));
            out.push(
                Figure::new(
                    "evict",
                    "per_object_examined",
                    &par,
                    "ns",
                    Better::Lower,
                    r.zip(&want, "pass_ns", "base", |t, b| t / b),
                )
                .target(Target::AtMost(20.0)),
            );
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
