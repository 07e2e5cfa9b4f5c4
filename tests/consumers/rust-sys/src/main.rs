//! A master, a segment, a soft-pinned write, a read that does not extend
//! the pin, and expiry, through the installed library. Exits non-zero if
//! any result is not what the contract says.
use mooncake_meta_sys::safe::*;

fn main() -> Result<()> {
    println!("libmooncake_meta {} (ABI {})", version(), abi_version());
    let m = Master::new(MasterConfig::deterministic(1_000))?;
    let seg = SegmentSpec {
        name: "seg0".into(),
        base: 0x1000_0000,
        size: 64 << 20,
        pool: Pool::Memory,
    };
    let id = m.mount_segment(1, &seg)?;
    println!("mounted {:?} as segment {id}", m.segment_name(id));

    let cfg = WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(60_000));
    let w = m.put_start(1, Key::new("prompt/42"), 4096, &cfg)?;
    // Time passes between Start and End: the deadline starts at End.
    m.advance_time(250)?;
    m.put_end(
        1,
        Key::new("prompt/42"),
        ReplicaSelector::All,
        Some(w.token),
    )?;
    let deadline = m.soft_pin_deadline(Key::new("prompt/42"))?;
    println!("soft-pin deadline: {deadline:?}");
    assert_eq!(deadline, Some(61_250));

    m.advance_time(30_000)?;
    let replicas = m.get_replica_list(Key::new("prompt/42"))?;
    println!(
        "read {} replica(s): {:?}",
        replicas.len(),
        replicas[0].location
    );
    assert_eq!(replicas.len(), 1);
    assert_eq!(m.soft_pin_deadline(Key::new("prompt/42"))?, deadline);

    let stats = m.run_cleanup_at(61_250);
    println!("cleanup at 61250 expired {} pin(s)", stats.expired);
    assert_eq!(stats.expired, 1);
    assert_eq!(m.soft_pin_deadline(Key::new("prompt/42"))?, None);

    let err = m.get_replica_list(Key::new("missing")).unwrap_err();
    println!("a missing key: {err}");
    assert_eq!(err.kind(), ErrorKind::ObjectNotFound);
    println!("rust-sys consumer: OK");
    Ok(())
}
