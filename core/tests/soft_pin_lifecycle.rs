//! docs/CONTRACT.md §4.4–§4.6 and §4.9: pending survives only while the write can
//! still complete, deadlines carry across replacement only while unexpired,
//! reads never touch soft pin, and the gauge moves only with committed state.
mod common;
use common::*;
use mooncake_meta_core::*;

const TTL: u64 = 5_000;

fn two_type(ttl: u64) -> WriteConfig {
    WriteConfig {
        nof_ssd_replicas: 1,
        ..enable(ttl)
    }
}

#[test]
fn partial_revoke_keeps_pending_and_later_end_commits() {
    // §4.4: partial revoke keeps pending while another eligible replica can complete
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &two_type(TTL)).unwrap();
    m.put_revoke(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    assert!(m.has_pending_soft_pin(k("k")).unwrap());
    inv(&m);
    m.advance_time(50).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + 50 + TTL));
    assert_eq!(gauge(&m), 1);
    inv(&m);
}

#[test]
fn revoking_the_last_eligible_replica_erases_object_and_pending() {
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &enable(TTL)).unwrap();
    m.put_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(
        code(m.has_pending_soft_pin(k("k"))),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(m.key_count(), 0);
    inv(&m);
}

#[test]
fn revoke_never_changes_committed_state() {
    // §4.4: committed state is never changed by a revoke unless the object is erased
    let m = master();
    put(
        &m,
        "k",
        64,
        &WriteConfig {
            nof_ssd_replicas: 1,
            ..enable(TTL)
        },
    );
    m.advance_time(10).unwrap();
    let w = m.upsert_start(C1, k("k"), 64, &two_type(1)).unwrap();
    m.upsert_revoke(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    assert!(m.has_pending_soft_pin(k("k")).unwrap());
    m.upsert_revoke(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    // case B revoked entirely: the object (every replica PROCESSING) and its deadline go
    assert_eq!(m.key_count(), 0);
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

#[test]
fn unmount_clears_pending_when_no_eligible_replica_is_left() {
    let m = master();
    let c = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..two_type(TTL)
    };
    let w = m.put_start(C1, k("k"), 64, &c).unwrap();
    let r = m.unmount_segment(C1, "nof0").unwrap();
    assert_eq!(r.replicas_dropped, 1);
    assert!(m.has_pending_soft_pin(k("k")).unwrap());
    m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!(m.key_count(), 0);
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))),
        ErrorKind::ObjectNotFound
    );
    inv(&m);
}

#[test]
fn preemption_clears_pending_of_the_preempted_write() {
    let m = master();
    let w1 = m.put_start(C1, k("k"), 64, &enable(TTL)).unwrap();
    let w2 = m.upsert_start(C2, k("k"), 64, &preserve()).unwrap();
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, Some(w1.token))),
        ErrorKind::IllegalClient
    );
    m.upsert_end(C2, k("k"), ReplicaSelector::All, Some(w2.token))
        .unwrap();
    assert_eq!(
        deadline(&m, "k"),
        None,
        "the preempted ENABLE must not commit"
    );
    inv(&m);
}

#[test]
fn stale_write_sweep_clears_pending_and_frees_at_release() {
    let m = master();
    m.put_start(C1, k("k"), 64, &enable(TTL)).unwrap();
    let used = m.metrics().memory_allocated_bytes;
    assert_eq!(used, 64);
    m.advance_time(600_001).unwrap();
    assert_eq!(m.sweep_stale_writes_at(m.now()), 1);
    assert_eq!(m.key_count(), 0);
    assert_eq!(gauge(&m), 0);
    inv(&m);
    m.release_discarded_at(m.now());
    assert_eq!(m.metrics().memory_allocated_bytes, 0);
    inv(&m);
}

#[test]
fn upsert_preserve_keeps_the_deadline() {
    // §4.5 case B: committed deadline stays while PROCESSING; PRESERVE keeps it at End
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    m.advance_time(100).unwrap();
    let w = m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    assert_eq!(gauge(&m), 1);
    inv(&m);
}

#[test]
fn same_size_enable_restarts_at_end() {
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    m.advance_time(100).unwrap();
    let w = m.upsert_start(C1, k("k"), 64, &enable(TTL)).unwrap();
    m.advance_time(100).unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + 200 + TTL));
    inv(&m);
}

#[test]
fn size_changing_disable_removes_at_end() {
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    let w = m.upsert_start(C1, k("k"), 128, &disable()).unwrap();
    // carried and still registered while the new replicas are PROCESSING
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    assert_eq!(m.index_sizes().1, 1);
    inv(&m);
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), None);
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

#[test]
fn inherited_deadline_can_expire_mid_write() {
    // §4.5: the carried deadline keeps its original instant; cleanup may expire it
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    let w = m.upsert_start(C1, k("k"), 128, &preserve()).unwrap();
    assert_eq!(m.run_cleanup_at(T0 + TTL).expired, 1);
    assert_eq!(deadline(&m, "k"), None);
    inv(&m);
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), None);
    inv(&m);
}

#[test]
fn expired_deadline_is_never_carried_across_resize() {
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    m.advance_time(TTL).unwrap();
    m.upsert_start(C1, k("k"), 128, &preserve()).unwrap();
    assert_eq!(deadline(&m, "k"), None);
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

#[test]
fn expired_deadline_is_never_carried_across_preemption() {
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    // case B write in flight: nothing COMPLETE; a second upsert preempts it → case A
    m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    m.advance_time(TTL).unwrap();
    m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    assert_eq!(deadline(&m, "k"), None);
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

#[test]
fn unexpired_deadline_is_carried_across_preemption() {
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    m.advance_time(10).unwrap();
    let w = m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    assert_eq!(gauge(&m), 1);
    inv(&m);
}

#[test]
fn stale_put_replacement_carries_nothing() {
    // §4.5: PutStart replacing a stale write carries nothing
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    m.upsert_start(C1, k("k"), 64, &preserve()).unwrap(); // nothing COMPLETE now
    m.advance_time(30_001).unwrap(); // no longer young
    m.put_start(C2, k("k"), 64, &preserve()).unwrap();
    assert_eq!(deadline(&m, "k"), None);
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

#[test]
fn get_and_exist_after_expiry_never_reactivate() {
    // §4.6: reads grant only the lease
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    m.advance_time(TTL + 1).unwrap();
    for _ in 0..3 {
        m.get_replica_list(k("k")).unwrap();
        assert!(m.exist(k("k")).unwrap());
        m.batch_get_replica_list(&[k("k")]);
        m.batch_exist(&[k("k")]);
    }
    assert_eq!(
        deadline(&m, "k"),
        Some(T0 + TTL),
        "reads must not normalise either"
    );
    assert_eq!(gauge(&m), 1);
    assert_eq!(m.run_cleanup().expired, 1);
    m.get_replica_list(k("k")).unwrap();
    assert_eq!(deadline(&m, "k"), None);
    assert_eq!(gauge(&m), 0);
    inv(&m);
}

#[test]
fn reads_before_expiry_never_extend() {
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    for _ in 0..10 {
        m.advance_time(TTL / 10 - 1).unwrap();
        m.get_replica_list(k("k")).unwrap();
    }
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
}

/// Names of the segments holding `key`'s readable buffer replicas, sorted.
fn readable_on(m: &Master, key: &str) -> Vec<String> {
    let mut names: Vec<String> = m
        .get_replica_list(k(key))
        .unwrap()
        .iter()
        .filter_map(|d| match d.location {
            Location::Buffer { segment, .. } => Some(m.segment_name(segment).unwrap()),
            Location::LocalDisk { .. } => None,
        })
        .collect();
    names.sort();
    names
}

#[test]
fn copy_move_promotion_are_not_activation_points() {
    // §4.6: copy, move, promotion (start and end) and
    // add_local_disk_replica are never activation points: each leaves the
    // deadline as it is, though time has moved since the End (an
    // activation would give now + ttl).
    let m = master_with(config(), 3, 1, 1 << 20);
    let on_mem0 = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..enable(TTL)
    };
    put(&m, "k", 64, &on_mem0);
    assert_eq!(readable_on(&m, "k"), ["mem0"]);
    let pinned = Some(T0 + TTL);
    assert_eq!(deadline(&m, "k"), pinned);
    let step = |what: &str| {
        m.advance_time(1).unwrap();
        what.to_string()
    };

    let what = step("copy_start");
    let targets = m.copy_start(k("k"), &["mem2"]).unwrap();
    assert_eq!(targets.len(), 1, "{what}");
    assert_eq!(deadline(&m, "k"), pinned, "{what}");
    let what = step("copy_end");
    m.copy_end(k("k")).unwrap();
    assert_eq!(m.readable_count(k("k")), 2, "{what}");
    assert_eq!(readable_on(&m, "k"), ["mem0", "mem2"], "{what}");
    assert_eq!(deadline(&m, "k"), pinned, "{what}");

    let what = step("move_start");
    m.move_start(k("k"), "mem2", "mem1").unwrap();
    assert_eq!(deadline(&m, "k"), pinned, "{what}");
    let what = step("move_end");
    m.move_end(k("k")).unwrap();
    assert_eq!(m.readable_count(k("k")), 2, "{what}");
    assert_eq!(readable_on(&m, "k"), ["mem0", "mem1"], "{what}");
    assert_eq!(deadline(&m, "k"), pinned, "{what}");

    // Promotion of a pinned object (a NOF_SSD and a LOCAL_DISK replica, no
    // memory one) keeps its deadline.
    let nof_only = WriteConfig {
        memory_replicas: 0,
        nof_ssd_replicas: 1,
        ..enable(TTL)
    };
    let p_at = m.now();
    put(&m, "p", 64, &nof_only);
    let p_pinned = Some(p_at + TTL);
    assert_eq!(deadline(&m, "p"), p_pinned);
    let what = step("add_local_disk_replica (pinned)");
    m.add_local_disk_replica(C1, k("p"), 64).unwrap();
    assert_eq!(deadline(&m, "p"), p_pinned, "{what}");
    let what = step("promotion_start (pinned)");
    m.promotion_start(k("p"), &["mem0".into()]).unwrap();
    assert_eq!(deadline(&m, "p"), p_pinned, "{what}");
    let what = step("promotion_end (pinned)");
    m.promotion_end(k("p"), true).unwrap();
    assert_eq!(m.readable_count(k("p")), 3, "{what}");
    assert_eq!(readable_on(&m, "p"), ["mem0", "nof0"], "{what}");
    assert_eq!(deadline(&m, "p"), p_pinned, "{what}");

    // An object never pinned stays unpinned through a promotion.
    m.add_local_disk_replica(C1, k("d"), 64).unwrap();
    assert_eq!(deadline(&m, "d"), None);
    m.promotion_start(k("d"), &[]).unwrap();
    m.promotion_end(k("d"), true).unwrap();
    assert_eq!(m.readable_count(k("d")), 2);
    assert_eq!(deadline(&m, "d"), None);
    assert_eq!(gauge(&m), 2);
    inv(&m);
}

#[test]
fn remove_of_a_pinned_object_decrements_the_gauge() {
    // docs/CONTRACT.md §3 (Remove): explicit removal still removes soft-pinned objects
    let m = master();
    put(&m, "k", 64, &enable(TTL));
    assert_eq!(gauge(&m), 1);
    m.remove(k("k"), false).unwrap();
    assert_eq!(gauge(&m), 0);
    assert_eq!(m.index_sizes().1, 0);
    inv(&m);
}

#[test]
fn gauge_counts_stored_but_expired_until_normalised() {
    // §4.9: gauge converges within one cleanup
    let m = master();
    for i in 0..10 {
        put(&m, &format!("k{i}"), 64, &enable(TTL + i));
    }
    m.advance_time(TTL + 5).unwrap();
    assert_eq!(gauge(&m), 10);
    let st = m.run_cleanup();
    assert_eq!(st.expired, 6);
    assert_eq!(gauge(&m), 4);
    inv(&m);
}
