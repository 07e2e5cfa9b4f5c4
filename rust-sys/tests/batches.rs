//! The safe layer's batches: one result per key as the core's, sent to the
//! C ABI's one-tenant batch calls in runs.

mod common;

use common::*;
use mooncake_meta_sys::safe::*;

// Keys of several tenants, in order, each with its own result; a malformed
// key fails alone, with the core's message.
#[test]
fn a_batch_spans_tenants_and_a_malformed_key_fails_alone() {
    let m = master();
    let keys = [
        Key::new("a"),
        Key::scoped("t1", "a"),
        Key::new(""),
        Key::scoped("t1", "b"),
        Key::new("b"),
    ];
    let sizes = [SIZE; 5];
    let started = m.batch_put_start(C1, &keys, &sizes, &enable(Some(1_000)));
    let kinds: Vec<Option<ErrorKind>> = started
        .iter()
        .map(|r| r.as_ref().err().map(Error::kind))
        .collect();
    assert_eq!(
        kinds,
        [None, None, Some(ErrorKind::InvalidParams), None, None]
    );
    assert_eq!(
        started[2].as_ref().unwrap_err().message(),
        "key must not be empty"
    );
    let tokens: Vec<u64> = started
        .iter()
        .map(|r| r.as_ref().map_or(0, |w| w.token))
        .collect();
    let ended = m.batch_put_end(C1, &keys, ReplicaSelector::All, Some(&tokens));
    assert!(
        ended.iter().enumerate().all(|(i, r)| r.is_ok() == (i != 2)),
        "{ended:?}"
    );
    assert_eq!(m.key_count(), 4);
    for k in [keys[0], keys[1], keys[3], keys[4]] {
        assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(T0 + 1_000), "{k:?}");
    }
    let lists = m.batch_get_replica_list(&keys);
    assert_eq!(
        lists[1].as_ref().unwrap(),
        &m.get_replica_list(keys[1]).unwrap()
    );
}

// The first failure of a C call carries the library's message, the others
// their kind and position.
#[test]
fn per_key_failures_carry_their_kind() {
    let m = master();
    put(&m, "here", &WriteConfig::default());
    let keys = [Key::new("gone1"), Key::new("here"), Key::new("gone2")];
    let r = m.batch_exist(&keys);
    assert_eq!(
        r.iter().map(|r| *r.as_ref().unwrap()).collect::<Vec<_>>(),
        [false, true, false]
    );
    m.advance_time(60_000).unwrap();
    let r = m.batch_remove(&keys, false);
    let e0 = r[0].as_ref().unwrap_err();
    let e2 = r[2].as_ref().unwrap_err();
    assert!(r[1].is_ok());
    assert_eq!(
        (e0.kind(), e2.kind()),
        (ErrorKind::ObjectNotFound, ErrorKind::ObjectNotFound)
    );
    assert!(
        e0.message().starts_with("mooncake_meta_batch_remove: "),
        "{e0}"
    );
    assert!(e2.message().contains("key 2 of this batch call"), "{e2}");
}

// Keys that all fail on their own with one code are still per-key
// failures, not a refusal of the batch: the first carries the library's
// message, which names it, the others their own position.
#[test]
fn keys_failing_alike_keep_their_own_positions() {
    let m = master();
    let r = m.batch_remove(&[Key::new("gone1"), Key::new("gone2")], false);
    let (e0, e1) = (r[0].as_ref().unwrap_err(), r[1].as_ref().unwrap_err());
    assert_eq!(
        (e0.kind(), e1.kind()),
        (ErrorKind::ObjectNotFound, ErrorKind::ObjectNotFound)
    );
    assert!(
        e0.message()
            .starts_with("mooncake_meta_batch_remove: keys[0]: "),
        "{e0}"
    );
    assert!(e0.message().ends_with(" (2 of 2 keys failed)"), "{e0}");
    assert!(e1.message().contains("key 1 of this batch call"), "{e1}");
}

// A batch the library refuses as a whole gives every key the refusal.
#[test]
fn a_refusal_by_the_library_fails_every_key_with_its_message() {
    let m = master();
    let cfg = WriteConfig {
        memory_replicas: 0,
        ..WriteConfig::default()
    };
    let r = m.batch_put_start(C1, &[Key::new("a"), Key::new("b")], &[SIZE; 2], &cfg);
    let (e0, e1) = (r[0].as_ref().unwrap_err(), r[1].as_ref().unwrap_err());
    assert_eq!(e0.kind(), ErrorKind::InvalidParams, "{e0}");
    assert!(
        e0.message()
            .starts_with("mooncake_meta_batch_put_start: cfg"),
        "{e0}"
    );
    assert_eq!(e0, e1);
    assert_eq!(m.key_count(), 0);
}

// A batch longer than one C call takes is split, in order.
#[test]
fn a_long_batch_is_split_in_order() {
    let m = master();
    put(&m, "k70000", &WriteConfig::default());
    let names: Vec<String> = (0..70_001).map(|i| format!("k{i}")).collect();
    let keys: Vec<Key<'_>> = names.iter().map(|n| Key::new(n)).collect();
    let r = m.batch_exist(&keys);
    assert_eq!(r.len(), keys.len());
    assert!(r[..70_000].iter().all(|r| r == &Ok(false)));
    assert_eq!(r[70_000], Ok(true));
}

// Shared refusals fail every key and change nothing.
#[test]
fn shared_refusals_fail_every_key() {
    let m = master();
    let keys = [Key::new("a"), Key::new("b")];
    for r in m.batch_put_start(C1, &keys, &[SIZE], &WriteConfig::default()) {
        assert_eq!(r.unwrap_err().message(), "2 keys but 1 sizes");
    }
    for r in m.batch_put_start(C1, &keys, &[SIZE; 2], &enable(Some(u64::MAX))) {
        assert_eq!(r.unwrap_err().kind(), ErrorKind::InvalidParams);
    }
    for r in m.batch_put_end(C1, &keys, ReplicaSelector::All, Some(&[1])) {
        assert_eq!(r.unwrap_err().message(), "1 tokens for 2 keys");
    }
    assert_eq!(m.key_count(), 0);
}
