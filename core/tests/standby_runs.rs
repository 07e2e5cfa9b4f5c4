//! A standby applies consecutive object records in runs, holding the
//! run's shard locks once (docs/CONTRACT.md section 12.3). What a run must
//! keep of the per-record contract: a batch whose checksum is good but one
//! of whose records is malformed applies nothing, even when the bad record
//! sits in the middle of a run of object records; a record that does not
//! fit stops the call right before it, with every record before it applied
//! (those of its own run included, on its shard and on others), also past
//! the first run; and the rest then applies on top.

mod common;
mod support;

use common::*;
use mooncake_meta_core::journal::codec::{decode_batch_prefix, encode_batch, peek_header};
use mooncake_meta_core::journal::Record;
use mooncake_meta_core::*;
use support::journalmut::reframe;

fn journaling(standby: bool) -> MasterConfig {
    MasterConfig {
        journal_capacity_bytes: 1 << 24,
        standby,
        ..config()
    }
}

fn run_key(i: usize) -> String {
    format!("run-key-{i:04}")
}

/// A journaling primary with one segment and `pairs` put pairs (PutStart,
/// PutEnd) of distinct keys, and its whole journal.
fn primary_journal(pairs: usize) -> (Master, Vec<u8>) {
    let p = master_with(journaling(false), 1, 0, 1 << 30);
    let w = WriteConfig::default();
    for i in 0..pairs {
        let key = run_key(i);
        p.put_start(C1, k(&key), 4096, &w).unwrap();
        p.put_end(C1, k(&key), ReplicaSelector::All, None).unwrap();
    }
    let bytes = p.journal_read_to_vec(1).unwrap();
    (p, bytes)
}

/// Every record of a concatenation of batches, with the first sequence.
fn records_of(mut bytes: &[u8]) -> (u64, Vec<Record>) {
    let mut first = None;
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let (b, used) = decode_batch_prefix(bytes).unwrap();
        first.get_or_insert(b.first_seq);
        out.extend(b.records);
        bytes = &bytes[used..];
    }
    (first.unwrap(), out)
}

/// Everything a snapshot holds plus the internal dump and the applied
/// sequence, for "unchanged".
fn state(m: &Master) -> (Vec<u8>, StateDump, u64) {
    let mut snap = mooncake_meta_core::snapshot::codec::decode(&m.snapshot().unwrap()).unwrap();
    snap.created_at = 0;
    snap.wall_at_capture = None;
    (
        mooncake_meta_core::snapshot::codec::encode(&snap),
        m.debug_dump(),
        m.applied_seq(),
    )
}

/// The snapshot with leases zeroed (a standby's equals its primary's so).
fn zero_leases(m: &Master) -> mooncake_meta_core::snapshot::image::SnapshotImage {
    let mut i = mooncake_meta_core::snapshot::codec::decode(&m.snapshot().unwrap()).unwrap();
    i.created_at = 0;
    i.wall_at_capture = None;
    i.objects.iter_mut().for_each(|o| o.lease = 0);
    i
}

fn standby() -> Master {
    Master::new(MasterConfig {
        standby: true,
        ..config()
    })
    .unwrap()
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("present")
}

#[test]
fn a_malformed_record_in_the_middle_of_a_run_applies_nothing() {
    let (_p, good) = primary_journal(40);
    // The Start of key 17 is deep inside the first run of object records
    // (the mount, then 34 records before it). Its image is the key's
    // tenant and key, then size, writer, put_start, ...: put_start beyond
    // the largest instant is malformed, and the batch is re-framed so its
    // checksum is good and the record parser sees it.
    let mut bytes = good.clone();
    let key = run_key(17);
    let at = find(&bytes, key.as_bytes()) + key.len() + 16;
    bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut start = 0;
    while start < bytes.len() {
        let len = peek_header(&bytes[start..]).unwrap().total_len;
        if (start..start + len).contains(&at) {
            reframe(&mut bytes[start..start + len]);
        }
        start += len;
    }
    let s = standby();
    let before = state(&s);
    let e = s.apply_journal(&bytes).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeserializeFail, "{e}");
    assert!(
        e.message().contains("put_start") && !e.message().contains("checksum"),
        "the record parser refused it, past the checksum: {}",
        e.message()
    );
    assert_eq!(state(&s), before, "nothing applied, not even the mount");
    // The good journal applies whole afterwards.
    let r = s.apply_journal(&good).unwrap();
    assert_eq!(r.records_applied, 81);
    assert_eq!(s.key_count(), 40);
    s.check_invariants().unwrap();
}

/// Applies the primary's records with record `bad` (an index into them)
/// replaced by `replace(original)`: the call fails at it with `why`, every
/// record before it applied (the state equals a standby that applied just
/// those), and the original journal then applies the rest.
fn divergence_at(pairs: usize, bad: usize, why: &str, replace: impl Fn(&Record) -> Record) {
    let (p, good) = primary_journal(pairs);
    let (first, recs) = records_of(&good);
    let mut changed = recs.clone();
    changed[bad] = replace(&recs[bad]);
    let s = standby();
    let e = s
        .apply_journal(&encode_batch(first, &changed).unwrap())
        .unwrap_err();
    let seq = first + bad as u64;
    assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
    let msg = e.message();
    assert!(
        msg.contains(&format!("journal record {seq} (")) && msg.contains(why),
        "{msg}"
    );
    assert_eq!(s.applied_seq(), seq - 1, "stops right before the misfit");
    s.check_invariants().unwrap();
    let prefix = standby();
    prefix
        .apply_journal(&encode_batch(first, &recs[..bad]).unwrap())
        .unwrap();
    assert_eq!(
        state(&s),
        state(&prefix),
        "exactly the records before the misfit are applied"
    );
    // The original journal: what is applied is skipped, the rest applies.
    let r = s.apply_journal(&good).unwrap();
    assert_eq!(r.records_skipped, bad as u64);
    assert_eq!(r.records_applied, (recs.len() - bad) as u64);
    assert_eq!(s.key_count(), pairs as u64);
    assert_eq!(zero_leases(&s), zero_leases(&p));
    s.check_invariants().unwrap();
}

/// Record index of pair `i`'s Start (the mount is record 0) and End.
fn start_of(i: usize) -> usize {
    1 + 2 * i
}

fn end_of(i: usize) -> usize {
    2 + 2 * i
}

fn with_token(rec: &Record, token: u64) -> Record {
    match rec.clone() {
        Record::ObjectEnded {
            key,
            at,
            completed,
            commit,
            write_over,
            ..
        } => Record::ObjectEnded {
            key,
            write_token: token,
            at,
            completed,
            commit,
            write_over,
        },
        other => panic!("not an End: {other:?}"),
    }
}

#[test]
fn an_end_that_does_not_fit_in_a_run_stops_right_after_its_start() {
    // The End of pair 10 names another write: its own Start (same shard,
    // same run) and every record before it stay applied.
    divergence_at(40, end_of(10), "write token here is", |r| {
        with_token(r, 999)
    });
}

#[test]
fn an_end_of_its_own_write_that_does_not_fit_leaves_its_start_in_flight() {
    // The End of pair 7 ends its Start's write (same token, write over) but
    // completes a replica the object does not hold: the Start stays
    // applied, its write in flight (the invariants check the in-flight set
    // against the replicas), and the End applies later from the original.
    divergence_at(40, end_of(7), "is not a PROCESSING replica", |r| {
        match r.clone() {
            Record::ObjectEnded {
                key,
                write_token,
                at,
                commit,
                write_over,
                ..
            } => {
                assert!(write_over, "a put pair's End ends its write");
                Record::ObjectEnded {
                    key,
                    write_token,
                    at,
                    // An id no replica has (ids at or above MAX_INSTANT
                    // are refused before anything applies).
                    completed: vec![1 << 40],
                    commit,
                    write_over,
                }
            }
            other => panic!("not an End: {other:?}"),
        }
    });
}

#[test]
fn a_start_that_does_not_fit_in_a_run_stops_before_it() {
    // The Start of pair 12 places its buffer where pair 3's lives.
    let (_p, good) = primary_journal(4);
    let (_, recs) = records_of(&good);
    let taken = recs[start_of(3)].clone();
    divergence_at(30, start_of(12), "cannot be reserved", move |r| {
        // A put of a new key records an ObjectStarted.
        let (mut r, Record::ObjectStarted { replicas: t, .. }) = (r.clone(), &taken) else {
            panic!("not a Start")
        };
        let Record::ObjectStarted { replicas, .. } = &mut r else {
            panic!("not a Start")
        };
        replicas[0].place = t[0].place.clone();
        r
    });
}

#[test]
fn a_misfit_past_the_first_run_keeps_the_earlier_runs() {
    // Pair 50's End is record 102: the second run of object records.
    divergence_at(60, end_of(50), "write token here is", |r| {
        with_token(r, 12_345)
    });
}

/// Ids, tokens and creation sequences at or above MAX_INSTANT, in an End or
/// a Start anywhere in the input, refuse the whole input before anything
/// applies (a master holding them could not carry on: its counters would
/// wrap); the good journal applies afterwards.
#[test]
fn numbers_a_master_could_not_carry_on_from_apply_nothing() {
    let (_p, good) = primary_journal(10);
    let (first, recs) = records_of(&good);
    type Edit = fn(&mut Record);
    let edits: [(usize, &str, Edit); 4] = [
        (end_of(6), "write token", |r| {
            *r = with_token(r, MAX_INSTANT)
        }),
        (end_of(6), "replica id", |r| {
            if let Record::ObjectEnded { completed, .. } = r {
                *completed = vec![MAX_INSTANT];
            }
        }),
        (start_of(3), "creation sequence", |r| {
            if let Record::ObjectStarted { seq, .. } = r {
                *seq = u64::MAX;
            }
        }),
        (start_of(3), "replica id", |r| {
            if let Record::ObjectStarted { replicas, .. } = r {
                replicas[0].id = MAX_INSTANT;
            }
        }),
    ];
    for (at, what, edit) in edits {
        let mut changed = recs.clone();
        edit(&mut changed[at]);
        assert_ne!(changed[at], recs[at], "the edit changed the record");
        let s = standby();
        let before = state(&s);
        let e = s
            .apply_journal(&encode_batch(first, &changed).unwrap())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DeserializeFail, "{e}");
        let msg = e.message();
        assert!(
            msg.contains(&format!("journal record {} (", first + at as u64))
                && msg.contains(what)
                && msg.contains("nothing applied"),
            "{msg}"
        );
        assert_eq!(state(&s), before, "nothing applied, not even the mount");
        s.apply_journal(&good).unwrap();
        s.check_invariants().unwrap();
    }
}
