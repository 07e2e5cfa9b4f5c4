//! docs/CONTRACT.md §3 Copy, Move, promotion and add_local_disk_replica: every code
//! each can return, source busy while the task runs, one task per key,
//! REPLICA_IS_GONE after an unmount, MoveEnd discarding the source (its
//! offsets not handed out before release), and no soft-pin effect.
mod common;
use common::*;
use mooncake_meta_core::*;

const SEG: u64 = 4096;

fn fingerprint(m: &Master) -> (Vec<u8>, MetricsSnapshot) {
    (m.snapshot().unwrap(), m.metrics())
}

fn assert_unchanged(m: &Master, before: &(Vec<u8>, MetricsSnapshot)) {
    let now = fingerprint(m);
    assert_eq!(now.1, before.1, "metrics changed");
    assert!(now.0 == before.0, "snapshot bytes changed");
    inv(m);
}

/// Three memory segments (mem0..mem2) and one NOF segment of SEG bytes.
fn m3() -> Master {
    master_with(config(), 3, 1, SEG)
}

fn on(seg: &str) -> WriteConfig {
    WriteConfig {
        preferred_segments: vec![seg.into()],
        ..WriteConfig::default()
    }
}

fn seg_of(m: &Master, d: &ReplicaDescriptor) -> String {
    match d.location {
        Location::Buffer { segment, .. } => m.segment_name(segment).unwrap(),
        Location::LocalDisk { .. } => "local-disk".into(),
    }
}

fn readable_segs(m: &Master, key: &str) -> Vec<String> {
    let mut v: Vec<String> = m
        .get_replica_list(k(key))
        .unwrap()
        .iter()
        .map(|d| seg_of(m, d))
        .collect();
    v.sort();
    v
}

// ----- Copy ------------------------------------------------------------------

#[test]
fn copy_start_object_not_found() {
    // §3: copy of a missing key → OBJECT_NOT_FOUND
    let m = m3();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.copy_start(k("k"), &["mem1"])),
        ErrorKind::ObjectNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn copy_start_segment_not_found() {
    // §3: a target segment that is not mounted → SEGMENT_NOT_FOUND, nothing allocated
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    let before = fingerprint(&m);
    assert_eq!(
        code(m.copy_start(k("k"), &["mem1", "nope"])),
        ErrorKind::SegmentNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn copy_start_invalid_params_for_bad_targets() {
    // preamble: no target, a repeated target, or a target already holding a replica → INVALID_PARAMS
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    let before = fingerprint(&m);
    for targets in [&[][..], &["mem1", "mem1"][..], &["mem0"][..], &[""][..]] {
        let r = m.copy_start(k("k"), targets);
        assert!(
            matches!(
                r.as_ref().map_err(|e| e.kind()),
                Err(ErrorKind::InvalidParams) | Err(ErrorKind::SegmentNotFound)
            ),
            "{targets:?}: {r:?}"
        );
    }
    assert_eq!(
        code(m.copy_start(k("k"), &["mem1", "mem1"])),
        ErrorKind::InvalidParams
    );
    assert_eq!(
        code(m.copy_start(k("k"), &["mem0"])),
        ErrorKind::InvalidParams
    );
    assert_unchanged(&m, &before);
}

#[test]
fn copy_start_no_available_handle() {
    // §3: a target without room → NO_AVAILABLE_HANDLE; the targets placed so far are freed
    let m = m3();
    put(&m, "k", 1024, &on("mem0"));
    put(&m, "full", SEG, &on("mem2"));
    let before = fingerprint(&m);
    assert_eq!(
        code(m.copy_start(k("k"), &["mem1", "mem2"])),
        ErrorKind::NoAvailableHandle
    );
    assert_unchanged(&m, &before);
}

#[test]
fn copy_start_object_has_replication_task() {
    // §3: one task per key → OBJECT_HAS_REPLICATION_TASK for a second copy, a move or a promotion
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    m.add_local_disk_replica(C1, k("k"), 64).unwrap();
    m.copy_start(k("k"), &["mem1"]).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.copy_start(k("k"), &["mem2"])),
        ErrorKind::ObjectHasReplicationTask
    );
    assert_eq!(
        code(m.move_start(k("k"), "mem0", "mem2")),
        ErrorKind::ObjectHasReplicationTask
    );
    assert_eq!(
        code(m.promotion_start(k("k"), &[])),
        ErrorKind::ObjectHasReplicationTask
    );
    assert_unchanged(&m, &before);
}

#[test]
fn copy_start_replica_is_not_ready_without_a_complete_source() {
    // §3: the source is a COMPLETE buffer replica; an object still being written has none
    let m = m3();
    m.put_start(C1, k("k"), 64, &on("mem0")).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.copy_start(k("k"), &["mem1"])),
        ErrorKind::ReplicaIsNotReady
    );
    assert_unchanged(&m, &before);
}

#[test]
fn copy_end_completes_the_targets_and_the_task_ends() {
    // §3: CopyEnd makes the targets readable; a second End finds no task
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    let t = m.copy_start(k("k"), &["mem1", "nof0"]).unwrap();
    assert_eq!(t.len(), 2);
    assert!(t.iter().all(|d| d.status == ReplicaStatus::Processing));
    assert_eq!(t[1].kind, ReplicaKind::NofSsd);
    assert_eq!(readable_segs(&m, "k"), ["mem0"]);
    m.copy_end(k("k")).unwrap();
    assert_eq!(readable_segs(&m, "k"), ["mem0", "mem1", "nof0"]);
    let before = fingerprint(&m);
    for r in [m.copy_end(k("k")), m.copy_revoke(k("k"))] {
        assert_eq!(code(r), ErrorKind::ObjectNoReplicationTask);
    }
    assert_unchanged(&m, &before);
    // the completed copies are ordinary replicas: removal frees all three
    m.remove(k("k"), true).unwrap();
    assert_eq!(m.metrics().memory_allocated_bytes, 0);
    inv(&m);
}

#[test]
fn copy_revoke_frees_the_targets() {
    // §3: CopyRevoke drops the targets; the source stays
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    m.copy_start(k("k"), &["mem1", "mem2"]).unwrap();
    assert_eq!(m.metrics().memory_allocated_bytes, 192);
    m.copy_revoke(k("k")).unwrap();
    assert_eq!(m.metrics().memory_allocated_bytes, 64);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    assert_eq!(readable_segs(&m, "k"), ["mem0"]);
    m.copy_start(k("k"), &["mem1"]).unwrap();
    inv(&m);
}

#[test]
fn copy_source_is_busy_while_the_task_runs() {
    // §3/§5: the source is busy meanwhile: eviction never frees it
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    m.copy_start(k("k"), &["mem1"]).unwrap();
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.base, r.evicted), (0, 0));
    assert_eq!(readable_segs(&m, "k"), ["mem0"]);
    m.copy_end(k("k")).unwrap();
    m.advance_time(LEASE).unwrap(); // the read above leased it
    assert_eq!(m.run_eviction(1.0, 1.0).unwrap().evicted, 1);
    assert_eq!(m.key_count(), 0);
    inv(&m);
}

#[test]
fn copy_end_replica_is_gone_after_the_target_segment_is_unmounted() {
    // §3: End with a target gone → REPLICA_IS_GONE, task abandoned, surviving targets freed
    let m = m3();
    m.mount_segment(C2, &spec("far", 9, SEG, Pool::Memory))
        .unwrap();
    put(&m, "k", 64, &on("mem0"));
    m.copy_start(k("k"), &["mem1", "far"]).unwrap();
    m.unmount_segment(C2, "far").unwrap();
    assert_eq!(code(m.copy_end(k("k"))), ErrorKind::ReplicaIsGone);
    assert_eq!(readable_segs(&m, "k"), ["mem0"]);
    assert_eq!(m.metrics().memory_allocated_bytes, 64, "mem1 target freed");
    assert_eq!(code(m.copy_end(k("k"))), ErrorKind::ObjectNoReplicationTask);
    m.copy_start(k("k"), &["mem1"]).unwrap();
    inv(&m);
}

#[test]
fn copy_end_replica_is_gone_after_the_source_segment_is_unmounted() {
    // §3: End with the source gone → REPLICA_IS_GONE; an object left with nothing is erased
    let m = m3();
    m.mount_segment(C2, &spec("src", 9, SEG, Pool::Memory))
        .unwrap();
    put(&m, "k", 64, &on("src"));
    m.copy_start(k("k"), &["mem1"]).unwrap();
    m.unmount_segment(C2, "src").unwrap();
    assert_eq!(code(m.copy_end(k("k"))), ErrorKind::ReplicaIsGone);
    assert_eq!(m.key_count(), 0);
    assert_eq!(m.metrics().memory_allocated_bytes, 0);
    inv(&m);
}

// §3, §3.2: a PutStart on a key that a task's target alone holds (its
// source went with an unmount) is OBJECT_HAS_REPLICATION_TASK with the
// master unchanged, as UpsertStart and Remove; the task still ends with
// REPLICA_IS_GONE (review finding: the Start replaced the object as a
// stale write and the task vanished with it).
#[test]
fn put_start_on_a_key_a_task_holds_reports_the_task() {
    let m = m3();
    m.mount_segment(C2, &spec("src", 9, SEG, Pool::Memory))
        .unwrap();
    put(&m, "k", 64, &on("src"));
    m.move_start(k("k"), "src", "mem1").unwrap();
    m.unmount_segment(C2, "src").unwrap();
    m.advance_time(31_000).unwrap(); // the write is no longer young
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_start(C1, k("k"), 64, &on("mem2"))),
        ErrorKind::ObjectHasReplicationTask
    );
    assert_unchanged(&m, &before);
    assert_eq!(code(m.move_end(k("k"))), ErrorKind::ReplicaIsGone);
    inv(&m);
}

// ----- Move ------------------------------------------------------------------

#[test]
fn move_start_segment_not_found() {
    // §3: an unknown source or target segment → SEGMENT_NOT_FOUND
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    let before = fingerprint(&m);
    assert_eq!(
        code(m.move_start(k("k"), "nope", "mem1")),
        ErrorKind::SegmentNotFound
    );
    assert_eq!(
        code(m.move_start(k("k"), "mem0", "nope")),
        ErrorKind::SegmentNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn move_start_object_not_found() {
    // §3: move of a missing key → OBJECT_NOT_FOUND
    let m = m3();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.move_start(k("k"), "mem0", "mem1")),
        ErrorKind::ObjectNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn move_start_replica_not_found() {
    // preamble: no COMPLETE replica on the named source segment → REPLICA_NOT_FOUND
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    let before = fingerprint(&m);
    assert_eq!(
        code(m.move_start(k("k"), "mem2", "mem1")),
        ErrorKind::ReplicaNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn move_start_invalid_params_when_the_target_holds_a_replica() {
    // preamble: a target segment that already holds a replica of the object → INVALID_PARAMS
    let m = m3();
    put(
        &m,
        "k",
        64,
        &WriteConfig {
            memory_replicas: 2,
            preferred_segments: vec!["mem0".into(), "mem1".into()],
            ..WriteConfig::default()
        },
    );
    let before = fingerprint(&m);
    assert_eq!(
        code(m.move_start(k("k"), "mem0", "mem1")),
        ErrorKind::InvalidParams
    );
    assert_eq!(
        code(m.move_start(k("k"), "mem0", "mem0")),
        ErrorKind::InvalidParams
    );
    assert_unchanged(&m, &before);
}

#[test]
fn move_start_no_available_handle() {
    // §3: no room on the target → NO_AVAILABLE_HANDLE, nothing changes
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    put(&m, "full", SEG, &on("mem1"));
    let before = fingerprint(&m);
    assert_eq!(
        code(m.move_start(k("k"), "mem0", "mem1")),
        ErrorKind::NoAvailableHandle
    );
    assert_unchanged(&m, &before);
}

#[test]
fn move_end_discards_the_source_and_its_offsets_are_not_reused_before_release() {
    // §3: MoveEnd discards the source: held (and counted) until now + put_start_release_timeout
    let m = master_with(config(), 2, 0, SEG);
    put(&m, "k", SEG, &on("mem0"));
    m.move_start(k("k"), "mem0", "mem1").unwrap();
    m.advance_time(10).unwrap();
    m.move_end(k("k")).unwrap();
    assert_eq!(readable_segs(&m, "k"), ["mem1"]);
    let mt = m.metrics();
    assert_eq!(mt.memory_allocated_bytes, 2 * SEG);
    assert_eq!(mt.discarded_staging_bytes, SEG);
    inv(&m);
    // the old range is not handed out before its release instant
    assert_eq!(
        code(m.put_start(C1, k("new"), SEG, &on("mem0"))),
        ErrorKind::NoAvailableHandle
    );
    let release = T0 + 10 + 600_000;
    assert_eq!(m.release_discarded_at(release - 1), 0);
    assert_eq!(m.release_discarded_at(release), 1);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    let w = m.put_start(C1, k("new"), SEG, &on("mem0")).unwrap();
    assert_eq!(seg_of(&m, &w.replicas[0]), "mem0");
    inv(&m);
}

#[test]
fn move_revoke_frees_the_target_and_keeps_the_source() {
    // §3: MoveRevoke drops the target; the source stays readable
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    m.move_start(k("k"), "mem0", "mem1").unwrap();
    m.move_revoke(k("k")).unwrap();
    assert_eq!(readable_segs(&m, "k"), ["mem0"]);
    assert_eq!(m.metrics().memory_allocated_bytes, 64);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    inv(&m);
}

#[test]
fn move_end_object_no_replication_task() {
    // preamble: End/Revoke of a task kind that is not running → OBJECT_NO_REPLICATION_TASK
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    let before = fingerprint(&m);
    assert_eq!(code(m.move_end(k("k"))), ErrorKind::ObjectNoReplicationTask);
    assert_eq!(
        code(m.move_revoke(k("k"))),
        ErrorKind::ObjectNoReplicationTask
    );
    assert_eq!(code(m.move_end(k("none"))), ErrorKind::ObjectNotFound);
    assert_unchanged(&m, &before);
    m.copy_start(k("k"), &["mem1"]).unwrap();
    let before = fingerprint(&m);
    assert_eq!(code(m.move_end(k("k"))), ErrorKind::ObjectNoReplicationTask);
    assert_eq!(
        code(m.move_revoke(k("k"))),
        ErrorKind::ObjectNoReplicationTask
    );
    assert_eq!(
        code(m.promotion_end(k("k"), true)),
        ErrorKind::ObjectNoReplicationTask
    );
    assert_unchanged(&m, &before);
    m.copy_end(k("k")).unwrap();
    m.move_start(k("k"), "mem1", "mem2").unwrap();
    assert_eq!(code(m.copy_end(k("k"))), ErrorKind::ObjectNoReplicationTask);
}

#[test]
fn move_end_replica_is_gone_after_the_target_segment_is_unmounted() {
    // §3: target gone → REPLICA_IS_GONE; the source is kept (not discarded)
    let m = m3();
    m.mount_segment(C2, &spec("far", 9, SEG, Pool::Memory))
        .unwrap();
    put(&m, "k", 64, &on("mem0"));
    m.move_start(k("k"), "mem0", "far").unwrap();
    m.unmount_segment(C2, "far").unwrap();
    assert_eq!(code(m.move_end(k("k"))), ErrorKind::ReplicaIsGone);
    assert_eq!(readable_segs(&m, "k"), ["mem0"]);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    inv(&m);
}

#[test]
fn copy_and_move_have_no_soft_pin_effect() {
    // §3/§4.6: Copy and Move are never soft-pin activation points
    let m = m3();
    put(
        &m,
        "k",
        64,
        &WriteConfig {
            preferred_segments: vec!["mem0".into()],
            ..enable(5_000)
        },
    );
    m.advance_time(100).unwrap();
    m.copy_start(k("k"), &["mem1"]).unwrap();
    m.copy_end(k("k")).unwrap();
    m.move_start(k("k"), "mem0", "mem2").unwrap();
    m.move_end(k("k")).unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + 5_000));
    assert_eq!(gauge(&m), 1);
    inv(&m);
}

// ----- promotion ---------------------------------------------------------------

/// An object whose only replica is a COMPLETE LOCAL_DISK one.
fn on_disk(m: &Master, key: &str) {
    m.add_local_disk_replica(C2, k(key), 64).unwrap();
}

#[test]
fn promotion_start_object_not_found() {
    // §3: promotion of a missing key → OBJECT_NOT_FOUND
    let m = m3();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.promotion_start(k("k"), &[])),
        ErrorKind::ObjectNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn promotion_start_replica_not_found_without_local_disk() {
    // preamble: no COMPLETE LOCAL_DISK replica → REPLICA_NOT_FOUND
    let m = m3();
    put(
        &m,
        "k",
        64,
        &WriteConfig {
            memory_replicas: 0,
            nof_ssd_replicas: 1,
            ..WriteConfig::default()
        },
    );
    let before = fingerprint(&m);
    assert_eq!(
        code(m.promotion_start(k("k"), &[])),
        ErrorKind::ReplicaNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn promotion_start_unavailable_in_current_status_with_a_memory_replica() {
    // preamble: a memory replica already exists → UNAVAILABLE_IN_CURRENT_STATUS
    let m = m3();
    put(&m, "k", 64, &preserve());
    m.add_local_disk_replica(C1, k("k"), 64).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.promotion_start(k("k"), &[])),
        ErrorKind::UnavailableInCurrentStatus
    );
    assert_unchanged(&m, &before);
}

#[test]
fn promotion_start_object_has_replication_task() {
    // §3: one task per key: a second promotion → OBJECT_HAS_REPLICATION_TASK
    let m = m3();
    on_disk(&m, "k");
    m.promotion_start(k("k"), &[]).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.promotion_start(k("k"), &[])),
        ErrorKind::ObjectHasReplicationTask
    );
    assert_unchanged(&m, &before);
}

#[test]
fn promotion_start_no_available_handle() {
    // §3: no memory room → NO_AVAILABLE_HANDLE, nothing staged
    let m = master_with(config(), 1, 0, SEG);
    put(&m, "full", SEG, &preserve());
    on_disk(&m, "k");
    let before = fingerprint(&m);
    assert_eq!(
        code(m.promotion_start(k("k"), &[])),
        ErrorKind::NoAvailableHandle
    );
    assert_unchanged(&m, &before);
}

#[test]
fn promotion_success_completes_the_staged_replica() {
    // §3: alloc start stages a PROCESSING memory replica (preferred first); success completes it
    let m = m3();
    on_disk(&m, "k");
    let d = m.promotion_start(k("k"), &["mem2".into()]).unwrap();
    assert_eq!(
        (d.kind, d.status, seg_of(&m, &d).as_str()),
        (ReplicaKind::Memory, ReplicaStatus::Processing, "mem2")
    );
    assert_eq!(readable_segs(&m, "k"), ["local-disk"]);
    m.promotion_end(k("k"), true).unwrap();
    assert_eq!(readable_segs(&m, "k"), ["local-disk", "mem2"]);
    assert_eq!(
        code(m.promotion_end(k("k"), true)),
        ErrorKind::ObjectNoReplicationTask
    );
    inv(&m);
}

#[test]
fn promotion_failure_drops_the_staged_replica() {
    // §3: failure drops the staged replica (freed at once)
    let m = m3();
    on_disk(&m, "k");
    m.promotion_start(k("k"), &[]).unwrap();
    m.promotion_end(k("k"), false).unwrap();
    assert_eq!(readable_segs(&m, "k"), ["local-disk"]);
    assert_eq!(m.metrics().memory_allocated_bytes, 0);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    inv(&m);
}

#[test]
fn promotion_end_replica_is_gone_after_unmount() {
    // §3: the staged replica's segment unmounted → REPLICA_IS_GONE, task abandoned
    let m = m3();
    m.mount_segment(C2, &spec("far", 9, SEG, Pool::Memory))
        .unwrap();
    on_disk(&m, "k");
    m.promotion_start(k("k"), &["far".into()]).unwrap();
    m.unmount_segment(C2, "far").unwrap();
    assert_eq!(
        code(m.promotion_end(k("k"), true)),
        ErrorKind::ReplicaIsGone
    );
    assert_eq!(readable_segs(&m, "k"), ["local-disk"]);
    m.promotion_start(k("k"), &[]).unwrap();
    inv(&m);
}

#[test]
fn promotion_has_no_soft_pin_effect() {
    // §3/§4.6: promotion is never an activation point
    let m = m3();
    put(
        &m,
        "k",
        64,
        &WriteConfig {
            memory_replicas: 0,
            nof_ssd_replicas: 1,
            ..enable(5_000)
        },
    );
    m.add_local_disk_replica(C1, k("k"), 64).unwrap();
    m.advance_time(10).unwrap();
    m.promotion_start(k("k"), &[]).unwrap();
    m.promotion_end(k("k"), true).unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + 5_000));
    assert_eq!(gauge(&m), 1);
    inv(&m);
}

// ----- add_local_disk_replica ------------------------------------------------

#[test]
fn add_local_disk_replica_creates_a_complete_object() {
    // §3: adds a COMPLETE LOCAL_DISK replica, creating the object if absent; no soft pin
    let m = m3();
    let d = m.add_local_disk_replica(C2, k("k"), 64).unwrap();
    assert_eq!(
        (d.kind, d.status),
        (ReplicaKind::LocalDisk, ReplicaStatus::Complete)
    );
    assert_eq!(
        d.location,
        Location::LocalDisk {
            client: C2,
            size: 64
        }
    );
    assert_eq!(m.key_count(), 1);
    assert_eq!(m.get_replica_list(k("k")).unwrap(), [d]);
    assert_eq!(deadline(&m, "k"), None);
    assert_eq!(m.metrics().memory_allocated_bytes, 0);
    // it exists: a PutStart is refused
    assert_eq!(
        code(m.put_start(C1, k("k"), 64, &preserve())),
        ErrorKind::ObjectAlreadyExists
    );
    inv(&m);
}

#[test]
fn add_local_disk_replica_is_idempotent_per_client() {
    // preamble: idempotent per client; another client adds its own replica
    let m = m3();
    put(&m, "k", 64, &preserve());
    let a = m.add_local_disk_replica(C1, k("k"), 64).unwrap();
    let before = fingerprint(&m);
    assert_eq!(m.add_local_disk_replica(C1, k("k"), 64).unwrap(), a);
    assert_unchanged(&m, &before);
    let b = m.add_local_disk_replica(C2, k("k"), 64).unwrap();
    assert_ne!(a.id, b.id);
    assert_eq!(m.get_replica_list(k("k")).unwrap().len(), 3);
    inv(&m);
}

#[test]
fn add_local_disk_replica_invalid_params() {
    // preamble: size mismatch, size 0 or an empty key → INVALID_PARAMS
    let m = m3();
    put(&m, "k", 64, &preserve());
    let before = fingerprint(&m);
    assert_eq!(
        code(m.add_local_disk_replica(C1, k("k"), 65)),
        ErrorKind::InvalidParams
    );
    assert_eq!(
        code(m.add_local_disk_replica(C1, k("j"), 0)),
        ErrorKind::InvalidParams
    );
    assert_eq!(
        code(m.add_local_disk_replica(C1, k(""), 64)),
        ErrorKind::InvalidParams
    );
    assert_unchanged(&m, &before);
}

#[test]
fn add_local_disk_replica_unavailable_in_current_status_while_writing() {
    // preamble: a write in flight → UNAVAILABLE_IN_CURRENT_STATUS
    let m = m3();
    m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.add_local_disk_replica(C1, k("k"), 64)),
        ErrorKind::UnavailableInCurrentStatus
    );
    assert_unchanged(&m, &before);
}

/// A copy for a caller with room for fewer targets than it names is
/// `TooSmall` only after every other check, and changes nothing.
#[test]
fn copy_start_bounded_answers_too_small_after_every_other_check() {
    let m = m3();
    put(&m, "k", 64, &on("mem0"));
    let before = fingerprint(&m);
    assert_eq!(
        code(m.copy_start_bounded(k("absent"), &["mem1"], 0)),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(
        code(m.copy_start_bounded(k("k"), &["nope"], 0)),
        ErrorKind::SegmentNotFound
    );
    assert_eq!(
        code(m.copy_start_bounded(k("k"), &["mem0"], 0)),
        ErrorKind::InvalidParams
    );
    match m.copy_start_bounded(k("k"), &["mem1", "mem2"], 1).unwrap() {
        Bounded::TooSmall(n) => assert_eq!(n, 2),
        Bounded::Fits(v) => panic!("fits: {v:?}"),
    }
    assert_unchanged(&m, &before);
    match m.copy_start_bounded(k("k"), &["mem1", "mem2"], 2).unwrap() {
        Bounded::Fits(v) => assert_eq!(v.len(), 2),
        Bounded::TooSmall(n) => panic!("too small: {n}"),
    }
    inv(&m);
}
