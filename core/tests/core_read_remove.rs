//! docs/CONTRACT.md §2/§3 reads and removal: GetReplicaList, Exist (readable
//! replicas, lease grant), Remove's check order, RemoveAll / RemoveByRegex
//! (bad and oversized patterns, silent skipping), key count and paginated
//! key listing, and tenant-scoped keys that cannot collide.
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

fn lease_of(m: &Master, tenant: &str, key: &str) -> u64 {
    m.capture()
        .objects
        .iter()
        .find(|o| o.tenant == tenant && o.key == key)
        .expect("object present")
        .lease
}

fn two_segments() -> Master {
    master_with(config(), 2, 1, 1 << 20)
}

/// `key` on mem0 with a copy to mem1 running.
fn with_copy(m: &Master, key: &str) {
    let c = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..WriteConfig::default()
    };
    put(m, key, 64, &c);
    m.copy_start(k(key), &["mem1"]).unwrap();
}

// ----- GetReplicaList / Exist -------------------------------------------------

#[test]
fn get_replica_list_object_not_found() {
    // §3: missing → OBJECT_NOT_FOUND
    let m = master();
    let before = fingerprint(&m);
    assert_eq!(code(m.get_replica_list(k("k"))), ErrorKind::ObjectNotFound);
    assert_eq!(
        code(m.get_replica_list(k(""))),
        ErrorKind::InvalidParams,
        "empty key"
    );
    assert_unchanged(&m, &before);
}

#[test]
fn get_replica_list_replica_is_not_ready_grants_no_lease() {
    // §3: only PROCESSING (a write, or mid case B) → REPLICA_IS_NOT_READY and no lease
    let m = master();
    m.put_start(C1, k("p"), 64, &preserve()).unwrap();
    put(&m, "b", 64, &preserve());
    m.upsert_start(C1, k("b"), 64, &preserve()).unwrap();
    let before = fingerprint(&m);
    for key in ["p", "b"] {
        assert_eq!(
            code(m.get_replica_list(k(key))),
            ErrorKind::ReplicaIsNotReady
        );
        assert!(!m.exist(k(key)).unwrap());
    }
    assert_unchanged(&m, &before);
}

#[test]
fn get_replica_list_returns_readable_replicas_and_grants_the_lease() {
    // §2: Get on a readable object grants lease = max(lease, now + kv_lease_ttl)
    let m = master();
    let w = m
        .put_start(
            C1,
            k("k"),
            64,
            &WriteConfig {
                nof_ssd_replicas: 1,
                ..WriteConfig::default()
            },
        )
        .unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    m.advance_time(5).unwrap();
    let r = m.get_replica_list(k("k")).unwrap();
    assert_eq!(r.len(), 1, "only COMPLETE replicas are readable");
    assert_eq!(
        (r[0].kind, r[0].status),
        (ReplicaKind::NofSsd, ReplicaStatus::Complete)
    );
    assert_eq!(lease_of(&m, "default", "k"), T0 + 5 + LEASE);
    m.advance_time(3).unwrap();
    let mut out = Vec::new();
    m.get_replica_list_into(k("k"), &mut out).unwrap();
    assert_eq!(out, r);
    assert_eq!(lease_of(&m, "default", "k"), T0 + 8 + LEASE);
    inv(&m);
}

#[test]
fn exist_is_true_only_with_a_readable_replica() {
    // §3: Exist → true only with a readable replica (grants the lease); otherwise false, no lease
    let m = master();
    let before = fingerprint(&m);
    assert!(!m.exist(k("missing")).unwrap());
    assert_unchanged(&m, &before);
    put(&m, "k", 64, &preserve());
    assert_eq!(lease_of(&m, "default", "k"), T0);
    assert!(m.exist(k("k")).unwrap());
    assert_eq!(lease_of(&m, "default", "k"), T0 + LEASE);
}

// ----- Remove ------------------------------------------------------------------

#[test]
fn remove_object_not_found() {
    // §3: Remove on a missing key → OBJECT_NOT_FOUND
    let m = master();
    let before = fingerprint(&m);
    for force in [false, true] {
        assert_eq!(code(m.remove(k("k"), force)), ErrorKind::ObjectNotFound);
    }
    assert_unchanged(&m, &before);
}

#[test]
fn remove_replica_is_not_ready_even_forced() {
    // §3: a replica not COMPLETE → REPLICA_IS_NOT_READY, even forced
    let m = master();
    let w = m
        .put_start(
            C1,
            k("k"),
            64,
            &WriteConfig {
                nof_ssd_replicas: 1,
                ..WriteConfig::default()
            },
        )
        .unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    m.get_replica_list(k("k")).unwrap(); // a live lease too: NOT_READY comes first
    let before = fingerprint(&m);
    for force in [false, true] {
        assert_eq!(code(m.remove(k("k"), force)), ErrorKind::ReplicaIsNotReady);
    }
    assert_unchanged(&m, &before);
}

#[test]
fn remove_replica_is_not_ready_for_a_running_task_target() {
    // §3 order (as upstream): a replica not COMPLETE, a running copy's,
    // move's or promotion's PROCESSING target included →
    // REPLICA_IS_NOT_READY (forced too, and before a live lease)
    let m = master_with(config(), 3, 0, 1 << 20);
    with_copy(&m, "copy");
    let c = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..WriteConfig::default()
    };
    put(&m, "move", 64, &c);
    m.move_start(k("move"), "mem0", "mem2").unwrap();
    m.add_local_disk_replica(C1, k("promote"), 64).unwrap();
    m.promotion_start(k("promote"), &[]).unwrap();
    for key in ["copy", "move", "promote"] {
        m.exist(k(key)).unwrap();
    }
    let before = fingerprint(&m);
    for key in ["copy", "move", "promote"] {
        for force in [false, true] {
            assert_eq!(
                code(m.remove(k(key), force)),
                ErrorKind::ReplicaIsNotReady,
                "{key} force={force}"
            );
        }
    }
    assert_eq!(m.remove_all(true), 0, "RemoveAll skips them too");
    assert_unchanged(&m, &before);
    m.copy_end(k("copy")).unwrap();
    m.remove(k("copy"), true).unwrap();
    inv(&m);
}

#[test]
fn remove_replica_is_not_ready_before_the_replication_task() {
    // §3 order (as upstream): a write in flight and a running copy on the
    // same key → REPLICA_IS_NOT_READY, checked first, even forced
    let m = two_segments();
    let c = WriteConfig {
        nof_ssd_replicas: 1,
        preferred_segments: vec!["mem0".into()],
        ..WriteConfig::default()
    };
    let w = m.put_start(C1, k("k"), 64, &c).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    m.copy_start(k("k"), &["mem1"]).unwrap();
    let before = fingerprint(&m);
    for force in [false, true] {
        assert_eq!(code(m.remove(k("k"), force)), ErrorKind::ReplicaIsNotReady);
    }
    assert_unchanged(&m, &before);
    // the write ends: the copy's PROCESSING target is still not COMPLETE
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    assert_eq!(code(m.remove(k("k"), true)), ErrorKind::ReplicaIsNotReady);
    m.copy_end(k("k")).unwrap();
    m.remove(k("k"), true).unwrap();
    inv(&m);
}

#[test]
fn remove_object_has_replication_task() {
    // §3: a copy/move/promotion task whose replicas are all COMPLETE (its
    // target gone with an unmount) → OBJECT_HAS_REPLICATION_TASK (forced
    // too), before the lease check
    let m = two_segments();
    with_copy(&m, "k");
    // the target's segment goes: every remaining replica is COMPLETE, the task still runs
    m.mount_segment(C2, &spec("far", 9, 1 << 20, Pool::Memory))
        .unwrap();
    m.copy_revoke(k("k")).unwrap();
    m.copy_start(k("k"), &["far"]).unwrap();
    m.unmount_segment(C2, "far").unwrap();
    m.get_replica_list(k("k")).unwrap();
    let before = fingerprint(&m);
    for force in [false, true] {
        assert_eq!(
            code(m.remove(k("k"), force)),
            ErrorKind::ObjectHasReplicationTask
        );
        let batch = m.batch_remove(&[k("k")], force);
        assert_eq!(code(batch[0].clone()), ErrorKind::ObjectHasReplicationTask);
    }
    assert_unchanged(&m, &before);
    assert_eq!(code(m.copy_end(k("k"))), ErrorKind::ReplicaIsGone);
    m.remove(k("k"), true).unwrap();
    inv(&m);
}

#[test]
fn remove_object_has_lease_unless_forced() {
    // §3: a live lease blocks a non-forced Remove; forced removes anyway
    let m = master();
    put(&m, "k", 64, &preserve());
    m.advance_time(100).unwrap();
    m.exist(k("k")).unwrap();
    let before = fingerprint(&m);
    assert_eq!(code(m.remove(k("k"), false)), ErrorKind::ObjectHasLease);
    assert_unchanged(&m, &before);
    // live means now < lease: one ms before it still blocks, at the lease it does not
    m.set_time(T0 + 100 + LEASE - 1).unwrap();
    assert_eq!(code(m.remove(k("k"), false)), ErrorKind::ObjectHasLease);
    m.set_time(T0 + 100 + LEASE).unwrap();
    m.remove(k("k"), false).unwrap();
    put(&m, "j", 64, &preserve());
    m.exist(k("j")).unwrap();
    m.remove(k("j"), true).unwrap();
    assert_eq!(m.key_count(), 0);
    inv(&m);
}

#[test]
fn remove_ignores_soft_and_hard_pins_and_frees_at_once() {
    // §2/§3: soft pin and hard pin never block removal; buffers are freed at once
    let m = master();
    put(&m, "soft", 64, &enable(MAX_TTL));
    put(
        &m,
        "hard",
        64,
        &WriteConfig {
            hard_pin: true,
            ..WriteConfig::default()
        },
    );
    assert_eq!(gauge(&m), 1);
    m.remove(k("soft"), false).unwrap();
    m.remove(k("hard"), false).unwrap();
    let mt = m.metrics();
    assert_eq!(
        (
            mt.key_count,
            mt.soft_pin_key_count,
            mt.memory_allocated_bytes
        ),
        (0, 0, 0)
    );
    assert_eq!(mt.discarded_staging_bytes, 0);
    assert_eq!(m.index_sizes().1, 0);
    inv(&m);
}

// ----- RemoveAll / RemoveByRegex ------------------------------------------------

/// "done0".."done3" removable, "leased" leased, "writing" in flight, "copying" with a task.
fn mixed(m: &Master) {
    for i in 0..4 {
        put(m, &format!("done{i}"), 64, &preserve());
    }
    put(m, "leased", 64, &preserve());
    m.exist(k("leased")).unwrap();
    m.put_start(C1, k("writing"), 64, &preserve()).unwrap();
    with_copy(m, "copying");
}

#[test]
fn remove_all_skips_ineligible_keys_silently() {
    // §3: RemoveAll skips ineligible keys silently and returns the count removed
    let m = two_segments();
    mixed(&m);
    assert_eq!(m.remove_all(false), 4);
    assert_eq!(m.key_count(), 3);
    assert_eq!(m.remove_all(false), 0);
    assert_eq!(m.remove_all(true), 1, "forced takes the leased one only");
    assert_eq!(m.key_count(), 2);
    assert!(m.exist(k("copying")).unwrap());
    inv(&m);
}

#[test]
fn remove_by_regex_invalid_params_for_a_bad_pattern() {
    // §3: a bad pattern → INVALID_PARAMS, nothing removed
    let m = master();
    put(&m, "k", 64, &preserve());
    let before = fingerprint(&m);
    for p in ["(", "[a-", "a{2,1}", "\\"] {
        assert_eq!(
            code(m.remove_by_regex(None, p, true)),
            ErrorKind::InvalidParams,
            "{p:?}"
        );
    }
    assert_eq!(
        code(m.remove_by_regex(Some(""), "k", true)),
        ErrorKind::InvalidParams,
        "bad tenant"
    );
    assert_unchanged(&m, &before);
}

#[test]
fn remove_by_regex_invalid_params_for_an_oversized_pattern() {
    // patterns are compiled with a size limit; too big → INVALID_PARAMS
    let m = master();
    put(&m, "k", 64, &preserve());
    let before = fingerprint(&m);
    let e = m
        .remove_by_regex(None, "(?:k\\w{100}){1000}", true)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
    assert!(e.message().contains("size limit"), "{e}");
    assert_unchanged(&m, &before);
}

#[test]
fn remove_by_regex_refuses_a_pattern_too_long_before_parsing_it() {
    // §3: an oversized pattern → INVALID_PARAMS. A long pattern of wide
    // classes takes memory many times its length to parse before the
    // compiled size limit is checked, so the length is bounded first (400 000
    // copies of \pL would take gigabytes; review finding).
    let m = master();
    put(&m, "k", 64, &preserve());
    let before = fingerprint(&m);
    for p in ["k".repeat(MAX_PATTERN_BYTES + 1), "\\pL".repeat(400_000)] {
        let e = m.remove_by_regex(None, &p, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
        assert!(
            e.message()
                .contains(&format!("at most {MAX_PATTERN_BYTES}")),
            "{e}"
        );
    }
    assert_unchanged(&m, &before);
    // At the bound it is parsed (and matches nothing here).
    let p = format!("^{}$", "x".repeat(MAX_PATTERN_BYTES - 2));
    assert_eq!(m.remove_by_regex(None, &p, true).unwrap(), 0);
}

// A standby changes only by apply and restore: the hidden scan-based
// cleanup of the benchmarks clears nothing on it (review finding: it
// cleared deadlines and recorded them in the standby's own journal).
#[test]
fn the_scan_cleanup_hook_does_nothing_on_a_standby() {
    let p = master();
    put(&p, "pinned", 64, &enable(1_000));
    let s = Master::new(MasterConfig {
        standby: true,
        ..config()
    })
    .unwrap();
    s.restore(&p.snapshot().unwrap()).unwrap();
    let before = s.debug_dump();
    assert_eq!(s.debug_scan_expired(u64::MAX), 0);
    assert_eq!(s.debug_dump(), before);
}

#[test]
fn remove_by_regex_matches_anywhere_skips_ineligible_and_filters_tenant() {
    // §3: RemoveByRegex skips ineligible keys silently; the tenant filter scopes the match
    let m = two_segments();
    mixed(&m);
    for t in ["a", "b"] {
        let w = m
            .put_start(C1, Key::scoped(t, "done9"), 64, &preserve())
            .unwrap();
        m.put_end(
            C1,
            Key::scoped(t, "done9"),
            ReplicaSelector::All,
            Some(w.token),
        )
        .unwrap();
    }
    assert_eq!(m.remove_by_regex(Some("a"), "one", false).unwrap(), 1);
    assert_eq!(listed(&m, "b", "", None, 0).keys, ["done9"]);
    assert!(listed(&m, "a", "", None, 0).keys.is_empty());
    assert_eq!(m.remove_by_regex(None, "^done[0-1]$", false).unwrap(), 2);
    // done2, done3 and b/done9 go; leased, writing and copying are skipped silently
    assert_eq!(
        m.remove_by_regex(None, "^(done|leased|writing|copying)", false)
            .unwrap(),
        3
    );
    assert_eq!(
        listed(&m, "default", "", None, 0).keys,
        ["copying", "leased", "writing"]
    );
    assert_eq!(m.remove_by_regex(None, "leased", true).unwrap(), 1);
    inv(&m);
}

// ----- key count and listing ------------------------------------------------

fn listed(m: &Master, tenant: &str, prefix: &str, after: Option<&str>, limit: usize) -> KeyPage {
    m.list_keys(tenant, prefix, after, limit).unwrap()
}

#[test]
fn list_keys_filters_by_tenant_and_prefix_and_pages_with_a_cursor() {
    // paginated key listing (tenant, prefix, cursor, limit), ascending order
    let m = master();
    for key in ["b2", "a1", "b1", "b3", "c"] {
        put(&m, key, 64, &preserve());
    }
    let w = m
        .put_start(C1, Key::scoped("t", "b9"), 64, &preserve())
        .unwrap();
    m.put_end(
        C1,
        Key::scoped("t", "b9"),
        ReplicaSelector::All,
        Some(w.token),
    )
    .unwrap();
    assert_eq!(m.key_count(), 6);
    let all = listed(&m, "default", "", None, 0);
    assert_eq!(all.keys, ["a1", "b1", "b2", "b3", "c"]);
    assert_eq!(all.next, None);
    let p1 = listed(&m, "default", "b", None, 2);
    assert_eq!(p1.keys, ["b1", "b2"]);
    assert_eq!(p1.next.as_deref(), Some("b2"));
    let p2 = listed(&m, "default", "b", p1.next.as_deref(), 2);
    assert_eq!(p2.keys, ["b3"]);
    assert_eq!(p2.next, None);
    // exactly `limit` left: no further page
    let p = listed(&m, "default", "b", Some("b1"), 2);
    assert_eq!((p.keys.len(), p.next), (2, None));
    assert_eq!(listed(&m, "t", "", None, 0).keys, ["b9"]);
    assert!(listed(&m, "nobody", "", None, 0).keys.is_empty());
    assert_eq!(code(m.list_keys("", "", None, 0)), ErrorKind::InvalidParams);
}

#[test]
fn tenant_scoped_keys_cannot_collide() {
    // ("a/b","c") and ("a","b/c") are different objects
    let m = master();
    let x = Key::scoped("a/b", "c");
    let y = Key::scoped("a", "b/c");
    let wx = m.put_start(C1, x, 64, &preserve()).unwrap();
    m.put_end(C1, x, ReplicaSelector::All, Some(wx.token))
        .unwrap();
    // the other key is still absent and gets its own object
    assert_eq!(code(m.get_replica_list(y)), ErrorKind::ObjectNotFound);
    let wy = m.put_start(C1, y, 128, &preserve()).unwrap();
    m.put_end(C1, y, ReplicaSelector::All, Some(wy.token))
        .unwrap();
    assert_eq!(m.key_count(), 2);
    assert_eq!(listed(&m, "a/b", "", None, 0).keys, ["c"]);
    assert_eq!(listed(&m, "a", "", None, 0).keys, ["b/c"]);
    m.remove(x, false).unwrap();
    assert!(m.exist(y).unwrap());
    assert!(!m.exist(x).unwrap());
    // the default tenant is a tenant like any other
    put(&m, "c", 64, &preserve());
    assert!(!m.exist(Key::scoped("a/b", "c")).unwrap());
    inv(&m);
}
