//! docs/CONTRACT.md §7: a new u64 write token on every Start; End/Revoke with a
//! token that is not the current write's → STALE_WRITE_TOKEN and nothing
//! changes. Check order: OBJECT_NOT_FOUND → ILLEGAL_CLIENT → STALE_WRITE_TOKEN.
mod common;
use common::*;
use mooncake_meta_core::*;

#[test]
fn every_start_gets_a_new_token() {
    let m = master();
    let mut seen = std::collections::HashSet::new();
    for i in 0..20 {
        let key = format!("k{}", i % 3);
        let w = m
            .upsert_start(C1, k(&key), 64 + (i % 2), &preserve())
            .unwrap();
        assert!(w.token != 0 && seen.insert(w.token));
    }
}

#[test]
fn stale_token_on_case_b_where_replica_ids_are_reused() {
    let m = master();
    let w1 = m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w1.token))
        .unwrap();
    let w2 = m.upsert_start(C1, k("k"), 64, &enable(5_000)).unwrap();
    assert_eq!(
        w1.replicas[0].id, w2.replicas[0].id,
        "case B keeps replica ids"
    );
    let before = m.snapshot().unwrap();
    assert_eq!(
        code(m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w1.token))),
        ErrorKind::StaleWriteToken
    );
    assert_eq!(
        code(m.upsert_revoke(C1, k("k"), ReplicaSelector::All, Some(w1.token))),
        ErrorKind::StaleWriteToken
    );
    assert_eq!(
        m.snapshot().unwrap(),
        before,
        "a stale End/Revoke changes nothing"
    );
    assert!(m.has_pending_soft_pin(k("k")).unwrap());
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w2.token))
        .unwrap();
    assert!(deadline(&m, "k").is_some());
    inv(&m);
}

#[test]
fn stale_token_is_rejected_with_no_write_in_flight() {
    let m = master();
    let w1 = put(&m, "k", 64, &preserve());
    let w2 = upsert(&m, "k", 64, &preserve());
    assert_ne!(w1, w2);
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, Some(w1))),
        ErrorKind::StaleWriteToken
    );
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w2))
        .unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, None).unwrap();
}

#[test]
fn check_order_is_not_found_then_client_then_token() {
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    assert_eq!(
        code(m.put_end(C1, k("zz"), ReplicaSelector::All, Some(w.token + 99))),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(
        code(m.put_end(C2, k("k"), ReplicaSelector::All, Some(w.token + 99))),
        ErrorKind::IllegalClient
    );
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token + 99))),
        ErrorKind::StaleWriteToken
    );
    assert_eq!(
        code(m.put_revoke(C2, k("k"), ReplicaSelector::All, Some(w.token + 99))),
        ErrorKind::IllegalClient
    );
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
}

#[test]
fn batch_tokens_are_per_key_and_zero_means_none() {
    let m = master();
    let s = m.batch_put_start(C1, &[k("a"), k("b")], &[64, 64], &preserve());
    let ta = s[0].as_ref().unwrap().token;
    let r = m.batch_put_end(
        C1,
        &[k("a"), k("b")],
        ReplicaSelector::All,
        Some(&[ta + 1000, 0]),
    );
    assert_eq!(
        r[0].as_ref().unwrap_err().kind(),
        ErrorKind::StaleWriteToken
    );
    assert!(r[1].is_ok());
    let r = m.batch_put_end(C1, &[k("a")], ReplicaSelector::All, Some(&[ta, ta]));
    assert_eq!(r[0].as_ref().unwrap_err().kind(), ErrorKind::InvalidParams);
    assert!(m
        .batch_put_end(C1, &[], ReplicaSelector::All, None)
        .is_empty());
}
