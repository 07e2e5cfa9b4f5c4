//! Quick start for Rust programs that link the prebuilt libmooncake_meta
//! through the sys crate's safe layer. Built by `cargo test -p
//! mooncake-meta-sys` (examples are built with the tests).
use mooncake_meta_sys::safe::*;

fn main() -> Result<()> {
    let m = Master::deterministic(1_000)?;
    m.mount_segment(1, "seg0", 0x1000_0000, 64 << 20, Pool::Memory)?;

    // ENABLE with a 60 s TTL through the extended config.
    let cfg = WriteConfig::default().soft_pin(SoftPinAction::Enable, Some(60_000));
    let w = m.put_start(1, Key::new("k"), 4096, &cfg)?;
    m.put_end(1, Key::new("k"), Selector::All, Some(w.token))?;
    assert_eq!(m.soft_pin_deadline(Key::new("k"))?, Some(61_000));

    // Reads never extend it; cleanup clears it when due.
    m.advance_time(60_000)?;
    assert!(m.exist(Key::new("k"))?);
    println!("expired {}", m.run_cleanup()?.expired);
    Ok(())
}
