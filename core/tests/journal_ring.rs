//! The bounded journal buffer (docs/CONTRACT.md section 12, "Bounded memory,
//! nothing lost silently"): consecutive sequences, reads into a caller
//! buffer with BUFFER_TOO_SMALL semantics, release, drop-oldest when full
//! with JOURNAL_OVERRUN for what was dropped, a capacity (records plus
//! their bookkeeping) that is never exceeded, and order kept under
//! concurrent appenders and a reader.

mod support;

use mooncake_meta_core::journal::codec::{decode_batch, encoded_len, HEADER_LEN};
use mooncake_meta_core::journal::*;
use mooncake_meta_core::{Bounded, ErrorKind};
use std::sync::{Arc, Barrier};
use support::entropy::{Entropy, XorShift};
use support::journal_gen;

fn removed(key: &str) -> Record {
    Record::ObjectErased {
        key: RecordKey::new("default", key),
        discarded: vec![],
    }
}

/// Records of the same encoded size (keys of equal length).
fn same_size(n: usize) -> Vec<Record> {
    (0..n).map(|i| removed(&format!("k{i:04}"))).collect()
}

fn read_all(j: &Journal, from: u64) -> Batch {
    decode_batch(&j.read_to_vec(from).unwrap()).unwrap()
}

fn code<T: std::fmt::Debug>(r: mooncake_meta_core::Result<T>) -> (ErrorKind, String) {
    let e = r.unwrap_err();
    (e.kind(), e.message().to_owned())
}

#[test]
fn a_journal_needs_a_capacity_and_sequences_start_at_one() {
    assert_eq!(code(Journal::new(0)).0, ErrorKind::InvalidParams);
    assert_eq!(
        code(Journal::starting_at(10, 0)).0,
        ErrorKind::InvalidParams
    );
    let s = Journal::new(100).unwrap().stats();
    assert_eq!(
        (s.first_seq, s.last_seq, s.records_held, s.bytes_held),
        (1, 0, 0, 0)
    );
    assert_eq!(s.capacity_bytes, 100);
}

#[test]
fn appends_get_consecutive_sequences() {
    let j = Journal::new(1 << 20).unwrap();
    for (i, r) in same_size(10).iter().enumerate() {
        assert_eq!(j.append(r).unwrap(), i as u64 + 1);
    }
    assert_eq!(j.append_all(&same_size(3)).unwrap(), Some(11..=13));
    assert_eq!(j.append_all(&[]).unwrap(), None);
    let b = read_all(&j, 1);
    assert_eq!(b.first_seq, 1);
    let mut expected = same_size(10);
    expected.extend(same_size(3));
    assert_eq!(b.records, expected);

    // A journal resuming after a snapshot goes on from its sequence.
    let j = Journal::starting_at(1 << 20, 500).unwrap();
    assert_eq!(j.append(&removed("x")).unwrap(), 500);
    assert_eq!(j.stats().released_upto, 499);
    assert_eq!(read_all(&j, 500).first_seq, 500);
}

#[test]
fn read_fills_what_fits_and_says_where_to_go_on() {
    let recs = same_size(5);
    let one = encoded_len(&recs[0]);
    let j = Journal::new(1 << 20).unwrap();
    j.append_all(&recs).unwrap();

    // Room for two records: two, and the next read starts at 3.
    let mut buf = vec![0u8; HEADER_LEN + 2 * one + one / 2];
    let Bounded::Fits(r) = j.read(1, &mut buf).unwrap() else {
        panic!("two fit")
    };
    assert_eq!(
        (r.records, r.bytes, r.next_seq),
        (2, HEADER_LEN + 2 * one, 3)
    );
    let b = decode_batch(&buf[..r.bytes]).unwrap();
    assert_eq!((b.first_seq, &b.records[..]), (1, &recs[..2]));

    let Bounded::Fits(r) = j.read(3, &mut buf).unwrap() else {
        panic!("two fit")
    };
    assert_eq!(r.next_seq, 5);
    let Bounded::Fits(r) = j.read(5, &mut buf).unwrap() else {
        panic!("one fits")
    };
    assert_eq!((r.records, r.next_seq), (1, 6));
    assert_eq!(decode_batch(&buf[..r.bytes]).unwrap().records, recs[4..]);

    // Nothing after the last record: an empty read, nothing written.
    buf.fill(0xAA);
    let Bounded::Fits(r) = j.read(6, &mut buf).unwrap() else {
        panic!("empty read")
    };
    assert_eq!((r.records, r.bytes, r.next_seq), (0, 0, 6));
    assert!(buf.iter().all(|&b| b == 0xAA));
}

#[test]
fn a_buffer_too_small_for_one_record_is_told_the_size_of_everything() {
    let recs = same_size(4);
    let one = encoded_len(&recs[0]);
    let j = Journal::new(1 << 20).unwrap();
    j.append_all(&recs).unwrap();
    for len in [0, 1, HEADER_LEN - 1, HEADER_LEN, HEADER_LEN + one - 1] {
        let mut buf = vec![0xAAu8; len];
        match j.read(2, &mut buf).unwrap() {
            Bounded::TooSmall(n) => assert_eq!(n, HEADER_LEN + 3 * one, "len {len}"),
            Bounded::Fits(r) => panic!("len {len}: {r:?}"),
        }
        assert!(buf.iter().all(|&b| b == 0xAA), "len {len}: buffer written");
    }
    // The size it asked for holds every record from there.
    let mut buf = vec![0u8; HEADER_LEN + 3 * one];
    let Bounded::Fits(r) = j.read(2, &mut buf).unwrap() else {
        panic!("fits")
    };
    assert_eq!((r.records, r.bytes), (3, buf.len()));
}

#[test]
fn reads_outside_what_was_appended_are_invalid() {
    let j = Journal::new(1 << 20).unwrap();
    j.append_all(&same_size(3)).unwrap();
    let mut buf = vec![0u8; 1024];
    let (k, m) = code(j.read(0, &mut buf));
    assert_eq!(k, ErrorKind::InvalidParams, "{m}");
    let (k, m) = code(j.read(5, &mut buf));
    assert_eq!(k, ErrorKind::InvalidParams);
    assert!(m.contains("last record appended is 3"), "{m}");
}

#[test]
fn released_records_are_freed_and_no_longer_readable() {
    let recs = same_size(6);
    let one = encoded_len(&recs[0]);
    let j = Journal::new(1 << 20).unwrap();
    j.append_all(&recs).unwrap();
    assert_eq!(j.release(2).unwrap(), 2);
    let s = j.stats();
    assert_eq!((s.first_seq, s.released_upto, s.records_held), (3, 2, 4));
    assert_eq!(s.bytes_held, 4 * charge(one));
    assert_eq!(s.dropped_records, 0);
    // Releasing again, or less, changes nothing.
    assert_eq!(j.release(2).unwrap(), 0);
    assert_eq!(j.release(1).unwrap(), 0);
    assert_eq!(j.stats(), s);
    // Past the last record: refused, nothing freed.
    let (k, m) = code(j.release(7));
    assert_eq!(k, ErrorKind::InvalidParams);
    assert!(m.contains("cannot release up to sequence 7"), "{m}");
    assert_eq!(j.stats(), s);

    let mut buf = vec![0u8; 1024];
    let (k, m) = code(j.read(2, &mut buf));
    assert_eq!(k, ErrorKind::JournalOverrun);
    assert!(
        m.contains("sequence 2 is no longer held (it was released"),
        "{m}"
    );
    assert_eq!(read_all(&j, 3).records, recs[2..]);
    // Everything released: the journal is empty and reads at the next sequence.
    assert_eq!(j.release(6).unwrap(), 4);
    assert_eq!(j.stats().bytes_held, 0);
    assert_eq!(j.read_to_vec(7).unwrap(), Vec::<u8>::new());
}

#[test]
fn a_full_journal_drops_the_oldest_unreleased_records_and_counts_them() {
    let recs = same_size(8);
    let one = encoded_len(&recs[0]);
    let j = Journal::new(3 * charge(one)).unwrap();
    j.append_all(&recs[..3]).unwrap();
    assert_eq!(j.stats().dropped_records, 0);
    // Two more: 1 and 2 go.
    j.append(&recs[3]).unwrap();
    j.append(&recs[4]).unwrap();
    let s = j.stats();
    assert_eq!((s.first_seq, s.last_seq, s.records_held), (3, 5, 3));
    assert_eq!(
        (s.dropped_records, s.dropped_upto, s.bytes_held),
        (2, 2, 3 * charge(one))
    );

    let mut buf = vec![0u8; 4096];
    for from in [1, 2] {
        let (k, m) = code(j.read(from, &mut buf));
        assert_eq!(k, ErrorKind::JournalOverrun);
        assert!(
            m.contains(&format!(
                "sequence {from} is no longer held (it was dropped unreleased"
            )),
            "{m}"
        );
        assert!(m.contains("resync from a snapshot"), "{m}");
    }
    assert_eq!(read_all(&j, 3).records, recs[2..5]);

    // Released records make room: nothing more is dropped.
    j.release(4).unwrap();
    j.append_all(&recs[5..7]).unwrap();
    let s = j.stats();
    assert_eq!((s.first_seq, s.last_seq, s.dropped_records), (5, 7, 2));
}

#[test]
fn a_record_larger_than_the_journal_is_dropped_with_everything_before_it() {
    let small = removed("a");
    let big = Record::Reset {
        image: vec![7; 1000],
    };
    let j = Journal::new(200).unwrap();
    j.append_all(&[small.clone(), small.clone()]).unwrap();
    assert_eq!(j.append(&big).unwrap(), 3);
    let s = j.stats();
    assert_eq!(
        (s.first_seq, s.last_seq, s.records_held, s.bytes_held),
        (4, 3, 0, 0)
    );
    assert_eq!((s.dropped_records, s.dropped_upto), (3, 3));
    let mut buf = vec![0u8; 4096];
    assert_eq!(code(j.read(3, &mut buf)).0, ErrorKind::JournalOverrun);
    // The journal goes on.
    assert_eq!(j.append(&small).unwrap(), 4);
    assert_eq!(read_all(&j, 4).records, vec![small]);
}

#[test]
fn the_sequence_space_ends_with_an_error_not_a_wrap() {
    let j = Journal::starting_at(1 << 10, u64::MAX - 1).unwrap();
    assert_eq!(j.append(&removed("a")).unwrap(), u64::MAX - 1);
    let (k, m) = code(j.append(&removed("b")));
    assert_eq!(k, ErrorKind::Internal);
    assert!(m.contains("sequence space exhausted"), "{m}");
    assert_eq!(code(j.append_all(&[removed("c")])).0, ErrorKind::Internal);
    assert_eq!(j.stats().last_seq, u64::MAX - 1);
    assert_eq!(read_all(&j, u64::MAX - 1).records.len(), 1);
    assert_eq!(j.read_to_vec(u64::MAX).unwrap(), Vec::<u8>::new());

    // A run that cannot be numbered whole is refused whole.
    let j = Journal::starting_at(1 << 10, u64::MAX - 2).unwrap();
    let run = [removed("a"), removed("b"), removed("c")];
    assert_eq!(code(j.append_all(&run)).0, ErrorKind::Internal);
    assert_eq!(j.stats().last_seq, u64::MAX - 3);
    assert_eq!(
        j.append_all(&run[..2]).unwrap(),
        Some(u64::MAX - 2..=u64::MAX - 1)
    );
}

#[test]
fn the_capacity_is_never_exceeded_and_the_counters_add_up() {
    // Random appends (records of every variant and size), releases and
    // reads against a small journal; after every step the bytes held are
    // exactly the held records' sizes, within capacity, and every sequence
    // appended is held, released or counted as dropped.
    let mut rng = XorShift::new(0x0B0B);
    for capacity in [60usize, 300, 2_000] {
        let j = Journal::new(capacity).unwrap();
        let mut appended: Vec<Record> = Vec::new();
        let mut released = 0u64;
        for _ in 0..600 {
            match rng.below(10) {
                0..=6 => {
                    let r = journal_gen::record(&mut rng);
                    let seq = j.append(&r).unwrap();
                    appended.push(r);
                    assert_eq!(seq, appended.len() as u64);
                }
                7 => {
                    let s = j.stats();
                    if s.last_seq > 0 {
                        let upto = 1 + rng.below(s.last_seq);
                        j.release(upto).unwrap();
                        released = released.max(upto);
                    }
                }
                _ => {
                    let s = j.stats();
                    let mut buf = vec![0u8; rng.below(capacity as u64 + 100) as usize];
                    match j.read(s.first_seq, &mut buf).unwrap() {
                        Bounded::Fits(r) if r.records > 0 => {
                            let b = decode_batch(&buf[..r.bytes]).unwrap();
                            let from = (s.first_seq - 1) as usize;
                            assert_eq!(b.records, appended[from..from + b.records.len()]);
                        }
                        Bounded::Fits(_) => assert_eq!(s.records_held, 0),
                        Bounded::TooSmall(n) => assert_eq!(
                            n,
                            HEADER_LEN + s.bytes_held - s.records_held as usize * RECORD_OVERHEAD
                        ),
                    }
                }
            }
            let s = j.stats();
            assert!(s.bytes_held <= capacity, "{s:?}");
            assert_eq!(s.last_seq, appended.len() as u64);
            assert_eq!(s.released_upto, released);
            let held = &appended[(s.first_seq - 1) as usize..];
            assert_eq!(s.records_held, held.len() as u64);
            assert_eq!(
                s.bytes_held,
                held.iter().map(|r| charge(encoded_len(r))).sum::<usize>()
            );
            // Below the first held: released or dropped, each counted once.
            let gone = s.first_seq - 1;
            assert!(s.dropped_records <= gone);
            assert!(s.dropped_upto <= gone);
            if s.records_held > 0 {
                assert_eq!(read_all(&j, s.first_seq).records, held);
            }
        }
        assert!(
            j.stats().dropped_records > 0,
            "capacity {capacity} never filled"
        );
    }
}

/// A record of about `len` encoded bytes (an erased key that long).
fn about(len: usize) -> Record {
    removed(&"x".repeat(len))
}

#[test]
fn records_across_many_chunks_read_back_whole_and_the_counters_add_up() {
    // The journal stores its bytes in chunks (CHUNK_BYTES, a record never
    // spanning two, a longer record in a chunk of its own): appends of
    // records small, chunk-sized and longer than a chunk, reads of every
    // size from every held sequence, releases and drops, against
    // capacities that hold many chunks. Every read decodes to exactly the
    // records appended under those sequences, and the bytes held are
    // exactly the held records' charges.
    let mut rng = XorShift::new(0xC4C4);
    for capacity in [3 * CHUNK_BYTES, 12 * CHUNK_BYTES] {
        let j = Journal::new(capacity).unwrap();
        let mut appended: Vec<Record> = Vec::new();
        let mut released = 0u64;
        for _ in 0..1_500 {
            match rng.below(20) {
                0..=14 => {
                    let r = match rng.below(40) {
                        0 => about(CHUNK_BYTES + rng.below(CHUNK_BYTES as u64) as usize),
                        1 => about(CHUNK_BYTES - 40 + rng.below(80) as usize),
                        2..=9 => about(rng.below(20_000) as usize),
                        _ => journal_gen::record(&mut rng),
                    };
                    let seq = j.append(&r).unwrap();
                    appended.push(r);
                    assert_eq!(seq, appended.len() as u64);
                }
                15 => {
                    let s = j.stats();
                    if s.last_seq > 0 && rng.below(2) == 0 {
                        let upto =
                            s.first_seq.saturating_sub(1) + rng.below(s.records_held + 1).max(1);
                        let upto = upto.min(s.last_seq);
                        j.release(upto).unwrap();
                        released = released.max(upto);
                    }
                }
                _ => {
                    let s = j.stats();
                    if s.records_held == 0 {
                        continue;
                    }
                    let from = s.first_seq + rng.below(s.records_held);
                    let mut buf = vec![0u8; rng.below(3 * CHUNK_BYTES as u64) as usize];
                    match j.read(from, &mut buf).unwrap() {
                        Bounded::Fits(r) => {
                            assert!(r.records > 0);
                            let b = decode_batch(&buf[..r.bytes]).unwrap();
                            let at = (from - 1) as usize;
                            assert_eq!(b.records, appended[at..at + b.records.len()]);
                            assert_eq!(r.next_seq, from + r.records);
                        }
                        Bounded::TooSmall(n) => {
                            let at = (from - 1) as usize;
                            let rest: usize = appended[at..].iter().map(encoded_len).sum();
                            assert_eq!(n, HEADER_LEN + rest);
                            assert!(buf.len() < HEADER_LEN + encoded_len(&appended[at]));
                        }
                    }
                }
            }
            let s = j.stats();
            assert!(s.bytes_held <= capacity, "{s:?}");
            assert_eq!(s.last_seq, appended.len() as u64);
            assert_eq!(s.released_upto, released);
            let held = &appended[(s.first_seq - 1) as usize..];
            assert_eq!(s.records_held, held.len() as u64);
            assert_eq!(
                s.bytes_held,
                held.iter().map(|r| charge(encoded_len(r))).sum::<usize>()
            );
        }
        let s = j.stats();
        assert!(s.dropped_records > 0, "capacity {capacity} never filled");
        if s.records_held > 0 {
            let held = &appended[(s.first_seq - 1) as usize..];
            assert_eq!(read_all(&j, s.first_seq).records, held);
        }
    }
}

#[test]
fn concurrent_appenders_and_a_reader_keep_order() {
    // Four appenders (single records and runs of three), one reader that
    // reads and releases as it goes: the reader sees every sequence once,
    // in order, each appender's records in its own order, and every run of
    // three contiguous.
    const THREADS: usize = 4;
    const PER_THREAD: usize = 3_000;
    let j = Arc::new(Journal::new(64 << 20).unwrap());
    let start = Arc::new(Barrier::new(THREADS + 1));
    let mut handles = Vec::new();
    for t in 0..THREADS {
        let (j, start) = (Arc::clone(&j), Arc::clone(&start));
        handles.push(std::thread::spawn(move || {
            start.wait();
            let mut i = 0;
            while i < PER_THREAD {
                if i % 5 == 0 && i + 3 <= PER_THREAD {
                    let run: Vec<Record> =
                        (i..i + 3).map(|n| removed(&format!("{t}/{n}"))).collect();
                    let span = j.append_all(&run).unwrap().unwrap();
                    assert_eq!(span.end() - span.start(), 2);
                    i += 3;
                } else {
                    j.append(&removed(&format!("{t}/{i}"))).unwrap();
                    i += 1;
                }
            }
        }));
    }
    let reader = {
        let (j, start) = (Arc::clone(&j), Arc::clone(&start));
        std::thread::spawn(move || {
            start.wait();
            let total = (THREADS * PER_THREAD) as u64;
            let mut next = 1u64;
            let mut seen: Vec<(usize, usize)> = Vec::with_capacity(total as usize);
            let mut buf = vec![0u8; 4096];
            while next <= total {
                match j.read(next, &mut buf).unwrap() {
                    Bounded::TooSmall(n) => buf.resize(n, 0),
                    Bounded::Fits(r) if r.records == 0 => std::thread::yield_now(),
                    Bounded::Fits(r) => {
                        let b = decode_batch(&buf[..r.bytes]).unwrap();
                        assert_eq!(b.first_seq, next, "a gap or a repeat");
                        for rec in b.records {
                            let Record::ObjectErased { key, .. } = rec else {
                                panic!("unexpected {rec:?}")
                            };
                            let (t, n) = key.key.split_once('/').unwrap();
                            seen.push((t.parse().unwrap(), n.parse().unwrap()));
                        }
                        next = r.next_seq;
                        j.release(next - 1).unwrap();
                    }
                }
            }
            seen
        })
    };
    for h in handles {
        h.join().unwrap();
    }
    let seen = reader.join().unwrap();
    assert_eq!(seen.len(), THREADS * PER_THREAD);
    let mut expect_next = [0usize; THREADS];
    for (pos, &(t, n)) in seen.iter().enumerate() {
        assert_eq!(
            n,
            expect_next[t],
            "thread {t} out of order at sequence {}",
            pos + 1
        );
        expect_next[t] += 1;
        // The first of a run of three is followed by the other two.
        if n % 5 == 0 && n + 3 <= PER_THREAD {
            assert_eq!(seen[pos + 1], (t, n + 1), "run broken at {}", pos + 1);
            assert_eq!(seen[pos + 2], (t, n + 2), "run broken at {}", pos + 1);
        }
    }
    let s = j.stats();
    assert_eq!((s.dropped_records, s.records_held, s.bytes_held), (0, 0, 0));
}

#[test]
fn a_reader_that_falls_behind_gets_overrun_and_resumes_in_order() {
    // A journal far smaller than what three appenders write: the reader is
    // overrun again and again, resumes from the oldest record held, and
    // still sees strictly increasing sequences, each appender's records in
    // order, and every sequence either read or counted as dropped.
    const THREADS: usize = 3;
    const PER_THREAD: usize = 5_000;
    let one = charge(encoded_len(&removed("0/0000")));
    let j = Arc::new(Journal::new(40 * one).unwrap());
    let start = Arc::new(Barrier::new(THREADS + 1));
    let mut handles = Vec::new();
    for t in 0..THREADS {
        let (j, start) = (Arc::clone(&j), Arc::clone(&start));
        handles.push(std::thread::spawn(move || {
            start.wait();
            for n in 0..PER_THREAD {
                j.append(&removed(&format!("{t}/{n:04}"))).unwrap();
            }
        }));
    }
    let total = (THREADS * PER_THREAD) as u64;
    let reader = {
        let (j, start) = (Arc::clone(&j), Arc::clone(&start));
        std::thread::spawn(move || {
            start.wait();
            // Fall behind on purpose: the first read comes after a drop, so
            // it is an overrun whatever the scheduling.
            while j.stats().dropped_records == 0 {
                std::thread::yield_now();
            }
            let (mut next, mut overruns) = (1u64, 0u64);
            let mut seen: Vec<(u64, usize, usize)> = Vec::new();
            let mut buf = vec![0u8; 8 * one];
            while next <= total {
                match j.read(next, &mut buf) {
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::JournalOverrun, "{e}");
                        overruns += 1;
                        // Resync: here, just go on from the oldest record held.
                        let first = j.stats().first_seq;
                        assert!(first > next, "overrun at {next} but {first} is held");
                        next = first;
                    }
                    Ok(Bounded::TooSmall(n)) => panic!("a {n}-byte read of one record"),
                    Ok(Bounded::Fits(r)) if r.records == 0 => std::thread::yield_now(),
                    Ok(Bounded::Fits(r)) => {
                        let b = decode_batch(&buf[..r.bytes]).unwrap();
                        for (i, rec) in b.records.into_iter().enumerate() {
                            let Record::ObjectErased { key, .. } = rec else {
                                panic!("unexpected {rec:?}")
                            };
                            let (t, n) = key.key.split_once('/').unwrap();
                            seen.push((next + i as u64, t.parse().unwrap(), n.parse().unwrap()));
                        }
                        next = r.next_seq;
                        j.release(next - 1).unwrap();
                    }
                }
            }
            (seen, overruns)
        })
    };
    for h in handles {
        h.join().unwrap();
    }
    let (seen, overruns) = reader.join().unwrap();
    let mut last: [Option<usize>; THREADS] = [None; THREADS];
    for w in seen.windows(2) {
        assert!(w[0].0 < w[1].0, "sequences not increasing: {w:?}");
    }
    for &(seq, t, n) in &seen {
        assert!(
            last[t].is_none_or(|p| p < n),
            "thread {t} out of order at {seq}"
        );
        last[t] = Some(n);
    }
    assert!(overruns >= 1);
    let s = j.stats();
    assert!(s.bytes_held <= s.capacity_bytes);
    // Every sequence was read or dropped (one read and then dropped before
    // its release counts in both).
    assert!(
        seen.len() as u64 + s.dropped_records >= total,
        "{} seen, {s:?}",
        seen.len()
    );
    println!(
        "overrun reader: {} of {total} records read, {} dropped, {overruns} overruns",
        seen.len(),
        s.dropped_records
    );
}
