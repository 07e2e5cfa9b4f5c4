//! `standby`: how fast a standby applies a primary's journal, beside the
//! primary's own put-pair rate with the journal on, and how long a promote
//! of a standby holding `n` objects takes (docs/CONTRACT.md section 12.3).
//!
//! The primary writes `n` new keys (PutStart + PutEnd(MEMORY), no pin) in
//! chunks of [`CHUNK`]; after each chunk the journal is read, released and
//! applied to the standby. Timed: the primary's writes (put pairs/s), the
//! standby's `apply_journal` calls (records/s and put pairs/s applied; the
//! read and the copy are not), and the final `promote()`. Like for like:
//! both masters presized for `n` and prefaulted at creation ([`config()`]).

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;
use std::time::Duration;

pub const SCENARIO: Scenario = Scenario {
    name: "standby",
    about: "journal apply rate on a standby vs the primary's put pairs; promote time",
    cases,
    child,
    figures,
};

/// Keys written per journal read.
const CHUNK: usize = 5_000;

fn size(mode: Mode) -> usize {
    if mode.quick {
        20_000
    } else {
        1_000_000
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    vec![Params::new(&[("n", size(mode).to_string())])]
}

/// Both masters are presized for `n` objects and made as standbys, so both
/// fault their presized records in at creation, outside the timing (a
/// standby does, docs/CONTRACT.md §9); the primary is promoted before it
/// is used. A primary made as one would pay those first touches inside its
/// timed puts, and the ratio would compare a warm standby with a cold
/// primary.
fn config(journal: bool, n: usize) -> MasterConfig {
    MasterConfig {
        standby: true,
        // Room for one chunk's records with a wide margin.
        journal_capacity_bytes: if journal { 256 << 20 } else { 0 },
        expected_objects: n as u64,
        ..MasterConfig::deterministic(T0)
    }
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    let primary = Master::new(config(true, n)).expect("primary");
    let promoted = primary.promote().expect("promote the empty primary");
    assert_eq!(promoted.objects_leased, 0, "an empty primary");
    let standby = Master::new(config(false, n)).expect("standby");
    for i in 0..4u64 {
        let spec = SegmentSpec {
            name: format!("mem{i}"),
            base: (i + 1) << 40,
            size: 16 << 30,
            pool: Pool::Memory,
        };
        primary.mount_segment(i + 1, &spec).expect("mount");
    }
    let keys = keys(n);
    let plain = WriteConfig::default();
    let (mut put_time, mut apply_time) = (Duration::ZERO, Duration::ZERO);
    let mut records = 0u64;
    let mut start = 0;
    while start < n {
        let end = (start + CHUNK).min(n);
        let t = Stopwatch::start();
        // By index: `keys.iter().skip(start)` would walk every earlier key
        // each chunk, inside the timed loop.
        for i in start..end {
            put(&primary, &keys[i], &plain);
        }
        put_time += t.elapsed();
        let from = standby.applied_seq() + 1;
        let bytes = primary.journal_read_to_vec(from).expect("journal read");
        let t = Stopwatch::start();
        let r = standby.apply_journal(&bytes).expect("apply");
        apply_time += t.elapsed();
        records += r.records_applied;
        primary.journal_release(r.last_seq).expect("release");
        start = end;
    }
    assert_eq!(standby.key_count(), n as u64, "the standby holds every key");
    let t = Stopwatch::start();
    let report = standby.promote().expect("promote");
    let promote = t.elapsed();
    assert_eq!(report.objects_leased, n as u64);
    let mut s = Sample::default();
    s.set("put_pairs_per_s", n as f64 / put_time.as_secs_f64());
    s.set(
        "apply_records_per_s",
        records as f64 / apply_time.as_secs_f64(),
    );
    s.set("apply_pairs_per_s", n as f64 / apply_time.as_secs_f64());
    s.set("records_per_pair", records as f64 / n as f64);
    s.set("promote_ms", promote.as_secs_f64() * 1e3);
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let n = size(mode).to_string();
    let want = [("n", n.as_str())];
    let par = [("n", n.clone())];
    vec![
        Figure::new(
            "standby",
            "primary put pairs with the journal on",
            &par,
            "ops/s",
            Better::Higher,
            r.values(&want, "put_pairs_per_s"),
        ),
        Figure::new(
            "standby",
            "journal records applied on a standby",
            &par,
            "records/s",
            Better::Higher,
            r.values(&want, "apply_records_per_s"),
        ),
        Figure::new(
            "standby",
            "put pairs applied on a standby",
            &par,
            "ops/s",
            Better::Higher,
            r.values(&want, "apply_pairs_per_s"),
        ),
        // Same process, same keys: the ratio is what survives a loaded
        // machine. A standby must keep up with its primary.
        Figure::new(
            "standby",
            "put pairs applied / primary put pairs",
            &par,
            "x",
            Better::Higher,
            r.zip(&want, "apply_pairs_per_s", "put_pairs_per_s", |a, b| a / b),
        )
        .target(Target::AtLeast(1.0)),
        Figure::new(
            "standby",
            "promote of a standby holding n objects",
            &par,
            "ms",
            Better::Lower,
            r.values(&want, "promote_ms"),
        ),
    ]
}
