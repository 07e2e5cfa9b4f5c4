//! `journal`: what recording costs (docs/CONTRACT.md §12.1). PutStart +
//! PutEnd of new keys on a master without a journal and on one with a
//! journal large enough never to drop, while a consumer thread reads the
//! records as they come and releases them; and the journal bytes one put
//! pair makes (its ObjectStarted and ObjectEnded records, as the consumer
//! reads them, batch headers excluded). Target: journal on within 15 % of off,
//! measured by the `interleaved` case: both masters in one process,
//! written in block pairs, each master first in half of them, so a change
//! in the machine's load moves both rates alike and neither master gains
//! from its position (the separate-process ratio is printed too; the
//! `interleaved_aa` case, both masters on, is the comparison's noise floor).

use crate::report::{Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::journal::codec::HEADER_LEN;
use mooncake_meta_core::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub const SCENARIO: Scenario = Scenario {
    name: "journal",
    about: "put pairs/s with the journal off and on (a consumer reading and releasing); journal bytes per put pair",
    cases,
    child,
    figures,
};

/// Journal capacity of the "on" case: room for every record of the run
/// even if the consumer fell behind the whole time (nothing is dropped).
const CAPACITY: u64 = 1 << 30;

/// The consumer's read buffer.
const READ_BUF: usize = 1 << 20;

/// A read that returns fewer records than this makes the consumer pause
/// for [`POLL`] before the next, as a shipping consumer polls: it reads in
/// batches instead of taking the journal's lock for every record.
const BATCH: u64 = 4096;
const POLL: std::time::Duration = std::time::Duration::from_micros(500);

fn size(mode: Mode) -> usize {
    if mode.quick {
        10_000
    } else {
        1_000_000
    }
}

fn cases(mode: Mode) -> Vec<Params> {
    ["off", "on", "interleaved", "interleaved_aa"]
        .into_iter()
        .map(|j| Params::new(&[("n", size(mode).to_string()), ("journal", j.into())]))
        .collect()
}

/// What the consumer read.
#[derive(Default)]
struct Consumed {
    records: u64,
    record_bytes: u64,
}

/// Reads every record from sequence `next` as it is appended, releasing
/// what it read, until `done` is set and nothing is left.
fn consume(m: &MasterCore, mut next: u64, done: &AtomicBool) -> Consumed {
    let mut buf = vec![0u8; READ_BUF];
    let mut got = Consumed::default();
    loop {
        // Read `done` first: once it is set every record is appended, so
        // an empty read after it means the end.
        let finished = done.load(Ordering::Acquire);
        match m.journal_read(next, &mut buf).expect("journal read") {
            Bounded::TooSmall(n) => buf.resize(n, 0),
            Bounded::Fits(r) if r.records == 0 => {
                if finished {
                    return got;
                }
                std::thread::sleep(POLL);
            }
            Bounded::Fits(r) => {
                got.records += r.records;
                got.record_bytes += (r.bytes - HEADER_LEN) as u64;
                next = r.next_seq;
                m.journal_release(next - 1).expect("journal release");
                if r.records < BATCH && !finished {
                    std::thread::sleep(POLL);
                }
            }
        }
    }
}

/// A master for the scenario, its journal on or off, with the segments
/// every case writes into.
fn master(on: bool) -> Arc<Master> {
    let m = Arc::new(
        Master::new(MasterConfig {
            journal_capacity_bytes: if on { CAPACITY } else { 0 },
            ..MasterConfig::deterministic(T0)
        })
        .expect("master"),
    );
    for i in 0..4u64 {
        let spec = SegmentSpec {
            name: format!("mem{i}"),
            base: (i + 1) << 40,
            size: 16 << 30,
            pool: Pool::Memory,
        };
        m.mount_segment(i + 1, &spec).expect("mount");
    }
    m
}

/// `journal=interleaved`: the off and the on master in one process,
/// written in block pairs of [`BLOCK`] keys (`interleaved`: the on master
/// first in half of the pairs, chosen by a fixed-seed shuffle, second in
/// the other half), each block timed on its own; the consumer reads the
/// on master's journal throughout. Both rates are measured over the same
/// stretch of time, so a change in the machine's load between two runs
/// (this machine is shared) moves both alike and the ratio keeps.
/// `journal=interleaved_aa` (`aa`): both masters journal on, each read
/// by a consumer of its own: the same comparison between two like
/// masters, the harness's noise floor (its ratio should be 1).
fn interleaved_case(n: usize, aa: bool) -> Sample {
    let keys = keys(n);
    let (cheap, costly) = (master(aa), master(true));
    let c = cfg(SoftPinRequest::PRESERVE);
    let done = Arc::new(AtomicBool::new(false));
    let consumers: Vec<_> = [&costly]
        .into_iter()
        .chain(aa.then_some(&cheap))
        .map(|m| {
            let (m, done) = (m.clone(), done.clone());
            let from = m.journal_stats().last_seq + 1;
            std::thread::spawn(move || consume(&m, from, &done))
        })
        .collect();
    let blocks = interleaved(n, |side, from, to| {
        let m = match side {
            Side::Cheap => &cheap,
            Side::Costly => &costly,
        };
        for i in from..to {
            put(m, &keys[i], &c);
        }
    });
    done.store(true, Ordering::Release);
    for (consumer, m) in consumers.into_iter().zip([&costly, &cheap]) {
        let got = consumer.join().expect("consumer");
        assert_eq!(
            m.journal_stats().dropped_records,
            0,
            "the journal dropped records"
        );
        assert_eq!(got.records, 2 * n as u64, "two records per put pair");
    }
    blocks.sample(
        n,
        &if aa {
            BlockNames {
                cheap_rate: "put_pairs_per_s_on_a",
                costly_rate: "put_pairs_per_s_on_b",
                ratio: "b_over_a",
                block_median: "b_over_a_block_median",
                costly_arm0: "b_over_a_b_arm0",
                costly_arm1: "b_over_a_b_arm1",
            }
        } else {
            BlockNames {
                cheap_rate: "put_pairs_per_s_off",
                costly_rate: "put_pairs_per_s_on",
                ratio: "on_over_off",
                block_median: "on_over_off_block_median",
                costly_arm0: "on_over_off_on_arm0",
                costly_arm1: "on_over_off_on_arm1",
            }
        },
    )
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    match p.str("journal") {
        "interleaved" => return interleaved_case(n, false),
        "interleaved_aa" => return interleaved_case(n, true),
        _ => {}
    }
    let on = p.str("journal") == "on";
    let keys = keys(n);
    let m = master(on);
    let c = cfg(SoftPinRequest::PRESERVE);
    let done = Arc::new(AtomicBool::new(false));
    let consumer = on.then(|| {
        let (m, done) = (m.clone(), done.clone());
        // The mounts are not part of what a put costs.
        let from = m.journal_stats().last_seq + 1;
        std::thread::spawn(move || consume(&m, from, &done))
    });
    let took = put_all(&m, &keys, |_| &c);
    done.store(true, Ordering::Release);
    let mut s = Sample::default();
    s.set("put_pairs_per_s", n as f64 / took.as_secs_f64());
    if let Some(t) = consumer {
        let got = t.join().expect("consumer");
        let stats = m.journal_stats();
        assert_eq!(stats.dropped_records, 0, "the journal dropped records");
        assert_eq!(got.records, 2 * n as u64, "two records per put pair");
        s.set("record_bytes_per_pair", got.record_bytes as f64 / n as f64);
    }
    s
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let n = size(mode).to_string();
    let off = [("n", n.as_str()), ("journal", "off")];
    let on = [("n", n.as_str()), ("journal", "on")];
    let il = [("n", n.as_str()), ("journal", "interleaved")];
    let aa = [("n", n.as_str()), ("journal", "interleaved_aa")];
    let par = |j: &str| vec![("n", n.clone()), ("journal", j.to_owned())];
    vec![
        Figure::new(
            "journal",
            "put pairs/s, journal off",
            &par("off"),
            "ops/s",
            Better::Higher,
            r.values(&off, "put_pairs_per_s"),
        ),
        Figure::new(
            "journal",
            "put pairs/s, journal on (a consumer reading and releasing)",
            &par("on"),
            "ops/s",
            Better::Higher,
            r.values(&on, "put_pairs_per_s"),
        ),
        // Repetitions pair up (the cases interleave), so the ratio is of
        // runs made one after the other.
        Figure::new(
            "journal",
            "put pairs/s, journal on / off (separate processes)",
            &[("n", n.clone())],
            "x",
            Better::Higher,
            r.pair(&on, &off, "put_pairs_per_s", |a, b| a / b),
        ),
        Figure::new(
            "journal",
            "put pairs/s, journal off, interleaved with on",
            &par("interleaved"),
            "ops/s",
            Better::Higher,
            r.values(&il, "put_pairs_per_s_off"),
        ),
        Figure::new(
            "journal",
            "put pairs/s, journal on, interleaved with off",
            &par("interleaved"),
            "ops/s",
            Better::Higher,
            r.values(&il, "put_pairs_per_s_on"),
        ),
        // The target: both rates from the same stretch of time, each
        // master first in half of the block pairs.
        Figure::new(
            "journal",
            "put pairs/s, journal on / off (interleaved blocks, one process)",
            &par("interleaved"),
            "x",
            Better::Higher,
            r.values(&il, "on_over_off"),
        )
        .target(Target::AtLeast(0.85)),
        // The same ratio as the median over block pairs (each block's off
        // and on times, taken one right after the other): a block pair
        // that lost a time slice to another process on this shared
        // machine moves it no more than any other pair.
        Figure::new(
            "journal",
            "put pairs/s, journal on / off (median of block pairs, one process)",
            &par("interleaved"),
            "x",
            Better::Higher,
            r.values(&il, "on_over_off_block_median"),
        )
        .target(Target::AtLeast(0.85)),
        // That median over the pairs the on master ran first in (arm 0)
        // and second in (arm 1): no target, they show the position's effect.
        Figure::new(
            "journal",
            "put pairs/s, journal on / off (median of block pairs, on master first)",
            &[("n", n.clone()), ("journal", "interleaved".into()), ("on_arm", "0".into())],
            "x",
            Better::Higher,
            r.values(&il, "on_over_off_on_arm0"),
        ),
        Figure::new(
            "journal",
            "put pairs/s, journal on / off (median of block pairs, on master second)",
            &[("n", n.clone()), ("journal", "interleaved".into()), ("on_arm", "1".into())],
            "x",
            Better::Higher,
            r.values(&il, "on_over_off_on_arm1"),
        ),
        // The A/A calibration: both masters journal on.
        Figure::new(
            "journal",
            "put pairs/s, journal on / on (A/A, median of block pairs, one process)",
            &par("interleaved_aa"),
            "x",
            Better::Higher,
            r.values(&aa, "b_over_a_block_median"),
        )
        .note("A/A calibration (the noise floor of the interleaved on / off ratio): both masters journal on, each read by a consumer of its own, the same block pairs and order; master B ÷ master A, 1 when the harness is unbiased; no target"),
        Figure::new(
            "journal",
            "put pairs/s, journal on / on (A/A, median of block pairs, B first)",
            &[("n", n.clone()), ("journal", "interleaved_aa".into()), ("b_arm", "0".into())],
            "x",
            Better::Higher,
            r.values(&aa, "b_over_a_b_arm0"),
        ),
        Figure::new(
            "journal",
            "put pairs/s, journal on / on (A/A, median of block pairs, B second)",
            &[("n", n.clone()), ("journal", "interleaved_aa".into()), ("b_arm", "1".into())],
            "x",
            Better::Higher,
            r.values(&aa, "b_over_a_b_arm1"),
        ),
        Figure::new(
            "journal",
            "journal bytes per put pair (ObjectStarted + ObjectEnded)",
            &par("on"),
            "bytes",
            Better::Lower,
            r.values(&on, "record_bytes_per_pair"),
        ),
    ]
}
