//! The C ABI: the only module with `extern "C"`, raw pointers and `#[repr(C)]`.
//! Every exported function runs inside `boundary::call` (or
//! `boundary::guard` for the few that cannot fail), so a panic becomes
//! `MOONCAKE_META_PANIC` instead of an abort.
//!
//! cbindgen reads this directory, and only this directory, to generate
//! `include/mooncake_meta.h`; the module order below is the header's order.
//! Naming: functions and types `mooncake_meta_*`, constants `MOONCAKE_META_*`.

#![allow(non_camel_case_types)]
#![deny(unsafe_op_in_unsafe_fn)]

// One declaration per group: rustfmt would sort a group alphabetically, and
// this order (status codes first) is the header's order.
pub mod status;

pub mod version;

pub mod error;

pub mod config;

pub mod write_config;

pub mod legacy_config;

pub mod master;

pub mod replica;

pub mod segments;

pub mod write;

pub mod read;

pub mod remove;

pub mod replication;

pub mod batch;

pub mod bytes;

pub mod soft_pin;

pub mod group_retention;

pub mod maintenance;

pub mod metrics;

pub mod snapshot;

pub mod journal;

pub(crate) mod boundary;
pub(crate) mod handle;
pub(crate) mod input;
pub(crate) mod sized_out;

/// Test-only entry points (a forced panic), built only with the `test-hooks`
/// feature into its own target directory; left out of the public header and
/// declared for the C tests by `c_tests/test_hooks.h`.
#[cfg(feature = "test-hooks")]
pub mod test_hooks;
