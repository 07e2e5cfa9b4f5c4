//! Failures come back as `Error`s with the core's `ErrorKind`, the
//! library's status code and the message of its error object (naming the
//! function and the argument).

mod common;

use common::*;
use mooncake_meta_sys::safe::*;
use mooncake_meta_sys::*;

// A missing key is OBJECT_NOT_FOUND, and the message names the C function.
#[test]
fn missing_key_is_object_not_found_with_the_function_name() {
    let m = master();
    let err = m.get_replica_list(Key::new("nope")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ObjectNotFound);
    assert_eq!(err.code(), MOONCAKE_META_OBJECT_NOT_FOUND);
    assert_eq!(err.status_name(), "OBJECT_NOT_FOUND");
    assert!(
        err.message()
            .starts_with("mooncake_meta_get_replica_list: "),
        "{err}"
    );
    // Displayed as the core's errors are: KIND: message.
    assert_eq!(
        err.to_string(),
        format!("OBJECT_NOT_FOUND: {}", err.message())
    );
}

// Every kind is one status code, named as the library names it, and back.
#[test]
fn every_kind_maps_to_its_status_code_and_back() {
    let mut codes: Vec<i32> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
    for kind in ErrorKind::ALL {
        assert_eq!(status_name(kind.code()), kind.name(), "{kind:?}");
        assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
        assert!(kind.code() < 0, "{kind:?}");
    }
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), ErrorKind::ALL.len(), "two kinds share a code");
    assert_eq!(ErrorKind::from_code(MOONCAKE_META_OK), None);
    assert_eq!(ErrorKind::from_code(-12345), None);
}

// A TTL is only valid with ENABLE: INVALID_PARAMS naming the field, and nothing is written.
#[test]
fn ttl_without_enable_is_invalid_params_naming_the_field() {
    let m = master();
    let cfg = WriteConfig::default().with_soft_pin(SoftPinRequest {
        action: SoftPinAction::Preserve,
        ttl_ms: Some(1_000),
    });
    let err = cfg.validate().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains("soft_pin_ttl_ms"), "{err}");
    let err = m.put_start(C1, Key::new("k"), SIZE, &cfg).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(
        err.message().starts_with("mooncake_meta_put_start: "),
        "{err}"
    );
    assert_eq!(m.key_count(), 0);
}

// A TTL above the master's maximum is refused by the start.
#[test]
fn ttl_above_the_maximum_is_invalid_params() {
    let m = master_from(MasterConfig {
        max_kv_soft_pin_ttl_ms: 10_000,
        default_kv_soft_pin_ttl_ms: 5_000,
        ..MasterConfig::deterministic(T0)
    });
    let err = m
        .put_start(C1, Key::new("k"), SIZE, &enable(Some(10_001)))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    put(&m, "k", &enable(Some(10_000)));
}

// A master configuration that breaks a rule is refused at validation and at creation.
#[test]
fn invalid_master_config_names_the_field() {
    let cfg = MasterConfig {
        max_kv_soft_pin_ttl_ms: 1_000,
        ..MasterConfig::default()
    };
    let err = cfg.validate().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains("default_kv_soft_pin_ttl"), "{err}");
    assert_eq!(
        Master::new(cfg).unwrap_err().kind(),
        ErrorKind::InvalidParams
    );
    // A value a field cannot hold is refused by its setter, naming it.
    let err = Master::new(MasterConfig {
        eviction_ratio: f64::NAN,
        ..MasterConfig::deterministic(T0)
    })
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains("eviction_ratio"), "{err}");
}

// expected_objects pre-sizes the shards: at most MAX_EXPECTED_OBJECTS (checked
// at validation, naming the field), and a presized master holds more than it
// expected like any other.
#[test]
fn expected_objects_is_bounded_and_presizes_a_working_master() {
    assert_eq!(MAX_EXPECTED_OBJECTS, 1 << 32);
    assert_eq!(MasterConfig::default().expected_objects, 0);
    for bad in [MAX_EXPECTED_OBJECTS + 1, u64::MAX] {
        let cfg = MasterConfig {
            expected_objects: bad,
            ..MasterConfig::deterministic(T0)
        };
        let err = cfg.validate().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidParams);
        assert!(
            err.message()
                .contains(&format!("expected_objects {bad} exceeds the maximum")),
            "{err}"
        );
        assert_eq!(
            Master::new(cfg).unwrap_err().kind(),
            ErrorKind::InvalidParams
        );
    }
    MasterConfig {
        expected_objects: MAX_EXPECTED_OBJECTS,
        ..MasterConfig::deterministic(T0)
    }
    .validate()
    .unwrap();
    let m = master_from(MasterConfig {
        shard_count: 4,
        expected_objects: 64,
        ..MasterConfig::deterministic(T0)
    });
    for i in 0..200 {
        put(&m, &format!("k{i}"), &enable(Some(60_000)));
    }
    assert_eq!(m.key_count(), 200);
    assert_eq!(m.metrics().soft_pin_key_count, 200);
    m.check_invariants().unwrap();
}

// commit_presized (off by default) allocates the presized tables at creation
// and makes them resident; where the system declines it falls back silently,
// so a master built with it always works like any other.
#[test]
fn commit_presized_builds_a_working_master() {
    assert!(!MasterConfig::default().commit_presized);
    let cfg = MasterConfig {
        shard_count: 4,
        expected_objects: 10_000,
        commit_presized: true,
        ..MasterConfig::deterministic(T0)
    };
    cfg.validate().unwrap();
    let m = master_from(cfg);
    assert!(m.config().commit_presized);
    for i in 0..200 {
        put(&m, &format!("k{i}"), &enable(Some(60_000)));
    }
    assert_eq!(m.key_count(), 200);
    assert!(!m.get_replica_list(Key::new("k7")).unwrap().is_empty());
    m.check_invariants().unwrap();
    // Without expected_objects there is nothing to commit.
    master_from(MasterConfig {
        commit_presized: true,
        ..MasterConfig::deterministic(T0)
    })
    .check_invariants()
    .unwrap();
}

// The manual clock never goes back; a system-clock master has no manual clock.
#[test]
fn clock_errors() {
    let m = master();
    let err = m.set_time(T0 - 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ClockUnsupported);
    assert_eq!(m.now(), T0);
    let system = Master::new(MasterConfig::default()).unwrap();
    assert_eq!(
        system.advance_time(1).unwrap_err().kind(),
        ErrorKind::ClockUnsupported
    );
}

// The write protocol's own errors: not the writer, stale token, End without a write.
#[test]
fn write_protocol_errors() {
    let m = master();
    let k = Key::new("k");
    let s = m.put_start(C1, k, SIZE, &WriteConfig::default()).unwrap();
    assert_eq!(
        m.put_end(C2, k, ReplicaSelector::All, None)
            .unwrap_err()
            .kind(),
        ErrorKind::IllegalClient
    );
    assert_eq!(
        m.put_end(C1, k, ReplicaSelector::All, Some(s.token + 1))
            .unwrap_err()
            .kind(),
        ErrorKind::StaleWriteToken
    );
    assert_eq!(
        m.put_start(C1, k, SIZE, &WriteConfig::default())
            .unwrap_err()
            .kind(),
        ErrorKind::ObjectAlreadyExists
    );
    m.put_end(C1, k, ReplicaSelector::All, Some(s.token))
        .unwrap();
    assert_eq!(
        m.put_revoke(C1, k, ReplicaSelector::All, None)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidWrite
    );
}

// A group name with a NUL byte cannot become a C string: refused before
// any call, with the core's message. A preferred segment name with one is
// not refused (the core accepts it and finds no such segment): it is left
// out, and the write goes where it would have.
#[test]
fn nul_in_a_c_string_argument_is_refused() {
    let m = master();
    let cfg = WriteConfig::default().with_group("a\0b");
    let err = m.put_start(C1, Key::new("k"), SIZE, &cfg).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(err.message(), "group must not contain NUL");
    assert_eq!(m.key_count(), 0);
    let cfg = WriteConfig {
        preferred_segments: vec!["mem\0x".into(), "mem1".into()],
        ..WriteConfig::default()
    };
    cfg.validate().unwrap();
    m.validate_write_request(Key::new("k"), SIZE, &cfg).unwrap();
    let w = m.put_start(C1, Key::new("k"), SIZE, &cfg).unwrap();
    assert_eq!(w.replicas.len(), 1);
    assert_eq!(
        m.segment_name(segment_of(&w.replicas[0])),
        Some("mem1".into())
    );
    let legacy = LegacyConfig {
        preferred_segments: vec!["mem\0x", "mem1"],
        ..LegacyConfig::default()
    };
    legacy.validate().unwrap();
    let w = m
        .put_start_legacy(C1, Key::new("l"), SIZE, &legacy)
        .unwrap();
    assert_eq!(
        m.segment_name(segment_of(&w.replicas[0])),
        Some("mem1".into())
    );
    let w = m
        .upsert_start_legacy(C1, Key::new("u"), SIZE, &legacy)
        .unwrap();
    assert_eq!(
        m.segment_name(segment_of(&w.replicas[0])),
        Some("mem1".into())
    );
    assert_eq!(m.key_count(), 3);
}

fn segment_of(r: &ReplicaDescriptor) -> SegmentId {
    match r.location {
        Location::Buffer { segment, .. } => segment,
        ref other => panic!("not a buffer: {other:?}"),
    }
}

// A standby validates no write request (docs/CONTRACT.md §12.3): the
// core's answer and message, whatever the request; a poisoned master's
// would be PANIC.
#[test]
fn a_standby_refuses_to_validate_a_write_request() {
    let mut c = MasterConfig::deterministic(1_000);
    c.standby = true;
    let s = Master::new(c).unwrap();
    for (key, size) in [("k", SIZE), ("", 0)] {
        let err = s
            .validate_write_request(Key::new(key), size, &WriteConfig::default())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnavailableInCurrentStatus);
        assert_eq!(err.code(), MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS);
        assert!(
            err.message().starts_with("this master is a standby"),
            "{err}"
        );
    }
    s.promote().unwrap();
    s.validate_write_request(Key::new("k"), SIZE, &WriteConfig::default())
        .unwrap();
}

// An empty tenant is the core's INVALID_PARAMS here too (the C ABI alone
// would read it as the default tenant).
#[test]
fn an_empty_tenant_is_refused_as_the_core_refuses_it() {
    let m = master();
    put(&m, "k", &WriteConfig::default());
    let err = m.exist(Key::scoped("", "k")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(err.message(), "tenant must not be empty");
    assert!(m.exist(Key::scoped(DEFAULT_TENANT, "k")).unwrap());
    assert_eq!(
        m.list_keys("", "", None, 0).unwrap_err().kind(),
        ErrorKind::InvalidParams
    );
}

// A request for more replicas than any master can hold is refused before
// a buffer for them is allocated.
#[test]
fn huge_replica_requests_are_refused_before_allocating() {
    let m = master();
    let cfg = WriteConfig {
        memory_replicas: u32::MAX,
        nof_ssd_replicas: u32::MAX,
        ..WriteConfig::default()
    };
    for err in [
        m.put_start(C1, Key::new("k"), SIZE, &cfg).unwrap_err(),
        m.upsert_start(C1, Key::new("k"), SIZE, &cfg).unwrap_err(),
        m.batch_put_start(C1, &[Key::new("k")], &[SIZE], &cfg)
            .remove(0)
            .unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidParams);
        assert!(err.message().contains("replicas requested"), "{err}");
    }
    let legacy = LegacyConfig {
        replica_num: usize::MAX,
        ..LegacyConfig::default()
    };
    let err = m
        .put_start_legacy(C1, Key::new("k"), SIZE, &legacy)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains("replica_num"), "{err}");
    // A caller's room is not an allocation size either.
    put(&m, "k", &WriteConfig::default());
    assert_eq!(
        m.get_replica_list_bounded(Key::new("k"), usize::MAX)
            .unwrap(),
        Bounded::Fits(m.get_replica_list(Key::new("k")).unwrap())
    );
    assert_eq!(m.key_count(), 1);
}

// Too little room for the segments and a duplicate name are reported as such.
#[test]
fn segment_errors() {
    let m = master();
    assert_eq!(
        m.mount_segment(C1, &spec("mem0", 9 << 40, 1 << 20, Pool::Memory))
            .unwrap_err()
            .kind(),
        ErrorKind::SegmentAlreadyExists
    );
    assert_eq!(
        m.unmount_segment(C2, "mem0").unwrap_err().kind(),
        ErrorKind::IllegalClient
    );
    let big = m
        .put_start(C1, Key::new("big"), 2 << 20, &WriteConfig::default())
        .unwrap_err();
    assert_eq!(big.kind(), ErrorKind::NoAvailableHandle);
}
