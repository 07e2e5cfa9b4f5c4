//! Bounded, deterministic versions of the fuzz targets in `fuzz/` (issue
//! 14): every input gets a defined result, never a panic.
//!
//! - decoder: ≥ 100 000 mutations of real masters' snapshots, half of them
//!   re-framed (length and CRC recomputed) so they reach the record parser;
//!   anything decoded must re-encode identically and restore into a master
//!   that passes `check_invariants()`, or be refused with the master
//!   untouched (docs/CONTRACT.md §6 "Failure").
//! - operation sequences: ≥ 10 000 random sequences against a deterministic
//!   master with docs/CONTRACT.md §8 checked after every step (see
//!   support/opseq.rs), and more at extreme configurations: a clock hours
//!   before MAX_INSTANT and every TTL and timeout at MAX_DURATION_MS
//!   (docs/CONTRACT.md §1, §9).
//!
//! Debug builds run a tenth of the cases; `cargo test --release` runs all.

mod support;

use mooncake_meta_core::{ClockSource, Master, MasterConfig, MAX_DURATION_MS, MAX_INSTANT};
use support::entropy::{Entropy, XorShift};
use support::opseq::{self, Driver, Tally};
use support::snapmut;
use support::targets::{self, Decoded};

fn scaled(n: u64) -> u64 {
    if cfg!(debug_assertions) {
        n / 10
    } else {
        n
    }
}

/// Snapshots of masters driven through random sequences: every record kind
/// the codec knows (groups, hard pins, pins, LOCAL_DISK, NOF_SSD,
/// PROCESSING replicas of writes and tasks) appears in some of them.
fn seed_snapshots() -> Vec<Vec<u8>> {
    let mut seeds = vec![Driver::new().m.snapshot().unwrap()];
    for s in 0..8 {
        let mut rng = XorShift::new(0x5EED_0000 + s);
        let mut d = Driver::new();
        for _ in 0..3 {
            d.run(&mut rng, 150);
            seeds.push(d.m.snapshot().unwrap());
        }
    }
    seeds
}

#[test]
fn decoder_gives_a_defined_result_for_mutated_snapshots() {
    // Rule (docs/CONTRACT.md §6): bad input → DESERIALIZE_FAIL, never a panic; a
    // decoded snapshot restores into a consistent master or changes nothing.
    let cases = scaled(120_000);
    let seeds = seed_snapshots();
    let target = targets::restore_target();
    let mut rng = XorShift::new(0xDEC0DE);
    let (mut rejected, mut restored, mut refused, mut reframed) = (0u64, 0u64, 0u64, 0u64);
    for case in 0..cases {
        let seed = &seeds[(case % seeds.len() as u64) as usize];
        let reframe = case % 2 == 1;
        reframed += reframe as u64;
        let bytes = snapmut::mutated(&mut rng, seed, reframe);
        match targets::snapshot_decode(&target, &bytes) {
            Decoded::Rejected => rejected += 1,
            Decoded::Restored => restored += 1,
            Decoded::RestoreRejected => refused += 1,
        }
    }
    // The unmutated seeds themselves must all restore.
    for seed in &seeds {
        assert_eq!(targets::snapshot_decode(&target, seed), Decoded::Restored);
    }
    println!(
        "fuzz_bounded snapshot_decode: {cases} cases ({reframed} re-framed) from {} seed \
         snapshots: {rejected} rejected by decode, {restored} decoded and restored, \
         {refused} decoded but refused by restore",
        seeds.len()
    );
    assert!(cases >= scaled(100_000));
    assert!(
        restored > 0,
        "no mutation decoded: the cases never reach restore"
    );
    assert!(rejected > cases / 2, "mutations are too gentle");
}

#[test]
fn operation_sequences_keep_every_invariant() {
    // Rule (docs/CONTRACT.md §8): the invariants hold after every operation of any
    // sequence; reads change only leases; results are defined codes.
    let sequences = scaled(10_000);
    let mut tally = Tally::default();
    let mut steps = 0u64;
    let mut rng = XorShift::new(0x0B5E_9000);
    for _ in 0..sequences {
        let len = 10 + rng.below(110) as usize;
        let d = targets::op_sequence(&mut rng, len);
        steps += d.steps;
        tally.merge(&d.tally);
    }
    println!(
        "fuzz_bounded op_sequence: {sequences} sequences, {steps} steps, {} results, \
         check_invariants passed after each step\n{}",
        tally.total(),
        tally.render()
    );
    assert!(sequences >= scaled(10_000));
    assert!(tally.forbidden().is_empty(), "{:?}", tally.forbidden());
    // Not vacuous: the sequences reach the interesting outcomes.
    for (op, result) in [
        ("put_start", "OK"),
        ("upsert_start", "OK"),
        ("end", "OK"),
        ("end", "STALE_WRITE_TOKEN"),
        ("revoke", "OK"),
        ("get", "OK"),
        ("remove", "OK"),
        ("remove", "OBJECT_HAS_LEASE"),
        ("copy_start", "OK"),
        ("copy_end", "OK"),
        ("move_start", "OK"),
        ("move_end", "OK"),
        ("promotion_start", "OK"),
        ("promotion_end", "OK"),
        ("add_local_disk", "OK"),
        ("unmount", "OK"),
        ("run_eviction", "OK"),
        ("restore", "OK"),
        ("restore_mutated", "DESERIALIZE_FAIL"),
        ("restore_candidates", "OK"),
        ("round_trip", "OK"),
    ] {
        assert!(
            tally.0.get(&(op, result)).copied().unwrap_or(0) > 0,
            "no {op} ended in {result}"
        );
    }
}

/// The driver's configuration with the clock hours before MAX_INSTANT,
/// with every duration at its maximum, and both.
fn extreme_configs() -> Vec<(&'static str, MasterConfig)> {
    let near_max = ClockSource::Manual {
        start_ms: MAX_INSTANT - 4 * 3_600_000,
    };
    let max_durations = MasterConfig {
        default_kv_lease_ttl_ms: MAX_DURATION_MS,
        default_kv_soft_pin_ttl_ms: MAX_DURATION_MS,
        max_kv_soft_pin_ttl_ms: MAX_DURATION_MS,
        put_start_discard_timeout_ms: MAX_DURATION_MS - 1,
        put_start_release_timeout_ms: MAX_DURATION_MS,
        ..opseq::config()
    };
    vec![
        (
            "clock near MAX_INSTANT",
            MasterConfig {
                clock: near_max.clone(),
                ..opseq::config()
            },
        ),
        ("every duration at the maximum", max_durations.clone()),
        (
            "both",
            MasterConfig {
                clock: near_max.clone(),
                ..max_durations
            },
        ),
        (
            "maximum lease only, clock near MAX_INSTANT",
            MasterConfig {
                default_kv_lease_ttl_ms: MAX_DURATION_MS,
                clock: near_max,
                ..opseq::config()
            },
        ),
    ]
}

#[test]
fn operation_sequences_keep_every_invariant_at_extreme_clocks_and_durations() {
    // Rule (docs/CONTRACT.md §1, §6): instants saturate at MAX_INSTANT, so
    // every snapshot restores (RoundTrip and RestoreLatest steps fail the
    // sequence otherwise) and the invariants hold after every step.
    let per_config = scaled(1_000);
    let mut rng = XorShift::new(0x0ED6_E5A7);
    for (name, cfg) in extreme_configs() {
        cfg.validate().unwrap();
        let mut tally = Tally::default();
        for _ in 0..per_config {
            let len = 10 + rng.below(110) as usize;
            let mut d = Driver::with_config(cfg.clone());
            d.run(&mut rng, len);
            // One final check whatever the sequence ended with.
            let s = d.m.snapshot().unwrap();
            let fresh = Master::new(cfg.clone()).unwrap();
            fresh
                .restore(&s)
                .unwrap_or_else(|e| panic!("{name}: own snapshot did not restore: {e}"));
            fresh.check_invariants().unwrap();
            tally.merge(&d.tally);
        }
        println!(
            "fuzz_bounded op_sequence ({name}): {per_config} sequences\n{}",
            tally.render()
        );
        assert!(
            tally.forbidden().is_empty(),
            "{name}: {:?}",
            tally.forbidden()
        );
        for (op, result) in [("get", "OK"), ("round_trip", "OK"), ("restore", "OK")] {
            assert!(
                tally.0.get(&(op, result)).copied().unwrap_or(0) > 0,
                "{name}: no {op} ended in {result}"
            );
        }
    }
}
