//! docs/CONTRACT.md §2 groups: id fixed at creation, a shared group lease refreshed
//! by grouped reads, membership in its own domain (no change to routing),
//! and all-or-none eviction: a group goes only when every member passes the
//! per-object checks of the current pass; a group counts as its members.
mod common;
use common::*;
use mooncake_meta_core::*;

fn keys(m: &Master) -> Vec<String> {
    m.list_keys("default", "", None, 0).unwrap().keys
}

fn big() -> Master {
    master_with(config(), 1, 0, 1 << 24)
}

fn grouped(g: &str) -> WriteConfig {
    preserve().with_group(g)
}

fn group_lease(m: &Master, tenant: &str, name: &str) -> Option<u64> {
    m.capture()
        .groups
        .iter()
        .find(|g| g.tenant == tenant && g.name == name)
        .map(|g| g.lease)
}

fn own_lease(m: &Master, key: &str) -> u64 {
    m.capture()
        .objects
        .iter()
        .find(|o| o.key == key)
        .unwrap()
        .lease
}

#[test]
fn grouped_read_refreshes_the_shared_group_lease() {
    // §2: Get/Exist on a grouped object refresh the group's shared lease, protecting every member
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    put(&m, "b", 64, &grouped("g"));
    m.advance_time(5).unwrap();
    m.get_replica_list(k("a")).unwrap();
    assert_eq!(group_lease(&m, "default", "g"), Some(T0 + 5 + LEASE));
    assert_eq!(own_lease(&m, "a"), T0, "the member's own lease is PutEnd's");
    // b was never read but the group lease protects it
    assert_eq!(code(m.remove(k("b"), false)), ErrorKind::ObjectHasLease);
    m.advance_time(LEASE).unwrap();
    m.remove(k("b"), false).unwrap();
    m.advance_time(1).unwrap();
    assert!(m.exist(k("a")).unwrap());
    assert_eq!(
        group_lease(&m, "default", "g"),
        Some(T0 + 5 + LEASE + 1 + LEASE)
    );
    inv(&m);
}

#[test]
fn a_leased_member_protects_the_whole_group() {
    // §2/§5: one member read → no member is evicted (all-or-none)
    let m = big();
    for i in 0..3 {
        put(&m, &format!("g{i}"), 64, &grouped("g"));
    }
    put(&m, "solo", 64, &preserve());
    m.exist(k("g2")).unwrap();
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.candidates, r.evicted), (4, 1, 1));
    assert_eq!(keys(&m), ["g0", "g1", "g2"]);
    m.advance_time(LEASE).unwrap();
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 3);
    assert_eq!(m.key_count(), 0);
    assert_eq!(m.capture().groups.len(), 0, "an empty group is gone");
    inv(&m);
}

#[test]
fn a_hard_pinned_member_keeps_the_whole_group() {
    // §2/§5: a member that fails the hard-pin check keeps every member
    let m = big();
    put(&m, "g0", 64, &grouped("g"));
    put(
        &m,
        "g1",
        64,
        &WriteConfig {
            hard_pin: true,
            ..grouped("g")
        },
    );
    put(&m, "g2", 64, &grouped("g"));
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.evicted), (2, 0));
    assert_eq!(keys(&m), ["g0", "g1", "g2"]);
    // removing the hard-pinned member frees the group for eviction
    m.remove(k("g1"), false).unwrap();
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 2);
    inv(&m);
}

#[test]
fn a_group_counts_as_its_members_and_goes_whole() {
    // §5: all-or-none: reaching the group evicts every member, each counted
    let m = big();
    for i in 0..3 {
        put(&m, &format!("g{i}"), 64, &grouped("g")); // oldest
    }
    for i in 0..5 {
        put(&m, &format!("u{i}"), 64, &preserve());
    }
    // target ceil(8 × 0.125) = 1, but the first candidate is a group of 3
    let r = m.run_eviction(0.125, 0.0).unwrap();
    assert_eq!((r.evicted, r.evicted_bytes), (3, 192));
    assert_eq!(keys(&m).len(), 5);
    assert!(keys(&m).iter().all(|k| k.starts_with('u')));
    assert_eq!(m.metrics().evicted_keys, 3);
    inv(&m);
}

#[test]
fn a_pinned_member_keeps_the_group_out_of_the_first_pass() {
    // §2/§5: in the first pass every member must be unpinned; the second pass may take the
    // group (allowed) — never when allow_evict_soft_pinned_objects is false
    for allow in [true, false] {
        let m = master_with(
            MasterConfig {
                allow_evict_soft_pinned_objects: allow,
                ..config()
            },
            1,
            0,
            1 << 20,
        );
        put(&m, "g0", 64, &grouped("g"));
        put(
            &m,
            "g1",
            64,
            &WriteConfig {
                group: Some("g".into()),
                ..enable(MAX_TTL)
            },
        );
        put(&m, "u", 64, &preserve());
        let r = m.run_eviction(1.0, 0.0).unwrap();
        assert_eq!(r.evicted, 1, "first pass: only the ungrouped object");
        assert_eq!(keys(&m), ["g0", "g1"]);
        let r = m.run_eviction(0.0, 1.0).unwrap();
        if allow {
            assert_eq!((r.evicted, r.evicted_pinned), (2, 1));
            assert_eq!(m.key_count(), 0);
            assert_eq!(gauge(&m), 0);
        } else {
            assert_eq!(r.evicted, 0);
            assert_eq!(keys(&m), ["g0", "g1"]);
        }
        inv(&m);
    }
}

#[test]
fn group_members_spread_over_shards_are_evicted_together() {
    // §2: groups do not change routing; all-or-none holds across many shards
    let m = big();
    for i in 0..40 {
        put(&m, &format!("m{i:02}"), 64, &grouped("big"));
    }
    for i in 0..10 {
        put(&m, &format!("u{i}"), 64, &preserve());
    }
    m.exist(k("m17")).unwrap();
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.evicted), (50, 10));
    assert_eq!(m.key_count(), 40);
    m.advance_time(LEASE).unwrap();
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 40);
    inv(&m);
}

#[test]
fn same_group_name_in_two_tenants_is_two_groups() {
    // §2: the group domain is keyed by (tenant, group)
    let m = big();
    for t in ["a", "b"] {
        let key = Key::scoped(t, "x");
        let w = m.put_start(C1, key, 64, &grouped("g")).unwrap();
        m.put_end(C1, key, ReplicaSelector::All, Some(w.token))
            .unwrap();
    }
    m.exist(Key::scoped("a", "x")).unwrap();
    assert_eq!(group_lease(&m, "a", "g"), Some(T0 + LEASE));
    assert_eq!(group_lease(&m, "b", "g"), Some(0));
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!(r.evicted, 1);
    assert!(m.exist(Key::scoped("a", "x")).unwrap());
    assert!(!m.exist(Key::scoped("b", "x")).unwrap());
    inv(&m);
}

#[test]
fn a_member_without_an_evictable_replica_neither_blocks_nor_goes() {
    // §2: the per-object checks are lease, hard pin and active pin; a member still being
    // written passes them but has no memory replica to free
    let m = big();
    put(&m, "g0", 64, &grouped("g"));
    m.put_start(C1, k("g1"), 64, &grouped("g")).unwrap();
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.evicted), (1, 1));
    assert_eq!(keys(&m), ["g1"]);
    m.put_end(C1, k("g1"), ReplicaSelector::All, None).unwrap();
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 1);
    inv(&m);
}

#[test]
fn group_id_is_fixed_at_creation() {
    // §2: changing the group on Upsert → INVALID_PARAMS; a removed member leaves the group
    let m = big();
    put(&m, "a", 64, &grouped("g"));
    put(&m, "b", 64, &grouped("g"));
    assert_eq!(
        code(m.upsert_start(C1, k("a"), 64, &grouped("h"))),
        ErrorKind::InvalidParams
    );
    upsert(&m, "a", 128, &grouped("g"));
    m.remove(k("b"), true).unwrap();
    m.exist(k("a")).unwrap();
    put(&m, "b", 64, &grouped("g"));
    // the re-created b joined the live group, whose lease protects it
    assert_eq!(code(m.remove(k("b"), false)), ErrorKind::ObjectHasLease);
    assert_eq!(m.capture().groups.len(), 1);
    inv(&m);
}

#[test]
fn replacing_the_last_member_through_a_stale_write_keeps_the_group_lease() {
    // §2/§3: PutStart replacing a stale write of the group's last member
    // keeps the group and its shared lease (it is not recreated with lease 0)
    let c = MasterConfig {
        default_kv_lease_ttl_ms: 100_000,
        put_start_discard_timeout_ms: 30_000,
        ..config()
    };
    let m = master_with(c, 1, 0, 1 << 24);
    put(&m, "a", 64, &grouped("g"));
    m.put_start(C1, k("b"), 64, &grouped("g")).unwrap(); // never ended
    m.get_replica_list(k("a")).unwrap(); // group lease T0 + 100 s
    m.remove(k("a"), true).unwrap(); // b is now the last member
    assert_eq!(group_lease(&m, "default", "g"), Some(T0 + 100_000));
    m.advance_time(30_001).unwrap(); // b's write is no longer young
    let w = m.put_start(C2, k("b"), 64, &grouped("g")).unwrap();
    assert_eq!(group_lease(&m, "default", "g"), Some(T0 + 100_000));
    m.put_end(C2, k("b"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    // the group's lease, still live, protects the replacement
    assert_eq!(code(m.remove(k("b"), false)), ErrorKind::ObjectHasLease);
    assert_eq!(m.capture().groups.len(), 1);
    inv(&m);
    m.set_time(T0 + 100_000).unwrap();
    m.remove(k("b"), false).unwrap();
    assert!(m.capture().groups.is_empty(), "an empty group is gone");
    inv(&m);
}

#[test]
fn replacing_a_stale_write_under_another_group_moves_the_key() {
    // §3: the replacement is a new object: it joins the group it names and
    // leaves the stale write's group, which goes when it has no member left
    let m = big();
    m.put_start(C1, k("b"), 64, &grouped("g")).unwrap();
    m.advance_time(30_001).unwrap();
    put(&m, "b", 64, &grouped("h"));
    let groups = m.capture().groups;
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].name, "h");
    inv(&m);
}
