//! Shared by the reliability tests (`fuzz_bounded`, `fuzz_c_abi`,
//! `alloc_counting`) and by the cargo-fuzz crate in `fuzz/`, which includes
//! this directory by path: an entropy source the generators draw from (a
//! deterministic xorshift here, libFuzzer's bytes there), the
//! operation-sequence driver, the snapshot mutator and the C-ABI call
//! harness. Each user takes a subset.
#![allow(dead_code)]

pub mod cabi;
pub mod entropy;
pub mod opseq;
pub mod snapmut;
pub mod targets;
