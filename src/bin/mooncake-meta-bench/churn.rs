//! `index-churn`: repeated TTL updates of a live pinned set. Through the
//! master, each update is an in-place UpsertStart+UpsertEnd with ENABLE
//! (re-enabling: a new index entry, the old one goes stale); on the bare
//! `DeadlineIndex`, each is one `register` of a new version, and the
//! rebuilds it asks for validate entries against a plain version array (the
//! master's records, without shard locks). Reports updates/s and the peak
//! heap length against the bound max(4096, 2·live) that rebuilds keep.

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::soft_pin::{DeadlineIndex, Entry, PinTarget};
use mooncake_meta_core::*;

pub const SCENARIO: Scenario = Scenario {
    name: "index-churn",
    about: "re-enabling upserts of a live pinned set: updates/s, peak heap vs max(4096, 2*live)",
    cases,
    child,
    figures,
};

fn sizes(mode: Mode) -> Vec<usize> {
    if mode.quick {
        vec![10_000]
    } else {
        vec![100_000, 1_000_000]
    }
}

fn updates(live: usize, mode: Mode) -> usize {
    if mode.quick {
        100_000
    } else {
        (2 * live).max(1_000_000)
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    let mut v = Vec::new();
    for live in sizes(mode) {
        for path in ["master", "index"] {
            v.push(Params::new(&[
                ("live", live.to_string()),
                ("updates", updates(live, mode).to_string()),
                ("path", path.into()),
            ]));
        }
    }
    v
}

/// Heap length is sampled every this many updates.
const SAMPLE_EVERY: usize = 256;

fn bound(live: usize) -> f64 {
    4096f64.max(2.0 * live as f64)
}

fn child(p: &Params) -> Sample {
    let (live, u) = (p.usize("live"), p.usize("updates"));
    let mut s = Sample::default();
    let keys = keys(live);
    let mut rng = Rng::new(7);
    let mut peak = 0usize;
    if p.str("path") == "master" {
        let m = master();
        let enable = cfg(SoftPinRequest::enable());
        put_all(&m, &keys, |_| &enable);
        let ttls: Vec<WriteConfig> = (1..=4)
            .map(|i| cfg(SoftPinRequest::enable_for(i * 10 * MIN)))
            .collect();
        m.debug_reset_index_hold();
        let t = Stopwatch::start();
        for i in 0..u {
            let k = Key::new(&keys[rng.below(live)]);
            m.upsert_start(WRITER, k, SIZE, &ttls[i % 4])
                .expect("upsert_start");
            m.upsert_end(WRITER, k, ReplicaSelector::Memory, None)
                .expect("upsert_end");
            if i % SAMPLE_EVERY == 0 {
                peak = peak.max(m.index_sizes().0);
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let (heap, live_now) = m.index_sizes();
        s.set("updates_per_s", u as f64 / secs);
        s.set("final_heap", heap as f64);
        s.set("final_live", live_now as f64);
        // Nothing is due (every TTL >= 10 min on a clock that never moved):
        // the cycle only reports the longest hold since the reset.
        s.set(
            "longest_hold_ns",
            m.run_cleanup().longest_index_hold_ns as f64,
        );
    } else {
        // Key j's object is target j; `versions[j]` is its latest registration.
        let idx = DeadlineIndex::<PinTarget>::new();
        // As a master's handles: spread over 1024 shards, dense slots.
        let target = |j: usize| PinTarget::new((j % 1024) as u32, (j / 1024) as u32);
        let key_of = |t: PinTarget| t.slot() as usize * 1024 + t.shard() as usize;
        let mut versions = vec![1u32; live];
        for j in 0..live {
            idx.register(target(j), 1, T0 + 30 * MIN, true);
        }
        idx.reset_longest_hold();
        let t = Stopwatch::start();
        for i in 0..u {
            let j = rng.below(live);
            versions[j] = versions[j].wrapping_add(1);
            let deadline = T0 + 10 * MIN + (i % 1000) as u64;
            idx.register(target(j), versions[j], deadline, false);
            if idx.rebuild_wanted() {
                idx.rebuild(&mut |v: &mut Vec<Entry>| {
                    v.retain(|e| versions[key_of(e.target)] == e.version)
                });
            }
            if i % SAMPLE_EVERY == 0 {
                peak = peak.max(idx.heap_len());
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let st = idx.stats();
        s.set("updates_per_s", u as f64 / secs);
        s.set("final_heap", st.heap_len as f64);
        s.set("final_live", st.live as f64);
        s.set("rebuilds", st.rebuilds as f64);
        s.set("longest_hold_ns", st.longest_hold_ns as f64);
    }
    s.set("peak_heap", peak as f64);
    s.set("bound", bound(live));
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let mut out = Vec::new();
    for live in sizes(mode) {
        let ls = live.to_string();
        for path in ["master", "index"] {
            let want = [("live", ls.as_str()), ("path", path)];
            let par = vec![
                ("live", ls.clone()),
                ("updates", updates(live, mode).to_string()),
                ("path", path.to_owned()),
            ];
            let name = if path == "master" {
                "upsert_reenable_pairs"
            } else {
                "index_register"
            };
            out.push(Figure::new(
                "index-churn",
                name,
                &par,
                "ops/s",
                Better::Higher,
                r.values(&want, "updates_per_s"),
            ));
            let mut peak = Figure::new(
                "index-churn",
                "peak_heap",
                &par,
                "entries",
                Better::Lower,
                r.values(&want, "peak_heap"),
            );
            if path == "master" && live == sizes(mode)[0] {
                peak = peak.note(
                    "sampled every 256 updates; includes entries detached by a running rebuild",
                );
            }
            out.push(peak);
            out.push(Figure::new(
                "index-churn",
                "peak_heap_over_bound",
                &par,
                "x",
                Better::Lower,
                r.zip(&want, "peak_heap", "bound", |p, b| p / b),
            ));
            let mut hold = Figure::new(
                "index-churn",
                "longest_index_hold",
                &par,
                "ms",
                Better::Lower,
                r.values(&want, "longest_hold_ns")
                    .into_iter()
                    .map(|v| v * 1e-6)
                    .collect(),
            )
            .target(Target::AtMost(1.0));
            if live == sizes(mode)[0] {
                hold = hold.note(crate::cleanup::REGISTER_SAMPLED);
            }
            out.push(hold);
            if path == "index" {
                out.push(Figure::new(
                    "index-churn",
                    "rebuilds",
                    &par,
                    "",
                    Better::Lower,
                    r.values(&want, "rebuilds"),
                ));
            }
        }
    }
    out
}
