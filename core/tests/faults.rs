//! Fault cases: segments unmounted in the middle of a write and
//! of a copy or move, a client that never ends its write, restore whose
//! newest candidate is corrupt, allocation failure during a size-changing
//! upsert. Each ends with `check_invariants()` (docs/CONTRACT.md §8).
mod common;
mod support;

use common::*;
use mooncake_meta_core::snapshot::image::SnapshotImage;
use mooncake_meta_core::*;
use support::snapmut::reframe;

const TTL: u64 = 60_000;
const RELEASE: u64 = 600_000;
const KB: u64 = 1024;

fn on(segment: &str, c: WriteConfig) -> WriteConfig {
    WriteConfig {
        preferred_segments: vec![segment.to_string()],
        ..c
    }
}

fn mem_allocated(m: &Master, segment: &str) -> u64 {
    m.metrics()
        .segments
        .iter()
        .find(|s| s.name == segment)
        .map_or(0, |s| s.allocated)
}

fn segments_of(m: &Master, key: &str) -> Vec<String> {
    let mut out: Vec<String> = m
        .get_replica_list(k(key))
        .unwrap()
        .iter()
        .map(|d| match d.location {
            Location::Buffer { segment, .. } => m.segment_name(segment).unwrap(),
            Location::LocalDisk { client, .. } => format!("disk:{client}"),
        })
        .collect();
    out.sort();
    out
}

/// The state an object-level fault must not change: segments, groups and
/// objects (the id counters may move: a failed allocation consumes ids).
fn object_state(m: &Master) -> SnapshotImage {
    SnapshotImage {
        next_replica_id: 0,
        next_write_token: 0,
        next_object_seq: 0,
        ..m.capture()
    }
}

// ----- segment unmounted mid-write --------------------------------------

#[test]
fn unmounting_the_only_replica_mid_write_erases_the_object_and_its_pending() {
    // §2: unmount drops the segment's replicas and erases objects left without one
    let m = master();
    m.put_start(C1, k("k"), 4 * KB, &on("mem0", enable(TTL)))
        .unwrap();
    assert!(m.has_pending_soft_pin(k("k")).unwrap());
    let r = m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!((r.replicas_dropped, r.objects_erased), (1, 1));
    assert_eq!(
        code(m.has_pending_soft_pin(k("k"))),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, None)),
        ErrorKind::ObjectNotFound
    );
    assert_eq!((m.key_count(), gauge(&m), m.index_sizes().1), (0, 0, 0));
    inv(&m);
    // The key is free again and the remaining segments are empty.
    put(&m, "k", 4 * KB, &enable(TTL));
    assert_eq!(segments_of(&m, "k"), ["mem1"]);
    inv(&m);
}

#[test]
fn unmounting_one_replica_mid_write_keeps_pending_while_another_can_complete() {
    // §4.4: pending survives while an eligible replica is PROCESSING on a mounted segment
    let m = master();
    let c = WriteConfig {
        memory_replicas: 2,
        ..enable(TTL)
    };
    let w = m.put_start(C1, k("k"), 4 * KB, &c).unwrap();
    assert_eq!(w.replicas.len(), 2);
    let r = m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!((r.replicas_dropped, r.objects_erased), (1, 0));
    assert!(m.has_pending_soft_pin(k("k")).unwrap());
    inv(&m);
    m.advance_time(7).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + 7 + TTL));
    assert_eq!(segments_of(&m, "k"), ["mem1"]);
    assert_eq!(gauge(&m), 1);
    inv(&m);
}

#[test]
fn unmounting_the_unfinished_half_of_a_write_ends_the_write_and_keeps_the_object() {
    // §3 PutEnd: the write ends when no replica of it is PROCESSING
    let m = master();
    let c = WriteConfig {
        nof_ssd_replicas: 1,
        ..enable(TTL)
    };
    let w = m.put_start(C1, k("k"), 4 * KB, &c).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    let r = m.unmount_segment(C1, "nof0").unwrap();
    assert_eq!((r.replicas_dropped, r.objects_erased), (1, 0));
    assert!(!m.has_pending_soft_pin(k("k")).unwrap());
    inv(&m);
    // No write in flight: End(ALL) is OK because every targeted replica is COMPLETE.
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    assert_eq!(gauge(&m), 1);
    inv(&m);
}

#[test]
fn unmounting_a_case_b_upsert_mid_write_erases_the_object_and_its_deadline() {
    // §2: an erasure by unmount counts as a deletion (index entry removed, gauge −1)
    let m = master();
    put(&m, "k", 4 * KB, &on("mem0", enable(TTL)));
    assert_eq!(gauge(&m), 1);
    m.upsert_start(C2, k("k"), 4 * KB, &preserve()).unwrap();
    let r = m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!((r.replicas_dropped, r.objects_erased), (1, 1));
    assert_eq!((m.key_count(), gauge(&m), m.index_sizes().1), (0, 0, 0));
    assert_eq!(m.run_cleanup_at(T0 + TTL).expired, 0);
    inv(&m);
}

#[test]
fn unmounting_a_case_c_upsert_mid_write_keeps_the_old_buffers_until_release() {
    // §3: case-C old buffers are discarded until now + release, whatever happens to the object
    let m = master();
    put(&m, "k", 4 * KB, &on("mem0", enable(TTL)));
    m.upsert_start(C1, k("k"), 8 * KB, &on("mem1", preserve()))
        .unwrap();
    assert_eq!(
        (mem_allocated(&m, "mem0"), mem_allocated(&m, "mem1")),
        (4 * KB, 8 * KB)
    );
    let r = m.unmount_segment(C1, "mem1").unwrap();
    assert_eq!((r.replicas_dropped, r.objects_erased), (1, 1));
    assert_eq!((m.key_count(), gauge(&m)), (0, 0));
    // The replaced 4 KiB stay allocated (discarded) until the release instant.
    assert_eq!(mem_allocated(&m, "mem0"), 4 * KB);
    inv(&m);
    m.set_time(T0 + RELEASE - 1).unwrap();
    m.run_maintenance_tick();
    assert_eq!(mem_allocated(&m, "mem0"), 4 * KB);
    m.set_time(T0 + RELEASE).unwrap();
    m.run_maintenance_tick();
    assert_eq!(mem_allocated(&m, "mem0"), 0);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    inv(&m);
}

// ----- segment unmounted mid-copy / mid-move ----------------------------

#[test]
fn unmounting_the_copy_target_makes_copy_end_report_replica_is_gone() {
    // §3 Copy: REPLICA_IS_GONE if a target vanished; the task is abandoned
    let m = master();
    put(&m, "k", 4 * KB, &on("mem0", enable(TTL)));
    m.copy_start(k("k"), &["mem1"]).unwrap();
    let r = m.unmount_segment(C1, "mem1").unwrap();
    assert_eq!((r.replicas_dropped, r.objects_erased), (1, 0));
    inv(&m);
    assert_eq!(code(m.copy_end(k("k"))), ErrorKind::ReplicaIsGone);
    assert_eq!(segments_of(&m, "k"), ["mem0"]);
    assert_eq!(code(m.copy_end(k("k"))), ErrorKind::ObjectNoReplicationTask);
    inv(&m);
    // The key is usable again: a new copy to a re-mounted segment completes.
    m.mount_segment(C1, &spec("mem1", 1, 1 << 20, Pool::Memory))
        .unwrap();
    m.copy_start(k("k"), &["mem1"]).unwrap();
    m.copy_end(k("k")).unwrap();
    assert_eq!(segments_of(&m, "k"), ["mem0", "mem1"]);
    // Copy is no activation point (§4.6).
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    inv(&m);
}

#[test]
fn unmounting_the_copy_source_erases_the_object_at_copy_end() {
    // §3 Copy: REPLICA_IS_GONE if the source vanished; an object left with no replica goes
    let m = master();
    put(&m, "k", 4 * KB, &on("mem0", enable(TTL)));
    m.copy_start(k("k"), &["mem1"]).unwrap();
    let r = m.unmount_segment(C1, "mem0").unwrap();
    // The PROCESSING target still holds the object.
    assert_eq!((r.replicas_dropped, r.objects_erased), (1, 0));
    assert_eq!(
        code(m.get_replica_list(k("k"))),
        ErrorKind::ReplicaIsNotReady
    );
    inv(&m);
    assert_eq!(code(m.copy_end(k("k"))), ErrorKind::ReplicaIsGone);
    assert_eq!(code(m.get_replica_list(k("k"))), ErrorKind::ObjectNotFound);
    assert_eq!(m.key_count(), 0);
    assert_eq!((gauge(&m), m.index_sizes().1), (0, 0));
    assert_eq!(mem_allocated(&m, "mem1"), 0);
    inv(&m);
}

#[test]
fn unmounting_the_move_target_keeps_the_source() {
    // §3 Move: REPLICA_IS_GONE if the target vanished; the source stays
    let m = master();
    put(&m, "k", 4 * KB, &on("mem0", enable(TTL)));
    m.move_start(k("k"), "mem0", "mem1").unwrap();
    m.unmount_segment(C1, "mem1").unwrap();
    assert_eq!(code(m.move_end(k("k"))), ErrorKind::ReplicaIsGone);
    assert_eq!(segments_of(&m, "k"), ["mem0"]);
    assert_eq!(mem_allocated(&m, "mem0"), 4 * KB);
    inv(&m);
}

// ----- a client that never ends its write -------------------------------

#[test]
fn a_write_never_ended_is_swept_at_the_release_instant_not_before() {
    // §1/§3: stale when put_start + release < now; its buffers are freed from put_start + release
    let m = master();
    m.put_start(C1, k("k"), 4 * KB, &on("mem0", enable(TTL)))
        .unwrap();
    assert_eq!(mem_allocated(&m, "mem0"), 4 * KB);
    m.set_time(T0 + RELEASE).unwrap();
    m.run_maintenance_tick();
    assert_eq!(m.metrics().swept_writes, 0);
    assert_eq!(mem_allocated(&m, "mem0"), 4 * KB);
    assert!(m.has_pending_soft_pin(k("k")).unwrap());
    inv(&m);
    m.set_time(T0 + RELEASE + 1).unwrap();
    m.run_maintenance_tick();
    assert_eq!(m.metrics().swept_writes, 1);
    assert_eq!(mem_allocated(&m, "mem0"), 0);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    assert_eq!(
        code(m.has_pending_soft_pin(k("k"))),
        ErrorKind::ObjectNotFound
    );
    // The late End finds nothing; the key is writable again.
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, None)),
        ErrorKind::ObjectNotFound
    );
    put(&m, "k", 4 * KB, &preserve());
    inv(&m);
}

#[test]
fn a_swept_case_c_upsert_drops_the_carried_deadline_and_frees_both_buffers() {
    // §4.5 carry + §2 erasure: the swept replacement is erased, gauge −1, index entry removed
    let m = master();
    put(&m, "k", 4 * KB, &on("mem0", enable(2 * RELEASE)));
    m.upsert_start(C2, k("k"), 8 * KB, &on("mem1", preserve()))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + 2 * RELEASE));
    m.set_time(T0 + RELEASE).unwrap();
    m.run_maintenance_tick();
    assert_eq!(
        (mem_allocated(&m, "mem0"), mem_allocated(&m, "mem1")),
        (0, 8 * KB)
    );
    assert_eq!(gauge(&m), 1);
    inv(&m);
    m.set_time(T0 + RELEASE + 1).unwrap();
    m.run_maintenance_tick();
    assert_eq!(
        (mem_allocated(&m, "mem0"), mem_allocated(&m, "mem1")),
        (0, 0)
    );
    assert_eq!((m.key_count(), gauge(&m), m.index_sizes().1), (0, 0, 0));
    inv(&m);
}

// ----- restore with the newest candidate corrupt -------------------------

fn two_snapshots() -> (Vec<u8>, Vec<u8>) {
    let m = master();
    put(&m, "old", 4 * KB, &enable(TTL));
    let older = m.snapshot().unwrap();
    m.advance_time(1_000).unwrap();
    put(&m, "new", 4 * KB, &enable(TTL));
    (older, m.snapshot().unwrap())
}

#[test]
fn restore_takes_the_next_candidate_when_the_newest_fails_its_checksum() {
    // §6 Candidates: newest first; the first that validates wins; report which
    let (older, newer) = two_snapshots();
    let mut corrupt = newer.clone();
    let n = corrupt.len();
    corrupt[n - 3] ^= 0x01;
    let m = Master::new(MasterConfig::deterministic(T0 + 2_000)).unwrap();
    let rep = m.restore_candidates(&[&corrupt, &older]).unwrap();
    assert_eq!((rep.candidate, rep.created_at), (1, T0));
    assert_eq!(rep.rejected.len(), 1);
    assert_eq!(rep.rejected[0].0, 0);
    assert!(m.exist(k("old")).unwrap());
    assert_eq!(
        code(m.get_replica_list(k("new"))),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(deadline(&m, "old"), Some(T0 + TTL));
    assert_eq!((gauge(&m), m.index_sizes().1), (1, 1));
    inv(&m);
}

#[test]
fn restore_takes_the_next_candidate_when_the_newest_has_a_valid_frame_but_bad_records() {
    // §6 Failure: a truncated record fails decoding even with a recomputed checksum
    let (older, newer) = two_snapshots();
    let mut corrupt = newer[..newer.len() - 5].to_vec();
    reframe(&mut corrupt);
    let m = Master::new(MasterConfig::deterministic(T0 + 2_000)).unwrap();
    let rep = m.restore_candidates(&[&corrupt, &older]).unwrap();
    assert_eq!(rep.candidate, 1);
    assert_eq!(rep.rejected.iter().map(|r| r.0).collect::<Vec<_>>(), [0]);
    assert!(m.exist(k("old")).unwrap());
    inv(&m);
    // Both candidates bad: DESERIALIZE_FAIL naming each, master untouched.
    let before = m.capture();
    let mut bad_older = older.clone();
    bad_older[40] ^= 0xFF;
    let e = m.restore_candidates(&[&corrupt, &bad_older]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeserializeFail);
    assert!(e.message().contains("candidate 0") && e.message().contains("candidate 1"));
    assert_eq!(m.capture(), before);
    inv(&m);
}

// ----- allocation failure during a size-changing upsert ------------------

#[test]
fn a_failed_size_changing_upsert_leaves_object_deadline_and_registration_intact() {
    // §3 case C [diverges]: allocate first; on failure the old object, deadline, registration and gauge stay
    let m = master_with(config(), 1, 0, 64 * KB);
    put(&m, "k", 16 * KB, &enable(TTL));
    put(&m, "filler", 40 * KB, &preserve());
    m.get_replica_list(k("k")).unwrap();
    let before = object_state(&m);
    let e = m.upsert_start(C2, k("k"), 32 * KB, &enable(1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoAvailableHandle);
    assert_eq!(object_state(&m), before);
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    assert_eq!((gauge(&m), m.index_sizes().1), (1, 1));
    assert!(!m.has_pending_soft_pin(k("k")).unwrap());
    assert_eq!(m.metrics().put_start_failures, 1);
    // The lease from the read is intact too, and so is the writer.
    assert_eq!(code(m.remove(k("k"), false)), ErrorKind::ObjectHasLease);
    assert_eq!(
        code(m.put_end(C2, k("k"), ReplicaSelector::All, None)),
        ErrorKind::IllegalClient
    );
    inv(&m);
    // The registration still works: cleanup expires the deadline at D.
    assert_eq!(m.run_cleanup_at(T0 + TTL - 1).expired, 0);
    assert_eq!(m.run_cleanup_at(T0 + TTL).expired, 1);
    inv(&m);
}

#[test]
fn a_failed_replacing_upsert_does_not_preempt_the_write_in_flight() {
    // §3 UpsertStart: every rejection happens before any side effect (preemption included)
    let m = master_with(config(), 1, 0, 64 * KB);
    put(&m, "k", 16 * KB, &enable(TTL));
    put(&m, "filler", 40 * KB, &preserve());
    let w = m.upsert_start(C1, k("k"), 16 * KB, &enable(5)).unwrap();
    let before = object_state(&m);
    assert_eq!(
        code(m.upsert_start(C2, k("k"), 32 * KB, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    assert_eq!(object_state(&m), before);
    inv(&m);
    m.advance_time(3).unwrap();
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    // The case-B write survived: its End makes the object readable again and
    // commits its own ENABLE 5 (§4.3: zero COMPLETE replicas before this End).
    assert_eq!(deadline(&m, "k"), Some(T0 + 3 + 5));
    inv(&m);
}

// ----- regressions found by the fuzzers ----------------------------------

#[test]
fn same_size_upsert_of_a_local_disk_only_object_stages_fresh_buffers() {
    // §3 UpsertStart: found by fuzz_bounded — case B on an object whose only
    // COMPLETE replica is LOCAL_DISK dropped it and left an object with no replica
    let m = master();
    m.add_local_disk_replica(C2, k("k"), 4 * KB).unwrap();
    let w = m.upsert_start(C1, k("k"), 4 * KB, &enable(TTL)).unwrap();
    assert_eq!(w.replicas.len(), 1);
    assert_eq!(w.replicas[0].kind, ReplicaKind::Memory);
    assert!(m.has_pending_soft_pin(k("k")).unwrap());
    inv(&m);
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(m.get_replica_list(k("k")).unwrap().len(), 1);
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    inv(&m);
}

#[test]
fn same_size_upsert_of_a_local_disk_only_object_that_cannot_allocate_changes_nothing() {
    // §3 case C rule applied to the LOCAL_DISK-only case: allocate first
    let m = master_with(config(), 1, 0, 8 * KB);
    put(&m, "filler", 8 * KB, &preserve());
    m.add_local_disk_replica(C2, k("k"), 4 * KB).unwrap();
    let before = object_state(&m);
    assert_eq!(
        code(m.upsert_start(C1, k("k"), 4 * KB, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    assert_eq!(object_state(&m), before);
    assert_eq!(segments_of(&m, "k"), [format!("disk:{C2}")]);
    inv(&m);
}
