//! bytes → C-ABI calls with malformed configs, keys and pointers against a
//! C-created master and its Rust twin (defined status, message, no effect
//! on failure, agreement with the Rust API after each call).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mooncake_meta_fuzz::c_abi_config(data);
});
