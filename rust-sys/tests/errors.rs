//! Failures come back as `Error`s carrying the library's code and the
//! message of its error object (naming the function and the argument).

mod common;

use common::*;
use mooncake_meta_sys::safe::*;
use mooncake_meta_sys::*;

// A missing key is OBJECT_NOT_FOUND, and the message names the C function.
#[test]
fn missing_key_is_object_not_found_with_the_function_name() {
    let m = master();
    let err = m.get_replica_list(Key::new("nope")).unwrap_err();
    assert_eq!(err.code(), MOONCAKE_META_OBJECT_NOT_FOUND);
    assert_eq!(err.status_name(), "OBJECT_NOT_FOUND");
    assert!(
        err.message()
            .starts_with("mooncake_meta_get_replica_list: "),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!("OBJECT_NOT_FOUND (-704): {}", err.message())
    );
}

// A TTL is only valid with ENABLE: INVALID_PARAMS naming the field, and nothing is written.
#[test]
fn ttl_without_enable_is_invalid_params_naming_the_field() {
    let m = master();
    let cfg = WriteConfig::default().soft_pin(SoftPinAction::Preserve, Some(1_000));
    let err = cfg.validate().unwrap_err();
    assert_eq!(err.code(), MOONCAKE_META_INVALID_PARAMS);
    assert!(err.message().contains("soft_pin_ttl_ms"), "{err}");
    let err = m.put_start(C1, Key::new("k"), SIZE, &cfg).unwrap_err();
    assert_eq!(err.code(), MOONCAKE_META_INVALID_PARAMS);
    assert!(
        err.message().starts_with("mooncake_meta_put_start: "),
        "{err}"
    );
    assert_eq!(m.key_count().unwrap(), 0);
}

// A TTL above the master's maximum is refused by the start.
#[test]
fn ttl_above_the_maximum_is_invalid_params() {
    let mut cfg = Config::deterministic(T0).unwrap();
    cfg.set_max_kv_soft_pin_ttl_ms(10_000)
        .unwrap()
        .set_default_kv_soft_pin_ttl_ms(5_000)
        .unwrap();
    let m = master_from(&cfg);
    let err = m
        .put_start(C1, Key::new("k"), SIZE, &enable(Some(10_001)))
        .unwrap_err();
    assert_eq!(err.code(), MOONCAKE_META_INVALID_PARAMS);
    put(&m, "k", &enable(Some(10_000)));
}

// A master configuration that breaks a rule is refused at validation and at creation.
#[test]
fn invalid_master_config_names_the_field() {
    let mut cfg = Config::new().unwrap();
    cfg.set_max_kv_soft_pin_ttl_ms(1_000).unwrap();
    let err = cfg.validate().unwrap_err();
    assert_eq!(err.code(), MOONCAKE_META_INVALID_PARAMS);
    assert!(err.message().contains("default_kv_soft_pin_ttl"), "{err}");
    assert_eq!(
        Master::new(Some(&cfg)).unwrap_err().code(),
        MOONCAKE_META_INVALID_PARAMS
    );
}

// The manual clock never goes back; a system-clock master has no manual clock.
#[test]
fn clock_errors() {
    let m = master();
    let err = m.set_time(T0 - 1).unwrap_err();
    assert_eq!(err.code(), MOONCAKE_META_CLOCK_UNSUPPORTED);
    assert_eq!(m.now().unwrap(), T0);
    let system = Master::new(None).unwrap();
    assert_eq!(
        system.advance_time(1).unwrap_err().code(),
        MOONCAKE_META_CLOCK_UNSUPPORTED
    );
}

// The write protocol's own errors: not the writer, stale token, End without a write.
#[test]
fn write_protocol_errors() {
    let m = master();
    let k = Key::new("k");
    let s = m.put_start(C1, k, SIZE, &WriteConfig::default()).unwrap();
    assert_eq!(
        m.put_end(C2, k, Selector::All, None).unwrap_err().code(),
        MOONCAKE_META_ILLEGAL_CLIENT
    );
    assert_eq!(
        m.put_end(C1, k, Selector::All, Some(s.token + 1))
            .unwrap_err()
            .code(),
        MOONCAKE_META_STALE_WRITE_TOKEN
    );
    assert_eq!(
        m.put_start(C1, k, SIZE, &WriteConfig::default())
            .unwrap_err()
            .code(),
        MOONCAKE_META_OBJECT_ALREADY_EXISTS
    );
    m.put_end(C1, k, Selector::All, Some(s.token)).unwrap();
    assert_eq!(
        m.put_revoke(C1, k, Selector::All, None).unwrap_err().code(),
        MOONCAKE_META_INVALID_WRITE
    );
}

// A Rust string with a NUL byte cannot become a C string: refused before any call.
#[test]
fn nul_in_a_c_string_argument_is_refused() {
    let m = master();
    let cfg = WriteConfig {
        group: Some("a\0b"),
        ..WriteConfig::default()
    };
    let err = m.put_start(C1, Key::new("k"), SIZE, &cfg).unwrap_err();
    assert_eq!(err.code(), MOONCAKE_META_INVALID_PARAMS);
    assert!(err.message().contains("group"), "{err}");
    assert_eq!(m.key_count().unwrap(), 0);
}

// Too little room for the segments and a duplicate name are reported as such.
#[test]
fn segment_errors() {
    let m = master();
    assert_eq!(
        m.mount_segment(C1, "mem0", 9 << 40, 1 << 20, Pool::Memory)
            .unwrap_err()
            .code(),
        MOONCAKE_META_SEGMENT_ALREADY_EXISTS
    );
    assert_eq!(
        m.unmount_segment(C2, "mem0").unwrap_err().code(),
        MOONCAKE_META_ILLEGAL_CLIENT
    );
    let big = m
        .put_start(C1, Key::new("big"), 2 << 20, &WriteConfig::default())
        .unwrap_err();
    assert_eq!(big.code(), MOONCAKE_META_NO_AVAILABLE_HANDLE);
}
