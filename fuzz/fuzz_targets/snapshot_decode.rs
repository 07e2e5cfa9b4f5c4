//! bytes → snapshot decode → (when Ok) restore → check_invariants.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mooncake_meta_fuzz::snapshot_decode(data);
});
