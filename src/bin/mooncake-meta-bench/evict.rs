//! `evict`: one `run_eviction(0.05, 0.05)` pass over N objects with no
//! pins and with every other object pinned (first pass skips active pins),
//! on a fresh master (its first run) and on a master that already ran once
//! (a `run_eviction(0, 0)` that evicts nothing), whose run reuses the
//! candidate buffer the first left; and the longest shard read-lock hold
//! of the collection.

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
    let mut v = Vec::new();
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

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
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
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let ns = size(mode).to_string();
    let mut out = Vec::new();
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
