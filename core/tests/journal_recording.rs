//! What a master with a journal records (docs/CONTRACT.md §12.1): one
//! record per state change, by outcome — the whole object as it stands
//! after the change (ObjectSet) or its erasure (ObjectErased), with the
//! buffers the change discarded, and an End as what it did (ObjectEnded) —
//! in commit order, with consecutive
//! sequences; nothing for reads, rejections and calls that change nothing;
//! a buffer's freeing record always before the record of a placement that
//! reuses it; instants as the primary chose them.

mod common;

use common::*;
use mooncake_meta_core::journal::codec::decode_batch;
use mooncake_meta_core::journal::*;
use mooncake_meta_core::snapshot::codec::{decode, version_of};
use mooncake_meta_core::*;
use std::collections::HashMap;
use std::sync::{Arc, Barrier};

const SEG: u64 = 1 << 20;

fn journal_config() -> MasterConfig {
    MasterConfig {
        journal_capacity_bytes: 1 << 24,
        ..config()
    }
}

/// A journalled master with memory segments mem0, mem1 and a second-pool
/// segment nof0, owned by C1.
fn jmaster() -> Master {
    master_with(journal_config(), 2, 1, SEG)
}

/// Reads the journal from where it last stopped, checking the sequences
/// run on without a gap.
struct Cursor<'a> {
    m: &'a Master,
    next: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor past everything recorded so far.
    fn at_end(m: &'a Master) -> Self {
        Cursor {
            m,
            next: m.journal_stats().last_seq + 1,
        }
    }

    fn from_start(m: &'a Master) -> Self {
        Cursor { m, next: 1 }
    }

    /// The records appended since the last call, in order, each in its
    /// long spelling (an ObjectStarted as the ObjectSet it stands for,
    /// [`Record::expand_start`]; [`take_raw`](Self::take_raw) as recorded).
    fn take(&mut self) -> Vec<Record> {
        self.take_raw()
            .into_iter()
            .map(Record::expand_start)
            .collect()
    }

    /// The records appended since the last call, in order, as recorded.
    fn take_raw(&mut self) -> Vec<Record> {
        let bytes = self.m.journal_read_to_vec(self.next).unwrap();
        if bytes.is_empty() {
            return Vec::new();
        }
        let b = decode_batch(&bytes).unwrap();
        assert_eq!(b.first_seq, self.next, "sequences run on without a gap");
        self.next = b.last_seq() + 1;
        assert_eq!(self.next, self.m.journal_stats().last_seq + 1);
        b.records
    }

    fn nothing(&mut self, what: &str) {
        let recs = self.take();
        assert!(recs.is_empty(), "{what} recorded {recs:?}");
    }
}

fn rkey(key: &str) -> RecordKey {
    RecordKey::new(DEFAULT_TENANT, key)
}

fn address(d: &ReplicaDescriptor) -> u64 {
    match d.location {
        Location::Buffer { address, .. } => address,
        Location::LocalDisk { .. } => panic!("not a buffer"),
    }
}

fn place(m: &Master, d: &ReplicaDescriptor) -> Placement {
    match d.location {
        Location::Buffer {
            segment, address, ..
        } => {
            let segment = m.segment_name(segment).unwrap();
            match d.kind {
                ReplicaKind::Memory => Placement::Memory { segment, address },
                _ => Placement::NofSsd { segment, address },
            }
        }
        Location::LocalDisk { client, .. } => Placement::LocalDisk { client },
    }
}

fn replica(m: &Master, d: &ReplicaDescriptor, role: ReplicaRole) -> ReplicaImage {
    ReplicaImage {
        id: d.id,
        status: d.status,
        role,
        place: place(m, d),
    }
}

/// The image of a new write of `size` bytes under `key` by C1 at the
/// current instant: everything as a fresh PutStart leaves it.
fn started(key: &str, size: u64, seq: u64, token: u64, put_start: u64) -> ObjectImage {
    ObjectImage {
        key: rkey(key),
        size,
        writer: C1,
        put_start,
        lease: 0,
        seq,
        write_token: token,
        hard_pin: false,
        group: None,
        committed: None,
        in_flight: Some(InFlightImage {
            pending: Some(SoftPinIntent::Preserve),
        }),
        task: None,
        replicas: vec![],
    }
}

fn set(image: ObjectImage, discarded: Vec<DiscardedBuffer>) -> Record {
    Record::ObjectSet {
        image: Box::new(image),
        discarded,
    }
}

fn erased(key: &str, discarded: Vec<DiscardedBuffer>) -> Record {
    Record::ObjectErased {
        key: rkey(key),
        discarded,
    }
}

fn image_of(r: &Record) -> &ObjectImage {
    match r {
        Record::ObjectSet { image, .. } => image,
        other => panic!("not an ObjectSet: {other:?}"),
    }
}

fn on(segment: &str) -> WriteConfig {
    WriteConfig {
        preferred_segments: vec![segment.into()],
        ..preserve()
    }
}

fn discarded(segment: &str, address: u64, len: u64, release_at: u64) -> DiscardedBuffer {
    DiscardedBuffer {
        buffer: BufferRef {
            segment: segment.into(),
            address,
            len,
        },
        release_at,
    }
}

// §12.1: mounts are recorded with what was mounted, a re-mount of the
// identical segment is not.
#[test]
fn mounts_are_recorded_once() {
    let m = Master::new(journal_config()).unwrap();
    let mut c = Cursor::from_start(&m);
    let s = spec("mem0", 3, SEG, Pool::Memory);
    m.mount_segment(C2, &s).unwrap();
    assert_eq!(
        c.take(),
        [Record::SegmentMounted {
            owner: C2,
            name: "mem0".into(),
            pool: Pool::Memory,
            base: 4 << 40,
            size: SEG,
        }]
    );
    m.mount_segment(C2, &s).unwrap();
    c.nothing("an identical re-mount");
    assert_eq!(
        m.mount_segment(C1, &s).unwrap_err().kind(),
        ErrorKind::SegmentAlreadyExists
    );
    c.nothing("a refused mount");
}

/// `img` after the End `end` records (an ObjectEnded of it), as a
/// standby applies it.
fn after_end(mut img: ObjectImage, end: &Record) -> ObjectImage {
    let Record::ObjectEnded {
        key,
        write_token,
        at,
        completed,
        commit,
        write_over,
    } = end
    else {
        panic!("not an ObjectEnded: {end:?}");
    };
    assert_eq!((key, *write_token), (&img.key, img.write_token));
    for r in &mut img.replicas {
        if completed.contains(&r.id) {
            assert_eq!(r.status, ReplicaStatus::Processing);
            r.status = ReplicaStatus::Complete;
        }
    }
    img.lease = img.lease.max(*at);
    if let Some(after) = commit {
        img.committed = *after;
        if let Some(f) = &mut img.in_flight {
            f.pending = None;
        }
    }
    if *write_over {
        img.in_flight = None;
    }
    img
}

// §12.1: PutStart records the new object with its write in flight and the
// resolved pending intent; the End records what it did: the replica
// COMPLETE, the commit rule's outcome (the committed deadline), the write
// over, at the End's instant (the lease raised to it).
#[test]
fn a_put_pair_records_the_object_then_its_end() {
    let m = jmaster();
    let mut c = Cursor::at_end(&m);
    let w = m.put_start(C1, k("a"), 4096, &enable(60_000)).unwrap();
    let mut img = started("a", 4096, 1, w.token, T0);
    img.in_flight = Some(InFlightImage {
        pending: Some(SoftPinIntent::Enable { ttl_ms: 60_000 }),
    });
    img.replicas = vec![replica(&m, &w.replicas[0], ReplicaRole::Write)];
    assert_eq!(img.replicas[0].status, ReplicaStatus::Processing);
    assert_eq!(c.take(), [set(img.clone(), vec![])]);

    m.advance_time(5).unwrap();
    m.put_end(C1, k("a"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    let end = Record::ObjectEnded {
        key: rkey("a"),
        write_token: w.token,
        at: T0 + 5,
        completed: vec![img.replicas[0].id],
        commit: Some(Some(T0 + 5 + 60_000)),
        write_over: true,
    };
    assert_eq!(c.take(), std::slice::from_ref(&end));
    let ended = after_end(img.clone(), &end);
    img.replicas[0].status = ReplicaStatus::Complete;
    img.lease = T0 + 5;
    img.committed = Some(T0 + 5 + 60_000);
    img.in_flight = None;
    assert_eq!(ended, img);
    inv(&m);
}

// §12.1: a Start that creates its key (PutStart, UpsertStart case A,
// single or batch) records the compact ObjectStarted: what it decided, the
// replicas PROCESSING write replicas, nothing discarded; it stands for the
// ObjectSet of the new object. A Start over a key that has an object
// (upsert, a stale write replaced) records the whole ObjectSet.
#[test]
fn a_start_of_a_new_key_records_an_object_started() {
    let m = jmaster();
    let mut c = Cursor::at_end(&m);
    let raw_one = |c: &mut Cursor| {
        let mut recs = c.take_raw();
        assert_eq!(recs.len(), 1, "{recs:?}");
        recs.pop().unwrap()
    };
    let w = m.put_start(C1, k("a"), 4096, &preserve()).unwrap();
    let rec = raw_one(&mut c);
    assert_eq!(
        rec,
        Record::ObjectStarted {
            key: rkey("a"),
            size: 4096,
            writer: C1,
            put_start: T0,
            seq: 1,
            write_token: w.token,
            hard_pin: false,
            group: None,
            pending: SoftPinIntent::Preserve,
            replicas: vec![StartedReplica {
                id: w.replicas[0].id,
                place: place(&m, &w.replicas[0]),
            }],
        }
    );
    let mut img = started("a", 4096, 1, w.token, T0);
    img.replicas = vec![replica(&m, &w.replicas[0], ReplicaRole::Write)];
    assert_eq!(rec.expand_start(), set(img, vec![]));

    // Two kinds, hard-pinned, grouped, a TTL pending; an upsert of a new
    // key (case A) and a batch put alike.
    let rich = WriteConfig {
        nof_ssd_replicas: 1,
        hard_pin: true,
        group: Some("g".into()),
        ..enable(60_000)
    };
    m.advance_time(3).unwrap();
    let w = m.upsert_start(C1, k("b"), 64, &rich).unwrap();
    let Record::ObjectStarted {
        key,
        put_start,
        hard_pin,
        group,
        pending,
        replicas,
        ..
    } = raw_one(&mut c)
    else {
        panic!("an upsert of a new key records an ObjectStarted");
    };
    assert_eq!(
        (key, put_start, hard_pin, group, pending),
        (
            rkey("b"),
            T0 + 3,
            true,
            Some("g".to_owned()),
            SoftPinIntent::Enable { ttl_ms: 60_000 }
        )
    );
    let mut want: Vec<StartedReplica> = w
        .replicas
        .iter()
        .map(|d| StartedReplica {
            id: d.id,
            place: place(&m, d),
        })
        .collect();
    want.sort_by_key(|r| r.id);
    assert_eq!((replicas.len(), replicas), (2, want));
    for r in m.batch_put_start(C1, &[k("c"), k("d")], &[32, 32], &preserve()) {
        r.unwrap();
    }
    let recs = c.take_raw();
    assert_eq!(recs.len(), 2);
    assert!(recs
        .iter()
        .all(|r| matches!(r, Record::ObjectStarted { .. })));

    // Over a key that has an object: the whole ObjectSet.
    m.put_end(C1, k("a"), ReplicaSelector::All, None).unwrap();
    c.take();
    m.upsert_start(C1, k("a"), 4096, &preserve()).unwrap();
    assert!(matches!(raw_one(&mut c), Record::ObjectSet { .. }));
    m.advance_time(30_001).unwrap();
    m.put_start(C1, k("c"), 32, &preserve()).unwrap();
    let Record::ObjectSet { discarded, .. } = raw_one(&mut c) else {
        panic!("a stale write replaced records an ObjectSet");
    };
    assert_eq!(discarded.len(), 1);
    inv(&m);
}

// §12.1, §4.3: an End that completes part of a write records only those
// replicas; the commit rule fires at the first (Disable commits no
// deadline) and the write stays in flight; the last End ends the write
// and the rule does not fire again.
#[test]
fn a_partial_end_records_its_replicas_and_the_commit_once() {
    let m = jmaster();
    let cfg = WriteConfig {
        nof_ssd_replicas: 1,
        ..WriteConfig::default().with_soft_pin(SoftPinRequest::DISABLE)
    };
    let w = m.put_start(C1, k("p"), 64, &cfg).unwrap();
    let mut c = Cursor::at_end(&m);
    let started = image_of(&Cursor::from_start(&m).take().pop().unwrap()).clone();
    let id_of = |ssd: bool| {
        started
            .replicas
            .iter()
            .find(|r| matches!(r.place, Placement::NofSsd { .. }) == ssd)
            .map(|r| r.id)
            .unwrap()
    };
    assert_eq!((started.replicas.len(), w.replicas.len()), (2, 2));
    let (mem, ssd) = (id_of(false), id_of(true));
    m.advance_time(3).unwrap();
    m.put_end(C1, k("p"), ReplicaSelector::Memory, None)
        .unwrap();
    assert_eq!(
        c.take(),
        [Record::ObjectEnded {
            key: rkey("p"),
            write_token: w.token,
            at: T0 + 3,
            completed: vec![mem],
            commit: Some(None),
            write_over: false,
        }]
    );
    m.advance_time(4).unwrap();
    m.put_end(C1, k("p"), ReplicaSelector::All, None).unwrap();
    assert_eq!(
        c.take(),
        [Record::ObjectEnded {
            key: rkey("p"),
            write_token: w.token,
            at: T0 + 7,
            completed: vec![ssd],
            commit: None,
            write_over: true,
        }]
    );
    inv(&m);
}

// §12.1: reads, rejected calls and calls that change nothing are not
// recorded.
#[test]
fn reads_rejections_and_no_ops_record_nothing() {
    let m = jmaster();
    put(&m, "a", 64, &preserve());
    let w = m.put_start(C1, k("b"), 64, &preserve()).unwrap();
    let mut c = Cursor::at_end(&m);
    m.get_replica_list(k("a")).unwrap();
    m.exist(k("a")).unwrap();
    m.batch_exist(&[k("a"), k("b"), k("zz")]);
    m.readable_count(k("a"));
    m.list_keys(DEFAULT_TENANT, "", None, 10).unwrap();
    m.metrics();
    m.snapshot().unwrap();
    c.nothing("reads");
    assert_eq!(
        code(m.put_start(C1, k("a"), 64, &preserve())),
        ErrorKind::ObjectAlreadyExists
    );
    assert_eq!(
        code(m.put_end(C2, k("b"), ReplicaSelector::All, None)),
        ErrorKind::IllegalClient
    );
    assert_eq!(code(m.remove(k("zz"), false)), ErrorKind::ObjectNotFound);
    assert_eq!(code(m.remove(k("b"), true)), ErrorKind::ReplicaIsNotReady);
    assert_eq!(
        code(m.copy_start(k("a"), &["nowhere"])),
        ErrorKind::SegmentNotFound
    );
    assert_eq!(code(m.copy_end(k("a"))), ErrorKind::ObjectNoReplicationTask);
    assert_eq!(
        code(m.put_start(C1, k("huge"), 4 * SEG, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    c.nothing("rejected calls");
    // A repeated End, an End completing nothing (only the lease moves), a
    // release of a group that is not retained.
    m.put_end(C1, k("a"), ReplicaSelector::All, None).unwrap();
    m.put_end(C1, k("b"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    m.release_groups(DEFAULT_TENANT, &["g"]).unwrap();
    m.run_cleanup_at(T0);
    m.sweep_stale_writes_at(T0);
    m.release_discarded_at(T0);
    assert!(m.run_eviction(0.0, 0.0).is_ok());
    c.nothing("calls that change nothing");
    inv(&m);
}

// §12.1: a partial revoke records what is left; the revoke that takes the
// last replica records the erasure (the buffers are freed, not discarded).
#[test]
fn revokes_record_what_is_left_then_the_erasure() {
    let m = jmaster();
    let two = WriteConfig {
        nof_ssd_replicas: 1,
        ..preserve()
    };
    let w = m.put_start(C1, k("a"), 128, &two).unwrap();
    let mut c = Cursor::at_end(&m);
    m.put_revoke(C1, k("a"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let nof = w
        .replicas
        .iter()
        .find(|d| d.kind == ReplicaKind::NofSsd)
        .unwrap();
    let mut img = started("a", 128, 1, w.token, T0);
    img.replicas = vec![replica(&m, nof, ReplicaRole::Write)];
    assert_eq!(c.take(), [set(img, vec![])]);
    m.put_revoke(C1, k("a"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(c.take(), [erased("a", vec![])]);
    inv(&m);
}

// §12.1: an Upsert that replaces the replicas records the new object and,
// as discarded, the old buffers with their release instant; a stale
// PutStart replacement likewise.
#[test]
fn replacing_writes_record_the_buffers_they_discard() {
    let m = jmaster();
    let w1 = m.put_start(C1, k("u"), 64, &on("mem0")).unwrap();
    m.put_end(C1, k("u"), ReplicaSelector::All, None).unwrap();
    let mut c = Cursor::at_end(&m);
    m.advance_time(7).unwrap();
    let w2 = m.upsert_start(C1, k("u"), 128, &on("mem1")).unwrap();
    let mut img = started("u", 128, 2, w2.token, T0 + 7);
    img.lease = T0;
    img.replicas = vec![replica(&m, &w2.replicas[0], ReplicaRole::Write)];
    let release = T0 + 7 + 600_000;
    assert_eq!(
        c.take(),
        [set(
            img,
            vec![discarded("mem0", address(&w1.replicas[0]), 64, release)]
        )]
    );

    // PutStart over a stale write (older than the discard timeout) with
    // nothing COMPLETE: a new object, the stale one's buffers discarded.
    let s1 = m.put_start(C1, k("s"), 32, &on("mem0")).unwrap();
    c.take();
    let now = m.advance_time(30_001).unwrap();
    let s2 = m.put_start(C1, k("s"), 32, &on("mem1")).unwrap();
    let mut img = started("s", 32, 4, s2.token, now);
    img.replicas = vec![replica(&m, &s2.replicas[0], ReplicaRole::Write)];
    assert_eq!(
        c.take(),
        [set(
            img,
            vec![discarded(
                "mem0",
                address(&s1.replicas[0]),
                32,
                now + 600_000
            )]
        )]
    );
    inv(&m);
}

// §12.1: copy, move and promotion record the task and its targets at each
// step; a move's source is discarded at its end.
#[test]
fn tasks_are_recorded_step_by_step() {
    let m = jmaster();
    let w = m.put_start(C1, k("a"), 256, &on("mem0")).unwrap();
    m.put_end(C1, k("a"), ReplicaSelector::All, None).unwrap();
    let mut c = Cursor::at_end(&m);
    let src = ReplicaImage {
        status: ReplicaStatus::Complete,
        ..replica(&m, &w.replicas[0], ReplicaRole::Write)
    };
    let mut base = started("a", 256, 1, w.token, T0);
    base.lease = T0;
    base.in_flight = None;

    let t = m.copy_start(k("a"), &["mem1"]).unwrap();
    let target = replica(&m, &t[0], ReplicaRole::TaskTarget);
    let mut img = base.clone();
    img.task = Some(TaskImage::Copy {
        source: src.id,
        targets: vec![target.id],
    });
    img.replicas = vec![src.clone(), target.clone()];
    assert_eq!(c.take(), [set(img, vec![])]);

    m.copy_end(k("a")).unwrap();
    let copied = ReplicaImage {
        status: ReplicaStatus::Complete,
        role: ReplicaRole::Write,
        ..target
    };
    let mut img = base.clone();
    img.replicas = vec![src.clone(), copied.clone()];
    assert_eq!(c.take(), [set(img, vec![])]);

    let now = m.advance_time(3).unwrap();
    let mv = m.move_start(k("a"), "mem1", "nof0").unwrap();
    let moved = replica(&m, &mv, ReplicaRole::TaskTarget);
    let mut img = base.clone();
    img.task = Some(TaskImage::Move {
        source: copied.id,
        target: moved.id,
    });
    img.replicas = vec![src.clone(), copied.clone(), moved.clone()];
    assert_eq!(c.take(), [set(img, vec![])]);
    m.move_end(k("a")).unwrap();
    let mut img = base.clone();
    img.replicas = vec![
        src,
        ReplicaImage {
            status: ReplicaStatus::Complete,
            role: ReplicaRole::Write,
            ..moved
        },
    ];
    let Placement::Memory { address, .. } = copied.place else {
        panic!("a memory copy")
    };
    assert_eq!(
        c.take(),
        [set(
            img,
            vec![discarded("mem1", address, 256, now + 600_000)]
        )]
    );

    // A LOCAL_DISK replica creates its object; a promotion stages a
    // memory target, a failed one frees it.
    let d = m.add_local_disk_replica(C2, k("d"), 512).unwrap();
    let recs = c.take();
    let created = image_of(&recs[0]).clone();
    assert_eq!(recs.len(), 1);
    assert_eq!(
        (
            created.writer,
            created.put_start,
            created.in_flight,
            &created.replicas
        ),
        (
            C2,
            now,
            None,
            &vec![ReplicaImage {
                id: d.id,
                status: ReplicaStatus::Complete,
                role: ReplicaRole::Write,
                place: Placement::LocalDisk { client: C2 },
            }]
        )
    );
    m.add_local_disk_replica(C2, k("d"), 512).unwrap();
    c.nothing("a repeated add_local_disk_replica");
    let p = m.promotion_start(k("d"), &[]).unwrap();
    let mut img = created.clone();
    img.task = Some(TaskImage::Promotion { target: p.id });
    img.replicas.push(replica(&m, &p, ReplicaRole::TaskTarget));
    assert_eq!(c.take(), [set(img, vec![])]);
    m.promotion_end(k("d"), false).unwrap();
    assert_eq!(c.take(), [set(created, vec![])]);
    inv(&m);
}

// §12.1: every kind of removal records the erasure, one record per object.
#[test]
fn removals_record_erasures() {
    let m = jmaster();
    for key in ["a", "b1", "b2", "c", "d"] {
        put(&m, key, 64, &preserve());
    }
    let mut c = Cursor::at_end(&m);
    m.remove(k("a"), false).unwrap();
    assert_eq!(c.take(), [erased("a", vec![])]);
    assert_eq!(m.remove_by_regex(None, "^b", false).unwrap(), 2);
    let mut recs = c.take();
    recs.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(recs, [erased("b1", vec![]), erased("b2", vec![])]);
    let out = m.batch_remove(&[k("c"), k("zz")], false);
    assert!(out[0].is_ok(), "{out:?}");
    assert_eq!(
        out[1].as_ref().unwrap_err().kind(),
        ErrorKind::ObjectNotFound,
        "{out:?}"
    );
    assert_eq!(c.take(), [erased("c", vec![])]);
    assert_eq!(m.remove_all(false), 1);
    assert_eq!(c.take(), [erased("d", vec![])]);
    inv(&m);
}

// §12.1: eviction records each evicted object (an erasure, or what is
// left) and each deadline it normalises (the object with no deadline).
#[test]
fn eviction_records_each_object_and_each_normalised_deadline() {
    let m = jmaster();
    put(&m, "pinned", 64, &enable(10));
    let two = WriteConfig {
        nof_ssd_replicas: 1,
        ..preserve()
    };
    let w = m.put_start(C1, k("both"), 64, &two).unwrap();
    m.put_end(C1, k("both"), ReplicaSelector::All, None)
        .unwrap();
    m.advance_time(100).unwrap();
    let mut c = Cursor::at_end(&m);
    let report = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((report.evicted, report.normalised), (2, 1));
    let recs = c.take();
    assert_eq!(recs.len(), 3, "{recs:?}");
    let normalised = recs
        .iter()
        .position(|r| matches!(r, Record::ObjectSet { image, .. } if image.key == rkey("pinned")))
        .expect("the normalised deadline");
    assert_eq!(image_of(&recs[normalised]).committed, None);
    let gone = recs
        .iter()
        .position(|r| r == &erased("pinned", vec![]))
        .expect("the evicted object");
    assert!(
        normalised < gone,
        "normalised during collection, then evicted"
    );
    let nof = w
        .replicas
        .iter()
        .find(|d| d.kind == ReplicaKind::NofSsd)
        .unwrap();
    let left = recs
        .iter()
        .find(|r| matches!(r, Record::ObjectSet { image, .. } if image.key == rkey("both")))
        .expect("what is left of both");
    assert_eq!(
        image_of(left).replicas,
        [ReplicaImage {
            status: ReplicaStatus::Complete,
            ..replica(&m, nof, ReplicaRole::Write)
        }]
    );
    inv(&m);
}

// §12.1: cleanup records each deadline it expires.
#[test]
fn cleanup_records_each_expiry() {
    let m = jmaster();
    put(&m, "a", 64, &enable(1_000));
    let recs = Cursor::from_start(&m).take();
    let before = after_end(
        image_of(&recs[recs.len() - 2]).clone(),
        &recs[recs.len() - 1],
    );
    let mut c = Cursor::at_end(&m);
    assert_eq!(m.run_cleanup_at(T0 + 999).expired, 0);
    c.nothing("a cleanup with nothing due");
    assert_eq!(m.run_cleanup_at(T0 + 1_000).expired, 1);
    let img = ObjectImage {
        committed: None,
        ..before
    };
    assert_eq!(c.take(), [set(img, vec![])]);
    inv(&m);
}

// §12.1: the sweep records the swept write (its buffers discarded, the
// instant the sweep chose), the release pass the buffers it frees.
#[test]
fn sweep_and_discard_release_are_recorded() {
    let m = jmaster();
    let w = m.put_start(C1, k("a"), 64, &on("mem0")).unwrap();
    let mut c = Cursor::at_end(&m);
    assert_eq!(m.sweep_stale_writes_at(T0 + 600_001), 1);
    let addr = address(&w.replicas[0]);
    assert_eq!(
        c.take(),
        [erased("a", vec![discarded("mem0", addr, 64, T0 + 600_000)])]
    );
    assert_eq!(m.release_discarded_at(T0 + 599_999), 0);
    c.nothing("a release with nothing due");
    assert_eq!(m.release_discarded_at(T0 + 600_000), 1);
    assert_eq!(
        c.take(),
        [Record::DiscardReleased {
            at: T0 + 600_000,
            buffers: vec![BufferRef {
                segment: "mem0".into(),
                address: addr,
                len: 64,
            }],
        }]
    );
    inv(&m);
}

// §12.1: an unmount records every object it took a replica from, then the
// unmount itself, last.
#[test]
fn unmount_records_its_victims_then_itself() {
    let m = jmaster();
    let two = WriteConfig {
        nof_ssd_replicas: 1,
        ..on("mem0")
    };
    let w = m.put_start(C1, k("kept"), 64, &two).unwrap();
    m.put_end(C1, k("kept"), ReplicaSelector::All, None)
        .unwrap();
    put(&m, "gone", 64, &on("mem0"));
    let mut c = Cursor::at_end(&m);
    let report = m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!((report.replicas_dropped, report.objects_erased), (2, 1));
    let recs = c.take();
    assert_eq!(recs.len(), 3, "{recs:?}");
    assert_eq!(
        recs[2],
        Record::SegmentUnmounted {
            owner: C1,
            name: "mem0".into()
        }
    );
    assert!(recs[..2].contains(&erased("gone", vec![])));
    let nof = w
        .replicas
        .iter()
        .find(|d| d.kind == ReplicaKind::NofSsd)
        .unwrap();
    let kept = recs[..2]
        .iter()
        .find(|r| matches!(r, Record::ObjectSet { .. }))
        .unwrap();
    assert_eq!(
        image_of(kept).replicas,
        [ReplicaImage {
            status: ReplicaStatus::Complete,
            ..replica(&m, nof, ReplicaRole::Write)
        }]
    );
    inv(&m);
}

// §12.1: group retention changes are recorded with the deadline chosen.
#[test]
fn retention_changes_are_recorded() {
    let m = jmaster();
    let mut c = Cursor::at_end(&m);
    m.retain_groups(DEFAULT_TENANT, &["g", "h"], 5_000).unwrap();
    assert_eq!(
        c.take(),
        [
            Record::GroupRetained {
                tenant: DEFAULT_TENANT.into(),
                group: "g".into(),
                deadline: T0 + 5_000,
            },
            Record::GroupRetained {
                tenant: DEFAULT_TENANT.into(),
                group: "h".into(),
                deadline: T0 + 5_000,
            }
        ]
    );
    m.retain_groups(DEFAULT_TENANT, &["g"], 5_000).unwrap();
    c.nothing("a retain that keeps the deadline");
    m.release_groups(DEFAULT_TENANT, &["h"]).unwrap();
    assert_eq!(
        c.take(),
        [Record::GroupReleased {
            tenant: DEFAULT_TENANT.into(),
            group: "h".into(),
        }]
    );
    m.run_cleanup_at(T0 + 5_000);
    assert_eq!(
        c.take(),
        [Record::RetentionExpired {
            tenant: DEFAULT_TENANT.into(),
            group: "g".into(),
            deadline: T0 + 5_000,
        }]
    );
}

// §12.1 / §6: a snapshot carries the last sequence it includes (format
// 4); without a journal it carries none and keeps its older format.
#[test]
fn snapshots_carry_the_journal_sequence() {
    let m = jmaster();
    put(&m, "a", 64, &preserve());
    let img = decode(&m.snapshot().unwrap()).unwrap();
    assert_eq!(img.journal_seq, m.journal_stats().last_seq);
    assert_eq!(img.journal_seq, 5, "three mounts and a put pair");
    assert_eq!(version_of(&img), 4);

    let off = master();
    put(&off, "a", 64, &preserve());
    let img = decode(&off.snapshot().unwrap()).unwrap();
    assert_eq!(img.journal_seq, 0);
    assert!(version_of(&img) <= 3);
    assert_eq!(off.journal_stats().records_appended, 0);
}

// §12.1: a restore records a Reset holding the state it installed, as a
// snapshot whose journal sequence is the Reset's own.
#[test]
fn a_restore_records_the_state_it_installed() {
    let m = jmaster();
    put(&m, "a", 64, &enable(60_000));
    m.retain_groups(DEFAULT_TENANT, &["g"], 5_000).unwrap();
    let saved = m.snapshot().unwrap();
    put(&m, "b", 64, &preserve());
    let mut c = Cursor::at_end(&m);
    m.restore(&saved).unwrap();
    let recs = c.take();
    let [Record::Reset { image }] = &recs[..] else {
        panic!("one Reset: {recs:?}");
    };
    let installed = decode(image).unwrap();
    assert_eq!(installed.journal_seq, m.journal_stats().last_seq);
    let now = decode(&m.snapshot().unwrap()).unwrap();
    assert_eq!(
        (
            &installed.objects,
            &installed.retention,
            &installed.segments
        ),
        (&now.objects, &now.retention, &now.segments)
    );
    assert_eq!(installed.journal_seq, now.journal_seq);
    assert!(now.objects.iter().all(|o| o.key != "b"));
    inv(&m);
}

// §12.1: with the journal off nothing is recorded, whatever runs.
#[test]
fn with_the_journal_off_nothing_is_recorded() {
    let m = master();
    put(&m, "a", 64, &enable(10));
    m.put_start(C1, k("b"), 64, &preserve()).unwrap();
    m.retain_groups(DEFAULT_TENANT, &["g"], 5).unwrap();
    m.run_cleanup_at(T0 + 10);
    m.sweep_stale_writes_at(T0 + 600_001);
    m.release_discarded_at(T0 + 600_001);
    m.remove_all(true);
    m.unmount_segment(C1, "mem0").unwrap();
    assert_eq!(m.journal_stats(), JournalStats::default());
    inv(&m);
}

// §12.1 append before free: a buffer freed under one shard's lock and
// placed again under another's is always freed earlier in the journal.
// Two threads churn keys of their own on a segment with room for a few
// objects; replaying the journal, every placement must find its buffer
// free.
#[test]
fn a_reused_buffer_is_freed_earlier_in_the_journal() {
    const ROUNDS: usize = 300;
    const SIZE: u64 = 4096;
    let m = Arc::new(master_with(journal_config(), 1, 0, 3 * SIZE));
    let start = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2)
        .map(|t| {
            let (m, start) = (m.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for i in 0..ROUNDS {
                    let key = format!("t{t}-{i}");
                    // Room for three, and each thread holds at most one.
                    m.put_start(C1, k(&key), SIZE, &preserve()).unwrap();
                    m.put_end(C1, k(&key), ReplicaSelector::All, None).unwrap();
                    m.remove(k(&key), true).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    inv(&m);
    // Replay: (segment, address) -> the key holding it.
    let mut held: HashMap<(String, u64), RecordKey> = HashMap::new();
    let mut by_key: HashMap<RecordKey, Vec<(String, u64)>> = HashMap::new();
    let mut placements = 0;
    let batch = decode_batch(&m.journal_read_to_vec(1).unwrap()).unwrap();
    for (i, r) in batch.records.into_iter().enumerate() {
        let seq = batch.first_seq + i as u64;
        match &r.expand_start() {
            Record::ObjectSet { image, .. } => {
                let bufs: Vec<(String, u64)> = image
                    .replicas
                    .iter()
                    .filter_map(|r| match &r.place {
                        Placement::Memory { segment, address } => Some((segment.clone(), *address)),
                        _ => None,
                    })
                    .collect();
                for b in &bufs {
                    match held.get(b) {
                        Some(owner) if owner == &image.key => {}
                        Some(owner) => panic!(
                            "record {seq} places {} on {b:?}, still held by {}",
                            image.key.key, owner.key
                        ),
                        None => {
                            placements += 1;
                            held.insert(b.clone(), image.key.clone());
                        }
                    }
                }
                by_key.insert(image.key.clone(), bufs);
            }
            Record::ObjectErased { key, discarded } => {
                assert!(discarded.is_empty());
                for b in by_key.remove(key).unwrap_or_default() {
                    held.remove(&b);
                }
            }
            // An End places and frees nothing.
            Record::SegmentMounted { .. } | Record::ObjectEnded { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(placements, 2 * ROUNDS, "one placement per put");
    assert!(held.is_empty(), "every object was removed: {held:?}");
}

/// At exact points (feature `test-hooks`; `make test` runs these in the
/// hooks build).
#[cfg(feature = "test-hooks")]
mod at_exact_points {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    // §12.1 append before free: shard A's Remove frees the segment's only
    // slot; a PutStart on shard B runs between A's change and A's record.
    // The buffer is not free yet, so B cannot take it there; B takes it
    // afterwards and its placement comes after A's erasure.
    #[test]
    fn a_buffer_is_not_reusable_before_its_freeing_record() {
        const SIZE: u64 = 4096;
        let m = master_with(journal_config(), 1, 0, SIZE);
        let a = "a";
        let shard_a = m.debug_shard_of(k(a));
        let b = (0..)
            .map(|i| format!("b{i}"))
            .find(|b| m.debug_shard_of(k(b)) != shard_a)
            .unwrap();
        let w = m.put_start(C1, k(a), SIZE, &preserve()).unwrap();
        m.put_end(C1, k(a), ReplicaSelector::All, None).unwrap();
        let armed = Arc::new(AtomicBool::new(false));
        let inside: Arc<Mutex<Option<Result<StartedWrite>>>> = Arc::new(Mutex::new(None));
        {
            let (armed, inside, b) = (armed.clone(), inside.clone(), b.clone());
            m.debug_set_race_hook(Some(Arc::new(move |core, point| {
                if point == RacePoint::BeforeRecord && armed.swap(false, Ordering::SeqCst) {
                    let got = core.put_start(C1, Key::new(&b), SIZE, &WriteConfig::default());
                    *inside.lock().unwrap() = Some(got);
                }
            })));
        }
        let mut c = Cursor::at_end(&m);
        armed.store(true, Ordering::SeqCst);
        m.remove(k(a), true).unwrap();
        let inside = inside.lock().unwrap().take().expect("the hook ran");
        assert_eq!(
            inside.map(|_| ()).unwrap_err().kind(),
            ErrorKind::NoAvailableHandle,
            "the freed buffer was reusable before its record"
        );
        let again = m.put_start(C1, k(&b), SIZE, &preserve()).unwrap();
        assert_eq!(address(&again.replicas[0]), address(&w.replicas[0]));
        let recs = c.take();
        assert_eq!(recs.len(), 2, "{recs:?}");
        assert_eq!(recs[0], erased(a, vec![]));
        assert_eq!(image_of(&recs[1]).key, rkey(&b));
        m.debug_set_race_hook(None);
        inv(&m);
    }

    /// Runs `between` on `m` at the `nth` record after arming (from inside
    /// the recording operation, its shard lock held), once.
    fn at_nth_record(
        m: &Master,
        nth: usize,
        between: impl Fn(&MasterCore) -> Result<()> + Send + Sync + 'static,
    ) -> Arc<Mutex<Option<Result<()>>>> {
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let out: Arc<Mutex<Option<Result<()>>>> = Arc::new(Mutex::new(None));
        let o = out.clone();
        m.debug_set_race_hook(Some(Arc::new(move |core, point| {
            if point == RacePoint::BeforeRecord && seen.fetch_add(1, Ordering::SeqCst) + 1 == nth {
                *o.lock().unwrap() = Some(between(core));
            }
        })));
        out
    }

    /// The segment a buffer replica is on.
    fn segment_of(d: &ReplicaDescriptor) -> SegmentId {
        match d.location {
            Location::Buffer { segment, .. } => segment,
            Location::LocalDisk { .. } => panic!("not a buffer"),
        }
    }

    /// The name of the (mounted) segment a buffer replica is on.
    fn segment_named(m: &Master, d: &ReplicaDescriptor) -> String {
        m.segment_name(segment_of(d)).expect("mounted")
    }

    /// A standby applying the whole journal of `p` equals it, leases apart.
    fn standby_follows(p: &Master) {
        let s = Master::new(MasterConfig {
            standby: true,
            ..config()
        })
        .unwrap();
        let r = s
            .apply_journal(&p.journal_read_to_vec(1).unwrap())
            .expect("the standby applies every record");
        assert_eq!(r.last_seq, p.journal_stats().last_seq);
        let plain = |m: &Master| {
            let mut i = decode(&m.snapshot().unwrap()).unwrap();
            i.created_at = 0;
            i.wall_at_capture = None;
            i.objects.iter_mut().for_each(|o| o.lease = 0);
            i
        };
        assert_eq!(plain(&s), plain(p));
    }

    /// Two keys in different shards, `low` first in the shards' order.
    fn keys_in_two_shards(m: &Master) -> (String, String) {
        let mut keys: Vec<String> = (0..64).map(|i| format!("key{i}")).collect();
        keys.sort_by_key(|n| m.debug_shard_of(k(n)));
        let low = keys[0].clone();
        let high = keys
            .iter()
            .rev()
            .find(|n| m.debug_shard_of(k(n)) > m.debug_shard_of(k(&low)))
            .unwrap()
            .clone();
        (low, high)
    }

    // §12.1 (review finding): an unmount takes its segments out of the
    // table first, then drops their replicas shard by shard; meanwhile a
    // record of an object leaves out its replicas on them, so a standby
    // drops them. An End that then completes one of them recorded an
    // ObjectEnded naming it, which the standby refused. It records the
    // object whole instead.
    #[test]
    fn an_end_between_an_unmounts_passes_keeps_the_standby_in_step() {
        let m = master_with(journal_config(), 2, 0, SEG);
        let (x, z) = keys_in_two_shards(&m);
        let two = WriteConfig {
            memory_replicas: 2,
            ..preserve()
        };
        let w = m.put_start(C1, k(&x), 64, &two).unwrap();
        assert_eq!(w.replicas.len(), 2);
        put(&m, &z, 64, &on("mem0"));
        let on_mem1 = *w
            .replicas
            .iter()
            .find(|d| segment_named(&m, d) == "mem1")
            .expect("a replica of x on mem1");
        let segments: Vec<SegmentId> = w.replicas.iter().map(segment_of).collect();
        // unmount_client takes mem0 and mem1 out; mem0's pass records x
        // (leaving out its mem1 replica), then z, where the End runs.
        let token = w.token;
        let xk = x.clone();
        let got = at_nth_record(&m, 2, move |core| {
            let x = Key::new(&xk);
            // The point the test is about, whatever the records' order:
            // both of x's segments are out of the table, the unmount's
            // mem0 pass has dropped x's replica there, its mem1 pass has
            // not reached x, and the End completes x's replica on mem1.
            for &seg in &segments {
                assert_eq!(core.segment_name(seg), None, "segment {seg} still mounted");
            }
            assert_eq!(core.readable_count(x), 0, "x was readable before its End");
            core.put_end(C1, x, ReplicaSelector::All, Some(token))?;
            let completed = core.get_replica_list(x)?;
            assert_eq!(
                completed.iter().map(|d| d.id).collect::<Vec<_>>(),
                [on_mem1.id],
                "the End did not complete x's replica on mem1 alone: {completed:?}"
            );
            assert_eq!(segment_of(&completed[0]), segment_of(&on_mem1));
            Ok(())
        });
        m.unmount_client(C1).unwrap();
        m.debug_set_race_hook(None);
        got.lock().unwrap().take().expect("the hook ran").unwrap();
        standby_follows(&m);
        inv(&m);
    }

    // The same with one unmount: x has a MEMORY replica on the segment and
    // a NOF_SSD one elsewhere; between the passes its NOF_SSD replica is
    // revoked (an object record, leaving out the MEMORY one) and then its
    // MEMORY replica ended.
    #[test]
    fn a_revoke_and_end_between_an_unmounts_passes_keep_the_standby_in_step() {
        let m = master_with(journal_config(), 1, 1, SEG);
        let (z, x) = keys_in_two_shards(&m);
        put(&m, &z, 64, &preserve());
        let both = WriteConfig {
            memory_replicas: 1,
            nof_ssd_replicas: 1,
            ..preserve()
        };
        let w = m.put_start(C1, k(&x), 64, &both).unwrap();
        assert_eq!(w.replicas.len(), 2);
        let of_kind = |kind| *w.replicas.iter().find(|d| d.kind == kind).unwrap();
        let (memory, nof) = (of_kind(ReplicaKind::Memory), of_kind(ReplicaKind::NofSsd));
        assert_eq!(segment_named(&m, &memory), "mem0");
        let token = w.token;
        let xk = x.clone();
        // mem0's pass records z first (the lower shard): both calls run there.
        let got = at_nth_record(&m, 1, move |core| {
            let x = Key::new(&xk);
            // The point the test is about, whatever the records' order:
            // mem0 is out of the table, nof0 is not, and the unmount's pass
            // has not reached x: after the revoke x still holds its MEMORY
            // replica on mem0, and the End completes it.
            assert_eq!(core.segment_name(segment_of(&memory)), None, "mem0 mounted");
            assert_eq!(core.segment_name(segment_of(&nof)).as_deref(), Some("nof0"));
            assert_eq!(core.readable_count(x), 0, "x was readable before its End");
            core.put_revoke(C1, x, ReplicaSelector::NofSsd, Some(token))?;
            core.put_end(C1, x, ReplicaSelector::Memory, Some(token))?;
            let completed = core.get_replica_list(x)?;
            assert_eq!(
                completed.iter().map(|d| d.id).collect::<Vec<_>>(),
                [memory.id],
                "the End did not complete x's MEMORY replica on mem0: {completed:?}"
            );
            assert_eq!(segment_of(&completed[0]), segment_of(&memory));
            Ok(())
        });
        m.unmount_segment(C1, "mem0").unwrap();
        m.debug_set_race_hook(None);
        got.lock().unwrap().take().expect("the hook ran").unwrap();
        standby_follows(&m);
        inv(&m);
    }

    /// A standby that applied the records of `p` up to `last` (the whole
    /// journal read, cut there), promoted: its invariants hold.
    fn promoted_at(p: &Master, last: u64) -> Master {
        let all = decode_batch(&p.journal_read_to_vec(1).unwrap()).unwrap();
        assert_eq!(all.first_seq, 1);
        let cut = usize::try_from(last).unwrap();
        let bytes = encode_batch(1, &all.records[..cut]).unwrap();
        let s = Master::new(MasterConfig {
            standby: true,
            ..config()
        })
        .unwrap();
        s.apply_journal(&bytes)
            .expect("the standby applies the prefix");
        s.promote().unwrap();
        s.check_invariants()
            .unwrap_or_else(|e| panic!("promoted after record {last}: {e}"));
        s
    }

    // §12.1 (session 21's suggestion): a record made while an unmount runs
    // leaves out the replicas on the segments it took out of the table. An
    // object whose write in flight had its last PROCESSING replica there
    // was recorded with the write still in flight and none of its
    // replicas, so a standby promoted before the unmount's record of the
    // object held a write without a replica (its invariants failed, and a
    // PutEnd could end a write with nothing to complete). The record now
    // leaves that write out, as a snapshot does.
    #[test]
    fn a_record_between_an_unmounts_passes_leaves_out_a_write_with_no_replica_left() {
        let m = master_with(journal_config(), 2, 1, SEG);
        let (z, x) = keys_in_two_shards(&m);
        let nof_only = WriteConfig {
            memory_replicas: 0,
            nof_ssd_replicas: 1,
            ..preserve()
        };
        put(&m, &z, 64, &nof_only);
        let both = WriteConfig {
            memory_replicas: 1,
            nof_ssd_replicas: 1,
            ..preserve()
        };
        let w = m.put_start(C1, k(&x), 64, &both).unwrap();
        // The MEMORY replica completes; the write stays in flight with its
        // NOF_SSD one, on the segment the unmount takes.
        m.put_end(C1, k(&x), ReplicaSelector::Memory, Some(w.token))
            .unwrap();
        let memory = *w
            .replicas
            .iter()
            .find(|d| d.kind == ReplicaKind::Memory)
            .unwrap();
        let other = if segment_named(&m, &memory) == "mem0" {
            "mem1"
        } else {
            "mem0"
        };
        let nof = segment_of(
            w.replicas
                .iter()
                .find(|d| d.kind == ReplicaKind::NofSsd)
                .unwrap(),
        );
        let xk = x.clone();
        let last = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = last.clone();
        // nof0's pass records z first (the lower shard): the copy runs there.
        let got = at_nth_record(&m, 1, move |core| {
            let x = Key::new(&xk);
            // The point the test is about: nof0 is out of the table, the
            // pass has not reached x, whose write is still in flight.
            assert_eq!(core.segment_name(nof), None, "nof0 still mounted");
            assert_eq!(core.readable_count(x), 1);
            core.copy_start(x, &[other])?;
            seen.store(core.journal_stats().last_seq, Ordering::SeqCst);
            Ok(())
        });
        m.unmount_segment(C1, "nof0").unwrap();
        m.debug_set_race_hook(None);
        got.lock().unwrap().take().expect("the hook ran").unwrap();
        let last = last.load(Ordering::SeqCst);
        let all = decode_batch(&m.journal_read_to_vec(1).unwrap()).unwrap();
        let copy = image_of(&all.records[usize::try_from(last).unwrap() - 1]);
        assert_eq!(copy.key, rkey(&x));
        assert!(copy.task.is_some(), "not the copy's record: {copy:?}");
        assert_eq!(
            copy.in_flight, None,
            "the copy's record kept a write none of whose replicas it holds"
        );
        let s = promoted_at(&m, last);
        assert_eq!(s.get_replica_list(k(&x)).unwrap().len(), 1);
        standby_follows(&m);
        inv(&m);
    }

    // The same for a Start: an unmount took the segment of the Start's
    // only replica out of the table between its placement and its record,
    // which then holds the object with no replica and no write (not an
    // ObjectStarted of a write without a replica); the unmount's pass then
    // erases it.
    #[test]
    fn a_start_whose_segment_left_the_table_records_no_write() {
        let m = Master::new(journal_config()).unwrap();
        let mem0 = m
            .mount_segment(C1, &spec("mem0", 0, SEG, Pool::Memory))
            .unwrap();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let go = Mutex::new(Some(go));
        m.debug_set_race_hook(Some(Arc::new(move |core, point| {
            if point != RacePoint::BeforeRecord {
                return;
            }
            if let Some(go) = go.lock().unwrap().take() {
                // The Start holds its shard lock: the unmount takes the
                // segment out of the table, then waits for that lock.
                go.send(()).unwrap();
                while core.segment_name(mem0).is_some() {
                    std::thread::yield_now();
                }
            }
        })));
        let mut c = Cursor::at_end(&m);
        let report = std::thread::scope(|scope| {
            let primary = &m;
            let unmount = scope.spawn(move || {
                wait.recv().unwrap();
                primary.unmount_segment(C1, "mem0")
            });
            m.put_start(C1, k("x"), 64, &preserve()).unwrap();
            unmount.join().unwrap().unwrap()
        });
        m.debug_set_race_hook(None);
        assert_eq!(report.objects_erased, 1);
        let recs = c.take_raw();
        assert_eq!(recs.len(), 4, "{recs:?}");
        // After the counters (below), the Start: the object as it stood, no
        // replica, no write.
        let Record::ObjectSet { image, discarded } = &recs[1] else {
            panic!("the Start recorded {:?}", recs[1]);
        };
        assert_eq!(image.key, rkey("x"));
        assert!(
            image.replicas.is_empty() && discarded.is_empty(),
            "{image:?}"
        );
        assert_eq!(image.in_flight, None, "a write with no replica recorded");
        // First the counters: the replica id the Start took is in no record.
        assert!(
            matches!(
                recs[0],
                Record::Counters {
                    next_replica_id: 2,
                    ..
                }
            ),
            "{recs:?}"
        );
        assert_eq!(recs[2], erased("x", vec![]));
        assert!(
            matches!(recs[3], Record::SegmentUnmounted { .. }),
            "{recs:?}"
        );
        // Promoted after the Start's records, a standby erases the bare
        // object, as the unmount's pass did.
        let s = promoted_at(&m, c.next - 3);
        assert!(!s.exist(k("x")).unwrap());
        let ids = |m: &Master| decode(&m.snapshot().unwrap()).unwrap().next_replica_id;
        assert_eq!(ids(&s), ids(&m), "the standby's replica-id counter");
        standby_follows(&m);
        inv(&m);
    }

    // Review finding (session 22): an unmount took nof0 out of the table
    // between a Start's placement and its record, so the record held only
    // x's MEMORY replica; an End of that replica before the unmount's pass
    // reached x left the write going on the primary (its NOF_SSD replica
    // still PROCESSING there) and, on a standby, going with no replica of
    // it. The standby now ends it there, as a snapshot of the primary then
    // holds it. And the NOF_SSD replica's id, in no record, reaches the
    // standby through the counters recorded before the Start.
    #[test]
    fn an_end_after_a_start_that_lost_a_replica_to_an_unmount_ends_the_write_on_a_standby() {
        let m = master_with(journal_config(), 1, 1, SEG);
        let (z, x) = keys_in_two_shards(&m);
        let nof_only = WriteConfig {
            memory_replicas: 0,
            nof_ssd_replicas: 1,
            ..preserve()
        };
        put(&m, &z, 64, &nof_only);
        let nof0 = segment_of(&m.get_replica_list(k(&z)).unwrap()[0]);
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let go = Mutex::new(Some(go));
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ended_at = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let got: Arc<Mutex<Option<Result<()>>>> = Arc::new(Mutex::new(None));
        {
            let (xk, ended_at, got) = (x.clone(), ended_at.clone(), got.clone());
            m.debug_set_race_hook(Some(Arc::new(move |core, point| {
                if point != RacePoint::BeforeRecord {
                    return;
                }
                match seen.fetch_add(1, Ordering::SeqCst) {
                    // The Start's record, its shard lock held: nof0 leaves
                    // the table before it is written.
                    0 => {
                        go.lock().unwrap().take().unwrap().send(()).unwrap();
                        while core.segment_name(nof0).is_some() {
                            std::thread::yield_now();
                        }
                    }
                    // The unmount's pass records z (the lower shard) first:
                    // x's MEMORY replica ends before the pass reaches x.
                    1 => {
                        let x = Key::new(&xk);
                        let r = core.put_end(C1, x, ReplicaSelector::Memory, None);
                        ended_at.store(core.journal_stats().last_seq, Ordering::SeqCst);
                        *got.lock().unwrap() = Some(r);
                    }
                    _ => {}
                }
            })));
        }
        let both = WriteConfig {
            memory_replicas: 1,
            nof_ssd_replicas: 1,
            ..preserve()
        };
        std::thread::scope(|scope| {
            let primary = &m;
            let unmount = scope.spawn(move || {
                wait.recv().unwrap();
                primary.unmount_segment(C1, "nof0")
            });
            let w = m.put_start(C1, k(&x), 64, &both).unwrap();
            assert_eq!(w.replicas.len(), 2);
            unmount.join().unwrap().unwrap();
        });
        m.debug_set_race_hook(None);
        got.lock().unwrap().take().expect("the End ran").unwrap();
        let ended_at = ended_at.load(Ordering::SeqCst);
        let all = decode_batch(&m.journal_read_to_vec(1).unwrap()).unwrap();
        let cut = usize::try_from(ended_at).unwrap();
        assert!(
            matches!(
                &all.records[cut - 1],
                Record::ObjectEnded {
                    write_over: false,
                    ..
                }
            ),
            "{:?}",
            &all.records[cut - 1]
        );
        let s = promoted_at(&m, ended_at);
        assert_eq!(s.readable_count(k(&x)), 1);
        standby_follows(&m);
        inv(&m);
    }
}

// A PutRevoke whose selector names none of the write's replicas changes
// nothing and records nothing (§12.1; review finding: it recorded the
// unchanged object).
#[test]
fn a_revoke_that_revokes_nothing_records_nothing() {
    let m = jmaster();
    let w = m.put_start(C1, k("a"), 64, &on("mem0")).unwrap();
    let before = m.journal_stats().last_seq;
    let dump = m.debug_dump();
    m.put_revoke(C1, k("a"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    assert_eq!(
        m.journal_stats().last_seq,
        before,
        "recorded a revoke of nothing"
    );
    assert_eq!(
        m.debug_dump(),
        dump,
        "a revoke of nothing changed the master"
    );
    m.put_end(C1, k("a"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(m.journal_stats().last_seq, before + 1);
}
