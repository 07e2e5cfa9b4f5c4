//! docs/CONTRACT.md §3 PutStart / PutEnd / PutRevoke: one test per code each can
//! return, the allocation shapes, placement (distinct segments, preferred
//! first, spread over all segments) and "every rejection happens before any
//! side effect" (snapshot bytes and metrics compared before and after).
mod common;
use common::*;
use mooncake_meta_core::*;

/// Everything a rejection must leave alone: the persisted state (objects,
/// leases, deadlines, counters) and every metric.
fn fingerprint(m: &Master) -> (Vec<u8>, MetricsSnapshot) {
    (m.snapshot().unwrap(), m.metrics())
}

fn assert_unchanged(m: &Master, before: &(Vec<u8>, MetricsSnapshot)) {
    let now = fingerprint(m);
    assert_eq!(now.1, before.1, "metrics changed");
    assert!(now.0 == before.0, "snapshot bytes changed");
    inv(m);
}

/// As [`assert_unchanged`] for NO_AVAILABLE_HANDLE, which counts one
/// put-start failure and nothing else.
fn assert_unchanged_but_one_failure(m: &Master, before: &(Vec<u8>, MetricsSnapshot)) {
    let mut expected = before.1.clone();
    expected.put_start_failures += 1;
    let now = fingerprint(m);
    assert_eq!(now.1, expected);
    assert!(now.0 == before.0, "snapshot bytes changed");
    inv(m);
}

fn seg_of(m: &Master, d: &ReplicaDescriptor) -> String {
    match d.location {
        Location::Buffer { segment, .. } => m.segment_name(segment).unwrap(),
        Location::LocalDisk { .. } => panic!("not a buffer"),
    }
}

fn shape(mem: u32, nof: u32) -> WriteConfig {
    WriteConfig {
        memory_replicas: mem,
        nof_ssd_replicas: nof,
        ..WriteConfig::default()
    }
}

/// Fills segment `seg` (of `size` bytes, pool `pool`) with one object.
fn fill(m: &Master, key: &str, seg: &str, size: u64, pool: Pool) {
    let c = WriteConfig {
        memory_replicas: (pool == Pool::Memory) as u32,
        nof_ssd_replicas: (pool == Pool::NofSsd) as u32,
        preferred_segments: vec![seg.into()],
        ..WriteConfig::default()
    };
    let w = m.put_start(C1, k(key), size, &c).unwrap();
    assert_eq!(seg_of(m, &w.replicas[0]), seg);
    m.put_end(C1, k(key), ReplicaSelector::All, None).unwrap();
}

const SEG: u64 = 4096;

// ----- PutStart: INVALID_PARAMS -------------------------------------------

#[test]
fn put_start_invalid_params_for_empty_key() {
    // §3: empty key → INVALID_PARAMS, no side effect
    let m = master();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_start(C1, k(""), 64, &preserve())),
        ErrorKind::InvalidParams
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_start_invalid_params_for_empty_or_nul_tenant() {
    // §2: tenants are non-empty and NUL-free (what keeps scoped keys apart)
    let m = master();
    let before = fingerprint(&m);
    for t in ["", "a\0b"] {
        assert_eq!(
            code(m.put_start(C1, Key::scoped(t, "k"), 64, &preserve())),
            ErrorKind::InvalidParams
        );
    }
    assert_unchanged(&m, &before);
}

#[test]
fn put_start_invalid_params_for_zero_size() {
    // §3: size 0 → INVALID_PARAMS
    let m = master();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_start(C1, k("k"), 0, &preserve())),
        ErrorKind::InvalidParams
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_start_invalid_params_when_no_replica_is_requested() {
    // §3: no replicas requested → INVALID_PARAMS
    let m = master();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_start(C1, k("k"), 64, &shape(0, 0))),
        ErrorKind::InvalidParams
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_start_invalid_params_for_bad_soft_pin_request() {
    // §4.1: PRESERVE/DISABLE with a TTL (even 0) and ENABLE above max are rejected at Start
    let m = master();
    let before = fingerprint(&m);
    let bad = [
        SoftPinRequest {
            action: SoftPinAction::Preserve,
            ttl_ms: Some(0),
        },
        SoftPinRequest {
            action: SoftPinAction::Disable,
            ttl_ms: Some(5),
        },
        SoftPinRequest::enable_for(MAX_TTL + 1),
    ];
    for req in bad {
        assert_eq!(
            code(m.put_start(C1, k("k"), 64, &cfg(req))),
            ErrorKind::InvalidParams,
            "{req:?}"
        );
    }
    assert_unchanged(&m, &before);
}

#[test]
fn put_start_invalid_params_for_bad_group() {
    // §3: bad group → INVALID_PARAMS
    let m = master();
    let before = fingerprint(&m);
    for g in ["", "g\0h"] {
        assert_eq!(
            code(m.put_start(C1, k("k"), 64, &preserve().with_group(g))),
            ErrorKind::InvalidParams
        );
    }
    assert_unchanged(&m, &before);
}

#[test]
fn put_start_validates_before_looking_at_the_existing_object() {
    // §3: request validation comes first, even on a key that already exists
    let m = master();
    put(&m, "k", 64, &preserve());
    assert_eq!(
        code(m.put_start(C1, k("k"), 0, &preserve())),
        ErrorKind::InvalidParams
    );
}

// ----- PutStart: OBJECT_ALREADY_EXISTS and replacement --------------------

#[test]
fn put_start_object_already_exists_for_complete_object() {
    // §3: an existing object with a COMPLETE replica → OBJECT_ALREADY_EXISTS, however old
    let m = master();
    put(&m, "k", 64, &preserve());
    m.advance_time(10 * 600_000).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_start(C2, k("k"), 64, &preserve())),
        ErrorKind::ObjectAlreadyExists
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_start_object_already_exists_for_partially_complete_write() {
    // §3: one COMPLETE replica is enough, even while another is still PROCESSING
    let m = master();
    m.put_start(C1, k("k"), 64, &shape(1, 1)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, None)
        .unwrap();
    m.advance_time(30_001).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_start(C2, k("k"), 64, &preserve())),
        ErrorKind::ObjectAlreadyExists
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_start_object_already_exists_for_young_write() {
    // §1: young = now <= put_start + put_start_discard_timeout (boundary included)
    let m = master();
    m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    for t in [T0, T0 + 30_000] {
        m.set_time(t).unwrap();
        let before = fingerprint(&m);
        assert_eq!(
            code(m.put_start(C2, k("k"), 64, &preserve())),
            ErrorKind::ObjectAlreadyExists
        );
        assert_unchanged(&m, &before);
    }
}

#[test]
fn put_start_replaces_a_stale_write_without_complete_replica() {
    // §3: not young and nothing COMPLETE → replaced; old buffers go to the discarded list
    let m = master();
    let old = m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    m.set_time(T0 + 30_001).unwrap();
    let new = m.put_start(C2, k("k"), 64, &preserve()).unwrap();
    assert_ne!(new.token, old.token);
    assert_eq!(m.key_count(), 1);
    let mt = m.metrics();
    assert_eq!(mt.discarded_staging_bytes, 64);
    assert_eq!(
        mt.memory_allocated_bytes, 128,
        "discarded bytes stay allocated"
    );
    // the new write belongs to C2 and its token
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, None)),
        ErrorKind::IllegalClient
    );
    assert_eq!(
        code(m.put_end(C2, k("k"), ReplicaSelector::All, Some(old.token))),
        ErrorKind::StaleWriteToken
    );
    m.put_end(C2, k("k"), ReplicaSelector::All, Some(new.token))
        .unwrap();
    inv(&m);
}

#[test]
fn put_start_replacing_a_stale_write_drops_its_deadline() {
    // §3/§4.5: the replaced object's deadline is dropped (gauge −1, unregistered), nothing carried
    let m = master();
    put(&m, "k", 64, &enable(MAX_TTL));
    m.upsert_start(C1, k("k"), 64, &preserve()).unwrap(); // case B: nothing COMPLETE now
    assert_eq!(gauge(&m), 1);
    m.advance_time(30_001).unwrap();
    m.put_start(C2, k("k"), 64, &preserve()).unwrap();
    assert_eq!(deadline(&m, "k"), None);
    assert_eq!(gauge(&m), 0);
    assert_eq!(m.index_sizes().1, 0);
    inv(&m);
}

// ----- PutStart: allocation shapes -----------------------------------------

#[test]
fn put_start_memory_only_is_best_effort() {
    // §3: memory-only writes succeed when at least one replica is placed
    let m = master_with(config(), 2, 0, SEG);
    let w = m.put_start(C1, k("a"), 64, &shape(3, 0)).unwrap();
    assert_eq!(w.replicas.len(), 2);
    fill(&m, "full", "mem0", SEG - 64, Pool::Memory);
    let w = m.put_start(C1, k("b"), 64, &shape(2, 0)).unwrap();
    assert_eq!(w.replicas.len(), 1);
    assert_eq!(seg_of(&m, &w.replicas[0]), "mem1");
    inv(&m);
}

#[test]
fn put_start_no_available_handle_when_no_memory_replica_fits() {
    // §3: memory-only with nothing placed → NO_AVAILABLE_HANDLE, counted, nothing allocated
    let m = master_with(config(), 2, 0, SEG);
    fill(&m, "f0", "mem0", SEG, Pool::Memory);
    fill(&m, "f1", "mem1", SEG, Pool::Memory);
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_start(C1, k("k"), 1, &shape(2, 0))),
        ErrorKind::NoAvailableHandle
    );
    assert_unchanged_but_one_failure(&m, &before);
}

#[test]
fn put_start_one_memory_one_nof_succeeds_with_either() {
    // §3: 1 MEMORY + 1 NOF_SSD succeeds if either is placed
    let m = master_with(config(), 1, 1, SEG);
    fill(&m, "fm", "mem0", SEG, Pool::Memory);
    let w = m.put_start(C1, k("a"), 64, &shape(1, 1)).unwrap();
    assert_eq!(w.replicas.len(), 1);
    assert_eq!(w.replicas[0].kind, ReplicaKind::NofSsd);

    let m = master_with(config(), 1, 1, SEG);
    fill(&m, "fn", "nof0", SEG, Pool::NofSsd);
    let w = m.put_start(C1, k("a"), 64, &shape(1, 1)).unwrap();
    assert_eq!(w.replicas.len(), 1);
    assert_eq!(w.replicas[0].kind, ReplicaKind::Memory);
    inv(&m);
}

#[test]
fn put_start_one_memory_one_nof_no_available_handle_when_neither_fits() {
    // §3: 1 MEMORY + 1 NOF_SSD with neither placed → NO_AVAILABLE_HANDLE
    let m = master_with(config(), 1, 1, SEG);
    fill(&m, "fm", "mem0", SEG, Pool::Memory);
    fill(&m, "fn", "nof0", SEG, Pool::NofSsd);
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_start(C1, k("k"), 64, &shape(1, 1))),
        ErrorKind::NoAvailableHandle
    );
    assert_unchanged_but_one_failure(&m, &before);
}

#[test]
fn put_start_other_shapes_need_exact_counts() {
    // §3: shapes other than memory-only and 1+1 need every replica; a failure frees the partial placement
    for (mem, nof) in [(2, 1), (1, 2), (0, 2), (0, 1), (2, 2)] {
        // 1 free memory segment and 1 free NOF segment: none of these shapes fits exactly
        let m = master_with(config(), 2, 2, SEG);
        fill(&m, "fm", "mem1", SEG, Pool::Memory);
        fill(&m, "fn", "nof1", SEG, Pool::NofSsd);
        if (mem, nof) == (0, 1) {
            fill(&m, "fn0", "nof0", SEG, Pool::NofSsd);
        }
        let before = fingerprint(&m);
        assert_eq!(
            code(m.put_start(C1, k("k"), 64, &shape(mem, nof))),
            ErrorKind::NoAvailableHandle,
            "{mem}M+{nof}N"
        );
        assert_unchanged_but_one_failure(&m, &before);
    }
}

#[test]
fn put_start_exact_shape_succeeds_when_everything_fits() {
    // §3: an exact shape with room for every replica succeeds with all of them
    let m = master_with(config(), 2, 2, SEG);
    let w = m.put_start(C1, k("k"), 64, &shape(2, 2)).unwrap();
    let kinds: Vec<_> = w.replicas.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            ReplicaKind::Memory,
            ReplicaKind::Memory,
            ReplicaKind::NofSsd,
            ReplicaKind::NofSsd
        ]
    );
    assert!(w
        .replicas
        .iter()
        .all(|r| r.status == ReplicaStatus::Processing));
    inv(&m);
}

#[test]
fn put_start_failure_with_room_for_a_big_hole_elsewhere_frees_partial_buffers() {
    // §3: a failed allocation leaves nothing allocated (memory placed, NOF missing)
    let m = master_with(config(), 2, 1, SEG);
    fill(&m, "fn", "nof0", SEG, Pool::NofSsd);
    let mem_before = m.metrics().memory_allocated_bytes;
    assert_eq!(
        code(m.put_start(C1, k("k"), 64, &shape(2, 1))),
        ErrorKind::NoAvailableHandle
    );
    assert_eq!(m.metrics().memory_allocated_bytes, mem_before);
    assert!(m
        .metrics()
        .segments
        .iter()
        .filter(|s| s.pool == Pool::Memory)
        .all(|s| s.allocated == 0));
    inv(&m);
}

// ----- placement -------------------------------------------------------------

#[test]
fn put_start_places_replicas_on_distinct_segments() {
    // §3: replicas of one object on distinct segments
    let m = master_with(config(), 4, 2, 1 << 20);
    for i in 0..20 {
        let key = format!("k{i}");
        let w = m.put_start(C1, k(&key), 64, &shape(4, 2)).unwrap();
        let mut segs: Vec<String> = w.replicas.iter().map(|r| seg_of(&m, r)).collect();
        segs.sort();
        segs.dedup();
        assert_eq!(segs.len(), 6);
    }
    // best effort never doubles up: 5 requested on 4 segments → 4 distinct
    let w = m.put_start(C1, k("five"), 64, &shape(5, 0)).unwrap();
    let mut segs: Vec<String> = w.replicas.iter().map(|r| seg_of(&m, r)).collect();
    segs.sort();
    segs.dedup();
    assert_eq!((w.replicas.len(), segs.len()), (4, 4));
    inv(&m);
}

#[test]
fn put_start_tries_preferred_segments_first() {
    // §3: preferred segments first, in order; full or unknown ones are skipped
    let m = master_with(config(), 4, 0, SEG);
    let c = WriteConfig {
        memory_replicas: 2,
        preferred_segments: vec!["mem2".into(), "mem0".into()],
        ..WriteConfig::default()
    };
    for i in 0..4 {
        let key = format!("p{i}");
        let w = m.put_start(C1, k(&key), 64, &c).unwrap();
        let segs: Vec<String> = w.replicas.iter().map(|r| seg_of(&m, r)).collect();
        assert_eq!(segs, ["mem2", "mem0"]);
    }
    fill(&m, "f2", "mem2", SEG - 4 * 64, Pool::Memory);
    let c = WriteConfig {
        memory_replicas: 1,
        preferred_segments: vec!["nope".into(), "mem2".into(), "mem3".into()],
        ..WriteConfig::default()
    };
    let w = m.put_start(C1, k("q"), 64, &c).unwrap();
    assert_eq!(seg_of(&m, &w.replicas[0]), "mem3");
    inv(&m);
}

#[test]
fn placement_finds_buffers_on_all_four_segments() {
    // §3: with 4 segments, load spreads and full segments are skipped
    let m = master_with(config(), 4, 0, SEG);
    let mut used = std::collections::BTreeSet::new();
    // 16 objects of a quarter segment exactly fill the 4 segments
    for i in 0..16 {
        let key = format!("k{i}");
        let w = m.put_start(C1, k(&key), SEG / 4, &shape(1, 0)).unwrap();
        used.insert(seg_of(&m, &w.replicas[0]));
    }
    assert_eq!(used.len(), 4);
    assert!(m.metrics().segments.iter().all(|s| s.allocated == SEG));
    assert_eq!(
        code(m.put_start(C1, k("more"), 1, &shape(1, 0))),
        ErrorKind::NoAvailableHandle
    );
    // and with plenty of room, the spread alone reaches every segment
    let m = master_with(config(), 4, 0, 1 << 30);
    let mut used = std::collections::BTreeSet::new();
    for i in 0..200 {
        let key = format!("k{i}");
        let w = m.put_start(C1, k(&key), 64, &shape(1, 0)).unwrap();
        used.insert(seg_of(&m, &w.replicas[0]));
    }
    assert_eq!(used.len(), 4);
    inv(&m);
}

#[test]
fn put_start_returns_processing_descriptors_and_a_new_token() {
    // §3: descriptors of the staged replicas and a new write token
    let m = master();
    let a = m.put_start(C1, k("a"), 100, &shape(2, 1)).unwrap();
    let b = m.put_start(C1, k("b"), 100, &shape(1, 0)).unwrap();
    assert_ne!(a.token, b.token);
    assert_ne!(a.token, 0);
    assert_eq!(a.replicas.len(), 3);
    for r in &a.replicas {
        assert_eq!(r.status, ReplicaStatus::Processing);
        match r.location {
            Location::Buffer { size, .. } => assert_eq!(size, 100),
            _ => panic!("buffer expected"),
        }
    }
    let mut ids: Vec<u64> = a.replicas.iter().chain(&b.replicas).map(|r| r.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "replica ids unique per master");
    assert_eq!(m.key_count(), 2);
    inv(&m);
}

// ----- PutEnd ----------------------------------------------------------------

#[test]
fn put_end_object_not_found() {
    // §3: PutEnd on a missing key → OBJECT_NOT_FOUND
    let m = master();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, None)),
        ErrorKind::ObjectNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_end_illegal_client() {
    // §3: PutEnd by a client that is not the writer → ILLEGAL_CLIENT
    let m = master();
    m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_end(C2, k("k"), ReplicaSelector::All, None)),
        ErrorKind::IllegalClient
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_end_illegal_client_comes_before_stale_write_token() {
    // §3 check order: OBJECT_NOT_FOUND → ILLEGAL_CLIENT → STALE_WRITE_TOKEN
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    assert_eq!(
        code(m.put_end(C2, k("k"), ReplicaSelector::All, Some(w.token + 100))),
        ErrorKind::IllegalClient
    );
    assert_eq!(
        code(m.put_end(C2, k("nope"), ReplicaSelector::All, Some(w.token + 100))),
        ErrorKind::ObjectNotFound
    );
}

#[test]
fn put_end_stale_write_token() {
    // §3/§7: a token that is not the current write's → STALE_WRITE_TOKEN, in flight or not
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token + 1))),
        ErrorKind::StaleWriteToken
    );
    assert_unchanged(&m, &before);
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token + 1))),
        ErrorKind::StaleWriteToken
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_end_without_write_in_flight_is_ok_and_changes_nothing() {
    // §3: no write in flight and every targeted replica COMPLETE → OK, nothing changes
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &shape(1, 1)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    m.advance_time(500).unwrap();
    let before = fingerprint(&m);
    for sel in [
        ReplicaSelector::All,
        ReplicaSelector::Memory,
        ReplicaSelector::NofSsd,
    ] {
        m.put_end(C1, k("k"), sel, Some(w.token)).unwrap();
        m.put_end(C1, k("k"), sel, None).unwrap();
    }
    assert_unchanged(&m, &before);
}

#[test]
fn put_end_completes_only_the_targeted_kind() {
    // §3: End(MEMORY) completes the MEMORY replicas; the write ends when none is PROCESSING
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &shape(1, 1)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let readable = m.get_replica_list(k("k")).unwrap();
    assert_eq!(readable.len(), 1);
    assert_eq!(readable[0].kind, ReplicaKind::Memory);
    // the write is still in flight: the NOF replica can still be revoked
    m.put_revoke(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    // and now nothing is in flight: a revoke is INVALID_WRITE
    assert_eq!(
        code(m.put_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token))),
        ErrorKind::InvalidWrite
    );
    inv(&m);
}

#[test]
fn put_end_sets_lease_to_max_of_lease_and_now() {
    // §2: PutEnd sets lease = max(lease, now); it does not make a live lease
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &shape(1, 1)).unwrap();
    m.advance_time(7).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let lease = |m: &Master| m.capture().objects[0].lease;
    assert_eq!(lease(&m), T0 + 7);
    // a read grants now + ttl; a later End never lowers it
    m.get_replica_list(k("k")).unwrap();
    assert_eq!(lease(&m), T0 + 7 + LEASE);
    m.advance_time(1).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    assert_eq!(lease(&m), T0 + 7 + LEASE);
    // PutEnd's own lease is not live: an unleased object is removable at once
    m.put_start(C1, k("j"), 64, &preserve()).unwrap();
    m.put_end(C1, k("j"), ReplicaSelector::All, None).unwrap();
    m.remove(k("j"), false).unwrap();
}

#[test]
fn put_end_never_completes_a_copy_target() {
    // §3: End marks replicas of this write only, never a copy/move/promotion target
    let m = master_with(config(), 2, 0, 1 << 20);
    let c = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..WriteConfig::default()
    };
    let w = m.put_start(C1, k("k"), 64, &c).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    let t = m.copy_start(k("k"), &["mem1"]).unwrap();
    assert_eq!(
        code(m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))),
        ErrorKind::InvalidWrite
    );
    let readable = m.get_replica_list(k("k")).unwrap();
    assert_eq!(readable.len(), 1);
    assert!(readable.iter().all(|r| r.id != t[0].id));
    inv(&m);
}

#[test]
fn put_end_with_no_write_in_flight_is_invalid_write_only_for_a_selected_task_target() {
    // §3 PutEnd: with no write in flight every replica a write made is
    // COMPLETE, so an End is an OK no-op for every selector, unless a
    // replica it selects is not COMPLETE: only a copy's, move's or
    // promotion's PROCESSING target can be, and then INVALID_WRITE (the
    // End never completes it), changing nothing
    let m = master_with(config(), 2, 1, 1 << 20);
    let c = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..shape(1, 1)
    };
    let w = m.put_start(C1, k("k"), 64, &c).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap(); // nothing of that kind left PROCESSING: still OK
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    let t = m.copy_start(k("k"), &["mem1"]).unwrap();
    let before = fingerprint(&m);
    for sel in [ReplicaSelector::All, ReplicaSelector::Memory] {
        for token in [Some(w.token), None] {
            let e = m.put_end(C1, k("k"), sel, token).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidWrite, "{sel:?}");
            assert!(e.message().contains(&format!("replica {}", t[0].id)), "{e}");
            assert_eq!(
                code(m.upsert_end(C1, k("k"), sel, token)),
                ErrorKind::InvalidWrite
            );
        }
    }
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap(); // the copy's target is MEMORY
    assert_unchanged(&m, &before);
    let target = m
        .capture()
        .objects
        .into_iter()
        .flat_map(|o| o.replicas)
        .find(|r| r.id == t[0].id)
        .expect("the copy target is still there");
    assert_eq!(target.status, 0, "PROCESSING");
    // Once the copy ends every replica is COMPLETE again.
    m.copy_end(k("k")).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    inv(&m);
}

// ----- PutRevoke -------------------------------------------------------------

#[test]
fn put_revoke_object_not_found() {
    // §3: PutRevoke on a missing key → OBJECT_NOT_FOUND
    let m = master();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_revoke(C1, k("k"), ReplicaSelector::All, None)),
        ErrorKind::ObjectNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_revoke_illegal_client() {
    // §3: PutRevoke by a client that is not the writer → ILLEGAL_CLIENT
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_revoke(C2, k("k"), ReplicaSelector::All, Some(w.token + 1))),
        ErrorKind::IllegalClient
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_revoke_stale_write_token() {
    // §3/§7: PutRevoke with a token that is not the current write's → STALE_WRITE_TOKEN
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token + 1))),
        ErrorKind::StaleWriteToken
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_revoke_invalid_write_without_write_in_flight() {
    // §3: no write in flight → INVALID_WRITE (after the writer and token checks)
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, None).unwrap();
    let before = fingerprint(&m);
    assert_eq!(
        code(m.put_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token))),
        ErrorKind::InvalidWrite
    );
    assert_eq!(
        code(m.put_revoke(C2, k("k"), ReplicaSelector::All, Some(w.token))),
        ErrorKind::IllegalClient
    );
    assert_eq!(
        code(m.put_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token + 1))),
        ErrorKind::StaleWriteToken
    );
    assert_unchanged(&m, &before);
}

#[test]
fn put_revoke_invalid_write_when_a_targeted_replica_is_not_processing() {
    // §3: a targeted replica that is not PROCESSING → INVALID_WRITE, nothing revoked
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &shape(1, 1)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let before = fingerprint(&m);
    for sel in [ReplicaSelector::All, ReplicaSelector::Memory] {
        assert_eq!(
            code(m.put_revoke(C1, k("k"), sel, Some(w.token))),
            ErrorKind::InvalidWrite
        );
    }
    assert_unchanged(&m, &before);
}

#[test]
fn put_revoke_frees_buffers_at_once_and_erases_an_empty_object() {
    // §3: revoked buffers are freed at once; the object goes when no replica is left
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &shape(2, 1)).unwrap();
    m.put_revoke(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let mt = m.metrics();
    assert_eq!(mt.memory_allocated_bytes, 0);
    assert_eq!(mt.nof_ssd_allocated_bytes, 64);
    assert_eq!(mt.discarded_staging_bytes, 0);
    assert_eq!(m.key_count(), 1);
    m.put_revoke(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    assert_eq!(m.key_count(), 0);
    assert_eq!(m.metrics().nof_ssd_allocated_bytes, 0);
    assert!(!m.exist(k("k")).unwrap());
    inv(&m);
}

#[test]
fn put_revoke_of_the_rest_keeps_completed_replicas() {
    // §3: revoking PROCESSING replicas keeps the COMPLETE ones; the object stays readable
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &shape(1, 1)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    m.put_revoke(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let r = m.get_replica_list(k("k")).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].kind, ReplicaKind::NofSsd);
    assert_eq!(m.metrics().memory_allocated_bytes, 0);
    inv(&m);
}
