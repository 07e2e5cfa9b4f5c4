//! docs/CONTRACT.md §3 batch forms through the C ABI: on the same state,
//! `mooncake_meta_batch_exist`, `_batch_get_replica_list` and
//! `_batch_remove` give every key the status and outputs the loop of
//! `mooncake_meta_exist` / `_get_replica_list` / `_remove` gives it, and leave
//! the same state behind; a batch GetReplicaList whose keys need more than
//! `cap` replicas is refused whole (BUFFER_TOO_SMALL, the total needed in
//! `*out_len`) and changes nothing. Random key lists with duplicates over
//! missing, complete, in-flight, partly written, leased and busy objects.

use mooncake_meta::batch::*;
use mooncake_meta::config::*;
use mooncake_meta::master::*;
use mooncake_meta::read::*;
use mooncake_meta::remove::*;
use mooncake_meta::replica::mooncake_meta_replica;
use mooncake_meta::status::*;
use mooncake_meta_core::*;
use proptest::prelude::*;
use std::os::raw::c_int;
use std::ptr::{null, null_mut};

const T0: u64 = 1_000_000;
const C1: ClientId = 1;
const LEASE: u64 = 10_000;
const MAX_REPLICAS: usize = 8;
const EMPTY: mooncake_meta_replica = mooncake_meta_replica {
    id: 0,
    kind: 0,
    status: 0,
    segment_id: 0,
    reserved: 0,
    address: 0,
    size: 0,
    client: 0,
};

/// A C master (manual clock, no background work) with one MEMORY and one
/// NOF_SSD segment; freed on drop.
struct CMaster(*mut mooncake_meta_master);

impl CMaster {
    fn new(shards: u64) -> CMaster {
        let e = null_mut();
        let (mut cfg, mut m) = (null_mut(), null_mut());
        // SAFETY: plain C calls with valid out-pointers; `cfg` freed once.
        unsafe {
            assert_eq!(mooncake_meta_config_new(&mut cfg, e), MOONCAKE_META_OK);
            for st in [
                mooncake_meta_config_set_manual_clock(cfg, T0, e),
                mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, e),
                mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, e),
                mooncake_meta_config_set_sweep_interval_ms(cfg, 0, e),
                mooncake_meta_config_set_shard_count(cfg, shards, e),
                mooncake_meta_master_new(cfg, &mut m, e),
            ] {
                assert_eq!(st, MOONCAKE_META_OK);
            }
            mooncake_meta_config_free(cfg);
        }
        let cm = CMaster(m);
        for (i, (name, pool)) in [("mem0", Pool::Memory), ("nof0", Pool::NofSsd)]
            .into_iter()
            .enumerate()
        {
            let spec = SegmentSpec {
                name: name.into(),
                base: (i as u64 + 1) << 40,
                size: 1 << 24,
                pool,
            };
            cm.rust().mount_segment(C1, &spec).unwrap();
        }
        cm
    }

    /// The master behind the handle, to build states and compare them.
    fn rust(&self) -> &Master {
        // SAFETY: live until drop.
        unsafe { master_ref(self.0) }
    }
}

impl Drop for CMaster {
    fn drop(&mut self) {
        // SAFETY: created by master_new, freed once.
        unsafe { mooncake_meta_master_free(self.0) };
    }
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Missing,
    Complete,
    InFlight,
    Partial,
    Leased,
    Copying,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Missing),
        Just(Shape::Complete),
        Just(Shape::InFlight),
        Just(Shape::Partial),
        Just(Shape::Leased),
        Just(Shape::Copying),
    ]
}

fn name(i: usize) -> String {
    format!("c/batch/{i}")
}

fn build(shards: u64, shapes: &[Shape]) -> CMaster {
    let cm = CMaster::new(shards);
    let m = cm.rust();
    for (i, s) in shapes.iter().enumerate() {
        let n = name(i);
        let key = Key::new(&n);
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
    cm
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Exist,
    /// Batch GetReplicaList with `cap` = the total needed + this, minus 2
    /// (so the batch is sometimes refused as too small).
    Get(usize),
    Remove(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Exist),
        (0usize..5).prop_map(Op::Get),
        any::<bool>().prop_map(Op::Remove),
    ]
}

/// Per key: status and what the call wrote for it.
type Outcome = Vec<(mooncake_meta_status, Vec<mooncake_meta_replica>, c_int)>;

fn singles(m: &CMaster, names: &[String], op: Op) -> Outcome {
    let e = null_mut();
    names
        .iter()
        .map(|n| {
            let (p, l) = (n.as_ptr().cast(), n.len());
            // SAFETY: valid key bytes and out-pointers; NULL tenant = default.
            unsafe {
                match op {
                    Op::Exist => {
                        let mut out: c_int = -1;
                        let st = mooncake_meta_exist(m.0, null(), 0, p, l, &mut out, e);
                        (st, Vec::new(), if st == MOONCAKE_META_OK { out } else { 0 })
                    }
                    Op::Get(_) => {
                        let mut buf = [EMPTY; MAX_REPLICAS];
                        let mut len = 0;
                        let st = mooncake_meta_get_replica_list(
                            m.0,
                            null(),
                            0,
                            p,
                            l,
                            buf.as_mut_ptr(),
                            buf.len(),
                            &mut len,
                            e,
                        );
                        let got = if st == MOONCAKE_META_OK { len } else { 0 };
                        (st, buf[..got].to_vec(), 0)
                    }
                    Op::Remove(force) => {
                        let st = mooncake_meta_remove(m.0, null(), 0, p, l, c_int::from(force), e);
                        (st, Vec::new(), 0)
                    }
                }
            }
        })
        .collect()
}

/// Runs the batch form; for Get, `cap` replicas of room.
fn batch(
    m: &CMaster,
    names: &[String],
    op: Op,
    cap: usize,
) -> (mooncake_meta_status, Outcome, usize) {
    let ptrs: Vec<*const std::os::raw::c_char> = names.iter().map(|n| n.as_ptr().cast()).collect();
    let lens: Vec<usize> = names.iter().map(String::len).collect();
    let count = names.len();
    let mut statuses = vec![1i32; count];
    let e = null_mut();
    // SAFETY: every array holds `count` entries (or `cap` replicas).
    unsafe {
        match op {
            Op::Exist => {
                let mut exists = vec![7u8; count];
                let st = mooncake_meta_batch_exist(
                    m.0,
                    null(),
                    0,
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    count,
                    exists.as_mut_ptr(),
                    statuses.as_mut_ptr(),
                    e,
                );
                let out = statuses
                    .iter()
                    .zip(&exists)
                    .map(|(&s, &x)| (s, Vec::new(), c_int::from(x)))
                    .collect();
                (st, out, 0)
            }
            Op::Get(_) => {
                let mut replicas = vec![EMPTY; cap];
                let mut counts = vec![usize::MAX; count];
                let mut len = usize::MAX;
                let st = mooncake_meta_batch_get_replica_list(
                    m.0,
                    null(),
                    0,
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    count,
                    replicas.as_mut_ptr(),
                    cap,
                    counts.as_mut_ptr(),
                    &mut len,
                    statuses.as_mut_ptr(),
                    e,
                );
                if st == MOONCAKE_META_BUFFER_TOO_SMALL && statuses.iter().all(|&s| s == st) {
                    return (st, Vec::new(), len);
                }
                let mut at = 0;
                let out = statuses
                    .iter()
                    .zip(&counts)
                    .map(|(&s, &c)| {
                        let v = replicas[at..at + c].to_vec();
                        at += c;
                        (s, v, 0)
                    })
                    .collect();
                assert_eq!(at, len, "out_len is the sum of the counts");
                (st, out, len)
            }
            Op::Remove(force) => {
                let st = mooncake_meta_batch_remove(
                    m.0,
                    null(),
                    0,
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    count,
                    c_int::from(force),
                    statuses.as_mut_ptr(),
                    e,
                );
                (
                    st,
                    statuses.iter().map(|&s| (s, Vec::new(), 0)).collect(),
                    0,
                )
            }
        }
    }
}

fn check(shards: u64, shapes: &[Shape], ops: &[(Op, Vec<usize>)]) {
    let one = build(shards, shapes);
    let many = build(shards, shapes);
    assert!(
        one.rust().capture() == many.rust().capture(),
        "the build is not deterministic"
    );
    for (op, picks) in ops {
        let names: Vec<String> = picks.iter().map(|&i| name(i)).collect();
        let want = singles(&one, &names, *op);
        let needed: usize = want.iter().map(|w| w.1.len()).sum();
        let cap = match op {
            Op::Get(extra) => (needed + extra).saturating_sub(2),
            _ => 0,
        };
        let before = many.rust().capture();
        let (st, got, len) = batch(&many, &names, *op, cap);
        if cap < needed {
            assert_eq!(st, MOONCAKE_META_BUFFER_TOO_SMALL);
            assert_eq!(len, needed, "out_len = the total needed");
            assert!(
                before == many.rust().capture(),
                "a refused batch changed the state"
            );
            // Read again with room for all, so the two masters end the
            // step in the same state.
            let (_, got, _) = batch(&many, &names, *op, needed);
            assert_eq!(got, want, "{op:?} over {picks:?}");
        } else {
            assert_eq!(got, want, "{op:?} over {picks:?}");
            let first_failure = want
                .iter()
                .map(|w| w.0)
                .find(|&s| s != MOONCAKE_META_OK)
                .unwrap_or(MOONCAKE_META_OK);
            assert_eq!(
                st, first_failure,
                "the call returns the first key's failure"
            );
            if let Op::Get(_) = op {
                assert_eq!(len, needed);
            }
        }
        assert!(
            one.rust().capture() == many.rust().capture(),
            "{op:?} left another state"
        );
        for m in [&one, &many] {
            m.rust().advance_time(LEASE / 3).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn c_batch_calls_equal_the_loop_of_single_calls(
        shards in prop_oneof![Just(1u64), Just(1024)],
        shapes in prop::collection::vec(shape(), 1..16),
        ops in prop::collection::vec(
            (op(), prop::collection::vec(0usize..20, 0..150)),
            1..6,
        ),
    ) {
        check(shards, &shapes, &ops);
    }
}
