//! docs/CONTRACT.md §6 through the master: the survival rule evaluated once at the
//! restoring clock's now, the rebuilt index, gauge, key count and allocators,
//! counters that carry on, canonical round trips, candidate selection and
//! files. Codec-level rules are in snapshot_codec/validate/fixture.
mod common;
mod snapshot_support;

use common::*;
use mooncake_meta_core::snapshot::codec::{decode, encode};
use mooncake_meta_core::snapshot::file::{load, save_atomic};
use mooncake_meta_core::snapshot::image::{LocationRecord, ObjectRecord, SnapshotImage, TaskImage};
use mooncake_meta_core::*;
use std::fs;
use std::path::PathBuf;

const TTL: u64 = 5_000;

/// A master with nothing mounted whose manual clock reads `at`.
fn empty_at(at: u64) -> Master {
    Master::new(MasterConfig::deterministic(at)).unwrap()
}

/// Restores `bytes` into an empty master at `at`; invariants checked.
fn restored_at(bytes: &[u8], at: u64) -> (Master, RestoreReport) {
    let m = empty_at(at);
    let r = m.restore(bytes).unwrap();
    inv(&m);
    (m, r)
}

fn object<'a>(img: &'a SnapshotImage, key: &str) -> &'a ObjectRecord {
    img.objects
        .iter()
        .find(|o| o.key == key)
        .unwrap_or_else(|| panic!("{key} not in the image"))
}

fn has(m: &Master, key: &str) -> bool {
    match m.soft_pin_deadline(k(key)) {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::ObjectNotFound => false,
        Err(e) => panic!("{e}"),
    }
}

fn mem_allocated(m: &Master) -> u64 {
    m.metrics().memory_allocated_bytes
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("snapshot_restore-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ----- survival rule -------------------------------------------------------

#[test]
fn active_pin_with_expired_lease_survives_pinned_and_registered() {
    // §6 (3)+(5): an active pin alone keeps the object; it is registered and counted
    let m = master();
    put(&m, "k", 4096, &enable(TTL));
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + 1_000); // lease (T0) expired, pin live
    assert!(has(&r, "k"));
    assert_eq!(deadline(&r, "k"), Some(T0 + TTL));
    assert_eq!(r.index_sizes(), (1, 1));
    assert_eq!(gauge(&r), 1);
    assert_eq!(r.key_count(), 1);
    assert_eq!(
        (
            rep.objects_restored,
            rep.soft_pins_restored,
            rep.objects_dropped
        ),
        (1, 1, 0)
    );
    assert_eq!(mem_allocated(&r), 4096);
}

#[test]
fn expired_pin_with_live_lease_restores_as_ordinary_cache() {
    // §6 (1)+(4): the expired deadline is normalised; the live lease keeps the object
    let m = master();
    put(&m, "k", 4096, &enable(TTL));
    m.get_replica_list(k("k")).unwrap(); // lease T0 + 10 000 > pin T0 + 5 000
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + TTL); // pin due exactly now, lease live
    assert!(has(&r, "k"));
    assert_eq!(deadline(&r, "k"), None);
    assert_eq!(gauge(&r), 0);
    assert_eq!(r.index_sizes(), (0, 0));
    assert_eq!(rep.soft_pins_normalised, 1);
    assert_eq!(rep.soft_pins_restored, 0);
    // Ordinary cache: evictable once the lease has lapsed.
    r.set_time(T0 + LEASE).unwrap();
    assert_eq!(r.run_eviction(1.0, 1.0).unwrap().evicted, 1);
    assert_eq!(r.key_count(), 0);
    inv(&r);
}

#[test]
fn expired_pin_and_expired_lease_is_dropped() {
    // §6 (3): neither a live lease, an active pin nor a hard pin → dropped, space free
    let m = master();
    put(&m, "k", 4096, &enable(TTL));
    m.get_replica_list(k("k")).unwrap();
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + LEASE);
    assert!(!has(&r, "k"));
    assert_eq!((r.key_count(), gauge(&r), r.index_sizes()), (0, 0, (0, 0)));
    assert_eq!(mem_allocated(&r), 0);
    assert_eq!((rep.objects_dropped, rep.objects_restored), (1, 0));
}

#[test]
fn hard_pinned_object_with_expired_lease_survives() {
    // §6 (3) [diverges]: hard-pinned COMPLETE objects always survive
    let m = master();
    let c = WriteConfig {
        hard_pin: true,
        ..preserve()
    };
    put(&m, "hard", 4096, &c);
    put(
        &m,
        "hard-pinned-expired",
        64,
        &WriteConfig {
            hard_pin: true,
            ..enable(TTL)
        },
    );
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + 10 * LEASE);
    assert!(has(&r, "hard"));
    assert!(has(&r, "hard-pinned-expired"));
    assert_eq!(
        deadline(&r, "hard-pinned-expired"),
        None,
        "expired pin normalised"
    );
    assert_eq!((rep.objects_restored, gauge(&r)), (2, 0));
    assert!(r.capture().objects.iter().all(|o| o.hard_pin));
    // Still never evicted.
    assert_eq!(r.run_eviction(1.0, 1.0).unwrap().evicted, 0);
    assert_eq!(mem_allocated(&r), 4096 + 64);
}

#[test]
fn mid_write_object_keeps_complete_replicas_and_frees_processing_ones() {
    // §6 (2) [diverges]: PROCESSING replicas are dropped and freed, COMPLETE ones kept
    let m = master();
    let c = WriteConfig {
        nof_ssd_replicas: 1,
        ..enable(TTL)
    };
    let w = m.put_start(C1, k("k"), 4096, &c).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap(); // pin committed, NOF_SSD replica still PROCESSING
    assert!(m.metrics().nof_ssd_allocated_bytes > 0);
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + 1);
    assert_eq!(rep.replicas_dropped, 1);
    let replicas = r.get_replica_list(k("k")).unwrap();
    assert_eq!(replicas.len(), 1);
    assert_eq!(replicas[0].kind, ReplicaKind::Memory);
    assert_eq!(replicas[0].status, ReplicaStatus::Complete);
    let met = r.metrics();
    assert_eq!(met.memory_allocated_bytes, 4096);
    assert_eq!(
        met.nof_ssd_allocated_bytes, 0,
        "the PROCESSING buffer is free"
    );
    assert!(
        !r.has_pending_soft_pin(k("k")).unwrap(),
        "pending is not serialised"
    );
    assert_eq!(deadline(&r, "k"), Some(T0 + TTL));
    // No write in flight after restore: an End targets nothing PROCESSING
    // (vacuously OK, nothing changes) and a Revoke has nothing to revoke.
    r.put_end(C1, k("k"), ReplicaSelector::NofSsd, None)
        .unwrap();
    assert_eq!(
        code(r.put_revoke(C1, k("k"), ReplicaSelector::All, None)),
        ErrorKind::InvalidWrite
    );
    assert_eq!(deadline(&r, "k"), Some(T0 + TTL));
    inv(&r);
}

#[test]
fn object_left_without_complete_replica_is_dropped() {
    // §6 (2): an object left without a COMPLETE replica is dropped whatever protects it
    let m = master();
    // A first write in flight: hard-pinned, yet nothing of it is COMPLETE.
    m.put_start(
        C1,
        k("fresh"),
        4096,
        &WriteConfig {
            hard_pin: true,
            nof_ssd_replicas: 1,
            ..enable(TTL)
        },
    )
    .unwrap();
    // A case-B upsert in flight: every replica went back to PROCESSING,
    // while the committed pin is still active.
    put(&m, "inplace", 4096, &enable(MAX_TTL));
    m.get_replica_list(k("inplace")).unwrap();
    m.upsert_start(C1, k("inplace"), 4096, &preserve()).unwrap();
    put(&m, "kept", 4096, &enable(TTL));
    assert_eq!(gauge(&m), 2);
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0);
    assert!(!has(&r, "fresh"));
    assert!(!has(&r, "inplace"));
    assert!(has(&r, "kept"));
    assert_eq!(rep.objects_dropped, 2);
    assert_eq!(rep.replicas_dropped, 3);
    assert_eq!((r.key_count(), gauge(&r), r.index_sizes().1), (1, 1, 1));
    let met = r.metrics();
    assert_eq!(met.memory_allocated_bytes, 4096);
    assert_eq!(met.nof_ssd_allocated_bytes, 0);
}

#[test]
fn copy_move_and_promotion_targets_are_dropped() {
    // §6: in-flight task targets are PROCESSING (dropped, freed); tasks are not serialised
    let m = master();
    let pinned = enable(MAX_TTL);
    put(
        &m,
        "copied",
        4096,
        &WriteConfig {
            preferred_segments: vec!["mem0".into()],
            ..pinned.clone()
        },
    );
    put(
        &m,
        "moved",
        4096,
        &WriteConfig {
            preferred_segments: vec!["mem0".into()],
            ..pinned.clone()
        },
    );
    m.add_local_disk_replica(C2, k("promoted"), 4096).unwrap();
    m.exist(k("promoted")).unwrap(); // lease keeps it through restore
    m.copy_start(k("copied"), &["mem1"]).unwrap();
    m.move_start(k("moved"), "mem0", "mem1").unwrap();
    m.promotion_start(k("promoted"), &["mem1".to_string()])
        .unwrap();
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0);
    assert_eq!(rep.replicas_dropped, 3);
    assert_eq!(rep.objects_restored, 3);
    let met = r.metrics();
    let mem1 = met.segments.iter().find(|s| s.name == "mem1").unwrap();
    assert_eq!(mem1.allocated, 0, "every target lived on mem1");
    assert_eq!(met.memory_allocated_bytes, 2 * 4096);
    for key in ["copied", "moved"] {
        let reps = r.get_replica_list(k(key)).unwrap();
        assert_eq!(reps.len(), 1, "{key}");
        assert_eq!(
            r.segment_name(segment_of(&reps[0])).as_deref(),
            Some("mem0")
        );
    }
    let promoted = r.get_replica_list(k("promoted")).unwrap();
    assert_eq!(promoted.len(), 1);
    assert_eq!(promoted[0].kind, ReplicaKind::LocalDisk);
    // No task survived: new tasks start, old ones cannot be ended.
    assert_eq!(
        code(r.copy_end(k("copied"))),
        ErrorKind::ObjectNoReplicationTask
    );
    r.copy_start(k("copied"), &["mem1"]).unwrap();
    r.move_start(k("moved"), "mem0", "mem1").unwrap();
    r.promotion_start(k("promoted"), &[]).unwrap();
    inv(&r);
}

fn segment_of(d: &ReplicaDescriptor) -> u32 {
    match d.location {
        Location::Buffer { segment, .. } => segment,
        Location::LocalDisk { .. } => panic!("not a buffer"),
    }
}

#[test]
fn restored_pins_expire_at_their_original_deadlines() {
    // §6 (5) + §4.8: the rebuilt index expires each pin at its original deadline
    let m = master();
    put(&m, "a", 64, &enable(1_000));
    m.advance_time(10).unwrap();
    put(&m, "b", 64, &enable(2_000));
    put(&m, "c", 64, &enable(3_000));
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + 500);
    assert_eq!(rep.soft_pins_restored, 3);
    let (da, db, dc) = (T0 + 1_000, T0 + 10 + 2_000, T0 + 10 + 3_000);
    assert_eq!(r.run_cleanup_at(da - 1).expired, 0);
    assert_eq!(r.run_cleanup_at(da).expired, 1);
    assert_eq!(
        (deadline(&r, "a"), deadline(&r, "b"), deadline(&r, "c")),
        (None, Some(db), Some(dc))
    );
    assert_eq!(gauge(&r), 2);
    inv(&r);
    assert_eq!(r.run_cleanup_at(db).expired, 1);
    assert_eq!(r.run_cleanup_at(dc).expired, 1);
    assert_eq!((gauge(&r), r.index_sizes().1), (0, 0));
    assert_eq!(r.now(), T0 + 500, "cleanup_at does not move the clock");
    inv(&r);
}

#[test]
fn counters_carry_on_after_restore() {
    // §2/§7: replica ids and write tokens come from persisted counters
    let m = master();
    for i in 0..20 {
        put(&m, &format!("k{i}"), 64, &enable(TTL));
    }
    m.put_start(C1, k("in-flight"), 64, &preserve()).unwrap();
    let img = m.capture();
    let max_id = img
        .objects
        .iter()
        .flat_map(|o| o.replicas.iter().map(|r| r.id))
        .max()
        .unwrap();
    let max_token = img.objects.iter().map(|o| o.write_token).max().unwrap();
    let (r, _) = restored_at(&encode(&img), T0);
    let w = r
        .put_start(C1, k("new"), 64, &WriteConfig::default())
        .unwrap();
    assert!(w.token > max_token, "{} <= {max_token}", w.token);
    assert!(w.replicas.iter().all(|d| d.id > max_id));
    // The dropped in-flight write's token and replica ids are never reused either.
    let seen = object(&img, "in-flight");
    assert!(w.token > seen.write_token);
    assert!(w.replicas.iter().all(|d| d.id > seen.replicas[0].id));
    let after = r.capture();
    assert_eq!(after.next_replica_id, img.next_replica_id + 1);
    assert_eq!(after.next_write_token, img.next_write_token + 1);
    inv(&r);
}

/// A master whose whole state survives a restore at its own instant: every
/// object is COMPLETE and protected (pin, lease, group lease or hard pin),
/// no deadline is stored-but-expired.
fn survivor_master() -> Master {
    let m = master_with(config(), 3, 2, 1 << 20);
    let two = WriteConfig {
        nof_ssd_replicas: 1,
        memory_replicas: 2,
        ..enable(MAX_TTL)
    };
    put(&m, "pinned-max", 4096, &two);
    put(&m, "pinned", 100, &enable(TTL));
    put(
        &m,
        "hard",
        333,
        &WriteConfig {
            hard_pin: true,
            ..preserve()
        },
    );
    put(&m, "leased", 64, &preserve());
    m.get_replica_list(k("leased")).unwrap();
    put(&m, "g1", 64, &preserve().with_group("grp"));
    put(&m, "g2", 64, &enable(TTL).with_group("grp"));
    m.exist(k("g1")).unwrap(); // the group's shared lease protects g1
    let scoped = WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(TTL));
    for t in ["tenant-a", "租户"] {
        let w = m
            .put_start(C2, Key::scoped(t, "shared/name"), 512, &scoped)
            .unwrap();
        m.put_end(
            C2,
            Key::scoped(t, "shared/name"),
            ReplicaSelector::All,
            Some(w.token),
        )
        .unwrap();
    }
    m.add_local_disk_replica(C2, k("pinned"), 100).unwrap();
    m.add_local_disk_replica(C2, k("disk-only"), 77).unwrap();
    m.exist(k("disk-only")).unwrap();
    // A removed object leaves a gap in the counters and the allocator.
    put(&m, "removed", 64, &preserve());
    m.remove(k("removed"), true).unwrap();
    m.advance_time(7).unwrap();
    m
}

#[test]
fn snapshot_of_restore_is_identical_when_nothing_is_dropped() {
    // §6: encoding is canonical: snapshot(restore(s)) == s when nothing is dropped
    let m = survivor_master();
    let s = m.snapshot().unwrap();
    let img = decode(&s).unwrap();
    let (r, rep) = restored_at(&s, img.created_at);
    assert_eq!(rep.objects_dropped, 0);
    assert_eq!(rep.replicas_dropped, 0);
    assert_eq!(rep.objects_restored as usize, img.objects.len());
    assert_eq!(r.snapshot().unwrap(), s);
    // And again, through a second generation.
    let (r2, _) = restored_at(&r.snapshot().unwrap(), img.created_at);
    assert_eq!(r2.snapshot().unwrap(), s);
    assert_eq!(r.metrics().key_count, m.metrics().key_count);
    assert_eq!(gauge(&r), gauge(&m));
    assert_eq!(r.index_sizes().1, m.index_sizes().1);
}

#[test]
fn timestamps_are_restored_verbatim() {
    // §6: timestamps (put_start, lease, deadlines, group lease) are restored verbatim
    let m = survivor_master();
    let before = m.capture();
    let (r, rep) = restored_at(&encode(&before), before.created_at + 3);
    assert_eq!(rep.objects_dropped, 0);
    let after = r.capture();
    assert_eq!(
        after.created_at,
        before.created_at + 3,
        "created_at is the clock's now"
    );
    assert_eq!(after.objects, before.objects);
    assert_eq!(after.groups, before.groups);
    assert_eq!(after.segments, before.segments);
    for o in &after.objects {
        let b = object(&before, &o.key);
        assert_eq!(
            (o.put_start, o.lease, o.soft_pin_deadline),
            (b.put_start, b.lease, b.soft_pin_deadline)
        );
    }
}

#[test]
fn groups_and_their_shared_lease_are_restored() {
    // §2/§6: group membership and the shared lease survive; eviction stays all-or-none
    let m = master();
    put(&m, "a", 64, &preserve().with_group("g"));
    put(&m, "b", 64, &preserve().with_group("g"));
    m.advance_time(100).unwrap();
    m.exist(k("a")).unwrap(); // group lease T0 + 100 + LEASE; own leases lapsed
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + 200);
    assert_eq!(
        rep.objects_restored, 2,
        "both members live by the group lease"
    );
    let img = r.capture();
    assert_eq!(img.groups.len(), 1);
    assert_eq!(img.groups[0].lease, T0 + 100 + LEASE);
    assert!(img.objects.iter().all(|o| o.group.as_deref() == Some("g")));
    assert!(img.objects.iter().all(|o| o.lease == T0));
    // The group lease protects every member.
    assert_eq!(r.run_eviction(1.0, 1.0).unwrap().evicted, 0);
    // A read of b refreshes the shared lease (b is a member of the same group).
    r.set_time(T0 + 100 + LEASE - 1).unwrap();
    r.get_replica_list(k("b")).unwrap();
    assert_eq!(r.capture().groups[0].lease, T0 + 99 + 2 * LEASE);
    r.set_time(T0 + 99 + 2 * LEASE).unwrap();
    let ev = r.run_eviction(1.0, 1.0).unwrap();
    assert_eq!(ev.evicted, 2, "all members go together");
    assert!(r.capture().groups.is_empty());
    inv(&r);
    // The restored object keeps its group: naming another is refused.
    let (r3, _) = restored_at(&s, T0 + 200);
    assert_eq!(
        code(r3.upsert_start(C1, k("a"), 64, &preserve().with_group("h"))),
        ErrorKind::InvalidParams
    );
    r3.upsert_start(C1, k("a"), 64, &preserve().with_group("g"))
        .unwrap();
    inv(&r3);
}

#[test]
fn restored_group_with_dropped_members_keeps_only_survivors() {
    // §6: only surviving members are restored; a group left empty is not restored
    let m = master();
    put(&m, "p", 64, &enable(TTL).with_group("g"));
    put(&m, "q", 64, &preserve().with_group("g"));
    put(&m, "x", 64, &preserve().with_group("empty"));
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + 1);
    assert_eq!((rep.objects_restored, rep.objects_dropped), (1, 2));
    let img = r.capture();
    assert_eq!(img.groups.len(), 1);
    assert_eq!(img.groups[0].name, "g");
    // Removing the last member drops the group (membership is consistent).
    r.remove(k("p"), true).unwrap();
    assert!(r.capture().groups.is_empty());
    inv(&r);
}

#[test]
fn allocated_bytes_and_key_count_are_recomputed() {
    // §6 (5): key count and allocated bytes come from the survivors, allocators rebuilt
    let m = master();
    let mut expected_mem = 0;
    for i in 0..30u64 {
        let size = 64 * (i + 1);
        let c = if i % 3 == 0 { enable(TTL) } else { preserve() };
        put(&m, &format!("k{i}"), size, &c);
        if i % 3 == 0 {
            expected_mem += size;
        }
    }
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + 1);
    assert_eq!(rep.objects_restored, 10);
    assert_eq!(r.key_count(), 10);
    assert_eq!(r.metrics().key_count, 10);
    assert_eq!(mem_allocated(&r), expected_mem);
    let per_segment: u64 = r.metrics().segments.iter().map(|s| s.allocated).sum();
    assert_eq!(per_segment, expected_mem);
    // The rebuilt allocators place new buffers without touching survivors:
    // fill everything that is left, then everything is still consistent.
    let mut n = 0;
    while r
        .put_start(C1, k(&format!("fill{n}")), 4096, &WriteConfig::default())
        .is_ok()
    {
        n += 1;
    }
    assert!(n > 0);
    inv(&r);
    assert_eq!(r.key_count(), 10 + n);
}

#[test]
fn restored_buffers_are_freed_by_remove_and_dropped_by_unmount() {
    // §6 (5) + §2: each restored buffer is a block its replica names, so
    // removes free it and an unmount finds its owner like any other
    let m = master();
    for i in 0..20u64 {
        let c = WriteConfig {
            nof_ssd_replicas: (i % 2) as u32,
            ..enable(TTL)
        };
        put(&m, &format!("k{i}"), 64 * (i + 1), &c);
    }
    let s = m.snapshot().unwrap();
    let (r, rep) = restored_at(&s, T0 + 1);
    assert_eq!(rep.objects_restored, 20);
    let mem_total: u64 = (1..=20).map(|i| 64 * i).sum();
    assert_eq!(mem_allocated(&r), mem_total);
    for i in (0..20u64).step_by(4) {
        r.remove(k(&format!("k{i}")), true).unwrap();
    }
    let removed: u64 = (0..20u64).step_by(4).map(|i| 64 * (i + 1)).sum();
    assert_eq!(mem_allocated(&r), mem_total - removed);
    inv(&r);
    let on_mem0: Vec<u64> = (0..20u64)
        .filter(|i| i % 4 != 0)
        .filter(|i| {
            let d = r.get_replica_list(k(&format!("k{i}"))).unwrap();
            d.iter().any(|d| {
                matches!(d.location, Location::Buffer { segment, .. }
                    if r.segment_name(segment).as_deref() == Some("mem0"))
            })
        })
        .collect();
    let rep = r.unmount_segment(C1, "mem0").unwrap();
    assert_eq!(rep.replicas_dropped, on_mem0.len() as u64);
    // Objects with a NOF_SSD replica (odd i) survive the loss of mem0.
    let erased = on_mem0.iter().filter(|&&i| i % 2 == 0).count() as u64;
    assert_eq!(rep.objects_erased, erased);
    inv(&r);
    assert_eq!(r.remove_all(true), 15 - erased);
    assert!(r.metrics().segments.iter().all(|s| s.allocated == 0));
    inv(&r);
}

#[test]
fn discarded_buffers_are_not_restored_and_their_space_is_free() {
    // §6: discarded replicas are not serialised; their buffers are free after restore
    let m = master_with(config(), 1, 0, 8192);
    put(&m, "a", 4096, &enable(TTL));
    let w = m.upsert_start(C1, k("a"), 2048, &preserve()).unwrap(); // case C
    m.upsert_end(C1, k("a"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    let before = m.metrics();
    assert_eq!(before.discarded_staging_bytes, 4096);
    assert_eq!(before.memory_allocated_bytes, 4096 + 2048);
    assert_eq!(
        code(m.put_start(C1, k("b"), 4096, &WriteConfig::default())),
        ErrorKind::NoAvailableHandle
    );
    let s = m.snapshot().unwrap();
    let (r, _) = restored_at(&s, T0 + 1);
    let after = r.metrics();
    assert_eq!(after.discarded_staging_bytes, 0);
    assert_eq!(after.memory_allocated_bytes, 2048);
    put(&r, "b", 4096, &WriteConfig::default()); // fits only in the freed space
    assert_eq!(mem_allocated(&r), 2048 + 4096);
    // Releasing later must not double-free anything.
    r.release_discarded_at(u64::MAX / 4);
    inv(&r);
}

#[test]
fn restore_replaces_the_whole_live_state() {
    // §6: restore atomically replaces everything: objects, segments, index, gauge, discarded
    let src = master();
    put(&src, "from-snapshot", 64, &enable(TTL));
    let s = src.snapshot().unwrap();

    let live = master_with(config(), 1, 1, 1 << 16);
    for i in 0..5 {
        put(&live, &format!("old{i}"), 64, &enable(TTL + i));
    }
    upsert(&live, "old0", 128, &preserve()); // a discarded buffer
    live.set_time(T0 + 1).unwrap();
    let rep = live.restore(&s).unwrap();
    inv(&live);
    assert_eq!(rep.objects_restored, 1);
    assert_eq!(live.key_count(), 1);
    assert!(!has(&live, "old0"));
    assert_eq!((gauge(&live), live.index_sizes()), (1, (1, 1)));
    let names: Vec<String> = live
        .metrics()
        .segments
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names
        .iter()
        .all(|n| n == "mem0" || n == "mem1" || n == "nof0"));
    assert_eq!(live.metrics().discarded_staging_bytes, 0);
    // Old pins never fire against the new state.
    let st = live.run_cleanup_at(T0 + TTL + 10);
    assert_eq!(st.expired, 1);
    assert_eq!(gauge(&live), 0);
    inv(&live);
}

// ----- candidates ----------------------------------------------------------

/// Two snapshots of one master: `old` (1 key) at T0, `new` (2 keys) at T0 + 100.
fn two_generations() -> (Vec<u8>, Vec<u8>) {
    let m = master();
    put(&m, "first", 64, &enable(MAX_TTL));
    let old = m.snapshot().unwrap();
    m.advance_time(100).unwrap();
    put(&m, "second", 64, &enable(MAX_TTL));
    let new = m.snapshot().unwrap();
    (old, new)
}

#[test]
fn newest_candidate_by_creation_instant_wins() {
    // §6: candidates are tried newest first by stored creation instant
    let (old, new) = two_generations();
    for (list, want) in [(vec![&old[..], &new[..]], 1), (vec![&new[..], &old[..]], 0)] {
        let m = empty_at(T0 + 200);
        let rep = m.restore_candidates(&list).unwrap();
        assert_eq!(rep.candidate, want);
        assert_eq!(rep.created_at, T0 + 100);
        assert!(rep.rejected.is_empty());
        assert_eq!(m.key_count(), 2);
        inv(&m);
    }
}

/// `bytes` with one payload bit flipped: the checksum no longer matches.
fn bit_flipped(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let i = b.len() - 3;
    b[i] ^= 0x10;
    b
}

#[test]
fn corrupt_newest_candidate_falls_back_to_the_next() {
    // §6: the first candidate that validates wins; the report names it and the rejects
    let (old, new) = two_generations();
    // Checksum failure (never even ordered).
    let bad = bit_flipped(&new);
    let m = empty_at(T0 + 200);
    let rep = m.restore_candidates(&[&bad, &old]).unwrap();
    assert_eq!(rep.candidate, 1);
    assert_eq!(rep.created_at, T0);
    assert_eq!(rep.rejected.len(), 1);
    assert_eq!(rep.rejected[0].0, 0);
    assert!(
        rep.rejected[0].1.contains("checksum"),
        "{}",
        rep.rejected[0].1
    );
    assert_eq!(m.key_count(), 1);
    inv(&m);

    // A frame-valid, newer candidate that fails validation (duplicate replica id).
    let mut img = decode(&new).unwrap();
    img.created_at = T0 + 150;
    let dup = img.objects[0].replicas[0].id;
    img.objects[1].replicas[0].id = dup;
    let invalid = encode(&img);
    // A decodable, newest candidate that the master cannot stage (the codec
    // takes any u64 counter; one that could not carry on is refused when
    // staging).
    let mut img = decode(&new).unwrap();
    img.created_at = T0 + 180;
    img.next_replica_id = u64::MAX;
    let unstageable = encode(&img);
    assert!(decode(&unstageable).is_ok(), "passes the codec");
    let m = empty_at(T0 + 200);
    let rep = m
        .restore_candidates(&[&old, &unstageable, &invalid, &new])
        .unwrap();
    assert_eq!(rep.candidate, 3, "{:?}", rep.rejected);
    assert_eq!(rep.created_at, T0 + 100);
    let rejected: Vec<usize> = rep.rejected.iter().map(|r| r.0).collect();
    assert_eq!(rejected, vec![1, 2]);
    assert_eq!(m.key_count(), 2);
    assert_eq!(m.metrics().segments.len(), 3);
    inv(&m);
}

/// A populated live master, and a fingerprint of it.
fn live_fingerprint(m: &Master) -> (Vec<u8>, MetricsSnapshot, (usize, usize)) {
    (m.snapshot().unwrap(), m.metrics(), m.index_sizes())
}

#[test]
fn all_candidates_corrupt_leave_the_live_master_untouched() {
    // §6: DESERIALIZE_FAIL with a message; the live master is untouched
    let (old, new) = two_generations();
    let live = survivor_master();
    upsert(&live, "leased", 128, &preserve()); // a discarded buffer too
    let before = live_fingerprint(&live);
    let mut img = decode(&new).unwrap();
    img.next_replica_id = u64::MAX;
    let unstageable = encode(&img);
    assert!(decode(&unstageable).is_ok(), "passes the codec");
    let truncated = &old[..old.len() - 1];
    let bad = bit_flipped(&new);
    let err = live
        .restore_candidates(&[truncated, &bad, &unstageable, b"not a snapshot"])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeserializeFail);
    for i in 0..4 {
        assert!(
            err.message().contains(&format!("candidate {i}")),
            "{}",
            err.message()
        );
    }
    assert_eq!(live_fingerprint(&live), before);
    inv(&live);
    // Single-candidate restore of garbage: same.
    assert_eq!(code(live.restore(&bad)), ErrorKind::DeserializeFail);
    assert_eq!(code(live.restore(&[])), ErrorKind::DeserializeFail);
    assert_eq!(live_fingerprint(&live), before);
}

#[test]
fn empty_candidate_list_fails() {
    // §6: nothing to restore is a failure, and changes nothing
    let live = survivor_master();
    let before = live_fingerprint(&live);
    let err = live.restore_candidates(&[]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeserializeFail);
    assert!(!err.message().is_empty());
    assert_eq!(live_fingerprint(&live), before);
}

// ----- files and the committed fixture ---------------------------------------

#[test]
fn saved_snapshot_file_restores() {
    // §6 files: save_atomic then load gives back the same snapshot, which restores
    let m = survivor_master();
    let s = m.snapshot().unwrap();
    let dir = scratch("file");
    let path = dir.join("master.snap");
    save_atomic(&path, &s).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded, s);
    let (r, rep) = restored_at(&loaded, m.now());
    assert_eq!(rep.objects_dropped, 0);
    assert_eq!(r.snapshot().unwrap(), s);
    // Replacing the file with a newer snapshot, then restoring candidates
    // from both files (the newer wins).
    put(&m, "later", 64, &enable(TTL));
    m.advance_time(1).unwrap();
    let path2 = dir.join("master.snap.new");
    save_atomic(&path2, &m.snapshot().unwrap()).unwrap();
    let a = load(&path).unwrap();
    let b = load(&path2).unwrap();
    let r = empty_at(m.now());
    assert_eq!(r.restore_candidates(&[&a, &b]).unwrap().candidate, 1);
    assert!(has(&r, "later"));
    inv(&r);
    assert_eq!(
        load(&dir.join("missing")).unwrap_err().kind(),
        ErrorKind::DeserializeFail
    );
}

// §6 files: restore_files picks what restore_candidates over the files'
// bytes picks, reading files one at a time: a file claiming the newest
// instant whose payload is corrupt is tried first and fails, one that is
// no snapshot fails on its header, a missing one on its open, and each is
// named with its reason; the newest valid file wins, with its verified
// instant. All failing changes nothing.
#[test]
fn restore_files_takes_the_newest_valid_file_one_at_a_time() {
    let m = survivor_master();
    let dir = scratch("files");
    let older = dir.join("older.snap");
    save_atomic(&older, &m.snapshot().unwrap()).unwrap();
    put(&m, "later", 64, &enable(TTL));
    m.advance_time(5).unwrap();
    let newer_bytes = m.snapshot().unwrap();
    let newer = dir.join("newer.snap");
    save_atomic(&newer, &newer_bytes).unwrap();
    // The newest claim: an instant past the others', payload corrupt.
    m.advance_time(5).unwrap();
    let mut corrupt = m.snapshot().unwrap();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    let bad = dir.join("corrupt.snap");
    fs::write(&bad, &corrupt).unwrap();
    let garbage = dir.join("garbage.snap");
    fs::write(&garbage, vec![7u8; 4096]).unwrap();
    let missing = dir.join("missing.snap");
    let paths = [&older, &bad, &garbage, &newer, &missing].map(|p| p.as_path());

    let r = empty_at(m.now());
    let rep = r.restore_files(&paths).unwrap();
    assert_eq!(rep.candidate, 3);
    assert_eq!(rep.created_at, decode(&newer_bytes).unwrap().created_at);
    let reasons: Vec<(usize, bool)> = rep
        .rejected
        .iter()
        .map(|(i, why)| (*i, why.contains(paths[*i].to_str().unwrap())))
        .collect();
    // The corrupt file was tried (newest claim) and failed; the garbage
    // and the missing files were no candidates; the older was never tried.
    assert_eq!(reasons, [(1, false), (2, true), (4, true)]);
    assert!(rep.rejected[0].1.contains("checksum"), "{:?}", rep.rejected);
    assert_eq!(r.snapshot().unwrap().len(), {
        let t = empty_at(m.now());
        t.restore(&newer_bytes).unwrap();
        t.snapshot().unwrap().len()
    });
    assert!(has(&r, "later"));
    inv(&r);
    // The same choice as over the bytes.
    let bytes: Vec<Vec<u8>> = paths
        .iter()
        .map(|p| fs::read(p).unwrap_or_default())
        .collect();
    let views: Vec<&[u8]> = bytes.iter().map(|b| b.as_slice()).collect();
    let by_bytes = empty_at(m.now()).restore_candidates(&views).unwrap();
    assert_eq!(by_bytes.candidate, rep.candidate);

    // Every file failing: DESERIALIZE_FAIL naming each, nothing changed.
    let before = live_fingerprint(&r);
    let err = r
        .restore_files(&[bad.as_path(), garbage.as_path(), missing.as_path()])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeserializeFail);
    for (i, p) in [(1, &garbage), (2, &missing)] {
        let want = format!("candidate {i}: reading snapshot {}", p.display());
        assert!(err.message().contains(&want), "{}", err.message());
    }
    assert!(
        err.message().contains("candidate 0: payload checksum"),
        "{}",
        err.message()
    );
    assert_eq!(live_fingerprint(&r), before);
    assert_eq!(
        r.restore_files(&[]).unwrap_err().kind(),
        ErrorKind::DeserializeFail
    );
}

#[test]
fn committed_v1_fixture_restores_into_a_master() {
    // §6: the committed v1 fixture must restore; survival applies at the restoring now
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/snapshot_v1.bin");
    let bytes = load(&path).unwrap();
    let img = decode(&bytes).unwrap();
    let (m, rep) = restored_at(&bytes, img.created_at);
    // layer0/kv/0001: active pin (lease lapsed) → survives pinned, 2 replicas.
    // layer0/kv/0002: hard pin → survives; PROCESSING memory + disk replicas dropped.
    // saturated: its only replica is PROCESSING → dropped despite pin and lease.
    // team-ü: expired pin normalised; hard pin and live group lease keep it.
    assert_eq!(rep.objects_restored, 3);
    assert_eq!(rep.objects_dropped, 1);
    assert_eq!(rep.replicas_dropped, 3);
    assert_eq!(rep.soft_pins_restored, 1);
    assert_eq!(rep.soft_pins_normalised, 1);
    assert_eq!(rep.created_at, img.created_at);
    assert_eq!((m.key_count(), gauge(&m), m.index_sizes()), (3, 1, (1, 1)));
    assert_eq!(
        deadline(&m, "layer0/kv/0001"),
        Some(1_717_171_717_000 + 1_800_000)
    );
    let after = m.capture();
    let keys: Vec<&str> = after.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["layer0/kv/0001", "layer0/kv/0002", "プロンプト/🧠"]);
    let kv2 = object(&after, "layer0/kv/0002");
    assert_eq!(kv2.replicas.len(), 1);
    assert!(matches!(
        kv2.replicas[0].location,
        LocationRecord::LocalDisk { client: 33 }
    ));
    let met = m.metrics();
    assert_eq!(met.memory_allocated_bytes, 4096 + 2 * (1 << 20));
    assert_eq!(met.nof_ssd_allocated_bytes, 4096);
    assert_eq!(after.next_replica_id, 50);
    assert_eq!(after.next_write_token, 200);
    assert_eq!(after.groups.len(), 2);
    // The pin expires at its stored deadline.
    assert_eq!(m.run_cleanup_at(1_717_171_717_000 + 1_800_000).expired, 1);
    inv(&m);
}

#[test]
fn counters_without_headroom_are_rejected_at_restore() {
    // §2/§6: counters carry on, so a counter that would wrap cannot be restored
    let m = survivor_master();
    let before = live_fingerprint(&m);
    let good = m.capture();
    for field in 0..3 {
        let mut img = good.clone();
        match field {
            0 => img.next_replica_id = u64::MAX,
            1 => img.next_write_token = MAX_INSTANT + 1,
            _ => img.next_object_seq = u64::MAX - 1,
        }
        let bytes = encode(&img);
        assert!(decode(&bytes).is_ok(), "the codec accepts any u64 counter");
        let err = m.restore(&bytes).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DeserializeFail);
        assert!(err.message().contains("could not carry on"), "{err}");
        assert_eq!(live_fingerprint(&m), before);
    }
    // MAX_INSTANT itself is accepted; such a master issues no id at the
    // limit (§6: a standby refuses a record naming one), so the next put
    // is refused with nothing changed.
    let mut img = good.clone();
    img.next_replica_id = MAX_INSTANT;
    img.next_write_token = MAX_INSTANT;
    let (r, _) = restored_at(&encode(&img), good.created_at);
    let e = r.put_start(C1, k("next"), 64, &preserve()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnavailableInCurrentStatus, "{e}");
    assert!(!r.exist(k("next")).unwrap());
    inv(&r);
}

// ----- what validation refuses before a standby installs it ---------------------

fn standby() -> Master {
    Master::new(MasterConfig {
        standby: true,
        ..config()
    })
    .unwrap()
}

/// Restores `bytes` into a fresh standby, promotes it and runs `op` on it:
/// the master must hold its invariants before and after.
fn install_promote_then(bytes: &[u8], op: impl FnOnce(&Master)) {
    let s = standby();
    s.restore(bytes).unwrap();
    inv(&s);
    s.promote().unwrap();
    op(&s);
    inv(&s);
}

#[test]
fn a_standby_refuses_tasks_whose_replicas_no_master_holds() {
    // §6 Failure / §12.3: a task's target still held is a PROCESSING buffer
    // replica (MEMORY for a promotion), its source, if held, a COMPLETE
    // buffer replica; a standby installs a task verbatim, and its End or
    // Revoke would then act on replicas of the wrong kind.
    let m = master();
    let on_mem0 = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..enable(MAX_TTL)
    };
    put(&m, "copied", 4096, &on_mem0);
    put(&m, "moved", 4096, &on_mem0);
    m.add_local_disk_replica(C2, k("promoted"), 4096).unwrap();
    m.exist(k("promoted")).unwrap();
    m.copy_start(k("copied"), &["mem1", "nof0"]).unwrap();
    m.move_start(k("moved"), "mem0", "mem1").unwrap();
    m.promotion_start(k("promoted"), &["mem1".to_string()])
        .unwrap();
    let running = m.snapshot().unwrap();
    // What a master writes installs, and every End and Revoke keeps the
    // invariants; also once an unmount took the sources.
    m.unmount_segment(C1, "mem0").unwrap();
    let sources_gone = m.snapshot().unwrap();
    for (bytes, end) in [
        (&running, Ok(())),
        (&sources_gone, Err(ErrorKind::ReplicaIsGone)),
    ] {
        install_promote_then(bytes, |s| {
            assert_eq!(s.copy_end(k("copied")).map_err(|e| e.kind()), end);
        });
        install_promote_then(bytes, |s| {
            assert_eq!(s.move_end(k("moved")).map_err(|e| e.kind()), end);
        });
        install_promote_then(bytes, |s| s.copy_revoke(k("copied")).unwrap());
        install_promote_then(bytes, |s| s.move_revoke(k("moved")).unwrap());
        install_promote_then(bytes, |s| s.promotion_end(k("promoted"), true).unwrap());
        install_promote_then(bytes, |s| s.promotion_end(k("promoted"), false).unwrap());
    }

    let img = decode(&running).unwrap();
    let at =
        |img: &SnapshotImage, key: &str| img.objects.iter().position(|o| o.key == key).unwrap();
    type Mutation = Box<dyn Fn(&mut SnapshotImage)>;
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "is a COMPLETE Memory replica, not a PROCESSING buffer replica",
            Box::new(move |img| {
                let o = at(img, "copied");
                img.objects[o].replicas[1].status = 1; // a copy target
            }),
        ),
        (
            "is a COMPLETE LocalDisk replica, not a PROCESSING Memory replica",
            Box::new(move |img| {
                let o = at(img, "promoted");
                let disk = img.objects[o].replicas[0].id;
                let t = img.tasks.iter_mut().find(|t| t.key == "promoted").unwrap();
                t.task = TaskImage::Promotion { target: disk };
                img.objects[o].replicas.truncate(1); // the staged buffer gone
            }),
        ),
        (
            "is a PROCESSING Memory replica, not a COMPLETE buffer replica",
            Box::new(move |img| {
                let o = at(img, "moved");
                img.objects[o].replicas[0].status = 0; // the move's source
            }),
        ),
    ];
    for (needle, mutate) in cases {
        let mut bad = img.clone();
        mutate(&mut bad);
        let bytes = encode(&bad);
        let s = standby();
        let before = s.snapshot().unwrap();
        let err = s.restore(&bytes).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DeserializeFail, "{err}");
        assert!(err.message().contains(needle), "{needle:?}: {err}");
        assert_eq!(s.snapshot().unwrap(), before, "{needle:?}: unchanged");
        inv(&s);
    }
}

/// A format-4 image (a journal sequence, no live state): `a` and `b` each
/// hold a PROCESSING replica of a write, with write tokens 5 and `b_token`.
fn two_inferred_writes(b_token: u64) -> Vec<u8> {
    use snapshot_support::{buffer, canonical, object, segment, MEMORY, PROCESSING};
    let mut img = canonical(SnapshotImage {
        created_at: T0,
        wall_at_capture: Some(T0),
        segments: vec![segment("m", MEMORY, 0, 1 << 20)],
        objects: vec![
            object(
                "default",
                "a",
                64,
                vec![buffer(1, MEMORY, PROCESSING, "m", 0, 64)],
            ),
            object(
                "default",
                "b",
                64,
                vec![buffer(2, MEMORY, PROCESSING, "m", 64, 64)],
            ),
        ],
        ..Default::default()
    });
    img.journal_seq = 7;
    img.objects[0].write_token = 5;
    img.objects[1].write_token = b_token;
    img.next_write_token = 9;
    let bytes = encode(&img);
    assert_eq!(bytes[8], 4, "format 4");
    bytes
}

#[test]
fn a_standby_refuses_inferred_writes_sharing_a_token() {
    // §6 Failure / §12.3: a standby takes each object of a format 1-4 image
    // with a PROCESSING replica as writing, keyed by its token: two sharing
    // one are refused, as in format 5, instead of one overwriting the other
    // and the standby writing a snapshot it cannot restore.
    let s = standby();
    let before = s.snapshot().unwrap();
    let err = s.restore(&two_inferred_writes(5)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeserializeFail);
    assert!(
        err.message().contains(
            "object 0 (tenant \"default\", key \"a\") and object 1 (tenant \"default\", key \
             \"b\"): both writes in flight have write token 5"
        ),
        "{err}"
    );
    assert_eq!(s.snapshot().unwrap(), before);
    // Two tokens: both writes are installed, the standby's own (format 5)
    // snapshot restores on another standby, and each write ends by its token.
    s.restore(&two_inferred_writes(6)).unwrap();
    inv(&s);
    let own = s.snapshot().unwrap();
    assert_eq!(decode(&own).unwrap().in_flight.len(), 2);
    let other = standby();
    other.restore(&own).unwrap();
    other.promote().unwrap();
    for (key, token) in [("a", 5), ("b", 6)] {
        other
            .put_end(42, k(key), ReplicaSelector::All, Some(token))
            .unwrap();
    }
    assert!(!other
        .snapshot()
        .map(|b| decode(&b).unwrap().has_live_state())
        .unwrap());
    inv(&other);
}

#[test]
fn a_segment_no_mount_accepts_is_refused_with_its_reason() {
    // §6 Failure: a segment of size 0, or one bringing the mounted total
    // above MAX_MOUNTED_BYTES, is refused when decoded, with the reason.
    let live = survivor_master();
    let before = live_fingerprint(&live);
    let good = decode(&live.snapshot().unwrap()).unwrap();
    let cases = [
        (0, "size is 0".to_string()),
        (
            MAX_MOUNTED_BYTES,
            format!("brings the mounted total above {MAX_MOUNTED_BYTES} bytes"),
        ),
    ];
    for (size, reason) in cases {
        let mut img = good.clone();
        img.segments
            .push(snapshot_support::segment("zz", 0, 0, size));
        let err = live.restore(&encode(&img)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DeserializeFail);
        let n = img.segments.len() - 1;
        assert!(
            err.message().contains(&format!("segment {n} (\"zz\"): ")),
            "{err}"
        );
        assert!(err.message().contains(&reason), "{err}");
        assert_eq!(live_fingerprint(&live), before);
    }
}

#[test]
fn a_standby_installs_a_copy_with_100_000_targets() {
    // §12.3: each replica's role (task target or the write's) is looked up
    // in the copy's targets; the answers, not the time, are checked here.
    let n: u64 = 100_000;
    let img = snapshot_support::copy_with_targets(n, T0);
    let bytes = encode(&img);
    let s = standby();
    s.restore(&bytes).unwrap();
    let own = decode(&s.snapshot().unwrap()).unwrap();
    assert_eq!(
        (&own.objects, &own.tasks, &own.in_flight),
        (&img.objects, &img.tasks, &img.in_flight)
    );
    // The roles show in what the write's End completes (the copy's End,
    // Revoke and check_invariants at this size: tests/task_many_targets.rs).
    s.promote().unwrap();
    let processing = |s: &Master| -> Vec<u64> {
        s.capture().objects[0]
            .replicas
            .iter()
            .filter(|r| r.status == 0)
            .map(|r| r.id)
            .collect()
    };
    let token = img.objects[0].write_token;
    s.put_end(42, k("o"), ReplicaSelector::All, Some(token))
        .unwrap();
    assert_eq!(
        processing(&s),
        (1..=n).collect::<Vec<u64>>(),
        "the End completed the write's replica, no target"
    );
}
