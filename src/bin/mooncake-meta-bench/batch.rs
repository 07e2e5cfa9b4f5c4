//! `batch`: batch Exist and batch Get (`batch_exist`,
//! `batch_get_replica_list`, 64 random keys a call, 1 thread) against the
//! loop of single calls over the same keys, measured A-B-B-A in one process
//! on one master, in keys/s, with the batch/single ratio.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;

pub const SCENARIO: Scenario = Scenario {
    name: "batch",
    about: "batch Exist/Get (64 random keys a call, 1 thread) vs the loop of single calls",
    cases,
    child,
    figures,
};

/// Keys per batch call.
const BATCH: usize = 64;

fn size(mode: Mode) -> usize {
    if mode.quick {
        100_000
    } else {
        1_000_000
    }
}

/// Keys read per measurement.
fn per_run(mode: Mode) -> usize {
    if mode.quick {
        100_000
    } else {
        1_000_000
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    vec![Params::new(&[
        ("n", size(mode).to_string()),
        ("calls", per_run(mode).to_string()),
    ])]
}

#[derive(Clone, Copy)]
enum Op {
    Exist,
    Get,
}

/// Reads `ks` once, one key a call or `BATCH` keys a call; keys/s and how
/// many keys were not found readable. The manual clock moves 1 ms first,
/// so every read really extends its lease (as between two system-clock
/// milliseconds).
fn run(m: &Master, ks: &[Key<'_>], op: Op, batched: bool) -> (f64, u64) {
    m.advance_time(1).expect("manual clock");
    let mut misses = 0u64;
    let t = Stopwatch::start();
    match (op, batched) {
        (Op::Exist, false) => {
            for k in ks {
                misses += u64::from(!matches!(m.exist(*k), Ok(true)));
            }
        }
        (Op::Exist, true) => {
            for c in ks.chunks(BATCH) {
                for r in m.batch_exist(c) {
                    misses += u64::from(!matches!(r, Ok(true)));
                }
            }
        }
        (Op::Get, false) => {
            for k in ks {
                misses += u64::from(!m.get_replica_list(*k).is_ok_and(|v| !v.is_empty()));
            }
        }
        (Op::Get, true) => {
            for c in ks.chunks(BATCH) {
                for r in m.batch_get_replica_list(c) {
                    misses += u64::from(!r.is_ok_and(|v| !v.is_empty()));
                }
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    (ks.len() as f64 / secs, misses)
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    let keys = keys(n);
    let m = master();
    let plain = WriteConfig::default();
    put_all(&m, &keys, |_| &plain);
    // Random keys spread over the whole table: a permutation of all n keys,
    // repeated when more calls than keys are asked for.
    let perm = permutation(n, 77);
    let ks: Vec<Key<'_>> = (0..p.usize("calls"))
        .map(|i| Key::new(&keys[perm[i % n] as usize]))
        .collect();
    let mut s = Sample::default();
    let mut misses = 0;
    for (name, op) in [("exist", Op::Exist), ("get", Op::Get)] {
        let mut rate = |batched| {
            let (r, miss) = run(&m, &ks, op, batched);
            misses += miss;
            r
        };
        let a1 = rate(false);
        let b1 = rate(true);
        let b2 = rate(true);
        let a2 = rate(false);
        let (single, batch) = ((a1 + a2) / 2.0, (b1 + b2) / 2.0);
        s.set(&format!("{name}_single"), single);
        s.set(&format!("{name}_batch"), batch);
    }
    s.set("misses", misses as f64);
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let ns = size(mode).to_string();
    let want = [("n", ns.as_str())];
    let mut out = Vec::new();
    for name in ["exist", "get"] {
        let par = [("n", ns.clone()), ("threads", "1".to_owned())];
        out.push(Figure::new(
            "batch",
            &format!("{name}_single_keys_per_s"),
            &par,
            "keys/s",
            Better::Higher,
            r.values(&want, &format!("{name}_single")),
        ));
        let mut f = Figure::new(
            "batch",
            &format!("{name}_batch{BATCH}_keys_per_s"),
            &par,
            "keys/s",
            Better::Higher,
            r.values(&want, &format!("{name}_batch")),
        );
        if name == "exist" {
            // The target is stated at 10^7 (`scale` measures it there).
            f = f
                .target(Target::AtLeast(8e6))
                .target_stated_at(10_000_000, size(mode) as u64);
        }
        out.push(f);
        out.push(
            Figure::new(
                "batch",
                &format!("{name}_batch_over_single"),
                &par,
                "x",
                Better::Higher,
                r.zip(
                    &want,
                    &format!("{name}_batch"),
                    &format!("{name}_single"),
                    |b, a| b / a,
                ),
            )
            .note("same keys, same master, A-B-B-A"),
        );
    }
    let misses: f64 = r.values(&want, "misses").iter().sum();
    if misses != 0.0 {
        out.push(
            Figure::new(
                "batch",
                "CHECK_FAILED",
                &[("n", ns)],
                "",
                Better::Lower,
                vec![],
            )
            .note(format!("{misses} keys not found readable")),
        );
    }
    out
}
