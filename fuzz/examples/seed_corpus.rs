//! Writes seed inputs so the decoder fuzzers start from valid inputs:
//! snapshots of driven masters into `corpus/snapshot_decode/`, and journal
//! batches (every record variant) into `corpus/journal_decode/`:
//! `cargo run --example seed_corpus` (from `fuzz/`).
use std::fs;

fn write_all(target: &str, seeds: &[Vec<u8>]) -> std::io::Result<()> {
    let dir = format!("{}/corpus/{target}", env!("CARGO_MANIFEST_DIR"));
    fs::create_dir_all(&dir)?;
    for (i, s) in seeds.iter().enumerate() {
        fs::write(format!("{dir}/seed-{i:02}"), s)?;
    }
    println!("wrote {} seeds to {dir}", seeds.len());
    Ok(())
}

fn main() -> std::io::Result<()> {
    write_all("snapshot_decode", &mooncake_meta_fuzz::seed_snapshots(16))?;
    write_all("journal_decode", &mooncake_meta_fuzz::seed_batches(24))
}
