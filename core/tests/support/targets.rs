//! The bodies of the fuzz targets, shared by the bounded CI versions in
//! `tests/fuzz_bounded.rs` and the cargo-fuzz targets in `fuzz/`. Every
//! rule broken is a panic, which is what a fuzzer reports.

use super::entropy::Entropy;
use super::opseq::{self, Driver};
use mooncake_meta_core::snapshot::codec::{decode, encode};
use mooncake_meta_core::*;

/// What became of one decoder input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// `decode` said DESERIALIZE_FAIL.
    Rejected,
    /// Decoded, and `restore` installed it.
    Restored,
    /// Decoded, but `restore` refused it (DESERIALIZE_FAIL, master untouched).
    RestoreRejected,
}

/// A master to restore fuzzed snapshots into (clock at the driver's T0).
pub fn restore_target() -> Master {
    Master::new(opseq::config()).expect("valid config")
}

/// bytes → decode; when Ok: canonical re-encoding, then restore into
/// `target` → check_invariants (or, when restore refuses, the master is
/// exactly as before). Never panics on any input unless a rule breaks.
pub fn snapshot_decode(target: &Master, bytes: &[u8]) -> Decoded {
    let img = match decode(bytes) {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::DeserializeFail, "decode: {e}");
            return Decoded::Rejected;
        }
        Ok(img) => img,
    };
    assert_eq!(encode(&img), bytes, "decode accepted non-canonical bytes");
    let before = target.capture();
    match target.restore(bytes) {
        Ok(report) => {
            if let Err(e) = target.check_invariants() {
                panic!("invariant violated after restoring a decoded snapshot ({report:?}): {e}");
            }
            let again = target.snapshot().expect("snapshot");
            decode(&again).expect("a restored master's snapshot decodes");
            Decoded::Restored
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::DeserializeFail, "restore: {e}");
            assert!(
                target.capture() == before,
                "a failed restore changed the master"
            );
            Decoded::RestoreRejected
        }
    }
}

/// An operation sequence drawn from `e` (at most `max_steps` steps) against
/// a fresh driver master, every rule checked after each step. Returns the
/// driver (its tally counts what ran).
pub fn op_sequence(e: &mut impl Entropy, max_steps: usize) -> Driver {
    let mut d = Driver::new();
    d.run(e, max_steps);
    d
}
