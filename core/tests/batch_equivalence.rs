//! docs/CONTRACT.md §3 batch forms: batch Exist, GetReplicaList (plain and
//! bounded), readable counts and Remove give exactly what the loop of single
//! calls gives, key by key, and leave the same state behind (leases granted,
//! objects removed, gauges), on random key sets with duplicates, missing and
//! invalid keys, and leased, pinned, grouped, in-flight and busy objects.
mod common;
use common::*;
use mooncake_meta_core::*;
use proptest::prelude::*;

/// What one key of the generated state is.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Missing,
    Complete,
    /// PutStart only: the write is in flight (Exist false, Get not ready,
    /// Remove refused).
    InFlight,
    /// MEMORY + NOF_SSD written, only the MEMORY replica ended: readable
    /// while a replica of the write is still in flight.
    Partial,
    SoftPinned,
    HardPinned,
    /// A member of one of three groups (the lease is the group's).
    Grouped(u8),
    /// Read once at build time: a live lease unless the clock moved past it.
    Leased,
    /// A copy to the NOF_SSD segment is running (Remove refused).
    Copying,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Missing),
        Just(Shape::Complete),
        Just(Shape::InFlight),
        Just(Shape::Partial),
        Just(Shape::SoftPinned),
        Just(Shape::HardPinned),
        (0u8..3).prop_map(Shape::Grouped),
        Just(Shape::Leased),
        Just(Shape::Copying),
    ]
}

/// Query keys are drawn from this many names (more than any generated
/// state has, so some are always missing).
const QUERY_KEYS: usize = 24;

fn key_name(i: usize) -> String {
    format!("batch/key/{i}")
}

/// Builds the state; the same shapes give the same state (one segment per
/// pool, so placement has a single choice), which `check` verifies.
fn build(shard_count: usize, shapes: &[Shape], advance: u64) -> Master {
    let mut c = config();
    c.shard_count = shard_count;
    let m = master_with(c, 1, 1, 1 << 24);
    for (i, s) in shapes.iter().enumerate() {
        let name = key_name(i);
        let key = k(&name);
        let mut wc = WriteConfig::default();
        match s {
            Shape::Missing => continue,
            Shape::InFlight => {
                m.put_start(C1, key, 64, &wc).unwrap();
                continue;
            }
            Shape::Partial => {
                wc.nof_ssd_replicas = 1;
                m.put_start(C1, key, 64, &wc).unwrap();
                m.put_end(C1, key, ReplicaSelector::Memory, None).unwrap();
                continue;
            }
            Shape::SoftPinned => wc = enable(DEFAULT_TTL),
            Shape::HardPinned => wc.hard_pin = true,
            Shape::Grouped(g) => wc.group = Some(format!("group{g}")),
            Shape::Complete | Shape::Leased | Shape::Copying => {}
        }
        m.put_start(C1, key, 64, &wc).unwrap();
        m.put_end(C1, key, ReplicaSelector::All, None).unwrap();
        match s {
            Shape::Leased => assert!(m.exist(key).unwrap()),
            Shape::Copying => {
                m.copy_start(key, &["nof0"]).unwrap();
            }
            _ => {}
        }
    }
    m.advance_time(advance).unwrap();
    m
}

/// One query key: an index into the shapes, or an invalid key.
#[derive(Debug, Clone, Copy)]
enum Query {
    Key(usize),
    /// An empty key (INVALID_PARAMS for that key alone).
    Empty,
    /// A tenant with a NUL in it (INVALID_PARAMS for that key alone).
    BadTenant,
}

fn queries(n: usize) -> impl Strategy<Value = Vec<Query>> {
    // Up to three chunks of 64, drawn from few keys so repeats are common.
    let q = prop_oneof![
        20 => (0..n).prop_map(Query::Key),
        1 => Just(Query::Empty),
        1 => Just(Query::BadTenant),
    ];
    prop::collection::vec(q, 0..200)
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Exist,
    Get,
    /// Bounded Get into a shared capacity.
    GetBounded(usize),
    ReadableCount,
    Remove {
        force: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Exist),
        Just(Op::Get),
        (0usize..80).prop_map(Op::GetBounded),
        Just(Op::ReadableCount),
        any::<bool>().prop_map(|force| Op::Remove { force }),
    ]
}

/// What a call returned, comparable across the two forms.
type Outcome = Vec<std::result::Result<String, Error>>;

fn debug<T: std::fmt::Debug>(rs: Vec<Result<T>>) -> Outcome {
    rs.into_iter()
        .map(|r| r.map(|v| format!("{v:?}")))
        .collect()
}

fn singles(m: &Master, keys: &[Key<'_>], op: Op) -> Outcome {
    match op {
        Op::Exist => debug(keys.iter().map(|k| m.exist(*k)).collect()),
        Op::Get => debug(keys.iter().map(|k| m.get_replica_list(*k)).collect()),
        Op::GetBounded(cap) => {
            let mut left = cap;
            debug(
                keys.iter()
                    .map(|k| {
                        let r = m.get_replica_list_bounded(*k, left);
                        if let Ok(Bounded::Fits(v)) = &r {
                            left -= v.len();
                        }
                        r
                    })
                    .collect(),
            )
        }
        Op::ReadableCount => debug(keys.iter().map(|k| Ok(m.readable_count(*k))).collect()),
        Op::Remove { force } => debug(keys.iter().map(|k| m.remove(*k, force)).collect()),
    }
}

fn batch(m: &Master, keys: &[Key<'_>], op: Op) -> Outcome {
    match op {
        Op::Exist => debug(m.batch_exist(keys)),
        Op::Get => debug(m.batch_get_replica_list(keys)),
        Op::GetBounded(cap) => debug(m.batch_get_replica_list_bounded(keys, cap)),
        Op::ReadableCount => debug(m.batch_readable_count(keys).into_iter().map(Ok).collect()),
        Op::Remove { force } => debug(m.batch_remove(keys, force)),
    }
}

fn state(m: &Master) -> (Vec<u8>, MetricsSnapshot) {
    let mut metrics = m.metrics();
    // The longest index-mutex hold is a measured time, never equal between
    // two masters.
    metrics.cleanup_longest_hold_ns = 0;
    (m.snapshot().unwrap(), metrics)
}

fn check(shard_count: usize, shapes: &[Shape], advance: u64, ops: &[(Op, Vec<Query>)]) {
    let one = build(shard_count, shapes, advance);
    let many = build(shard_count, shapes, advance);
    assert!(
        state(&one) == state(&many),
        "the build is not deterministic"
    );
    // Queries past the generated keys name missing keys.
    let names: Vec<String> = (0..shapes.len().max(QUERY_KEYS)).map(key_name).collect();
    for (op, qs) in ops {
        let keys: Vec<Key<'_>> = qs
            .iter()
            .map(|q| match *q {
                Query::Key(i) => k(&names[i]),
                Query::Empty => Key::new(""),
                Query::BadTenant => Key::scoped("bad\0tenant", "x"),
            })
            .collect();
        let want = singles(&one, &keys, *op);
        let got = batch(&many, &keys, *op);
        assert_eq!(got, want, "{op:?} over {qs:?}");
        assert!(state(&one) == state(&many), "{op:?} left another state");
        inv(&many);
        // The next operation sees the leases of this one run out for some
        // keys and not others.
        one.advance_time(LEASE / 3).unwrap();
        many.advance_time(LEASE / 3).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn batch_forms_equal_the_loop_of_single_calls(
        shard_count in prop_oneof![Just(1usize), Just(4), Just(1024)],
        shapes in prop::collection::vec(shape(), 1..20),
        advance in prop_oneof![Just(0u64), Just(LEASE - 1), Just(LEASE), 0..2 * LEASE],
        ops in prop::collection::vec((op(), queries(QUERY_KEYS)), 1..6),
    ) {
        check(shard_count, &shapes, advance, &ops);
    }
}

#[test]
fn repeated_key_in_batch_remove_sees_itself_removed() {
    // §3: a key repeated in one batch sees the earlier entry's effect
    let shapes = [Shape::Complete, Shape::Leased, Shape::Copying];
    let q = |i| Query::Key(i);
    let ops = vec![
        (
            Op::Remove { force: false },
            vec![q(0), q(1), q(0), q(2), q(1)],
        ),
        (Op::Remove { force: true }, vec![q(1), q(1), q(2)]),
        (Op::Exist, vec![q(0), q(1), q(2), q(2)]),
    ];
    for shards in [1, 1024] {
        check(shards, &shapes, 0, &ops);
    }
    let m = build(1024, &shapes, 0);
    let names: Vec<String> = (0..3).map(key_name).collect();
    let keys = [k(&names[0]), k(&names[0]), k(&names[1])];
    let codes: Vec<_> = m
        .batch_remove(&keys, false)
        .into_iter()
        .map(|r| r.err().map(|e| e.kind()))
        .collect();
    assert_eq!(
        codes,
        [
            None,
            Some(ErrorKind::ObjectNotFound),
            Some(ErrorKind::ObjectHasLease)
        ]
    );
}

#[test]
fn batches_longer_than_a_chunk_keep_input_order() {
    // §3: results come back in input order, across the batch's internal chunks
    let shapes: Vec<Shape> = (0..300)
        .map(|i| {
            if i % 3 == 0 {
                Shape::Missing
            } else {
                Shape::Complete
            }
        })
        .collect();
    let qs: Vec<Query> = (0..300).rev().map(Query::Key).collect();
    check(
        1024,
        &shapes,
        0,
        &[
            (Op::Exist, qs.clone()),
            (Op::Get, qs.clone()),
            (Op::GetBounded(150), qs.clone()),
            (Op::Remove { force: false }, qs),
        ],
    );
}

#[test]
fn batch_get_bounded_gives_each_key_what_the_earlier_ones_left() {
    // §3 (C ABI batch GetReplicaList): a key that does not fit the shared
    // capacity is TooSmall(its count) and gets no lease
    let m = build(1024, &[Shape::Complete, Shape::Partial, Shape::Complete], 0);
    let names: Vec<String> = (0..3).map(key_name).collect();
    let keys: Vec<Key<'_>> = names.iter().map(|n| k(n)).collect();
    let r = m.batch_get_replica_list_bounded(&keys, 2);
    let shape: Vec<_> = r
        .iter()
        .map(|r| match r {
            Ok(Bounded::Fits(v)) => Ok(v.len()),
            Ok(Bounded::TooSmall(n)) => Err(*n),
            Err(e) => panic!("{e}"),
        })
        .collect();
    assert_eq!(shape, [Ok(1), Ok(1), Err(1)]);
    // The key that did not fit got no lease: it can be removed unforced.
    assert_eq!(
        m.batch_remove(&keys, false)
            .into_iter()
            .map(|r| r.err().map(|e| e.kind()))
            .collect::<Vec<_>>(),
        [
            Some(ErrorKind::ObjectHasLease),
            Some(ErrorKind::ReplicaIsNotReady),
            None
        ]
    );
}
