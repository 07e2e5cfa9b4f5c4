//! The borrowed decoder the apply path uses (`journal::view`) accepts
//! exactly what the owned decoder accepts, with the same record content and
//! the same messages (docs/CONTRACT.md section 12.2, "decoding is total";
//! section 12.3: a corrupt batch applies nothing): valid batches of every
//! record kind, mutations of them (half re-framed so they reach the record
//! parser), concatenations, and arbitrary bytes.
//!
//! Debug builds run a tenth of the cases; `cargo test --release` runs all.

mod support;

use mooncake_meta_core::journal::codec::decode_batch_prefix;
use mooncake_meta_core::journal::view::{
    check_batch_prefix, decode_batch_view_prefix, KindView, RecordViews,
};
use mooncake_meta_core::journal::Record;
use support::entropy::{Entropy, XorShift};
use support::journalmut::{mutated, reframe, seed_batches};

fn scaled(n: u64) -> u64 {
    if cfg!(debug_assertions) {
        n / 10
    } else {
        n
    }
}

/// What a decoder made of an input: the first sequence, the records and
/// the bytes used, or the message.
type Outcome = Result<(u64, Vec<Record>, usize), String>;

fn owned(bytes: &[u8]) -> Outcome {
    decode_batch_prefix(bytes)
        .map(|(b, used)| (b.first_seq, b.records, used))
        .map_err(|e| e.message().to_owned())
}

/// The view decoder three ways: all at once, checked then read one record
/// at a time (as apply does); all three must agree.
fn viewed(bytes: &[u8]) -> Outcome {
    let all = decode_batch_view_prefix(bytes)
        .map(|(b, used)| {
            let recs = b.records.iter().map(|r| r.to_record()).collect::<Vec<_>>();
            // Each view's bytes are its record's encoding.
            for (v, rec) in b.records.iter().zip(&recs) {
                let mut enc = Vec::new();
                mooncake_meta_core::journal::codec::encode_record(rec, &mut enc);
                assert_eq!(v.bytes, &enc[..], "view bytes of {}", v.name());
                assert_eq!(v.name(), rec.name());
            }
            (b.first_seq, recs, used)
        })
        .map_err(|e| e.message().to_owned());
    let checked = check_batch_prefix(bytes).map_err(|e| e.message().to_owned());
    match (&all, &checked) {
        (Ok((first, recs, used)), Ok((c_first, count, c_used))) => {
            assert_eq!((first, recs.len(), used), (c_first, *count, c_used));
            let one_by_one: Vec<Record> = RecordViews::new(bytes, *first, *count)
                .enumerate()
                .map(|(i, item)| {
                    let (seq, v) = item.expect("a checked batch reads back");
                    assert_eq!(seq, first + i as u64);
                    v.to_record()
                })
                .collect();
            assert_eq!(&one_by_one, recs);
        }
        (Err(a), Err(c)) => assert_eq!(a, c),
        _ => panic!("check_batch_prefix disagrees: {checked:?} vs {all:?}"),
    }
    all
}

fn same(bytes: &[u8]) -> bool {
    let (o, v) = (owned(bytes), viewed(bytes));
    assert_eq!(o, v, "the two decoders disagree on {bytes:02x?}");
    o.is_ok()
}

#[test]
fn valid_batches_of_every_kind_decode_the_same() {
    for seed in seed_batches(&mut XorShift::new(0x5EED_2000), 200) {
        assert!(same(&seed));
    }
}

#[test]
fn mutated_batches_are_accepted_and_refused_alike() {
    let seeds = seed_batches(&mut XorShift::new(0x5EED_1000), 24);
    let mut rng = XorShift::new(0x51EE_0001);
    let cases = scaled(100_000);
    let mut accepted = 0u64;
    for case in 0..cases {
        let seed = &seeds[(case % seeds.len() as u64) as usize];
        accepted += u64::from(same(&mutated(&mut rng, seed, case % 2 == 1)));
    }
    // Both outcomes are reached.
    assert!(accepted > cases / 100, "only {accepted} accepted");
    assert!(accepted < cases - cases / 4, "{accepted} accepted");
}

#[test]
fn concatenations_decode_batch_by_batch_alike() {
    let seeds = seed_batches(&mut XorShift::new(3), 12);
    let mut rng = XorShift::new(0xC0CA);
    for _ in 0..scaled(2_000) {
        let mut input = Vec::new();
        for _ in 0..1 + rng.below(4) {
            input.extend_from_slice(&seeds[rng.below(seeds.len() as u64) as usize]);
        }
        if rng.below(2) == 1 {
            let at = rng.below(input.len() as u64) as usize;
            input[at] ^= 1 << rng.below(8);
        }
        let mut rest = &input[..];
        while !rest.is_empty() {
            if !same(rest) {
                break;
            }
            let used = owned(rest).expect("accepted").2;
            rest = &rest[used..];
        }
    }
}

#[test]
fn arbitrary_bytes_are_refused_alike() {
    let mut rng = XorShift::new(11);
    let seeds = seed_batches(&mut XorShift::new(1), 0);
    for case in 0..scaled(20_000) {
        let len = (rng.next_u64() % 200) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if case % 2 == 0 && len >= 40 {
            let seed = &seeds[case as usize % seeds.len()];
            b[..40].copy_from_slice(&seed[..40]);
            reframe(&mut b);
        }
        same(&b);
    }
}

// Format 2 added tag 11 (ObjectEnded): a version 1 batch is decoded
// alike, and tag 11 in one is refused alike (§12.2).
#[test]
fn version_1_batches_decode_alike() {
    let mut refused = 0;
    for seed in seed_batches(&mut XorShift::new(0x5EED_3000), 200) {
        let mut v1 = seed.clone();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        reframe(&mut v1);
        let has_ended = owned(&seed).expect("a seed decodes").1.iter().any(|r| {
            matches!(
                r,
                Record::ObjectEnded { .. } | Record::ObjectStarted { .. } | Record::Timeline { .. }
            )
        });
        assert_eq!(same(&v1), !has_ended);
        refused += u32::from(has_ended);
    }
    assert!(refused > 0, "no seed held an ObjectEnded");
}

// Format 3 added tag 12 (ObjectStarted): a version 2 batch is decoded
// alike, and tag 12 in one is refused alike (§12.2); an ObjectStarted's
// view is the image of the ObjectSet it stands for.
#[test]
fn version_2_batches_decode_alike() {
    let mut refused = 0;
    for seed in seed_batches(&mut XorShift::new(0x5EED_3001), 200) {
        let mut v2 = seed.clone();
        v2[8..12].copy_from_slice(&2u32.to_le_bytes());
        reframe(&mut v2);
        let recs = owned(&seed).expect("a seed decodes").1;
        let has_started = recs
            .iter()
            .any(|r| matches!(r, Record::ObjectStarted { .. }));
        let later = has_started || recs.iter().any(|r| matches!(r, Record::Timeline { .. }));
        assert_eq!(same(&v2), !later);
        refused += u32::from(has_started);
        let (views, _) = decode_batch_view_prefix(&seed).expect("a seed decodes");
        for (v, r) in views.records.iter().zip(&recs) {
            if let KindView::ObjectStarted { image } = &v.kind {
                let Record::ObjectSet {
                    image: set,
                    discarded,
                } = r.clone().expand_start()
                else {
                    panic!("an ObjectStarted view of {r:?}");
                };
                assert_eq!((image.to_image(), discarded.len()), (*set, 0));
            }
        }
    }
    assert!(refused > 0, "no seed held an ObjectStarted");
}

// Format 4 added tag 13 (Timeline): a version 3 batch is decoded alike,
// and tag 13 in one is refused alike (§12.2).
#[test]
fn version_3_batches_decode_alike() {
    let mut refused = 0;
    for seed in seed_batches(&mut XorShift::new(0x5EED_3002), 200) {
        let mut v3 = seed.clone();
        v3[8..12].copy_from_slice(&3u32.to_le_bytes());
        reframe(&mut v3);
        let has_timeline = owned(&seed)
            .expect("a seed decodes")
            .1
            .iter()
            .any(|r| matches!(r, Record::Timeline { .. }));
        assert_eq!(same(&v3), !has_timeline);
        refused += u32::from(has_timeline);
    }
    assert!(refused > 0, "no seed held a Timeline");
}

// A committed soft-pin deadline of 0 (an image's, an End's commit outcome)
// is refused by both decoders alike, naming the record and the field: a
// master stores 0 as "no deadline", so apply would register and count a pin
// for an object that has none (review finding: both accepted it).
#[test]
fn a_committed_deadline_of_0_is_refused_alike() {
    use mooncake_meta_core::journal::codec::encode_batch;
    use mooncake_meta_core::journal::{InFlightImage, ObjectImage, RecordKey};
    let image = |committed| ObjectImage {
        key: RecordKey::new("default", "k"),
        size: 4096,
        writer: 1,
        put_start: 10,
        lease: 10,
        seq: 1,
        write_token: 1,
        hard_pin: false,
        group: None,
        committed,
        in_flight: Some(InFlightImage { pending: None }),
        task: None,
        replicas: vec![],
    };
    let set = |committed| Record::ObjectSet {
        image: Box::new(image(committed)),
        discarded: vec![],
    };
    let ended = |commit| Record::ObjectEnded {
        key: RecordKey::new("default", "k"),
        write_token: 1,
        at: 100,
        completed: vec![1],
        commit,
        write_over: true,
    };
    for (rec, field) in [
        (set(Some(0)), "ObjectSet 3 (committed)"),
        (ended(Some(Some(0))), "ObjectEnded 3 (commit deadline)"),
    ] {
        // After a record that decodes: the whole batch is refused.
        let b = encode_batch(2, &[set(Some(1)), rec]).unwrap();
        assert!(!same(&b), "{field}: accepted");
        let msg = owned(&b).unwrap_err();
        assert!(
            msg.contains(field) && msg.contains("committed deadline of 0"),
            "{msg}"
        );
    }
    // 1, "none" and "the rule did not fire" decode, alike.
    let b = encode_batch(
        2,
        &[set(Some(1)), set(None), ended(Some(None)), ended(None)],
    )
    .unwrap();
    assert!(same(&b));
}
