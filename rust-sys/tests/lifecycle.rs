//! A master's life through the safe layer: creation, segments, the write
//! protocol, reads, listing, removal, replication tasks, unmount, drop.

mod common;

use common::*;
use mooncake_meta_sys::safe::*;
use mooncake_meta_sys::*;

// The linked library is the one the header (and so these declarations) was generated for.
#[test]
fn library_matches_the_header_it_was_generated_for() {
    assert_eq!(version(), MOONCAKE_META_VERSION_STRING);
    assert_eq!(
        version(),
        format!(
            "{MOONCAKE_META_VERSION_MAJOR}.{MOONCAKE_META_VERSION_MINOR}.{MOONCAKE_META_VERSION_PATCH}"
        )
    );
    assert_eq!(abi_version(), MOONCAKE_META_ABI_VERSION);
    assert_eq!(status_name(MOONCAKE_META_OK), "OK");
    assert_eq!(
        status_name(MOONCAKE_META_OBJECT_NOT_FOUND),
        "OBJECT_NOT_FOUND"
    );
    assert_eq!(status_name(12345), "UNKNOWN_STATUS");
}

// A write is invisible until its End; then readable, counted, listed; a leased object needs force to go.
#[test]
fn object_lifecycle_start_end_read_remove() {
    let m = master();
    let k = Key::new("obj");
    let s = m.put_start(C1, k, SIZE, &WriteConfig::default()).unwrap();
    assert_ne!(s.token, 0);
    assert_eq!(s.replicas.len(), 1);
    let r = s.replicas[0];
    assert_eq!(
        (r.kind, r.status),
        (ReplicaKind::Memory, ReplicaStatus::Processing)
    );
    let Location::Buffer { segment, size, .. } = r.location else {
        panic!("{r:?} is not a buffer");
    };
    assert_eq!(size, SIZE);
    assert!(m.segment_name(segment).unwrap().starts_with("mem"));
    assert!(!m.exist(k).unwrap());
    let err = m.get_replica_list(k).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReplicaIsNotReady);
    assert_eq!(err.code(), MOONCAKE_META_REPLICA_IS_NOT_READY);

    m.put_end(C1, k, ReplicaSelector::All, Some(s.token))
        .unwrap();
    assert!(m.exist(k).unwrap()); // grants the read lease
    let replicas = m.get_replica_list(k).unwrap();
    assert_eq!(replicas.len(), 1);
    assert_eq!(replicas[0].id, r.id);
    assert_eq!(replicas[0].status, ReplicaStatus::Complete);
    assert_eq!(m.key_count(), 1);

    assert_eq!(
        m.remove(k, false).unwrap_err().kind(),
        ErrorKind::ObjectHasLease
    );
    m.remove(k, true).unwrap();
    assert_eq!(m.key_count(), 0);
    assert!(!m.exist(k).unwrap());
}

// Several replicas come back in one call (the safe layer sizes the array).
#[test]
fn every_requested_replica_is_returned() {
    let m = master();
    let cfg = WriteConfig {
        memory_replicas: 2,
        ..WriteConfig::default()
    };
    let s = put(&m, "two", &cfg);
    assert_eq!(s.replicas.len(), 2);
    assert_ne!(segment_of(&s.replicas[0]), segment_of(&s.replicas[1]));
    assert_eq!(m.get_replica_list(Key::new("two")).unwrap().len(), 2);
}

// Revoking the only write erases the object.
#[test]
fn revoke_erases_an_object_without_replicas() {
    let m = master();
    let s = m
        .put_start(C1, Key::new("gone"), SIZE, &WriteConfig::default())
        .unwrap();
    m.put_revoke(C1, Key::new("gone"), ReplicaSelector::All, Some(s.token))
        .unwrap();
    assert_eq!(m.key_count(), 0);
}

// Listing is per tenant, ordered, paged with the cursor of the previous page.
#[test]
fn list_keys_pages_with_a_cursor() {
    let m = master();
    for key in ["a1", "a2", "a3", "b1"] {
        put(&m, key, &WriteConfig::default());
    }
    let s = m
        .put_start(C1, Key::scoped("t", "a9"), SIZE, &WriteConfig::default())
        .unwrap();
    m.put_end(
        C1,
        Key::scoped("t", "a9"),
        ReplicaSelector::All,
        Some(s.token),
    )
    .unwrap();

    let p1 = m.list_keys(DEFAULT_TENANT, "a", None, 2).unwrap();
    assert_eq!(p1.keys, ["a1", "a2"]);
    let after = p1.next.expect("a next page");
    let p2 = m.list_keys(DEFAULT_TENANT, "a", Some(&after), 2).unwrap();
    assert_eq!(p2.keys, ["a3"]);
    assert_eq!(p2.next, None);
    assert_eq!(m.list_keys("t", "", None, 0).unwrap().keys, ["a9"]);
    assert_eq!(m.key_count(), 5);
    assert_eq!(m.remove_by_regex(None, "^a[12]$", true).unwrap(), 2);
    assert_eq!(m.remove_all(true), 3);
}

// Copy adds a replica on the target; move relocates it; both through Start/End.
#[test]
fn copy_and_move_through_the_safe_layer() {
    let m = master();
    let k = Key::new("c");
    let s = put(&m, "c", &WriteConfig::default());
    let source = m.segment_name(segment_of(&s.replicas[0])).unwrap();
    let other = if source == "mem0" { "mem1" } else { "mem0" };

    let targets = m.copy_start(k, &[other]).unwrap();
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0].status, ReplicaStatus::Processing);
    m.copy_end(k).unwrap();
    assert_eq!(m.get_replica_list(k).unwrap().len(), 2);

    m.mount_segment(C2, &spec("mem2", 3 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    let target = m.move_start(k, other, "mem2").unwrap();
    assert_eq!(m.segment_name(segment_of(&target)).unwrap(), "mem2");
    m.move_end(k).unwrap();
    let names: Vec<String> = m
        .get_replica_list(k)
        .unwrap()
        .iter()
        .map(|r| m.segment_name(segment_of(r)).unwrap())
        .collect();
    assert!(names.contains(&"mem2".to_string()) && !names.contains(&other.to_string()));
    assert_eq!(
        m.copy_end(k).unwrap_err().kind(),
        ErrorKind::ObjectNoReplicationTask
    );
}

// A LOCAL_DISK replica can be promoted back into memory.
#[test]
fn local_disk_replica_promotes_to_memory() {
    let m = master();
    let k = Key::new("disk");
    let r = m.add_local_disk_replica(C2, k, SIZE).unwrap();
    assert_eq!(
        (r.kind, r.location),
        (
            ReplicaKind::LocalDisk,
            Location::LocalDisk {
                client: C2,
                size: SIZE
            }
        )
    );
    let staged = m.promotion_start(k, &["mem1".to_string()]).unwrap();
    assert_eq!(m.segment_name(segment_of(&staged)).unwrap(), "mem1");
    m.promotion_end(k, true).unwrap();
    let kinds: Vec<ReplicaKind> = m
        .get_replica_list(k)
        .unwrap()
        .iter()
        .map(|r| r.kind)
        .collect();
    assert!(kinds.contains(&ReplicaKind::Memory));
}

// Unmounting drops the segment's replicas and erases objects left without one.
#[test]
fn unmount_reports_what_it_dropped() {
    let m = Master::new(MasterConfig::deterministic(T0)).unwrap();
    let id = m
        .mount_segment(C1, &spec("only", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    assert_eq!(m.segment_name(id).unwrap(), "only");
    put(&m, "x", &WriteConfig::default());
    put(&m, "y", &WriteConfig::default());
    let report = m.unmount_segment(C1, "only").unwrap();
    assert_eq!((report.replicas_dropped, report.objects_erased), (2, 2));
    assert_eq!(m.key_count(), 0);
    assert_eq!(m.segment_name(id), None);
    let none = m.unmount_client(C2).unwrap();
    assert_eq!((none.replicas_dropped, none.objects_erased), (0, 0));
}

// Prometheus text and the metrics struct describe the same master.
#[test]
fn metrics_in_both_forms() {
    let m = master();
    put(&m, "m1", &WriteConfig::default());
    let s = m.metrics();
    assert_eq!((s.key_count, s.segments.len()), (1, 2));
    assert_eq!(s.memory_allocated_bytes, SIZE);
    assert_eq!(
        s.segments.iter().map(|u| u.allocated).sum::<u64>(),
        SIZE,
        "{:?}",
        s.segments
    );
    let text = m.metrics_prometheus();
    assert!(text
        .lines()
        .any(|l| l.starts_with("master_key_count") && l.ends_with(" 1")));
}
