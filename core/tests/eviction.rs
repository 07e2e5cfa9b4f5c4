//! docs/CONTRACT.md §5 memory eviction (and §4.7 soft-pin priority): base,
//! candidates ordered by (lease, creation sequence), first pass, second pass
//! with the discarded-replica credit, hard pin and live leases never,
//! memory-only freeing, exact counts, the soft-pin cases of the RFC and the
//! `evict_if_needed` trigger formulas. Groups are in tests/groups.rs.
mod common;
use common::*;
use mooncake_meta_core::*;

const RELEASE: u64 = 600_000;

fn keys(m: &Master) -> Vec<String> {
    m.list_keys("default", "", None, 0).unwrap().keys
}

fn names(prefix: &str, ids: impl IntoIterator<Item = usize>) -> Vec<String> {
    let mut v: Vec<String> = ids.into_iter().map(|i| format!("{prefix}{i}")).collect();
    v.sort();
    v
}

fn hard() -> WriteConfig {
    WriteConfig {
        hard_pin: true,
        ..WriteConfig::default()
    }
}

fn big() -> Master {
    master_with(config(), 1, 1, 1 << 24)
}

// ----- order -----------------------------------------------------------------

#[test]
fn eviction_ties_are_broken_by_creation_sequence() {
    // §5: candidates ordered by (lease, creation sequence): equal leases → oldest first
    let m = big();
    for i in 0..8 {
        put(&m, &format!("k{i}"), 64, &preserve());
    }
    let r = m.run_eviction(0.375, 0.0).unwrap();
    assert_eq!((r.base, r.candidates, r.evicted), (8, 8, 3));
    assert_eq!(keys(&m), names("k", 3..8));
    inv(&m);
}

#[test]
fn eviction_order_is_lease_before_creation_sequence() {
    // §5: an older lease goes first even when the object is younger
    let m = big();
    for i in 0..4 {
        put(&m, &format!("a{i}"), 64, &preserve()); // lease T0
    }
    m.advance_time(1).unwrap();
    for i in 0..4 {
        put(&m, &format!("b{i}"), 64, &preserve()); // lease T0 + 1
    }
    m.get_replica_list(k("a0")).unwrap(); // lease T0 + 1 + LEASE
    m.advance_time(LEASE + 1).unwrap();
    let r = m.run_eviction(0.5, 0.0).unwrap();
    assert_eq!(r.evicted, 4);
    let mut expected = vec!["a0".to_string()];
    expected.extend(names("b", 1..4));
    assert_eq!(keys(&m), expected);
    inv(&m);
}

#[test]
fn case_b_keeps_the_creation_sequence_and_case_c_renews_it() {
    // preamble: case B keeps the sequence; case C gets a new one (eviction tie-break)
    let m = big();
    for i in 0..4 {
        put(&m, &format!("x{i}"), 64, &preserve());
    }
    upsert(&m, "x0", 64, &preserve()); // B: still the oldest
    upsert(&m, "x1", 32, &preserve()); // C: now the youngest
    let r = m.run_eviction(0.75, 0.0).unwrap();
    assert_eq!(r.evicted, 3);
    assert_eq!(keys(&m), ["x1"]);
    inv(&m);
}

// ----- passes and lowerbound ---------------------------------------------------

#[test]
fn first_pass_stops_at_the_target() {
    // §5: first pass evicts until ceil(base × target); lowerbound already reached → no second pass
    let m = big();
    for i in 0..8 {
        put(&m, &format!("k{i}"), 64, &preserve());
    }
    let r = m.run_eviction(0.5, 0.25).unwrap();
    assert_eq!(r.evicted, 4);
    assert_eq!(keys(&m), names("k", 4..8));
}

#[test]
fn second_pass_reaches_the_lowerbound() {
    // §5: the second pass runs only below the lowerbound and takes unpinned candidates first
    let m = big();
    for i in 0..8 {
        put(&m, &format!("k{i}"), 64, &preserve());
    }
    // target 0 → first pass evicts nothing; lowerbound 0.5 → 4
    let r = m.run_eviction(0.0, 0.5).unwrap();
    assert_eq!((r.evicted, r.evicted_pinned), (4, 0));
    assert_eq!(keys(&m), names("k", 4..8));
    inv(&m);
}

#[test]
fn second_pass_credits_discarded_replicas_released() {
    // §5: need = ceil(base × lowerbound) − evicted − discarded replicas released
    let m = big();
    for i in 0..8 {
        put(&m, &format!("u{i}"), 64, &preserve());
    }
    upsert(&m, "u0", 32, &preserve()); // case C: the old buffer is discarded
    upsert(&m, "u1", 32, &preserve());
    assert_eq!(m.metrics().discarded_staging_bytes, 128);
    // not yet due: no credit
    let r = m.run_eviction(0.0, 0.25).unwrap();
    assert_eq!((r.discarded_released, r.evicted), (0, 2));
    assert_eq!(keys(&m), names("u", [0, 1, 4, 5, 6, 7]));
    // due: both released at the start of the run and credited
    m.advance_time(RELEASE).unwrap();
    let r = m.run_eviction(0.0, 0.5).unwrap();
    assert_eq!(r.base, 6);
    assert_eq!((r.discarded_released, r.evicted), (2, 1));
    assert_eq!(keys(&m), names("u", [0, 1, 5, 6, 7]));
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    inv(&m);
}

#[test]
fn second_pass_credits_discarded_buffers_of_both_pools() {
    // docs/CONTRACT.md §3.3 deliberate choice: the credit counts every discarded
    // buffer the run released, second-pool (NOF_SSD) ones included, though
    // eviction itself frees memory only
    let m = big();
    for i in 0..8 {
        put(&m, &format!("u{i}"), 64, &preserve());
    }
    let nof_only = WriteConfig {
        memory_replicas: 0,
        nof_ssd_replicas: 1,
        ..preserve()
    };
    put(&m, "n", 64, &nof_only); // not in the base: no memory replica
    upsert(&m, "n", 32, &nof_only); // case C: its NOF_SSD buffer is discarded
    assert_eq!(m.metrics().discarded_staging_bytes, 64);
    m.advance_time(RELEASE).unwrap();
    // need ceil(8 × 0.25) = 2, of which the released NOF_SSD buffer is one
    let r = m.run_eviction(0.0, 0.25).unwrap();
    assert_eq!(r.base, 8);
    assert_eq!((r.discarded_released, r.evicted), (1, 1));
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    assert_eq!(m.key_count(), 8);
    inv(&m);
}

#[test]
fn twenty_objects_ten_pinned_target_and_lowerbound_point_eight() {
    // RFC/§5: 20 objects (10 pinned), target 0.8, lowerbound 0.8 →
    // all 10 unpinned and the 6 oldest-lease pinned go
    let m = big();
    for i in 0..10 {
        put(&m, &format!("p{i}"), 64, &enable(MAX_TTL));
    }
    for i in 0..10 {
        put(&m, &format!("u{i}"), 64, &preserve());
    }
    // leases in the reverse of creation order: p9 gets the oldest lease
    for i in (0..10).rev() {
        m.advance_time(1).unwrap();
        m.exist(k(&format!("p{i}"))).unwrap();
    }
    m.advance_time(LEASE + 1).unwrap();
    assert_eq!(gauge(&m), 10);
    let r = m.run_eviction(0.8, 0.8).unwrap();
    assert_eq!((r.base, r.candidates), (20, 20));
    assert_eq!((r.evicted, r.evicted_pinned), (16, 6));
    assert_eq!(keys(&m), names("p", 0..4));
    assert_eq!(gauge(&m), 4);
    assert_eq!(m.index_sizes().1, 4);
    inv(&m);
}

#[test]
fn first_pass_never_takes_an_active_pin() {
    // §5: the first pass skips actively pinned candidates even when it misses the target
    let m = big();
    for i in 0..4 {
        put(&m, &format!("p{i}"), 64, &enable(MAX_TTL));
    }
    put(&m, "u", 64, &preserve());
    let r = m.run_eviction(1.0, 0.0).unwrap();
    assert_eq!((r.evicted, r.evicted_pinned), (1, 0));
    assert_eq!(keys(&m), names("p", 0..4));
}

#[test]
fn pinned_objects_never_go_when_not_allowed_even_with_memory_full() {
    // §5/§9: allow_evict_soft_pinned_objects = false → active pins are never evicted;
    // a full memory gives NO_AVAILABLE_HANDLE, no crash
    let m = master_with(
        MasterConfig {
            allow_evict_soft_pinned_objects: false,
            ..config()
        },
        1,
        0,
        1024,
    );
    for i in 0..16 {
        put(&m, &format!("p{i}"), 64, &enable(MAX_TTL));
    }
    assert_eq!(
        code(m.put_start(C1, k("new"), 64, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    let r = m
        .evict_if_needed(true)
        .expect("memory is above the watermark");
    assert_eq!(r.evicted, 0);
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.candidates, r.evicted), (16, 16, 0));
    assert_eq!(m.key_count(), 16);
    assert_eq!(
        code(m.put_start(C1, k("new"), 64, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    // once the pins expire they protect nothing
    m.advance_time(MAX_TTL).unwrap();
    assert_eq!(m.run_eviction(0.25, 0.0).unwrap().evicted, 4);
    m.put_start(C1, k("new"), 64, &preserve()).unwrap();
    inv(&m);
}

#[test]
fn expired_pins_protect_nothing_before_cleanup_and_eviction_normalises_them() {
    // §4.7: pin evaluated as now < deadline; an eviction run clears (gauge −1, unregister)
    // every expired deadline of the candidates it examines, never of leased objects
    let m = big();
    put(&m, "e0", 64, &enable(100));
    put(&m, "e1", 64, &enable(100));
    put(&m, "leased", 64, &enable(100));
    put(
        &m,
        "hard",
        64,
        &WriteConfig {
            hard_pin: true,
            ..enable(100)
        },
    );
    m.advance_time(100).unwrap();
    m.exist(k("leased")).unwrap();
    assert_eq!(gauge(&m), 4, "stored but expired until normalised");
    // target 1/3 of base 3 → 1 in the first pass: the expired pin does not protect e0
    let r = m.run_eviction(1.0 / 3.0, 0.0).unwrap();
    assert_eq!(
        (r.base, r.candidates, r.evicted, r.normalised),
        (3, 2, 1, 2)
    );
    assert_eq!(keys(&m), ["e1", "hard", "leased"]);
    assert_eq!(deadline(&m, "e1"), None, "examined candidate normalised");
    assert_eq!(
        deadline(&m, "leased"),
        Some(T0 + 100),
        "live lease: untouched"
    );
    assert_eq!(
        deadline(&m, "hard"),
        Some(T0 + 100),
        "hard pin: not a candidate"
    );
    assert_eq!(gauge(&m), 2);
    assert_eq!(m.index_sizes().1, 2);
    inv(&m);
    // cleanup takes the rest
    assert_eq!(m.run_cleanup().expired, 2);
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

// ----- what is never evicted, what is freed -----------------------------------

#[test]
fn hard_pinned_objects_are_never_evicted() {
    // §2/§5: hard pin → never evicted, not even in the eviction base
    let m = big();
    for i in 0..4 {
        put(&m, &format!("h{i}"), 64, &hard());
    }
    put(&m, "u", 64, &preserve());
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.evicted), (1, 1));
    assert_eq!(keys(&m), names("h", 0..4));
    // upsert case C ORs the hard pin: still never evicted
    upsert(&m, "h0", 32, &preserve());
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 0);
    inv(&m);
}

#[test]
fn live_leases_are_never_evicted_but_count_in_the_base() {
    // §5: base includes leased objects; candidates exclude live leases
    let m = big();
    for i in 0..4 {
        put(&m, &format!("k{i}"), 64, &preserve());
    }
    m.get_replica_list(k("k1")).unwrap();
    m.exist(k("k2")).unwrap();
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.candidates, r.evicted), (4, 2, 2));
    assert_eq!(keys(&m), ["k1", "k2"]);
    m.advance_time(LEASE - 1).unwrap();
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 0);
    m.advance_time(1).unwrap();
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 2);
    inv(&m);
}

#[test]
fn eviction_frees_memory_replicas_only_and_the_object_survives() {
    // §2/§5: NOF_SSD and LOCAL_DISK replicas stay; the object goes only when nothing is left
    let m = master_with(config(), 2, 1, 1 << 20);
    put(
        &m,
        "mixed",
        100,
        &WriteConfig {
            memory_replicas: 2,
            nof_ssd_replicas: 1,
            ..WriteConfig::default()
        },
    );
    m.add_local_disk_replica(C2, k("mixed"), 100).unwrap();
    put(
        &m,
        "nof_only",
        100,
        &WriteConfig {
            memory_replicas: 0,
            nof_ssd_replicas: 1,
            ..WriteConfig::default()
        },
    );
    put(
        &m,
        "mem_only",
        100,
        &WriteConfig {
            memory_replicas: 2,
            ..WriteConfig::default()
        },
    );
    let before = m.metrics();
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.evicted, r.evicted_bytes), (2, 2, 400));
    assert_eq!(keys(&m), ["mixed", "nof_only"]);
    let left: Vec<ReplicaKind> = m
        .get_replica_list(k("mixed"))
        .unwrap()
        .iter()
        .map(|d| d.kind)
        .collect();
    assert_eq!(left, [ReplicaKind::NofSsd, ReplicaKind::LocalDisk]);
    let after = m.metrics();
    assert_eq!(after.memory_allocated_bytes, 0);
    assert_eq!(
        after.nof_ssd_allocated_bytes,
        before.nof_ssd_allocated_bytes
    );
    // nothing left to evict: the survivors are not in the base
    m.advance_time(LEASE).unwrap();
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().base, 0);
    inv(&m);
}

#[test]
fn objects_being_written_are_not_in_the_base() {
    // §5: base = objects with an evictable memory replica (COMPLETE, readable, not busy)
    let m = big();
    m.put_start(C1, k("writing"), 64, &preserve()).unwrap();
    put(&m, "mid_b", 64, &preserve());
    m.upsert_start(C1, k("mid_b"), 64, &preserve()).unwrap();
    put(&m, "done", 64, &preserve());
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.evicted), (1, 1));
    assert_eq!(keys(&m), ["mid_b", "writing"]);
    inv(&m);
}

#[test]
fn eviction_counts_are_exact() {
    // §5/§10: report and metrics count objects and bytes exactly
    let m = big();
    for i in 0..10 {
        put(&m, &format!("k{i}"), 100 + i as u64, &preserve());
    }
    let r = m.run_eviction(0.25, 0.0).unwrap(); // ceil(2.5) = 3
    assert_eq!((r.evicted, r.evicted_bytes), (3, 100 + 101 + 102));
    let mt = m.metrics();
    assert_eq!((mt.eviction_attempts, mt.eviction_successes), (1, 1));
    assert_eq!((mt.evicted_keys, mt.evicted_bytes), (3, 303));
    assert_eq!(mt.key_count, 7);
    // a run that frees nothing is an attempt, not a success
    let r = m.run_eviction(0.0, 0.0).unwrap();
    assert_eq!(r.evicted, 0);
    let mt = m.metrics();
    assert_eq!(
        (mt.eviction_attempts, mt.eviction_successes, mt.evicted_keys),
        (2, 1, 3)
    );
    assert_eq!(
        code(m.run_eviction(1.5, 0.0)),
        ErrorKind::InvalidParams,
        "ratios outside [0, 1]"
    );
    assert_eq!(code(m.run_eviction(0.5, -0.1)), ErrorKind::InvalidParams);
    inv(&m);
}

#[test]
fn counts_use_the_exact_decimal_ceiling() {
    // §5: ceil(base × target) for the ratio as written: 100 × 0.07 is 7, not 8
    for (target, lower, want) in [
        (0.07, 0.0, 7),
        (0.0, 0.07, 7),
        (0.57, 0.0, 57),
        (0.071, 0.0, 8),
    ] {
        let m = big();
        for i in 0..100 {
            put(&m, &format!("k{i:03}"), 8, &preserve());
        }
        let r = m.run_eviction(target, lower).unwrap();
        assert_eq!(r.evicted, want, "target {target}, lowerbound {lower}");
    }
}

// ----- trigger -----------------------------------------------------------------

fn trigger_master(cfg: MasterConfig, objects: usize, c: &WriteConfig) -> Master {
    // one 1000-byte memory segment, `objects` objects of 10 bytes
    let m = master_with(cfg, 1, 0, 1000);
    for i in 0..objects {
        put(&m, &format!("k{i:03}"), 10, c);
    }
    m
}

#[test]
fn evict_if_needed_does_nothing_below_the_watermark() {
    // §5: trigger only when used/capacity > high watermark (or forced)
    let m = trigger_master(config(), 90, &preserve());
    assert_eq!(m.evict_if_needed(false), None, "0.90 is not above 0.90");
    assert_eq!(m.metrics().eviction_attempts, 0);
    assert_eq!(m.key_count(), 90);
}

#[test]
fn evict_if_needed_above_the_watermark_uses_the_target_formula() {
    // §5: target = max(ratio, used − hwm + ratio): used 0.95 → 0.10 of base 95 → 10
    let m = trigger_master(config(), 95, &preserve());
    let r = m.evict_if_needed(false).expect("above the watermark");
    assert_eq!((r.base, r.evicted), (95, 10));
    assert_eq!(m.key_count(), 85);
    assert_eq!(m.evict_if_needed(false), None, "0.85: below again");
    inv(&m);
}

#[test]
fn evict_if_needed_lowerbound_formula_reaches_pinned_objects() {
    // §5: lowerbound = max(target / 2, used − hwm): all pinned, used 0.96 →
    // first pass evicts nothing, second pass ceil(96 × 0.06) = 6 pinned
    let m = trigger_master(config(), 96, &enable(MAX_TTL));
    let r = m.evict_if_needed(false).expect("above the watermark");
    assert_eq!((r.evicted, r.evicted_pinned), (6, 6));
    assert_eq!(gauge(&m), 90);
    inv(&m);
}

#[test]
fn evict_if_needed_derives_the_lowerbound_from_the_uncapped_target() {
    // §5: target = max(ratio, used − hwm + ratio) and lowerbound =
    // max(target / 2, used − hwm), both capped at 1 only when used: ratio
    // 0.9, hwm 0.1, used 0.5 → target 1.3 (every unprotected object) and
    // lowerbound max(0.65, 0.4) = 0.65 → ceil(50 × 0.65) = 33 of 50, the
    // 20 unpinned ones and then 13 pinned (a target capped first would
    // give a lowerbound of 0.5: 25)
    let cfg = MasterConfig {
        eviction_ratio: 0.9,
        eviction_high_watermark_ratio: 0.1,
        allow_evict_soft_pinned_objects: true,
        ..config()
    };
    let m = trigger_master(cfg, 20, &preserve());
    for i in 20..50 {
        put(&m, &format!("k{i:03}"), 10, &enable(MAX_TTL));
    }
    let r = m.evict_if_needed(false).expect("above the watermark");
    assert_eq!((r.base, r.evicted, r.evicted_pinned), (50, 33, 13));
    inv(&m);
}

#[test]
fn evict_if_needed_forced_after_allocation_failure_needs_a_positive_ratio() {
    // §5: an allocation failure triggers eviction when eviction_ratio > 0:
    // used 0.5 → target = ratio 0.05 → ceil(50 × 0.05) = 3
    let m = trigger_master(config(), 50, &preserve());
    assert_eq!(m.evict_if_needed(false), None);
    let r = m.evict_if_needed(true).expect("forced");
    assert_eq!(r.evicted, 3);
    assert_eq!(keys(&m)[0], "k003", "the oldest went");
    let m = trigger_master(
        MasterConfig {
            eviction_ratio: 0.0,
            ..config()
        },
        50,
        &preserve(),
    );
    assert_eq!(m.evict_if_needed(true), None);
    assert_eq!(m.metrics().eviction_attempts, 0);
    // no memory mounted: nothing to do
    let empty = Master::new(config()).unwrap();
    assert_eq!(empty.evict_if_needed(true), None);
}
