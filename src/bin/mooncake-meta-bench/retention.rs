//! `retention`: the costs of group retention. RetainGroups of a batch of 64
//! already-retained groups (an extension, the common case: a serving stack
//! re-retains a prefix it keeps using), per group; an eviction run that
//! examines every candidate (target and lowerbound 0: nothing is evicted)
//! with half the objects in retained groups, per candidate, beside the
//! same run with the same groups unretained; and cleanup per expired
//! retention beside cleanup per expired soft pin, both in one cycle at the
//! instant everything is due.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;
use std::hint::black_box;

pub const SCENARIO: Scenario = Scenario {
    name: "retention",
    about: "ns per retained group (batch of 64), eviction ns per candidate with 50 % retained vs none, cleanup ns per expired retention vs per expired pin",
    cases,
    child,
    figures,
};

const BATCH: usize = 64;
const GROUP_SIZE: usize = 4;

fn n(mode: Mode) -> usize {
    if mode.quick {
        20_000
    } else {
        200_000
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    vec![Params::new(&[("n", n(mode).to_string())])]
}

fn group_ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("bench/group/{i:08}")).collect()
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    let mut s = Sample::default();

    // RetainGroups of 64 retained groups, repeated: per group.
    let m = master();
    let ids = group_ids(BATCH);
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    m.retain_groups(DEFAULT_TENANT, &refs, MIN).expect("retain");
    let calls = (n / BATCH).max(100);
    let t = Stopwatch::start();
    for _ in 0..calls {
        black_box(m.retain_groups(DEFAULT_TENANT, &refs, MIN).expect("retain"));
    }
    s.set(
        "retain_ns_per_group",
        t.elapsed().as_nanos() as f64 / (calls * BATCH) as f64,
    );

    // Eviction: n objects, half in groups of GROUP_SIZE; retained or not.
    for (label, retain) in [("plain", false), ("retained", true)] {
        let m = master();
        let keys = keys(n);
        let groups = group_ids(n / 2 / GROUP_SIZE + 1);
        let plain = WriteConfig::default();
        let grouped: Vec<WriteConfig> = groups
            .iter()
            .map(|g| WriteConfig::default().with_group(g.clone()))
            .collect();
        for (i, k) in keys.iter().enumerate() {
            let c = if i % 2 == 0 {
                &grouped[i / 2 / GROUP_SIZE]
            } else {
                &plain
            };
            put(&m, k, c);
        }
        if retain {
            for chunk in groups.chunks(BATCH) {
                let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                m.retain_groups(DEFAULT_TENANT, &refs, MIN).expect("retain");
            }
        }
        m.advance_time(LEASE).expect("clock");
        let t = Stopwatch::start();
        let r = m.run_eviction(0.0, 0.0).expect("eviction");
        let ns = t.elapsed().as_nanos() as f64;
        assert_eq!(r.candidates as usize, n, "every object is a candidate");
        s.set(&format!("evict_ns_per_candidate_{label}"), ns / n as f64);
    }

    // Cleanup: n retained groups due at once, and n pins due at once.
    let m = master();
    let groups = group_ids(n);
    for chunk in groups.chunks(BATCH) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        m.retain_groups(DEFAULT_TENANT, &refs, MIN).expect("retain");
    }
    let t = Stopwatch::start();
    m.run_cleanup_at(T0 + MIN);
    let ns = t.elapsed().as_nanos() as f64;
    assert_eq!(m.retained_group_count(), 0, "every retention expired");
    s.set("cleanup_ns_per_retention", ns / n as f64);
    let m = master();
    let pin = cfg(SoftPinRequest::enable_for(MIN));
    put_all(&m, &keys(n), |_| &pin);
    let t = Stopwatch::start();
    let c = m.run_cleanup_at(T0 + MIN);
    let ns = t.elapsed().as_nanos() as f64;
    assert_eq!(c.expired as usize, n, "every pin expired");
    s.set("cleanup_ns_per_pin", ns / n as f64);
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let nn = n(mode).to_string();
    let want = [("n", nn.as_str())];
    let par = [("n", nn.clone())];
    vec![
        Figure::new(
            "retention",
            "retain_groups, batch of 64 retained groups",
            &par,
            "ns/group",
            Better::Lower,
            r.values(&want, "retain_ns_per_group"),
        ),
        Figure::new(
            "retention",
            "eviction, 50 % of objects in retained groups",
            &par,
            "ns/candidate",
            Better::Lower,
            r.values(&want, "evict_ns_per_candidate_retained"),
        ),
        Figure::new(
            "retention",
            "eviction, same groups unretained",
            &par,
            "ns/candidate",
            Better::Lower,
            r.values(&want, "evict_ns_per_candidate_plain"),
        ),
        Figure::new(
            "retention",
            "eviction retained / unretained",
            &par,
            "x",
            Better::Lower,
            r.zip(
                &want,
                "evict_ns_per_candidate_retained",
                "evict_ns_per_candidate_plain",
                |a, b| a / b,
            ),
        )
        .target(Target::AtMost(1.10)),
        Figure::new(
            "retention",
            "cleanup per expired retention",
            &par,
            "ns",
            Better::Lower,
            r.values(&want, "cleanup_ns_per_retention"),
        ),
        Figure::new(
            "retention",
            "cleanup per expired pin",
            &par,
            "ns",
            Better::Lower,
            r.values(&want, "cleanup_ns_per_pin"),
        ),
    ]
}
