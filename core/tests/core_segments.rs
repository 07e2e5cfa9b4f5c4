//! docs/CONTRACT.md §2 segments: identical re-mount is OK, conflicting mounts are
//! SEGMENT_ALREADY_EXISTS, unmount is owner-checked and synchronous (replicas
//! dropped, objects left without a replica erased with gauge −1), and
//! unmount_client takes every segment of a client.
mod common;
use common::*;
use mooncake_meta_core::*;

const SEG: u64 = 1 << 20;

fn fingerprint(m: &Master) -> (Vec<u8>, MetricsSnapshot) {
    (m.snapshot().unwrap(), m.metrics())
}

fn assert_unchanged(m: &Master, before: &(Vec<u8>, MetricsSnapshot)) {
    let now = fingerprint(m);
    assert_eq!(now.1, before.1, "metrics changed");
    assert!(now.0 == before.0, "snapshot bytes changed");
    inv(m);
}

fn on(segs: &[&str]) -> WriteConfig {
    WriteConfig {
        memory_replicas: segs.len() as u32,
        preferred_segments: segs.iter().map(|s| s.to_string()).collect(),
        ..WriteConfig::default()
    }
}

#[test]
fn mount_segment_identical_remount_is_ok() {
    // §2: re-mounting an identical segment from the same client is OK (same id, nothing changes)
    let m = Master::new(config()).unwrap();
    let s = spec("a", 0, SEG, Pool::Memory);
    let id = m.mount_segment(C1, &s).unwrap();
    put(&m, "k", 64, &preserve());
    let before = fingerprint(&m);
    assert_eq!(m.mount_segment(C1, &s).unwrap(), id);
    assert_unchanged(&m, &before);
    assert_eq!(m.metrics().memory_capacity_bytes, SEG);
}

#[test]
fn mount_segment_segment_already_exists() {
    // §2: the same name with another base, size, pool or client → SEGMENT_ALREADY_EXISTS
    let m = Master::new(config()).unwrap();
    let s = spec("a", 0, SEG, Pool::Memory);
    m.mount_segment(C1, &s).unwrap();
    let before = fingerprint(&m);
    let variants = [
        (C2, s.clone()),
        (
            C1,
            SegmentSpec {
                base: s.base + 4096,
                ..s.clone()
            },
        ),
        (
            C1,
            SegmentSpec {
                size: SEG / 2,
                ..s.clone()
            },
        ),
        (
            C1,
            SegmentSpec {
                pool: Pool::NofSsd,
                ..s.clone()
            },
        ),
    ];
    for (client, v) in variants {
        assert_eq!(
            code(m.mount_segment(client, &v)),
            ErrorKind::SegmentAlreadyExists,
            "{client} {v:?}"
        );
    }
    assert_unchanged(&m, &before);
}

#[test]
fn mount_segment_invalid_params_for_a_bad_spec() {
    // §2: empty or NUL names, size 0 and address overflow are rejected
    let m = Master::new(config()).unwrap();
    let before = fingerprint(&m);
    let bad = [
        SegmentSpec {
            name: "".into(),
            base: 0,
            size: SEG,
            pool: Pool::Memory,
        },
        SegmentSpec {
            name: "a\0".into(),
            base: 0,
            size: SEG,
            pool: Pool::Memory,
        },
        SegmentSpec {
            name: "z".into(),
            base: 0,
            size: 0,
            pool: Pool::Memory,
        },
        SegmentSpec {
            name: "o".into(),
            base: u64::MAX - 10,
            size: 100,
            pool: Pool::NofSsd,
        },
    ];
    for s in bad {
        assert_eq!(
            code(m.mount_segment(C1, &s)),
            ErrorKind::InvalidParams,
            "{s:?}"
        );
    }
    assert_unchanged(&m, &before);
}

#[test]
fn unmount_segment_segment_not_found() {
    // §3.2 codes: unmounting an unknown segment → SEGMENT_NOT_FOUND
    let m = master();
    put(&m, "k", 64, &preserve());
    let before = fingerprint(&m);
    assert_eq!(
        code(m.unmount_segment(C1, "nope")),
        ErrorKind::SegmentNotFound
    );
    assert_unchanged(&m, &before);
}

#[test]
fn unmount_segment_illegal_client() {
    // §3.2 codes: only the owner may unmount → ILLEGAL_CLIENT, nothing dropped
    let m = master();
    put(&m, "k", 64, &on(&["mem0"]));
    let before = fingerprint(&m);
    assert_eq!(
        code(m.unmount_segment(C2, "mem0")),
        ErrorKind::IllegalClient
    );
    assert_unchanged(&m, &before);
}

#[test]
fn unmount_segment_drops_replicas_and_erases_orphans_synchronously() {
    // §2: unmount drops every replica on the segment; objects without a valid replica
    // are erased (index entry removed, gauge −1); others keep their other replicas
    let m = master_with(config(), 2, 1, SEG);
    put(
        &m,
        "only0",
        64,
        &WriteConfig {
            preferred_segments: vec!["mem0".into()],
            ..enable(MAX_TTL)
        },
    );
    put(&m, "both", 64, &on(&["mem0", "mem1"]));
    put(&m, "only1", 64, &on(&["mem1"]));
    m.put_start(C1, k("writing0"), 64, &on(&["mem0"])).unwrap();
    assert_eq!((gauge(&m), m.index_sizes().1), (1, 1));
    let r = m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!(
        r,
        UnmountReport {
            replicas_dropped: 3,
            objects_erased: 2
        }
    );
    // done by the time unmount returns
    assert_eq!(m.key_count(), 2);
    assert_eq!((gauge(&m), m.index_sizes().1), (0, 0));
    assert_eq!(
        code(m.get_replica_list(k("only0"))),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(
        code(m.get_replica_list(k("writing0"))),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(m.get_replica_list(k("both")).unwrap().len(), 1);
    assert_eq!(m.get_replica_list(k("only1")).unwrap().len(), 1);
    let mt = m.metrics();
    assert_eq!(mt.memory_capacity_bytes, SEG);
    assert_eq!(mt.memory_allocated_bytes, 128);
    assert!(mt.segments.iter().all(|s| s.name != "mem0"));
    // the write that lost its replica can be started again
    m.put_start(C1, k("writing0"), 64, &preserve()).unwrap();
    inv(&m);
}

#[test]
fn unmount_segment_drops_discarded_buffers_on_it() {
    // §3: discarded buffers of an unmounted segment go with it (no longer counted)
    let m = master_with(config(), 2, 0, SEG);
    put(&m, "k", 64, &on(&["mem0"]));
    m.upsert_start(C1, k("k"), 128, &on(&["mem1"])).unwrap();
    assert_eq!(m.metrics().discarded_staging_bytes, 64);
    m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    assert_eq!(m.key_count(), 1);
    assert_eq!(m.release_discarded_at(T0 + 600_000), 0);
    inv(&m);
}

#[test]
fn unmount_client_unmounts_every_segment_of_the_client() {
    // unmount_client drops all of one client's segments, none of another's
    let m = Master::new(config()).unwrap();
    m.mount_segment(C1, &spec("a0", 0, SEG, Pool::Memory))
        .unwrap();
    m.mount_segment(C1, &spec("a1", 1, SEG, Pool::NofSsd))
        .unwrap();
    m.mount_segment(C2, &spec("b0", 2, SEG, Pool::Memory))
        .unwrap();
    put(
        &m,
        "ka",
        64,
        &WriteConfig {
            nof_ssd_replicas: 1,
            ..on(&["a0"])
        },
    );
    put(&m, "kb", 64, &on(&["b0"]));
    let r = m.unmount_client(C1).unwrap();
    assert_eq!(
        r,
        UnmountReport {
            replicas_dropped: 2,
            objects_erased: 1
        }
    );
    let mt = m.metrics();
    assert_eq!(mt.segments.len(), 1);
    assert_eq!(mt.segments[0].name, "b0");
    assert_eq!(mt.nof_ssd_capacity_bytes, 0);
    assert_eq!(m.key_count(), 1);
    // a client without segments: nothing to do
    assert_eq!(m.unmount_client(99).unwrap(), UnmountReport::default());
    inv(&m);
}

#[test]
fn remount_after_unmount_gets_a_fresh_segment() {
    // §2: a name is free again after unmount; the new segment starts empty
    let m = master_with(config(), 1, 0, SEG);
    put(&m, "k", 64, &preserve());
    let old = m.metrics().segments[0].clone();
    m.unmount_segment(C1, "mem0").unwrap();
    let id = m
        .mount_segment(C2, &spec("mem0", 5, SEG, Pool::Memory))
        .unwrap();
    assert_eq!(m.segment_name(id).as_deref(), Some("mem0"));
    assert_eq!(m.metrics().segments[0].allocated, 0);
    assert_eq!(old.allocated, 64);
    assert_eq!(m.key_count(), 0);
    inv(&m);
}

#[test]
fn restore_never_reuses_a_segment_id() {
    // §2 + §6: a segment id names one mount for the master's lifetime, so an
    // unmount still dropping replicas of a replaced table can never match a
    // restored segment (nor a stored id a client kept).
    let m = Master::new(config()).unwrap();
    let a = m
        .mount_segment(C1, &spec("a", 0, SEG, Pool::Memory))
        .unwrap();
    let b = m
        .mount_segment(C1, &spec("b", 1, SEG, Pool::Memory))
        .unwrap();
    // Hard-pinned, so the survival rule keeps it whatever its lease.
    let pinned = WriteConfig {
        hard_pin: true,
        ..on(&["a"])
    };
    put(&m, "k", 4096, &pinned);
    let bytes = m.snapshot().unwrap();
    m.restore(&bytes).unwrap();
    assert_eq!(m.segment_name(a), None, "id {a} names a restored segment");
    assert_eq!(m.segment_name(b), None, "id {b} names a restored segment");
    let restored: Vec<u32> = m
        .get_replica_list(Key::new("k"))
        .unwrap()
        .iter()
        .filter_map(|r| match r.location {
            Location::Buffer { segment, .. } => Some(segment),
            _ => None,
        })
        .collect();
    assert_eq!(restored.len(), 1);
    assert!(
        restored[0] > b,
        "restored segment id {} reuses an old one",
        restored[0]
    );
    assert_eq!(m.segment_name(restored[0]).as_deref(), Some("a"));
    let c = m
        .mount_segment(C1, &spec("c", 2, SEG, Pool::Memory))
        .unwrap();
    assert!(c > restored[0], "a mount after the restore got id {c}");
    inv(&m);
}

#[test]
fn a_failed_restore_gives_its_segment_ids_back() {
    // §6 "Failure": a candidate that decodes but fails validation leaves the
    // master as it was, its segment-id counter included.
    use mooncake_meta_core::snapshot::codec::{decode, encode};
    let m = Master::new(config()).unwrap();
    let a = m
        .mount_segment(C1, &spec("a", 0, SEG, Pool::Memory))
        .unwrap();
    let mut img = decode(&m.snapshot().unwrap()).unwrap();
    img.next_replica_id = MAX_INSTANT + 1; // refused by restore, after staging began
    let before = fingerprint(&m);
    let e = m.restore(&encode(&img)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeserializeFail, "{e}");
    assert_unchanged(&m, &before);
    let b = m
        .mount_segment(C1, &spec("b", 1, SEG, Pool::Memory))
        .unwrap();
    assert_eq!(b, a + 1, "the failed restore used up segment ids");
}

fn allocated(m: &Master, segment: &str) -> u64 {
    m.metrics()
        .segments
        .iter()
        .find(|s| s.name == segment)
        .map_or(0, |s| s.allocated)
}

#[test]
fn unmount_finds_every_owner_across_shards_after_frees_and_reuse() {
    // §2: unmount drops exactly the replicas and discarded buffers its
    // buffers' owners name, in every shard, including buffers that reuse
    // the bytes and blocks of removed objects; nothing on other segments
    let m = master_with(
        MasterConfig {
            shard_count: 8,
            ..config()
        },
        2,
        0,
        SEG,
    );
    let key = |i: usize| format!("k{i}");
    for i in 0..300 {
        let on_segs: &[&str] = match i % 3 {
            0 => &["mem0"],
            1 => &["mem0", "mem1"],
            _ => &["mem1"],
        };
        put(&m, &key(i), 64, &on(on_segs));
    }
    // Free 50 mem0-only buffers, then let 30 new mem0-only objects reuse them.
    for i in (0..300).step_by(6) {
        m.remove(k(&key(i)), true).unwrap();
    }
    for i in 0..30 {
        put(&m, &format!("fresh{i}"), 64, &on(&["mem0"]));
    }
    // Ten two-replica objects move to one new 128-byte buffer on mem1; their
    // old buffers on both segments wait, discarded, in their shards.
    for i in (1..300).step_by(30) {
        upsert(&m, &key(i), 128, &on(&["mem1"]));
    }
    assert_eq!(m.metrics().discarded_staging_bytes, 10 * 128);
    inv(&m);
    assert_eq!(allocated(&m, "mem0"), (50 + 30 + 100) * 64);
    let mem1 = allocated(&m, "mem1");
    assert_eq!(mem1, (90 + 10 + 100) * 64 + 10 * 128);

    let r = m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!(
        r,
        UnmountReport {
            replicas_dropped: 50 + 30 + 90,
            objects_erased: 50 + 30
        }
    );
    assert_eq!(m.key_count(), 200);
    assert_eq!(m.metrics().discarded_staging_bytes, 10 * 64);
    assert_eq!(allocated(&m, "mem1"), mem1);
    assert!(m.metrics().segments.iter().all(|s| s.name != "mem0"));
    for i in 0..300 {
        let got = m.get_replica_list(k(&key(i)));
        if i % 3 == 0 {
            assert_eq!(code(got), ErrorKind::ObjectNotFound, "{}", key(i));
        } else {
            assert_eq!(got.unwrap().len(), 1, "{}", key(i));
        }
    }
    for i in 0..30 {
        let got = m.get_replica_list(k(&format!("fresh{i}")));
        assert_eq!(code(got), ErrorKind::ObjectNotFound);
    }
    inv(&m);
    // The mem1 halves of the discarded pairs are still released normally.
    assert_eq!(m.release_discarded_at(T0 + 10 * 600_000), 10);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    assert_eq!(allocated(&m, "mem1"), mem1 - 10 * 64);
    inv(&m);
}

#[test]
fn removing_everything_after_unmount_and_remount_frees_every_buffer() {
    // §2: buffers on a remounted segment are new blocks; removing every
    // object afterwards leaves no byte allocated anywhere
    let m = master_with(config(), 2, 0, SEG);
    for i in 0..64 {
        put(&m, &format!("a{i}"), 100 + i, &on(&["mem0", "mem1"]));
    }
    m.unmount_segment(C1, "mem0").unwrap();
    m.mount_segment(C1, &spec("mem0", 0, SEG, Pool::Memory))
        .unwrap();
    for i in 0..64 {
        put(&m, &format!("b{i}"), 100 + i, &on(&["mem0", "mem1"]));
    }
    inv(&m);
    assert_eq!(m.remove_all(true), 128);
    assert_eq!(allocated(&m, "mem0"), 0);
    assert_eq!(allocated(&m, "mem1"), 0);
    inv(&m);
}

#[test]
fn a_mount_over_the_bytes_of_the_clients_segment_is_refused_and_changes_nothing() {
    // §2: a client's segments of one pool cover distinct bytes, so no two
    // readable buffers share memory; another client's segment, or the
    // other pool's, may sit at the same addresses.
    let m = Master::new(config()).unwrap();
    let a = spec("a", 0, SEG, Pool::Memory);
    m.mount_segment(C1, &a).unwrap();
    put(&m, "k", 64, &preserve());
    let before = fingerprint(&m);
    for (base, size) in [(a.base, SEG), (a.base + SEG - 1, SEG), (a.base - 1, 2)] {
        let over = SegmentSpec {
            name: "b".into(),
            base,
            size,
            pool: Pool::Memory,
        };
        let e = m.mount_segment(C1, &over).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{base:#x}");
        assert!(
            e.message().contains("overlaps segment 'a'"),
            "{}",
            e.message()
        );
        assert_unchanged(&m, &before);
    }
    m.mount_segment(
        C2,
        &SegmentSpec {
            name: "c2".into(),
            ..a.clone()
        },
    )
    .unwrap();
    m.mount_segment(
        C1,
        &SegmentSpec {
            name: "ssd".into(),
            pool: Pool::NofSsd,
            ..a.clone()
        },
    )
    .unwrap();
    inv(&m);
}

/// Races at exact points, through the `test-hooks` race hook.
#[cfg(feature = "test-hooks")]
mod at_exact_points {
    use super::*;

    /// §2, unmount is synchronous, across threads and with the journal off: a
    /// segment mounted again while an unmount of it runs is mounted only once
    /// the unmount has dropped every replica on the old one, so no reader sees
    /// a replica of the old segment beside one placed on the new segment over
    /// the same bytes. The unmount is held for up to two seconds just before it
    /// takes the lock of the shard holding the old replica, while another
    /// thread mounts the segment again, writes, and reads the old key.
    #[test]
    fn a_mount_waits_for_a_running_unmount_of_the_same_segment() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{mpsc, Arc, Mutex};
        use std::time::Duration;
        let m = Arc::new(
            Master::new(MasterConfig {
                shard_count: 4,
                ..config()
            })
            .unwrap(),
        );
        assert_eq!(m.journal_stats().capacity_bytes, 0, "the journal is off");
        let s = spec("x", 0, SEG, Pool::Memory);
        let old = m.mount_segment(C1, &s).unwrap();
        put(&m, "o", 64, &preserve());
        let shard = m.debug_shard_of(k("o"));
        let (tx, rx) = mpsc::channel();
        let rx = Mutex::new(rx);
        let fired = AtomicBool::new(false);
        let (m2, s2) = (Arc::clone(&m), s.clone());
        let worker = Arc::new(Mutex::new(None));
        let worker_slot = Arc::clone(&worker);
        m.debug_set_race_hook(Some(Arc::new(move |_: &MasterCore, p: RacePoint| {
            if p != (RacePoint::UnmountShard { shard }) || fired.swap(true, Ordering::Relaxed) {
                return;
            }
            let (m, s, tx) = (Arc::clone(&m2), s2.clone(), tx.clone());
            *worker_slot.lock().unwrap() = Some(std::thread::spawn(move || {
                let id = m.mount_segment(C1, &s).unwrap();
                put(&m, "p", 64, &preserve());
                let o = m.get_replica_list(k("o")).map_err(|e| e.kind());
                tx.send(()).unwrap();
                (id, o)
            }));
            // Without the wait a mount would get in here, between the table
            // and the replicas; with it the mount waits for the whole unmount.
            let _ = rx.lock().unwrap().recv_timeout(Duration::from_secs(2));
        })));
        let report = m.unmount_segment(C1, "x").unwrap();
        let (id, o) = worker.lock().unwrap().take().unwrap().join().unwrap();
        m.debug_set_race_hook(None);
        assert_eq!(report.replicas_dropped, 1);
        assert_ne!(id, old, "a new segment");
        assert_eq!(
            o.map(|_| ()),
            Err(ErrorKind::ObjectNotFound),
            "the old key's only replica was on the unmounted segment"
        );
        inv(&m);
    }
}
