//! `read`: Get and Exist through the Rust API, 1 and 2 threads, on a master
//! with no pins and one with every object pinned (built side by side in one
//! process and measured in A-B-B-A order, so drift hits both alike); then the
//! latency of Get while an eviction pass runs on the unpinned master.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

pub const SCENARIO: Scenario = Scenario {
    name: "read",
    about: "Get/Exist (Rust API), 1 and 2 threads, 0 % vs 100 % pinned; Get p99 during eviction",
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

/// Calls per thread per measurement.
fn per_thread(mode: Mode) -> usize {
    if mode.quick {
        100_000
    } else {
        300_000
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    vec![Params::new(&[
        ("n", size(mode).to_string()),
        ("calls", per_thread(mode).to_string()),
    ])]
}

/// Size of the hot set both threads read.
const HOT_KEYS: usize = 1024;

/// Get is `get_replica_list_into` with a reused buffer here; the anchor
/// measures the allocating `get_replica_list`.
const OPS: [(&str, ReadOp); 2] = [("exist", ReadOp::Exist), ("get", ReadOp::GetInto)];

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    // Each thread reads `calls` random keys per measurement: the first ones
    // of its own permutation of all n keys (spread over the whole table),
    // in passes of at most `calls` distinct keys.
    let per_pass = n.min(p.usize("calls"));
    let passes = (p.usize("calls") / per_pass).max(1);
    let mut s = Sample::default();
    let keys = keys(n);
    let perms: Vec<Vec<u32>> = (0..2)
        .map(|t| {
            let mut perm = permutation(n, 31 + t);
            perm.truncate(per_pass);
            perm
        })
        .collect();
    let (preserve, enable) = (cfg(SoftPinRequest::PRESERVE), cfg(SoftPinRequest::enable()));
    let plain = master();
    put_all(&plain, &keys, |_| &preserve);
    let pinned = master();
    put_all(&pinned, &keys, |_| &enable);

    let mut failures = 0;
    for (name, op) in OPS {
        for threads in [1, 2] {
            let mut rate = |m: &Master| {
                let r = read_run(m, &keys, &perms, threads, passes, op);
                failures += r.failures;
                r.rate() / threads as f64
            };
            let a1 = rate(&plain);
            let b1 = rate(&pinned);
            let b2 = rate(&pinned);
            let a2 = rate(&plain);
            s.set(&format!("{name}_{threads}t_pin0"), (a1 + a2) / 2.0);
            s.set(&format!("{name}_{threads}t_pin100"), (b1 + b2) / 2.0);
        }
    }
    // A hot set read by both threads at once (popular prefixes): the same
    // objects' lease words are written by both cores.
    let hot = HOT_KEYS.min(n);
    let hot_perms: Vec<Vec<u32>> = (0..2).map(|t| permutation(hot, 41 + t)).collect();
    let hot_passes = (p.usize("calls") / hot).max(1);
    for threads in [1, 2] {
        let r = read_run(
            &plain,
            &keys.head(hot),
            &hot_perms,
            threads,
            hot_passes,
            ReadOp::Exist,
        );
        failures += r.failures;
        s.set(&format!("hot_exist_{threads}t"), r.rate() / threads as f64);
    }
    s.set("read_failures", failures as f64);
    drop(pinned);

    // Get latency while one eviction pass runs. The reads above granted
    // leases: move past them so every object is a candidate again.
    plain.advance_time(LEASE + 1).expect("manual clock");
    let flag = AtomicU8::new(WARMUP);
    let (evict_ns, report, mut base, mut during, fails) = std::thread::scope(|sc| {
        let reader = sc.spawn(|| {
            let (mut base, mut during) = (Vec::new(), Vec::new());
            let mut rng = Rng::new(99);
            let mut buf = Vec::with_capacity(4);
            let mut fails = 0u64;
            loop {
                let ph = phase(&flag);
                if ph == STOP {
                    break;
                }
                let k = Key::new(&keys[rng.below(n)]);
                buf.clear();
                let t = std::time::Instant::now();
                let ok = plain.get_replica_list_into(k, &mut buf).is_ok();
                let d = t.elapsed().as_nanos() as u64;
                match ph {
                    BASELINE => base.push(d),
                    DURING => {
                        during.push(d);
                        fails += u64::from(!ok);
                    }
                    _ => {}
                }
            }
            (base, during, fails)
        });
        std::thread::sleep(Duration::from_millis(100));
        flag.store(BASELINE, Ordering::Release);
        std::thread::sleep(Duration::from_millis(300));
        flag.store(DURING, Ordering::Release);
        let t = Stopwatch::start();
        let report = plain.run_eviction(0.05, 0.05).expect("eviction");
        let took = t.elapsed().as_nanos() as f64;
        flag.store(STOP, Ordering::Release);
        let (base, during, fails) = reader.join().unwrap();
        (took, report, base, during, fails)
    });
    s.set("evict_ns", evict_ns);
    s.set("evicted", report.evicted as f64);
    s.set("gets_during", during.len() as f64);
    s.set("gets_failed_during", fails as f64);
    s.set("get_p50_during_ns", percentile(&mut during, 50.0));
    s.set("get_p99_during_ns", percentile(&mut during, 99.0));
    s.set("get_max_during_ns", percentile(&mut during, 100.0));
    s.set("get_p99_base_ns", percentile(&mut base, 99.0));
    s.set("get_p50_base_ns", percentile(&mut base, 50.0));
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let mut out = Vec::new();
    let ns = size(mode).to_string();
    let want = [("n", ns.as_str())];
    for (name, _) in OPS {
        for threads in [1, 2] {
            for pin in ["0", "100"] {
                let mut f = Figure::new(
                    "read",
                    &format!("{name}_per_thread"),
                    &[
                        ("n", ns.clone()),
                        ("threads", threads.to_string()),
                        ("pinned_pct", pin.into()),
                    ],
                    "ops/s",
                    Better::Higher,
                    r.values(&want, &format!("{name}_{threads}t_pin{pin}")),
                )
                .target(Target::AtLeast(3e6))
                .target_stated_at(1_000_000, size(mode) as u64);
                if name == "get" && threads == 1 && pin == "0" {
                    f = f.note("get_replica_list_into with a reused buffer (anchor measures the allocating get_replica_list)");
                }
                out.push(f);
            }
            out.push(
                Figure::new(
                    "read",
                    &format!("{name}_pin_slowdown"),
                    &[("n", ns.clone()), ("threads", threads.to_string())],
                    "%",
                    Better::Lower,
                    r.zip(
                        &want,
                        &format!("{name}_{threads}t_pin0"),
                        &format!("{name}_{threads}t_pin100"),
                        |a, b| (a - b) / a * 100.0,
                    ),
                )
                .target(Target::AtMost(5.0)),
            );
        }
    }
    for threads in [1, 2] {
        let mut f = Figure::new(
            "read",
            "hot_exist_per_thread",
            &[
                ("n", HOT_KEYS.to_string()),
                ("threads", threads.to_string()),
                ("pinned_pct", "0".into()),
            ],
            "ops/s",
            Better::Higher,
            r.values(&want, &format!("hot_exist_{threads}t")),
        )
        .target(Target::AtLeast(4e6));
        if threads == 2 {
            f = f.note("both threads walk the same 1024 keys (own orders): their lease writes share cache lines");
        }
        out.push(f);
    }
    let us = |m: &str| {
        r.values(&want, m)
            .into_iter()
            .map(|v| v * 1e-3)
            .collect::<Vec<_>>()
    };
    let par = [("n", ns.clone()), ("threads", "1".to_owned())];
    out.push(
        Figure::new("read", "get_p99_during_eviction", &par, "us", Better::Lower, us("get_p99_during_ns"))
            .note("one reader thread (get_into, random keys) while run_eviction(0.05, 0.05) runs on the other core"),
    );
    out.push(Figure::new(
        "read",
        "get_p50_during_eviction",
        &par,
        "us",
        Better::Lower,
        us("get_p50_during_ns"),
    ));
    out.push(Figure::new(
        "read",
        "get_max_during_eviction",
        &par,
        "us",
        Better::Lower,
        us("get_max_during_ns"),
    ));
    out.push(Figure::new(
        "read",
        "get_p99_baseline",
        &par,
        "us",
        Better::Lower,
        us("get_p99_base_ns"),
    ));
    out.push(Figure::new(
        "read",
        "eviction_pass_with_reader",
        &[("n", ns.clone())],
        "ms",
        Better::Lower,
        r.values(&want, "evict_ns")
            .into_iter()
            .map(|v| v * 1e-6)
            .collect(),
    ));
    let fails: f64 = r.values(&want, "read_failures").iter().sum();
    if fails != 0.0 {
        out.push(
            Figure::new(
                "read",
                "CHECK_FAILED",
                &[("n", ns)],
                "",
                Better::Lower,
                vec![],
            )
            .note(format!("{fails} failed reads")),
        );
    }
    out
}
