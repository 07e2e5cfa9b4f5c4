//! A copy with very many targets (only a hostile snapshot or journal makes
//! one, but both are accepted when valid): the invariant check, the copy's
//! End and its Revoke look each replica up in the task's targets and each
//! target up in the object's replicas. Both lists are strictly increasing,
//! so these are binary searches (or merge walks), not scans: what is
//! checked here is the answers, not the time (each step's wall time is
//! printed; run with `--nocapture` to see it).
mod common;
mod snapshot_support;

use common::*;
use mooncake_meta_core::snapshot::codec::encode;
use mooncake_meta_core::snapshot::image::SnapshotImage;
use mooncake_meta_core::*;
use std::time::Instant;

const N: u64 = 100_000;

/// Runs `f`, printing how long it took under `label`.
fn timed<T>(label: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    println!("{label}: {:?}", start.elapsed());
    out
}

/// A standby that installed `img` verbatim (its copy and its write in
/// flight kept), checked, then promoted to a primary.
fn installed(img: &SnapshotImage, name: &str) -> Master {
    let bytes = encode(img);
    let s = Master::new(MasterConfig {
        standby: true,
        ..config()
    })
    .unwrap();
    timed(&format!("{name}: restore"), || s.restore(&bytes)).unwrap();
    timed(&format!("{name}: check_invariants (standby)"), || inv(&s));
    s.promote().unwrap();
    timed(&format!("{name}: check_invariants (promoted)"), || inv(&s));
    s
}

/// The object's replicas as (id, COMPLETE?), in id order.
fn replicas(m: &Master) -> Vec<(u64, bool)> {
    let img = m.capture();
    assert_eq!(img.objects.len(), 1, "one object");
    img.objects[0]
        .replicas
        .iter()
        .map(|r| (r.id, r.status == 1))
        .collect()
}

#[test]
fn check_invariants_accepts_a_copy_with_100_000_targets() {
    let img = snapshot_support::copy_with_targets(N, T0);
    let m = installed(&img, "check");
    // Nothing changed: the source, every target and the write's replica.
    let want: Vec<(u64, bool)> = (0..=N + 1).map(|id| (id, id == 0)).collect();
    assert_eq!(replicas(&m), want);
    assert_eq!(m.capture().tasks, img.tasks);
}

#[test]
fn copy_end_completes_100_000_targets() {
    let img = snapshot_support::copy_with_targets(N, T0);
    let m = installed(&img, "end");
    timed("end: copy_end", || m.copy_end(k("o"))).unwrap();
    timed("end: check_invariants after", || inv(&m));
    // Every target is COMPLETE; the write's replica (no target) is not.
    let want: Vec<(u64, bool)> = (0..=N + 1).map(|id| (id, id <= N)).collect();
    assert_eq!(replicas(&m), want);
    assert!(m.capture().tasks.is_empty(), "the copy is over");
    assert_eq!(code(m.copy_end(k("o"))), ErrorKind::ObjectNoReplicationTask);
    // The completed targets are ordinary replicas now: the write's End
    // completes its own replica and leaves them be.
    let token = img.objects[0].write_token;
    m.put_end(
        img.objects[0].writer,
        k("o"),
        ReplicaSelector::All,
        Some(token),
    )
    .unwrap();
    let want: Vec<(u64, bool)> = (0..=N + 1).map(|id| (id, true)).collect();
    assert_eq!(replicas(&m), want);
    inv(&m);
}

#[test]
fn copy_revoke_frees_100_000_targets() {
    let img = snapshot_support::copy_with_targets(N, T0);
    let m = installed(&img, "revoke");
    let allocated = m.metrics().memory_allocated_bytes;
    assert_eq!(allocated, N + 2, "one byte per replica");
    timed("revoke: copy_revoke", || m.copy_revoke(k("o"))).unwrap();
    timed("revoke: check_invariants after", || inv(&m));
    // The source and the write's replica stay; every target is freed.
    assert_eq!(replicas(&m), vec![(0, true), (N + 1, false)]);
    assert_eq!(m.metrics().memory_allocated_bytes, 2);
    assert!(m.capture().tasks.is_empty(), "the copy is over");
    assert_eq!(
        code(m.copy_revoke(k("o"))),
        ErrorKind::ObjectNoReplicationTask
    );
}

#[test]
fn copy_end_with_a_target_gone_abandons_100_000_targets() {
    // A task may name a target the object no longer holds (an unmount took
    // it): the End finds it missing, refuses and abandons the copy.
    let mut img = snapshot_support::copy_with_targets(N, T0);
    let gone = N / 2;
    let at = img.objects[0]
        .replicas
        .iter()
        .position(|r| r.id == gone)
        .unwrap();
    img.objects[0].replicas.remove(at);
    let m = installed(&img, "gone");
    let err = timed("gone: copy_end", || m.copy_end(k("o"))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReplicaIsGone);
    timed("gone: check_invariants after", || inv(&m));
    assert_eq!(replicas(&m), vec![(0, true), (N + 1, false)]);
    assert_eq!(m.metrics().memory_allocated_bytes, 2);
    assert!(m.capture().tasks.is_empty(), "the copy is gone");
}

#[test]
fn copy_end_with_the_last_target_gone_is_refused() {
    // The last target is checked too (an off-by-one in a merge walk or a
    // search would miss it).
    let mut img = snapshot_support::copy_with_targets(N, T0);
    let at = img.objects[0]
        .replicas
        .iter()
        .position(|r| r.id == N)
        .unwrap();
    img.objects[0].replicas.remove(at);
    let m = installed(&img, "last gone");
    assert_eq!(code(m.copy_end(k("o"))), ErrorKind::ReplicaIsGone);
    inv(&m);
    assert_eq!(replicas(&m), vec![(0, true), (N + 1, false)]);
}

#[test]
fn copy_end_with_the_source_gone_is_refused() {
    let mut img = snapshot_support::copy_with_targets(N, T0);
    img.objects[0].replicas.remove(0);
    let m = installed(&img, "source gone");
    assert_eq!(code(m.copy_end(k("o"))), ErrorKind::ReplicaIsGone);
    inv(&m);
    assert_eq!(replicas(&m), vec![(N + 1, false)]);
}
