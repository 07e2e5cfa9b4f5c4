//! Both write-configuration paths: the extended struct with the explicit
//! soft-pin action and TTL, and the legacy struct with upstream's
//! `with_soft_pin` bool (non-zero = ENABLE with the master's default TTL,
//! zero = PRESERVE).

mod common;

use common::*;
use mooncake_meta_sys::safe::*;
use mooncake_meta_sys::*;

fn deadline(m: &Master, key: &str) -> Option<u64> {
    m.soft_pin_deadline(Key::new(key)).unwrap()
}

// ENABLE with a TTL commits End's instant + TTL.
#[test]
fn extended_enable_with_ttl_commits_end_plus_ttl() {
    let m = master();
    put(&m, "k", &enable(Some(60_000)));
    assert_eq!(deadline(&m, "k"), Some(T0 + 60_000));
}

// ENABLE without a TTL takes the master's default soft-pin TTL.
#[test]
fn extended_enable_without_ttl_uses_the_master_default() {
    let m = master();
    put(&m, "k", &enable(None));
    assert_eq!(deadline(&m, "k"), Some(T0 + DEFAULT_TTL));

    let m = master_from(MasterConfig {
        default_kv_soft_pin_ttl_ms: 5_000,
        ..MasterConfig::deterministic(T0)
    });
    put(&m, "k", &enable(None));
    assert_eq!(deadline(&m, "k"), Some(T0 + 5_000));
}

// PRESERVE keeps an unexpired deadline across an upsert; DISABLE removes it.
#[test]
fn extended_preserve_keeps_and_disable_clears() {
    let m = master();
    put(&m, "k", &enable(Some(60_000)));
    m.advance_time(1_000).unwrap();
    upsert(&m, "k", &WriteConfig::default());
    assert_eq!(deadline(&m, "k"), Some(T0 + 60_000));
    upsert(
        &m,
        "k",
        &WriteConfig::default().with_soft_pin(SoftPinRequest::DISABLE),
    );
    assert_eq!(deadline(&m, "k"), None);
}

// A re-ENABLE starts a new lifetime from the upsert's End.
#[test]
fn extended_enable_on_upsert_restarts_the_lifetime() {
    let m = master();
    put(&m, "k", &enable(Some(60_000)));
    m.advance_time(10_000).unwrap();
    upsert(&m, "k", &enable(Some(5_000)));
    assert_eq!(deadline(&m, "k"), Some(T0 + 10_000 + 5_000));
}

// Legacy `with_soft_pin = true` is ENABLE with the master's default TTL.
#[test]
fn legacy_with_soft_pin_is_enable_with_the_default_ttl() {
    let m = master_from(MasterConfig {
        default_kv_soft_pin_ttl_ms: 7_000,
        ..MasterConfig::deterministic(T0)
    });
    let legacy = LegacyConfig {
        with_soft_pin: true,
        ..LegacyConfig::default()
    };
    put_legacy(&m, "k", &legacy);
    assert_eq!(deadline(&m, "k"), Some(T0 + 7_000));
}

// Legacy `with_soft_pin = false` is PRESERVE: an upsert keeps the deadline.
#[test]
fn legacy_without_soft_pin_preserves_the_deadline() {
    let m = master();
    put(&m, "k", &enable(Some(60_000)));
    put_legacy(&m, "plain", &LegacyConfig::default());
    assert_eq!(deadline(&m, "plain"), None);

    let s = m
        .upsert_start_legacy(C1, Key::new("k"), SIZE, &LegacyConfig::default())
        .unwrap();
    m.upsert_end(C1, Key::new("k"), ReplicaSelector::All, Some(s.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + 60_000));
}

// Legacy `replica_num` is the number of memory replicas.
#[test]
fn legacy_replica_num_places_that_many_memory_replicas() {
    let m = master();
    let s = put_legacy(
        &m,
        "k",
        &LegacyConfig {
            replica_num: 2,
            ..LegacyConfig::default()
        },
    );
    assert_eq!(s.replicas.len(), 2);
}

// The hard pin of either configuration keeps an object through a full eviction.
#[test]
fn hard_pin_of_both_configs_survives_a_full_eviction() {
    let m = master();
    put(
        &m,
        "hard_ext",
        &WriteConfig {
            hard_pin: true,
            ..WriteConfig::default()
        },
    );
    put_legacy(
        &m,
        "hard_legacy",
        &LegacyConfig {
            with_hard_pin: true,
            ..LegacyConfig::default()
        },
    );
    put(&m, "plain", &WriteConfig::default());
    let report = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((report.base, report.evicted), (1, 1));
    assert!(m.exist(Key::new("hard_ext")).unwrap());
    assert!(m.exist(Key::new("hard_legacy")).unwrap());
    assert!(!m.exist(Key::new("plain")).unwrap());
}

// Preferred segments and a group name travel through the extended struct's pointers.
#[test]
fn extended_preferred_segments_and_group_are_passed() {
    let m = master();
    let cfg = WriteConfig {
        preferred_segments: vec!["mem1".into()],
        group: Some("g".into()),
        ..WriteConfig::default()
    };
    cfg.validate().unwrap();
    let s = put(&m, "k", &cfg);
    assert_eq!(m.segment_name(segment_of(&s.replicas[0])).unwrap(), "mem1");
    let legacy = LegacyConfig {
        preferred_segments: vec!["mem0"],
        ..LegacyConfig::default()
    };
    legacy.validate().unwrap();
    let s = put_legacy(&m, "l", &legacy);
    assert_eq!(m.segment_name(segment_of(&s.replicas[0])).unwrap(), "mem0");
    // An upsert naming another group than the object's is refused (one
    // naming none keeps the object's group, docs/CONTRACT.md §2).
    let other = WriteConfig {
        group: Some("other".into()),
        ..WriteConfig::default()
    };
    let err = m.upsert_start(C1, Key::new("k"), SIZE, &other).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
}

// Replica counts above MOONCAKE_META_MAX_REPLICAS_PER_POOL are INVALID_PARAMS;
// they used to size the safe layer's replica buffer (u32::MAX replicas:
// hundreds of GB, an allocation abort).
#[test]
fn replica_counts_above_the_maximum_are_invalid_params_without_a_huge_buffer() {
    let m = master();
    for (memory_replicas, nof_ssd_replicas) in [
        (u32::MAX, 0),
        (0, u32::MAX),
        (MOONCAKE_META_MAX_REPLICAS_PER_POOL + 1, 1),
    ] {
        let cfg = WriteConfig {
            memory_replicas,
            nof_ssd_replicas,
            ..WriteConfig::default()
        };
        for r in [
            m.put_start(1, Key::new("k"), 64, &cfg),
            m.upsert_start(1, Key::new("k"), 64, &cfg),
        ] {
            let e = r.unwrap_err();
            assert_eq!(e.code(), MOONCAKE_META_INVALID_PARAMS, "{}", e.message());
            assert!(e.message().contains("replicas"), "{}", e.message());
        }
    }
    let legacy = LegacyConfig {
        replica_num: usize::MAX,
        ..LegacyConfig::default()
    };
    let e = m
        .put_start_legacy(1, Key::new("k"), 64, &legacy)
        .unwrap_err();
    assert_eq!(e.code(), MOONCAKE_META_INVALID_PARAMS, "{}", e.message());
}
