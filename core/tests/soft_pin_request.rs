//! docs/CONTRACT.md §4.1: the soft-pin request is validated and resolved at Start,
//! before any side effect. One test per row of the table.
mod common;
use common::*;
use mooncake_meta_core::*;

fn rejected_without_effect(m: &Master, req: SoftPinRequest) {
    let before = m.snapshot().unwrap();
    let metrics = m.metrics();
    assert_eq!(
        code(m.put_start(C1, k("new"), 64, &cfg(req))),
        ErrorKind::InvalidParams
    );
    assert_eq!(
        code(m.upsert_start(C1, k("old"), 64, &cfg(req))),
        ErrorKind::InvalidParams
    );
    assert_eq!(
        code(m.upsert_start(C1, k("old"), 128, &cfg(req))),
        ErrorKind::InvalidParams
    );
    assert_eq!(m.metrics(), metrics);
    assert_eq!(m.snapshot().unwrap(), before);
    inv(m);
}

fn fixture() -> Master {
    let m = master();
    put(&m, "old", 64, &enable(5_000));
    m
}

#[test]
fn preserve_with_ttl_is_invalid_params() {
    // PRESERVE with any TTL (even 0) → INVALID_PARAMS
    let m = fixture();
    for ttl in [0, 1, MAX_TTL] {
        rejected_without_effect(
            &m,
            SoftPinRequest {
                action: SoftPinAction::Preserve,
                ttl_ms: Some(ttl),
            },
        );
    }
}

#[test]
fn disable_with_ttl_is_invalid_params() {
    // DISABLE with any TTL (even 0) → INVALID_PARAMS
    let m = fixture();
    for ttl in [0, 1, MAX_TTL] {
        rejected_without_effect(
            &m,
            SoftPinRequest {
                action: SoftPinAction::Disable,
                ttl_ms: Some(ttl),
            },
        );
    }
}

#[test]
fn enable_without_ttl_uses_master_default() {
    // ENABLE without TTL → default_kv_soft_pin_ttl
    let m = master();
    put(&m, "a", 64, &cfg(SoftPinRequest::enable()));
    assert_eq!(deadline(&m, "a"), Some(T0 + DEFAULT_TTL));
}

#[test]
fn enable_with_ttl_up_to_max_is_accepted() {
    // ENABLE with t <= max → t; t == max accepted
    let m = master();
    put(&m, "a", 64, &enable(1));
    put(&m, "b", 64, &enable(MAX_TTL));
    assert_eq!(deadline(&m, "a"), Some(T0 + 1));
    assert_eq!(deadline(&m, "b"), Some(T0 + MAX_TTL));
}

#[test]
fn enable_with_ttl_above_max_is_invalid_params() {
    // ENABLE with t > max → INVALID_PARAMS
    let m = fixture();
    rejected_without_effect(&m, SoftPinRequest::enable_for(MAX_TTL + 1));
    rejected_without_effect(&m, SoftPinRequest::enable_for(u64::MAX));
}

#[test]
fn raw_action_outside_range_is_invalid_params() {
    // raw action value outside {0,1,2} → INVALID_PARAMS
    for raw in [3u32, 255, u32::MAX] {
        assert_eq!(
            SoftPinAction::from_raw(raw).unwrap_err().kind(),
            ErrorKind::InvalidParams
        );
    }
    assert_eq!(SoftPinAction::from_raw(1).unwrap(), SoftPinAction::Enable);
}

#[test]
fn enable_with_ttl_zero_commits_ordinary_cache() {
    // ENABLE with TTL 0 → accepted, clears a committed deadline
    let m = fixture();
    assert_eq!(gauge(&m), 1);
    upsert(&m, "old", 64, &enable(0));
    assert_eq!(deadline(&m, "old"), None);
    assert_eq!(gauge(&m), 0);
    put(&m, "new", 64, &enable(0));
    assert_eq!(deadline(&m, "new"), None);
    inv(&m);
}

#[test]
fn legacy_boolean_translates_to_enable_default_or_preserve() {
    // with_soft_pin true → ENABLE(default), false → PRESERVE
    assert_eq!(SoftPinRequest::from_legacy(true), SoftPinRequest::enable());
    assert_eq!(SoftPinRequest::from_legacy(false), SoftPinRequest::PRESERVE);
    let m = master();
    put(&m, "a", 64, &cfg(SoftPinRequest::from_legacy(true)));
    assert_eq!(deadline(&m, "a"), Some(T0 + DEFAULT_TTL));
    m.advance_time(10).unwrap();
    upsert(&m, "a", 64, &cfg(SoftPinRequest::from_legacy(false)));
    assert_eq!(deadline(&m, "a"), Some(T0 + DEFAULT_TTL));
}

#[test]
fn default_ttl_above_max_is_rejected_at_creation() {
    let c = MasterConfig {
        default_kv_soft_pin_ttl_ms: 10,
        max_kv_soft_pin_ttl_ms: 9,
        ..config()
    };
    assert_eq!(
        Master::new(c).err().unwrap().kind(),
        ErrorKind::InvalidParams
    );
}

#[test]
fn bad_request_fails_every_key_of_a_batch() {
    // batch: a bad shared config → INVALID_PARAMS for every key, no side effects
    let m = fixture();
    let before = m.snapshot().unwrap();
    let keys = [k("x"), k("y")];
    let res = m.batch_put_start(
        C1,
        &keys,
        &[64, 64],
        &cfg(SoftPinRequest::enable_for(MAX_TTL + 1)),
    );
    assert_eq!(res.len(), 2);
    assert!(res
        .iter()
        .all(|r| r.as_ref().unwrap_err().kind() == ErrorKind::InvalidParams));
    assert_eq!(m.snapshot().unwrap(), before);
}
