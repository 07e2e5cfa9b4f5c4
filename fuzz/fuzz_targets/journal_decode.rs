//! bytes → journal batch decode → (when Ok) canonical re-encoding and a
//! round trip through a journal.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mooncake_meta_fuzz::journal_decode(data);
});
