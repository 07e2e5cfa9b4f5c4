//! bytes → operation sequence against a master, invariants after each step.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mooncake_meta_fuzz::op_sequence(data);
});
