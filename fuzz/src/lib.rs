//! The bodies of the cargo-fuzz targets as plain functions, so they also
//! build and run on stable (`cargo test` here) without libFuzzer. The
//! generators, the operation driver and the checks are the ones the bounded
//! CI versions use (`core/tests/support/` and the C-ABI harness
//! `tests/support/cabi.rs`, included by path): a rule broken under the
//! fuzzer is the same panic `core/tests/fuzz_bounded.rs` or
//! `tests/fuzz_c_abi.rs` would hit.

#[path = "../../core/tests/support/mod.rs"]
pub mod support;

pub mod cabi_harness;

use arbitrary::Unstructured;
use support::entropy::Entropy;
use support::targets;

/// libFuzzer's input as a source of choices: each choice consumes the few
/// bytes it needs; a drained input ends the sequence.
pub struct Bytes<'a>(pub Unstructured<'a>);

impl Entropy for Bytes<'_> {
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        self.0.int_in_range(0..=n - 1).unwrap_or(0)
    }

    fn drained(&self) -> bool {
        self.0.is_empty()
    }
}

/// Target `snapshot_decode`: bytes → decode; when Ok → canonical
/// re-encoding, restore into a master → check_invariants (or a refused
/// restore that changed nothing).
pub fn snapshot_decode(data: &[u8]) -> targets::Decoded {
    let master = targets::restore_target();
    targets::snapshot_decode(&master, data)
}

/// Target `journal_decode`: bytes → journal batch decode; when Ok → the
/// canonical re-encoding is the input, and a journal holding the records
/// hands back the same bytes.
pub fn journal_decode(data: &[u8]) -> support::journalmut::JournalDecoded {
    support::journalmut::journal_decode(data)
}

/// Valid journal batches, every record variant among them: a seed corpus
/// for `journal_decode`.
pub fn seed_batches(mixed: usize) -> Vec<Vec<u8>> {
    support::journalmut::seed_batches(&mut support::entropy::XorShift::new(0x5EED), mixed)
}

/// Target `op_sequence`: the bytes choose up to 512 operations against a
/// deterministic master; docs/CONTRACT.md §8 is checked after each.
pub fn op_sequence(data: &[u8]) -> u64 {
    let mut src = Bytes(Unstructured::new(data));
    targets::op_sequence(&mut src, 512).steps
}

/// Snapshots of driven masters: a seed corpus for `snapshot_decode`
/// (libFuzzer rarely gets past the magic and CRC on its own).
pub fn seed_snapshots(count: u64) -> Vec<Vec<u8>> {
    use support::entropy::XorShift;
    use support::opseq::Driver;
    (0..count)
        .map(|s| {
            let mut d = Driver::new();
            d.run(&mut XorShift::new(s), 40 + 20 * s as usize);
            d.m.snapshot().expect("snapshot")
        })
        .collect()
}

/// Target `c_abi_config`: the bytes choose up to 256 C-ABI calls (master
/// configurations, extended and legacy write configs, single and batch
/// Starts, End/Revoke, soft-pin queries, mounts) with malformed structs,
/// enums, TTLs, keys and tenants, against a C-created master and its Rust
/// twin; support/cabi.rs lists the rules checked after each. Returns the
/// number of cases run.
pub fn c_abi_config(data: &[u8]) -> u64 {
    let mut src = Bytes(Unstructured::new(data));
    cabi_harness::cabi::run(&mut src, 256).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_run_as_plain_functions() {
        for seed in seed_snapshots(4) {
            assert_eq!(snapshot_decode(&seed), targets::Decoded::Restored);
            let mut cut = seed.clone();
            cut.truncate(seed.len() / 2);
            assert_eq!(snapshot_decode(&cut), targets::Decoded::Rejected);
            assert!(op_sequence(&seed) > 0);
            assert!(c_abi_config(&seed) > 0);
        }
        for seed in seed_batches(8) {
            assert_eq!(
                journal_decode(&seed),
                support::journalmut::JournalDecoded::Accepted
            );
            assert_eq!(
                journal_decode(&seed[..seed.len() - 1]),
                support::journalmut::JournalDecoded::Rejected
            );
        }
        assert_eq!(
            journal_decode(&[]),
            support::journalmut::JournalDecoded::Rejected
        );
        assert_eq!(snapshot_decode(&[]), targets::Decoded::Rejected);
        assert_eq!(op_sequence(&[]), 0);
        assert_eq!(c_abi_config(&[]), 0);
        assert!(c_abi_config(&[0x5a; 4096]) > 0);
    }
}
