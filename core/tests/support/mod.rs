//! Shared by the reliability tests (`fuzz_bounded`, `alloc_counting`, `list_keys_paging`,
//! `soak`, the `journal_*` tests) and by the cargo-fuzz crate in `fuzz/`, which includes
//! this directory by path: an entropy source the generators draw from (a
//! deterministic xorshift here, libFuzzer's bytes there), the
//! operation-sequence driver, the snapshot mutator, and the journal record
//! generator and batch mutator (the C-ABI call harness is the C-ABI
//! crate's, tests/support/cabi.rs). Each user takes a subset.
#![allow(dead_code)]

pub mod counting;
pub mod entropy;
pub mod journal_gen;
pub mod journalmut;
pub mod opseq;
pub mod snapmut;
pub mod targets;
