//! docs/CONTRACT.md "Group retention": a fixed-lifetime retention deadline
//! per (tenant, group), a second eviction-priority source beside the
//! objects' own soft pins. One test per rule, named after it.
mod common;
use common::*;
use mooncake_meta_core::*;

const TTL: u64 = 60_000;
const D: &str = DEFAULT_TENANT;

fn big() -> Master {
    master_with(config(), 1, 0, 1 << 24)
}

fn grouped(g: &str) -> WriteConfig {
    preserve().with_group(g)
}

fn retain(m: &Master, groups: &[&str], ttl: u64) -> Vec<Result<u64>> {
    m.retain_groups(D, groups, ttl).unwrap()
}

fn retained(m: &Master, g: &str) -> Option<u64> {
    m.group_retention_deadline(D, g).unwrap()
}

fn gauge_r(m: &Master) -> u64 {
    m.metrics().retained_group_count
}

fn keys(m: &Master) -> Vec<String> {
    m.list_keys(D, "", None, 0).unwrap().keys
}

fn ok(rs: Vec<Result<u64>>) -> Vec<u64> {
    rs.into_iter().map(|r| r.unwrap()).collect()
}

/// A master with a journal (to see that a refused call records nothing).
fn journaled() -> Master {
    master_with(
        MasterConfig {
            journal_capacity_bytes: 1 << 20,
            ..config()
        },
        1,
        0,
        1 << 24,
    )
}

/// Every entry of `rs` (`n` of them) is the one shared refusal:
/// `INVALID_PARAMS` whose message contains `names`.
fn each_refused<T: std::fmt::Debug>(rs: Result<Vec<Result<T>>>, n: usize, names: &str) {
    let rs = rs.expect("a bad shared argument fails every entry, not the call");
    assert_eq!(rs.len(), n, "one result per group");
    for r in &rs {
        let e = r.as_ref().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
        assert!(e.message().contains(names), "{e}");
    }
}

#[test]
fn retain_ttl_zero_is_invalid_for_every_entry() {
    let m = journaled();
    retain(&m, &["a"], TTL);
    let seq = m.journal_stats().last_seq;
    each_refused(m.retain_groups(D, &["a", "b", ""], 0), 3, "ttl");
    each_refused(m.retain_groups(D, &[], 0), 0, "ttl");
    // Nothing changed: not the retained group, not the others, no record.
    assert_eq!(retained(&m, "a"), Some(T0 + TTL));
    assert_eq!(retained(&m, "b"), None);
    assert_eq!(gauge_r(&m), 1);
    assert_eq!(m.journal_stats().last_seq, seq, "nothing recorded");
    // A good call still works.
    assert_eq!(ok(retain(&m, &["b"], TTL)), [T0 + TTL]);
    assert_eq!(gauge_r(&m), 2);
    inv(&m);
}

#[test]
fn retain_ttl_above_max_is_invalid_for_every_entry() {
    let m = journaled();
    retain(&m, &["a"], TTL);
    let seq = m.journal_stats().last_seq;
    each_refused(
        m.retain_groups(D, &["a", "b"], MAX_TTL + 1),
        2,
        "max_group_retention_ttl",
    );
    each_refused(
        m.retain_groups(D, &["a"], u64::MAX),
        1,
        "max_group_retention_ttl",
    );
    // Nothing changed: not even the group that was already retained.
    assert_eq!(retained(&m, "a"), Some(T0 + TTL));
    assert_eq!(retained(&m, "b"), None);
    assert_eq!(gauge_r(&m), 1);
    assert_eq!(m.journal_stats().last_seq, seq, "nothing recorded");
    // The maximum itself is accepted.
    assert_eq!(ok(retain(&m, &["b"], MAX_TTL)), [T0 + MAX_TTL]);
    inv(&m);
}

#[test]
fn a_bad_tenant_is_invalid_for_every_entry() {
    let m = journaled();
    retain(&m, &["g"], TTL);
    let seq = m.journal_stats().last_seq;
    for t in ["", "a\0b"] {
        each_refused(m.retain_groups(t, &["g", "h"], TTL), 2, "tenant");
        each_refused(m.release_groups(t, &["g", "", "h"]), 3, "tenant");
        each_refused(m.release_groups(t, &[]), 0, "tenant");
    }
    // The tenant is checked before the TTL, as a request's shape is.
    each_refused(m.retain_groups("", &["g"], 0), 1, "tenant");
    assert_eq!(retained(&m, "g"), Some(T0 + TTL));
    assert_eq!(gauge_r(&m), 1);
    assert_eq!(m.journal_stats().last_seq, seq, "nothing recorded");
    // Good calls still work.
    assert_eq!(m.release_groups(D, &["g"]).unwrap(), [Ok(())]);
    assert_eq!(gauge_r(&m), 0);
    assert_eq!(ok(retain(&m, &["h"], TTL)), [T0 + TTL]);
    inv(&m);
}

#[test]
fn empty_group_id_is_invalid_for_that_entry_only() {
    let m = big();
    let rs = retain(&m, &["a", "", "b\0c", "b"], TTL);
    assert_eq!(rs[0], Ok(T0 + TTL));
    assert_eq!(rs[1].as_ref().unwrap_err().kind(), ErrorKind::InvalidParams);
    assert_eq!(rs[2].as_ref().unwrap_err().kind(), ErrorKind::InvalidParams);
    assert_eq!(rs[3], Ok(T0 + TTL));
    assert_eq!(gauge_r(&m), 2);
    let rel = m.release_groups(D, &["", "a"]).unwrap();
    assert_eq!(
        rel[0].as_ref().unwrap_err().kind(),
        ErrorKind::InvalidParams
    );
    assert_eq!(rel[1], Ok(()));
    assert_eq!(gauge_r(&m), 1);
    inv(&m);
}

#[test]
fn an_empty_batch_is_ok_and_changes_nothing() {
    let m = big();
    assert!(retain(&m, &[], TTL).is_empty());
    assert!(m.release_groups(D, &[]).unwrap().is_empty());
    assert_eq!(gauge_r(&m), 0);
    inv(&m);
}

#[test]
fn retain_deadline_is_now_plus_ttl_saturating() {
    let m = Master::new(MasterConfig::deterministic(MAX_INSTANT - 10)).unwrap();
    assert_eq!(ok(retain(&m, &["g"], 1_000)), [MAX_INSTANT]);
    let m = big();
    m.advance_time(7).unwrap();
    assert_eq!(ok(retain(&m, &["g"], TTL)), [T0 + 7 + TTL]);
    inv(&m);
}

#[test]
fn repeat_retain_extends_never_shortens() {
    let m = big();
    assert_eq!(ok(retain(&m, &["g"], TTL)), [T0 + TTL]);
    m.advance_time(10).unwrap();
    // A shorter repeat keeps the later deadline.
    assert_eq!(ok(retain(&m, &["g"], 5)), [T0 + TTL]);
    assert_eq!(retained(&m, "g"), Some(T0 + TTL));
    // A longer one extends it.
    assert_eq!(ok(retain(&m, &["g"], TTL)), [T0 + 10 + TTL]);
    // The same group twice in one batch: the second is a repeat.
    assert_eq!(
        ok(retain(&m, &["h", "h"], TTL)),
        [T0 + 10 + TTL, T0 + 10 + TTL]
    );
    assert_eq!(gauge_r(&m), 2);
    inv(&m);
}

#[test]
fn an_expired_deadline_counts_as_none() {
    let m = big();
    retain(&m, &["g"], TTL);
    m.advance_time(TTL).unwrap();
    // Expired but not yet cleaned up: protects nothing, reads as none.
    assert_eq!(retained(&m, "g"), None);
    assert_eq!(gauge_r(&m), 1, "stored until normalised");
    // A new retain starts from now, even if shorter than what was stored.
    assert_eq!(ok(retain(&m, &["g"], 5)), [T0 + TTL + 5]);
    assert_eq!(gauge_r(&m), 1);
    inv(&m);
}

#[test]
fn retained_group_full_rejects_new_groups_only() {
    let m = Master::new(MasterConfig {
        max_retained_groups: 2,
        ..config()
    })
    .unwrap();
    let rs = m.retain_groups(D, &["a", "b", "c"], TTL).unwrap();
    assert_eq!(rs[0], Ok(T0 + TTL));
    assert_eq!(rs[1], Ok(T0 + TTL));
    let e = rs[2].as_ref().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::GroupRetentionFull);
    assert_eq!(e.kind().name(), "GROUP_RETENTION_FULL");
    assert!(e.message().contains("max_retained_groups"), "{e}");
    assert_eq!(retained(&m, "c"), None);
    // Retained groups may still extend.
    m.advance_time(1).unwrap();
    assert_eq!(ok(retain(&m, &["a"], TTL)), [T0 + 1 + TTL]);
    // A release makes room.
    m.release_groups(D, &["b"]).unwrap();
    assert_eq!(ok(retain(&m, &["c"], TTL)), [T0 + 1 + TTL]);
    assert_eq!(gauge_r(&m), 2);
    inv(&m);
}

#[test]
fn a_full_registry_admits_once_a_deadline_has_passed() {
    // An expired deadline counts as none for admission too, before any cleanup.
    let m = Master::new(MasterConfig {
        max_retained_groups: 2,
        ..config()
    })
    .unwrap();
    retain(&m, &["a"], 10);
    retain(&m, &["b"], TTL);
    assert_eq!(
        code(retain(&m, &["c"], TTL).pop().unwrap()),
        ErrorKind::GroupRetentionFull
    );
    m.advance_time(10).unwrap();
    assert_eq!(ok(retain(&m, &["c"], TTL)), [T0 + 10 + TTL]);
    assert_eq!(retained(&m, "a"), None);
    assert_eq!(gauge_r(&m), 2, "the expired one was normalised");
    inv(&m);
}

#[test]
fn one_call_admits_new_groups_up_to_the_limit_and_extends_the_rest() {
    // The limit counts the groups active at the call's now: those admitted earlier in the same
    // call count, an expired one (normalised by the call) does not, and a retained group may
    // extend whatever the count.
    let m = Master::new(MasterConfig {
        max_retained_groups: 3,
        ..config()
    })
    .unwrap();
    retain(&m, &["a"], 10);
    retain(&m, &["b"], TTL);
    m.advance_time(10).unwrap();
    let rs = retain(&m, &["c", "d", "e", "b", "f"], TTL);
    let now = T0 + 10;
    assert_eq!(rs[0], Ok(now + TTL), "a has expired: room for c");
    assert_eq!(rs[1], Ok(now + TTL));
    assert_eq!(
        rs[2].as_ref().unwrap_err().kind(),
        ErrorKind::GroupRetentionFull
    );
    assert_eq!(rs[3], Ok(now + TTL), "b extends");
    assert_eq!(
        rs[4].as_ref().unwrap_err().kind(),
        ErrorKind::GroupRetentionFull
    );
    assert_eq!(retained(&m, "a"), None);
    assert_eq!(retained(&m, "e"), None);
    assert_eq!(gauge_r(&m), 3);
    inv(&m);
}

#[test]
fn release_ends_retention_now() {
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    retain(&m, &["g"], TTL);
    assert_eq!(gauge_r(&m), 1);
    assert_eq!(m.release_groups(D, &["g"]).unwrap(), [Ok(())]);
    assert_eq!(retained(&m, "g"), None);
    assert_eq!(gauge_r(&m), 0);
    // No longer protected: the first pass takes it.
    assert_eq!(m.run_eviction(1.0, 0.0).unwrap().evicted, 1);
    inv(&m);
}

#[test]
fn releasing_a_group_that_is_not_retained_is_ok_and_changes_nothing() {
    let m = big();
    retain(&m, &["g"], TTL);
    assert_eq!(
        m.release_groups(D, &["other", "other"]).unwrap(),
        [Ok(()), Ok(())]
    );
    assert_eq!(retained(&m, "g"), Some(T0 + TTL));
    assert_eq!(gauge_r(&m), 1);
    assert_eq!(m.release_groups("t2", &["g"]).unwrap(), [Ok(())]);
    assert_eq!(retained(&m, "g"), Some(T0 + TTL));
    inv(&m);
}

#[test]
fn releasing_a_group_whose_deadline_passed_normalises_it_as_cleanup_would() {
    let m = master_with(
        MasterConfig {
            journal_capacity_bytes: 1 << 20,
            ..config()
        },
        1,
        0,
        1 << 24,
    );
    retain(&m, &["g"], 100);
    m.advance_time(200).unwrap();
    // Passed, not cleaned yet: not retained, still stored and counted.
    assert_eq!(retained(&m, "g"), None);
    assert_eq!(gauge_r(&m), 1);
    let seq = m.journal_stats().last_seq;
    assert_eq!(m.release_groups(D, &["g"]).unwrap(), [Ok(())]);
    assert_eq!(gauge_r(&m), 0, "the release normalised it");
    assert_eq!(m.journal_stats().last_seq, seq + 1, "and recorded it");
    // Now nothing is stored: a second release changes nothing.
    assert_eq!(m.release_groups(D, &["g"]).unwrap(), [Ok(())]);
    assert_eq!(m.journal_stats().last_seq, seq + 1);
    m.run_cleanup();
    assert_eq!(gauge_r(&m), 0);
    inv(&m);
}

#[test]
fn tenants_scope_group_retention() {
    let m = big();
    m.retain_groups("t1", &["g"], TTL).unwrap();
    assert_eq!(
        m.group_retention_deadline("t1", "g").unwrap(),
        Some(T0 + TTL)
    );
    assert_eq!(m.group_retention_deadline("t2", "g").unwrap(), None);
    assert_eq!(m.group_retention_deadline(D, "g").unwrap(), None);
    inv(&m);
}

#[test]
fn the_group_deadline_is_never_copied_into_member_soft_pins() {
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    put(&m, "b", 64, &enable(TTL / 2).with_group("g"));
    retain(&m, &["g"], TTL);
    assert_eq!(deadline(&m, "a"), None);
    assert_eq!(deadline(&m, "b"), Some(T0 + TTL / 2));
    assert_eq!(gauge(&m), 1, "the soft-pin gauge counts own pins only");
    retain(&m, &["g"], MAX_TTL);
    assert_eq!(deadline(&m, "a"), None);
    assert_eq!(deadline(&m, "b"), Some(T0 + TTL / 2));
    inv(&m);
}

#[test]
fn reads_never_change_a_group_deadline() {
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    put(&m, "b", 64, &grouped("g"));
    retain(&m, &["g"], TTL);
    for _ in 0..3 {
        m.advance_time(1_000).unwrap();
        m.get_replica_list(k("a")).unwrap();
        m.exist(k("b")).unwrap();
        m.batch_get_replica_list(&[k("a"), k("b")]);
        m.batch_exist(&[k("a"), k("b")]);
        m.soft_pin_deadline(k("a")).unwrap();
        m.group_retention_deadline(D, "g").unwrap();
    }
    assert_eq!(retained(&m, "g"), Some(T0 + TTL));
    assert_eq!(gauge_r(&m), 1);
    inv(&m);
}

#[test]
fn writes_and_member_operations_never_change_a_group_deadline() {
    let m = master_with(config(), 2, 0, 1 << 20);
    let on_mem0 = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..grouped("g")
    };
    retain(&m, &["g"], TTL);
    let w = m.put_start(C1, k("a"), 64, &on_mem0).unwrap();
    m.advance_time(5).unwrap();
    m.put_end(C1, k("a"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    // A repeated End, a copy, a soft-pin action on a member, an upsert.
    m.put_end(C1, k("a"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    m.copy_start(k("a"), &["mem1"]).unwrap();
    m.copy_end(k("a")).unwrap();
    upsert(&m, "a", 64, &enable(TTL * 2).with_group("g"));
    upsert(&m, "a", 64, &disable().with_group("g"));
    put(&m, "b", 64, &grouped("g"));
    m.remove(k("b"), true).unwrap();
    assert_eq!(retained(&m, "g"), Some(T0 + TTL));
    assert_eq!(gauge_r(&m), 1);
    inv(&m);
}

#[test]
fn retention_may_precede_every_member() {
    let m = big();
    retain(&m, &["g"], TTL);
    assert_eq!(m.key_count(), 0);
    assert!(
        m.capture().groups.is_empty(),
        "no group object without members"
    );
    m.advance_time(1_000).unwrap();
    put(&m, "a", 64, &grouped("g"));
    let r = m.run_eviction(1.0, 0.0).unwrap();
    assert_eq!((r.candidates, r.evicted), (1, 0));
    assert_eq!(keys(&m), ["a"]);
    inv(&m);
}

#[test]
fn joining_member_gets_the_remaining_lifetime() {
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    retain(&m, &["g"], TTL);
    m.advance_time(TTL - 100).unwrap();
    put(&m, "late", 64, &grouped("g"));
    assert_eq!(
        retained(&m, "g"),
        Some(T0 + TTL),
        "joining did not renew it"
    );
    assert_eq!(deadline(&m, "late"), None);
    assert_eq!(m.run_eviction(1.0, 0.0).unwrap().evicted, 0);
    // The remaining 100 ms pass: both members go together.
    m.advance_time(100).unwrap();
    assert_eq!(m.run_eviction(1.0, 0.0).unwrap().evicted, 2);
    assert_eq!(m.key_count(), 0);
    inv(&m);
}

#[test]
fn retention_outlives_the_last_member() {
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    retain(&m, &["g"], TTL);
    m.remove(k("a"), true).unwrap();
    assert!(m.capture().groups.is_empty());
    assert_eq!(retained(&m, "g"), Some(T0 + TTL));
    assert_eq!(gauge_r(&m), 1);
    m.advance_time(10).unwrap();
    put(&m, "b", 64, &grouped("g"));
    assert_eq!(m.run_eviction(1.0, 0.0).unwrap().evicted, 0);
    inv(&m);
}

#[test]
fn a_group_without_members_or_retention_holds_no_memory() {
    let m = big();
    retain(&m, &["g"], TTL);
    m.release_groups(D, &["g"]).unwrap();
    retain(&m, &["h"], 10);
    m.advance_time(10).unwrap();
    m.run_cleanup();
    assert_eq!(gauge_r(&m), 0);
    assert_eq!(m.retained_group_count(), 0);
    assert_eq!(m.metrics().index_live_registrations, 0);
    assert!(m.capture().groups.is_empty());
    inv(&m);
}

#[test]
fn first_eviction_pass_skips_retained_groups() {
    let m = big();
    put(&m, "g0", 64, &grouped("g"));
    put(&m, "g1", 64, &grouped("g"));
    put(&m, "solo", 64, &preserve());
    retain(&m, &["g"], TTL);
    let r = m.run_eviction(1.0, 0.0).unwrap();
    assert_eq!((r.base, r.candidates, r.evicted), (3, 3, 1));
    assert_eq!(keys(&m), ["g0", "g1"]);
    inv(&m);
}

#[test]
fn second_pass_takes_unprotected_first() {
    let m = big();
    // Oldest first: a retained group, an own-pinned object, then two plain ones.
    put(&m, "g0", 64, &grouped("g"));
    put(&m, "g1", 64, &grouped("g"));
    put(&m, "pinned", 64, &enable(TTL));
    put(&m, "u0", 64, &preserve());
    put(&m, "u1", 64, &preserve());
    retain(&m, &["g"], TTL);
    // Target 0: everything is the second pass's; need ceil(5 × 0.4) = 2.
    let r = m.run_eviction(0.0, 0.4).unwrap();
    assert_eq!((r.evicted, r.evicted_pinned), (2, 0));
    assert_eq!(keys(&m), ["g0", "g1", "pinned"]);
    // Then protected ones, in order, with allow_evict_soft_pinned_objects:
    // the group (oldest) goes whole before the pinned object.
    let r = m.run_eviction(0.0, 0.5).unwrap();
    assert_eq!((r.base, r.evicted, r.evicted_pinned), (3, 2, 2));
    assert_eq!(keys(&m), ["pinned"]);
    inv(&m);
}

#[test]
fn second_pass_takes_retained_groups_only_if_allowed() {
    let m = master_with(
        MasterConfig {
            allow_evict_soft_pinned_objects: false,
            ..config()
        },
        1,
        0,
        1 << 24,
    );
    put(&m, "g0", 64, &grouped("g"));
    put(&m, "u", 64, &preserve());
    retain(&m, &["g"], TTL);
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!(r.evicted, 1);
    assert_eq!(keys(&m), ["g0"]);
    inv(&m);
}

#[test]
fn an_expired_retention_protects_nothing_before_cleanup() {
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    retain(&m, &["g"], TTL);
    m.advance_time(TTL).unwrap();
    assert_eq!(gauge_r(&m), 1, "not cleaned up yet");
    assert_eq!(m.run_eviction(1.0, 0.0).unwrap().evicted, 1);
    inv(&m);
}

#[test]
fn retained_groups_stay_all_or_none() {
    let m = big();
    put(&m, "g0", 64, &grouped("g"));
    put(&m, "g1", 64, &grouped("g"));
    put(&m, "g2", 64, &grouped("g"));
    retain(&m, &["g"], TTL);
    // A lowerbound that one member would meet still takes the whole group.
    let r = m.run_eviction(0.0, 0.1).unwrap();
    assert_eq!((r.evicted, r.evicted_pinned), (3, 3));
    assert_eq!(m.key_count(), 0);
    inv(&m);
}

#[test]
fn cleanup_expires_retention_in_the_same_cycle() {
    let m = big();
    retain(&m, &["a"], 10);
    retain(&m, &["b"], 20);
    put(&m, "k", 64, &enable(10));
    m.run_cleanup_at(T0 + 9);
    assert_eq!(gauge_r(&m), 2);
    let s = m.run_cleanup_at(T0 + 10);
    assert_eq!(s.expired, 1, "the soft pin, counted apart");
    assert_eq!(gauge_r(&m), 1);
    assert_eq!(m.group_retention_deadline(D, "b").unwrap(), Some(T0 + 20));
    m.set_time(T0 + 20).unwrap();
    m.run_cleanup();
    assert_eq!(gauge_r(&m), 0);
    inv(&m);
}

#[test]
fn expiry_clears_only_an_unchanged_deadline() {
    let m = big();
    retain(&m, &["g"], 10);
    m.advance_time(5).unwrap();
    retain(&m, &["g"], TTL);
    // The old entry is due but stale: nothing is cleared.
    m.run_cleanup_at(T0 + 10);
    assert_eq!(gauge_r(&m), 1);
    assert_eq!(retained(&m, "g"), Some(T0 + 5 + TTL));
    inv(&m);
    m.run_cleanup_at(T0 + 5 + TTL);
    assert_eq!(gauge_r(&m), 0);
    inv(&m);
}

#[test]
fn the_gauge_counts_each_logical_transition_once() {
    let m = big();
    retain(&m, &["g"], TTL);
    assert_eq!(gauge_r(&m), 1);
    retain(&m, &["g"], TTL * 2);
    assert_eq!(gauge_r(&m), 1, "an extension is not a transition");
    m.release_groups(D, &["g", "g"]).unwrap();
    assert_eq!(gauge_r(&m), 0);
    m.release_groups(D, &["g"]).unwrap();
    assert_eq!(gauge_r(&m), 0);
    retain(&m, &["g"], 1);
    m.advance_time(1).unwrap();
    m.run_cleanup();
    m.run_cleanup();
    assert_eq!(gauge_r(&m), 0);
    inv(&m);
}

#[test]
fn prometheus_exposes_master_retained_group_count() {
    let m = big();
    retain(&m, &["a", "b"], TTL);
    let text = m.metrics_prometheus();
    assert!(
        text.contains("# TYPE master_retained_group_count gauge\nmaster_retained_group_count 2\n"),
        "{text}"
    );
}

#[test]
fn the_retention_index_stays_bounded_under_repeated_extension() {
    let m = big();
    for i in 0..20_000u64 {
        m.set_time(T0 + i).unwrap();
        retain(&m, &["g"], TTL);
    }
    inv(&m);
    assert_eq!(retained(&m, "g"), Some(T0 + 19_999 + TTL));
}

#[test]
fn random_retention_sequences_keep_the_invariants() {
    // A small reference model: (group → deadline), checked after each step.
    let m = Master::new(MasterConfig {
        max_retained_groups: 4,
        ..MasterConfig::deterministic(T0)
    })
    .unwrap();
    m.mount_segment(C1, &spec("mem0", 0, 1 << 24, Pool::Memory))
        .unwrap();
    let names = ["a", "b", "c", "d", "e", "f"];
    let mut model: std::collections::HashMap<&str, u64> = Default::default();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for step in 0..3_000 {
        let now = m.now();
        let g = names[rnd(names.len() as u64) as usize];
        match rnd(6) {
            0 | 1 => {
                let ttl = 1 + rnd(50);
                let active = model.get(g).copied().filter(|&d| now < d);
                let count = model.values().filter(|&&d| now < d).count();
                let got = retain(&m, &[g], ttl).pop().unwrap();
                if active.is_none() && count >= 4 {
                    assert_eq!(code(got), ErrorKind::GroupRetentionFull, "step {step}");
                } else {
                    let want = active.map_or(now + ttl, |d| d.max(now + ttl));
                    assert_eq!(got, Ok(want), "step {step}");
                    model.insert(g, want);
                }
            }
            2 => {
                m.release_groups(D, &[g]).unwrap();
                model.remove(g);
            }
            3 => {
                m.advance_time(rnd(20)).unwrap();
            }
            4 => {
                m.run_cleanup();
                let now = m.now();
                model.retain(|_, d| now < *d);
                assert_eq!(gauge_r(&m), model.len() as u64, "step {step}");
            }
            _ => {
                let key = format!("{g}{step}");
                put(&m, &key, 64, &grouped(g));
                let protected: Vec<String> = keys(&m)
                    .into_iter()
                    .filter(|k| model.get(&k[..1]).is_some_and(|&d| m.now() < d))
                    .collect();
                m.run_eviction(1.0, 0.0).unwrap();
                assert_eq!(keys(&m), protected, "step {step}");
            }
        }
        for n in names {
            let want = model.get(n).copied().filter(|&d| m.now() < d);
            assert_eq!(retained(&m, n), want, "step {step} group {n}");
        }
        inv(&m);
    }
}

// ----- snapshot and restore ---------------------------------------------------

#[test]
fn snapshots_carry_retention_deadlines_of_member_less_groups_too() {
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    retain(&m, &["g", "empty"], TTL);
    // A live lease, so the object survives the restore (retention is the
    // group's, not a survival reason of its members).
    m.get_replica_list(k("a")).unwrap();
    let img = m.capture();
    let r: Vec<(&str, &str, u64)> = img
        .retention
        .iter()
        .map(|r| (r.tenant.as_str(), r.group.as_str(), r.deadline))
        .collect();
    assert_eq!(r, [(D, "empty", T0 + TTL), (D, "g", T0 + TTL)]);
    let bytes = m.snapshot().unwrap();
    assert_eq!(&bytes[8..12], &3u32.to_le_bytes(), "format 3");

    let back = Master::new(config()).unwrap();
    back.restore(&bytes).unwrap();
    assert_eq!(
        back.group_retention_deadline(D, "empty").unwrap(),
        Some(T0 + TTL)
    );
    assert_eq!(
        back.group_retention_deadline(D, "g").unwrap(),
        Some(T0 + TTL)
    );
    assert_eq!(gauge_r(&back), 2);
    assert_eq!(back.snapshot().unwrap(), bytes, "canonical");
    inv(&back);
}

#[test]
fn a_snapshot_without_retention_keeps_format_2() {
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    assert_eq!(&m.snapshot().unwrap()[8..12], &2u32.to_le_bytes());
}

#[test]
fn restore_normalises_expired_retention_and_registers_active_ones() {
    let m = big();
    retain(&m, &["short"], 10);
    retain(&m, &["long"], TTL);
    let bytes = m.snapshot().unwrap();
    let back = Master::new(MasterConfig::deterministic(T0 + 10)).unwrap();
    // A retention the restore replaces goes with the old state.
    back.retain_groups(D, &["old"], TTL).unwrap();
    back.restore(&bytes).unwrap();
    assert_eq!(back.group_retention_deadline(D, "short").unwrap(), None);
    assert_eq!(back.group_retention_deadline(D, "old").unwrap(), None);
    assert_eq!(
        back.group_retention_deadline(D, "long").unwrap(),
        Some(T0 + TTL)
    );
    assert_eq!(gauge_r(&back), 1, "the admission count is what survived");
    inv(&back);
    // The restored registration expires through cleanup.
    back.run_cleanup_at(T0 + TTL);
    assert_eq!(gauge_r(&back), 0);
    inv(&back);
}

#[test]
fn restore_shifts_retention_deadlines_by_the_clock_shift() {
    let m = big();
    // Timeline 600 s ahead of the wall at capture: skew +600 000.
    m.set_wall_time(T0 - 600_000).unwrap();
    retain(&m, &["g"], MAX_TTL);
    let bytes = m.snapshot().unwrap();
    let back = Master::new(config()).unwrap();
    let report = back.restore(&bytes).unwrap();
    assert_eq!(report.clock_shift_ms, -600_000);
    assert_eq!(
        back.group_retention_deadline(D, "g").unwrap(),
        Some(T0 + MAX_TTL - 600_000)
    );
    inv(&back);
}

#[test]
fn restore_rejects_more_active_retention_than_max_retained_groups() {
    let m = big();
    retain(&m, &["a", "b", "c"], TTL);
    let bytes = m.snapshot().unwrap();
    let small = Master::new(MasterConfig {
        max_retained_groups: 2,
        ..config()
    })
    .unwrap();
    small.retain_groups(D, &["mine"], TTL).unwrap();
    let e = small.restore(&bytes).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeserializeFail);
    assert!(e.message().contains("max_retained_groups"), "{e}");
    // The live master is untouched.
    assert_eq!(
        small.group_retention_deadline(D, "mine").unwrap(),
        Some(T0 + TTL)
    );
    assert_eq!(gauge_r(&small), 1);
    inv(&small);
}

#[test]
fn a_cleanup_batch_from_a_replaced_index_is_dropped() {
    // Restore installs the same deadline again: the old index's due entry
    // must not clear the restored one.
    let m = big();
    retain(&m, &["g"], 10);
    let bytes = m.snapshot().unwrap();
    m.restore(&bytes).unwrap();
    assert_eq!(gauge_r(&m), 1);
    inv(&m);
    m.run_cleanup_at(T0 + 10);
    assert_eq!(gauge_r(&m), 0);
    inv(&m);
}
