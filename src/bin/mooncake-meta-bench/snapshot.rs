//! `snapshot`: `snapshot()` (capture + encode) and `restore()` into a fresh
//! master at N objects, every one pinned so that all survive the restore's
//! survival rule; the size of the image.

use crate::report::{Better, Figure};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;

pub const SCENARIO: Scenario = Scenario {
    name: "snapshot",
    about: "snapshot() and restore() time, image size, at N pinned objects",
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
    vec![Params::new(&[("n", size(mode).to_string())])]
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    let mut s = Sample::default();
    let keys = keys(n);
    let enable = cfg(SoftPinRequest::enable());
    let m = master();
    put_all(&m, &keys, |_| &enable);
    flush_caches();
    let t = Stopwatch::start();
    let bytes = m.snapshot().expect("snapshot");
    s.set("save_ns", t.elapsed().as_nanos() as f64);
    s.set("bytes", bytes.len() as f64);
    drop(m);
    let fresh = Master::new(MasterConfig::deterministic(T0)).expect("master");
    let t = Stopwatch::start();
    let report = fresh.restore(&bytes).expect("restore");
    s.set("restore_ns", t.elapsed().as_nanos() as f64);
    s.set("restored", report.objects_restored as f64);
    s.set("pins_restored", report.soft_pins_restored as f64);
    s.set("expected", n as f64);
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let ns = size(mode).to_string();
    let want = [("n", ns.as_str())];
    let par = [("n", ns.clone())];
    let ms = |m: &str| {
        r.values(&want, m)
            .into_iter()
            .map(|v| v * 1e-6)
            .collect::<Vec<_>>()
    };
    let mut out = vec![
        Figure::new("snapshot", "save", &par, "ms", Better::Lower, ms("save_ns")),
        Figure::new(
            "snapshot",
            "restore",
            &par,
            "ms",
            Better::Lower,
            ms("restore_ns"),
        ),
        Figure::new(
            "snapshot",
            "size",
            &par,
            "MB",
            Better::Lower,
            r.values(&want, "bytes")
                .into_iter()
                .map(|v| v / 1e6)
                .collect(),
        ),
        Figure::new(
            "snapshot",
            "bytes_per_object",
            &par,
            "B",
            Better::Lower,
            r.zip(&want, "bytes", "expected", |b, n| b / n),
        ),
    ];
    let bad: Vec<String> = r
        .samples(&want)
        .iter()
        .filter(|s| {
            s.get("restored") != s.get("expected") || s.get("pins_restored") != s.get("expected")
        })
        .map(|s| {
            format!(
                "restored {} objects / {} pins of {}",
                s.get("restored"),
                s.get("pins_restored"),
                s.get("expected")
            )
        })
        .collect();
    if !bad.is_empty() {
        out.push(
            Figure::new("snapshot", "CHECK_FAILED", &par, "", Better::Lower, vec![])
                .note(bad.join("; ")),
        );
    }
    out
}
