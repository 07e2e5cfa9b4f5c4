//! `write`: PutStart+PutEnd of new keys and in-place UpsertStart+UpsertEnd of
//! existing ones, with and without soft pins (ENABLE default TTL vs
//! PRESERVE), then non-forced Remove of every key. One fresh process per
//! (case, repetition), cases interleaved.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;

pub const SCENARIO: Scenario = Scenario {
    name: "write",
    about: "Put and Upsert pairs with and without pins; non-forced Remove",
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
    for op in ["put", "upsert"] {
        for pin in ["0", "100"] {
            v.push(Params::new(&[
                ("n", size(mode).to_string()),
                ("op", op.into()),
                ("pinned_pct", pin.into()),
            ]));
        }
    }
    v
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    let mut s = Sample::default();
    let keys = keys(n);
    let c = if p.str("pinned_pct") == "100" {
        cfg(SoftPinRequest::enable())
    } else {
        cfg(SoftPinRequest::PRESERVE)
    };
    let m = master();
    let took = put_all(&m, &keys, |_| &c);
    s.set("put_pairs_per_s", n as f64 / took.as_secs_f64());
    if p.str("op") == "upsert" {
        let perm = permutation(n, 5);
        let t = Stopwatch::start();
        for &i in &perm {
            let k = Key::new(&keys[i as usize]);
            m.upsert_start(WRITER, k, SIZE, &c).expect("upsert_start");
            m.upsert_end(WRITER, k, ReplicaSelector::Memory, None)
                .expect("upsert_end");
        }
        s.set("upsert_pairs_per_s", n as f64 / t.elapsed().as_secs_f64());
    }
    // Removes walk the keys in a random order (not key order, which would
    // visit the shards' tables in insertion order and flatter the figure).
    let order = permutation(n, 7);
    let t = Stopwatch::start();
    for &i in &order {
        m.remove(Key::new(&keys[i as usize]), false)
            .expect("remove");
    }
    s.set("remove_per_s", n as f64 / t.elapsed().as_secs_f64());
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let mut out = Vec::new();
    let ns = size(mode).to_string();
    for (op, metric) in [("put", "put_pairs_per_s"), ("upsert", "upsert_pairs_per_s")] {
        for pin in ["0", "100"] {
            let want = [("op", op), ("pinned_pct", pin)];
            let par = [("n", ns.clone()), ("pinned_pct", pin.to_owned())];
            let mut f = Figure::new(
                "write",
                &format!("{op}_pairs"),
                &par,
                "ops/s",
                Better::Higher,
                r.values(&want, metric),
            );
            if op == "put" {
                f = f.target(Target::AtLeast(1e6));
            } else if pin == "0" {
                f = f.note("in place (same size), every key once in random order; ENABLE re-registers each pin");
            }
            out.push(f);
        }
        let mut slow = Figure::new(
            "write",
            &format!("{op}_pin_slowdown"),
            &[("n", ns.clone())],
            "%",
            Better::Lower,
            r.pair(
                &[("op", op), ("pinned_pct", "0")],
                &[("op", op), ("pinned_pct", "100")],
                metric,
                |a, b| (a - b) / a * 100.0,
            ),
        );
        if op == "put" {
            slow = slow.target(Target::AtMost(5.0));
        }
        out.push(slow);
    }
    for pin in ["0", "100"] {
        let mut f = Figure::new(
            "write",
            "remove_not_forced",
            &[("n", ns.clone()), ("pinned_pct", pin.to_owned())],
            "ops/s",
            Better::Higher,
            r.values(&[("op", "put"), ("pinned_pct", pin)], "remove_per_s"),
        )
        .target(Target::AtLeast(3e6));
        if pin == "0" {
            f = f
                .note("every key once, in a random order (fixed-seed shuffle drawn before timing)");
        }
        out.push(f);
    }
    out
}
