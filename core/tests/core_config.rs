//! docs/CONTRACT.md §9 configuration (defaults and rules: a bad config is a clear
//! INVALID_PARAMS at creation, never a panic) and §1 clock (manual clock is
//! monotonic and never reaches MAX_INSTANT; CLOCK_UNSUPPORTED on a
//! system-clock master or when set backwards).
mod common;
use common::*;
use mooncake_meta_core::*;

fn rejected(c: MasterConfig, field: &str) {
    match Master::new(c) {
        Ok(_) => panic!("config with a bad {field} was accepted"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidParams, "{field}: {e}");
            assert!(
                e.message().contains(field),
                "message should name {field}: {e}"
            );
        }
    }
}

#[test]
fn defaults_match_section_9() {
    // §9: the documented defaults
    let c = MasterConfig::default();
    assert_eq!(c.default_kv_lease_ttl_ms, 10_000);
    assert_eq!(c.default_kv_soft_pin_ttl_ms, 1_800_000);
    assert_eq!(c.max_kv_soft_pin_ttl_ms, 86_400_000);
    assert!(c.allow_evict_soft_pinned_objects);
    assert_eq!(c.eviction_ratio, 0.05);
    assert_eq!(c.eviction_high_watermark_ratio, 0.90);
    assert_eq!(c.put_start_discard_timeout_ms, 30_000);
    assert_eq!(c.put_start_release_timeout_ms, 600_000);
    assert_eq!(c.soft_pin_cleanup_interval_ms, 1_000);
    assert_eq!(c.eviction_check_interval_ms, 10);
    assert_eq!(c.shard_count, 1024);
    assert_eq!(c.clock, ClockSource::System);
    let d = MasterConfig::deterministic(5);
    assert_eq!(
        (
            d.soft_pin_cleanup_interval_ms,
            d.eviction_check_interval_ms,
            d.sweep_interval_ms
        ),
        (0, 0, 0)
    );
    assert_eq!(Master::new(d).unwrap().now(), 5);
}

#[test]
fn master_new_invalid_params_for_default_ttl_above_max() {
    // §3/§9: default soft-pin TTL above the maximum → INVALID_PARAMS at master creation
    rejected(
        MasterConfig {
            default_kv_soft_pin_ttl_ms: 11,
            max_kv_soft_pin_ttl_ms: 10,
            ..config()
        },
        "default_kv_soft_pin_ttl",
    );
    // equal is fine
    Master::new(MasterConfig {
        default_kv_soft_pin_ttl_ms: 10,
        max_kv_soft_pin_ttl_ms: 10,
        ..config()
    })
    .unwrap();
}

#[test]
fn master_new_invalid_params_for_eviction_ratio_outside_0_1() {
    // §9: eviction_ratio in [0, 1]
    for r in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
        rejected(
            MasterConfig {
                eviction_ratio: r,
                ..config()
            },
            "eviction_ratio",
        );
    }
    for r in [0.0, 1.0] {
        Master::new(MasterConfig {
            eviction_ratio: r,
            ..config()
        })
        .unwrap();
    }
}

#[test]
fn master_new_invalid_params_for_watermark_outside_0_1() {
    // §9: eviction_high_watermark_ratio in (0, 1]
    for r in [0.0, -1.0, 1.5, f64::NAN] {
        rejected(
            MasterConfig {
                eviction_high_watermark_ratio: r,
                ..config()
            },
            "eviction_high_watermark_ratio",
        );
    }
    Master::new(MasterConfig {
        eviction_high_watermark_ratio: 1.0,
        ..config()
    })
    .unwrap();
}

#[test]
fn master_new_invalid_params_when_release_does_not_exceed_discard() {
    // §9: put_start_release_timeout > put_start_discard_timeout
    for (d, r) in [(30_000, 30_000), (30_000, 29_999)] {
        rejected(
            MasterConfig {
                put_start_discard_timeout_ms: d,
                put_start_release_timeout_ms: r,
                ..config()
            },
            "put_start_release_timeout",
        );
    }
}

#[test]
fn master_new_invalid_params_for_zero_shards() {
    // §9: shard count >= 1
    rejected(
        MasterConfig {
            shard_count: 0,
            ..config()
        },
        "shard_count",
    );
    let m = master_with(
        MasterConfig {
            shard_count: 1,
            ..config()
        },
        1,
        0,
        1 << 20,
    );
    for i in 0..10 {
        put(&m, &format!("k{i}"), 64, &preserve());
    }
    inv(&m);
}

#[test]
fn master_new_invalid_params_for_a_manual_clock_at_max_instant() {
    // §1: the manual clock can never reach MAX_INSTANT
    let e = Master::new(MasterConfig::deterministic(MAX_INSTANT))
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidParams);
    Master::new(MasterConfig::deterministic(MAX_INSTANT - 1)).unwrap();
}

#[test]
fn manual_clock_clock_unsupported_when_set_backwards() {
    // §1/§3: the manual clock is monotonic; setting it earlier → CLOCK_UNSUPPORTED, unchanged
    let m = master();
    m.advance_time(10).unwrap();
    assert_eq!(code(m.set_time(T0 + 9)), ErrorKind::ClockUnsupported);
    assert_eq!(m.now(), T0 + 10);
    m.set_time(T0 + 10).unwrap();
    m.set_time(T0 + 20).unwrap();
    assert_eq!(m.advance_time(0).unwrap(), T0 + 20);
}

#[test]
fn manual_clock_never_reaches_max_instant() {
    // §1: saturated deadlines never become due because the clock cannot reach MAX_INSTANT
    let m = master();
    // §1: reaching MAX_INSTANT is INVALID_PARAMS (going backwards is
    // CLOCK_UNSUPPORTED), and the clock does not move.
    assert_eq!(code(m.set_time(MAX_INSTANT)), ErrorKind::InvalidParams);
    assert_eq!(code(m.advance_time(MAX_INSTANT)), ErrorKind::InvalidParams);
    assert_eq!(m.now(), T0);
    m.set_time(MAX_INSTANT - 1).unwrap();
    assert_eq!(code(m.advance_time(1)), ErrorKind::InvalidParams);
    assert_eq!(m.now(), MAX_INSTANT - 1);
}

#[test]
fn system_clock_master_clock_unsupported_for_manual_calls() {
    // §3: a manual-clock call on a system-clock master → CLOCK_UNSUPPORTED
    let m = Master::new(MasterConfig {
        soft_pin_cleanup_interval_ms: 0,
        eviction_check_interval_ms: 0,
        sweep_interval_ms: 0,
        ..MasterConfig::default()
    })
    .unwrap();
    let now = m.now();
    assert!(now > 1_600_000_000_000, "system time in ms since the epoch");
    assert_eq!(code(m.set_time(now + 1_000)), ErrorKind::ClockUnsupported);
    assert_eq!(code(m.advance_time(1)), ErrorKind::ClockUnsupported);
}

#[test]
fn expected_objects_presizes_every_shard_for_its_share() {
    // §9: expected_objects pre-sizes each shard's table for ceil(n / shards); 0 = none
    let plain = Master::new(MasterConfig {
        shard_count: 16,
        ..config()
    })
    .unwrap();
    assert!(plain.debug_object_capacity().iter().all(|&c| c == 0));
    let cfg = MasterConfig {
        shard_count: 16,
        expected_objects: 10_001,
        ..config()
    };
    assert_eq!(cfg.objects_per_shard().unwrap(), 626);
    let m = master_with(cfg, 1, 0, 1 << 24);
    let caps = m.debug_object_capacity();
    assert_eq!(caps.len(), 16);
    assert!(caps.iter().all(|&c| c >= 626), "{caps:?}");
    for i in 0..100 {
        put(&m, &format!("k{i}"), 64, &enable(60_000));
    }
    assert_eq!((m.key_count(), gauge(&m)), (100, 100));
    inv(&m);
    // A restore stages presized shards too: the capacity asked for stays.
    let snap = m.snapshot().unwrap();
    m.restore(&snap).unwrap();
    assert!(m.debug_object_capacity().iter().all(|&c| c >= 626));
    assert_eq!((m.key_count(), gauge(&m)), (100, 100));
    inv(&m);
}

#[test]
fn commit_presized_carves_every_shard_from_a_committed_region() {
    // §9: commit_presized allocates the presized tables at creation, in one
    // region; the master behaves exactly as an uncommitted one, past its
    // share, through a restore and as a standby
    let plain = Master::new(MasterConfig {
        shard_count: 16,
        expected_objects: 1_000,
        ..config()
    })
    .unwrap();
    assert!(plain.debug_region_bytes().iter().all(|&b| b == 0));
    let unpresized = Master::new(MasterConfig {
        shard_count: 16,
        commit_presized: true,
        ..config()
    })
    .unwrap();
    assert!(
        unpresized.debug_region_bytes().iter().all(|&b| b == 0),
        "nothing to commit without expected_objects"
    );
    let cfg = MasterConfig {
        shard_count: 16,
        expected_objects: 3_000,
        commit_presized: true,
        ..config()
    };
    let m = master_with(cfg.clone(), 1, 0, 1 << 24);
    let region = m.debug_region_bytes();
    assert!(region.iter().all(|&b| b > 0), "{region:?}");
    assert!(m.debug_object_capacity().iter().all(|&c| c >= 188));
    // Past the expected count (about 2 x the share a shard): the heap.
    for i in 0..6_000 {
        put(&m, &format!("k{i}"), 64, &enable(60_000));
    }
    assert_eq!((m.key_count(), gauge(&m)), (6_000, 6_000));
    // The segment's block slots lie in the region made for them (sized
    // for 3 000, rounded up to a huge page).
    let slot_bytes = m.debug_block_region_bytes();
    assert_eq!(slot_bytes.len(), 1);
    assert!(slot_bytes[0] >= 3 * 1024 * 32, "{slot_bytes:?}");
    plain
        .mount_segment(C1, &spec("mem0", 0, 1 << 24, Pool::Memory))
        .unwrap();
    put(&plain, "k", 64, &enable(60_000));
    assert_eq!(plain.debug_block_region_bytes(), [0], "not committed");
    inv(&m);
    for i in (0..6_000).filter(|i| i % 6 != 0) {
        m.remove(k(&format!("k{i}")), false).unwrap();
    }
    assert_eq!(m.key_count(), 1_000);
    inv(&m);
    // The restore stages its shards in a region of their own; the objects
    // fit their shares, so each shard stays in it.
    let snap = m.snapshot().unwrap();
    m.restore(&snap).unwrap();
    assert_eq!(m.key_count(), 1_000);
    assert_eq!(m.debug_region_bytes(), region);
    assert!((0..6_000)
        .step_by(6)
        .all(|i| m.exist(k(&format!("k{i}"))).unwrap()));
    // The restore's segment table carves from a region of its own.
    assert!(m.debug_block_region_bytes()[0] > 0);
    inv(&m);
    let standby = Master::new(MasterConfig {
        standby: true,
        ..cfg
    })
    .unwrap();
    assert!(standby.debug_region_bytes().iter().all(|&b| b > 0));
}

#[test]
fn expected_objects_above_the_bound_is_invalid_params() {
    // §9: expected_objects <= MAX_EXPECTED_OBJECTS (2^32), so it never sizes an allocation unchecked
    assert_eq!(MAX_EXPECTED_OBJECTS, 1 << 32);
    for bad in [MAX_EXPECTED_OBJECTS + 1, u64::MAX] {
        let c = MasterConfig {
            expected_objects: bad,
            ..config()
        };
        let e = c.validate().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert_eq!(
            e.message(),
            format!("expected_objects {bad} exceeds the maximum 4294967296")
        );
        rejected(c, "expected_objects");
    }
    // The bound itself is valid with a share a shard holds (not built
    // here: it would reserve the tables), and the per-shard share rounds
    // up; one shard cannot hold 2^32 (a_share_no_shard_can_hold_...).
    let at_bound = MasterConfig {
        expected_objects: MAX_EXPECTED_OBJECTS,
        shard_count: 2,
        ..config()
    };
    at_bound.validate().unwrap();
    assert_eq!(at_bound.objects_per_shard().unwrap(), 1 << 31);
    let c = MasterConfig {
        expected_objects: 10,
        shard_count: 3,
        ..config()
    };
    assert_eq!(c.objects_per_shard().unwrap(), 4);
    assert_eq!(MasterConfig::default().expected_objects, 0);
}

/// §9: a share of `expected_objects` larger than one shard can index is
/// refused when the configuration is validated, not when the master is
/// created after `validate()` accepted it.
#[test]
fn a_share_no_shard_can_hold_is_refused_by_validate() {
    let one = MasterConfig {
        expected_objects: MAX_EXPECTED_OBJECTS,
        shard_count: 1,
        ..MasterConfig::default()
    };
    let e = one.validate().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
    assert!(e.message().contains("use more shards"), "{e}");
    let e = Master::new(one).err().expect("refused");
    assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
    // Three quarters of 2^32 per shard is the most a shard holds.
    let most = MasterConfig {
        expected_objects: 3 << 30,
        shard_count: 1,
        ..MasterConfig::default()
    };
    most.validate().unwrap();
    let past = MasterConfig {
        expected_objects: (3 << 30) + 1,
        ..most
    };
    assert_eq!(
        past.validate().unwrap_err().kind(),
        ErrorKind::InvalidParams
    );
    let two = MasterConfig {
        expected_objects: MAX_EXPECTED_OBJECTS,
        shard_count: 2,
        ..MasterConfig::default()
    };
    two.validate().unwrap();
}

/// Where 40 writes of one replica go on a system-clock master of 8
/// segments seeded by `seed`, after a restore of its own snapshot when
/// `restore`.
fn placements(seed: u64, restore: bool) -> Vec<String> {
    let cfg = MasterConfig {
        clock: ClockSource::System,
        seed: Some(seed),
        ..config()
    };
    let m = master_with(cfg, 8, 0, 1 << 24);
    if restore {
        let s = m.snapshot().unwrap();
        m.restore(&s).unwrap();
    }
    (0..40)
        .map(|i| {
            let w = m
                .put_start(C1, k(&format!("key{i}")), 4096, &WriteConfig::default())
                .unwrap();
            format!("{:?}", w.replicas[0].location)
        })
        .collect()
}

/// §9, the seed: a fixed seed makes placements repeat from run to run, a
/// restore included (a restore's segment table started from the clock's
/// instant: the whole-change review's reproduction), and another seed
/// places otherwise.
#[test]
fn a_fixed_seed_repeats_placements_across_a_restore() {
    for restore in [false, true] {
        let a = placements(7, restore);
        std::thread::sleep(std::time::Duration::from_millis(7));
        assert_eq!(a, placements(7, restore), "restore {restore}");
        assert_ne!(a, placements(8, restore), "restore {restore}");
    }
}
