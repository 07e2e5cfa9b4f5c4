//! docs/CONTRACT.md §3 UpsertStart / UpsertEnd / UpsertRevoke: the check order
//! (validation → group change → task, nothing preempted before), cases A, B
//! and C, allocate-first case C, and that every rejection leaves the master
//! unchanged.
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

fn shape(mem: u32, nof: u32) -> WriteConfig {
    WriteConfig {
        memory_replicas: mem,
        nof_ssd_replicas: nof,
        ..WriteConfig::default()
    }
}

fn on(seg: &str) -> WriteConfig {
    WriteConfig {
        preferred_segments: vec![seg.into()],
        ..WriteConfig::default()
    }
}

fn object(m: &Master, key: &str) -> mooncake_meta_core::snapshot::image::ObjectRecord {
    m.capture()
        .objects
        .into_iter()
        .find(|o| o.key == key)
        .expect("object present")
}

fn ids(d: &[ReplicaDescriptor]) -> Vec<u64> {
    let mut v: Vec<u64> = d.iter().map(|r| r.id).collect();
    v.sort();
    v
}

/// An object with a COMPLETE MEMORY replica on mem0, a NOF_SSD replica
/// still PROCESSING (write in flight) and a copy to mem1 running.
fn object_with_task_and_write(m: &Master) -> StartedWrite {
    let c = WriteConfig {
        nof_ssd_replicas: 1,
        ..on("mem0")
    };
    let w = m.put_start(C1, k("k"), 64, &c).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    m.copy_start(k("k"), &["mem1"]).unwrap();
    w
}

// ----- check order -----------------------------------------------------------

#[test]
fn upsert_start_invalid_params_for_bad_request_comes_first() {
    // §3: request validation comes before the group and task checks
    let m = master();
    object_with_task_and_write(&m);
    let before = fingerprint(&m);
    let bad = [
        (0, preserve()),
        (64, shape(0, 0)),
        (64, cfg(SoftPinRequest::enable_for(MAX_TTL + 1))),
        (
            64,
            cfg(SoftPinRequest {
                action: SoftPinAction::Disable,
                ttl_ms: Some(0),
            }),
        ),
        (64, preserve().with_group("")),
    ];
    for (size, c) in bad {
        assert_eq!(
            code(m.upsert_start(C1, k("k"), size, &c)),
            ErrorKind::InvalidParams
        );
    }
    assert_eq!(
        code(m.upsert_start(C1, k(""), 64, &preserve())),
        ErrorKind::InvalidParams
    );
    assert_unchanged(&m, &before);
}

#[test]
fn upsert_start_invalid_params_on_group_change() {
    // §2/§3: the group id is fixed at creation: naming another group, or a
    // group for an ungrouped object, is a change
    let m = master();
    put(&m, "plain", 64, &preserve());
    put(&m, "grouped", 64, &preserve().with_group("g"));
    let before = fingerprint(&m);
    for (key, c) in [
        ("plain", preserve().with_group("g")),
        ("grouped", preserve().with_group("h")),
    ] {
        assert_eq!(
            code(m.upsert_start(C1, k(key), 64, &c)),
            ErrorKind::InvalidParams,
            "{key} {:?}",
            c.group
        );
        assert_eq!(
            code(m.upsert_start(C1, k(key), 128, &c)),
            ErrorKind::InvalidParams
        );
    }
    assert_unchanged(&m, &before);
    // the same group is fine
    upsert(&m, "grouped", 64, &preserve().with_group("g"));
    inv(&m);
}

#[test]
fn upsert_start_naming_no_group_keeps_the_objects_group() {
    // §2: an Upsert that names no group (the legacy configs never can) keeps
    // the object's group, in case A (nothing COMPLETE), B (same size) and C
    // (other size); the member stays covered by the group's shared lease
    let m = master();
    put(&m, "b", 64, &preserve().with_group("g"));
    put(&m, "c", 64, &preserve().with_group("g"));
    m.put_start(C1, k("a"), 64, &preserve().with_group("g"))
        .unwrap(); // still PROCESSING: an upsert of it is case A
    upsert(&m, "a", 64, &preserve());
    upsert(&m, "b", 64, &preserve());
    upsert(&m, "c", 128, &preserve());
    for key in ["a", "b", "c"] {
        assert_eq!(object(&m, key).group.as_deref(), Some("g"), "{key}");
    }
    let groups = m.capture().groups;
    assert_eq!(groups.len(), 1);
    m.get_replica_list(k("a")).unwrap(); // raises the group's lease
    for key in ["b", "c"] {
        assert_eq!(code(m.remove(k(key), false)), ErrorKind::ObjectHasLease);
    }
    inv(&m);
}

#[test]
fn upsert_start_group_change_is_checked_before_the_task() {
    // §3 order: group change → INVALID_PARAMS before OBJECT_HAS_REPLICATION_TASK
    let m = master();
    object_with_task_and_write(&m);
    let before = fingerprint(&m);
    assert_eq!(
        code(m.upsert_start(C1, k("k"), 64, &preserve().with_group("g"))),
        ErrorKind::InvalidParams
    );
    assert_unchanged(&m, &before);
}

#[test]
fn upsert_start_object_has_replication_task_preempts_nothing() {
    // §3: a copy/move/promotion task → OBJECT_HAS_REPLICATION_TASK, the write in flight survives
    let m = master();
    let w = object_with_task_and_write(&m);
    let before = fingerprint(&m);
    for size in [64, 128] {
        assert_eq!(
            code(m.upsert_start(C2, k("k"), size, &preserve())),
            ErrorKind::ObjectHasReplicationTask
        );
    }
    assert_unchanged(&m, &before);
    // the preserved write can still finish
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    m.copy_end(k("k")).unwrap();
    assert_eq!(m.get_replica_list(k("k")).unwrap().len(), 3);
    inv(&m);
}

// ----- case A ----------------------------------------------------------------

#[test]
fn upsert_start_case_a_on_an_absent_key_is_a_put() {
    // §3 case A: absent → as PutStart (requested counts and hard pin honoured)
    let m = master();
    let w = m
        .upsert_start(
            C1,
            k("k"),
            64,
            &WriteConfig {
                hard_pin: true,
                ..shape(2, 1)
            },
        )
        .unwrap();
    assert_eq!(w.replicas.len(), 3);
    assert!(w
        .replicas
        .iter()
        .all(|r| r.status == ReplicaStatus::Processing));
    assert!(object(&m, "k").hard_pin);
    assert_eq!(m.key_count(), 1);
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(m.get_replica_list(k("k")).unwrap().len(), 3);
    inv(&m);
}

#[test]
fn upsert_start_case_a_preempts_a_young_write_with_nothing_complete() {
    // §3: an in-flight write is preempted (replicas discarded); nothing COMPLETE left → case A
    let m = master();
    let old = m.put_start(C1, k("k"), 64, &enable(5_000)).unwrap();
    let seq_before = object(&m, "k").seq;
    let new = m.upsert_start(C2, k("k"), 100, &preserve()).unwrap();
    assert_ne!(ids(&new.replicas), ids(&old.replicas));
    let o = object(&m, "k");
    assert_eq!((o.writer, o.size), (C2, 100));
    assert!(
        o.seq > seq_before,
        "case A by preemption gets a new sequence"
    );
    let mt = m.metrics();
    assert_eq!(mt.discarded_staging_bytes, 64);
    assert_eq!(mt.memory_allocated_bytes, 164);
    assert_eq!(m.key_count(), 1);
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, Some(old.token))),
        ErrorKind::IllegalClient
    );
    m.upsert_end(C2, k("k"), ReplicaSelector::All, Some(new.token))
        .unwrap();
    assert_eq!(
        deadline(&m, "k"),
        None,
        "the preempted ENABLE never commits"
    );
    inv(&m);
}

#[test]
fn upsert_start_leases_never_block() {
    // §3: leases never block an Upsert (case B and case C)
    let m = master();
    put(&m, "b", 64, &preserve());
    put(&m, "c", 64, &preserve());
    m.get_replica_list(k("b")).unwrap();
    m.get_replica_list(k("c")).unwrap();
    upsert(&m, "b", 64, &preserve());
    upsert(&m, "c", 128, &preserve());
    inv(&m);
}

// ----- case B ----------------------------------------------------------------

#[test]
fn upsert_start_case_b_flips_replicas_to_processing_with_same_ids() {
    // §3 case B: same size in place; MEMORY/NOF_SSD back to PROCESSING with the same ids,
    // old LOCAL_DISK discarded, counts and hard pin ignored, caller becomes the writer
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &shape(1, 1)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    m.add_local_disk_replica(C1, k("k"), 64).unwrap();
    let seq = object(&m, "k").seq;
    let alloc = m.metrics();
    m.advance_time(40).unwrap();
    let w2 = m
        .upsert_start(
            C2,
            k("k"),
            64,
            &WriteConfig {
                hard_pin: true,
                ..shape(2, 2)
            },
        )
        .unwrap();
    assert_ne!(w2.token, w.token);
    assert_eq!(ids(&w2.replicas), ids(&w.replicas));
    assert_eq!(
        w2.replicas
            .iter()
            .map(|r| r.location)
            .collect::<std::collections::HashSet<_>>(),
        w.replicas.iter().map(|r| r.location).collect()
    );
    let o = object(&m, "k");
    assert_eq!(o.replicas.len(), 2, "LOCAL_DISK dropped");
    assert!(o.replicas.iter().all(|r| r.kind != 2 && r.status == 0));
    assert_eq!((o.writer, o.put_start, o.seq), (C2, T0 + 40, seq));
    assert!(!o.hard_pin, "case B ignores the hard-pin request");
    let after = m.metrics();
    assert_eq!(after.memory_allocated_bytes, alloc.memory_allocated_bytes);
    assert_eq!(after.nof_ssd_allocated_bytes, alloc.nof_ssd_allocated_bytes);
    assert_eq!(after.discarded_staging_bytes, 0);
    assert_eq!(
        code(m.get_replica_list(k("k"))),
        ErrorKind::ReplicaIsNotReady
    );
    assert!(!m.exist(k("k")).unwrap());
    m.upsert_end(C2, k("k"), ReplicaSelector::All, Some(w2.token))
        .unwrap();
    assert_eq!(ids(&m.get_replica_list(k("k")).unwrap()), ids(&w.replicas));
    inv(&m);
}

#[test]
fn upsert_start_case_b_preempts_the_write_in_flight() {
    // §3: PROCESSING replicas of the preempted write go to the discarded list; COMPLETE ones flip
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &shape(1, 1)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let w2 = m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    assert_eq!(w2.replicas.len(), 1);
    assert_eq!(w2.replicas[0].kind, ReplicaKind::Memory);
    let mt = m.metrics();
    assert_eq!(mt.discarded_staging_bytes, 64);
    assert_eq!(mt.nof_ssd_allocated_bytes, 64, "held until release");
    inv(&m);
    assert_eq!(m.release_discarded_at(T0 + 600_000), 1);
    assert_eq!(m.metrics().nof_ssd_allocated_bytes, 0);
    inv(&m);
}

#[test]
fn upsert_start_same_size_on_a_local_disk_only_object_keeps_a_valid_object() {
    // §2/§3: case B discards stale LOCAL_DISK copies; the object must never be left without replicas
    let m = master();
    m.add_local_disk_replica(C1, k("k"), 64).unwrap();
    let w = m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    assert!(!w.replicas.is_empty(), "a write with nothing to write");
    inv(&m);
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    let r = m.get_replica_list(k("k")).unwrap();
    assert!(r.iter().all(|r| r.kind != ReplicaKind::LocalDisk));
    assert!(!r.is_empty());
    inv(&m);
}

#[test]
fn upsert_start_same_size_on_a_local_disk_only_object_allocates_first() {
    // docs/CONTRACT.md §4.3 deliberate choice: a same-size Upsert of an object whose
    // only COMPLETE replicas are LOCAL_DISK has nothing to rewrite in place,
    // so it takes case C's allocate-first path: new replica ids, a new
    // creation sequence, and on failure the object is untouched
    let m = master_with(config(), 1, 0, 64);
    put(&m, "fill", 64, &preserve()); // the only memory segment is full
    let disk = m.add_local_disk_replica(C1, k("k"), 64).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.upsert_start(C2, k("k"), 64, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    let mut expected = before.1.clone();
    expected.put_start_failures += 1;
    assert_eq!(m.metrics(), expected);
    assert!(m.snapshot().unwrap() == before.0, "the object is untouched");
    assert_eq!(ids(&m.get_replica_list(k("k")).unwrap()), [disk.id]);
    m.remove(k("fill"), true).unwrap();
    let seq = object(&m, "k").seq;
    let w = m.upsert_start(C2, k("k"), 64, &preserve()).unwrap();
    assert_eq!(w.replicas.len(), 1);
    assert_ne!(w.replicas[0].id, disk.id, "new replicas, not in place");
    assert!(
        object(&m, "k").seq > seq,
        "a new creation sequence, as case C"
    );
    m.upsert_end(C2, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(ids(&m.get_replica_list(k("k")).unwrap()), ids(&w.replicas));
    inv(&m);
}

#[test]
fn upsert_start_case_a_by_preemption_keeps_the_old_read_lease() {
    // docs/CONTRACT.md §4.3 deliberate choice: case A reached by preempting the write
    // in flight rewrites the existing object, so a read lease granted
    // before stays (unlike PutStart replacing a stale write, a new object)
    let m = master();
    put(&m, "k", 64, &preserve());
    m.get_replica_list(k("k")).unwrap(); // lease T0 + LEASE
    m.upsert_start(C1, k("k"), 64, &preserve()).unwrap(); // B: nothing COMPLETE
    m.advance_time(5).unwrap();
    let w = m.upsert_start(C2, k("k"), 100, &preserve()).unwrap(); // A
    assert_eq!(object(&m, "k").lease, T0 + LEASE);
    m.upsert_end(C2, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(object(&m, "k").lease, T0 + LEASE);
    assert_eq!(code(m.remove(k("k"), false)), ErrorKind::ObjectHasLease);
    m.set_time(T0 + LEASE).unwrap();
    m.remove(k("k"), false).unwrap();
    inv(&m);
}

// ----- case C ----------------------------------------------------------------

#[test]
fn upsert_start_case_c_failure_leaves_the_old_object_untouched() {
    // §3 [diverges]: case C allocates first; on failure the old object, its deadline,
    // registration and the gauge are untouched
    let m = master_with(config(), 1, 0, 4096);
    put(&m, "k", 1024, &enable(MAX_TTL));
    put(&m, "other", 2048, &preserve());
    assert_eq!(gauge(&m), 1);
    let sizes = m.index_sizes();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.upsert_start(C2, k("k"), 2048, &enable(5))),
        ErrorKind::NoAvailableHandle
    );
    let mut expected = before.1.clone();
    expected.put_start_failures += 1;
    assert_eq!(m.metrics(), expected);
    assert!(m.snapshot().unwrap() == before.0);
    assert_eq!(m.index_sizes(), sizes);
    assert_eq!(deadline(&m, "k"), Some(T0 + MAX_TTL));
    assert_eq!(gauge(&m), 1);
    assert_eq!(m.get_replica_list(k("k")).unwrap().len(), 1);
    inv(&m);
}

#[test]
fn upsert_start_case_c_failure_does_not_preempt_the_write_in_flight() {
    // §3: allocate first — a failed case C leaves the preempted-to-be write running
    let m = master_with(config(), 1, 1, 4096);
    let w = m.put_start(C1, k("k"), 1024, &shape(1, 1)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.upsert_start(C2, k("k"), 8192, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    assert!(m.snapshot().unwrap() == before.0);
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    inv(&m);
}

#[test]
fn upsert_start_case_c_replaces_replicas_and_ors_hard_pin() {
    // §3 case C: new replicas, old ones discarded, hard-pin flags ORed, new sequence
    let m = master();
    let hard = WriteConfig {
        hard_pin: true,
        ..WriteConfig::default()
    };
    let w = m.put_start(C1, k("k"), 64, &hard).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, None).unwrap();
    let seq = object(&m, "k").seq;
    let w2 = m.upsert_start(C2, k("k"), 128, &shape(2, 0)).unwrap();
    assert_eq!(w2.replicas.len(), 2);
    assert!(ids(&w2.replicas)
        .iter()
        .all(|id| !ids(&w.replicas).contains(id)));
    let o = object(&m, "k");
    assert!(o.hard_pin, "true | false = true");
    assert!(o.seq > seq);
    assert_eq!((o.size, o.writer), (128, C2));
    let mt = m.metrics();
    assert_eq!(mt.discarded_staging_bytes, 64);
    assert_eq!(mt.memory_allocated_bytes, 64 + 2 * 128);
    assert_eq!(
        code(m.get_replica_list(k("k"))),
        ErrorKind::ReplicaIsNotReady,
        "the old replicas are gone"
    );
    // false | true = true
    put(&m, "j", 64, &preserve());
    upsert(&m, "j", 100, &hard);
    assert!(object(&m, "j").hard_pin);
    inv(&m);
}

// ----- UpsertEnd / UpsertRevoke ----------------------------------------------

#[test]
fn upsert_end_and_revoke_codes_match_put() {
    // §3: UpsertEnd / UpsertRevoke are PutEnd / PutRevoke
    let m = master();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.upsert_end(C1, k("k"), ReplicaSelector::All, None)),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(
        code(m.upsert_revoke(C1, k("k"), ReplicaSelector::All, None)),
        ErrorKind::ObjectNotFound
    );
    assert_unchanged(&m, &before);
    put(&m, "k", 64, &preserve());
    let w = m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    let before = fingerprint(&m);
    for sel in [ReplicaSelector::All, ReplicaSelector::Memory] {
        assert_eq!(
            code(m.upsert_end(C2, k("k"), sel, None)),
            ErrorKind::IllegalClient
        );
        assert_eq!(
            code(m.upsert_revoke(C2, k("k"), sel, None)),
            ErrorKind::IllegalClient
        );
        assert_eq!(
            code(m.upsert_end(C1, k("k"), sel, Some(w.token + 9))),
            ErrorKind::StaleWriteToken
        );
        assert_eq!(
            code(m.upsert_revoke(C1, k("k"), sel, Some(w.token + 9))),
            ErrorKind::StaleWriteToken
        );
    }
    assert_unchanged(&m, &before);
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.upsert_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token))),
        ErrorKind::InvalidWrite
    );
    m.upsert_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_unchanged(&m, &before);
}

#[test]
fn upsert_revoke_of_case_b_erases_the_object_and_its_deadline() {
    // §3: revoking a case-B write erases the object (every replica was PROCESSING) and its deadline
    let m = master();
    put(&m, "k", 64, &enable(MAX_TTL));
    let w = m.upsert_start(C1, k("k"), 64, &preserve()).unwrap();
    m.upsert_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(m.key_count(), 0);
    assert_eq!(gauge(&m), 0);
    assert_eq!(m.index_sizes().1, 0);
    assert_eq!(m.metrics().memory_allocated_bytes, 0);
    inv(&m);
}
