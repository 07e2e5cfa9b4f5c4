//! docs/CONTRACT.md §3.1 discarded replicas and §1 stale writes: discarded buffers
//! stay allocated (and counted) until `now + put_start_release_timeout`, their
//! offsets are not handed out before; the stale-write sweep visits only
//! writes in flight, sweeps those with `put_start + release < now`, reports
//! how many, and its buffers are released at `put_start + release`.
mod common;
use common::*;
use mooncake_meta_core::*;

const SEG: u64 = 4096;
const RELEASE: u64 = 600_000;

fn on(seg: &str) -> WriteConfig {
    WriteConfig {
        preferred_segments: vec![seg.into()],
        ..WriteConfig::default()
    }
}

#[test]
fn discarded_offsets_are_not_handed_out_before_release() {
    // §3.1: buffers of case-C-old replicas stay allocated until now + put_start_release_timeout
    let m = master_with(config(), 2, 0, SEG);
    put(&m, "k", SEG, &on("mem0"));
    m.advance_time(5).unwrap();
    upsert(&m, "k", SEG / 2, &on("mem1"));
    let mt = m.metrics();
    assert_eq!(mt.discarded_staging_bytes, SEG);
    assert_eq!(
        mt.memory_allocated_bytes,
        SEG + SEG / 2,
        "discarded bytes count as allocated"
    );
    inv(&m);
    // mem0 is still taken by the discarded buffer; mem1 has only half
    assert_eq!(
        code(m.put_start(C1, k("x"), SEG, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    let release_at = T0 + 5 + RELEASE;
    assert_eq!(m.release_discarded_at(release_at - 1), 0);
    assert_eq!(
        code(m.put_start(C1, k("x"), SEG, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    assert_eq!(m.release_discarded_at(release_at), 1);
    let mt = m.metrics();
    assert_eq!(
        (mt.discarded_staging_bytes, mt.memory_allocated_bytes),
        (0, SEG / 2)
    );
    let w = m.put_start(C1, k("x"), SEG, &preserve()).unwrap();
    assert_eq!(
        m.segment_name(match w.replicas[0].location {
            Location::Buffer { segment, .. } => segment,
            _ => unreachable!(),
        })
        .as_deref(),
        Some("mem0")
    );
    inv(&m);
}

#[test]
fn every_discard_source_is_held_until_its_release_instant() {
    // §3.1: preempted, replaced (stale PutStart) and case-C-old buffers all go to the discarded list
    let m = master_with(config(), 1, 0, 1 << 20);
    // preempted (case A by preemption)
    m.put_start(C1, k("p"), 100, &preserve()).unwrap();
    m.upsert_start(C1, k("p"), 100, &preserve()).unwrap();
    // replaced stale write
    m.put_start(C1, k("r"), 200, &preserve()).unwrap();
    m.advance_time(30_001).unwrap();
    m.put_start(C2, k("r"), 200, &preserve()).unwrap();
    // case C
    put(&m, "c", 400, &preserve());
    m.upsert_start(C1, k("c"), 50, &preserve()).unwrap();
    let mt = m.metrics();
    assert_eq!(mt.discarded_staging_bytes, 700);
    assert_eq!(mt.memory_allocated_bytes, 700 + 100 + 200 + 50);
    inv(&m);
    // the first went at T0, the others at T0 + 30 001
    assert_eq!(m.release_discarded_at(T0 + RELEASE), 1);
    assert_eq!(m.metrics().discarded_staging_bytes, 600);
    assert_eq!(m.release_discarded_at(T0 + 30_001 + RELEASE), 2);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    assert_eq!(m.metrics().memory_allocated_bytes, 350);
    inv(&m);
}

#[test]
fn maintenance_tick_releases_due_discarded_buffers() {
    // §3.1: the maintenance work frees discarded buffers once their instant has come
    let m = master();
    put(&m, "k", 64, &preserve());
    upsert(&m, "k", 32, &preserve());
    m.run_maintenance_tick();
    assert_eq!(m.metrics().discarded_staging_bytes, 64);
    m.advance_time(RELEASE).unwrap();
    m.run_maintenance_tick();
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    assert_eq!(m.metrics().memory_allocated_bytes, 32);
    inv(&m);
}

#[test]
fn stale_write_sweep_takes_only_stale_writes_in_flight() {
    // §1: stale = put_start + put_start_release_timeout < now; COMPLETE objects are never swept
    let m = master();
    for i in 0..50 {
        put(&m, &format!("done{i}"), 64, &preserve());
    }
    m.put_start(C1, k("old"), 64, &preserve()).unwrap();
    m.advance_time(1).unwrap();
    m.put_start(C1, k("newer"), 64, &preserve()).unwrap();
    // boundary: put_start + release is not yet stale
    assert_eq!(m.sweep_stale_writes_at(T0 + RELEASE), 0);
    assert_eq!(m.sweep_stale_writes_at(T0 + RELEASE + 1), 1);
    assert_eq!(m.key_count(), 51);
    assert_eq!(
        code(m.get_replica_list(k("old"))),
        ErrorKind::ObjectNotFound
    );
    assert_eq!(
        m.sweep_stale_writes_at(T0 + RELEASE + 1),
        0,
        "already swept"
    );
    assert_eq!(m.sweep_stale_writes_at(T0 + RELEASE + 2), 1);
    assert_eq!(m.key_count(), 50);
    assert_eq!(m.metrics().swept_writes, 2);
    inv(&m);
}

#[test]
fn stale_write_sweep_keeps_complete_replicas_and_releases_at_put_start_plus_release() {
    // §3.1: swept buffers are discarded until put_start + release (already due when swept)
    let m = master();
    let w = m
        .put_start(
            C1,
            k("k"),
            64,
            &WriteConfig {
                nof_ssd_replicas: 1,
                ..WriteConfig::default()
            },
        )
        .unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    let at = T0 + RELEASE + 1;
    assert_eq!(m.sweep_stale_writes_at(at), 1);
    let r = m.get_replica_list(k("k")).unwrap();
    assert_eq!((r.len(), r[0].kind), (1, ReplicaKind::Memory));
    assert_eq!(m.metrics().discarded_staging_bytes, 64);
    // the write is over: End is a no-op, Revoke finds nothing in flight
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(
        code(m.put_revoke(C1, k("k"), ReplicaSelector::All, Some(w.token))),
        ErrorKind::InvalidWrite
    );
    inv(&m);
    assert_eq!(m.release_discarded_at(T0 + RELEASE), 1);
    assert_eq!(m.metrics().nof_ssd_allocated_bytes, 0);
    inv(&m);
}

#[test]
fn stale_write_sweep_of_a_case_b_write_erases_the_object_and_its_deadline() {
    // §3/§4.4: a swept case-B write leaves no replica: the object and its deadline go (gauge −1)
    let m = master();
    put(&m, "k", 64, &enable(MAX_TTL));
    m.upsert_start(C1, k("k"), 64, &enable(5)).unwrap();
    assert_eq!(gauge(&m), 1);
    assert_eq!(m.sweep_stale_writes_at(T0 + RELEASE + 1), 1);
    assert_eq!(m.key_count(), 0);
    assert_eq!((gauge(&m), m.index_sizes().1), (0, 0));
    inv(&m);
}

#[test]
fn stale_write_sweep_uses_its_explicit_instant() {
    // §1: deterministic entry points use their explicit now and do not move the clock
    let m = master();
    m.put_start(C1, k("k"), 64, &preserve()).unwrap();
    assert_eq!(m.sweep_stale_writes_at(T0 + 10 * RELEASE), 1);
    assert_eq!(m.now(), T0);
    // at the clock's own now nothing would have been stale
    m.put_start(C1, k("j"), 64, &preserve()).unwrap();
    m.run_maintenance_tick();
    assert_eq!(m.key_count(), 1);
    inv(&m);
}
