//! The memory of a journal apply call is bounded by a constant, whatever
//! the number of records of its input (docs/CONTRACT.md section 12.3): the
//! call checks the whole input keeping the decoded views of its first
//! records only (a window of 16 384), then applies them and decodes the
//! rest again, a window at a time. (It decoded every record into one list
//! first: a decoded record is about 280 bytes where the smallest encoded
//! one is 9, so an input of tiny records took about 30 times its own
//! size.) A counting global allocator measures the most heap bytes live at
//! once during the call, the input itself excluded (it is allocated
//! before). And an input longer than the window applies as the same
//! records applied in short inputs do, with the same contract: a corrupt
//! batch or a gap anywhere applies nothing, a record that does not fit
//! stops the call with the records before it applied, repeats are skipped.
//!
//! One #[test] only: the counter is global, so nothing else may allocate
//! concurrently while a call is measured.
mod common;
mod support;

use common::*;
use mooncake_meta_core::journal::{encode_batch, Placement, Record, RecordKey, StartedReplica};
use mooncake_meta_core::*;
use support::counting::{peak_during, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The most heap bytes an apply call may hold at once above what was live
/// before it, whatever its input's record count: the window of decoded
/// records (16 384 of them, about 4.5 MiB) and small change. A list of
/// every record of the smallest input measured below alone takes 34 MiB.
const BOUND: i64 = 6 << 20;

const BASE0: u64 = 1 << 40;

fn standby() -> Master {
    let m = Master::new(MasterConfig {
        standby: true,
        // No journal of its own: what it would record grows with the input.
        journal_capacity_bytes: 0,
        ..config()
    })
    .unwrap();
    let mount = Record::SegmentMounted {
        owner: C1,
        name: "mem0".into(),
        pool: Pool::Memory,
        base: BASE0,
        size: 1 << 30,
    };
    m.apply_journal(&encode_batch(1, &[mount]).unwrap())
        .unwrap();
    m
}

/// Counters records for `ids`, each raising the id counters by one: the
/// smallest records that apply any number of times (25 bytes each).
fn counters(ids: std::ops::Range<u64>) -> Vec<Record> {
    ids.map(|v| Record::Counters {
        next_replica_id: v,
        next_write_token: v,
        next_object_seq: v,
    })
    .collect()
}

/// A write for each of `ids` (its replica id, write token and creation
/// sequence): a put pair (a Start and the End that ends its write, applied
/// in one run with the write left unstarted) of key `key(id)` at address
/// `BASE0 + 4096 * slot(id)`, then an erase of it if `erase(id)`.
fn writes(
    ids: std::ops::Range<u64>,
    key: impl Fn(u64) -> String,
    slot: impl Fn(u64) -> u64,
    erase: impl Fn(u64) -> bool,
) -> Vec<Record> {
    let mut out = Vec::new();
    for i in ids {
        let key = RecordKey::new(DEFAULT_TENANT, key(i));
        out.push(Record::ObjectStarted {
            key: key.clone(),
            size: 4096,
            writer: C1,
            put_start: T0,
            seq: i,
            write_token: i,
            hard_pin: false,
            group: None,
            pending: SoftPinIntent::Preserve,
            replicas: vec![StartedReplica {
                id: i,
                place: Placement::Memory {
                    segment: "mem0".into(),
                    address: BASE0 + 4096 * slot(i),
                },
            }],
        });
        out.push(Record::ObjectEnded {
            key: key.clone(),
            write_token: i,
            at: T0 + 1,
            completed: vec![i],
            commit: None,
            write_over: true,
        });
        if erase(i) {
            out.push(Record::ObjectErased {
                key,
                discarded: vec![],
            });
        }
    }
    out
}

/// Writes of key "k", each erased: the standby's state is the same after
/// each (object records in runs, put pairs across every window boundary).
fn put_erase_cycles(ids: std::ops::Range<u64>) -> Vec<Record> {
    writes(ids, |_| "k".into(), |_| 0, |_| true)
}

/// Applies `recs` as one batch continuing the standby's sequence: every
/// record applies, and the most heap bytes the call held at once.
fn apply_measured(m: &Master, recs: &[Record]) -> i64 {
    let first = m.applied_seq() + 1;
    let bytes = encode_batch(first, recs).unwrap();
    let (report, peak) = peak_during(|| m.apply_journal(&bytes));
    let report = report.unwrap();
    assert_eq!(report.records_applied, recs.len() as u64);
    assert_eq!(report.last_seq, first + recs.len() as u64 - 1);
    assert_eq!(m.applied_seq(), report.last_seq);
    peak
}

/// Tiny records, four times as many the second time: the bound holds for
/// both (it did not: the list of 100 000 records took 34 MiB, of 400 000
/// records 136 MiB).
fn the_peak_is_bounded() {
    let m = standby();
    let mut peaks = Vec::new();
    let mut next = 1u64;
    for n in [100_000u64, 400_000] {
        let peak = apply_measured(&m, &counters(next..next + n));
        next += n;
        peaks.push(("Counters", n, peak));
    }
    // Object records (about 60 bytes each on average), put pairs and
    // erases, applied in runs under their shard's lock.
    for cycles in [40_000u64, 160_000] {
        let peak = apply_measured(&m, &put_erase_cycles(next..next + cycles));
        next += cycles;
        peaks.push(("put pair + erase", 3 * cycles, peak));
        assert_eq!(m.key_count(), 0);
        m.check_invariants().unwrap();
    }
    for (what, n, peak) in peaks {
        eprintln!("{n} {what} records: peak {peak} bytes");
        assert!(
            peak < BOUND,
            "applying {n} {what} records held {peak} bytes at once, above {BOUND}"
        );
    }
}

/// Records 2.. (after the mount): 16 000 writes of their own keys, every
/// third erased (37 333 records, more than twice the window).
fn long_records() -> Vec<Record> {
    writes(2..16_002, |i| format!("key-{i}"), |i| i, |i| i % 3 == 0)
}

/// `recs` (numbered from 2 on) applied in inputs of `per` records.
fn applied_in_inputs_of(recs: &[Record], per: usize) -> Master {
    let m = standby();
    for (i, part) in recs.chunks(per).enumerate() {
        let first = 2 + (i * per) as u64;
        let r = m
            .apply_journal(&encode_batch(first, part).unwrap())
            .unwrap();
        assert_eq!(r.records_applied, part.len() as u64);
    }
    m
}

fn state(m: &Master) -> (StateDump, u64) {
    (m.debug_dump(), m.applied_seq())
}

/// One input of several batches, longer than the window, with repeats
/// (skipped) past the window: the state is that of the same records
/// applied in short inputs. Then what fails past the window: a corrupt
/// batch, a gap and a record refused for what it names apply nothing; a
/// record that does not fit stops the call there, the records before it
/// applied.
fn long_inputs_keep_the_contract() {
    let recs = long_records();
    let n = recs.len();
    assert!(n > 2 * (1 << 14), "{n} records: more than two windows");
    let short = applied_in_inputs_of(&recs, 1_000);
    short.check_invariants().unwrap();
    let want = state(&short);

    // Batches: records 2..=25 001, 20 002..=30 001 (the first 5 000
    // repeated), 24 002..=28 001 (all repeated) and the rest.
    let part = |from: usize, to: usize| encode_batch(from as u64, &recs[from - 2..to - 1]).unwrap();
    let mut input = part(2, 25_001);
    input.extend(part(20_002, 30_001));
    input.extend(part(24_002, 28_001));
    input.extend(part(30_002, n + 1));
    let m = standby();
    let r = m.apply_journal(&input).unwrap();
    assert_eq!(r.records_applied, n as u64);
    assert_eq!(r.records_skipped, 5_000 + 4_000);
    assert_eq!(r.last_seq, n as u64 + 1);
    m.check_invariants().unwrap();
    assert!(state(&m) == want, "one long input applied otherwise");
    // Again: every record a repeat.
    let r = m.apply_journal(&input).unwrap();
    assert_eq!(
        (r.records_applied, r.records_skipped),
        (0, n as u64 + 9_000)
    );
    assert!(state(&m) == want, "repeats changed the state");

    // What fails past the window, each on a fresh standby.
    let nothing_applied = |input: &[u8], kind: ErrorKind, says: &str| {
        let m = standby();
        let before = state(&m);
        let e = m.apply_journal(input).unwrap_err();
        assert_eq!(e.kind(), kind, "{e}");
        assert!(
            e.message().contains(says) && e.message().contains("nothing applied"),
            "{e}"
        );
        assert!(state(&m) == before, "{says}: something applied");
    };
    // A corrupt second batch.
    let mut corrupt = part(2, 25_001);
    let second = corrupt.len();
    corrupt.extend(part(25_002, n + 1));
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x55;
    nothing_applied(
        &corrupt,
        ErrorKind::DeserializeFail,
        &format!("journal batch 1 (at byte {second} of the input)"),
    );
    // A gap after the window.
    let mut gap = part(2, 25_001);
    gap.extend(part(25_003, n + 1));
    nothing_applied(&gap, ErrorKind::InvalidParams, "journal gap");
    // A record past the window refused for what it names.
    let mut refused = recs.clone();
    refused[30_000 - 2] = Record::Counters {
        next_replica_id: MAX_INSTANT + 1,
        next_write_token: 0,
        next_object_seq: 0,
    };
    nothing_applied(
        &encode_batch(2, &refused).unwrap(),
        ErrorKind::DeserializeFail,
        "journal record 30000 (Counters)",
    );
    // A record past the window that does not fit here: an End of a key
    // with no object. The records before it stay applied.
    let mut misfit = recs.clone();
    misfit[30_000 - 2] = Record::ObjectEnded {
        key: RecordKey::new(DEFAULT_TENANT, "absent"),
        write_token: 1,
        at: T0 + 1,
        completed: vec![],
        commit: None,
        write_over: false,
    };
    let m = standby();
    let e = m
        .apply_journal(&encode_batch(2, &misfit).unwrap())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
    assert!(
        e.message()
            .contains("journal record 30000 (ObjectEnded) does not apply"),
        "{e}"
    );
    assert_eq!(m.applied_seq(), 29_999);
    m.check_invariants().unwrap();
    assert!(
        state(&m) == state(&applied_in_inputs_of(&recs[..29_998], 1_000)),
        "the records before the misfit applied otherwise"
    );
}

#[test]
fn apply_memory_is_bounded_and_long_inputs_keep_the_contract() {
    the_peak_is_bounded();
    long_inputs_keep_the_contract();
}
