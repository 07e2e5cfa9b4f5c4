//! Quick start for Rust users of the core crate: a soft-pinned write, a read
//! that does not extend the pin, expiry on a manual clock and a snapshot.
//! Built by `cargo test` and run by `make readme-check`. The sys crate's
//! `rust-sys/examples/quickstart.rs` is the same program linking the C
//! library: only the `use` line differs.
use mooncake_meta_core::*;

fn main() -> Result<()> {
    let m = Master::new(MasterConfig::deterministic(1_000))?;
    let seg = SegmentSpec {
        name: "seg0".into(),
        base: 0x1000_0000,
        size: 64 << 20,
        pool: Pool::Memory,
    };
    m.mount_segment(1, &seg)?;

    // ENABLE with a 60 s TTL; the deadline starts when the write completes.
    let cfg = WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(60_000));
    let w = m.put_start(1, Key::new("k"), 4096, &cfg)?;
    m.put_end(1, Key::new("k"), ReplicaSelector::All, Some(w.token))?;
    assert_eq!(m.soft_pin_deadline(Key::new("k"))?, Some(61_000));

    // Reads grant the ordinary lease and never extend the pin.
    m.advance_time(59_000)?;
    let replicas = m.get_replica_list(Key::new("k"))?;
    assert_eq!(m.soft_pin_deadline(Key::new("k"))?, Some(61_000));
    println!(
        "read {} replica(s); deadline stays at 61000",
        replicas.len()
    );

    // Cleanup pops only what is due.
    let stats = m.run_cleanup_at(61_000);
    println!(
        "expired {} pin(s), touched {} shard(s)",
        stats.expired, stats.shards_touched
    );

    // Snapshots keep committed deadlines; restore rebuilds the index.
    let bytes = m.snapshot()?;
    let copy = Master::new(MasterConfig::deterministic(60_000))?;
    let report = copy.restore(&bytes)?;
    println!("restored {} object(s)", report.objects_restored);
    Ok(())
}
