//! `cleanup`: soft-pin expiration with the deadline index versus the same
//! cycle as a full scan (`debug_scan_expired`: one read lock per shard, one
//! atomic load per object). N pins plus N unpinned objects; due fractions
//! 0, 0.1 %, 1 % and 100 %; the longest index-lock hold; and the PutEnd
//! latency of a concurrent pinned writer during a 100 %-due cycle.
//!
//! At each instant the index cycle runs first, then the scan: the scan
//! finds the due pins already cleared, so it pays the walk but not the
//! CASes — a lower bound on a scan-based cleanup (the ratio is
//! conservative). Caches are flushed before every measured cycle.
//!
//! The 100 %-due waves give every pin a deadline of its own. The offsets
//! (0..n ms after the base TTL) are dealt to the pins in a fixed-seed random
//! order, so the wave pops objects in an order unrelated to the order they
//! were written in (arena slots), as churned or varied-TTL pins would be;
//! the same wave with the offsets in insertion order (the j-th pin j ms
//! late, popped in slot order) is reported beside it as
//! `..._in_insertion_order`.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

pub const SCENARIO: Scenario = Scenario {
    name: "cleanup",
    about: "index vs full-scan cleanup at 0/0.1/1/100 % due; lock hold; PutEnd p99 during a wave",
    cases,
    child,
    figures,
};

/// What a longest-hold figure that includes registrations measures
/// (core/src/soft_pin/index.rs, `REGISTER_TIMED_EVERY`).
pub const REGISTER_SAMPLED: &str =
    "of the registrations (one heap push each), one hold in 32 is timed \
     (core/src/soft_pin/index.rs REGISTER_TIMED_EVERY), and every one whose push starts a \
     heap chunk; every other index hold (pops, rebuild swaps and merges) is timed each time";

fn sizes(mode: Mode) -> Vec<usize> {
    if mode.quick {
        vec![1_000, 10_000]
    } else {
        vec![10_000, 100_000, 1_000_000]
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    let sizes = sizes(mode);
    let mut v = Vec::new();
    for &n in &sizes {
        v.push(Params::new(&[
            ("n", n.to_string()),
            ("kind", "tiers".into()),
        ]));
        for deadlines in DEADLINES {
            v.push(Params::new(&[
                ("n", n.to_string()),
                ("kind", "wave".into()),
                ("deadlines", deadlines.into()),
            ]));
        }
    }
    let top = *sizes.last().unwrap();
    v.push(Params::new(&[
        ("n", top.to_string()),
        ("kind", "writer".into()),
    ]));
    v
}

/// How the wave's distinct deadlines are dealt to the pins: a fixed-seed
/// random permutation (the figures with the targets) or in insertion order
/// (`..._in_insertion_order`).
const DEADLINES: [&str; 2] = ["permuted", "insertion"];

/// Hot nothing-due calls timed as one loop.
const HOT_CALLS: u32 = 100_000;

/// Tier sizes: 0.1 % and 1 % of the pins (at least one each).
fn tiers(n: usize) -> (usize, usize) {
    ((n / 1000).max(1), (n / 100).max(1))
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    match p.str("kind") {
        "tiers" => tiers_child(n),
        "wave" => wave_child(n, p.str("deadlines") == "permuted"),
        _ => writer_child(n),
    }
}

/// 2n objects, every even one pinned with `pin_req(j)` for the j-th pin.
fn build(pin_req: impl Fn(usize) -> SoftPinRequest, keys: &Keys) -> Master {
    let m = master();
    let preserve = cfg(SoftPinRequest::PRESERVE);
    let mut pinned = cfg(SoftPinRequest::enable());
    for (i, k) in keys.iter().enumerate() {
        if i % 2 == 0 {
            pinned.soft_pin = pin_req(i / 2);
            put(&m, k, &pinned);
        } else {
            put(&m, k, &preserve);
        }
    }
    m
}

/// Base TTL of the 100 %-due waves' pins (the master's default).
const WAVE_TTL: u64 = 30 * MIN;

/// Seed of the permutation that deals the wave's deadlines.
const DEADLINE_SEED: u64 = 0xDEAD_1135;

/// The deadline offsets (ms after `WAVE_TTL`) of a wave's `n` pins: the
/// j-th pin gets `offsets[j]`, a fixed-seed random permutation of 0..n
/// when `permuted`, else j (insertion order). Distinct either way, so no
/// two pins share a deadline and the index pays a real pop per pin, not
/// runs of equal keys; all are due at [`wave_at`].
fn wave_offsets(n: usize, permuted: bool) -> Vec<u32> {
    if permuted {
        permutation(n, DEADLINE_SEED)
    } else {
        (0..n as u32).collect()
    }
}

/// The j-th pin of a 100 %-due wave: its own deadline, `WAVE_TTL +
/// offsets[j]` ms after the build's instant.
fn wave_pin(offsets: &[u32]) -> impl Fn(usize) -> SoftPinRequest + '_ {
    move |j| SoftPinRequest::enable_for(WAVE_TTL + u64::from(offsets[j]))
}

/// The instant at which all `n` wave pins (and nothing else) are due.
fn wave_at(m: &Master, n: usize) -> u64 {
    m.now() + WAVE_TTL + n as u64
}

fn timed_cleanup(m: &Master, at: u64) -> (f64, CleanupStats) {
    flush_caches();
    m.debug_reset_index_hold();
    let t = Stopwatch::start();
    let st = m.run_cleanup_at(at);
    (t.elapsed().as_nanos() as f64, st)
}

fn timed_scan(m: &Master, at: u64) -> (f64, u64) {
    flush_caches();
    let t = Stopwatch::start();
    let cleared = m.debug_scan_expired(at);
    (t.elapsed().as_nanos() as f64, cleared)
}

fn tiers_child(n: usize) -> Sample {
    let mut s = Sample::default();
    let keys = keys(2 * n);
    let (a, b) = tiers(n);
    let m = build(
        |j| {
            if j < a {
                SoftPinRequest::enable_for(MIN)
            } else if j < a + b {
                SoftPinRequest::enable_for(2 * MIN)
            } else {
                SoftPinRequest::enable()
            }
        },
        &keys,
    );
    let now = m.now();

    // Nothing due: one cold call (which also reports the build's longest
    // hold, since the gauge was never reset), then a hot loop.
    flush_caches();
    let t = Stopwatch::start();
    let st = m.run_cleanup_at(now);
    s.set("idx_0_cold_ns", t.elapsed().as_nanos() as f64);
    s.set("build_longest_hold_ns", st.longest_index_hold_ns as f64);
    let t = Stopwatch::start();
    for _ in 0..HOT_CALLS {
        std::hint::black_box(m.run_cleanup_at(std::hint::black_box(now)));
    }
    s.set(
        "idx_0_hot_ns",
        t.elapsed().as_nanos() as f64 / HOT_CALLS as f64,
    );
    let (scan, cleared) = timed_scan(&m, now);
    s.set("scan_0_ns", scan);
    s.set("scan_0_cleared", cleared as f64);

    for (label, at, expect) in [("0.1", now + MIN, a), ("1", now + 2 * MIN, b)] {
        let (idx, st) = timed_cleanup(&m, at);
        s.set(&format!("idx_{label}_ns"), idx);
        s.set(
            &format!("idx_{label}_hold_ns"),
            st.longest_index_hold_ns as f64,
        );
        s.set(&format!("idx_{label}_expired"), st.expired as f64);
        s.set(&format!("idx_{label}_expected"), expect as f64);
        let (scan, _) = timed_scan(&m, at);
        s.set(&format!("scan_{label}_ns"), scan);
    }
    s
}

fn wave_child(n: usize, permuted: bool) -> Sample {
    let mut s = Sample::default();
    let keys = keys(2 * n);
    let offsets = wave_offsets(n, permuted);
    let m = build(wave_pin(&offsets), &keys);
    let at = wave_at(&m, n);
    let (idx, st) = timed_cleanup(&m, at);
    s.set("idx_100_ns", idx);
    s.set("idx_100_hold_ns", st.longest_index_hold_ns as f64);
    s.set("idx_100_expired", st.expired as f64);
    s.set("idx_100_expected", n as f64);
    s.set("idx_100_batches", st.batches as f64);
    s.set("idx_100_shards_touched", st.shards_touched as f64);
    let (scan, _) = timed_scan(&m, at);
    s.set("scan_100_ns", scan);
    drop(m);
    let bare = bare_index_pop(T0 + WAVE_TTL, &offsets);
    s.set("index_pop_100_ns", bare.total_ns);
    s.set("index_pops_in_holds_100_ns", bare.pops_ns);
    s.set("index_pop_holds_100", bare.pop_holds as f64);
    s
}

fn writer_child(n: usize) -> Sample {
    let mut s = Sample::default();
    let keys = keys(2 * n);
    let offsets = wave_offsets(n, true);
    let m = build(wave_pin(&offsets), &keys);
    let at = wave_at(&m, n);
    // The writer's pins outlive `at`, so the wave does not chase them.
    let wcfg = cfg(SoftPinRequest::enable_for(60 * MIN));
    assert!(
        (WAVE_TTL + n as u64) < 60 * MIN,
        "the writer's pins must outlive the wave"
    );
    let phase_flag = AtomicU8::new(WARMUP);
    let (cycle_ns, st, mut base, mut during, wrote_during) = std::thread::scope(|sc| {
        let writer = sc.spawn(|| {
            let (mut base, mut during) = (Vec::new(), Vec::new());
            let mut key = String::new();
            let mut wrote_during = 0u64;
            for i in 0u64.. {
                let ph = phase(&phase_flag);
                if ph == STOP {
                    break;
                }
                key.clear();
                let _ = write!(key, "bench/writer/{i:010}");
                m.put_start(WRITER, Key::new(&key), SIZE, &wcfg)
                    .expect("put_start");
                let t = std::time::Instant::now();
                m.put_end(WRITER, Key::new(&key), ReplicaSelector::Memory, None)
                    .expect("put_end");
                let d = t.elapsed().as_nanos() as u64;
                match ph {
                    BASELINE => base.push(d),
                    DURING => {
                        during.push(d);
                        wrote_during += 1;
                    }
                    _ => {}
                }
            }
            (base, during, wrote_during)
        });
        std::thread::sleep(Duration::from_millis(100));
        phase_flag.store(BASELINE, Ordering::Release);
        std::thread::sleep(Duration::from_millis(300));
        m.debug_reset_index_hold();
        phase_flag.store(DURING, Ordering::Release);
        let t = Stopwatch::start();
        let st = m.run_cleanup_at(at);
        let cycle = t.elapsed().as_nanos() as f64;
        phase_flag.store(STOP, Ordering::Release);
        let (base, during, wrote) = writer.join().unwrap();
        (cycle, st, base, during, wrote)
    });
    s.set("cycle_ns", cycle_ns);
    s.set("cycle_expired", st.expired as f64);
    s.set("cycle_hold_ns", st.longest_index_hold_ns as f64);
    s.set("putend_during", during.len() as f64);
    s.set("puts_per_s_during", wrote_during as f64 / (cycle_ns / 1e9));
    s.set("putend_p50_ns", percentile(&mut during, 50.0));
    s.set("putend_p99_ns", percentile(&mut during, 99.0));
    s.set("putend_max_ns", percentile(&mut during, 100.0));
    s.set("putend_base_p99_ns", percentile(&mut base, 99.0));
    s.set("putend_base_p50_ns", percentile(&mut base, 50.0));
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let mut out = Vec::new();
    let sizes = sizes(mode);
    let top = *sizes.last().unwrap();
    for &n in &sizes {
        let ns = n.to_string();
        let tier = [("n", ns.as_str()), ("kind", "tiers")];
        let wave = [
            ("n", ns.as_str()),
            ("kind", "wave"),
            ("deadlines", "permuted"),
        ];
        let inserted = [
            ("n", ns.as_str()),
            ("kind", "wave"),
            ("deadlines", "insertion"),
        ];
        let par = |due: &str| vec![("n", ns.clone()), ("due_pct", due.to_owned())];
        let at_top = n == top && !mode.quick;
        let scale = |v: Vec<f64>, k: f64| v.into_iter().map(|x| x * k).collect::<Vec<_>>();

        let mut f = Figure::new(
            "cleanup",
            "index_cycle_hot",
            &par("0"),
            "us",
            Better::Lower,
            scale(r.values(&tier, "idx_0_hot_ns"), 1e-3),
        )
        .target(Target::AtMost(0.5));
        if n == sizes[0] {
            f = f.note(format!("mean of {HOT_CALLS} back-to-back calls"));
        }
        out.push(f);
        out.push(Figure::new(
            "cleanup",
            "index_cycle_cold",
            &par("0"),
            "us",
            Better::Lower,
            scale(r.values(&tier, "idx_0_cold_ns"), 1e-3),
        ));
        out.push(Figure::new(
            "cleanup",
            "scan_cycle",
            &par("0"),
            "ms",
            Better::Lower,
            scale(r.values(&tier, "scan_0_ns"), 1e-6),
        ));
        // The scan walks every object, the index none: the ratio grows with
        // N, and its target is stated at 10^6 pins (met: null below).
        out.push(
            Figure::new(
                "cleanup",
                "scan_over_index",
                &par("0"),
                "x",
                Better::Higher,
                r.zip(&tier, "scan_0_ns", "idx_0_hot_ns", |s, i| s / i),
            )
            .target(Target::AtLeast(10_000.0))
            .target_stated_at(1_000_000, n as u64),
        );
        let mut f = Figure::new(
            "cleanup",
            "build_longest_index_hold",
            &par("-"),
            "ms",
            Better::Lower,
            scale(r.values(&tier, "build_longest_hold_ns"), 1e-6),
        )
        .target(Target::AtMost(1.0));
        if n == sizes[0] {
            f = f.note(REGISTER_SAMPLED);
        }
        out.push(f);

        for (label, case, key) in [
            ("0.1", &tier[..], "0.1"),
            ("1", &tier[..], "1"),
            ("100", &wave[..], "100"),
        ] {
            out.push(Figure::new(
                "cleanup",
                "index_cycle",
                &par(label),
                "ms",
                Better::Lower,
                {
                    let v = scale(r.values(case, &format!("idx_{key}_ns")), 1e-6);
                    v
                },
            ));
            out.push(Figure::new(
                "cleanup",
                "scan_cycle",
                &par(label),
                "ms",
                Better::Lower,
                scale(r.values(case, &format!("scan_{key}_ns")), 1e-6),
            ));
            out.push(Figure::new(
                "cleanup",
                "scan_over_index",
                &par(label),
                "x",
                Better::Higher,
                r.zip(
                    case,
                    &format!("scan_{key}_ns"),
                    &format!("idx_{key}_ns"),
                    |s, i| s / i,
                ),
            ));
            out.push(
                Figure::new(
                    "cleanup",
                    "longest_index_hold",
                    &par(label),
                    "ms",
                    Better::Lower,
                    scale(r.values(case, &format!("idx_{key}_hold_ns")), 1e-6),
                )
                .target(Target::AtMost(1.0)),
            );
        }
        let mut f = Figure::new(
            "cleanup",
            "per_expired_pin",
            &par("100"),
            "us",
            Better::Lower,
            r.zip(&wave, "idx_100_ns", "idx_100_expected", |t, e| t / e * 1e-3),
        )
        .target(Target::AtMost(0.3));
        if n == sizes[0] {
            f = f.note(
                "every pin with a deadline of its own, the distinct offsets 0..n ms dealt to the \
                 pins in a fixed-seed random order (the wave pops objects in an order unrelated \
                 to their arena slots); one cycle at the instant all are due",
            );
        }
        out.push(f);
        let mut f = Figure::new(
            "cleanup",
            "per_expired_pin_in_insertion_order",
            &par("100"),
            "us",
            Better::Lower,
            r.zip(&inserted, "idx_100_ns", "idx_100_expected", |t, e| {
                t / e * 1e-3
            }),
        );
        if n == sizes[0] {
            f = f.note(
                "the same wave with the j-th pin j ms late: popped in insertion (arena slot) \
                 order, a page and TLB locality churned or varied-TTL pins would not have \
                 (flatters the figure; no target)",
            );
        }
        out.push(f);
        out.push(Figure::new(
            "cleanup",
            "of_which_bare_index_pops",
            &par("100"),
            "ms",
            Better::Lower,
            scale(r.values(&wave, "index_pop_100_ns"), 1e-6),
        ));
        out.push(Figure::new(
            "cleanup",
            "of_which_bare_index_pops_in_insertion_order",
            &par("100"),
            "ms",
            Better::Lower,
            scale(r.values(&inserted, "index_pop_100_ns"), 1e-6),
        ));
        let mut per_batch = Figure::new(
            "cleanup",
            "index_work_per_batch",
            &par("100"),
            "ms",
            Better::Lower,
            r.zip(
                &wave,
                "index_pops_in_holds_100_ns",
                "index_pop_holds_100",
                |t, b| t / b * 1e-6,
            ),
        )
        .target(Target::AtMost(1.0));
        if n == sizes[0] {
            per_batch = per_batch.note(
                "bare-index time in pop_due / its lock holds (at most 32 pops each): the work one \
                 hold does (an upper bound: it includes the waits between holds; the wave's rest, \
                 taken in one pass with the heap detached, holds the lock O(1)). On a loaded machine the measured longest \
                 hold also contains time slices lost to preemption of the holder (multiples of the \
                 4 ms scheduler tick)",
            );
        }
        out.push(per_batch);
        if at_top {
            out.push(
                Figure::new(
                    "cleanup",
                    "wave_100pct",
                    &par("100"),
                    "ms",
                    Better::Lower,
                    scale(r.values(&wave, "idx_100_ns"), 1e-6),
                )
                .target(Target::AtMost(300.0))
                .target_stated_at(1_000_000, n as u64),
            );
        }
        // Correctness: every cycle cleared exactly what was due.
        let mut bad = Vec::new();
        let waves = r.samples(&wave).iter().chain(r.samples(&inserted));
        for s in r.samples(&tier).iter().chain(waves) {
            for key in ["0.1", "1", "100"] {
                let (got, want) = (
                    s.get(&format!("idx_{key}_expired")),
                    s.get(&format!("idx_{key}_expected")),
                );
                if !want.is_nan() && got != want {
                    bad.push(format!("{key}% due: expired {got} of {want}"));
                }
            }
        }
        if !bad.is_empty() {
            out.push(
                Figure::new(
                    "cleanup",
                    "CHECK_FAILED",
                    &par("-"),
                    "",
                    Better::Lower,
                    vec![],
                )
                .note(bad.join("; ")),
            );
        }
    }
    let w = [("kind", "writer")];
    let tn = top.to_string();
    let par = || vec![("n", tn.clone()), ("due_pct", "100".to_owned())];
    let us = |metric: &str| {
        r.values(&w, metric)
            .into_iter()
            .map(|v| v * 1e-3)
            .collect::<Vec<_>>()
    };
    out.push(
        Figure::new("cleanup", "putend_p99_during_wave", &par(), "us", Better::Lower, us("putend_p99_ns"))
            .note("a pinned writer thread (PutStart+PutEnd, ENABLE 60 min) runs through the 100 %-due cycle; \
                   baseline = the same writer in the 300 ms before it"),
    );
    out.push(Figure::new(
        "cleanup",
        "putend_p50_during_wave",
        &par(),
        "us",
        Better::Lower,
        us("putend_p50_ns"),
    ));
    out.push(Figure::new(
        "cleanup",
        "putend_max_during_wave",
        &par(),
        "us",
        Better::Lower,
        us("putend_max_ns"),
    ));
    out.push(Figure::new(
        "cleanup",
        "putend_p99_baseline",
        &par(),
        "us",
        Better::Lower,
        us("putend_base_p99_ns"),
    ));
    out.push(Figure::new(
        "cleanup",
        "wave_with_writer",
        &par(),
        "ms",
        Better::Lower,
        r.values(&w, "cycle_ns")
            .into_iter()
            .map(|v| v * 1e-6)
            .collect(),
    ));
    out.push(Figure::new(
        "cleanup",
        "writer_puts_during_wave",
        &par(),
        "ops/s",
        Better::Higher,
        r.values(&w, "puts_per_s_during"),
    ));
    out.push(
        Figure::new(
            "cleanup",
            "longest_index_hold_with_writer",
            &par(),
            "ms",
            Better::Lower,
            r.values(&w, "cycle_hold_ns")
                .into_iter()
                .map(|v| v * 1e-6)
                .collect(),
        )
        .target(Target::AtMost(1.0))
        .note(format!(
            "the longest index-mutex hold of the 100 %-due cycle, the writer's registrations \
             included; {REGISTER_SAMPLED}"
        )),
    );
    out
}
