//! The C-ABI call harness (`cabi`), shared by `tests/fuzz_c_abi.rs` and the
//! cargo-fuzz crate in `fuzz/`, which includes this directory by path. Its
//! entropy source is the core crate's (`core/tests/support/entropy.rs`), so
//! a libFuzzer input drives the same generators as the bounded CI run.
#![allow(dead_code)]

#[path = "../../core/tests/support/entropy.rs"]
pub mod entropy;

/// The core crate's counting global allocator, which `fuzz_c_abi`
/// installs.
#[path = "../../core/tests/support/counting.rs"]
pub mod counting;

pub mod cabi;
