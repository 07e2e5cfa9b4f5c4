//! `footprint`: memory per object, 1 memory replica, in a fresh process:
//! (VmRSS after − before the inserts) / N, key bytes included, the same
//! minus the 20 key bytes, and the allocator's own count (glibc mallinfo2)
//! likewise; the index's bytes per active pin = the pinned run's growth
//! minus the unpinned run's, per N.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;

pub const SCENARIO: Scenario = Scenario {
    name: "footprint",
    about: "bytes per object (RSS with and without key bytes, heap); index bytes per active pin",
    cases,
    child,
    figures,
};

/// Length of `bench/key/%010d`.
const KEY_BYTES: f64 = 20.0;

fn size(mode: Mode) -> usize {
    if mode.quick {
        100_000
    } else {
        1_000_000
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    ["0", "100"]
        .iter()
        .map(|pin| Params::new(&[("n", size(mode).to_string()), ("pinned_pct", (*pin).into())]))
        .collect()
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
    let (rss0, heap0) = (vm_rss(), heap_in_use());
    put_all(&m, &keys, |_| &c);
    let (rss1, heap1) = (vm_rss(), heap_in_use());
    s.set("rss_per_object", (rss1 as f64 - rss0 as f64) / n as f64);
    s.set("heap_per_object", (heap1 as f64 - heap0 as f64) / n as f64);
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let ns = size(mode).to_string();
    let mut out = Vec::new();
    for pin in ["0", "100"] {
        let want = [("pinned_pct", pin)];
        let par = [("n", ns.clone()), ("pinned_pct", pin.to_owned())];
        let mut with_key = Figure::new(
            "footprint",
            "rss_per_object",
            &par,
            "B",
            Better::Lower,
            r.values(&want, "rss_per_object"),
        )
        .target(Target::AtMost(100.0));
        if pin == "0" {
            with_key = with_key.note(
                "VmRSS growth / N, the master's copy of the 20 key bytes included (the \
                 harness's own key buffer exists before the baseline)",
            );
        }
        out.push(with_key);
        let mut f = Figure::new(
            "footprint",
            "rss_per_object_ex_key",
            &par,
            "B",
            Better::Lower,
            r.values(&want, "rss_per_object")
                .into_iter()
                .map(|v| v - KEY_BYTES)
                .collect(),
        );
        if pin == "0" {
            f = f.note(
                "minus the 20 bytes of `bench/key/%010d`; the stored key also carries the tenant \
                 (`default\\0`, 8 bytes), counted as overhead; the target is on rss_per_object",
            );
        }
        out.push(f);
        out.push(Figure::new(
            "footprint",
            "heap_per_object_ex_key",
            &par,
            "B",
            Better::Lower,
            r.values(&want, "heap_per_object")
                .into_iter()
                .map(|v| v - KEY_BYTES)
                .collect(),
        ));
    }
    for (name, metric) in [
        ("index_rss_per_pin", "rss_per_object"),
        ("index_heap_per_pin", "heap_per_object"),
    ] {
        out.push(Figure::new(
            "footprint",
            name,
            &[("n", ns.clone())],
            "B",
            Better::Lower,
            r.pair(
                &[("pinned_pct", "100")],
                &[("pinned_pct", "0")],
                metric,
                |a, b| a - b,
            ),
        ));
    }
    out
}
