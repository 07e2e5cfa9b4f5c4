//! Writes snapshots of driven masters into `corpus/snapshot_decode/` so the
//! decoder fuzzer starts from valid inputs:
//! `cargo run --example seed_corpus` (from `fuzz/`).
use std::fs;

fn main() -> std::io::Result<()> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/snapshot_decode");
    fs::create_dir_all(dir)?;
    let seeds = mooncake_meta_fuzz::seed_snapshots(16);
    for (i, s) in seeds.iter().enumerate() {
        fs::write(format!("{dir}/seed-{i:02}"), s)?;
    }
    println!("wrote {} seeds to {dir}", seeds.len());
    Ok(())
}
