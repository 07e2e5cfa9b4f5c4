//! `write`: PutStart+PutEnd of new keys and in-place UpsertStart+UpsertEnd of
//! existing ones, with and without soft pins (ENABLE default TTL vs
//! PRESERVE), then non-forced Remove of every key; and a cold PutEnd: the
//! PutEnd of a key whose PutStart came [`COLD_GAP`] other writes earlier.
//! One fresh process per (case, repetition), cases interleaved.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;

pub const SCENARIO: Scenario = Scenario {
    name: "write",
    about: "Put and Upsert pairs with and without pins; non-forced Remove; cold PutEnd",
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

/// Complete writes (PutStart+PutEnd of other keys) between a cold key's
/// PutStart and its PutEnd.
const COLD_GAP: usize = 10_000;

/// Cold PutEnds timed per process, and the writes between two cold
/// PutStarts (so about `COLD_GAP / COLD_EVERY` cold keys are in flight).
fn cold_size(mode: Mode) -> (usize, usize) {
    if mode.quick {
        (1_000, 10)
    } else {
        (10_000, 100)
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
    for op in ["pin_interleaved", "pin_interleaved_aa"] {
        v.push(Params::new(&[
            ("n", size(mode).to_string()),
            ("op", op.into()),
        ]));
    }
    let (cn, every) = cold_size(mode);
    for pin in ["0", "100"] {
        v.push(Params::new(&[
            ("n", cn.to_string()),
            ("op", "cold".into()),
            ("pinned_pct", pin.into()),
            ("every", every.to_string()),
        ]));
    }
    v
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    match p.str("op") {
        "pin_interleaved" => return pin_interleaved(n, false),
        "pin_interleaved_aa" => return pin_interleaved(n, true),
        _ => {}
    }
    let c = if p.str("pinned_pct") == "100" {
        cfg(SoftPinRequest::enable())
    } else {
        cfg(SoftPinRequest::PRESERVE)
    };
    if p.str("op") == "cold" {
        return cold_child(n, p.usize("every"), &c);
    }
    let mut s = Sample::default();
    let keys = keys(n);
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

/// `op=pin_interleaved`: put pairs of the same keys into two masters in
/// one process, unpinned (PRESERVE) into one and pinned (ENABLE, the
/// default TTL) into the other, in block pairs (`interleaved`: each
/// master first in half of the pairs, chosen by a fixed-seed shuffle):
/// the pin's cost measured over the same stretch of time as the put it
/// is compared with. `op=pin_interleaved_aa` (`aa`): both masters pinned,
/// the same comparison between two like masters: the harness's noise
/// floor (its ratio should be 1).
fn pin_interleaved(n: usize, aa: bool) -> Sample {
    let keys = keys(n);
    let (cheap, costly) = (master(), master());
    let c_pinned = cfg(SoftPinRequest::enable());
    let c_cheap = if aa {
        c_pinned.clone()
    } else {
        cfg(SoftPinRequest::PRESERVE)
    };
    let blocks = interleaved(n, |side, from, to| {
        let (m, c) = match side {
            Side::Cheap => (&cheap, &c_cheap),
            Side::Costly => (&costly, &c_pinned),
        };
        for i in from..to {
            put(m, &keys[i], c);
        }
    });
    assert_eq!(
        costly.metrics().soft_pin_key_count,
        n as u64,
        "every put pinned"
    );
    if aa {
        assert_eq!(
            cheap.metrics().soft_pin_key_count,
            n as u64,
            "every put pinned"
        );
        return blocks.sample(
            n,
            &BlockNames {
                cheap_rate: "put_pairs_per_s_pinned_a",
                costly_rate: "put_pairs_per_s_pinned_b",
                ratio: "b_over_a",
                block_median: "b_over_a_block_median",
                costly_arm0: "b_over_a_b_arm0",
                costly_arm1: "b_over_a_b_arm1",
            },
        );
    }
    blocks.sample(
        n,
        &BlockNames {
            cheap_rate: "put_pairs_per_s_unpinned",
            costly_rate: "put_pairs_per_s_pinned",
            ratio: "pinned_over_unpinned",
            block_median: "pinned_over_unpinned_block_median",
            costly_arm0: "pinned_over_unpinned_pinned_arm0",
            costly_arm1: "pinned_over_unpinned_pinned_arm1",
        },
    )
}

/// A stream of `n * every + COLD_GAP` filler writes (PutStart+PutEnd, each
/// PutEnd timed: the hot reference); before filler write `j * every` the
/// j-th cold key's PutStart, after filler write `j * every + COLD_GAP - 1`
/// its timed PutEnd. Both timings use the wall clock around the one call,
/// so the clock's cost is in both.
fn cold_child(n: usize, every: usize, c: &WriteConfig) -> Sample {
    let mut s = Sample::default();
    let fill = keys_with("bench/fill/", n * every + COLD_GAP);
    let cold = keys_with("bench/cold/", n);
    let m = master();
    let (mut hot_ns, mut cold_ns) = (Vec::with_capacity(fill.len()), Vec::with_capacity(n));
    let end = |k: &str| {
        let t = std::time::Instant::now();
        m.put_end(WRITER, Key::new(k), ReplicaSelector::Memory, None)
            .expect("put_end");
        t.elapsed().as_nanos() as u64
    };
    for (i, k) in fill.iter().enumerate() {
        if i % every == 0 && i / every < n {
            m.put_start(WRITER, Key::new(&cold[i / every]), SIZE, c)
                .expect("put_start");
        }
        m.put_start(WRITER, Key::new(k), SIZE, c)
            .expect("put_start");
        hot_ns.push(end(k));
        if let Some(started) = (i + 1).checked_sub(COLD_GAP) {
            if started % every == 0 && started / every < n {
                cold_ns.push(end(&cold[started / every]));
            }
        }
    }
    assert_eq!(cold_ns.len(), n, "every cold key ended");
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
    s.set("cold_putend_ns", mean(&cold_ns));
    s.set("hot_putend_ns", mean(&hot_ns));
    s.set("cold_putend_p99_ns", percentile(&mut cold_ns, 99.0));
    s.set("hot_putend_p99_ns", percentile(&mut hot_ns, 99.0));
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
                // >= 1 M put pairs/s is stated at 10^6 objects.
                f = f
                    .target(Target::AtLeast(1e6))
                    .target_stated_at(1_000_000, size(mode) as u64);
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
    let il = [("op", "pin_interleaved")];
    let par = [("n", ns.clone())];
    for (name, metric) in [
        ("put_pairs_unpinned_interleaved", "put_pairs_per_s_unpinned"),
        ("put_pairs_pinned_interleaved", "put_pairs_per_s_pinned"),
    ] {
        out.push(Figure::new(
            "write",
            name,
            &par,
            "ops/s",
            Better::Higher,
            r.values(&il, metric),
        ));
    }
    // The target of put_pin_slowdown again, from rates taken in the same
    // stretch of time: the median over block pairs, each master first in
    // half of them.
    let slowdown = |metric: &str, il: &[(&str, &str)]| -> Vec<f64> {
        r.values(il, metric)
            .into_iter()
            .map(|x| (1.0 - x) * 100.0)
            .collect()
    };
    out.push(
        Figure::new(
            "write",
            "put_pin_slowdown_interleaved",
            &par,
            "%",
            Better::Lower,
            slowdown("pinned_over_unpinned_block_median", &il),
        )
        .target(Target::AtMost(5.0))
        .note("100 % pinned (ENABLE) vs unpinned put pairs into two masters in one process, in pairs of blocks of 4096 keys, the pinned master first in half of the pairs (a fixed-seed shuffle) and second in the other half; 1 − the median over block pairs of pinned ÷ unpinned rate"),
    );
    // The same median over the pairs the pinned master ran first in (arm
    // 0) and second in (arm 1): no target, they show the position's effect.
    for (arm, metric) in [
        ("0", "pinned_over_unpinned_pinned_arm0"),
        ("1", "pinned_over_unpinned_pinned_arm1"),
    ] {
        let mut f = Figure::new(
            "write",
            "put_pin_slowdown_interleaved_by_arm",
            &[("n", ns.clone()), ("pinned_arm", arm.to_owned())],
            "%",
            Better::Lower,
            slowdown(metric, &il),
        );
        if arm == "0" {
            f = f.note("put_pin_slowdown_interleaved over the block pairs in which the pinned master ran first (pinned_arm=0) or second (pinned_arm=1) only; no target: their difference is what a fixed order would have added");
        }
        out.push(f);
    }
    // The A/A calibration: both masters pinned, the same comparison.
    let aa = [("op", "pin_interleaved_aa")];
    out.push(
        Figure::new(
            "write",
            "put_pin_aa_interleaved",
            &par,
            "x",
            Better::Higher,
            r.values(&aa, "b_over_a_block_median"),
        )
        .note("A/A calibration (the noise floor of put_pin_slowdown_interleaved): both masters pinned, the same block pairs and order; the median over block pairs of master B ÷ master A rate, 1 when the harness is unbiased; no target"),
    );
    for (arm, metric) in [("0", "b_over_a_b_arm0"), ("1", "b_over_a_b_arm1")] {
        out.push(Figure::new(
            "write",
            "put_pin_aa_interleaved_by_arm",
            &[("n", ns.clone()), ("b_arm", arm.to_owned())],
            "x",
            Better::Higher,
            r.values(&aa, metric),
        ));
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
        .target(Target::AtLeast(2e6));
        if pin == "0" {
            f = f
                .note("every key once, in a random order (fixed-seed shuffle drawn before timing)");
        }
        out.push(f);
    }
    let (cn, every) = cold_size(mode);
    for pin in ["0", "100"] {
        let want = [("op", "cold"), ("pinned_pct", pin)];
        let par = [("n", cn.to_string()), ("pinned_pct", pin.to_owned())];
        for (name, metric) in [
            ("putend_cold", "cold_putend_ns"),
            ("putend_hot", "hot_putend_ns"),
            ("putend_cold_p99", "cold_putend_p99_ns"),
            ("putend_hot_p99", "hot_putend_p99_ns"),
        ] {
            let mut f = Figure::new(
                "write",
                name,
                &par,
                "ns",
                Better::Lower,
                r.values(&want, metric),
            );
            if pin == "0" && name == "putend_cold" {
                f = f.note(format!(
                    "mean ns of one PutEnd issued {COLD_GAP} other PutStart+PutEnd pairs after its \
                     PutStart (a new cold key every {every} writes, so ~{} in flight); hot = the \
                     PutEnd right after its PutStart, same stream, same wall-clock timing",
                    COLD_GAP / every
                ));
            }
            out.push(f);
        }
    }
    out
}
