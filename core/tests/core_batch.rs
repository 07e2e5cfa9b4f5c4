//! docs/CONTRACT.md §3 batch forms: a bad shared request (soft-pin request,
//! mismatched arrays) fails every key with INVALID_PARAMS and changes
//! nothing; otherwise keys run in order as single calls (a repeated key sees
//! the earlier entry's effect) with per-key results; empty in, empty out.
mod common;
use common::*;
use mooncake_meta_core::*;

fn fingerprint(m: &Master) -> (Vec<u8>, MetricsSnapshot) {
    (m.snapshot().unwrap(), m.metrics())
}

fn assert_unchanged(m: &Master, before: &(Vec<u8>, MetricsSnapshot)) {
    let now = fingerprint(m);
    assert_eq!(now.1, before.1, "metrics changed");
    assert!(now.0 == before.0, "snapshot bytes changed");
    inv(m);
}

fn codes<T: std::fmt::Debug>(rs: Vec<Result<T>>) -> Vec<Option<ErrorKind>> {
    rs.into_iter().map(|r| r.err().map(|e| e.kind())).collect()
}

const KEYS: [Key<'static>; 3] = [Key::new("a"), Key::new("b"), Key::new("c")];

#[test]
fn batch_start_invalid_params_for_mismatched_arrays() {
    // §3: mismatched key/size arrays → INVALID_PARAMS for every key, no side effects
    let m = master();
    let before = fingerprint(&m);
    let all_bad = vec![Some(ErrorKind::InvalidParams); 3];
    assert_eq!(
        codes(m.batch_put_start(C1, &KEYS, &[64, 64], &preserve())),
        all_bad
    );
    assert_eq!(
        codes(m.batch_upsert_start(C1, &KEYS, &[64; 4], &preserve())),
        all_bad
    );
    assert_unchanged(&m, &before);
}

#[test]
fn batch_start_invalid_params_for_a_bad_shared_soft_pin_request() {
    // §3/§4.1: a bad shared soft-pin request → INVALID_PARAMS for every key, no side effects
    let m = master();
    let before = fingerprint(&m);
    let bad = [
        cfg(SoftPinRequest {
            action: SoftPinAction::Preserve,
            ttl_ms: Some(1),
        }),
        cfg(SoftPinRequest::enable_for(MAX_TTL + 1)),
    ];
    for c in &bad {
        let all_bad = vec![Some(ErrorKind::InvalidParams); 3];
        assert_eq!(codes(m.batch_put_start(C1, &KEYS, &[64; 3], c)), all_bad);
        assert_eq!(codes(m.batch_upsert_start(C1, &KEYS, &[64; 3], c)), all_bad);
    }
    assert_unchanged(&m, &before);
}

#[test]
fn batch_end_and_revoke_invalid_params_for_mismatched_tokens() {
    // §3/§7: per-key tokens must match the keys → INVALID_PARAMS for every key
    let m = master();
    let ws = m.batch_put_start(C1, &KEYS, &[64; 3], &preserve());
    assert!(ws.iter().all(|w| w.is_ok()));
    let before = fingerprint(&m);
    let all_bad = vec![Some(ErrorKind::InvalidParams); 3];
    assert_eq!(
        codes(m.batch_put_end(C1, &KEYS, ReplicaSelector::All, Some(&[0, 0]))),
        all_bad
    );
    assert_eq!(
        codes(m.batch_put_revoke(C1, &KEYS, ReplicaSelector::All, Some(&[0; 4]))),
        all_bad
    );
    assert_unchanged(&m, &before);
}

#[test]
fn empty_batches_return_empty_results() {
    // §3: an empty batch returns an empty result
    let m = master();
    let before = fingerprint(&m);
    assert!(m.batch_put_start(C1, &[], &[], &preserve()).is_empty());
    assert!(m.batch_upsert_start(C1, &[], &[], &preserve()).is_empty());
    assert!(m
        .batch_put_end(C1, &[], ReplicaSelector::All, None)
        .is_empty());
    assert!(m
        .batch_put_revoke(C1, &[], ReplicaSelector::All, Some(&[]))
        .is_empty());
    assert!(m.batch_get_replica_list(&[]).is_empty());
    assert!(m.batch_exist(&[]).is_empty());
    assert!(m.batch_remove(&[], true).is_empty());
    assert_unchanged(&m, &before);
}

#[test]
fn batch_results_are_per_key() {
    // §3: one bad key fails alone; the others run as single calls
    let m = master();
    let keys = [Key::new("a"), Key::new(""), Key::new("c")];
    let r = m.batch_put_start(C1, &keys, &[64, 64, 0], &preserve());
    assert_eq!(
        codes(r),
        [
            None,
            Some(ErrorKind::InvalidParams),
            Some(ErrorKind::InvalidParams)
        ]
    );
    let r = m.batch_put_end(C1, &KEYS, ReplicaSelector::All, None);
    assert_eq!(
        codes(r),
        [
            None,
            Some(ErrorKind::ObjectNotFound),
            Some(ErrorKind::ObjectNotFound)
        ]
    );
    let r = m.batch_get_replica_list(&KEYS);
    assert_eq!(r[0].as_ref().unwrap().len(), 1);
    assert_eq!(
        codes(r),
        [
            None,
            Some(ErrorKind::ObjectNotFound),
            Some(ErrorKind::ObjectNotFound)
        ]
    );
    let e: Vec<bool> = m
        .batch_exist(&KEYS)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(e, [true, false, false]);
    inv(&m);
}

#[test]
fn batch_repeated_keys_see_the_earlier_entry() {
    // §3: keys are processed in order as single calls; a repeated key sees the earlier effect
    let m = master();
    let aa = [Key::new("a"), Key::new("a")];
    let r = m.batch_put_start(C1, &aa, &[64, 64], &preserve());
    let tok = r[0].as_ref().unwrap().token;
    assert_eq!(codes(r), [None, Some(ErrorKind::ObjectAlreadyExists)]);
    // the second End finds nothing in flight and every replica COMPLETE: OK
    assert_eq!(
        codes(m.batch_put_end(C1, &aa, ReplicaSelector::All, Some(&[tok, tok]))),
        [None, None]
    );
    // upsert twice: the second entry preempts the first (nothing COMPLETE left → case A)
    let r = m.batch_upsert_start(C1, &aa, &[64, 128], &preserve());
    let (t1, t2) = (r[0].as_ref().unwrap().token, r[1].as_ref().unwrap().token);
    assert_ne!(t1, t2);
    let r = m.batch_put_end(C1, &aa, ReplicaSelector::All, Some(&[t1, t2]));
    assert_eq!(codes(r), [Some(ErrorKind::StaleWriteToken), None]);
    assert_eq!(m.get_replica_list(k("a")).unwrap().len(), 1);
    m.advance_time(LEASE).unwrap();
    assert_eq!(
        codes(m.batch_remove(&aa, false)),
        [None, Some(ErrorKind::ObjectNotFound)]
    );
    inv(&m);
}

#[test]
fn batch_revoke_and_zero_tokens() {
    // §7: a zero token in a batch means "no token"
    let m = master();
    let r = m.batch_put_start(C1, &KEYS, &[64; 3], &preserve());
    let t: Vec<u64> = r.iter().map(|w| w.as_ref().unwrap().token).collect();
    let r = m.batch_put_revoke(
        C1,
        &KEYS,
        ReplicaSelector::All,
        Some(&[0, t[1], t[2] + 100]),
    );
    assert_eq!(codes(r), [None, None, Some(ErrorKind::StaleWriteToken)]);
    assert_eq!(m.key_count(), 1);
    let r = m.batch_put_end(C1, &KEYS, ReplicaSelector::All, Some(&[0, 0, 0]));
    assert_eq!(
        codes(r),
        [
            Some(ErrorKind::ObjectNotFound),
            Some(ErrorKind::ObjectNotFound),
            None
        ]
    );
    inv(&m);
}
