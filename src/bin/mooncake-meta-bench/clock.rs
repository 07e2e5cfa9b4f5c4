//! `clock`: the cost of `now()` on the system timeline (a monotonic clock
//! read plus the anchor addition) beside a bare wall-clock read, the cost of
//! the clock the master read before it had a timeline. Every deadline,
//! lease and write check reads `now()` once, so it must stay cheap.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;
use std::hint::black_box;

pub const SCENARIO: Scenario = Scenario {
    name: "clock",
    about: "ns per now() on the system timeline, and per wall-clock read for comparison",
    cases,
    child,
    figures,
};

fn calls(mode: Mode) -> usize {
    if mode.quick {
        1_000_000
    } else {
        20_000_000
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    vec![Params::new(&[("calls", calls(mode).to_string())])]
}

fn child(p: &Params) -> Sample {
    let n = p.usize("calls");
    let mut s = Sample::default();
    let m = Master::new(MasterConfig {
        soft_pin_cleanup_interval_ms: 0,
        eviction_check_interval_ms: 0,
        sweep_interval_ms: 0,
        ..MasterConfig::default()
    })
    .expect("master");
    let t = Stopwatch::start();
    let mut last = 0;
    for _ in 0..n {
        let now = black_box(m.now());
        assert!(now >= last, "the timeline went backwards");
        last = now;
    }
    s.set("now_ns", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Stopwatch::start();
    for _ in 0..n {
        black_box(std::time::SystemTime::now());
    }
    s.set("wall_ns", t.elapsed().as_nanos() as f64 / n as f64);
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let c = calls(mode).to_string();
    let want = [("calls", c.as_str())];
    let par = [("calls", c.clone())];
    vec![
        Figure::new(
            "clock",
            "now() on the system timeline",
            &par,
            "ns",
            Better::Lower,
            r.values(&want, "now_ns"),
        ),
        Figure::new(
            "clock",
            "wall-clock read (the clock before the timeline)",
            &par,
            "ns",
            Better::Lower,
            r.values(&want, "wall_ns"),
        ),
        // Measured in the same process, back to back: the ratio is what
        // survives a loaded machine.
        Figure::new(
            "clock",
            "now() / wall-clock read",
            &par,
            "x",
            Better::Lower,
            r.zip(&want, "now_ns", "wall_ns", |a, b| a / b),
        )
        .target(Target::AtMost(1.25)),
    ]
}
