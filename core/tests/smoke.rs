use mooncake_meta_core::*;

fn master() -> Master {
    let m = Master::new(MasterConfig::deterministic(1_000)).unwrap();
    for i in 0..4 {
        m.mount_segment(
            1,
            &SegmentSpec {
                name: format!("s{i}"),
                base: (i as u64 + 1) << 32,
                size: 1 << 20,
                pool: Pool::Memory,
            },
        )
        .unwrap();
    }
    m
}

#[test]
fn smoke() {
    let m = master();
    let k = Key::new("a");
    let w = m
        .put_start(
            7,
            k,
            100,
            &WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(500)),
        )
        .unwrap();
    assert_eq!(w.replicas.len(), 1);
    assert!(m.has_pending_soft_pin(k).unwrap());
    assert_eq!(
        m.get_replica_list(k).unwrap_err().kind(),
        ErrorKind::ReplicaIsNotReady
    );
    m.advance_time(10).unwrap();
    m.put_end(7, k, ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(1_510));
    m.check_invariants().unwrap();
    assert_eq!(m.metrics().soft_pin_key_count, 1);
    m.advance_time(600).unwrap();
    assert!(m.exist(k).unwrap());
    assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(1_510));
    let st = m.run_cleanup();
    assert_eq!((st.popped, st.expired), (1, 1));
    assert_eq!(m.metrics().soft_pin_key_count, 0);
    m.check_invariants().unwrap();
    // upsert same size with enable, then resize with disable
    let w = m
        .upsert_start(
            8,
            k,
            100,
            &WriteConfig::default().with_soft_pin(SoftPinRequest::enable()),
        )
        .unwrap();
    m.put_end(8, k, ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(1_610 + 1_800_000));
    let w2 = m
        .upsert_start(
            8,
            k,
            200,
            &WriteConfig::default().with_soft_pin(SoftPinRequest::DISABLE),
        )
        .unwrap();
    assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(1_610 + 1_800_000));
    m.check_invariants().unwrap();
    m.put_end(8, k, ReplicaSelector::All, Some(w2.token))
        .unwrap();
    assert_eq!(m.soft_pin_deadline(k).unwrap(), None);
    m.check_invariants().unwrap();
    let snap = m.snapshot().unwrap();
    let m2 = master();
    m2.advance_time(10_000).unwrap();
    let r = m2.restore(&snap).unwrap();
    m2.check_invariants().unwrap();
    eprintln!("{r:?}");
    assert_eq!(m.remove(k, true), Ok(()));
    m.check_invariants().unwrap();
    assert_eq!(m.key_count(), 0);
    m.release_discarded_at(u64::MAX / 4);
    m.check_invariants().unwrap();
    assert_eq!(m.metrics().memory_allocated_bytes, 0);
}
